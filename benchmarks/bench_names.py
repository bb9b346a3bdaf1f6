"""How often U_TC's privately named cells are right, before and after issue 26 (an accuracy experiment,
not a timing: no wall clock is read).

A named cell is a **hit** when it belongs to the true top m of exact mode (ties included: its MD is at
least the m-th largest MD). Measured on Adult with the README's four criteria (the ``paper`` preset) at
ε = 1 for the three default measures, so U_TC gets ε = 1/3, and for U_TC alone (ε = 1):

* before: 10 names on 1/2 of U_TC's ε, all of it on the selection;
* after:  5 names on 3/4 of U_TC's ε, 4/5 of that on the selection and 1/5 on the reliability release.

Each configuration is drawn over ``--seeds`` seeds on the seeded path (numpy Gumbel noise, the
exponential mechanism) and ``--draws`` times from the real OpenDP measurement (``make_noisy_top_k``
under max-divergence: exponential noise, which selects at least as well). The reliability figures of
the "after" configuration are checked for calibration: among names whose reliability is ≥ 0.9, the
share that are hits.

    DPAUDIT_DATA=../shared/datasets python benchmarks/bench_names.py --seeds 200 --draws 200
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import dpaudit
from dpaudit.counting import count_tables
from dpaudit.criteria import parse_criteria
from dpaudit.measures._naming import NAMING_SHARE, naming_epsilons
from dpaudit.measures.contribution import MD_LINF_SENSITIVITY, marginal_differences, private_top_cells
from dpaudit.privacy import noisy_top_k
from dpaudit.privacy._mechanisms import noisy_top_k_draws

BEFORE = {"names": 10, "naming share": 0.5, "selection share": 1.0}
AFTER = {"names": 5, "naming share": NAMING_SHARE, "selection share": None}  # None: naming_epsilons decides


def _hits(scores: np.ndarray, chosen: np.ndarray, m: int) -> np.ndarray:
    return scores[chosen] >= np.sort(scores)[::-1][m - 1] - 1e-15


def measure(tables: list, scores: np.ndarray, tc_epsilon: float, config: dict, seeds: int, draws: int) -> dict:
    m = config["names"]
    naming = tc_epsilon * config["naming share"]
    select = naming * config["selection share"] if config["selection share"] else naming_epsilons(naming, m, scores.size)[0]
    n = tables[0].n
    seeded, sure = [], []
    for seed in range(seeds):
        if config["selection share"] == 1.0:  # the code before issue 26: the whole naming ε selects
            chosen = np.array(noisy_top_k(scores, m, sensitivity_linf=MD_LINF_SENSITIVITY / n, epsilon=select,
                                          seed=seed).indices)
            seeded.append(_hits(scores, chosen, m))
            continue
        named = private_top_cells(tables, m, epsilon=naming, seed=seed)
        order = {_key(t, i): i for i, t in _flat(tables)}
        chosen = np.array([order[(c.criterion, tuple(c.protected.values()), tuple(c.outcome.values()),
                                  tuple(c.admissible.values()))] for c in named.top_cells])
        hit = _hits(scores, chosen, m)
        seeded.append(hit)
        sure += [(c.reliability, bool(h)) for c, h in zip(named.top_cells, hit)]
    real = noisy_top_k_draws(scores, m, sensitivity_linf=MD_LINF_SENSITIVITY / n, epsilon=select, draws=draws)
    out = {"names": m, "naming epsilon": naming, "selection epsilon": select,
           f"hit rate (seeded, {seeds} seeds)": float(np.mean(seeded)),
           f"hit rate (OpenDP, {draws} draws)": float(np.mean(_hits(scores, real.ravel(), m)))}
    if sure:
        confident = [h for r, h in sure if r >= 0.9]
        out["names with reliability ≥ 0.9"] = len(confident) / len(sure)
        out["hit rate among them"] = float(np.mean(confident)) if confident else None
        out["mean reliability"] = float(np.mean([r for r, _ in sure]))
    return out


def _flat(tables: list):
    i = 0
    for t in tables:
        for index in np.ndindex(t.counts.shape):
            yield i, (t, index)
            i += 1


def _key(t_index: tuple, i: int) -> tuple:
    t, index = t_index
    labels = t.cell_labels(*index)
    return (str(t.criterion), tuple(labels["protected"].values()), tuple(labels["outcome"].values()),
            tuple(labels["admissible"].values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--draws", type=int, default=100)
    args = parser.parse_args()
    df, schema = dpaudit.datasets.load("adult")
    tables = count_tables(df, parse_criteria(dpaudit.datasets.preset("adult", "paper")), schema)
    scores = np.concatenate([marginal_differences(t.counts).ravel() for t in tables])
    results = {}
    for label, tc_epsilon in (("three measures, ε = 1 (U_TC 1/3)", 1 / 3), ("U_TC alone, ε = 1", 1.0)):
        for name, config in (("before", BEFORE), ("after", AFTER)):
            results[f"{label}: {name}"] = measure(tables, scores, tc_epsilon, config, args.seeds, args.draws)
    print(json.dumps(results, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
