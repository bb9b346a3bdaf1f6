"""The disparate-vulnerability section of the MIA page: the answer line, then per α a table of every group's
mean per-record TPR with its interval, the gap between the first and the last group and every pair.

Numbers are the ``--json`` document's values printed by :func:`dpaudit.report._html.fmt`.
"""

from __future__ import annotations

from typing import Any

from dpaudit.mia.findings import RULE_LABELS
from dpaudit.mia.group_results import Disparity
from dpaudit.report._html import esc, fmt, note, section, table

__all__ = ["disparity_section"]

_HEADERS = ["group", "records", "TPR", "CI low", "CI high", "p"]
_NUMERIC = [False, True, True, True, True, True]


def disparity_section(d: Disparity) -> str:
    """One section (anchor ``disparity``): the answer, per α the groups, gaps and tests, what p tests."""
    parts = [note(d.answer, "warn" if d.claimed else "ok")]
    for r in d.rows:
        rows: list[list[Any]] = []
        for i, g in enumerate(r.groups):
            ci = g.ci or (None, None)
            rows.append([g.group, g.n_records, g.tpr, ci[0], ci[1], r.p_value if i == 0 else None])
        for label, gap in [("gap", r.gap), *(("pair", p) for p in r.pairs)]:
            ci = gap.ci or (None, None)
            rows.append([f"{label}: {gap.high} − {gap.low}", None, gap.gap, ci[0], ci[1], gap.p_value])
        rule = RULE_LABELS.get(r.rule, r.rule)
        valid = "" if r.valid else f" — not valid for these scores: {r.warning}"
        parts.append(f"<h3>α = {fmt(r.alpha)} ({esc(rule)}{esc(valid)})</h3>"
                     + table(_HEADERS, rows, numeric=_NUMERIC))
    parts.append(f"<p>Groups from {esc(d.source)}. TPR: the mean over the group's records of the per-record TPR "
                 "at FPR α (each record's own level-α test, so every group is compared at the same FPR). CI: "
                 f"{fmt(d.level * 100)} % percentile interval of a records bootstrap within groups "
                 f"({fmt(d.n_boot)} replicates). p: permutation test of the group labels over records "
                 f"({fmt(d.n_permutations)} permutations; null: a record's per-record TPR does not depend on its "
                 "group), studentized; on a group's first row for all groups, on a gap for its two groups. A "
                 "difference is claimed when the smallest p over the α's times their number is at most "
                 f"{fmt(1 - d.level)}.</p>")
    return section(f"Membership risk by {d.column}", "".join(parts), anchor="disparity")
