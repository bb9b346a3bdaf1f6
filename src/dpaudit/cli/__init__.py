"""The ``dpaudit`` command.

Bad input of any kind ends with one line on stderr (``dpaudit: error: ...``) and exit code 2, never
a traceback; output is printed only once everything has been computed, so nothing is half-written.

The commands live in one module per group (:mod:`~dpaudit.cli.fairness`, :mod:`~dpaudit.cli.datasets`,
:mod:`~dpaudit.cli.mia`, :mod:`~dpaudit.cli.ledger`, :mod:`~dpaudit.cli.report`, :mod:`~dpaudit.cli.selfcheck`), registered on the one application of :mod:`~dpaudit.cli._app`.
"""

import typer

from dpaudit.cli import datasets, fairness, ledger, mia, mia_audit, report, selfcheck  # noqa: F401  (registers the commands)
from dpaudit.cli._app import app


def _print_version(value: bool) -> None:
    if value:
        from dpaudit._version import __version__

        typer.echo(f"dpaudit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print dpaudit's version and exit.",
                                 callback=_print_version, is_eager=True),
) -> None:
    """dpaudit: fairness audits of sensitive data under differential privacy."""


def main() -> None:
    app()


__all__ = ["app", "main"]
