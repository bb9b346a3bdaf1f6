"""RC2 (PySAT) and CP-SAT together for bag/set repair blocks too large to enumerate.

The compressed boolean formulation of ``min_t Σ_p min(‖c_p − t‖₁, ‖c_p‖₁)`` ("one boolean per
protected value, one per distinct column class", spec §2.3): k_p says protected value p is kept; for
each outcome o with distinct positive counts v₁ < … < v_m, y_oj says t_o ≥ v_j (an order encoding,
hard clauses y_o,j+1 → y_oj). The tuple columns (o, i) with v_{j−1} < i ≤ v_j are one class of
weight w = v_j − v_{j−1}, held by H_oj = {p : c_po ≥ v_j}. Soft clauses: (k_p) with weight ‖c_p‖₁
(deleting p's tuples), and for every p and class (¬k_p ∨ y_oj) with weight w if p ∈ H_oj (a kept
tuple dropped), else (¬k_p ∨ ¬y_oj) (a tuple inserted). Its optimum is the block's U_R exactly (t_o
only needs values in {0} ∪ {c_po}, where a median lies). ``set`` is the same on the support
(every count 0 or 1).

:func:`solve_hybrid` runs, within one time limit, RC2 (core-guided MaxSAT: its cost only grows and
is a proven lower bound at every moment; it finds a model only when it has proven it optimal) and
OR-Tools CP-SAT on the integer formulation of :mod:`dpaudit.measures._center_cpsat` (incumbents, an
upper bound, and its own proven bound). It stops as soon as one of them proves the optimum or the
best proven lower bound meets the best incumbent, and says which closed the gap.
``benchmarks/bench_repair_solvers.py`` compares the solvers one by one (it imports this module).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["column_classes", "bool_model", "target_from", "center_cost", "compute_within", "solve_rc2", "solve_hybrid", "Hybrid",
           "race_enumeration", "rc2_available"]

_POLL = 0.01  # seconds between checks of the two solvers' bounds
_GRACE = 5.0  # seconds an interrupted RC2 may take to finish processing its last core


def rc2_available() -> bool:
    """Whether PySAT (``python-sat``, a dependency of dpaudit) can be imported."""
    try:
        import pysat.examples.rc2  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------------------------------
# the compressed boolean formulation
def column_classes(rows: np.ndarray) -> list[tuple[int, int, int, np.ndarray]]:
    """(o, threshold v_j, weight v_j − v_{j−1}, holders c_po ≥ v_j) for every outcome and distinct value."""
    out = []
    for o in range(rows.shape[1]):
        values = np.unique(rows[:, o])
        values = values[values > 0]
        previous = 0
        for v in values.tolist():
            out.append((o, int(v), int(v - previous), rows[:, o] >= v))
            previous = v
    return out


def bool_model(rows: np.ndarray) -> tuple[list[int], list[int], list[tuple[int, int, int, np.ndarray]],
                                          list[list[int]], list[tuple[list[int], int]]]:
    """Variables (keep, y), column classes, hard and weighted soft clauses (1-based literals)."""
    m = rows.shape[0]
    classes = column_classes(rows)
    keep = list(range(1, m + 1))
    y = list(range(m + 1, m + 1 + len(classes)))
    hard = []
    for k in range(1, len(classes)):
        if classes[k][0] == classes[k - 1][0]:  # same outcome: t_o ≥ v_j → t_o ≥ v_{j−1}
            hard.append([-y[k], y[k - 1]])
    soft = [([keep[p]], int(rows[p].sum())) for p in range(m) if rows[p].sum() > 0]
    for k, (_, _, weight, holders) in enumerate(classes):
        for p in range(m):
            soft.append(([-keep[p], y[k] if holders[p] else -y[k]], weight))
    return keep, y, classes, hard, soft


def target_from(classes: list[tuple[int, int, int, np.ndarray]], y_true: list[bool], n_out: int) -> np.ndarray:
    """The outcome target t of a model: t_o is the largest threshold v_j with y_oj true."""
    t = np.zeros(n_out)
    for (o, v, _, _), on in zip(classes, y_true):
        if on:
            t[o] = max(t[o], v)
    return t


def center_cost(rows: np.ndarray, t: np.ndarray) -> float:
    """Σ_p min(‖c_p − t‖₁, ‖c_p‖₁): the cost of giving every kept row the target t."""
    return float(np.minimum(np.abs(rows - t[None, :]).sum(axis=1), rows.sum(axis=1)).sum())


def _rc2(rows: np.ndarray) -> tuple[Any, list[int], list[tuple[int, int, int, np.ndarray]]]:
    from pysat.examples.rc2 import RC2Stratified
    from pysat.formula import WCNF

    _, y, classes, hard, soft = bool_model(np.rint(rows).astype(np.int64))
    wcnf = WCNF()
    for clause in hard:
        wcnf.append(clause)
    for clause, weight in soft:
        wcnf.append(clause, weight=weight)
    return RC2Stratified(wcnf, solver="g3", adapt=True, exhaust=True, minz=True), y, classes


def compute_within(rc2: Any, limit: float) -> Any:
    """``rc2.compute()``, interrupted after ``limit`` seconds: the model, or None if interrupted."""
    timer = threading.Timer(limit, rc2.interrupt)
    timer.start()
    try:
        return rc2.compute(expect_interrupt=True)
    finally:
        timer.cancel()


def solve_rc2(rows: np.ndarray, limit: float) -> dict[str, Any]:
    """RC2 alone, interrupted after ``limit`` seconds: time, proven lower bound, upper bound (NaN when
    interrupted: RC2 has no model before it proves one optimal) and whether it proved the optimum."""
    rc2, y, classes = _rc2(rows)
    start = time.perf_counter()
    model = compute_within(rc2, limit)
    elapsed = time.perf_counter() - start
    lower = float(rc2.cost)
    rc2.delete()
    if model is None:
        return {"time": elapsed, "lower": lower, "upper": math.nan, "optimal": False}
    true = {lit for lit in model if lit > 0}
    upper = center_cost(rows, target_from(classes, [v in true for v in y], rows.shape[1]))
    return {"time": elapsed, "lower": lower, "upper": upper, "optimal": upper == lower}


# ---------------------------------------------------------------------------------------------------
# RC2 for the proof, CP-SAT for incumbents, together
@dataclass
class Hybrid:
    """What :func:`solve_hybrid` found: proven bounds, the best target, who closed the gap."""

    lower: float
    upper: float
    target: np.ndarray
    closed_by: str | None  # "RC2", "CP-SAT", "RC2 bound = CP-SAT incumbent", ... or None (gap left)
    timed_out: bool
    elapsed: float


class _RC2Thread(threading.Thread):
    def __init__(self, rows: np.ndarray) -> None:
        super().__init__(daemon=True, name="dpaudit-rc2")
        self.rows = rows
        self.rc2: Any = None
        self.ready = threading.Event()
        self.model: list[int] | None = None
        self.target: np.ndarray | None = None
        self.error: BaseException | None = None
        self.final_cost = 0.0
        self.deleted = False
        self._stop_requested = False
        self._lock = threading.Lock()

    def run(self) -> None:
        try:
            self.rc2, y, classes = _rc2(self.rows)
            with self._lock:
                stop = self._stop_requested
            self.ready.set()
            if not stop:
                self.model = self.rc2.compute(expect_interrupt=True)
            self.final_cost = float(self.rc2.cost)
            if self.model is not None:
                true = {lit for lit in self.model if lit > 0}
                self.target = target_from(classes, [v in true for v in y], self.rows.shape[1])
        except BaseException as exc:  # reported to the caller, who falls back to CP-SAT's bounds
            self.error = exc
        finally:
            self.ready.set()
            with self._lock:  # never interrupted while (or after) its solver is freed
                self.deleted = True
                if self.rc2 is not None:
                    self.rc2.delete()

    @property
    def lower(self) -> float:
        """RC2's proven lower bound so far (its core-guided cost only grows)."""
        rc2 = self.rc2
        return float(self.final_cost if not self.is_alive() or rc2 is None else rc2.cost)

    def stop(self) -> None:
        with self._lock:
            self._stop_requested = True
            if self.rc2 is not None and self.ready.is_set() and not self.deleted:
                self.rc2.interrupt()


