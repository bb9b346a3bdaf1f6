"""The workloads of the other benchmark scripts, turned into the suite's rows.

The suite times what ``bench_fairness.py``, ``bench_mia.py``, ``bench_mia_train.py`` and
``bench_spark.py`` time, and must not grow a second copy of them: it calls their run functions, each
returning the result dict of :func:`_suite.timing.run_sides` (the sides interleaved in one process),
and :func:`comparisons` turns one into :class:`~_suite.timing.Comparison` rows, one per non-baseline
side, keeping every repeat's seconds. The scripts are imported when a section needs them, so one
that fails to import fails only its sections (``sections.run_section`` records the error).

* ``bench_fairness.py``: ``run_adult``, ``run_paper_tc``, ``run_census``, ``run_frames``, ``census_file``.
* ``bench_mia.py``: ``run_eval`` (with ``rss``, each side's peak RSS in a fresh process).
* ``bench_mia_train.py``: ``sklearn_loop`` (the plain scikit-learn loop); ``train_run`` is called
  here with both trainers.
* ``bench_spark.py``: ``run_spark`` and ``run_spark_adult`` (section 7).
* ``bench_startup.py``: ``run_startup`` (section 8).
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

import dpaudit

from .timing import Comparison, compare_many

#: Display names of the scripts' side names (others are shown as they are, without a "baseline: " prefix).
LABELS = {
    "audit tvd": "audit, U_MI^TVD",
    "audit tc": "audit, U_TC",
    "audit tvd+tc": "audit, U_MI^TVD + U_TC",
    "count_tables": "count_tables only",
}

#: Result keys copied into each row's ``extra`` (small scalars and dicts only; no SQL text or paths).
EXTRA_KEYS = ("peak_rss_mib", "matrix_mib", "mib", "reused", "reference")


def label(side: str) -> str:
    return LABELS.get(side, side.removeprefix("baseline: "))


def comparisons(result: Mapping[str, Any], size: str, origin: str, *, workload: str | None = None) -> list[Comparison]:
    """One :class:`Comparison` per side of a script's result dict other than its baseline."""
    base, sides = result["baseline"], result["sides"]
    load = result.get("load", {})
    before, after = (float((load.get(k) or [0.0])[0]) for k in ("before", "after"))
    extra = {k: result[k] for k in EXTRA_KEYS if k in result}
    extra["source"] = origin
    children = result.get("rss") or {}
    out = []
    for side, data in sides.items():
        if side == base:
            continue
        own = dict(extra)
        child = children.get(side) or {}
        if child.get("own_peak_mib") is not None:
            own["own_peak_mib"] = float(child["own_peak_mib"])  # what the side adds to a process holding its data
        out.append(Comparison(workload or str(result.get("name", "")), size, label(side), label(base),
                              [float(x) for x in data["seconds"]], [float(x) for x in sides[base]["seconds"]],
                              (before, after), str(result.get("check", "")), extra=own))
    return out


# ---------------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------------
def adult() -> tuple[Any, Any] | str:
    """``(frame, schema)`` of the real Adult data, or the reason it is unavailable."""
    try:
        return dpaudit.datasets.load("adult")
    except (dpaudit.DPAuditError, OSError) as exc:
        return f"Adult unavailable ({str(exc).splitlines()[0]}); set DPAUDIT_DATA to the shared datasets folder"


def census_file(rows: int, data_dir: Path, *, seed: int = 0) -> tuple[Path, bool]:
    """The synthetic census Parquet file of ``rows`` rows in ``data_dir`` (``bench_fairness.census_file``:
    written once, reused while rows, seed and generator version match), and whether it was reused."""
    from bench_fairness import census_file as write

    path, reused = write(rows, data_dir, seed=seed)
    return Path(path), bool(reused)


