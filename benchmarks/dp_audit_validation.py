"""Full-size validation of the DP-audit bounds (dpaudit.mia.dp_audit, dp_audit_multi); no timing.

Mechanism with exact ε, no training: m canaries, each included with probability ½ (x ∈ {0, 1}),
score x + Laplace(1/ε). Prints, for the one-run and the multi-run bound (Bonferroni, confidence 0.95):

- coverage: the share of ``--audits`` audits whose bound is ≤ the true ε (must be ≥ 95 %);
- tightness: the median bound over 10 audits as m grows;
- caught: for a mechanism claiming ε = 1 and running at 10, the smallest m at which ≥ 95 % of 20
  audits give a bound above the claim.

    PYTHONPATH=src python benchmarks/dp_audit_validation.py [--audits 1000]
"""

from __future__ import annotations

import argparse

import numpy as np

from dpaudit.mia.dp_audit import epsilon_lower_bound_one_run
from dpaudit.mia.dp_audit_multi import epsilon_lower_bound_multi_run

METHODS = {"one-run": epsilon_lower_bound_one_run, "multi-run": epsilon_lower_bound_multi_run}


def laplace(rng: np.random.Generator, m: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    x = rng.random(m) < 0.5
    s = x + rng.laplace(scale=1.0 / eps, size=m)
    return s[x], s[~x]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--audits", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("coverage (m = 1000, confidence 0.95): share of audits with bound <= true epsilon")
    for eps in (1.0, 4.0):
        for name, method in METHODS.items():
            rng = np.random.default_rng([args.seed, int(eps)])
            b = np.array([method(*laplace(rng, 1000, eps)).epsilon for _ in range(args.audits)])
            print(f"  eps={eps:g} {name:9s} {np.mean(b <= eps):7.1%} of {args.audits}  "
                  f"median {np.median(b):.3f}  max {b.max():.3f}")
    print("tightness (eps = 4, median of 10 audits)")
    for name, method in METHODS.items():
        row = []
        for m in (100, 1000, 10_000, 100_000):
            rng = np.random.default_rng([args.seed, m])
            row.append(f"m={m}: {np.median([method(*laplace(rng, m, 4.0)).epsilon for _ in range(10)]):.3f}")
        print(f"  {name:9s} " + "  ".join(row))
    print("caught (claims eps = 1, runs at 10): smallest m with >= 95 % of 20 audits above the claim")
    for name, method in METHODS.items():
        found = "not at m <= 400"
        for m in (25, 50, 100, 200, 400):
            rng = np.random.default_rng([args.seed, m, 10])
            rate = np.mean([method(*laplace(rng, m, 10.0)).epsilon > 1.0 for _ in range(20)])
            if rate >= 0.95:
                found = f"m = {m} ({rate:.0%})"
                break
        print(f"  {name:9s} {found}")


if __name__ == "__main__":
    main()
