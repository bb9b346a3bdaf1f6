"""The DP-claim audit over repeated seeds (issue 27): every learner's bounds against its claim; no timing.

Design (the one under which a non-private linear model is visible, docs/mia.md): all of Adult's
records as the population, a base set of ``--base-rows`` drawn rows, m ``orthogonal`` canaries,
``--models`` M models per audit (the one-run bounds over all M·m (model, canary) pairs, the multi-run
bound choosing its canary on half of the models), verdict at 95 % (one-run and multi-run, each at 97.5 %). Per learner and claimed ε, over ``--seeds``
seeds: the median and the largest of each bound, and in how many audits the claim was found violated.
A correct DP learner must never be found in violation; the non-private and broken ones should be.

    PYTHONPATH=src DPAUDIT_DATA=... python benchmarks/audit_dp_seeds.py [--seeds 10] [--models 64] [-m 100]
        [--base-rows 100] [--learners dp-logreg,dp-sgd,...] [--epsilons 1,4]
"""

from __future__ import annotations

import argparse
import statistics

from audit_dp_adult import adult_sample

from dpaudit.mia.claim.audit import audit_dp
from dpaudit.mia.claim.learners import LEARNERS

DEFAULT = "dp-logreg,dp-sgd,dp-logreg-10x,dp-sgd-half-noise,dp-sgd-no-clip,logreg,sgd"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--models", type=int, default=64)
    parser.add_argument("-m", type=int, default=100)
    parser.add_argument("--base-rows", type=int, default=100)
    parser.add_argument("--learners", default=DEFAULT)
    parser.add_argument("--epsilons", default="1,4")
    args = parser.parse_args()
    frame, schema = adult_sample(None)
    print(f"Adult ({len(frame):,} records), base {args.base_rows} rows, m = {args.m} orthogonal canaries, "
          f"M = {args.models} models, {args.seeds} seeds; bounds: median / max; violated: audits of {args.seeds}")
    print(f"{'learner':18s} {'claim':>5s}  {'one-run':>13s}  {'one-run f-DP':>13s}  {'multi-run':>13s}  violated")
    for name in args.learners.split(","):
        claims = [float(e) for e in args.epsilons.split(",")] if LEARNERS[name].private else [1.0]
        for eps in claims:
            results = [audit_dp(frame, label="income", schema=schema, epsilon=eps, learner=name, m=args.m,
                                models=args.models, canaries="orthogonal", base_rows=args.base_rows, seed=seed,
                                contrast=False) for seed in range(args.seeds)]
            cells = []
            for method in ("one-run", "one-run f-DP", "multi-run"):
                values = [r.bounds[method].epsilon for r in results]
                cells.append(f"{statistics.median(values):5.2f} / {max(values):5.2f}")
            print(f"{name:18s} {eps:5g}  " + "  ".join(f"{c:>13s}" for c in cells)
                  + f"  {sum(r.verdict.violated for r in results):>3d}", flush=True)


if __name__ == "__main__":
    main()
