"""RC2 (PySAT) and CP-SAT, one after the other within one work budget, for bag/set repair blocks too
large to enumerate.

The compressed boolean formulation of ``min_t Σ_p min(‖c_p − t‖₁, ‖c_p‖₁)`` ("one boolean per
protected value, one per distinct column class", spec §2.3): k_p says protected value p is kept; for
each outcome o with distinct positive counts v₁ < … < v_m, y_oj says t_o ≥ v_j (an order encoding,
hard clauses y_o,j+1 → y_oj). The tuple columns (o, i) with v_{j−1} < i ≤ v_j are one class of
weight w = v_j − v_{j−1}, held by H_oj = {p : c_po ≥ v_j}. Soft clauses: (k_p) with weight ‖c_p‖₁
(deleting p's tuples), and for every p and class (¬k_p ∨ y_oj) with weight w if p ∈ H_oj (a kept
tuple dropped), else (¬k_p ∨ ¬y_oj) (a tuple inserted). Its optimum is the block's U_R exactly (t_o
only needs values in {0} ∪ {c_po}, where a median lies). ``set`` is the same on the support
(every count 0 or 1).

:func:`solve_hybrid` lets two solvers take turns within one work budget
(:mod:`dpaudit.measures._limits`): RC2 (core-guided MaxSAT: its cost only grows and is a proven lower
bound at every moment; it finds a model only when it has proven it optimal) for a short while — most
blocks end there; OR-Tools CP-SAT on the integer formulation of :mod:`dpaudit.measures._center_cpsat`
(an incumbent U and its own proven bound); RC2 again, stopped as soon as its cost reaches U; and, if
a gap is left, CP-SAT with the rest of the budget, told that the optimum is at least the best bound. Each solver counts its own work (CP-SAT's
deterministic time with one worker, RC2's unit propagations), so the result — value, bounds, status,
which solver closed the gap — is the same on every machine. ``benchmarks/bench_repair_solvers.py``
compares the solvers one by one (it imports this module).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.measures._limits import TIME_LIMIT, UNIT_PROPAGATIONS, WORK_LIMIT, Limits

__all__ = ["column_classes", "bool_model", "target_from", "center_cost", "solve_rc2", "solve_hybrid", "Hybrid",
           "prove_or_enumerate", "rc2_available", "FIRST_WORK", "RC2_SHARE", "RC2_BEFORE_ENUMERATION"]

#: solve_hybrid's first RC2 and first CP-SAT runs: at most this many work units each (or a tenth of
#: the budget).
FIRST_WORK = 1.0
#: RC2's share of what is left after the first two runs (the rest goes to the last CP-SAT run).
RC2_SHARE = 0.75
#: Work units RC2 gets before an exact enumeration of 2¹⁶–2²² candidates (it often proves the optimum
#: much sooner than the enumeration ends; when it does not, the enumeration runs).
RC2_BEFORE_ENUMERATION = 1.0


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


def _wcnf(rows: np.ndarray) -> tuple[Any, list[int], list[tuple[int, int, int, np.ndarray]]]:
    from pysat.formula import WCNF

    _, y, classes, hard, soft = bool_model(np.rint(rows).astype(np.int64))
    wcnf = WCNF()
    for clause in hard:
        wcnf.append(clause)
    for clause, weight in soft:
        wcnf.append(clause, weight=weight)
    return wcnf, y, classes


class _Stop(Exception):
    """Raised inside RC2's loop when its budget is spent (or its bound reached the known incumbent)."""


@dataclass
class RC2Run:
    """What :func:`run_rc2` found: the proven lower bound (RC2's cost), the optimal target when it
    proved one, why it stopped otherwise, and the work it used (unit propagations)."""

    lower: float
    target: np.ndarray | None
    stopped_by: str | None
    propagations: int

    @property
    def work(self) -> float:
        return self.propagations / UNIT_PROPAGATIONS


