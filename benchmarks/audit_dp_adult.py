"""The DP-claim audit (``dpaudit mia audit-dp``) on Adult over seeds: bounds against the claim, and the time per audit.

For each learner and claimed ε, ``--seeds`` audits (seed 0, 1, …) of one model with m canaries print
the bounds of each method (median and maximum over the seeds), the non-private contrast's, how many
audits say "claim violated", and the median wall time of one audit (the non-private contrast
included). Two sizes: the 2,000-row sample of ``tests/test_audit_dp.py`` (m = 200) and the whole of
Adult (m = 1000).

    PYTHONPATH=src python benchmarks/audit_dp_adult.py [--seeds 10] [--full-seeds 3] [--dpsgd [--small-only]]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from dpaudit import datasets
from dpaudit.mia.claim.audit import audit_dp
from dpaudit.schema import Schema


def adult_sample(rows: int | None) -> tuple[Any, Schema]:
    frame, schema = datasets.load("adult")
    task = datasets.task("adult")
    cols = [*task.categorical, *task.numeric, task.label]
    if rows is not None:
        frame = frame.sample(rows, random_state=0)
    return frame[cols].reset_index(drop=True), Schema({c: schema[c] for c in cols})


def run(frame: Any, schema: Schema, *, learner: str, epsilon: float, m: int, canaries: str, seeds: int) -> None:
    results, times = [], []
    for seed in range(seeds):
        t0 = time.perf_counter()
        results.append(audit_dp(frame, label="income", schema=schema, epsilon=epsilon, learner=learner, m=m,
                                canaries=canaries, seed=seed))
        times.append(time.perf_counter() - t0)
    def stat(values: list[float]) -> str:
        return f"median {statistics.median(values):.3g} max {max(values):.3g}"

    print(f"{learner} eps={epsilon:g} m={m} {canaries} n={len(frame)} ({seeds} seeds, {statistics.median(times):.2f} s "
          f"per audit): violated {sum(r.verdict.violated for r in results)}/{seeds}")
    for name in results[0].bounds:
        contrast = [r.contrast_bounds[name].epsilon for r in results if r.contrast_bounds is not None]
        print(f"    {name:<13} {stat([r.bounds[name].epsilon for r in results])}    non-private "
              f"{stat(contrast) if contrast else '-'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--full-seeds", type=int, default=3, help="audits of the whole of Adult (0: none)")
    parser.add_argument("--dpsgd", action="store_true", help="also the DP-SGD learners (the 'dpsgd' extra: JAX)")
    parser.add_argument("--small-only", action="store_true", help="only the DP-SGD learners of --dpsgd")
    args = parser.parse_args()
    small = adult_sample(2000)
    for canaries in () if args.small_only else ("mislabelled", "ood"):
        for learner, eps in (("dp-logreg", 1.0), ("dp-logreg", 4.0), ("dp-logreg-10x", 1.0)):
            run(*small, learner=learner, epsilon=eps, m=200, canaries=canaries, seeds=args.seeds)
    if args.dpsgd:
        for learner in ("dp-sgd", "dp-sgd-half-noise", "dp-sgd-no-clip"):
            run(*small, learner=learner, epsilon=1.0, m=200, canaries="ood", seeds=args.seeds)
    if args.full_seeds == 0:
        return
    full = adult_sample(None)
    for learner, eps in (("dp-logreg", 1.0), ("dp-logreg", 4.0)):
        run(*full, learner=learner, epsilon=eps, m=1000, canaries="mislabelled", seeds=args.full_seeds)


if __name__ == "__main__":
    main()