# ---------------------------------------------------------------------------------------------------
# section 1: audit vs the bare DuckDB group-by a user writes by hand (bench_fairness.py)
# ---------------------------------------------------------------------------------------------------
def fairness_adult(frame: Any, schema: Any, *, repeat: int, warmup: int) -> list[Comparison]:
    from bench_fairness import run_adult

    result = run_adult(frame, schema, repeat=repeat, warmup=warmup)
    return comparisons(result, f"{result['rows']:,}", "bench_fairness.run_adult") + vs_codes(
        result, f"{result['rows']:,}", "bench_fairness.run_adult")


def vs_codes(result: dict[str, Any], size: str, origin: str) -> list[Comparison]:
    """``count_tables`` on the frame of pandas Categorical columns against ``np.bincount`` of their
    codes, from the same interleaved rounds (the target for frames that already hold codes)."""
    from bench_fairness import CODES

    sides, ours = result["sides"], "count_tables (Categorical frame)"
    if CODES not in sides or ours not in sides:
        return []
    return comparisons({**result, "baseline": CODES, "sides": {CODES: sides[CODES], ours: sides[ours]}}, size, origin)


def codes_side() -> str:
    """The name of the ``np.bincount``-of-codes baseline side (``bench_fairness.CODES``)."""
    from bench_fairness import CODES

    return CODES


def paper_tc(frame: Any, schema: Any, *, repeat: int, warmup: int, paper_code: Path | None) -> list[Comparison]:
    from bench_fairness import run_paper_tc

    result = run_paper_tc(frame, schema, repeat=repeat, warmup=warmup, paper_code=paper_code)
    size, origin = f"{result['rows']:,}", "bench_fairness.run_paper_tc"
    out = comparisons(result, size, origin)  # every side against the reference on the encoded frame
    sides = result["sides"]
    for ours, ref in tc_pairs():  # the like-for-like pairs the target is judged on, from the same rounds
        if ours in sides and ref in sides and ref != result["baseline"]:
            out += comparisons({**result, "baseline": ref, "sides": {ref: sides[ref], ours: sides[ours]}}, size, origin)
    return out


def tc_pairs() -> tuple[tuple[str, str], ...]:
    """``_fairness_paper.TC_PAIRS``: the (dpaudit side, reference side) pairs that compare like with like."""
    from _fairness_paper import TC_PAIRS

    return TC_PAIRS


def fairness_census(rows: int, data_dir: Path, *, repeat: int, warmup: int, seed: int = 0,
                    rss: bool = False) -> list[Comparison]:
    from bench_fairness import run_census

    result = run_census(rows, data_dir=data_dir, repeat=repeat, warmup=warmup, seed=seed, rss=rss)
    return comparisons(result, f"{rows:,}", "bench_fairness.run_census")


def fairness_frames(rows: int, data_dir: Path, *, repeat: int, warmup: int, seed: int = 0) -> list[Comparison]:
    from bench_fairness import run_frames

    results = run_frames(rows, data_dir=data_dir, repeat=repeat, warmup=warmup, seed=seed)
    return [c for r in results.values()
            for c in comparisons(r, f"{rows:,}", "bench_fairness.run_frames") + vs_codes(r, f"{rows:,}", "bench_fairness.run_frames")]


# ---------------------------------------------------------------------------------------------------
# section 4: MIA evaluation vs one np.sort of the score matrix (bench_mia.py)
# ---------------------------------------------------------------------------------------------------
def mia(models: int, records: int, boots: tuple[int, ...], *, repeat: int, warmup: int, seed: int = 0,
        rss: bool = False) -> list[Comparison]:
    """``bench_mia.run_eval``: ``evaluate`` at each bootstrap count in ``boots`` vs one ``np.sort`` of the scores."""
    from bench_mia import run_eval

    result = run_eval(models, records, boots, repeat=repeat, warmup=warmup, seed=seed, rss=rss)
    return comparisons(result, f"M = {models}, N+ = {records:,}", "bench_mia.run_eval", workload="Gaussian LiRA scores")


