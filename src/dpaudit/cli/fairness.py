"""``dpaudit fairness`` and ``dpaudit repair-wcnf``."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import typer

from dpaudit._defaults import (  # the defaults the help shows, without importing the measures
    DEFAULT_CELLS,
    DEFAULT_K,
    DEFAULT_MEASURES,
    DEFAULT_NAME_CELLS,
    DEFAULT_PRIVATE_NAME_CELLS,
    DEFAULT_SEMANTICS,
    DEFAULT_WCNF_SEMANTICS,
    DEFAULT_WORK_LIMIT,
    DIAGNOSTIC_SHARE,
    MAX_CLAUSES,
    MEASURE_TITLES,
)
from dpaudit._errors import DPAuditError
from dpaudit._format import epsilon_text
from dpaudit.cli._app import Saves, app, fail, output_path, save_option, spinner, user_errors, write_json, wrote
from dpaudit.counting import DEFAULT_ENGINE, check_engine, describe

#: How to add the measures ``dpaudit fairness`` leaves out by default (its ``--measure`` flags).
CLI_HINT = " ".join(f"-m {m}" for m in MEASURE_TITLES)


def _load_data(data: str, schema_file: Path | None, infer_schema: bool) -> tuple[Any, Any]:
    from dpaudit import datasets
    from dpaudit.schema import Schema

    schema: Any
    if schema_file is not None and infer_schema:
        fail("give either --schema FILE or --infer-schema, not both")
    if data in datasets.names():
        frame, schema = datasets.load(data)
    else:
        frame, schema = data, None
    if schema_file is not None:
        schema = Schema.from_json(schema_file)
    elif infer_schema:
        schema = "infer"
    elif schema is None:
        fail(
            f"{data!r} is not a registered dataset ({', '.join(datasets.names())}), so its domains are "
            "unknown: pass --schema FILE (JSON), or --infer-schema to read them off the data (not DP)"
        )
    return frame, schema


def _criteria_with_preset(data: str, criteria: list[str], preset: str | None) -> list[str]:
    from dpaudit import datasets

    if preset is not None:
        if data not in datasets.names():
            fail(f"--preset needs a registered dataset ({', '.join(datasets.names())}), not {data!r}")
        criteria = list(datasets.preset(data, preset)) + list(criteria)
    if not criteria:
        fail("give at least one criterion (-c 'P ⊥ O | A') or a --preset of a registered dataset")
    return criteria


def _measure_options(flags: dict[str, Any], items: list[str]) -> dict[str, Any]:
    """The measures' options: the flags (``--k`` …, None when not given) and every ``--option
    NAME=VALUE``, typed by the option's field in the registered measure that takes it."""
    from dpaudit.measures import option_value

    options = {name: value for name, value in flags.items() if value is not None}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            fail(f"--option takes NAME=VALUE (e.g. --option k=10 --option semantics=bag), got {item!r}")
        if name in options:
            fail(f"option {name} is given twice (by its flag or an earlier --option); give it once")
        try:
            options[name] = option_value(name, text.strip())
        except DPAuditError as exc:
            fail(f"--option {item}: {exc}")
    return options


def _parse_split(items: list[str]) -> dict[str, float] | None:
    if not items:
        return None
    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            fail(f"--split takes MEASURE=FRACTION (e.g. --split tvd=0.25 --split tc=0.75), got {item!r}")
    return out