def run_rc2(rows: np.ndarray, limits: Limits, *, stop_at: float = math.inf) -> RC2Run:
    """RC2 (stratified, Glucose 3) on the compressed formulation of one block, within ``limits``.

    Every SAT call RC2 makes goes through one method, which gives the solver the propagations left of
    ``limits.propagations`` (PySAT's ``prop_budget`` + ``solve_limited``: counted by the solver, so
    the stopping point is the same on every machine) and stops RC2 when they are spent, when its cost
    (a proven lower bound) reaches ``stop_at``, or when an explicit wall clock runs out. The budget is
    cumulative over the calls (``accum_stats``); RC2's core minimisation keeps its own 1,000-conflict
    limit per call.
    """
    from pysat.examples.rc2 import RC2Stratified

    wcnf, y, classes = _wcnf(rows)
    budget = limits.propagations
    timer = None

    class Budgeted(RC2Stratified):
        stopped_by: str | None = None

        def _call_oracle(self, assumptions: Any = (), expect_interrupt: bool = False) -> Any:
            used = int(self.oracle.accum_stats()["propagations"])
            if self.cost >= stop_at:
                raise _Stop("bound")
            if used >= budget or limits.out_of_time():
                self.stopped_by = WORK_LIMIT if used >= budget else TIME_LIMIT
                raise _Stop(self.stopped_by)
            self.oracle.prop_budget(budget - used)
            result = self.oracle.solve_limited(assumptions=list(assumptions), expect_interrupt=True)
            if result is None and self.oracle.get_status() is None and not getattr(self, "_minimising", False):
                self.stopped_by = TIME_LIMIT if limits.out_of_time() else WORK_LIMIT
                raise _Stop(self.stopped_by)
            return result

        def minimize_core(self) -> None:  # its SAT calls may give up (1,000 conflicts), RC2's own rule
            self._minimising = True
            try:
                super().minimize_core()
            finally:
                self._minimising = False

    rc2 = Budgeted(wcnf, solver="g3", adapt=True, exhaust=True, minz=True)
    if limits.seconds is not None:
        timer = threading.Timer(limits.remaining_seconds(), rc2.oracle.interrupt)
        timer.start()
    try:
        try:
            model = rc2.compute(expect_interrupt=True)
        except _Stop:
            model = None
        target = None
        if model is not None:
            true = {lit for lit in model if lit > 0}
            target = target_from(classes, [v in true for v in y], rows.shape[1])
        used = int(rc2.oracle.accum_stats()["propagations"])
        return RC2Run(float(rc2.cost), target, rc2.stopped_by if model is None else None, used)
    finally:
        if timer is not None:
            timer.cancel()
        rc2.delete()


def solve_rc2(rows: np.ndarray, limits: Limits) -> dict[str, Any]:
    """RC2 alone (``benchmarks/bench_repair_solvers.py``): proven lower bound, upper bound (NaN when
    stopped: RC2 has no model before it proves one optimal), whether it proved the optimum, and the
    propagations it used."""
    run = run_rc2(np.rint(rows).astype(np.int64), limits)
    upper = math.nan if run.target is None else center_cost(rows, run.target)
    return {"lower": run.lower, "upper": upper, "optimal": run.target is not None, "propagations": run.propagations}


# ---------------------------------------------------------------------------------------------------
# CP-SAT for an incumbent, RC2 for the proof, CP-SAT again: one after the other
@dataclass
class Hybrid:
    """What :func:`solve_hybrid` found: proven bounds, the best target, who closed the gap, why it
    stopped if it did not (``"work limit"`` or ``"time limit"``), and the work units it used."""

    lower: float
    upper: float
    target: np.ndarray
    closed_by: str | None  # "RC2", "CP-SAT", "RC2 bound = CP-SAT incumbent", or None (gap left)
    stopped_by: str | None
    work: float


