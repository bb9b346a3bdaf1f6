"""The ``dpaudit`` command.

Bad input of any kind ends with one line on stderr (``dpaudit: error: ...``) and exit code 2, never
a traceback; output is printed only once everything has been computed, so nothing is half-written.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from dpaudit._errors import DPAuditError
from dpaudit.measures import Repair, TopContribution

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Audit sensitive data and the models trained on it.",
)


def _fail(message: str) -> None:
    typer.echo(f"dpaudit: error: {message}", err=True)
    raise typer.Exit(2)


def _user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn DPAuditError into one stderr line and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DPAuditError as exc:
            _fail(str(exc))

    return wrapper


def _load_data(data: str, schema_file: Path | None, infer_schema: bool) -> tuple[Any, Any]:
    from dpaudit import datasets
    from dpaudit.schema import Schema

    schema: Any
    if schema_file is not None and infer_schema:
        _fail("give either --schema FILE or --infer-schema, not both")
    if data in datasets.names():
        frame, schema = datasets.load(data)
    else:
        frame, schema = data, None
    if schema_file is not None:
        schema = Schema.from_json(schema_file)
    elif infer_schema:
        schema = "infer"
    elif schema is None:
        _fail(
            f"{data!r} is not a registered dataset ({', '.join(datasets.names())}), so its domains are "
            "unknown: pass --schema FILE (JSON), or --infer-schema to read them off the data (not DP)"
        )
    return frame, schema


def _criteria_with_preset(data: str, criteria: list[str], preset: str | None) -> list[str]:
    from dpaudit import datasets

    if preset is not None:
        if data not in datasets.names():
            _fail(f"--preset needs a registered dataset ({', '.join(datasets.names())}), not {data!r}")
        criteria = list(datasets.preset(data, preset)) + list(criteria)
    if not criteria:
        _fail("give at least one criterion (-c 'P ⊥ O | A') or a --preset of a registered dataset")
    return criteria


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
            _fail(f"--split takes MEASURE=FRACTION (e.g. --split tvd=0.25 --split tc=0.75), got {item!r}")
    return out


@app.command()
@_user_errors
def fairness(
    data: str = typer.Argument(..., help="A registered dataset name (e.g. adult) or a CSV/Parquet path."),
    criterion: list[str] = typer.Option(
        [], "-c", "--criterion", help="Criterion 'P ⊥ O | A' (ASCII: 'P _|_ O | A'); repeatable."
    ),
    preset: str | None = typer.Option(
        None, "--preset", help="A registered dataset's named criteria (e.g. paper); adds to -c."
    ),
    measure: list[str] = typer.Option(["tvd"], "--measure", "-m", help="Measure to compute; repeatable."),
    epsilon: float | None = typer.Option(None, "--epsilon", "-e", help="Total privacy budget ε of this audit."),
    exact: bool = typer.Option(False, "--exact", help="Exact values for the data curator (no noise, not DP)."),
    schema: Path | None = typer.Option(None, "--schema", help="JSON file declaring the domains."),
    infer_schema: bool = typer.Option(False, "--infer-schema", help="Read domains off the data (not DP)."),
    seed: int | None = typer.Option(None, "--seed", help="Reproducible noise for tests; voids the DP guarantee."),
    k: int | None = typer.Option(None, "--k", help=f"U_TC: number of largest cell contributions summed per "
                                    f"criterion (default {TopContribution.k})."),
    cells: str | None = typer.Option(None, "--cells", help="U_TC: rank 'domain' cells (all declared) or "
                                        f"'observed' ones (default {TopContribution.cells})."),
    name_cells: int | None = typer.Option(
        None, "--name-cells", help="U_TC: top cells to name (default 10; with --epsilon, named privately)."
    ),
    semantics: str | None = typer.Option(None, "--semantics", help="U_R: repair semantics ci, bag or set "
                                            f"(default {Repair.semantics})."),
    time_limit: float | None = typer.Option(None, "--time-limit", help="U_R: solver seconds per block, bag/set "
                                               f"(default {Repair.time_limit:g})."),
    split: list[str] = typer.Option([], "--split", help="Budget share MEASURE=FRACTION; repeatable (default equal)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
) -> None:
    """Measure how far DATA is from satisfying fairness criteria, with an ε-DP release."""
    from dpaudit.audit import audit

    if exact == (epsilon is not None):
        _fail("give exactly one of --epsilon E (a DP release) or --exact (curator-only exact values)")
    shares = _parse_split(split)
    criteria = _criteria_with_preset(data, criterion, preset)
    frame, resolved = _load_data(data, schema, infer_schema)
    result = audit(frame, criteria, measures=measure, epsilon=epsilon, schema=resolved, seed=seed,
                   split=shares, k=k, cells=cells, name_cells=name_cells, semantics=semantics,
                   time_limit=time_limit)
    if as_json:
        _write_json(result, None)
    else:
        from dpaudit.report.rich import print_audit

        print_audit(result)


@app.command("repair-wcnf")
@_user_errors
def repair_wcnf_command(
    data: str = typer.Argument(..., help="A registered dataset name or a CSV/Parquet path."),
    criterion: list[str] = typer.Option(..., "-c", "--criterion", help="Criterion 'P ⊥ O | A'; repeatable."),
    out: Path = typer.Option(..., "--out", "-o", help="WCNF file to write."),
    semantics: str = typer.Option("bag", "--semantics", help="bag or set (ci has no tuple-level encoding)."),
    schema: Path | None = typer.Option(None, "--schema", help="JSON file declaring the domains."),
    infer_schema: bool = typer.Option(False, "--infer-schema", help="Read domains off the data."),
    max_clauses: int = typer.Option(50_000_000, "--max-clauses", help="Refuse larger formulas."),
) -> None:
    """Write the paper's tuple-level weighted MaxSAT encoding of U_R (complete) for an external solver."""
    from dpaudit.audit import repair_wcnf

    frame, resolved = _load_data(data, schema, infer_schema)
    text = repair_wcnf(frame, criterion, schema=resolved, semantics=semantics, path=str(out), max_clauses=max_clauses)
    header = next(line for line in text.splitlines() if line.startswith("p "))
    typer.echo(f"wrote {out} ({header})")