@app.command()
@user_errors
def fairness(
    data: str = typer.Argument(..., help="A registered dataset name (e.g. adult) or a CSV/Parquet path."),
    criterion: list[str] = typer.Option(
        [], "-c", "--criterion", help="Criterion 'P ⊥ O | A' (ASCII: 'P _|_ O | A'); repeatable."
    ),
    preset: str | None = typer.Option(
        None, "--preset", help="A registered dataset's named criteria (e.g. paper); adds to -c."
    ),
    measure: list[str] = typer.Option(
        [], "--measure", "-m", metavar="|".join(MEASURE_TITLES), show_default=False,
        help="Measure to compute, repeatable: " + ", ".join(f"{name} ({title})" for name, title in MEASURE_TITLES.items())
        + f" (default: {' '.join(f'-m {m}' for m in DEFAULT_MEASURES)}, as dpaudit.audit(); U_R can take minutes "
        "on large data: add it with " + CLI_HINT + "); with --epsilon, ε is shared equally among them unless --split "
        "says otherwise.",
    ),
    epsilon: float | None = typer.Option(None, "--epsilon", "-e", help="Total privacy budget ε of this audit."),
    exact: bool = typer.Option(False, "--exact", help="Exact values for the data curator (no noise, not DP)."),
    schema: Path | None = typer.Option(None, "--schema", help="JSON file declaring the domains."),
    infer_schema: bool = typer.Option(False, "--infer-schema", help="Read domains off the data (not DP)."),
    seed: int | None = typer.Option(None, "--seed", help="Reproducible noise for tests; voids the DP guarantee."),
    k: int | None = typer.Option(None, "--k", help=f"U_TC: number of largest cell contributions summed per "
                                    f"criterion (default {DEFAULT_K})."),
    cells: str | None = typer.Option(None, "--cells", help="U_TC: rank 'domain' cells (all declared) or "
                                        f"'observed' ones (default {DEFAULT_CELLS})."),
    name_cells: int | None = typer.Option(
        None, "--name-cells", help=f"U_TC: top cells to name (default {DEFAULT_NAME_CELLS} with --exact; with --epsilon "
                              f"{DEFAULT_PRIVATE_NAME_CELLS}, named privately, each with its reliability; 0: the "
                              "value alone, no cells or MD maps)."
    ),
    semantics: str | None = typer.Option(None, "--semantics", help="U_R: repair semantics ci, bag or set "
                                            f"(default {DEFAULT_SEMANTICS})."),
    work_limit: float | None = typer.Option(
        None, "--work-limit", help="U_R: solver work units per block (≈ seconds on the reference machine, counted in "
                                   "the solvers' own work, so the same answer on every machine; default "
                                   f"{DEFAULT_WORK_LIMIT:g})."),
    time_limit: float | None = typer.Option(
        None, "--time-limit", help="U_R: also stop a block's solvers after this many seconds (off by default: a block "
                                   "it stops depends on the machine's load; recorded in the result)."),
    option: list[str] = typer.Option(
        [], "--option", metavar="NAME=VALUE",
        help="Any measure option by its name (the fields of the measure classes, e.g. k=10, semantics=bag), "
             "typed as the measure declares it; repeatable. The flags above are shorthands for it.",
    ),
    split: list[str] = typer.Option([], "--split", help="Budget share MEASURE=FRACTION; repeatable (default equal)."),
    diagnostic_share: float | None = typer.Option(
        None, "--diagnostic-share", help=f"Fraction of ε the block diagnostic may spend (default {DIAGNOSTIC_SHARE:g}; "
                                         "the share of rows in blocks of < 20 rows; only when the public bound cannot "
                                         "rule out a warning); 0: not released (docs/privacy.md). Needs --epsilon."),
    ledger: Path | None = typer.Option(
        None, "--ledger", help="Privacy ledger file shared by every audit of these data: this audit's ε is "
                               "debited there, and refused if it does not fit in what remains."
    ),
    total_budget: float | None = typer.Option(
        None, "--total-budget", help="Total ε of a new --ledger (checked against an existing one)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    html: Path | None = typer.Option(
        None, "--html", metavar="FILE", help="Also write the report to FILE: one self-contained HTML page (figures "
                                             "inline, no network; docs/reports.md); the html format of --save, "
                                             "whatever FILE's suffix."
    ),
    save: list[Path] = save_option(),
    engine: str = typer.Option(
        DEFAULT_ENGINE, "--engine", help=f"Where the rows are counted: {'; '.join(describe())}."
    ),
) -> None:
    """Measure how far DATA is from satisfying fairness criteria, with an ε-DP release."""
    from dpaudit.audit import PYTHON_HINT, audit, left_out_note, resolve_measures

    engine = check_engine(engine)  # before anything is read or started
    saves = Saves(save, html=html)  # a bad output path or an unknown suffix costs nothing

    if exact == (epsilon is not None):
        fail("give exactly one of --epsilon E (a DP release) or --exact (curator-only exact values)")
    if ledger is None and total_budget is not None:
        fail("--total-budget sets the total of a --ledger file; give --ledger FILE too")
    if ledger is not None and epsilon is None:
        fail("--ledger records DP releases; it needs --epsilon (exact values spend no budget)")
    shares = _parse_split(split)
    options = _measure_options({"k": k, "cells": cells, "name_cells": name_cells, "semantics": semantics,
                                "work_limit": work_limit, "time_limit": time_limit}, option)
    criteria = _criteria_with_preset(data, criterion, preset)
    resolve_measures(measure or DEFAULT_MEASURES, **options)  # the measures and their options, before any data
    new_ledger = ledger is not None and not ledger.exists()
    budget = _open_ledger(ledger, total_budget) if ledger is not None else None
    try:
        with spinner(f"reading {data}") as status:  # on a terminal's stderr only
            frame, resolved = _load_data(data, schema, infer_schema)
            result = audit(frame, criteria, measures=measure or None, epsilon=epsilon, exact=exact, schema=resolved,
                           seed=seed, split=shares, budget=budget, engine=engine, progress=status,
                           diagnostic_share=diagnostic_share, **options)
    except BaseException:
        if new_ledger and ledger is not None and budget is not None and not budget.entries:
            for leftover in (ledger, Path(f"{ledger}.lock")):  # a refused first audit leaves no ledger
                leftover.unlink(missing_ok=True)
        raise
    if result.source is None:  # a registered dataset: name it in the reports
        result = dataclasses.replace(result, source=data)
    if not measure:  # the left-out measures' note, in flags
        result = dataclasses.replace(result, stages=tuple(
            left_out_note(CLI_HINT) if s == left_out_note(PYTHON_HINT) else s for s in result.stages))
    saves.render(result)  # before anything is printed: a failure leaves no half-done output
    if as_json:
        write_json(result, None)
    elif sys.stdout.isatty():  # a terminal: rich tables
        from dpaudit.report.rich import print_audit

        print_audit(result)
    else:  # a pipe or a file: the same view as plain text, never wrapped (no rich imported)
        from dpaudit.report.text import render_command

        typer.echo(render_command(result))
    saves.write(json_on_stdout=as_json)
    if budget is not None:
        typer.echo(f"ledger {ledger}: spent ε = {epsilon_text(budget.spent)} of {epsilon_text(budget.total_epsilon)}, "
                   f"{epsilon_text(budget.remaining)} remains", err=True)


