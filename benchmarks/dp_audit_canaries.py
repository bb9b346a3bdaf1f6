"""Which canaries make a one-run DP audit see a non-private model (issue 27); no timing.

For each canary kind × learner × claimed ε × base size n × number of canaries m, over seeds: draw n
base rows of Adult (the audit's unit-ball features, :func:`dpaudit.mia.claim.features.unit_features`),
choose m canaries (:func:`dpaudit.mia.claim.canaries.choose_canaries`; the ``mislabelled`` ones from
other rows, the ``orthogonal`` ones from the base rows' least-variance directions), include each with
probability ½ (:func:`~dpaudit.mia.claim.canaries.include`), fit the learner once on base + included
canaries (:func:`dpaudit.mia.claim.audit.canary_scores_of`, as ``audit_dp`` does) and print the
one-run ε lower bound (Steinke et al., Bonferroni over thresholds, confidence 0.95, δ = 1e-5) per
seed and their median. A correct DP learner must stay ≤ its claim; a non-private or broken one
should exceed it.

    PYTHONPATH=src DPAUDIT_DATA=... python benchmarks/dp_audit_canaries.py \\
        [--kinds mislabelled,ood,orthogonal] [--learners logreg,dp-logreg,...] [--epsilons 1,4] \\
        [--n 50,500] [-m 100,150] [--seeds 3]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import numpy as np

from dpaudit.mia.claim.audit import canary_scores_of, design_seed, load_data
from dpaudit.mia.claim.canaries import choose_canaries, include
from dpaudit.mia.claim.features import unit_features
from dpaudit.mia.claim.learners import LEARNERS
from dpaudit.mia.dp_audit import epsilon_lower_bound_one_run

DELTA = 1e-5
CONFIDENCE = 0.95
DEFAULT_LEARNERS = "logreg,dp-logreg,dp-logreg-10x,sgd,dp-sgd,dp-sgd-half-noise,dp-sgd-no-clip"


def adult() -> tuple[np.ndarray, np.ndarray]:
    td, schema = load_data("adult")
    return unit_features(td.frame, td.categorical + td.numeric, schema), td.labels()


def one_bound(X: np.ndarray, y: np.ndarray, kind: str, learner: Any, eps: float, n: int, m: int,
              seed: int) -> float:
    """One audit: n base rows, m canaries of ``kind``, one model; its one-run bound."""
    rng = np.random.default_rng(design_seed(seed, 2, n, m))
    rows = rng.choice(len(y), size=n + m, replace=False)
    base, pool = rows[:n], rows[n:]
    source = (X[base], y[base]) if kind == "orthogonal" else (X[pool], y[pool])
    c = choose_canaries(*source, kind, m, seed=design_seed(seed, 0))
    mask = include(m, seed=design_seed(seed, 1, 0))[None, :]
    s = canary_scores_of(learner, eps, DELTA, (X[base], y[base]), c, mask, seed, None)[0]
    return epsilon_lower_bound_one_run(s[mask[0]], s[~mask[0]], delta=DELTA, confidence=CONFIDENCE).epsilon


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default="mislabelled,ood,orthogonal")
    parser.add_argument("--learners", default=DEFAULT_LEARNERS)
    parser.add_argument("--epsilons", default="1,4")
    parser.add_argument("--n", default="50,500", help="base rows")
    parser.add_argument("-m", default="100,150", help="canaries")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    X, y = adult()
    print(f"Adult, {X.shape[1]} features; one-run bound (bonferroni, confidence {CONFIDENCE}, delta {DELTA:g}), "
          f"{args.seeds} seeds")
    print(f"{'kind':12s} {'learner':18s} {'claim':>5s} {'n':>5s} {'m':>4s} {'median':>6s}  bounds")
    for kind in args.kinds.split(","):
        for name in args.learners.split(","):
            learner = LEARNERS[name]
            for eps in [float(e) for e in args.epsilons.split(",")] if learner.private else [float("inf")]:
                for n in [int(v) for v in args.n.split(",")]:
                    for m in [int(v) for v in args.m.split(",")]:
                        b = [one_bound(X, y, kind, learner, eps if learner.private else 1.0, n, m, s)
                             for s in range(args.seeds)]
                        flag = " > claim" if learner.private and max(b) > eps else ""
                        print(f"{kind:12s} {name:18s} {eps:5g} {n:5d} {m:4d} {statistics.median(b):6.2f}  "
                              + " ".join(f"{v:.2f}" for v in b) + flag, flush=True)


if __name__ == "__main__":
    main()
