"""How much work the U_R solvers may do on one block: deterministic work budgets, and an optional
wall clock.

A block's result (value, status, bounds) must not depend on how busy the machine is: whether a
block is exact decides whether a U_R release is DP. So every solver is limited by a count of its own
work, which is the same on every run of the same input, options and versions:

===========================  ============================================================  =======================
solver                       work counted                                                  one work unit
===========================  ============================================================  =======================
``ci`` branch and bound      nodes, each weighted by ``NODE_BASE + m·k`` (its LP's size)   ``UNIT_NODE_WORK``
HiGHS (the node LPs)         simplex iterations, per LP (``LP_ITERATIONS_PER_CELL·m·k``)   (a cap, not a budget)
RC2 (PySAT, Glucose 3)       unit propagations, over all SAT calls of the block             ``UNIT_PROPAGATIONS``
OR-Tools CP-SAT              deterministic time (one worker: its search is reproducible)    ``UNIT_CPSAT_TIME``
exact enumeration            (bounded by the enumeration limit; no budget needed)
===========================  ============================================================  =======================

One work unit is calibrated to take about one second on the reference machine (x86_64, 2 cores,
Python 3.11.7, SciPy 1.17.1's HiGHS, python-sat 1.9, OR-Tools 9.15; quiet): measured there, a branch
and bound node costs 0.3 ms + 6.5 µs per cell of its block (blocks of 18–400 cells), RC2 makes
0.7–1.8 × 10⁷ propagations per second, and CP-SAT's deterministic time runs at 0.6–1.0 × wall time.
So ``work_limit=30`` (the default) stops a block after roughly 30 s on that machine — and after
exactly the same work on any other, slower or busier or faster.

A wall-clock ``time_limit`` (seconds) stays available as an explicit option; it is checked beside the
work budget, and a block it stops has status ``"timed out"`` (its bounds then depend on the machine:
the audit records the limit in the measure's options and says so).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from dpaudit._defaults import DEFAULT_WORK_LIMIT

__all__ = ["Limits", "DEFAULT_WORK_LIMIT", "NODE_BASE", "UNIT_NODE_WORK", "UNIT_PROPAGATIONS", "UNIT_CPSAT_TIME",
           "LP_ITERATIONS_PER_CELL", "WORK_LIMIT", "TIME_LIMIT", "NO_PROGRESS"]

#: Branch and bound: a node's weight is ``NODE_BASE + m·k`` (the fixed cost of a node, in cells, plus
#: its LP's size); one unit is ``UNIT_NODE_WORK`` weighted nodes.
NODE_BASE = 50
UNIT_NODE_WORK = 150_000
#: RC2: unit propagations of its SAT solver per work unit.
UNIT_PROPAGATIONS = 15_000_000
#: CP-SAT: deterministic seconds per work unit.
UNIT_CPSAT_TIME = 1.0
#: HiGHS: simplex iterations allowed per node LP, per cell of the block (an LP that hits it teaches the
#: search nothing and the box is kept; never seen on the registered presets).
LP_ITERATIONS_PER_CELL = 200

_NO_LIMIT = 2 ** 62  # work=math.inf (benchmarks' wall-clock-only runs) as a count

#: Why a solver stopped before proving the minimum (``BlockRepair.stopped_by``).
WORK_LIMIT, TIME_LIMIT, NO_PROGRESS = "work limit", "time limit", "no progress"


@dataclass(frozen=True)
class Limits:
    """A block's budget: ``work`` units (deterministic) and, optionally, ``seconds`` of wall clock.

    ``start`` is when the block began (for ``seconds`` only). :meth:`share` hands a part of what is
    left to one solver; :meth:`out_of_time` is the wall-clock check (always False without ``seconds``).

    Examples
    --------
    >>> Limits(2.0).node_work, Limits(2.0).propagations, Limits(2.0).cpsat_time
    (300000, 30000000, 2.0)
    >>> Limits(2.0).out_of_time()
    False
    """

    work: float = DEFAULT_WORK_LIMIT
    seconds: float | None = None
    start: float = field(default_factory=time.perf_counter, compare=False)

    @property
    def node_work(self) -> int:
        return int(min(self.work * UNIT_NODE_WORK, _NO_LIMIT))

    @property
    def propagations(self) -> int:
        return int(min(self.work * UNIT_PROPAGATIONS, _NO_LIMIT))

    @property
    def cpsat_time(self) -> float:
        return self.work * UNIT_CPSAT_TIME

    def remaining_seconds(self) -> float:
        """Seconds left of the wall clock (∞ without one)."""
        if self.seconds is None:
            return math.inf
        return max(self.seconds - (time.perf_counter() - self.start), 0.0)

    def out_of_time(self) -> bool:
        return self.seconds is not None and time.perf_counter() - self.start >= self.seconds

    def share(self, work: float) -> Limits:
        """``work`` units of this budget (at most what it has), with the same wall clock."""
        return Limits(min(work, self.work), self.seconds, self.start)

    def describe(self) -> str:
        """E.g. ``"work limit 30"`` or ``"work limit 30, time limit 5 s"`` (for a block's ``method``)."""
        text = f"work limit {self.work:g}"
        return text + (f", time limit {self.seconds:g} s" if self.seconds is not None else "")