datasets_app = typer.Typer(no_args_is_help=True, help="Registered datasets: list, describe, locate.")
app.add_typer(datasets_app, name="datasets")


@datasets_app.command("list")
@_user_errors
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
@_user_errors
def datasets_info(name: str = typer.Argument(..., help="Dataset name.")) -> None:
    """Source, license, rows, citation, checksums, columns and presets of a dataset (JSON)."""
    from dpaudit import datasets

    sys.stdout.write(json.dumps(datasets.info(name).to_dict(), indent=2, ensure_ascii=False) + "\n")


@datasets_app.command("path")
@_user_errors
def datasets_path(name: str = typer.Argument(..., help="Dataset name.")) -> None:
    """The folder the dataset's files are read from ($DPAUDIT_DATA/<folder>, else the cache)."""
    from dpaudit import datasets

    typer.echo(str(datasets.path(name)))


mia_app = typer.Typer(no_args_is_help=True, help="Membership-inference evaluation (LiRA, calibrated TPR at low FPR).")
app.add_typer(mia_app, name="mia")


def _write_json(result: Any, out: Path | None) -> None:
    """A typed result's JSON document, to ``out`` (atomically) or to stdout."""
    from dpaudit._io import atomic_write_text
    from dpaudit.report.json import render_json

    text = render_json(result)
    if out is not None:
        atomic_write_text(out, text)
    else:
        sys.stdout.write(text)


def _alphas(values: list[float]) -> tuple[float, ...]:
    return tuple(values) if values else (1e-2, 1e-3)