# ---------------------------------------------------------------------------------------------------
# section 5: training vs a plain scikit-learn loop (bench_mia_train.py)
# ---------------------------------------------------------------------------------------------------
class RunDirs:
    """Fresh run directories for train_run under one temporary folder, removed by :meth:`close`."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="dpaudit_bench_train_"))
        self._count = itertools.count()

    def __call__(self) -> Path:
        return self.root / f"run{next(self._count)}"

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def train(models: int, pool: int, *, repeat: int, warmup: int, seed: int = 0) -> list[Comparison]:
    """train_run (batched and per-model logistic regression, 1 worker) vs bench_mia_train's sklearn loop."""
    from bench_mia_train import sklearn_loop

    from dpaudit.mia.train import load_run, train_run

    dirs = RunDirs()
    try:
        def run(trainer: str) -> Callable[[], Any]:
            return lambda: train_run(dirs(), dataset="adult", model="logreg", n_models=models, pool_size=pool,
                                     seed=seed, n_jobs=1, progress=False, trainer=trainer)

        out = dirs()
        train_run(out, dataset="adult", model="logreg", n_models=models, pool_size=pool, seed=seed, n_jobs=1,
                  progress=False, trainer="batched")
        score = load_run(out).score
        _, loop_scores = sklearn_loop(models, pool, seed, None)
        if score.shape != (models, pool) or loop_scores.shape != score.shape:
            raise AssertionError(f"train_run wrote scores of shape {score.shape}, the loop {loop_scores.shape}")
        ok = np.abs(loop_scores) < 15  # 1 − p_y from predict_proba loses digits as p_y → 1
        diff = float(np.abs(score - loop_scores)[ok].max()) if ok.any() else 0.0
        check = (f"scores {models} × {pool:,} written; max |φ(batched) − φ(loop)| = {diff:.2g} "
                 "(sklearn stops at tol = 1e-4)")
        comps = compare_many("Adult, logistic regression", f"M = {models}, N+ = {pool:,}",
                             {"train_run, batched trainer, 1 worker": run("batched"),
                              "train_run, per-model trainer, 1 worker": run("per-model")},
                             "plain scikit-learn loop", lambda: sklearn_loop(models, pool, seed, None), repeat,
                             warmup=warmup)
    finally:
        dirs.close()
    for c in comps:
        c.check = check
        c.extra["source"] = "dpaudit.mia.train.train_run vs bench_mia_train.sklearn_loop"
    return comps


# ---------------------------------------------------------------------------------------------------
# section 7: the audit on Spark, local mode (bench_spark.py)
# ---------------------------------------------------------------------------------------------------
def spark(rows: int, data_dir: Path, *, repeat: int, warmup: int, seed: int = 0) -> list[Comparison]:
    """``bench_spark.run_spark``: the census file on Spark vs the hand-written Spark group-bys."""
    from bench_spark import run_spark

    result = run_spark(rows, repeat=repeat, warmup=warmup, data_dir=data_dir, seed=seed)
    return comparisons(result, f"{rows:,}", "bench_spark.run_spark")


def spark_adult(frame: Any, schema: Any, *, repeat: int, warmup: int) -> list[Comparison]:
    """``bench_spark.run_spark_adult``: Adult on a cached Spark DataFrame vs the hand-written Spark group-bys."""
    from bench_spark import run_spark_adult

    result = run_spark_adult(frame, schema, repeat=repeat, warmup=warmup)
    return comparisons(result, f"{result['rows']:,}", "bench_spark.run_spark_adult")


# ---------------------------------------------------------------------------------------------------
# section 8: start-up as fresh processes (bench_startup.py)
# ---------------------------------------------------------------------------------------------------
def startup(*, repeat: int, warmup: int) -> list[Comparison]:
    """``bench_startup.run_startup``: ``dpaudit --help``, the small exact audit, ``import dpaudit`` and
    ``python -c pass`` as fresh processes vs ``python -c "import duckdb, pandas"``."""
    from bench_startup import run_startup

    result = run_startup(repeat=repeat, warmup=warmup)
    return comparisons(result, "fresh process", "bench_startup.run_startup", workload="Start-up")
