"""Train the M models of an experiment and write their scores (spec ``mia.md`` §1, §5).

:func:`train_run` draws a pool of N+ records from a registered dataset's prediction task or the
user's CSV/Parquet file (:mod:`dpaudit.mia.train.data`), a membership design
(:mod:`dpaudit.mia.designs`), trains M models (:mod:`dpaudit.mia.train.models`; logistic regressions
many at a time by :mod:`dpaudit.mia.train.batched_logreg`) under joblib, and writes each finished
model's scores to the run directory (:mod:`dpaudit.mia.train.run`), so an interrupted run resumes
where it stopped. The fits run on this machine or on a Dask cluster
(:mod:`dpaudit.mia.train.backends`); either way the driver writes the run directory.

Reproducibility
---------------
All randomness derives from ``seed``: the pool from ``SeedSequence(seed, spawn_key=(0,))``, the keep
matrix from ``keep_matrix(M, N+, seed=seed)`` (or ``poisson_keep``), and model ``m``'s own randomness
(MLP initialisation, HGB subsampling) from ``SeedSequence(seed, spawn_key=(2, m))`` only — never from
the order or the process in which models are trained. BLAS runs single-threaded inside each fit
(parallelism comes from joblib), and the batched trainer solves fixed blocks of model indices (a
resumed run recomputes whole blocks), so a resumed run, or one with another ``n_jobs`` or backend, is
bit-identical to an uninterrupted one on the same kind of machine and library versions (recorded in
``run.json``; every worker of a Dask cluster is checked against them).
"""

from __future__ import annotations

import os
import time
import warnings
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import flag, one_of, seed_value, whole_number
from dpaudit.mia._defaults import (
    BACKENDS,
    DEFAULT_BACKEND,
    DEFAULT_DATASET,
    DEFAULT_DESIGN,
    DEFAULT_MODEL,
    DEFAULT_TRAINER,
    DESIGNS,
    TRAINERS,
)
from dpaudit.mia.designs import efficient_models, keep_matrix, poisson_keep
from dpaudit.mia.scores import check_train_size
from dpaudit.mia.train.backends import (
    check_backend,
    check_workers,
    dask_client,
    dask_runner,
    local_runner,
    require_ml,
)
from dpaudit.mia.train.data import from_data, registered
from dpaudit.mia.train.models import (
    MODELS,
    SCORE_CAP,
    binary_logit,
    failure,
    make_pipeline,
    model_seed,
    resolve_model,
)
from dpaudit.mia.train.pool import check_pool, check_two_classes, default_pool, probability_only
from dpaudit.mia.train.run import (
    RUN_FORMAT,
    RUN_VERSION,
    RunWriter,
    check_run_dir,
    check_run_size,
    check_scores,
    resume_run,
    versions,
)

__all__ = ["train_run", "TRAINERS", "DESIGNS", "BACKENDS", "BATCHED_PARAMS", "MAX_MODELS", "DEFAULT_DATASET",
           "DEFAULT_MODEL", "DEFAULT_DESIGN", "DEFAULT_TRAINER", "DEFAULT_BACKEND"]

#: Settings of the batched logistic-regression trainer (recorded in run.json): models per task,
#: gradient tolerance on the mean loss (sklearn's loop: tol = 1e-4), iteration cap.
BATCHED_PARAMS: dict[str, Any] = {"batch_size": 64, "gtol": 1e-8, "max_iter": 1000}
#: The most models of one run: each is a fit and a score file (M × N+ is bounded too, :func:`~dpaudit.mia.train.run.check_run_size`).
MAX_MODELS = 100_000


