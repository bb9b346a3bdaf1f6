"""The fairness page's figures: each measure's value with its noise interval, and the MD heat maps.

Drawn with matplotlib through :func:`dpaudit.report._html.new_figure` and inlined as SVG by
:func:`~dpaudit.report._html.figure_svg`; :mod:`dpaudit.report.html` places them in its sections.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from dpaudit._format import epsilon_text, plural
from dpaudit.details import CellMDMap, mi_baseline
from dpaudit.report._html import PALETTE, figure_svg, fmt, new_figure, note
from dpaudit.results import AuditResult, MeasureResult


class MeasureText(Mapping[str, str]):
    """A text every registered measure class may state (its class attribute ``attr``), by measure name,
    read from the registry when asked: a measure registered later is in it too.

    Examples
    --------
    >>> MeasureText("unit")["repair"]
    'U_R (rows deleted + inserted)'
    """

    def __init__(self, attr: str) -> None:
        self._attr = attr

    def _texts(self) -> dict[str, str]:
        from dpaudit.measures import MEASURES

        return {name: text for name, cls in MEASURES.items() if (text := getattr(cls, self._attr, ""))}

    def __getitem__(self, name: str) -> str:
        return self._texts()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts())

    def __len__(self) -> int:
        return len(self._texts())


#: The axis label (with the unit) of each registered measure's figure (``Measure.unit``).
UNITS = MeasureText("unit")

_MAP_ROWS, _MAP_COLS = 40, 100  # heat map: the most rows and columns drawn (largest total MD kept)
_ANNOTATE = 48  # heat map: cells up to which every MD is written in its cell
_LABEL_PT = 9  # heat map: labels and annotations, in points (12 CSS px at the figure's own width)


def _value_figure(result: AuditResult, m: MeasureResult) -> str:
    """A dot per criterion (exact) or for the released sum (DP) with its 95% noise interval, on the
    measure's whole range: the axis runs from 0 (or the lowest noisy value) to the largest value the
    measure can take (per criterion in exact mode, for the criteria's sum in DP mode), marked by a
    dotted line, so that a value and its noise read against what is possible, not zoomed to the interval.
    A measure without a known maximum is drawn from 0 to its largest value."""
    from dpaudit.report._html_answer import maximum

    n_crit = len(result.criteria)
    if result.exact and m.per_criterion is not None:
        labels = [str(c) for c in result.criteria] + ["sum over the criteria"]
        values = list(m.per_criterion) + [m.value]
        lows, highs = values, values
        top, top_label = maximum(result, m), "maximum per criterion"
    else:
        labels = [f"sum over the {plural(len(result.criteria), 'criterion', 'criteria')}"]
        values, lows, highs = [m.value], [m.release.interval[0]], [m.release.interval[1]]
        top, top_label = maximum(result, m) * n_crit, f"maximum for {plural(n_crit, 'criterion', 'criteria')}"
    height = 1.5 + 0.42 * len(labels)
    fig, ax = new_figure(7.0, height)
    ys = list(range(len(labels)))[::-1]
    colour = PALETTE[5]
    err = [[v - lo for v, lo in zip(values, lows)], [hi - v for v, hi in zip(values, highs)]]
    ax.errorbar(values, ys, xerr=err, fmt="o", color=colour, ecolor=colour, capsize=5, markersize=6,
                label="value" + ("" if result.exact else " with its 95% noise interval"))
    right_end = max(0.0, *highs, top if math.isfinite(top) else 0.0)
    for v, hi, y in zip(values, highs, ys):  # the value beside its interval, on the side with room
        left = hi < 0.75 * right_end
        ax.annotate(fmt(v), (hi if left else min(lows), y), xytext=(8 if left else -8, 0), textcoords="offset points",
                    ha="left" if left else "right", va="center", fontsize=9, color=colour)
    points = [0.0, *lows, *highs]
    baseline = mi_baseline(m.details)
    if baseline and result.exact:
        nats = [b.mi_nats for b in baseline]
        ax.scatter(nats, ys[:len(nats)], marker="D", facecolors="none", edgecolors=PALETTE[6], zorder=3,
                   label="I(P;O|A) in nats (Pinsker: U_MI^TVD ≤ I)")
        points += nats
    ax.axvline(0.0, color="#555555", linewidth=0.8, linestyle="--")
    if math.isfinite(top):
        ax.axvline(top, color="#555555", linewidth=0.8, linestyle=":")
        ax.annotate(f"{top_label}: {fmt(top)}", (top, 1.0), xycoords=("data", "axes fraction"), xytext=(-3, -3),
                    textcoords="offset points", ha="right", va="top", fontsize=9, color="#555555")
        points.append(top)
    lo, hi = min(points), max(points)
    pad = (hi - lo) * 0.03 or max(abs(hi) * 0.1, 1e-6)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(-0.7, len(labels) - 0.1)
    ax.set_yticks(ys, labels)
    ax.set_xlabel(UNITS.get(m.name, m.title))
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    if len(ax.get_legend_handles_labels()[0]) > 1 or not result.exact:
        fig.legend(loc="outside lower center", ncols=2, fontsize=9, frameon=False)
    whole = f", on its whole range 0 – {fmt(top)}" if math.isfinite(top) else ", from 0"
    if result.exact:
        caption = f"{m.title}: exact value per criterion and their sum (no noise, so no interval){whole}."
    else:
        caption = (f"{m.title}: released value {fmt(m.value)} (dot) with its 95% noise interval "
                   f"[{fmt(m.release.interval[0])}, {fmt(m.release.interval[1])}] (bar), ε = {epsilon_text(m.release.epsilon)}"
                   f"{whole}.")
    return figure_svg(fig, caption=caption, label=f"values-{m.name}")


def _heatmap(cmap: CellMDMap, index: int, cells: str) -> str:
    """MD(a,p,o) of one criterion as a heat map, signed (over-represented cells positive, under-represented
    negative, a diverging scale centred at 0; unsigned for documents saved without signs): P × O for one
    block, (p, o) pairs × blocks otherwise; the longer axis runs across, and at most 40 × 100 rows/columns
    (those with the largest total MD) are drawn. Labels are 9 pt: 12 px at the figure's own width, which
    the page keeps (the figure scrolls sideways on a narrow screen rather than shrink its labels)."""
    import numpy as np

    label = f"md-map-{index}"
    if cmap.md is None:
        return note(f"{cmap.criterion}: {fmt(cmap.cells)} cells, too many for a heat map; the top cells above "
                    "name the ones that matter.")
    signed = cmap.sign is not None
    md = np.asarray(cmap.md, dtype=float) * (np.asarray(cmap.sign, dtype=float) if signed else 1.0)
    blocks, n_p, n_o = md.shape
    if blocks == 1:
        grid = md[0]
        row_names = [_labels(p) for p in cmap.protected]
        col_names = [_labels(o) for o in cmap.outcome]
        row_axis, col_axis = _columns(cmap.protected, "protected"), _columns(cmap.outcome, "outcome")
    else:
        grid = md.reshape(blocks, n_p * n_o).T
        row_names = [f"{_labels(p)} · {_labels(o)}" for p in cmap.protected for o in cmap.outcome]
        col_names = [_labels(a) for a in cmap.blocks]
        row_axis = f"{_columns(cmap.protected, 'protected')} · {_columns(cmap.outcome, 'outcome')}"
        col_axis = _columns(cmap.blocks, "admissible") + " (block a)"
    if grid.shape[0] > grid.shape[1]:  # the longer axis across the page
        grid, row_names, col_names, row_axis, col_axis = grid.T, col_names, row_names, col_axis, row_axis
    shown = ""
    rows_kept = _largest(np.abs(grid).sum(axis=1), _MAP_ROWS)
    cols_kept = _largest(np.abs(grid).sum(axis=0), _MAP_COLS)
    if len(rows_kept) < grid.shape[0] or len(cols_kept) < grid.shape[1]:
        shown = (f" Showing the {len(rows_kept)} of {grid.shape[0]} rows and {len(cols_kept)} of {grid.shape[1]} "
                 "columns with the largest total MD.")
    grid = grid[np.ix_(rows_kept, cols_kept)]
    row_names = [row_names[i] for i in rows_kept]
    col_names = [col_names[j] for j in cols_kept]
    n_rows, n_cols = grid.shape
    annotate = grid.size <= _ANNOTATE and n_cols <= 8
    width = min(9.0, max(5.0, 3.2 + (0.85 if annotate else 0.16 * _LABEL_PT) * n_cols))
    longest = max(map(len, col_names), default=0)
    rotate = n_cols > 8 or longest > 10
    height = min(12.0, max(2.6, 1.4 + 0.04 * _LABEL_PT * n_rows + (0.075 * min(longest, 24) if rotate else 0)))
    fig, ax = new_figure(width, height)
    vmax = float(np.abs(grid).max()) if grid.size and np.abs(grid).max() > 0 else 1.0
    from matplotlib import colormaps

    # 32 shades: as readable, and a colour bar of 32 vector patches; diverging (orange over, purple under)
    steps = colormaps["PuOr_r" if signed else "cividis"].resampled(32)
    mesh = ax.pcolormesh(grid, cmap=steps, vmin=-vmax if signed else 0.0, vmax=vmax, edgecolors="white",
                         linewidth=0.4)
    ax.invert_yaxis()
    step_r = max(1, math.ceil(n_rows / 40))
    step_c = max(1, math.ceil(n_cols / 30))
    ax.set_yticks([i + 0.5 for i in range(0, n_rows, step_r)], row_names[::step_r], fontsize=_LABEL_PT)
    ax.set_xticks([j + 0.5 for j in range(0, n_cols, step_c)], col_names[::step_c], fontsize=_LABEL_PT,
                  rotation=(90 if n_cols > 8 else 35) if rotate else 0, ha="right" if rotate and n_cols <= 8 else "center",
                  rotation_mode="anchor" if rotate and n_cols <= 8 else "default")
    ax.set_ylabel(row_axis, fontsize=_LABEL_PT + 1)
    ax.set_xlabel(col_axis, fontsize=_LABEL_PT + 1)
    bar = fig.colorbar(mesh, ax=ax, label=("MD, signed (+ over, − under)" if signed
                                           else "MD (share of n)"))
    bar.ax.tick_params(labelsize=_LABEL_PT)
    bar.ax.yaxis.label.set_size(_LABEL_PT)
    if bar.solids is not None:
        bar.solids.set_rasterized(False)  # vector, not an embedded PNG: the page holds no image
        bar.solids.set_edgecolor("face")  # no hairline gaps between the shades
    if annotate:
        for i in range(n_rows):
            for j in range(n_cols):
                value = float(grid[i, j])
                dark = abs(value) > 0.6 * vmax if signed else value < 0.55 * vmax
                ax.text(j + 0.5, i + 0.5, fmt(value), ha="center", va="center", fontsize=_LABEL_PT,
                        color="white" if dark else "black")
    mode = " Observed-cell mode: empty cells count 0." if cells == "observed" else ""
    if signed:
        how = ("signed: orange cells hold more rows than independence predicts (over-represented), purple "
               "cells fewer (under-represented), white none; the colour scale is centred at 0")
    else:
        how = ("unsigned, as saved by an older dpaudit: darker is closer to independence, lighter further; "
               "re-run the exact audit for over/under colours")
    caption = f"MD(a,p,o) of every cell of {cmap.criterion} ({how}).{shown}{mode}"
    return figure_svg(fig, caption=caption, label=label, wide=True)


# -- small helpers ----------------------------------------------------------------------------------

def _largest(totals: Any, limit: int) -> list[int]:
    """Indices of the ``limit`` largest totals, in their original order (all when there are fewer)."""
    if len(totals) <= limit:
        return list(range(len(totals)))
    import numpy as np

    return sorted(int(i) for i in np.argsort(-np.asarray(totals), kind="stable")[:limit])


def _labels(values: Mapping[str, Any]) -> str:
    """A cell side's values: ``Female`` for one column, ``sex=Female, race=Black`` for several."""
    if len(values) == 1:
        return str(next(iter(values.values())))
    return ", ".join(f"{k}={v}" for k, v in values.items())


def _columns(sides: Sequence[Mapping[str, Any]], fallback: str) -> str:
    """The column names of one side (from its first label), e.g. ``sex`` or ``sex, race``."""
    return ", ".join(sides[0]) if sides and sides[0] else fallback

