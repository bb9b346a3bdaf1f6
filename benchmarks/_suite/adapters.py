"""The workloads of the other benchmark scripts, behind one small interface the sections call.

The suite times what ``bench_fairness.py``, ``bench_mia.py``, ``bench_mia_train.py``,
``bench_repair_solvers.py`` (and, when it exists, ``bench_spark.py``) time, and must not grow a
second copy of them. Each script's importable run function returns one result dict::

    {"name", "rows", "baseline": side name, "sides": {side: {"seconds": [...], "median", "ratio",
     "round_ratios"}}, "load": {"before": [1, 5, 15 min], "after": [...]}, "check": text, ...}

(the sides interleaved in one process); :func:`comparisons` turns it into the suite's
:class:`~_suite.timing.Comparison` rows, one per non-baseline side, keeping every repeat's seconds.

Status (kept in :data:`STATUS`; :func:`pending` reports what still runs through a stand-in):

* ``bench_fairness.py``: ``run_adult``, ``run_paper_tc``, ``run_census``, ``run_frames`` (imported).
* ``bench_mia.py``: ``run_eval`` (imported; with ``rss``, each side's peak RSS in a fresh process).
* ``bench_mia_train.py``: ``sklearn_loop`` (the plain scikit-learn loop) is imported; ``train_run``
  is called here with both trainers.
* ``bench_repair_solvers.py``: ``solve_rc2`` (RC2 on the compressed per-block formulation) is imported.
* ``bench_spark.py``: ``run_spark(rows, *, repeat, ...)`` and, if present, ``run_spark_adult`` (the
  optional section 7); without ``run_spark`` section 7 says it is not measured.
"""

from __future__ import annotations

import importlib
import itertools
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parents[1]
SRC = BENCH.parent / "src"


def use_this_tree() -> None:
    """Import dpaudit from this tree's ``src/`` (whatever ``pip install -e`` points at) and make the
    benchmark scripts importable."""
    for path in (str(BENCH), str(SRC)):
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)


use_this_tree()

import dpaudit  # noqa: E402

from .timing import Comparison, compare_many  # noqa: E402

#: Which script each workload needs, the functions it imports, and what stands in while they are missing.
STATUS: dict[str, dict[str, str]] = {
    "fairness": {"module": "bench_fairness", "wants": "run_adult, run_paper_tc, run_census, run_frames",
                 "stand_in": "nothing (sections 1 and 6 fail)"},
    "mia": {"module": "bench_mia", "wants": "run_eval", "stand_in": "nothing (sections 4 and 6 fail)"},
    "train": {"module": "bench_mia_train", "wants": "sklearn_loop", "stand_in": "nothing (section 5 fails)"},
    "repair": {"module": "bench_repair_solvers", "wants": "solve_rc2",
               "stand_in": "nothing (the compressed-formulation row is missing)"},
    "spark": {"module": "bench_spark", "wants": "run_spark", "stand_in": "nothing (section 7 is not measured)"},
}


def _script(name: str) -> Any | None:
    try:
        return importlib.import_module(name)
    except Exception:  # a script missing or mid-rewrite must not stop the suite
        return None


def function(key: str, name: str) -> Callable[..., Any] | None:
    """``name`` from the script behind workload ``key`` (see :data:`STATUS`), or None if it has none."""
    module = _script(STATUS[key]["module"])
    fn = getattr(module, name, None) if module is not None else None
    return fn if callable(fn) else None


def pending() -> list[str]:
    """What the suite cannot import yet (and what stands in for it); empty when every script is ready."""
    out = []
    for key, info in STATUS.items():
        missing = [w.strip() for w in info["wants"].split(",") if function(key, w.strip()) is None]
        if missing:
            out.append(f"{key}: {info['module']}.py has no {', '.join(missing)}; stand-in: {info['stand_in']}")
    return out


def source(key: str, name: str) -> str:
    return f"{STATUS[key]['module']}.{name}"


