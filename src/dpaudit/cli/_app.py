"""The ``dpaudit`` command's application object and its one error contract.

Every failure a user can cause ends in exactly one line on stderr, ``dpaudit: error: ...``, and exit
code 2, never a traceback: a :class:`~dpaudit.DPAuditError` raised by the library (:func:`user_errors`),
or a command-line parsing error (an unknown option, a value that is not a number, a missing
argument, a mistyped subcommand), which :class:`_OneLineErrors` turns into the same one line.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

from dpaudit._errors import DPAuditError

__all__ = ["app", "fail", "user_errors", "write_json", "output_path"]


# click's exception classes, as the click that typer runs on defines them (newer typer releases bundle
# their own copy of click, so the ones of the separately installed ``click`` would not match)
_UsageError: type[Exception] = typer.BadParameter.__mro__[1]
_ClickException: type[Exception] = typer.BadParameter.__mro__[2]


class _OneLineErrors(TyperGroup):
    """The root command group: parsing errors become one ``dpaudit: error:`` line and exit code 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.update(prog_name="dpaudit", standalone_mode=False)
        try:
            result = super().main(*args, **kwargs)
        except _UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help, as click shows it
                exc.show()  # type: ignore[attr-defined]
                sys.exit(2)
            ctx = getattr(exc, "ctx", None)
            where = f"; see: {ctx.command_path} --help" if ctx is not None else ""
            message = " ".join(exc.format_message().split()).rstrip(".")  # type: ignore[attr-defined]
            typer.echo(f"dpaudit: error: {message}{where}", err=True)
            sys.exit(2)
        except _ClickException as exc:
            typer.echo(f"dpaudit: error: {' '.join(exc.format_message().split())}", err=True)  # type: ignore[attr-defined]
            sys.exit(getattr(exc, "exit_code", 1))
        except typer.Abort:
            typer.echo("dpaudit: error: aborted", err=True)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)


app = typer.Typer(
    cls=_OneLineErrors,
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Audit sensitive data and the models trained on it.",
)


def fail(message: str) -> NoReturn:
    typer.echo(f"dpaudit: error: {message}", err=True)
    raise typer.Exit(2)


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn DPAuditError into one stderr line and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DPAuditError as exc:
            fail(str(exc))

    return wrapper


def write_json(result: Any, out: Path | None) -> None:
    """A typed result's JSON document, to ``out`` (atomically, after :func:`output_path`) or to stdout."""
    from dpaudit._io import atomic_write_text
    from dpaudit.report.json import render_json

    text = render_json(result)
    if out is not None:
        atomic_write_text(output_path(out), text)
    else:
        sys.stdout.write(text)


def output_path(path: Path) -> Path:
    """``path`` if a file can be written there, else one clear error (before any work is done)."""
    from dpaudit._io import check_writable

    return check_writable(path)
