"""``dpaudit report``: render a saved ``--json`` document (a fairness audit or an MIA evaluation) again."""

from __future__ import annotations

from pathlib import Path

import typer

from dpaudit.cli._app import Saves, app, fail, save_option, user_errors


@app.command("report")
@user_errors
def report_command(
    result: Path = typer.Argument(..., help="A JSON document saved from dpaudit fairness --json or "
                                            "dpaudit mia evaluate --json."),
    html: Path | None = typer.Option(None, "--html", metavar="FILE",
                                     help="The HTML file to write: one self-contained page (figures inline, no "
                                          "network; docs/reports.md); the html format of --save, whatever FILE's "
                                          "suffix."),
    save: list[Path] = save_option(),
) -> None:
    """Turn a saved RESULT.json into the reports the run itself would have written (--html, --save)."""
    from dpaudit._errors import DataError
    from dpaudit.report.json import read_json
    from dpaudit.results import AuditResult

    if html is None and not save:
        fail("give the file to write: --html FILE or --save FILE (repeatable)")
    saves = Saves(save, html=html)  # before reading anything
    typed = read_json(result)  # a DataError (one line, exit 2) for a missing, malformed or unknown document
    try:
        saves.render(typed)
    except (KeyError, IndexError, TypeError, ValueError) as exc:  # parts that contradict each other
        raise DataError(f"{str(result)!r} is not a consistent dpaudit result ({type(exc).__name__}: {exc}); "
                        "save it again with --json") from None
    saves.write(of="fairness audit" if isinstance(typed, AuditResult) else "membership-inference evaluation")
