"""The summary table at the top of docs/benchmarks.md: the headline ratios of every section beside the
targets of issue 14, with a verdict for the full configuration's sizes."""

from __future__ import annotations

import re
from typing import Any

from .adapters import tc_pairs
from .config import SECTIONS, TARGETS
from .context import SectionResult
from .tables import _mib, fmt_ratio
from .timing import Comparison


def _peak(value: Any, prefer: str = "") -> float | None:
    """A peak RSS in MiB from a number or a ``{side: MiB}`` dict (the side whose name has ``prefer``)."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict) and value:
        chosen = [v for k, v in value.items() if prefer and prefer in str(k)] or list(value.values())
        numbers = [float(v) for v in chosen if isinstance(v, (int, float))]
        return max(numbers) if numbers else None
    return None


def _verdict(measured: float | None, target: float | None, full: bool) -> str:
    if target is None or measured is None:
        return ""
    if not full:
        return "n/a (smaller sizes than the target's)"
    return "met" if measured <= target else "**missed**"


def summary_rows(results: dict[str, SectionResult]) -> list[list[str]]:
    """The headline rows: one per comparison the issue sets a target for, and the main comparisons without."""
    rows: list[list[str]] = []

    def add(section: str, what: str, size: str, measured: str, target: str, verdict: str) -> None:
        rows.append([f"{SECTIONS.index(section) + 1}", what, size, measured, target, verdict])

    def ratio_row(section: str, c: Comparison, target: float | None, what: str | None = None) -> None:
        full = results[section].mode == "full"
        add(section, what or f"{c.workload.split(' (')[0]}: {c.a_name} / {c.b_name}", c.size,
            f"**{fmt_ratio(c.ratio)}**" if c.ok else c.status,
            f"≤ {target:g}×" if target is not None else "", _verdict(c.ratio, target, full))

    fair = results.get("fairness")
    if fair:
        for c in fair.comparisons:
            if c.a_name in ("audit, U_MI^TVD", "audit, U_MI^TVD + U_TC") and c.workload.startswith(
                    ("Adult (", "census (Parquet")):
                ratio_row("fairness", c, TARGETS["audit"])
            elif (c.a_name, c.b_name) in tc_pairs():  # like for like: same input, the value alone
                ratio_row("fairness", c, TARGETS["paper_tc"], f"U_TC on Adult: {c.a_name} / {c.b_name}")
        census = [c for c in fair.comparisons if c.workload.startswith("census (Parquet") and "peak_rss_mib" in c.extra]
        if census:
            big = max(census, key=lambda c: int(c.size.replace(",", "")))
            peak = _peak(big.extra["peak_rss_mib"], "audit")
            add("fairness", "census: peak RSS of the audit (fresh process)", big.size, _mib(peak),
                f"≤ {TARGETS['rss_mib']:,.0f} MiB", _verdict(peak, TARGETS["rss_mib"],
                                                            fair.mode == "full" and big.size == "100,000,000"))
    refs = results.get("references")
    if refs:
        for c in refs.comparisons:
            if c.ok and c.workload.startswith("Adult"):
                ratio_row("references", c, None, f"Adult: {c.a_name} / {c.b_name}")
    rep = results.get("repair")
    if rep:
        for sem in ("bag", "set"):
            done = [c for c in rep.comparisons if c.ok and c.workload.endswith(sem)]
            if done:
                ratio_row("repair", done[-1], None, f"U_R ({sem}): {done[-1].a_name} / {done[-1].b_name}, "
                                                    "largest sample RC2 finished")
        for c in rep.comparisons:
            if c.workload.startswith("Adult, bag, count tables"):
                ratio_row("repair", c, None, f"U_R (bag), all of Adult: {c.a_name} / {c.b_name}")
    mia = results.get("mia")
    if mia:
        for c in mia.comparisons:
            found = re.search(r"n_boot\s*=\s*(\d+)", c.a_name)
            boot = int(found.group(1)) if found else None
            target = TARGETS["mia"] if boot == 0 else TARGETS["mia_boot"] if boot == 200 else None
            ratio_row("mia", c, target, f"MIA: {c.a_name} / {c.b_name}")
        for c in mia.comparisons:
            own, matrix = c.extra.get("own_peak_mib"), c.extra.get("matrix_mib")
            if own is None or not matrix:
                continue
            times = float(own) / float(matrix)
            add("mia", f"MIA: peak RSS {c.a_name} adds / the score matrix", c.size,
                f"**{fmt_ratio(times)}** ({_mib(own)} over {_mib(matrix)})", f"≤ {TARGETS['mia_rss']:g}×",
                _verdict(times, TARGETS["mia_rss"], mia.mode == "full"))
    tr = results.get("train")
    if tr:
        for c in tr.comparisons:
            ratio_row("train", c, None, f"training: {c.a_name} / {c.b_name}")
    sp = results.get("spark")
    if sp:
        for c in sp.comparisons:
            if c.a_name.startswith("audit(") and "DuckDB" not in c.a_name:
                ratio_row("spark", c, None)
    return rows


SUMMARY_HEADER = ["§", "comparison", "size", "measured", "target (issue 14)", "verdict"]
