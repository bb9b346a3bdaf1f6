"""Training time of each learner of a DP audit (dpaudit.mia.claim.learners) on Adult; no baseline.

Adult's 32 561 training rows, every declared column but the outcome and ``fnlwgt`` (13): categorical
columns one-hot, numeric ones min–max scaled, each row divided by √13 so its L2 norm is ≤ 1 (what the
audit's preprocessing does from the schema). For every learner at ε = 1, δ = 10⁻⁵: the first fit (which
for DP-SGD includes JAX's import, the noise calibration and the compilation of the training loop), then
the median of ``--repeats`` fits with other seeds (compiled loop and calibration reused), and the
training accuracy as a sanity check. Learners whose extra is missing are reported as such.

    DPAUDIT_DATA=../shared/datasets PYTHONPATH=src python benchmarks/bench_claim_learners.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from dpaudit import datasets
from dpaudit.mia.claim.learners import LEARNERS


def adult() -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd

    frame, _ = datasets.load("adult")
    y = (frame["income"].astype(str).str.strip().str.rstrip(".") == ">50K").to_numpy(np.int64)
    features = frame.drop(columns=["income", "fnlwgt"])
    parts = []
    for column in features.columns:
        values = features[column]
        if pd.api.types.is_numeric_dtype(values):
            v = values.to_numpy(np.float64)
            parts.append(((v - v.min()) / (v.max() - v.min()))[:, None])
        else:
            parts.append(pd.get_dummies(values.astype(str)).to_numpy(np.float64))
    return np.hstack(parts) / np.sqrt(features.shape[1]), y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    X, y = adult()
    print(f"Adult: {X.shape[0]} x {X.shape[1]}, max row norm {np.linalg.norm(X, axis=1).max():.3f}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    print(f"{'learner':<20} {'first fit s':>12} {'median fit s':>13} {'accuracy':>9}")
    for name, learner in LEARNERS.items():
        times, accuracy = [], float("nan")
        try:
            for seed in range(args.repeats + 1):
                start = time.perf_counter()
                model = learner.build(1.0, 1e-5, seed).fit(X, y)
                times.append(time.perf_counter() - start)
                accuracy = float((model.predict(X) == y).mean())
        except Exception as exc:  # a missing extra: say so and go on
            print(f"{name:<20} {type(exc).__name__}: {exc}")
            continue
        print(f"{name:<20} {times[0]:12.2f} {np.median(times[1:]):13.3f} {accuracy:9.4f}")


if __name__ == "__main__":
    main()
