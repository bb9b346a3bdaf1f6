"""Disparate vulnerability at full size: the test's level and power on simulated scores, and a trained run by group.

    python benchmarks/disparate_validation.py --runs 1000            # simulated null and planted rates
    python benchmarks/disparate_validation.py --run RUN --by sex --by race --fpr 0.01 --fpr 0.001

Simulated (``tests/test_mia_groups.py`` at small size): per case, the share of ``--runs`` seeded runs
in which the test of equality claims a difference at level 0.05 (null cases: should be ≤ 5 % within
Monte-Carlo error; planted: the power). A run directory: ``evaluate(..., by=COLUMN)`` on the run and
on its null (membership permuted within each record, :meth:`dpaudit.mia.scores.ScoreSet.permuted`),
printing each disparity block (the answer line and the per-group table) and writing them as JSON
with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.groups import PerRecordTPR, disparity, groups_of
from dpaudit.mia.per_record import empirical_per_record
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.simulate.shapes import shaped_scores
from dpaudit.report.text_groups import disparity_lines

ALPHA = 0.1
#: (case, shape, effect, permute membership, size of group g0 of 400, IN shift of g0's records)
CASES = [
    ("null: no signal", "gaussian", 0.0, False, 200, 0.0),
    ("null: signal independent of the groups", "gaussian", 1.0, False, 150, 0.0),
    ("null: t3, membership permuted", "student_t3", 1.0, True, 200, 0.0),
    ("null: tied, membership permuted", "tied", 1.0, True, 100, 0.0),
    ("null: saturated, signal", "saturated", 1.0, False, 200, 0.0),
    ("null: forest-like, membership permuted", "forest", 1.0, True, 200, 0.0),
    ("null: a group of 20", "gaussian", 1.0, False, 20, 0.0),
    ("planted: g0's IN scores +0.5 σ", "gaussian", 0.5, False, 200, 0.5),
    ("planted: g0's IN scores +1 σ, t3", "student_t3", 0.0, False, 200, 1.0),
]


def _simulated(runs: int, permutations: int) -> None:
    for case, shape, effect, permute, size, shift in CASES:
        claimed = 0
        for seed in range(runs):
            scores = shaped_scores(shape, 24, 400, seed=seed, effect=effect)
            if permute:
                scores = scores.permuted(seed=seed + 10_000)
            labels = np.full(400, "g1", dtype=object)
            labels[np.random.default_rng(seed + 20_000).permutation(400)[:size]] = "g0"
            if shift:
                score = np.array(scores.score)
                score[np.asarray(scores.keep) & (labels == "g0")[None, :]] += shift
                scores = ScoreSet(score, scores.keep, train_size=200, pool_size=400)
            tpr = empirical_per_record(scores.score, scores.keep, ALPHA).tpr
            d = disparity([PerRecordTPR(ALPHA, "per_record_empirical", tpr)], groups_of("g", labels),
                          n_permutations=permutations, n_boot=0, seed=seed)
            claimed += d.claimed
        rate = claimed / runs
        se = np.sqrt(max(rate * (1 - rate), 0.05 * 0.95) / runs)
        print(f"{case:<42} claimed in {claimed:>4} of {runs} runs: {rate:.3f} (± {se:.3f})")


def _run(path: str, columns: list[str], alphas: tuple[float, ...], n_boot: int, out: str | None) -> None:
    from dpaudit.mia.train import load_run

    scores = load_run(path)
    found = {}
    for name, which in (("run", scores), ("null", scores.permuted(seed=1))):
        for column in columns:
            start = time.perf_counter()
            d = evaluate(which, fpr=alphas, n_boot=n_boot, by=column).disparity
            assert d is not None
            print(f"== {name} (M = {scores.n_models}, N+ = {scores.n_records:,}) by {column} "
                  f"[{time.perf_counter() - start:.0f} s]")
            print("\n".join(disparity_lines(d)))
            found[f"{name}/{column}"] = d.to_dict()
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(found, f, indent=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=0, help="simulated runs per case (0: none)")
    parser.add_argument("--permutations", type=int, default=199)
    parser.add_argument("--run", help="a run directory of dpaudit mia train")
    parser.add_argument("--by", action="append", default=[])
    parser.add_argument("--fpr", action="append", type=float, default=[])
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.runs:
        _simulated(args.runs, args.permutations)
    if args.run:
        _run(args.run, args.by or ["sex"], tuple(args.fpr) or (0.01, 0.001), args.n_boot, args.json)


if __name__ == "__main__":
    main()