# ---------------------------------------------------------------------------------------------------
# result dict → Comparison rows
# ---------------------------------------------------------------------------------------------------
#: Display names of the scripts' side names (others are shown as they are, without a "baseline: " prefix).
LABELS = {
    "audit tvd": "audit, U_MI^TVD",
    "audit tc": "audit, U_TC",
    "audit tvd+tc": "audit, U_MI^TVD + U_TC",
    "count_tables": "count_tables only",
}


def label(side: str) -> str:
    if side in LABELS:
        return LABELS[side]
    return side.removeprefix("baseline: ")


def _load(value: Any) -> float:
    if isinstance(value, (list, tuple)):
        return float(value[0]) if value else 0.0
    return float(value or 0.0)


#: Result keys copied into each row's ``extra`` (small scalars and dicts only; no SQL text or paths).
EXTRA_KEYS = ("peak_rss_mib", "matrix_mib", "mib", "reused", "reference", "reference_encode_and_clean_median")


def comparisons(result: Mapping[str, Any], size: str, origin: str, *, workload: str | None = None,
                skip: tuple[str, ...] = ()) -> list[Comparison]:
    """One :class:`Comparison` per side of a script's result dict other than its baseline (and ``skip``)."""
    base = result["baseline"]
    sides = result["sides"]
    load = result.get("load", {})
    before = _load(load.get("before")) if isinstance(load, Mapping) else 0.0
    after = _load(load.get("after")) if isinstance(load, Mapping) else 0.0
    extra = {k: result[k] for k in EXTRA_KEYS if k in result}
    extra["source"] = origin
    children = result.get("rss") if isinstance(result.get("rss"), Mapping) else {}
    out = []
    for side, data in sides.items():
        if side == base or side in skip:
            continue
        own = dict(extra)
        child = children.get(side) if children else None
        if isinstance(child, Mapping) and child.get("own_peak_mib") is not None:
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
    written once, reused while rows, seed and generator version match). Returns the path and whether
    it was reused."""
    fn = function("fairness", "census_file")
    if fn is None:
        raise RuntimeError("benchmarks/bench_fairness.py cannot be imported")
    path, reused = fn(rows, data_dir, seed=seed)
    return Path(path), bool(reused)


def _need(key: str, name: str) -> Callable[..., Any]:
    fn = function(key, name)
    if fn is None:
        raise RuntimeError(f"benchmarks/{STATUS[key]['module']}.py has no importable {name}")
    return fn


# ---------------------------------------------------------------------------------------------------
# section 1: audit vs the bare DuckDB group-by a user writes by hand (bench_fairness.py)
# ---------------------------------------------------------------------------------------------------
def fairness_adult(frame: Any, schema: Any, *, repeat: int, warmup: int) -> list[Comparison]:
    result = _need("fairness", "run_adult")(frame, schema, repeat=repeat, warmup=warmup)
    return comparisons(result, f"{result['rows']:,}", source("fairness", "run_adult"))


def paper_tc(frame: Any, schema: Any, *, repeat: int, warmup: int, paper_code: Path | None) -> list[Comparison]:
    result = _need("fairness", "run_paper_tc")(frame, schema, repeat=repeat, warmup=warmup, paper_code=paper_code)
    size, origin = f"{result['rows']:,}", source("fairness", "run_paper_tc")
    out = comparisons(result, size, origin)  # every side against the reference on the encoded frame
    sides = result["sides"]
    for ours, ref in tc_pairs():  # the like-for-like pairs the target is judged on, from the same rounds
        if ours in sides and ref in sides and ref != result["baseline"]:
            out += comparisons({**result, "baseline": ref, "sides": {ref: sides[ref], ours: sides[ours]}}, size, origin)
    return out


def tc_pairs() -> tuple[tuple[str, str], ...]:
    """``bench_fairness.TC_PAIRS``: the (dpaudit side, reference side) pairs that compare like with like."""
    module = _script("bench_fairness")
    return tuple(getattr(module, "TC_PAIRS", ())) if module is not None else ()


def fairness_census(rows: int, data_dir: Path, *, repeat: int, warmup: int, seed: int = 0,
                    rss: bool = False) -> list[Comparison]:
    result = _need("fairness", "run_census")(rows, data_dir=data_dir, repeat=repeat, warmup=warmup, seed=seed, rss=rss)
    return comparisons(result, f"{rows:,}", source("fairness", "run_census"))


def fairness_frames(rows: int, data_dir: Path, *, repeat: int, warmup: int, seed: int = 0) -> list[Comparison]:
    results = _need("fairness", "run_frames")(rows, data_dir=data_dir, repeat=repeat, warmup=warmup, seed=seed)
    return [c for r in results.values() for c in comparisons(r, f"{rows:,}", source("fairness", "run_frames"))]


# ---------------------------------------------------------------------------------------------------
# section 4: MIA evaluation vs one np.sort of the score matrix (bench_mia.py)
# ---------------------------------------------------------------------------------------------------
def mia(models: int, records: int, boots: tuple[int, ...], *, repeat: int, warmup: int, seed: int = 0,
        rss: bool = False) -> list[Comparison]:
    """``bench_mia.run_eval``: ``evaluate`` at each bootstrap count in ``boots`` vs one ``np.sort`` of the scores."""
    result = _need("mia", "run_eval")(models, records, boots, repeat=repeat, warmup=warmup, seed=seed, rss=rss)
    return comparisons(result, f"M = {models}, N+ = {records:,}", source("mia", "run_eval"),
                       workload="Gaussian LiRA scores")


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
    from dpaudit.mia.train import load_run, train_run

    sklearn_loop = _need("train", "sklearn_loop")
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
        c.extra["source"] = "dpaudit.mia.train.train_run vs " + source("train", "sklearn_loop")
    return comps


# ---------------------------------------------------------------------------------------------------
# section 3: RC2 on the compressed formulation (bench_repair_solvers.py)
# ---------------------------------------------------------------------------------------------------
def rc2_compressed() -> Callable[[np.ndarray, float], dict[str, Any]] | None:
    """bench_repair_solvers.solve_rc2 (RC2 on the compressed per-block formulation), if importable."""
    return function("repair", "solve_rc2")


# ---------------------------------------------------------------------------------------------------
# section 7 (optional): the audit on Spark, local mode (bench_spark.py)
# ---------------------------------------------------------------------------------------------------
def spark(rows: int, data_dir: Path, *, repeat: int, warmup: int, seed: int = 0) -> list[Comparison] | str:
    """``bench_spark.run_spark(rows, repeat=…, warmup=…, data_dir=…, seed=…)`` as rows, or why it did not run.

    The hook for the Spark path of issue 14: the call passes only the keywords ``run_spark`` accepts.
    """
    run_spark = function("spark", "run_spark")
    if run_spark is None:
        return ("not measured: benchmarks/bench_spark.py has no importable run_spark(rows, *, repeat, ...) yet; "
                "rerun `python benchmarks/run_all.py --only spark` once it has")
    import inspect

    wanted = {"repeat": repeat, "warmup": warmup, "data_dir": data_dir, "seed": seed}
    params = inspect.signature(run_spark).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    kwargs = {k: v for k, v in wanted.items() if takes_any or k in params}
    t0 = time.perf_counter()
    result = run_spark(rows, **kwargs)
    results = list(result.values()) if "sides" not in result else [result]
    out = [c for r in results for c in comparisons(r, f"{rows:,}", source("spark", "run_spark"))]
    for c in out:
        c.extra["seconds_total"] = time.perf_counter() - t0
    return out


def spark_adult(frame: Any, schema: Any, *, repeat: int, warmup: int) -> list[Comparison]:
    """``bench_spark.run_spark_adult``: Adult on a cached Spark DataFrame vs the hand-written Spark group-bys."""
    result = _need("spark", "run_spark_adult")(frame, schema, repeat=repeat, warmup=warmup)
    return comparisons(result, f"{result['rows']:,}", source("spark", "run_spark_adult"))
