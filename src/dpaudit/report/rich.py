"""The ``dpaudit`` command's terminal view (rich tables), read from the typed results.

A measure's details print their own lines after the table (:meth:`dpaudit.details.Details.rich_lines`;
by default a heading and their field table), so a new measure shows up here without a change to this
module."""

from __future__ import annotations

from typing import Any

from dpaudit._format import epsilon_text
from dpaudit.details import hook, mi_baseline
from dpaudit.results import AuditResult

__all__ = ["print_audit"]


def print_audit(result: AuditResult, console: Any = None) -> None:
    """The ``dpaudit fairness`` terminal view: tables, repairs, top cells, caveats, the explain trail."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    mode = "exact values: curator-only, NOT differentially private" if result.exact else f"ε = {epsilon_text(result.epsilon)}"
    console.print(f"[bold]dpaudit fairness[/bold] · n = {result.n:,} · {mode}")
    table = Table(show_header=True, header_style="bold")
    if result.exact:  # curator view: per-criterion values beside the non-private baseline
        for col in ("measure / criterion", "value", "MI (bits)", "sensitivity"):
            table.add_column(col, justify="left" if col.startswith("measure") else "right")
        for m in result.measures.values():
            table.add_row(f"[bold]{m.title}[/bold] (sum)", f"{m.value:.6g}", "", f"{m.release.sensitivity:.4g}")
            baseline = mi_baseline(m.details)
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
                epsilon_text(r.epsilon),
                f"{r.sensitivity:.4g}",
                "yes" if r.dp else "no",
            )
    console.print(table)
    if not result.exact:
        console.print("sum over: " + "; ".join(str(c) for c in result.criteria))
    for m in result.measures.values():
        if m.details is not None:  # the details' own lines (repairs, top cells) or their field table
            for line in hook(m.details, "rich_lines")(m):
                console.print(line)
    for warning in result.warnings:  # the block diagnostic (dpaudit.diagnostics)
        console.print(f"[bold yellow]warning, degenerate blocks:[/bold yellow] {warning}")
    reasons = sorted({reason for m in result.measures.values() for reason in m.release.reasons})
    for reason in reasons:
        console.print(f"[yellow]not DP:[/yellow] {reason}")
    for i, stage in enumerate(result.stages, 1):
        console.print(f"[dim]{i}. {stage}[/dim]")