def _train_models(models: list[int], members: Any, features: Any, y: np.ndarray, categorical: list[str],
                  numeric: list[str], model: str, seed: int, trainer: str,
                  expected_versions: dict[str, str] | None = None) -> list[tuple[int, np.ndarray]]:
    """Fit models ``models`` (one, or one batch; ``members[i]`` = ``keep[models[i]]``) on their pool
    rows; return each one's φ of every pool record.

    This is the function joblib runs in its workers, which may be another machine's Dask workers.
    Every argument is plain data, and the model travels by name, so the function pickles by
    reference. A worker whose versions differ from ``expected_versions`` (the driver's, recorded in
    ``run.json``) is refused, because its scores would not be bit-identical. A model that cannot be
    fitted or scored, or whose scores are not all finite, raises :class:`ModelFailure` naming it.
    """
    from joblib import parallel_config
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    if expected_versions is not None:
        from dpaudit.mia.train.backends import version_mismatch

        diff = version_mismatch(expected_versions, versions())
        if diff:
            import socket

            raise DataError(f"worker {socket.gethostname()} (pid {os.getpid()}) runs {diff}; its models would not "
                            "be bit-identical to the driver's: install the same versions on every worker")
    # One thread and one process per fit: BLAS on one thread, and scikit-learn's own joblib calls
    # (the ColumnTransformer fits and transforms each column group with Parallel) run in sequence.
    # Otherwise, on a Dask worker, where joblib's Dask backend is active, every fit would send its
    # rows back to the cluster as nested tasks (measured: two per model).
    with threadpool_limits(limits=1), parallel_config(backend="sequential"), warnings.catch_warnings():
        # A model stopped by max_iter is still a model of the experiment; don't abort the run.
        warnings.simplefilter("ignore", ConvergenceWarning)
        if trainer == "batched":
            from dpaudit.mia.train.batched_logreg import fit_pipelines

            try:
                fit = fit_pipelines(features, y, members, categorical=categorical, numeric=numeric,
                                    C=MODELS["logreg"].params["C"], gtol=BATCHED_PARAMS["gtol"],
                                    max_iter=BATCHED_PARAMS["max_iter"])
            except Exception as exc:
                raise failure(model, models, exc) from None
            assert fit.logits is not None  # fit_pipelines always scores the pool
            logits = fit.logits
        else:
            logits = np.empty((len(models), len(y)))
            for row, (m, member) in enumerate(zip(models, members)):
                try:
                    pipe = make_pipeline(categorical, numeric, model, model_seed(seed, m))
                    pipe.fit(features.iloc[np.flatnonzero(member)], y[member])
                    logits[row] = binary_logit(pipe, features, from_proba=probability_only(model))
                except Exception as exc:  # the user's classifier may raise anything
                    raise failure(model, [m], exc) from None
    scores = [(m, np.where(y == 1, z, -z)) for m, z in zip(models, logits)]
    for m, row in scores:
        problem = check_scores(row, len(y))
        if problem:
            raise failure(model, [m], problem)
    return scores