def _open_ledger(path: Path, total: float | None) -> Any:
    from dpaudit.privacy import Budget

    if total is None and not path.exists():
        fail(f"ledger {str(path)!r} does not exist; create it by giving its total with --total-budget EPS")
    return Budget.open(path, total)


@app.command("repair-wcnf")
@user_errors
def repair_wcnf_command(
    data: str = typer.Argument(..., help="A registered dataset name or a CSV/Parquet path."),
    criterion: list[str] = typer.Option(..., "-c", "--criterion", help="Criterion 'P ⊥ O | A'; repeatable."),
    out: Path = typer.Option(..., "--out", "-o", help="WCNF file to write."),
    semantics: str = typer.Option(DEFAULT_WCNF_SEMANTICS, "--semantics",
                                  help="bag or set (ci has no tuple-level encoding)."),
    schema: Path | None = typer.Option(None, "--schema", help="JSON file declaring the domains."),
    infer_schema: bool = typer.Option(False, "--infer-schema", help="Read domains off the data."),
    max_clauses: int = typer.Option(MAX_CLAUSES, "--max-clauses", help="Refuse larger formulas."),
) -> None:
    """Write the paper's tuple-level weighted MaxSAT encoding of U_R (complete) for an external solver."""
    from dpaudit.audit import repair_wcnf
    from dpaudit.measures._wcnf import check_wcnf_options

    check_wcnf_options(semantics, max_clauses)  # before loading or counting
    output_path(out)
    frame, resolved = _load_data(data, schema, infer_schema)
    text = repair_wcnf(frame, criterion, schema=resolved, semantics=semantics, path=str(out), max_clauses=max_clauses)
    header = next(line for line in text.splitlines() if line.startswith("p "))
    wrote(out, f"DIMACS WCNF, {header}")
