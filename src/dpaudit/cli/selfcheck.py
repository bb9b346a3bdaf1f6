"""``dpaudit selfcheck``: the empirical privacy audit of every release (:mod:`dpaudit.selfcheck`)."""

from __future__ import annotations

import json

import typer

from dpaudit.cli._app import app, user_errors
from dpaudit.selfcheck import CI_DRAWS, FULL_DRAWS, MAX_DRAWS, MIN_DRAWS


@app.command("selfcheck")
@user_errors
def selfcheck_command(
    full: bool = typer.Option(False, "--full", help=f"{FULL_DRAWS:,} draws per database instead of {CI_DRAWS:,} "
                              "(a few minutes); not with --draws."),
    draws: int | None = typer.Option(None, "--draws", help=f"Real OpenDP draws per database and release, {MIN_DRAWS:,} "
                                     f"to {MAX_DRAWS:,} (about 3 ms each)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the split into test-choosing and evaluation halves "
                             "(the noise itself is OpenDP's, unseeded)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
) -> None:
    """Empirical privacy audit: every release on worst-case neighbours must not beat its claimed ε.

    Exit code 0 when every bound is at or below its claim, 1 when one is above (a privacy bug), 2 for
    bad options. A run whose draws were too few to catch a deliberately broken release exits 0 with a
    warning that it is inconclusive.
    """
    from dpaudit.selfcheck import selfcheck

    report = selfcheck(draws, seed=seed, full=full)
    typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) if as_json else str(report))
    if not report.ok:
        typer.echo(f"dpaudit: error: self-check failed: {'; '.join(report.failures)}", err=True)
        raise typer.Exit(1)
    if report.inconclusive:
        typer.echo(f"dpaudit: warning: self-check inconclusive, no release beat its claim but "
                   f"{'; '.join(report.inconclusive)}: raise --draws", err=True)
