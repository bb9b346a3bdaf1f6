"""Benchmark: train M logistic-regression models on Adult for efficient LiRA (dpaudit.mia.train).

M = 256 models, N+ = 20,000 pool records, N = 10,000 (each model trains on the records it keeps).
Baseline, in the same process: a plain scikit-learn loop — for each model, fit the same pipeline
(one-hot + standard scaling + LogisticRegression(C=1, lbfgs)) on its training rows and take
``predict_proba`` on the pool — with nothing written to disk. Then ``train_run`` with n_jobs=1 and
n_jobs=2 (atomic per-model files, progress off). Reported: seconds, models/s, and the ratio of each
to the baseline (> 1: slower than the plain loop). The loop is also timed with BLAS limited to one
thread, as train_run runs every fit (on a 2-core machine the default BLAS threading slowed it ~4x).

Run: ``DPAUDIT_DATA=... python benchmarks/bench_mia_train.py [--models 256] [--pool 20000]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

_SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(_SRC))

import numpy as np  # noqa: E402

from dpaudit import datasets  # noqa: E402
from dpaudit.mia.scores import keep_matrix  # noqa: E402
from dpaudit.mia.train import DATASETS, _make_pipeline, load_run, train_run  # noqa: E402


def sklearn_loop(n_models: int, pool_size: int, seed: int, blas_threads: int | None) -> tuple[float, np.ndarray]:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=blas_threads):
        return _loop(n_models, pool_size, seed)


def _loop(n_models: int, pool_size: int, seed: int) -> tuple[float, np.ndarray]:
    frame, _ = datasets.load("adult")
    spec = DATASETS["adult"]
    t0 = time.perf_counter()
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    pool = frame.iloc[np.sort(rng.choice(len(frame), pool_size, replace=False))].reset_index(drop=True)
    y = (pool[spec["label"]] == spec["positive"]).to_numpy(dtype=int)
    keep = keep_matrix(n_models, pool_size, seed=seed)
    X = pool[spec["categorical"] + spec["numeric"]]
    out = np.empty((n_models, pool_size))
    for m in range(n_models):
        pipe = _make_pipeline("adult", "logreg", 0).fit(X[keep[m]], y[keep[m]])
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
    try:
        for n_jobs in (1, 2):
            run = tmp / f"jobs{n_jobs}"
            t0 = time.perf_counter()
            train_run(run, dataset="adult", model="logreg", n_models=m, pool_size=n_plus, seed=args.seed,
                      n_jobs=n_jobs, progress=False)
            rows.append((f"train_run n_jobs={n_jobs} (run directory)", time.perf_counter() - t0))
            got = load_run(run).score
        ok = np.abs(base_scores) < 15  # 1 − p_y from predict_proba loses digits as p_y → 1
        diff = float(np.abs(got - base_scores)[ok].max())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"  {'path':<40} {'seconds':>9} {'models/s':>9} {'vs loop':>8}")
    for name, sec in rows:
        print(f"  {name:<40} {sec:>9.2f} {m / sec:>9.2f} {sec / base:>7.2f}x")
    print(f"  max |φ(train_run) − φ(loop)| = {diff:.2e} where |φ| < 15 "
          f"({(~ok).mean():.2%} of entries beyond, where log(p/(1−p)) from probabilities loses accuracy)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
