"""The ``dpaudit`` command's application object and its one error contract.

Every failure a user can cause ends in exactly one line on stderr, ``dpaudit: error: ...``, and exit
code 2, never a traceback: a :class:`~dpaudit.DPAuditError` raised by the library (:func:`user_errors`),
or a command-line parsing error (an unknown option, a value that is not a number, a missing
argument, a mistyped subcommand), which :class:`_OneLineErrors` turns into the same one line.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from dpaudit._errors import DPAuditError

__all__ = ["app", "command_group", "fail", "user_errors", "write_json", "output_path", "wrote", "spinner",
           "Saves", "save_option"]


# click's exception classes, as the click that typer runs on defines them (newer typer releases bundle
# their own copy of click, so the ones of the separately installed ``click`` would not match)
_UsageError: type[Exception] = typer.BadParameter.__mro__[1]
_ClickException: type[Exception] = typer.BadParameter.__mro__[2]


def _plain_help(params: list[Any]) -> None:
    """Help without typer's placeholders: an argument is named in capitals (``DATA``, as in the usage
    line and the docstrings, not ``{data}``), and a flag shows no ``<bool>`` value it does not take."""
    for param in params:
        if isinstance(param, TyperArgument) and param.metavar is None:
            param.metavar = (param.name or "").upper()
        elif getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


def _help_flag(option: Any) -> Any:
    """The ``--help`` flag, shown plainly (:func:`_plain_help`) and ``False`` when not given: typer reads a
    flag left at its default (None) through a pydantic adapter, and pydantic's import is ~0.1 s of every
    ``dpaudit … --help``; a flag that is already a bool skips that."""
    if option is not None:
        _plain_help([option])
        if option.default is None:
            option.default = False
    return option


class _Command(TyperCommand):
    """A command whose help names arguments ``DATA`` / ``[NAME]`` and gives flags no value type."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_help(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        return _help_flag(super().get_help_option(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or (param.name or "").upper()
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


class _Group(TyperGroup):
    """A command group whose ``--help`` flag shows no ``<bool>``."""

    def get_help_option(self, ctx: Any) -> Any:
        return _help_flag(super().get_help_option(ctx))


class _Typer(typer.Typer):
    """Commands made with :class:`_Command` unless told otherwise, and click's plain help formatter:
    typer's rich one (``rich_markup_mode="rich"``) imports rich's markdown and syntax highlighting,
    about 0.15 s of every ``--help`` (issue 25: ``dpaudit --help`` within 0.3 s)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("rich_markup_mode", None)
        super().__init__(*args, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", _Command)
        return super().command(*args, **kwargs)


def command_group(help: str) -> typer.Typer:
    """A subcommand group (``dpaudit datasets``, ``dpaudit mia``) with the same plain help."""
    return _Typer(cls=_Group, no_args_is_help=True, help=help)


class _OneLineErrors(_Group):
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


app = _Typer(
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


def wrote(path: Path, what: str, *, json_on_stdout: bool = False) -> None:
    """The one line that says what a command wrote: on stdout, or on stderr when stdout is a JSON document."""
    typer.echo(f"wrote {path} ({what})", err=json_on_stdout)


def save_option() -> Any:
    """The repeatable ``--save FILE`` option, its help listing the registered formats' suffixes."""
    from dpaudit.report import describe_formats

    return typer.Option([], "--save", metavar="FILE", help="Write the result to FILE, in the format its suffix "
                        f"names: {describe_formats()}; repeatable (docs/reports.md).")


class Saves:
    """The files a command writes beside what it prints (``--save FILE``, ``--html FILE``), in three steps
    so that a failure leaves no half-done output:

    1. ``Saves(save, html=...)``, before any work: each file's format (by its suffix, from
       :data:`dpaudit.report.FORMATS`; ``--html`` is the html format whatever the suffix) and
       :func:`output_path`; a file named twice is refused;
    2. :meth:`render`, before anything is printed: every document;
    3. :meth:`write`: each file atomically, followed by its :func:`wrote` line.
    """

    def __init__(self, save: Sequence[Path] = (), *, html: Path | None = None) -> None:
        from dpaudit._errors import DataError
        from dpaudit.report import FORMATS, format_for

        self.targets = ([(html, FORMATS["html"])] if html is not None else []) + [(p, format_for(p)) for p in save]
        seen: set[Path] = set()
        for path, _ in self.targets:
            output_path(path)
            if path.absolute() in seen:
                raise DataError(f"{str(path)!r} is named twice as an output file; give each file once")
            seen.add(path.absolute())
        self.documents: list[str] = []

    def render(self, result: Any) -> None:
        """Every document of ``result`` (an AuditResult or an MiaReport), nothing written yet."""
        self.documents = [fmt.render(result) for _, fmt in self.targets]

    def write(self, *, json_on_stdout: bool = False, of: str | None = None) -> None:
        """Write the rendered documents; the ``wrote`` line names the format (``… of a {of}``)."""
        from dpaudit._io import atomic_write_text

        for (path, fmt), text in zip(self.targets, self.documents, strict=True):
            atomic_write_text(path, text)
            wrote(path, fmt.description + (f" of a {of}" if of else ""), json_on_stdout=json_on_stdout)


@contextlib.contextmanager
def spinner(message: str) -> Iterator[Callable[[str], None]]:
    """A rich status spinner on stderr while a long step runs, only when stderr itself is a terminal.

    Yields a function that replaces the spinner's text. In a pipe, a file, a test runner or a dumb
    terminal nothing is drawn (stdout is never touched, so ``--json`` output stays one document); the
    spinner is transient, so a terminal keeps only what the command prints after it.
    """
    stream = sys.stderr
    if not getattr(stream, "isatty", lambda: False)():  # checked before rich is imported: a pipe loads none of it
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(file=stream)
    if console.is_dumb_terminal:
        yield lambda _text: None
        return
    with console.status(Text(f"{message} …")) as status:  # Text: a path or a value is never read as markup
        yield lambda text: status.update(Text(f"{text} …"))