class _CpSatThread(threading.Thread):
    def __init__(self, rows: np.ndarray, binary: bool, time_limit: float, hint: np.ndarray | None,
                 workers: int) -> None:
        super().__init__(daemon=True, name="dpaudit-cpsat")
        self.args = (rows, binary, time_limit, hint, workers)
        self.solver: Any = None
        self.incumbent = math.inf
        self.bound = 0.0
        self.optimal = False
        self.target: np.ndarray | None = None
        self.error: BaseException | None = None
        self._stop_requested = False
        self._lock = threading.Lock()

    def run(self) -> None:
        from ortools.sat.python import cp_model

        from dpaudit.measures._center_cpsat import center_model

        rows, binary, time_limit, hint, workers = self.args
        try:
            model, t = center_model(rows, binary=binary, hint=hint)
            solver = cp_model.CpSolver()
            solver.parameters.max_time_in_seconds = float(time_limit)
            solver.parameters.num_workers = workers
            outer = self

            class Incumbents(cp_model.CpSolverSolutionCallback):
                def on_solution_callback(self) -> None:
                    value = float(self.ObjectiveValue())
                    if value < outer.incumbent:
                        outer.target = np.array([self.Value(v) for v in t], dtype=np.float64)
                        outer.incumbent = value
                    outer.bound = max(outer.bound, float(self.BestObjectiveBound()))

            with self._lock:
                if self._stop_requested:
                    return
                self.solver = solver
            status = solver.Solve(model, Incumbents())
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                self.bound = max(self.bound, float(solver.BestObjectiveBound()))
                self.optimal = status == cp_model.OPTIMAL
                if self.optimal:
                    self.bound = max(self.bound, self.incumbent)
        except BaseException as exc:
            self.error = exc

    def stop(self) -> None:
        with self._lock:
            self._stop_requested = True
            if self.solver is not None:
                self.solver.StopSearch()


