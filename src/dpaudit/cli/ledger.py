"""``dpaudit ledger``: what a privacy ledger file has spent, and on what."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from dpaudit._format import epsilon_text, plural
from dpaudit.cli._app import app, fail, user_errors


@app.command("ledger")
@user_errors
def ledger_command(
    path: Path = typer.Argument(..., help="A ledger file written by dpaudit fairness --ledger."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
) -> None:
    """Show a privacy ledger: its total ε, every debit, and what remains (read only: writes nothing)."""
    from dpaudit.privacy import LedgerBudget

    if not path.exists():
        fail(f"ledger {str(path)!r} does not exist; dpaudit fairness --ledger FILE --total-budget EPS creates one")
    budget = LedgerBudget.view(path)  # creates nothing, not even the lock file; refuses a contradictory ledger
    entries = budget.entries
    if as_json:
        doc = {"path": str(path), "total_epsilon": budget.total_epsilon, "spent": budget.spent,
               "remaining": budget.remaining,
               "entries": [{"label": e.label, "epsilon": e.epsilon, "time": e.time, "pid": e.pid, "id": e.id,
                            "data": e.data, "criteria": list(e.criteria)} for e in entries]}
        typer.echo(json.dumps(doc, indent=2))
        return
    typer.echo(f"ledger {path}: total ε = {epsilon_text(budget.total_epsilon)}, spent {epsilon_text(budget.spent)}, "
               f"remaining {epsilon_text(budget.remaining)} ({plural(len(entries), 'debit')})")
    spent_on = None
    for e in entries:
        if (e.data, e.criteria) != spent_on:  # the debits of one audit share its data and criteria: say them once
            spent_on = (e.data, e.criteria)
            if e.data is not None or e.criteria:
                typer.echo(f"  on {e.data or 'unrecorded data'}: {'; '.join(e.criteria) or 'no criteria recorded'}")
        typer.echo(f"  {e.time}  ε = {epsilon_text(e.epsilon):<6} {e.label}  (pid {e.pid})")
