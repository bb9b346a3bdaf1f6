"""Plain-text rendering of the typed results (what ``str(result)`` prints)."""

from __future__ import annotations

from typing import Any

from dpaudit.results import AuditResult, NamedCell, PrivateTopCellsDetails, TopCell, TopCellsDetails, TVDDetails

__all__ = ["render_audit", "describe_cell"]


def describe_cell(cell: TopCell | NamedCell) -> str:
    """One line for a top cell: ``sex=Male, income=>50K | hours-per-week=40 (over-represented, MD …)``."""
    parts = ", ".join(f"{k}={v}" for side in (cell.protected, cell.outcome) for k, v in side.items())
    if cell.admissible:
        parts += " | " + ", ".join(f"{k}={v}" for k, v in cell.admissible.items())
    if isinstance(cell, TopCell):
        parts += f" ({cell.sign}-represented, MD {cell.md:.4g}, {cell.count:,} rows vs {cell.expected:.1f} expected)"
    return parts


def top_cells(details: Any) -> tuple[TopCell | NamedCell, ...]:
    """The top cells a measure's details hold (exact or privately named), or none."""
    if isinstance(details, (TopCellsDetails, PrivateTopCellsDetails)):
        return details.top_cells
    return ()


def render_audit(result: AuditResult) -> str:
    """The audit as a text table with the per-criterion values, top cells, caveats and explain trail."""
    mode = "exact values (curator-only, not DP)" if result.exact else f"ε = {result.epsilon:g}"
    lines = [f"dpaudit fairness audit — n = {result.n:,}, {mode}"]
    lines += [f"  criterion {i + 1}: {c}" for i, c in enumerate(result.criteria)]
    header = f"  {'measure':<10} {'value':>12} {'95% interval':>27} {'ε':>7} {'sensitivity':>12}  DP"
    lines += ["", header]
    for m in result.measures.values():
        r = m.release
        eps = "—" if r.epsilon is None else f"{r.epsilon:g}"
        interval = f"[{r.interval[0]:.6g}, {r.interval[1]:.6g}]"
        lines.append(
            f"  {m.title:<10} {r.value:>12.6g} {interval:>27} {eps:>7} {r.sensitivity:>12.4g}  "
            f"{'yes' if r.dp else 'no'}"
        )
        if m.per_criterion is not None:
            baseline = m.details.baseline if isinstance(m.details, TVDDetails) else (None,) * len(result.criteria)
            for c, v, b in zip(result.criteria, m.per_criterion, baseline):
                extra = f"   MI = {b.mi_bits:.4g} bits" if b else ""
                lines.append(f"      {str(c):<40} {v:.6g}{extra}")
        for cell in top_cells(m.details):
            lines.append(f"      top cell: {describe_cell(cell)}")
    reasons = sorted({reason for m in result.measures.values() for reason in m.release.reasons})
    if reasons:
        lines += ["", "  not DP because:"] + [f"    - {r}" for r in reasons]
    lines += ["", "  explain trail:"] + [f"    {i + 1}. {s}" for i, s in enumerate(result.stages)]
    return "\n".join(lines)