def _progress(enabled: bool, total: int, done: int) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    bar = Progress(TextColumn("training models"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                   console=console, disable=not (enabled and console.is_terminal), transient=False)
    return bar


def train_run(
    out_dir: str | os.PathLike[str],
    *,
    dataset: str | None = None,
    data: str | os.PathLike[str] | None = None,
    label: str | None = None,
    positive: Any = None,
    schema: Any = None,
    model: str = DEFAULT_MODEL,
    n_models: int,
    pool_size: int | None = None,
    train_size: int | None = None,
    design: str = DEFAULT_DESIGN,
    seed: int = 0,
    n_jobs: int | None = None,
    resume: bool = False,
    progress: bool = True,
    trainer: str = DEFAULT_TRAINER,
    batch_size: int | None = None,
    backend: str = DEFAULT_BACKEND,
    scheduler: str | None = None,
) -> Path:
    """Train M models on membership splits of a pool and write their scores to ``out_dir``.

    Parameters
    ----------
    out_dir : path
        The run directory (module docstring). Must not exist or be empty unless ``resume``; it is
        written when the first model is finished, so a run that fails before leaves nothing.
    dataset : {"adult", "credit"}, optional
        A registered dataset with a prediction task (:func:`dpaudit.datasets.task`); the default when no
        ``data`` is given is ``"adult"``.
    data : path or pandas.DataFrame, optional
        Instead of ``dataset``: the user's CSV or Parquet file (:func:`dpaudit.mia.train.data.from_file`)
        or a DataFrame (:func:`~dpaudit.mia.train.data.from_frame`; a resumed run must get equal data),
        with ``label`` (required), ``positive`` (default: the larger label in string order) and
        ``schema`` (a Schema or schema JSON path declaring the features; default: inferred from the
        column types).
    model : str
        ``"logreg"`` (C = 1; deterministic, all variance from data sampling), ``"mlp"`` (one hidden
        layer of 64), ``"hgb"`` (histogram gradient-boosted trees; :data:`~dpaudit.mia.train.models.MODELS`), ``"tabpfn"``
        (only when the ``tabpfn`` package is installed and ``$DPAUDIT_TABPFN_WEIGHTS`` names a local
        checkpoint, :func:`tabpfn_checkpoint`), or ``"package.module:factory"``: any importable
        callable returning a scikit-learn-compatible classifier with ``predict_proba``
        (:func:`resolve_model`), fitted after the same preprocessing (one-hot categoricals, scaled
        numerics) and scored by the log-odds of its probabilities.
    n_models : int
        M, ≥ 6 (leave-one-out fits need 3 IN and 3 OUT models per record) and ≤ :data:`MAX_MODELS`;
        even for the efficient design.
    pool_size : int, optional
        N+, records drawn without replacement from the data; default: every row (the efficient design
        needs an even pool, so an odd number of rows leaves one random row out — :func:`default_pool`).
        An odd ``pool_size`` under the efficient design is refused (every model would train on
        N+/2 records on average, a half record more than the declared N = ⌊N+/2⌋). M × N+ (one
        score each) must not exceed the cell limit of :func:`dpaudit.counting.max_cells`
        (``DPAUDIT_MAX_CELLS``, default 10⁸).
    train_size : int, optional
        N, the expected training-set size. The efficient design fixes N = N+ // 2; the Poisson design
        takes any 0 < N < N+ (default N+ // 2). The FPC of the evaluation is 1 − N/N+.
    design : {"efficient", "poisson"}
        The membership design (:data:`DESIGNS`): efficient LiRA's (every record IN in exactly M/2
        models, :func:`~dpaudit.mia.scores.keep_matrix`) or Poisson sampling (record x in model m's
        training set with probability N/N+, independently; :func:`~dpaudit.mia.scores.poisson_keep`).
    seed : int
        Root of all randomness (module docstring, "Reproducibility").
    n_jobs : int, optional
        Local workers (-1: all cores): joblib processes for backend ``"local"`` (default 1), or the
        worker processes of the LocalCluster that backend ``"dask"`` starts without a ``scheduler``
        (default: one per core). Must be left unset with a ``scheduler``. A factory's module must be
        importable in the workers (installed, or on ``PYTHONPATH``).
    resume : bool
        Keep finished models of an existing run with the same configuration; train the rest. The
        result is bit-identical to an uninterrupted run. ``out_dir`` must hold a run.
    progress : bool
        Show a progress bar (models done, rate, ETA) on stderr when it is a terminal.
    trainer : {"auto", "batched", "per-model"}
        ``"batched"`` fits logistic-regression models ``batch_size`` at a time by
        :func:`dpaudit.mia.train.batched_logreg.fit_pipelines` (the same pipelines' exact minimisers, solved
        to a 10⁴× tighter gradient tolerance than sklearn's L-BFGS default; ~15× faster than the
        loop, ``benchmarks/bench_mia_train.py``); ``"per-model"`` fits one scikit-learn pipeline per
        task. ``"auto"``: batched for logreg, per-model otherwise. Recorded in ``run.json``.
    batch_size : int, optional
        Models per batched task (default ``BATCHED_PARAMS["batch_size"]`` = 64). Batches are fixed
        blocks of model indices, so a resumed run recomputes whole batches and stays bit-identical;
        another batch size changes scores only by rounding (≲ 1e-7).
    backend : {"local", "dask"}
        Where the fits run (:mod:`dpaudit.mia.train.backends`). ``"local"``: joblib's processes on this
        machine, or any joblib backend the caller activated with ``joblib.parallel_config``.
        ``"dask"``: a Dask cluster through joblib's Dask backend (needs ``pip install 'dpaudit[dask]'``).
        The scores come back to this process, which writes the run directory. The result is
        bit-identical to a local run, and either backend can resume a run the other started.
    scheduler : str, optional
        Backend ``"dask"``: the scheduler's address (``"tcp://host:8786"``). Every worker must run the
        driver's versions of Python, numpy, scikit-learn and dpaudit, and be able to import the model.
        This is checked before anything is written. Without it, a LocalCluster of ``n_jobs``
        processes is started and closed after the run.

    Returns
    -------
    Path
        ``out_dir``; read it with :func:`load_run`.

    Raises
    ------
    DPAuditError
        Bad arguments, an unusable data file or model, a training set with one class, or a Dask
        scheduler that cannot be reached or whose workers cannot reproduce the run. All are
        checked before anything is written. DataError: a run directory that exists (without
        ``resume``), holds no run (with ``resume``), cannot be written, is corrupt, or holds a
        different configuration. :class:`~dpaudit.mia.train.models.ModelFailure`: a model's fit or
        scores failed (the message names the model); a new run then leaves nothing behind, a run
        with finished models keeps them, and the message says how to resume.
    """
    require_ml()
    from joblib import delayed

    if data is None and (label is not None or positive is not None or schema is not None):
        raise DPAuditError("label, positive and schema describe a data file: pass it with data=... (--data FILE)")
    if data is not None and dataset is not None:
        raise DPAuditError("give either a registered dataset or a data file, not both")
    resume, progress = flag("resume", resume), flag("progress", progress)
    model, model_params = resolve_model(model)
    design = one_of("design", design, DESIGNS)
    n_models = (efficient_models(n_models, minimum=6) if design == "efficient"
                else whole_number("n_models", n_models, minimum=6))
    n_models = whole_number("n_models", n_models, minimum=6, maximum=MAX_MODELS, hint=" (each is a fit and a score file)")
    if pool_size is not None:
        pool_size = whole_number("pool_size", pool_size, minimum=4)
        check_pool(pool_size, design)
        check_run_size(n_models, pool_size)
    if design == "efficient" and pool_size is not None:
        if train_size is not None and train_size != pool_size // 2:
            raise DPAuditError(
                f"train_size must be pool_size // 2 = {pool_size // 2} under the efficient design (each model trains "
                f"on half the pool on average), got {train_size!r}; use design 'poisson' (--design poisson) for "
                "another training-set size")
    if pool_size is not None:
        train_size = pool_size // 2 if train_size is None else check_train_size(train_size, pool_size)
    seed = int(seed_value("seed", seed, allow_none=False))  # type: ignore[arg-type]
    backend, scheduler, n_jobs = check_backend(backend, scheduler, n_jobs)
    trainer = one_of("trainer", trainer, TRAINERS)
    if trainer == "auto":
        trainer = "batched" if model == "logreg" else "per-model"
    if trainer == "batched" and model != "logreg":
        raise DPAuditError(f"trainer 'batched' fits logistic regression only, not {model!r}; use trainer 'per-model'")
    if batch_size is not None and trainer != "batched":
        raise DPAuditError("batch_size applies to trainer 'batched' only")
    batch = whole_number("batch_size", BATCHED_PARAMS["batch_size"] if batch_size is None else batch_size, minimum=1)
    out = check_run_dir(out_dir, resume=resume)

    if data is not None:
        if label is None:
            raise DPAuditError("a data file needs its label column: label=... (--label COL)")
        source = from_data(data, label=label, positive=positive, schema=schema)
    else:
        source = registered(DEFAULT_DATASET if dataset is None else dataset)
    n_rows = len(source.frame)
    pool_of_every_row = pool_size is None
    if pool_size is None:  # every row: now that they are known, the checks above
        pool_size = default_pool(n_rows, design)
        check_run_size(n_models, pool_size)
        if design == "efficient" and train_size is not None and train_size != pool_size // 2:
            raise DPAuditError(f"train_size must be pool_size // 2 = {pool_size // 2} under the efficient design, got "
                               f"{train_size!r}; use design 'poisson' (--design poisson) for another training-set size")
        train_size = pool_size // 2 if train_size is None else check_train_size(train_size, pool_size)
    if pool_size > n_rows:
        raise DPAuditError(f"pool_size {pool_size} exceeds the {n_rows:,} rows of {source.name!r}")
    assert train_size is not None
    pool_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    pool_idx = np.sort(pool_rng.choice(n_rows, size=pool_size, replace=False))
    if design == "efficient":
        keep = keep_matrix(n_models, pool_size, seed=seed)
        design_cfg: dict[str, Any] = {"name": "efficient"}
    else:
        keep = poisson_keep(n_models, pool_size, inclusion=train_size / pool_size, seed=seed)
        design_cfg = {"name": "poisson", "inclusion": train_size / pool_size,
                      "mean_train_size": float(keep.sum(axis=1).mean())}
    y = source.labels(pool_idx)
    check_two_classes(keep, y)
    config = {
        **source.config(), "model": model, "n_models": n_models, "pool_size": pool_size,
        "train_size": train_size, "seed": seed, "pool_indices": pool_idx.tolist(),
        "model_params": model_params, "design": design_cfg,
        "trainer": {"name": trainer, **({**BATCHED_PARAMS, "batch_size": batch} if trainer == "batched" else {})},
        "score": "logit-scaled confidence log p_y - log sum_{c!=y} p_c",
        # a probability-only model's exact 0/1 outputs score ±SCORE_CAP (models.proba_logit)
        **({"score_cap": SCORE_CAP} if probability_only(model) else {}),
        **({"n_rows": n_rows} if pool_of_every_row else {}),  # the pool defaulted to every row (but one)
    }
    driver_versions = versions()
    header = {"format": RUN_FORMAT, "version": RUN_VERSION, "config": config, "versions": driver_versions}
    with ExitStack() as stack:
        # A Dask cluster is reached, and its workers are checked, before the run directory is touched.
        if backend == "dask":
            client = stack.enter_context(dask_client(scheduler, n_jobs))
            check_workers(client, model, model_params, driver_versions)
            runner = stack.enter_context(dask_runner(client))
        else:
            runner = local_runner(n_jobs)
        finished = set(resume_run(out, header, keep) if resume else ())
        # Tasks: one model each, or the fixed blocks [k·batch, (k+1)·batch) that still miss a model (a
        # block is recomputed whole, so its models come out as in an uninterrupted run).
        size = batch if trainer == "batched" else 1
        tasks = [list(range(lo, min(lo + size, n_models))) for lo in range(0, n_models, size)]
        tasks = [t for t in tasks if not finished.issuperset(t)]
        if not tasks:
            return out

        # The same frame and label objects go to every task: joblib's Dask backend scatters each once.
        features = source.features(pool_idx)
        jobs = (delayed(_train_models)(t, keep[t], features, y, source.categorical, source.numeric, model, seed,
                                       trainer, driver_versions)
                for t in tasks)
        bar = _progress(progress, n_models, len(finished))
        start = time.perf_counter()
        with bar, RunWriter(out, header, keep, finished, new=not resume) as writer:
            task = bar.add_task("train", total=n_models, completed=len(finished), rate="")
            for results in runner(jobs):
                for m, row in results:
                    if writer.save(m, row):
                        bar.update(task, advance=1)
                bar.update(task, rate=f"{writer.saved / max(time.perf_counter() - start, 1e-9):.2f} models/s")
    return out
