"""Benchmark: full MIA evaluation (all rules, two α, bootstrap CIs) vs one np.sort of the scores.

M = 256 models, N+ = 50,000 records of synthetic per-record Gaussian scores
(``dpaudit.mia.simulate.gaussian_scores``). The baseline, run in the same process, is one
``np.sort`` of the flattened (M × N+) score matrix — the least any exact pooled ROC must do.

Run: ``python benchmarks/bench_mia.py [--models 256] [--records 50000] [--n-boot 200]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

_SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(_SRC))

import numpy as np  # noqa: E402

from dpaudit.mia.evaluate import evaluate  # noqa: E402
from dpaudit.mia.simulate import gaussian_scores  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=256)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--n-boot", type=int, default=200)
    args = ap.parse_args()
    sim = gaussian_scores(args.models, args.records, seed=0)
    scores = sim.to_scoreset()
    flat = sim.score.ravel()
    sort_times = []
    for _ in range(3):
        t0 = time.perf_counter()
        np.sort(flat)
        sort_times.append(time.perf_counter() - t0)
    timings = {}
    for n_boot in (0, args.n_boot):
        t0 = time.perf_counter()
        report = evaluate(scores, fpr=(1e-2, 1e-3), n_boot=n_boot)
        timings[n_boot] = time.perf_counter() - t0
    base = min(sort_times)
    print(f"M = {args.models}, N+ = {args.records:,} ({flat.size:,} target scores)")
    print(f"  one np.sort of the flattened scores: {base:.3f} s")
    for n_boot, t in timings.items():
        print(f"  evaluate (all rules, α = 1e-2 and 1e-3, n_boot = {n_boot:>3}): {t:7.2f} s = {t / base:6.1f}x the sort")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
