"""``dpaudit datasets list|info|path``."""

from __future__ import annotations

import json
import sys

import typer

from dpaudit.cli._app import app, command_group, user_errors

datasets_app = command_group("Registered datasets: list, describe, locate.")
app.add_typer(datasets_app, name="datasets")


@datasets_app.command("list")
@user_errors
def datasets_list(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the registered datasets."""
    from dpaudit import datasets

    rows = [(name, datasets.info(name)) for name in datasets.names()]
    if as_json:
        sys.stdout.write(json.dumps([{"name": n, "title": i.title, "rows": i.rows} for n, i in rows], indent=2) + "\n")
        return
    for name, meta in rows:
        typer.echo(f"{name:<20} {meta.rows:>9,} rows  {meta.title}")


@datasets_app.command("info")
@user_errors
def datasets_info(name: str = typer.Argument(..., help="Dataset name.")) -> None:
    """Source, license, rows, citation, checksums, columns and presets of a dataset (JSON)."""
    from dpaudit import datasets

    sys.stdout.write(json.dumps(datasets.info(name).to_dict(), indent=2, ensure_ascii=False) + "\n")


@datasets_app.command("path")
@user_errors
def datasets_path(name: str = typer.Argument(..., help="Dataset name.")) -> None:
    """The folder the dataset's files are read from ($DPAUDIT_DATA/<folder>, else the cache)."""
    from dpaudit import datasets

    typer.echo(str(datasets.path(name)))
