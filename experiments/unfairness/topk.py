"""Experiment 4 — U_TC's value and relative error against k.

The paper (spec §5.4) plots U_TC and its error for growing k and names the choice of k an open
question. Per dataset, U_TC summed over the preset's criteria at each k, its sensitivity
(``tc_sensitivity``: min(3k, 6 or 8)/n per criterion), the expected relative error of a release at
ε = 1 (sensitivity / (ε · value), as E|Lap(b)| = b) and the mean relative error of ``REPS`` OpenDP
Laplace releases.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from common import Config, figure, relative_errors, tables_of

from dpaudit.measures import TopContribution

NAME = "topk"
KS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
EPSILON, REPS = 1.0, 10


def run(config: Config) -> dict[str, Any]:
    rows = []
    for name in config.datasets:
        tables = tables_of(name, config.quick)
        crits, n = [t.criterion for t in tables], tables[0].n
        for k in KS:
            measure = TopContribution(k=k)
            value = math.fsum(measure.per_criterion(tables))
            sens = measure.sensitivity(crits, n)
            err = relative_errors(value, sens, EPSILON, REPS)
            rows.append({"dataset": name, "k": k, "value": value, "sensitivity": sens,
                         # E|Lap(b)| = b: the relative error the releases average to, without their noise
                         "expected_relative_error": sens / EPSILON / value if value > 0 else float("nan"),
                         "mean_relative_error": float(np.mean(err)), "epsilon": EPSILON, "reps": REPS})
    by = {name: [r for r in rows if r["dataset"] == name] for name in config.datasets}
    full = {name: math.fsum(TopContribution(k=t.counts.size).value(t.counts) for t in tables_of(name, config.quick))
            for name in config.datasets}
    best_k = {name: min(sel, key=lambda r: r["mean_relative_error"])["k"] for name, sel in by.items()}
    summary = {
        "value_nondecreasing": all(all(a["value"] <= b["value"] + 1e-12 for a, b in zip(sel, sel[1:]))
                                   for sel in by.values()),
        # U_TC(k) stops growing once k covers every cell with a positive difference: the smallest k of
        # the grid reaching the all-cells value, None when the grid ends before it
        "value_saturates_at_k": {name: next((r["k"] for r in sel if r["value"] >= full[name] * (1 - 1e-12)), None)
                                 for name, sel in by.items()},
        "value_at_largest_k_over_all_cells": {name: sel[-1]["value"] / full[name] for name, sel in by.items()},
        "k_with_least_error": best_k,
        "k_with_least_expected_error": {name: min(sel, key=lambda r: r["expected_relative_error"])["k"]
                                        for name, sel in by.items()},
    }

    def draw(axes: Any) -> None:
        for name, sel in by.items():
            axes[0].plot([r["k"] for r in sel], [r["value"] for r in sel], marker="o", label=name)
            axes[1].plot([r["k"] for r in sel], [r["mean_relative_error"] for r in sel], marker="o", label=name)
        for ax, label in zip(axes, ("U_TC (sum over criteria)", f"mean relative error (ε = {EPSILON:g})")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("k")
            ax.set_ylabel(label)
        axes[0].legend(fontsize=6)

    fig = figure(config.out, "topk", draw, ncols=2, size=(4.5, 3.6))
    return {"experiment": NAME, "rows": rows, "summary": summary, "figures": [fig]}
