"""CP-SAT for bag/set repair blocks too large to enumerate.

Compressed formulation of ``min_t Σ_p min(‖c_p − t‖₁, ‖c_p‖₁)``: one integer t_o per outcome value
(binary for ``set``), one absolute deviation per cell, one ``min`` per protected value. OR-Tools
CP-SAT proves a lower bound (its best objective bound) and returns the best repair found within the
time limit; both are reported, and the result is exact when they meet.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["solve_center", "center_model"]


def center_model(rows: np.ndarray, *, binary: bool, hint: np.ndarray | None = None) -> tuple[Any, list[Any]]:
    """The CP-SAT model of one block (rows: protected × outcome) and its target variables t."""
    from ortools.sat.python import cp_model

    counts = np.rint(rows).astype(np.int64)
    m, n_out = counts.shape
    totals = counts.sum(axis=1)
    model = cp_model.CpModel()
    hi = [1 if binary else int(counts[:, o].max()) for o in range(n_out)]
    t = [model.new_int_var(0, hi[o], f"t{o}") for o in range(n_out)]
    costs = []
    for p in range(m):
        devs = []
        for o in range(n_out):
            dev = model.new_int_var(0, max(hi[o], int(counts[p, o])), "")
            model.add_abs_equality(dev, int(counts[p, o]) - t[o])
            devs.append(dev)
        keep = model.new_int_var(0, int(totals[p]) + sum(hi), "")
        model.add(keep == sum(devs))
        cost = model.new_int_var(0, int(totals[p]), "")
        model.add_min_equality(cost, [keep, int(totals[p])])
        costs.append(cost)
    model.minimize(sum(costs))
    if hint is not None:
        for var, value in zip(t, hint):
            model.add_hint(var, int(value))
    return model, t


def solve_center(rows: np.ndarray, *, binary: bool, time_limit: float, hint: np.ndarray | None = None,
                 workers: int = 2) -> tuple[float, float, np.ndarray]:
    """Lower bound, upper bound and best target vector t for one block (rows: protected × outcome)."""
    from ortools.sat.python import cp_model

    model, t = center_model(rows, binary=binary, hint=hint)
    totals = np.rint(rows).astype(np.int64).sum(axis=1)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = workers
    status = solver.Solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return 0.0, float(totals.sum()), np.zeros(len(t))
    target = np.array([solver.Value(v) for v in t], dtype=np.float64)
    upper = float(solver.ObjectiveValue())
    # the objective is an integer, so a fractional proven bound rounds up
    lower = upper if status == cp_model.OPTIMAL else float(np.ceil(solver.BestObjectiveBound() - 1e-9))
    return lower, upper, target
