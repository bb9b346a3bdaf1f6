"""``dpaudit mia evaluate|train|simulate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dpaudit.cli._app import Saves, app, command_group, fail, output_path, save_option, user_errors, write_json, wrote
from dpaudit.mia._defaults import (  # the defaults the help shows, without importing evaluation or training
    ATTACK_TITLES,
    DEFAULT_ATTACK,
    DEFAULT_BACKEND,
    DEFAULT_DATASET,
    DEFAULT_DESIGN,
    DEFAULT_FPR,
    DEFAULT_MODEL,
    DEFAULT_N_BOOT,
    DEFAULT_REFERENCES,
    DEFAULT_SIGN,
    DEFAULT_THRESHOLD,
    DEFAULT_TRAINER,
    FPC_DEFAULTS,
    FPC_DESIGNS,
    MAX_REPEATS,
    MODEL_NAMES,
    REFERENCES,
    SIGNS,
    TABPFN_WEIGHTS_ENV,
    THRESHOLD_KINDS,
)

mia_app = command_group(f"Membership-inference evaluation (attacks: {', '.join(ATTACK_TITLES)}; calibrated TPR at low FPR).")
app.add_typer(mia_app, name="mia")

#: The simulations of ``dpaudit mia simulate``, each with the options only it reads (the others it refuses).
_SIMULATIONS = {"calibration": ("--records", "--fpr"), "fpc": ("--pool", "--train", "--repeats", "--design")}
#: ``--records`` of the calibration simulation unless given.
_RECORDS = 2000


def _alphas(values: list[float]) -> tuple[float, ...]:
    return tuple(values) if values else DEFAULT_FPR


@mia_app.command("evaluate")
@user_errors
def mia_evaluate(
    file: Path = typer.Argument(..., help="A ScoreSet .npz file (format: dpaudit.mia.scores) or a run directory of `dpaudit mia train`."),
    fpr: list[float] = typer.Option([], "--fpr", help="Target FPR α; repeatable (default "
                                    f"{' and '.join(f'{a:g}' for a in DEFAULT_FPR)})."),
    threshold: str = typer.Option(DEFAULT_THRESHOLD, "--threshold", metavar="|".join(THRESHOLD_KINDS),
                                  help="PP threshold of the headline: Student t or normal."),
    fpc: bool | None = typer.Option(None, "--fpc/--no-fpc", help="Finite-population correction σ²/(1 − N/N+) of the "
                                    "Gaussian rules (default: on when the scores record their design, as a `mia "
                                    "train` run does; off otherwise)."),
    n_boot: int = typer.Option(DEFAULT_N_BOOT, "--n-boot", help="Bootstrap replicates over models and records "
                               "(0: none)."),
    strict: bool = typer.Option(False, "--strict", help="Read FPR < α instead of ≤ α (LiRA-code parity)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the bootstrap (default 0); not with --n-boot 0, "
                                    "which draws none."),
    sign: str = typer.Option(DEFAULT_SIGN, "--sign", metavar="|".join(SIGNS),
                             help="PP sign(Δ): from the leave-one-out fits (the paper) or +1."),
    references: str = typer.Option(DEFAULT_REFERENCES, "--references", metavar="|".join(REFERENCES),
                                   help="Scores each target's fits read: balanced (n_in − 1 IN and n_out − 1 OUT for "
                                        "every target, so no fit sees the target's membership) or loo (plain "
                                        "leave-one-out, the LiRA code)."),
    attack: str = typer.Option(DEFAULT_ATTACK, "--attack", metavar="|".join(ATTACK_TITLES),
                               help="The attack whose statistic the naive rule pools and whose signal the calibrated "
                                    "rules use: " + ", ".join(f"{name} ({title})" for name, title in ATTACK_TITLES.items())
                                    + "."),
    by: str | None = typer.Option(None, "--by", metavar="COLUMN", help="Disparate vulnerability: every group's "
                                  "mean per-record TPR in COLUMN of the run's data (a run directory of `mia train`), "
                                  "the gap between groups with its interval and a permutation test of equality."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    html: Path | None = typer.Option(
        None, "--html", metavar="FILE", help="Also write the report to FILE: one self-contained HTML page (ROC "
                                             "curves, tables, figures inline, no network; docs/mia.md); the html "
                                             "format of --save, whatever FILE's suffix."
    ),
    save: list[Path] = save_option(),
) -> None:
    """TPR at low FPR three ways (naive, PP-calibrated, mean per-record), realised FPRs, CIs, ε bounds."""
    from dpaudit.mia.evaluate import evaluate
    from dpaudit.mia.scores import ScoreSet

    if seed is not None and n_boot == 0:
        fail("--seed seeds only the bootstrap, and --n-boot 0 draws none: drop --seed or give --n-boot N")
    saves = Saves(save, html=html)  # a bad output path or an unknown suffix costs nothing
    if file.is_dir():
        from dpaudit.mia.train import load_run

        scores = load_run(file)
    else:
        scores = ScoreSet.load(file)
    report = evaluate(scores, attack=attack, fpr=_alphas(fpr), threshold_kind=threshold, fpc=fpc,
                      n_boot=n_boot, strict=strict, seed=0 if seed is None else seed, sign=sign, references=references,
                      by=by)
    saves.render(report)  # before anything is printed: a failure leaves no half-done output
    if as_json:
        write_json(report, None)
    else:
        typer.echo(str(report))
    saves.write(json_on_stdout=as_json)


@mia_app.command("train")
@user_errors
def mia_train(
    out: Path = typer.Argument(..., help="Run directory to write (or to continue, with --resume)."),
    dataset: str | None = typer.Option(None, "--dataset", help="A registered dataset with a prediction task "
                                       f"(default {DEFAULT_DATASET})."),
    data: Path | None = typer.Option(None, "--data", help="Your own CSV or Parquet file instead of --dataset."),
    label: str | None = typer.Option(None, "--label", help="--data: the label column (two values)."),
    positive: str | None = typer.Option(None, "--positive", help="--data: the positive label (default: the "
                                           "larger of the two in string order)."),
    schema_file: Path | None = typer.Option(None, "--schema", help="--data: a schema JSON declaring the features "
                                               "(Categorical: one-hot, Binned: numeric); default: from column types."),
    model: str = typer.Option(DEFAULT_MODEL, "--model", help=f"{', '.join(MODEL_NAMES)} (tabpfn needs the tabpfn "
                              f"package and ${TABPFN_WEIGHTS_ENV} naming a local checkpoint), or "
                              "package.module:factory returning a scikit-learn classifier with predict_proba."),
    models: int = typer.Option(..., "--models", "-M", help="Number of models M (≥ 6; even for --design efficient)."),
    pool: int | None = typer.Option(None, "--pool", help="Pool size N+ (default: every row of the data; the "
                                    "efficient design needs an even pool, so an odd row count leaves one random row "
                                    "out)."),
    design: str = typer.Option(DEFAULT_DESIGN, "--design", help="efficient (every record IN in exactly M/2 models, "
                               "N = N+/2) or poisson (each record in each training set with probability N/N+)."),
    train_size: int | None = typer.Option(None, "--train-size", help="N, the expected training-set size "
                                             "(poisson: any N < N+; default N+ // 2)."),
    seed: int = typer.Option(0, "--seed", help="Root of all randomness (pool, keep matrix, every model)."),
    n_jobs: int | None = typer.Option(None, "--n-jobs", "-j", help="Local workers (-1: all cores): joblib processes "
                                      "(default 1), or with --backend dask and no --scheduler the processes of the "
                                      "LocalCluster it starts (default: one per core)."),
    resume: bool = typer.Option(False, "--resume", help="Keep finished models of the run in OUT, train the rest (bit-identical)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr (only on a terminal)."),
    trainer: str = typer.Option(DEFAULT_TRAINER, "--trainer", help="auto (batched for logreg), batched (logreg: many models per "
                                "matrix product, ~15x faster) or per-model (one scikit-learn pipeline per task)."),
    backend: str = typer.Option(DEFAULT_BACKEND, "--backend", help="Where the models are fitted: local (joblib processes on "
                                "this machine) or dask (a Dask cluster: --scheduler ADDRESS, or without it a "
                                "LocalCluster started on this machine; needs pip install 'dpaudit[dask]'). "
                                "This machine writes RUN either way; the result is bit-identical."),
    scheduler: str | None = typer.Option(None, "--scheduler", help="--backend dask: the address of a running "
                                         "`dask scheduler`, e.g. tcp://host:8786; its workers need dpaudit with "
                                         "this machine's versions (checked before anything is written)."),
) -> None:
    """Train M models on membership splits of a pool; write their scores to a run directory."""
    from dpaudit.mia.train import load_run, train_run

    if data is None and (label is not None or positive is not None or schema_file is not None):
        fail("--label, --positive and --schema describe a data file: add --data FILE")
    if data is not None and dataset is not None:
        fail("give either --dataset NAME or --data FILE, not both")
    if data is not None and label is None:
        fail("--data needs --label COL (the column to predict)")
    run = train_run(out, dataset=dataset, data=data, label=label, positive=positive, schema=schema_file, model=model,
                    n_models=models, pool_size=pool, train_size=train_size, design=design, seed=seed,
                    n_jobs=n_jobs, resume=resume, progress=progress, trainer=trainer, backend=backend,
                    scheduler=scheduler)
    scores = load_run(run)
    typer.echo(f"wrote {run}: {scores.n_models} models × {scores.n_records:,} records (N = {scores.train_size:,}, "
               f"{scores.meta['design']} design{_pool_note(pool, scores)}); evaluate with: dpaudit mia evaluate {run}")


def _pool_note(pool: int | None, scores: Any) -> str:
    """How the default pool was chosen (every row, or every row but one for an even efficient pool)."""
    if pool is not None:
        return ""
    rows = scores.meta.get("n_rows")
    if isinstance(rows, int) and rows != scores.n_records:
        return (f"; the pool is {scores.n_records:,} of the data's {rows:,} rows: the efficient design needs an even "
                "pool, so one random row is left out")
    return "; the pool is every row of the data"


@mia_app.command("simulate")
@user_errors
def mia_simulate(
    kind: str = typer.Argument(..., help="calibration (per-record Gaussian scores) or fpc (finite-population bias)."),
    models: int = typer.Option(64, "--models", help="Number of models M (M × records, or (M + repeats) × pool, at most 5e8 cells)."),
    records: int | None = typer.Option(None, "--records", help=f"calibration only: pool records N+ (default {_RECORDS})."),
    pool: int | None = typer.Option(None, "--pool", help=f"fpc only: pool size N+ (default {FPC_DEFAULTS['pool_size']})."),
    train: int | None = typer.Option(None, "--train", help="fpc only: training-set size N (default "
                                     f"{FPC_DEFAULTS['train_size']})."),
    repeats: int | None = typer.Option(None, "--repeats", help="fpc only: independent pools (default "
                                       f"{FPC_DEFAULTS['n_repeats']}, at most {MAX_REPEATS:,})."),
    design: str | None = typer.Option(None, "--design", metavar="|".join(FPC_DESIGNS),
                                      help=f"fpc only: efficient (N = N+/2, keep matrix) or subsets (default {FPC_DESIGNS[0]})."),
    seed: int = typer.Option(0, "--seed", help="Simulation seed."),
    fpr: list[float] = typer.Option([], "--fpr", help="calibration only: α values to evaluate; repeatable."),
    out: Path | None = typer.Option(None, "--out", help="calibration: write the ScoreSet .npz; fpc: the JSON."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
) -> None:
    """Simulations with known truth: does each TPR rule recover the true mean per-record TPR; σ_emp/σ_ana vs √FPC."""
    from dpaudit._validation import one_of
    from dpaudit.mia import simulate

    kind = one_of("simulation", kind, _SIMULATIONS)
    given = {"--records": records, "--fpr": fpr or None, "--pool": pool, "--train": train, "--repeats": repeats,
             "--design": design}
    for other, names in _SIMULATIONS.items():
        foreign = [name for name in names if other != kind and given[name] is not None]
        if foreign:
            one = len(foreign) == 1
            fail(f"{' and '.join(foreign)} {'is an option' if one else 'are options'} of `mia simulate {other}` only; "
                 f"{kind} would ignore {'it' if one else 'them'}: drop {'it' if one else 'them'}")
    if out is not None:
        output_path(out)  # before simulating
    if kind == "fpc":
        pool = FPC_DEFAULTS["pool_size"] if pool is None else pool
        train = FPC_DEFAULTS["train_size"] if train is None else train
        repeats = FPC_DEFAULTS["n_repeats"] if repeats is None else repeats
        result = simulate.fpc_simulation(pool_size=pool, train_size=train, n_models=models, n_repeats=repeats,
                                         design=design or FPC_DESIGNS[0], seed=seed)
        if out is not None:
            write_json(result, out)
        if as_json:
            write_json(result, None)
        elif out is None:
            typer.echo(str(result))
        if out is not None:
            wrote(out, f"fpc simulation, JSON: M = {models}, N+ = {pool}, N = {train}, {repeats} pools",
                  json_on_stdout=as_json)
        return
    from dpaudit.mia.evaluate import evaluate

    sim = simulate.gaussian_scores(models, _RECORDS if records is None else records, seed=seed)
    scoreset = sim.to_scoreset()
    alphas = _alphas(fpr)
    report = evaluate(scoreset, fpr=alphas, n_boot=0)
    truth = {str(a): _simulation_truth(sim, a) for a in alphas}
    if out is not None:
        scoreset.save(out)
    if as_json:
        write_json({"true_mean_tpr": truth, "evaluation": report.to_dict(), "scoreset": str(out) if out else None}, None)
    else:
        typer.echo(str(report))
        typer.echo("true mean per-record TPR (oracle: known parameters; t test and conformal test: what PP-t, "
                   "the parametric and the empirical estimators estimate with these M):")
        for a, t in truth.items():
            conformal = "not estimable" if t["conformal_test"] is None else f"{t['conformal_test']:.4g}"
            typer.echo(f"  α={float(a):g}: oracle {t['oracle']:.4g}, t test {t['t_test']:.4g}, conformal test {conformal}")
    if out is not None:
        wrote(out, f"ScoreSet: {scoreset.n_models} models × {scoreset.n_records:,} records; evaluate with: "
                   f"dpaudit mia evaluate {out}", json_on_stdout=as_json)


def _simulation_truth(sim: Any, alpha: float) -> dict[str, Any]:
    """The exact mean per-record TPRs a simulated score set's estimators are compared with."""
    from dpaudit.mia.per_record import min_out_models

    n_out = sim.n_models // 2
    return {"oracle": sim.true_mean_tpr(alpha),
            "t_test": float(sim.true_tpr_of_test(alpha, "t", n_out).mean()),
            "conformal_test": (float(sim.true_tpr_of_test(alpha, "conformal", n_out).mean())
                               if n_out >= min_out_models(alpha) else None),
            "n_out": n_out}
