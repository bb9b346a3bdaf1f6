"""The ``dpaudit`` command's terminal view (rich tables), read from the typed results."""

from __future__ import annotations

from typing import Any

from dpaudit.report.text import describe_cell, top_cells
from dpaudit.results import AuditResult, MeasureResult, RepairDetails, TVDDetails

__all__ = ["print_audit"]


def print_audit(result: AuditResult, console: Any = None) -> None:
    """The ``dpaudit fairness`` terminal view: tables, repairs, top cells, caveats, the explain trail."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    mode = "exact values: curator-only, NOT differentially private" if result.exact else f"ε = {result.epsilon:g}"
    console.print(f"[bold]dpaudit fairness[/bold] · n = {result.n:,} · {mode}")
    table = Table(show_header=True, header_style="bold")
    if result.exact:  # curator view: per-criterion values beside the non-private baseline
        for col in ("measure / criterion", "value", "MI (bits)", "sensitivity"):
            table.add_column(col, justify="left" if col.startswith("measure") else "right")
        for m in result.measures.values():
            table.add_row(f"[bold]{m.title}[/bold] (sum)", f"{m.value:.6g}", "", f"{m.release.sensitivity:.4g}")
            baseline = m.details.baseline if isinstance(m.details, TVDDetails) else None
            for i, (crit, value) in enumerate(zip(result.criteria, m.per_criterion or ())):
                mi = f"{baseline[i].mi_bits:.6g}" if baseline else ""
                table.add_row(f"  {crit}", f"{value:.6g}", mi, "")
    else:
        for col in ("measure", "value", "95% interval", "ε", "sensitivity", "DP"):
            table.add_column(col, justify="left" if col == "measure" else "right")
        for m in result.measures.values():
            r = m.release
            table.add_row(
                f"[bold]{m.title}[/bold]",
                f"{r.value:.6g}",
                f"[{r.interval[0]:.4g}, {r.interval[1]:.4g}]",
                f"{r.epsilon:g}",
                f"{r.sensitivity:.4g}",
                "yes" if r.dp else "no",
            )
    console.print(table)
    if not result.exact:
        console.print("sum over: " + "; ".join(str(c) for c in result.criteria))
    for m in result.measures.values():
        if isinstance(m.details, RepairDetails) and m.details.per_block:
            _print_repair(console, m, m.details)
        cells = top_cells(m.details)
        if cells:
            how = "exact" if result.exact else "named privately, noisy rank order"
            console.print(f"[bold]{m.title} top cells[/bold] ({how}):")
            for i, cell in enumerate(cells, 1):
                console.print(f"  {i:>2}. {cell.criterion}: {describe_cell(cell)}")
    reasons = sorted({reason for m in result.measures.values() for reason in m.release.reasons})
    for reason in reasons:
        console.print(f"[yellow]not DP:[/yellow] {reason}")
    for i, stage in enumerate(result.stages, 1):
        console.print(f"[dim]{i}. {stage}[/dim]")


def _print_repair(console: Any, m: MeasureResult, details: RepairDetails) -> None:
    """What the repair changes: the largest blocks, with their cell changes or kept groups."""
    exact = "exact" if details.exact else f"bounds [{m.value:,.6g}, {details.upper:,.6g}]"
    console.print(f"[bold]{m.title} ({details.semantics}) repair[/bold] — {exact} ({details.status_line()}); "
                  "largest blocks:")
    for block in sorted(details.per_block, key=lambda b: -b.upper)[:5]:
        where = ", ".join(f"{k}={v}" for k, v in block.admissible.items())
        bound = "" if block.exact else f" ({block.status}, ≤ {block.upper:,.6g})"
        console.print(f"  {block.criterion}{' | ' + where if where else ''}: {block.value:,.6g}{bound}")
        for change in (block.changes or ())[:4]:
            cell = ", ".join(f"{k}={v}" for side in (change.protected, change.outcome) for k, v in side.items())
            verb = "add" if change.change > 0 else "remove"
            console.print(f"      {verb} {abs(change.change):,.1f} rows ({cell}): {change.count:,} → {change.repaired:,.1f}")
        if block.deleted:
            console.print("      delete groups: " + "; ".join(", ".join(f"{k}={v}" for k, v in g.items()) for g in block.deleted))
        if block.target is not None and block.kept:
            aligned = "; ".join(
                ", ".join(f"{k}={v}" for k, v in t.items() if k != "count") + f": {t['count']:,.0f}" for t in block.target
            )
            console.print(f"      kept groups get the same outcome counts: {aligned}")
