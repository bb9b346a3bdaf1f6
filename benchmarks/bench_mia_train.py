"""Benchmark: train M logistic-regression models on Adult for efficient LiRA (dpaudit.mia.train).

M = 256 models, N+ = 20,000 pool records, N = 10,000 (each model trains on the records it keeps).
Baseline, in the same process: a plain scikit-learn loop — for each model, fit the same pipeline
(one-hot + standard scaling + LogisticRegression(C=1, lbfgs)) on its training rows and take
``predict_proba`` on the pool — with nothing written to disk. Then ``train_run`` with both trainers
(``per-model``: one pipeline per joblib task; ``batched``: :mod:`dpaudit.mia.train.batched_logreg`, 64
models per task) and n_jobs=1 and 2 (atomic per-model files, progress off). Reported: seconds,
models/s, and the ratio of each to the baseline (< 1: faster than the plain loop). The loop is also
timed with BLAS limited to one thread, as train_run runs every fit (on a 2-core machine the default
BLAS threading slowed it ~4x). Accuracy: the largest |φ| difference of each trainer to sklearn's
pipeline solved to tol = 1e-12 (the exact minimiser), on models 0 and 1.

Run: ``DPAUDIT_DATA=... python benchmarks/bench_mia_train.py [--models 256] [--pool 20000]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
import numpy as np

from dpaudit import datasets
from dpaudit.mia.designs import keep_matrix
from dpaudit.mia.train import load_run, train_run
from dpaudit.mia.train.models import make_pipeline


def sklearn_loop(n_models: int, pool_size: int, seed: int, blas_threads: int | None) -> tuple[float, np.ndarray]:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=blas_threads):
        return _loop(n_models, pool_size, seed)


def _pool(frame: Any, spec: Any, n_models: int, pool_size: int, seed: int) -> tuple[Any, np.ndarray, np.ndarray]:
    """The pool of ``pool_size`` Adult records (features X, labels y) and the efficient-LiRA keep matrix."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    pool = frame.iloc[np.sort(rng.choice(len(frame), pool_size, replace=False))].reset_index(drop=True)
    y = (pool[spec.label] == spec.positive).to_numpy(dtype=int)
    keep = keep_matrix(n_models, pool_size, seed=seed)
    return pool[list(spec.categorical) + list(spec.numeric)], y, keep


def _loop(n_models: int, pool_size: int, seed: int) -> tuple[float, np.ndarray]:
    frame, _ = datasets.load("adult")
    spec = datasets.task("adult")
    t0 = time.perf_counter()
    X, y, keep = _pool(frame, spec, n_models, pool_size, seed)
    out = np.empty((n_models, pool_size))
    for m in range(n_models):
        pipe = make_pipeline(list(spec.categorical), list(spec.numeric), "logreg", 0).fit(X[keep[m]], y[keep[m]])
        p = np.clip(pipe.predict_proba(X)[np.arange(pool_size), y], 1e-300, 1 - 1e-16)
        out[m] = np.log(p) - np.log1p(-p)
    return time.perf_counter() - t0, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=256)
    ap.add_argument("--pool", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    m, n_plus = args.models, args.pool
    print(f"Adult, logistic regression: M = {m} models, N+ = {n_plus:,}, N = {n_plus // 2:,}; "
          f"{os.cpu_count()} CPUs")
    datasets.load("adult")  # warm the file cache for every contender
    base, base_scores = sklearn_loop(m, n_plus, args.seed, None)
    rows = [("plain scikit-learn loop (in memory)", base),
            ("same loop, BLAS limited to 1 thread", sklearn_loop(m, n_plus, args.seed, 1)[0])]
    tmp = Path(tempfile.mkdtemp(prefix="bench_mia_train_"))
    scores = {}
    try:
        for trainer in ("per-model", "batched"):
            for n_jobs in (1, 2):
                run = tmp / f"{trainer}{n_jobs}"
                t0 = time.perf_counter()
                train_run(run, dataset="adult", model="logreg", n_models=m, pool_size=n_plus, seed=args.seed,
                          n_jobs=n_jobs, progress=False, trainer=trainer)
                rows.append((f"train_run {trainer}, n_jobs={n_jobs}", time.perf_counter() - t0))
                scores[trainer] = load_run(run).score
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"  {'path':<40} {'seconds':>9} {'models/s':>9} {'vs loop':>8}")
    for name, sec in rows:
        print(f"  {name:<40} {sec:>9.2f} {m / sec:>9.2f} {sec / base:>7.3f}x")
    ok = np.abs(base_scores) < 15  # 1 − p_y from predict_proba loses digits as p_y → 1
    exact = exact_scores(n_plus, args.seed, scores["batched"].shape[0], models=(0, 1))
    for trainer, got in scores.items():
        print(f"  {trainer:<10} max |φ − φ(loop)| = {np.abs(got - base_scores)[ok].max():.2e} (|φ| < 15); "
              f"max |φ − φ(sklearn, tol=1e-12)| on models 0, 1 = {np.abs(got[:2] - exact).max():.2e}")
    return 0


def exact_scores(pool_size: int, seed: int, n_models: int, models: tuple[int, ...]) -> np.ndarray:
    """φ of sklearn's pipelines solved to tol = 1e-12 (the reference for both trainers' accuracy)."""
    frame, _ = datasets.load("adult")
    spec = datasets.task("adult")
    X, y, keep = _pool(frame, spec, n_models, pool_size, seed)
    rows = []
    for m in models:
        pipe = make_pipeline(list(spec.categorical), list(spec.numeric), "logreg", 0).set_params(clf__tol=1e-12, clf__max_iter=100_000)
        z = pipe.fit(X[keep[m]], y[keep[m]]).decision_function(X)
        rows.append(np.where(y == 1, z, -z))
    return np.vstack(rows)


if __name__ == "__main__":
    raise SystemExit(main())