class _EnumerationThread(threading.Thread):
    def __init__(self, search: Callable[[threading.Event], tuple[float, np.ndarray] | None]) -> None:
        super().__init__(daemon=True, name="dpaudit-enumeration")
        self.search = search
        self.halt = threading.Event()
        self.result: tuple[float, np.ndarray] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.search(self.halt)
        except BaseException as exc:
            self.error = exc

    def stop(self) -> None:
        self.halt.set()


def race_enumeration(rows: np.ndarray, search: Callable[[threading.Event], tuple[float, np.ndarray] | None]
                     ) -> tuple[float, np.ndarray, str]:
    """An exact enumeration (``search(stop_event)``, None when stopped) raced against RC2; both are
    exact, the first to finish wins: (value, target, "enumeration" or "RC2")."""
    counts = np.rint(rows).astype(np.int64)
    enum = _EnumerationThread(search)
    rc2 = _RC2Thread(counts)
    enum.start()
    rc2.start()
    winner = "enumeration"
    while enum.is_alive():
        if not rc2.is_alive() and rc2.target is not None:
            winner = "RC2"
            break
        enum.join(_POLL)
    enum.stop()
    rc2.stop()
    enum.join()
    _finish(rc2)
    if winner == "RC2" and rc2.target is not None:
        return center_cost(counts, rc2.target), rc2.target, winner
    if enum.error is not None:
        raise enum.error
    assert enum.result is not None
    return enum.result[0], enum.result[1], "enumeration"


def _finish(rc2: _RC2Thread) -> None:
    """Interrupt RC2 until it returns (it finishes processing its last core first; after ``_GRACE``
    seconds a straggler is left to clean up after itself)."""
    give_up = time.perf_counter() + _GRACE
    while rc2.is_alive() and time.perf_counter() < give_up:
        rc2.stop()
        rc2.join(0.05)


def solve_hybrid(rows: np.ndarray, *, binary: bool, time_limit: float, hint: np.ndarray | None = None,
                 workers: int | None = None, use_rc2: bool = True) -> Hybrid:
    """RC2 and CP-SAT on one block (rows: protected × outcome, integer counts) within ``time_limit`` s.

    CP-SAT gets ``workers`` threads (default: the CPUs less the one RC2 uses, 1 to 8).

    The lower bound is the larger of RC2's core-guided cost and CP-SAT's proven bound (both rounded
    up: the objective is an integer); the upper bound is the best incumbent's cost.
    """
    counts = np.rint((rows > 0) if binary else rows).astype(np.int64)
    if workers is None:
        workers = max(1, min(8, (os.cpu_count() or 2) - (1 if use_rc2 else 0)))
    start = time.perf_counter()
    deadline = start + float(time_limit)
    cpsat = _CpSatThread(counts, binary, time_limit, hint, workers)  # CP-SAT stops itself at the limit
    rc2 = _RC2Thread(counts) if use_rc2 and rc2_available() else None
    cpsat.start()
    if rc2 is not None:
        rc2.start()
    closed_by: str | None = None
    total = float(counts.sum())
    while True:
        rc2_done = rc2 is None or not rc2.is_alive()
        cp_done = not cpsat.is_alive()
        if rc2 is not None and rc2_done and rc2.target is not None:
            closed_by = "RC2"
            break
        if cp_done and cpsat.optimal:
            closed_by = "CP-SAT"
            break
        upper = cpsat.incumbent
        rc2_lower = rc2.lower if rc2 is not None else 0.0
        if math.isfinite(upper) and math.ceil(max(rc2_lower, cpsat.bound) - 1e-9) >= upper:
            closed_by = "RC2 bound = CP-SAT incumbent" if rc2_lower >= cpsat.bound else "CP-SAT"
            break
        if (rc2_done and cp_done) or time.perf_counter() >= deadline:
            break
        time.sleep(_POLL)
    cpsat.stop()
    if rc2 is not None:
        rc2.stop()
    cpsat.join()
    if rc2 is not None:
        _finish(rc2)
    elapsed = time.perf_counter() - start
    candidates = [(cpsat.incumbent, cpsat.target)]
    lower = cpsat.bound
    if rc2 is not None:
        lower = max(lower, rc2.lower)
        if rc2.target is not None:
            candidates.append((center_cost(counts, rc2.target), rc2.target))
    upper, target = min(((u, t) for u, t in candidates if t is not None), key=lambda c: c[0],
                        default=(total, np.zeros(counts.shape[1])))
    lower = float(min(math.ceil(lower - 1e-9), upper))
    if closed_by is None and lower >= upper:
        closed_by = "RC2" if rc2 is not None and rc2.lower >= upper else "CP-SAT"
    if cpsat.error is not None and (rc2 is None or rc2.error is not None):
        raise cpsat.error
    return Hybrid(lower, float(upper), np.asarray(target, dtype=np.float64), closed_by,
                  closed_by is None and elapsed >= time_limit * 0.99, elapsed)
