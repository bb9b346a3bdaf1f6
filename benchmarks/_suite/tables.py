"""The numbers and Markdown tables of docs/benchmarks.md: seconds, ratios, ranges, loads and MiB as text,
the comparison table, the repair table, the peak-RSS table and the list of untimed checks.

Pure functions of the measured comparisons (no timing here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .timing import Comparison, median


def _number(x: float | None, fmt: Callable[[float], str]) -> str:
    """``fmt(x)``, or a dash for a missing or non-finite number."""
    return fmt(x) if x is not None and math.isfinite(x) else "—"


def fmt_seconds(s: float | None) -> str:
    """Seconds with three significant digits; milliseconds below 10 ms.

    Examples
    --------
    >>> fmt_seconds(12.345), fmt_seconds(0.0512), fmt_seconds(0.000512), fmt_seconds(None)
    ('12.3 s', '0.0512 s', '0.512 ms', '—')
    """
    return _number(s, lambda v: f"{v * 1e3:.3g} ms" if v < 0.01 else f"{v:.3g} s")


def fmt_ratio(r: float | None) -> str:
    """A ratio with three significant digits and a ×.

    Examples
    --------
    >>> fmt_ratio(1.0468), fmt_ratio(95.27), fmt_ratio(0.01234), fmt_ratio(None)
    ('1.05×', '95.3×', '0.0123×', '—')
    """
    return _number(r, lambda v: f"{v:.3g}×")


def fmt_range(span: tuple[float, float] | None) -> str:
    """``lo–hi`` of the per-round ratios.

    Examples
    --------
    >>> fmt_range((0.91, 1.2)), fmt_range(None)
    ('0.91–1.2', '—')
    """
    if span is None:
        return "—"
    return f"{span[0]:.3g}–{span[1]:.3g}"


def fmt_load(values: Sequence[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values) if values else "n/a"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table; ``align`` holds one of ``l``/``r`` per column (default: first left, rest right).

    Examples
    --------
    >>> print(markdown_table(["a", "b"], [["x", 1], ["y|z", 2]]))
    | a | b |
    |:--|--:|
    | x | 1 |
    | y\\|z | 2 |
    """
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header):
        raise ValueError("one alignment per column")
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(":--" if a == "l" else "--:" for a in align) + "|"]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"row {row!r} has {len(row)} cells for {len(header)} columns")
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines)


def _med(values: Sequence[float]) -> float | None:
    return median(values) if values else None


def comparison_row(c: Comparison) -> list[str]:
    """workload, size, dpaudit side, its median, baseline, its median, ratio, per-round range, rounds."""
    if not c.ok:
        return [c.workload, c.size, c.a_name, fmt_seconds(_med(c.a)), c.b_name, c.status, "—", "—", "—"]
    return [c.workload, c.size, c.a_name, fmt_seconds(_med(c.a)), c.b_name, fmt_seconds(_med(c.b)),
            f"**{fmt_ratio(c.ratio)}**", fmt_range(c.spread), str(len(c.a))]


COMPARISON_HEADER = ["workload", "size", "dpaudit", "median", "baseline", "median", "ratio", "per-round range",
                     "rounds"]


def comparison_table(comps: Sequence[Comparison]) -> str:
    return markdown_table(COMPARISON_HEADER, [comparison_row(c) for c in comps], "lrlrlrrrr")


def checks(comps: Sequence[Comparison]) -> str:
    """The untimed checks, once each, as a list."""
    seen: dict[str, None] = {}
    for c in comps:
        if c.check:
            seen[f"{c.workload}, {c.size}: {c.check}"] = None
    return "\n".join(f"- {line}" for line in seen) if seen else ""


def _repair_table(comps: Sequence[Comparison]) -> str:
    rows = []
    for c in comps:
        e = c.extra
        clauses = f"{e['clauses']:,}" if "clauses" in e else (f"{e['blocks']} blocks" if "blocks" in e else "—")
        value = f"{e['value']:,.0f}" if "value" in e else "—"
        if c.ok:
            rows.append([c.workload, c.size, clauses, value, fmt_seconds(median(c.a)), fmt_seconds(median(c.b)),
                         fmt_seconds(e.get("encode")), fmt_seconds(e.get("solve")), f"**{fmt_ratio(c.ratio)}**",
                         fmt_range(c.spread), str(len(c.a))])
        else:
            rows.append([c.workload, c.size, clauses, value, "—", c.status, "—", "—", "—", "—", "—"])
    return markdown_table(["workload", "rows", "clauses", "U_R", "dpaudit", "RC2", "encode", "solve", "ratio",
                           "per-round range", "rounds"], rows, "lrrrrrrrrrr")


def _mib(value: Any) -> str:
    return f"{value:,.0f} MiB" if isinstance(value, (int, float)) and math.isfinite(value) else "—"


def rss_table(comps: Sequence[Comparison]) -> str:
    """Peak RSS of each side alone in a fresh process, where a workload measured it (once per workload)."""
    rows, seen = [], set()
    for c in comps:
        peak = c.extra.get("peak_rss_mib")
        if peak is None or (c.workload, c.size) in seen:
            continue
        seen.add((c.workload, c.size))
        data = c.extra.get("mib", c.extra.get("matrix_mib"))
        what = "file" if "mib" in c.extra else "score matrix"
        own = {o.a_name: o.extra["own_peak_mib"] for o in comps
               if (o.workload, o.size) == (c.workload, c.size) and "own_peak_mib" in o.extra}
        if isinstance(peak, dict):
            sides = ", ".join(f"{k} {_mib(v)}" + (f" (the side's own: {_mib(own[k])})" if k in own else "")
                              for k, v in peak.items())
        else:
            sides = _mib(peak)
        rows.append([c.workload, c.size, sides, f"{what} {_mib(data)}" if data is not None else "—"])
    if not rows:
        return ""
    return markdown_table(["workload", "size", "peak RSS (fresh process)", "data"], rows, "lrll")
