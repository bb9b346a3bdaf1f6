"""The repair of one block (shared by the ``ci`` and the ``bag``/``set`` solvers)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpaudit.measures._limits import TIME_LIMIT

__all__ = ["BlockRepair", "REL_TOL"]

#: Bounds this close (relative) count as equal: the block's minimum is known.
REL_TOL = 1e-9


@dataclass(frozen=True)
class BlockRepair:
    """The repair of one block.

    Attributes
    ----------
    lower, upper : float
        Certified bounds on the minimum number of tuples to delete or insert.
    exact : bool
        True when the minimum is known: ``lower == upper`` (``bag``/``set``, closed forms), or
        ``upper − lower ≤ 0.001`` (the ``ci`` branch and bound's tolerance).
    method : str
        How it was solved.
    repaired : ndarray or None
        ``ci``: a repaired (independent) table whose distance to the block is ``upper``.
    kept : ndarray of bool or None
        ``bag``/``set``: the protected values kept (the others are deleted).
    target : ndarray or None
        ``bag``/``set``: the outcome count vector (``set``: support) every kept value is given.
    stopped_by : str or None
        Why a solver stopped before proving the minimum (then ``lower < upper`` may remain):
        ``"work limit"`` or ``"no progress"`` (deterministic: the same on every machine) or
        ``"time limit"`` (an explicit wall clock); None otherwise.
    """

    lower: float
    upper: float
    exact: bool
    method: str
    repaired: np.ndarray | None = None
    kept: np.ndarray | None = None
    target: np.ndarray | None = None
    stopped_by: str | None = None

    @property
    def value(self) -> float:
        """The released number: the minimum when known (``upper``, the cost of an actual repair, at most
        the ``ci`` tolerance above the minimum), else the certified lower bound."""
        return self.upper if self.exact else self.lower

    @property
    def status(self) -> str:
        """``"exact"`` (the minimum is known), ``"work limit"`` (bounds left by the work budget or the
        no-progress rule: deterministic), ``"timed out"`` (bounds left by an explicit wall-clock limit) or
        ``"bounds"`` (the method gives bounds that need not meet)."""
        if self.exact:
            return "exact"
        return {None: "bounds", TIME_LIMIT: "timed out"}.get(self.stopped_by, "work limit")
