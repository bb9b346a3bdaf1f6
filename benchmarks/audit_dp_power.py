"""At which number of models M does the DP-claim audit catch a broken learner? (issue 27; no timing)

Design as ``audit_dp_seeds.py``: Adult's records, a base set of ``--base-rows`` rows, m ``orthogonal`` canaries.
For each learner, claimed ε and M in ``--models``, ``--seeds`` audits: the median of each bound and in how many
the claim was found violated. A correct learner (``dp-sgd``, ``dp-logreg``) must stay at 0 violations at every M;
a broken one is "caught at M" from the first M at which every seed's audit says "claim violated".

    PYTHONPATH=src DPAUDIT_DATA=... python benchmarks/audit_dp_power.py [--models 64,256,1024] [--seeds 2]
        [--learners dp-sgd-no-clip,dp-sgd-half-noise,dp-sgd] [--epsilons 1,4] [-m 100] [--base-rows 100]
        [--synthetic D]

``--synthetic D``: instead of Adult, 2,000 rows of D uniform columns on [0, 1] (declared ``Binned([0, 0.5, 1])``)
and a logistic label — a DP claim holds on every data set, and few columns leave objective perturbation's noise
(which grows with the dimension) small beside one canary's pull (``dp-logreg-10x`` is caught there, not on
Adult's 220 columns).
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import numpy as np
import pandas as pd
from audit_dp_adult import adult_sample

from dpaudit.mia.claim.audit import audit_dp
from dpaudit.schema import Binned, Categorical, Schema


def synthetic(d: int, n: int = 2000) -> tuple[Any, Schema, str]:
    """n rows of d uniform columns and a label y with P(y = 1) = σ(3(Σx − d/2)), seed 0, and their schema."""
    rng = np.random.default_rng(0)
    X = rng.random((n, d))
    y = (rng.random(n) < 1 / (1 + np.exp(-(X.sum(1) - d / 2) * 3))).astype(int)
    frame = pd.DataFrame({f"x{i}": X[:, i] for i in range(d)} | {"y": y})
    schema = Schema({f"x{i}": Binned([0, 0.5, 1]) for i in range(d)} | {"y": Categorical([0, 1])})
    return frame, schema, "y"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="64,256,1024")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--learners", default="dp-sgd-no-clip,dp-sgd-half-noise,dp-sgd")
    parser.add_argument("--epsilons", default="1,4")
    parser.add_argument("-m", type=int, default=100)
    parser.add_argument("--base-rows", type=int, default=100)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--synthetic", type=int, default=None, metavar="D")
    args = parser.parse_args()
    if args.synthetic:
        frame, schema, label = synthetic(args.synthetic)
    else:
        frame, schema = adult_sample(None)
        label = "income"
    print(f"{f'synthetic, {args.synthetic} columns' if args.synthetic else 'Adult'}, base {args.base_rows} rows, m = {args.m} orthogonal canaries, {args.seeds} seeds per cell; "
          "bounds: median; violated: audits of the seeds")
    print(f"{'learner':18s} {'claim':>5s} {'M':>5s}  {'one-run':>7s}  {'f-DP':>6s}  {'multi-run':>9s}  violated")
    for name in args.learners.split(","):
        for eps in (float(e) for e in args.epsilons.split(",")):
            for models in (int(x) for x in args.models.split(",")):
                results = [audit_dp(frame, label=label, schema=schema, epsilon=eps, learner=name, m=args.m,
                                    models=models, canaries="orthogonal", base_rows=args.base_rows, seed=seed,
                                    contrast=False, n_jobs=args.n_jobs) for seed in range(args.seeds)]
                cells = [statistics.median(r.bounds[k].epsilon for r in results)
                         for k in ("one-run", "one-run f-DP", "multi-run")]
                print(f"{name:18s} {eps:5g} {models:5d}  {cells[0]:7.2f}  {cells[1]:6.2f}  {cells[2]:9.2f}  "
                      f"{sum(r.verdict.violated for r in results):>3d}/{args.seeds}", flush=True)


if __name__ == "__main__":
    main()