@mia_app.command("evaluate")
@_user_errors
def mia_evaluate(
    file: Path = typer.Argument(..., help="A ScoreSet .npz file (format: dpaudit.mia.scores) or a run directory of `dpaudit mia train`."),
    fpr: list[float] = typer.Option([], "--fpr", help="Target FPR α; repeatable (default 0.01 and 0.001)."),
    threshold: str = typer.Option("t", "--threshold", help="PP threshold of the headline: t or normal."),
    fpc: bool = typer.Option(False, "--fpc", help="Finite-population correction σ²/(1 − N/N+)."),
    n_boot: int = typer.Option(200, "--n-boot", help="Bootstrap replicates over models and records (0: none)."),
    strict: bool = typer.Option(False, "--strict", help="Read FPR < α instead of ≤ α (LiRA-code parity)."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    sign: str = typer.Option("fitted", "--sign", help="PP sign(Δ): fitted (paper) or positive (+1)."),
    attack: str = typer.Option("lira", "--attack", help="The attack whose statistic the naive rule pools and whose "
                               "signal the calibrated rules use: lira (online LiRA) or rmia."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
) -> None:
    """TPR at low FPR three ways (naive, PP-calibrated, mean per-record), realised FPRs, CIs, ε bounds."""
    from dpaudit.mia.evaluate import evaluate
    from dpaudit.mia.scores import ScoreSet

    if file.is_dir():
        from dpaudit.mia.train import load_run

        scores = load_run(file)
    else:
        scores = ScoreSet.load(file)
    report = evaluate(scores, attack=attack, fpr=_alphas(fpr), threshold_kind=threshold, fpc=fpc,
                      n_boot=n_boot, strict=strict, seed=seed, sign=sign)
    if as_json:
        _write_json(report, None)
    else:
        typer.echo(str(report))


@mia_app.command("train")
@_user_errors
def mia_train(
    out: Path = typer.Argument(..., help="Run directory to write (or to continue, with --resume)."),
    dataset: str | None = typer.Option(None, "--dataset", help="A registered dataset: adult (default) or credit."),
    data: Path | None = typer.Option(None, "--data", help="Your own CSV or Parquet file instead of --dataset."),
    label: str | None = typer.Option(None, "--label", help="--data: the label column (two values)."),
    positive: str | None = typer.Option(None, "--positive", help="--data: the positive label (default: the "
                                           "larger of the two in string order)."),
    schema_file: Path | None = typer.Option(None, "--schema", help="--data: a schema JSON declaring the features "
                                               "(Categorical: one-hot, Binned: numeric); default: from column types."),
    model: str = typer.Option("logreg", "--model", help="logreg, mlp, hgb, tabpfn (needs the tabpfn package and "
                              "$DPAUDIT_TABPFN_WEIGHTS naming a local checkpoint), or package.module:factory "
                              "returning a scikit-learn classifier with predict_proba."),
    models: int = typer.Option(..., "--models", "-M", help="Number of models M (≥ 6; even for --design efficient)."),
    pool: int = typer.Option(..., "--pool", help="Pool size N+."),
    design: str = typer.Option("efficient", "--design", help="efficient (every record IN in exactly M/2 models, "
                               "N = N+/2) or poisson (each record in each training set with probability N/N+)."),
    train_size: int | None = typer.Option(None, "--train-size", help="N, the expected training-set size "
                                             "(poisson: any N < N+; default N+ // 2)."),
    seed: int = typer.Option(0, "--seed", help="Root of all randomness (pool, keep matrix, every model)."),
    n_jobs: int = typer.Option(1, "--n-jobs", "-j", help="Parallel workers (joblib; -1: all cores)."),
    resume: bool = typer.Option(False, "--resume", help="Keep finished models of OUT, train the rest (bit-identical)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr (only on a terminal)."),
    trainer: str = typer.Option("auto", "--trainer", help="auto (batched for logreg), batched (logreg: many models per "
                                "matrix product, ~15x faster) or per-model (one scikit-learn pipeline per task)."),
) -> None:
    """Train M models on membership splits of a pool; write their scores to a run directory."""
    from dpaudit.mia.train import load_run, train_run

    if data is None and (label is not None or positive is not None or schema_file is not None):
        _fail("--label, --positive and --schema describe a data file: add --data FILE")
    if data is not None and dataset is not None:
        _fail("give either --dataset NAME or --data FILE, not both")
    if data is not None and label is None:
        _fail("--data needs --label COL (the column to predict)")
    run = train_run(out, dataset=dataset, data=data, label=label, positive=positive, schema=schema_file, model=model,
                    n_models=models, pool_size=pool, train_size=train_size, design=design, seed=seed,
                    n_jobs=n_jobs, resume=resume, progress=progress, trainer=trainer)
    scores = load_run(run)
    typer.echo(f"wrote {run}: {scores.n_models} models × {scores.n_records:,} records (N = {scores.train_size:,}, "
               f"{scores.meta['design']} design); evaluate with: dpaudit mia evaluate {run}")


@mia_app.command("simulate")
@_user_errors
def mia_simulate(
    kind: str = typer.Argument(..., help="calibration (per-record Gaussian scores) or fpc (finite-population bias)."),
    models: int = typer.Option(64, "--models", help="Number of models M."),
    records: int = typer.Option(2000, "--records", help="calibration: pool records N+."),
    pool: int = typer.Option(1000, "--pool", help="fpc: pool size N+."),
    train: int = typer.Option(500, "--train", help="fpc: training-set size N."),
    repeats: int = typer.Option(20, "--repeats", help="fpc: independent pools."),
    design: str = typer.Option("efficient", "--design", help="fpc: efficient (N = N+/2, keep matrix) or subsets."),
    seed: int = typer.Option(0, "--seed", help="Simulation seed."),
    fpr: list[float] = typer.Option([], "--fpr", help="calibration: α values to evaluate; repeatable."),
    out: Path | None = typer.Option(None, "--out", help="calibration: write the ScoreSet .npz; fpc: the JSON."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
) -> None:
    """Simulations with known truth: does each TPR rule recover the true mean per-record TPR; σ_emp/σ_ana vs √FPC."""
    from dpaudit.mia import simulate

    if kind == "fpc":
        result = simulate.fpc_simulation(pool_size=pool, train_size=train, n_models=models, n_repeats=repeats,
                                         design=design, seed=seed)
        if out is not None:
            _write_json(result, out)
        if as_json:
            _write_json(result, None)
        elif out is None:
            typer.echo(str(result))
        return
    if kind != "calibration":
        _fail(f"simulation must be 'calibration' or 'fpc', got {kind!r}")
    from dpaudit.mia.evaluate import evaluate

    sim = simulate.gaussian_scores(models, records, seed=seed)
    scoreset = sim.to_scoreset()
    alphas = _alphas(fpr)
    report = evaluate(scoreset, fpr=alphas, n_boot=0)
    truth = {str(a): _simulation_truth(sim, a) for a in alphas}
    if out is not None:
        scoreset.save(out)
    if as_json:
        _write_json({"true_mean_tpr": truth, "evaluation": report.to_dict(), "scoreset": str(out) if out else None}, None)
    else:
        typer.echo(str(report))
        typer.echo("true mean per-record TPR (oracle: known parameters; t test and conformal test: what PP-t, "
                   "the parametric and the empirical estimators estimate with these M):")
        for a, t in truth.items():
            conformal = "not estimable" if t["conformal_test"] is None else f"{t['conformal_test']:.4g}"
            typer.echo(f"  α={float(a):g}: oracle {t['oracle']:.4g}, t test {t['t_test']:.4g}, conformal test {conformal}")


def _simulation_truth(sim: Any, alpha: float) -> dict[str, Any]:
    """The exact mean per-record TPRs a simulated score set's estimators are compared with."""
    from dpaudit.mia.per_record import min_out_models

    n_out = sim.n_models // 2
    return {"oracle": sim.true_mean_tpr(alpha),
            "t_test": float(sim.true_tpr_of_test(alpha, "t", n_out).mean()),
            "conformal_test": (float(sim.true_tpr_of_test(alpha, "conformal", n_out).mean())
                               if n_out >= min_out_models(alpha) else None),
            "n_out": n_out}


@app.callback()
def _root() -> None:
    """dpaudit: fairness audits of sensitive data under differential privacy."""


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
