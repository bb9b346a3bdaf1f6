"""Disparate vulnerability as text: the answer line, then every group's TPR per α with the gaps and tests.

Shared by the plain-text report (:func:`dpaudit.report.text.render_mia`) and the HTML page
(:mod:`dpaudit.report.html_mia`), which shows the same rows as a table.
"""

from __future__ import annotations

from dpaudit.mia.findings import RULE_LABELS
from dpaudit.mia.group_results import Disparity, GroupGap

__all__ = ["disparity_lines", "disparity_rows", "DISPARITY_COLUMNS"]

#: The columns of :func:`disparity_rows`.
DISPARITY_COLUMNS = ("α", "group", "records", "TPR", "CI", "p", "rule")


def _interval(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"[{ci[0]:.4g}, {ci[1]:.4g}]"


def _gap_row(label: str, gap: GroupGap) -> list[str]:
    return ["", f"{label} {gap.high} − {gap.low}", "", f"{gap.gap:+.4g}", _interval(gap.ci), f"{gap.p_value:.3g}", ""]


def disparity_rows(d: Disparity) -> list[list[str]]:
    """Per α: one row per group (largest TPR first), the gap between the first and the last group, every
    pair (for a few groups), each a list of :data:`DISPARITY_COLUMNS` cells."""
    rows: list[list[str]] = []
    for r in d.rows:
        rule = RULE_LABELS.get(r.rule, r.rule) + ("" if r.valid else " ✗")
        for i, g in enumerate(r.groups):
            rows.append([f"{r.alpha:g}" if i == 0 else "", g.group, f"{g.n_records:,}", f"{g.tpr:.4g}",
                         _interval(g.ci), f"{r.p_value:.3g}" if i == 0 else "", rule if i == 0 else ""])
        rows.append(_gap_row("gap", r.gap))
        rows += [_gap_row("pair", p) for p in r.pairs]
    return rows


def disparity_lines(d: Disparity) -> list[str]:
    """The text block: the answer line, the table (:func:`disparity_rows`), what the p-values test."""
    widths = [max(len(c), *(len(row[i]) for row in disparity_rows(d))) for i, c in enumerate(DISPARITY_COLUMNS)]
    header = list(DISPARITY_COLUMNS)
    header[4] = f"{d.level:.0%} CI"

    def line(cells: list[str]) -> str:
        return "  " + "  ".join(c.rjust(w) if i in (0, 2, 3, 5) else c.ljust(w)
                                for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [f"  {d.answer}", line(header)] + [line(row) for row in disparity_rows(d)]
    lines.append(f"  groups from {d.source}; p: permutation test of the group labels over records ({d.n_permutations:,} "
                 "permutations; null: the records' per-record TPRs do not depend on their group), on the first row "
                 f"of all groups, on a gap of its two groups; CI: records bootstrap within groups ({d.n_boot} "
                 "replicates)")
    if any(not r.valid for r in d.rows):
        lines.append("  ✗ the per-record estimate is not valid for these scores at that α (the whole run's check)")
    return lines
