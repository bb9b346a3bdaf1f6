"""The ``dpaudit`` command's terminal view (rich tables), read from the typed results.

It draws :func:`dpaudit.report.text.command_view` — the view the command prints as plain text when its
output is a pipe or a file (:func:`dpaudit.report.text.render_command`) — so both show the same content. A
measure's details print their own lines after the table (:meth:`dpaudit.details.Details.rich_lines`;
by default their :meth:`~dpaudit.details.Details.report_lines` with a bold heading), so a new measure
shows up here without a change to this module."""

from __future__ import annotations

from typing import Any

from dpaudit.details import hook
from dpaudit.report.text import command_view
from dpaudit.results import AuditResult

__all__ = ["print_audit"]


def print_audit(result: AuditResult, console: Any = None) -> None:
    """The ``dpaudit fairness`` terminal view: tables, repairs, top cells, caveats, the explain trail."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    view = command_view(result)
    console.print(f"[bold]{escape(view.title[0])}[/bold]" + "".join(f" · {escape(part)}" for part in view.title[1:]))
    table = Table(show_header=True, header_style="bold")
    for i, col in enumerate(view.columns):
        table.add_column(col, justify="left" if i == 0 else "right")
    for strong, cells in view.rows:
        first = f"[bold]{escape(cells[0])}[/bold]" if strong else escape(cells[0])
        table.add_row(first, *(escape(c) for c in cells[1:]))
    console.print(table)
    for note in view.notes:
        console.print(escape(note))
    for m in result.measures.values():
        if m.details is not None:  # the details' own lines (repairs, top cells) or their field table
            for line in hook(m.details, "rich_lines")(m):
                console.print(line)
    for warning in view.warnings:  # the block diagnostic (dpaudit.diagnostics)
        console.print(f"[bold yellow]warning, degenerate blocks:[/bold yellow] {escape(warning)}")
    for reason in view.reasons:
        console.print(f"[yellow]not DP:[/yellow] {escape(reason)}")
    for i, stage in enumerate(view.stages, 1):
        console.print(f"[dim]{i}. {escape(stage)}[/dim]")
