"""Section 6's scaling data: its series per axis, their fitted power-law exponents, and the log–log figure
(seconds and ratio to the baseline against size)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from dpaudit._io import atomic_open

from .context import SectionResult
from .timing import Comparison, median


def slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Least-squares slope of log y on log x (the exponent of a power law), None with < 2 points.

    Examples
    --------
    >>> round(slope([1, 10, 100], [2, 20, 200]), 6)
    1.0
    """
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len({p[0] for p in pts}) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx


def scaling_series(comps: Sequence[Comparison], axis: str) -> dict[str, list[tuple[float, float, float | None]]]:
    """``{line name: [(size, median seconds, ratio to the baseline)]}`` for one axis of section 6."""
    series: dict[str, list[tuple[float, float, float | None]]] = {}
    for c in comps:
        if c.extra.get("axis") != axis or not c.ok:
            continue
        n = float(c.extra["n"])
        series.setdefault(c.a_name, []).append((n, median(c.a), c.ratio))
        base = series.setdefault(f"{c.b_name} (baseline)", [])
        if all(p[0] != n for p in base):
            base.append((n, median(c.b), None))
    for points in series.values():
        points.sort()
    return series


def size_label(x: float) -> str:
    """10000 → '10K', 1e8 → '100M', 16 → '16'.

    Examples
    --------
    >>> size_label(10_000), size_label(100_000_000), size_label(1_024), size_label(16)
    ('10K', '100M', '1,024', '16')
    """
    for unit, scale in (("M", 1e6), ("K", 1e4)):
        if x >= scale and x % (scale if unit == "M" else 1e3) == 0:
            return f"{x / (1e6 if unit == 'M' else 1e3):g}{unit}"
    return f"{x:,.0f}"


def scaling_figure(result: SectionResult, path: Path) -> Path | None:
    """Log–log figure of section 6: seconds (top) and ratio to the baseline (bottom) against size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axes_data = [(axis, scaling_series(result.comparisons, axis)) for axis in ("rows", "models")]
    axes_data = [(axis, s) for axis, s in axes_data if s]
    if not axes_data:
        return None
    fig, axes = plt.subplots(2, len(axes_data), figsize=(6.0 * len(axes_data), 7.5), squeeze=False)
    labels = {"rows": "rows of the census Parquet file", "models": f"models M (N+ = {_records(result)})"}
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for col, (axis, series) in enumerate(axes_data):
        top, bottom = axes[0][col], axes[1][col]
        for k, (name, points) in enumerate(series.items()):
            xs = [p[0] for p in points]
            colour = palette[k % len(palette)]
            baseline = all(p[2] is None for p in points)
            top.plot(xs, [p[1] for p in points], "--" if baseline else "-", marker="o", color=colour, label=name)
            ratios = [(p[0], p[2]) for p in points if p[2] is not None]
            if ratios:
                bottom.plot([r[0] for r in ratios], [r[1] for r in ratios], marker="o", color=colour,
                            label=f"{name} / baseline")
        for ax in (top, bottom):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: size_label(x)))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xticks(sorted({p[0] for points in series.values() for p in points}))
            ax.grid(True, which="both", alpha=0.3)
            ax.set_xlabel(labels[axis])
        plain = FuncFormatter(lambda y, _pos: f"{y:g}")
        for ax in (top, bottom):
            low, high = ax.get_ylim()
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(plain if high / low < 10 else NullFormatter())
        top.set_ylabel("median seconds")
        bottom.set_ylabel("ratio to the baseline (same process)")
        bottom.axhline(1.0, color="grey", lw=0.8)
        top.legend(fontsize=8)
        bottom.legend(fontsize=8)
        top.set_title("audit vs bare group-by" if axis == "rows" else "MIA evaluate vs one np.sort")
    fig.suptitle(f"dpaudit scaling ({result.mode} configuration, {result.env.get('date', '')}, "
                 f"{result.env.get('cpus', '?')} CPUs)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=110)
    plt.close(fig)
    return path


def _records(result: SectionResult) -> str:
    for c in result.comparisons:
        if c.extra.get("axis") == "models":
            return c.size.split("N+ = ")[-1]
    return "?"
