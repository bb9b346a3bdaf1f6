"""CP-SAT for bag/set repair blocks too large to enumerate.

Compressed formulation of ``min_t Σ_p min(‖c_p − t‖₁, ‖c_p‖₁)``: one integer t_o per outcome value
(binary for ``set``), one absolute deviation per cell, one ``min`` per protected value. OR-Tools
CP-SAT proves a lower bound (its best objective bound) and returns the best repair found within its
budget; both are reported, and the result is exact when they meet. dpaudit runs it with one worker
and a deterministic-time limit (:func:`run_cpsat`): CP-SAT's parallel portfolio depends on thread
timing, one worker does not, so the same block gets the same answer on every machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.measures._limits import TIME_LIMIT, UNIT_CPSAT_TIME, WORK_LIMIT, Limits

__all__ = ["solve_center", "center_model", "run_cpsat", "CpSatRun"]


def center_model(rows: np.ndarray, *, binary: bool, hint: np.ndarray | None = None,
                 at_least: int | None = None) -> tuple[Any, list[Any]]:
    """The CP-SAT model of one block (rows: protected × outcome) and its target variables t;
    ``at_least``: a proven lower bound on the optimum, added as a constraint on the objective."""
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
    if at_least is not None and at_least > 0:
        model.add(sum(costs) >= int(at_least))
    if hint is not None:
        for var, value in zip(t, hint):
            model.add_hint(var, int(value))
    return model, t


@dataclass
class CpSatRun:
    """What :func:`run_cpsat` found: proven bound, incumbent (∞ and no target if none), whether it is
    optimal, why it stopped otherwise, and the work units it used (its deterministic time)."""

    lower: float
    upper: float
    target: np.ndarray | None
    optimal: bool
    stopped_by: str | None
    work: float


def run_cpsat(rows: np.ndarray, *, binary: bool, limits: Limits, hint: np.ndarray | None = None,
              at_least: int | None = None, workers: int = 1) -> CpSatRun:
    """CP-SAT within ``limits`` (``max_deterministic_time``; an explicit wall clock as
    ``max_time_in_seconds``) on one block of integer counts; one worker (reproducible) unless told."""
    from ortools.sat.python import cp_model

    model, t = center_model(rows, binary=binary, hint=hint, at_least=at_least)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.max_deterministic_time = max(limits.cpsat_time, 0.0)
    if limits.seconds is not None:
        solver.parameters.max_time_in_seconds = limits.remaining_seconds()
    status = solver.Solve(model)
    work = float(solver.response_proto.deterministic_time) / UNIT_CPSAT_TIME
    optimal = status == cp_model.OPTIMAL
    stopped_by = None if optimal else TIME_LIMIT if limits.out_of_time() else WORK_LIMIT
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return CpSatRun(float(at_least or 0), float("inf"), None, False, stopped_by, work)
    target = np.array([solver.Value(v) for v in t], dtype=np.float64)
    upper = float(solver.ObjectiveValue())
    # the objective is an integer, so a fractional proven bound rounds up
    lower = upper if optimal else float(np.ceil(solver.BestObjectiveBound() - 1e-9))
    return CpSatRun(lower, upper, target, optimal, stopped_by, work)


def solve_center(rows: np.ndarray, *, binary: bool, time_limit: float, hint: np.ndarray | None = None,
                 workers: int = 2) -> tuple[float, float, np.ndarray]:
    """CP-SAT alone with ``workers`` threads and a wall-clock limit (``benchmarks/bench_repair_solvers.py``
    only: not reproducible, and not what dpaudit runs): lower bound, upper bound and best target."""
    run = run_cpsat(rows, binary=binary, limits=Limits(math.inf, time_limit), hint=hint, workers=workers)
    if run.target is None:
        return 0.0, float(np.rint(rows).sum()), np.zeros(rows.shape[1])
    return run.lower, run.upper, run.target