def solve_hybrid(rows: np.ndarray, *, binary: bool, limits: Limits, hint: np.ndarray | None = None) -> Hybrid:
    """RC2 and CP-SAT, taking turns, on one block (rows: protected × outcome, integer counts) within
    ``limits``; stops as soon as the gap is closed:

    1. RC2 for min(``FIRST_WORK``, a tenth of the budget) work units: on most blocks it proves the
       optimum at once (``"RC2"``).
    2. CP-SAT for as long: an incumbent U and its proven bound (optimal: ``"CP-SAT"``).
    3. RC2 again with ``RC2_SHARE`` of what is left, stopped as soon as its cost reaches U (then
       ``"RC2 bound = CP-SAT incumbent"``).
    4. CP-SAT with the rest, hinted with the best target and told the optimum is at least the best
       proven bound.

    The lower bound is the largest proven bound (integers: rounded up), the upper bound the best
    target's cost. A run that RC2 stops leaves no state to resume, so step 3 starts afresh: at most
    ``FIRST_WORK`` units are spent twice.
    """
    from dpaudit.measures._center_cpsat import run_cpsat

    counts = np.rint((rows > 0) if binary else rows).astype(np.int64)
    total = float(counts.sum())
    first = min(FIRST_WORK, 0.1 * limits.work)
    best: list[tuple[float, np.ndarray]] = []
    lower, work, closed_by, stopped_by = 0.0, 0.0, None, None
    for step in range(4):
        left = limits.work - work
        if left <= 0 or stopped_by == TIME_LIMIT:
            break
        upper = min((b[0] for b in best), default=math.inf)
        if step % 2 == 0:
            if not rc2_available():
                continue
            rc2 = run_rc2(counts, limits.share(first if step == 0 else RC2_SHARE * left), stop_at=upper)
            work, stopped_by = work + rc2.work, rc2.stopped_by
            lower = max(lower, math.ceil(rc2.lower - 1e-9))
            if rc2.target is not None:
                best.append((center_cost(counts, rc2.target), rc2.target))
                closed_by = "RC2"
            elif rc2.lower >= upper:
                closed_by = "RC2 bound = CP-SAT incumbent"
        else:
            start = min(best, key=lambda b: b[0])[1] if best else hint
            cp = run_cpsat(counts, binary=binary, limits=limits.share(first if step == 1 else left), hint=start,
                           at_least=int(lower))
            work, stopped_by = work + cp.work, cp.stopped_by
            lower = max(lower, cp.lower)
            if cp.target is not None:
                best.append((cp.upper, cp.target))
            closed_by = "CP-SAT" if cp.optimal else None
        if closed_by is not None:
            break
    upper, target = min(best, key=lambda b: b[0], default=(total, np.zeros(counts.shape[1])))
    lower = float(min(lower, upper))
    if lower >= upper and closed_by is None:
        closed_by = "RC2 bound = CP-SAT incumbent"
    return Hybrid(lower, float(upper), np.asarray(target, dtype=np.float64), closed_by,
                  None if closed_by else (stopped_by or WORK_LIMIT), work)


def prove_or_enumerate(rows: np.ndarray, search: Callable[[], tuple[float, np.ndarray]], limits: Limits
                       ) -> tuple[float, np.ndarray, str]:
    """An exact enumeration (``search()``), unless RC2 proves the optimum first within
    ``RC2_BEFORE_ENUMERATION`` work units: (value, target, ``"RC2"`` or ``"enumeration"``). Both are
    exact; RC2 runs first because it is often much faster on such blocks, and its budget is counted
    in work, so which of them answers is the same on every machine."""
    counts = np.rint(rows).astype(np.int64)
    if rc2_available():
        run = run_rc2(counts, Limits(RC2_BEFORE_ENUMERATION, limits.seconds, limits.start))
        if run.target is not None:
            return center_cost(counts, run.target), run.target, "RC2"
    value, target = search()
    return value, target, "enumeration"
