"""``dpaudit report``: render a saved ``--json`` document (a fairness audit or an MIA evaluation) again."""

from __future__ import annotations

from pathlib import Path

import typer

from dpaudit.cli._app import app, output_path, user_errors, wrote


@app.command("report")
@user_errors
def report_command(
    result: Path = typer.Argument(..., help="A JSON document saved from dpaudit fairness --json or "
                                            "dpaudit mia evaluate --json."),
    html: Path = typer.Option(..., "--html", help="The HTML file to write: one self-contained page (figures "
                                                   "inline, no network; docs/reports.md)."),
) -> None:
    """Turn a saved RESULT.json into the HTML report the run itself would have written."""
    from dpaudit._errors import DataError
    from dpaudit._io import atomic_write_text
    from dpaudit.report.json import read_json
    from dpaudit.results import AuditResult

    output_path(html)  # before reading anything
    typed = read_json(result)  # a DataError (one line, exit 2) for a missing, malformed or unknown document
    try:
        if isinstance(typed, AuditResult):
            from dpaudit.report.html import render_audit

            page, what = render_audit(typed), "fairness audit"
        else:
            from dpaudit.report.html_mia import render_mia

            page, what = render_mia(typed), "membership-inference evaluation"
    except (KeyError, IndexError, TypeError, ValueError) as exc:  # parts that contradict each other
        raise DataError(f"{str(result)!r} is not a consistent dpaudit result ({type(exc).__name__}: {exc}); "
                        "save it again with --json") from None
    atomic_write_text(html, page)
    wrote(html, f"HTML report of a {what}")
