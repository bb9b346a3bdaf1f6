"""Worst-case replace-one neighbours: what a measure declares for the empirical privacy self-check.

Each registered measure states, next to its sensitivity, the neighbouring databases D, D′ on which its
release comes closest to the proven bound (:meth:`~dpaudit.measures.Measure.worst_cases`, derivations
in ``docs/privacy.md``); ``dpaudit selfcheck`` draws the real release on both and bounds ε from below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit.criteria import Criterion

if TYPE_CHECKING:
    from dpaudit.measures._base import Measure

__all__ = ["NeighbourPair", "WorstCase", "family_r", "moved"]


@dataclass(frozen=True, eq=False)
class NeighbourPair:
    """Replace-one neighbours D, D′ of one criterion, as ``(blocks, P, O)`` count tables.

    D′ is D with one tuple moved from one cell to another (``moved``): the same n, one row replaced.
    :meth:`rows` gives both databases row by row (columns a, p, o) with exactly one row different.
    """

    name: str
    criterion: str
    before: np.ndarray
    after: np.ndarray
    description: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "before", np.asarray(self.before, dtype=np.int64))
        object.__setattr__(self, "after", np.asarray(self.after, dtype=np.int64))
        _ = self.moved  # refuses a pair that is not replace-one

    @property
    def n(self) -> int:
        return int(self.before.sum())

    @property
    def conditional(self) -> bool:
        return bool(Criterion.parse(self.criterion).admissible)

    @property
    def moved(self) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """The cell that loses the replaced tuple and the cell that receives its replacement."""
        diff = self.after - self.before
        if self.before.shape != self.after.shape or self.before.ndim != 3 or (self.before < 0).any() \
                or (self.after < 0).any():
            raise DPAuditError(f"pair {self.name}: count tables must be non-negative, (blocks, P, O), same shape")
        src, dst = np.argwhere(diff == -1), np.argwhere(diff == 1)
        if len(src) != 1 or len(dst) != 1 or np.count_nonzero(diff) != 2:
            raise DPAuditError(f"pair {self.name}: D′ must move exactly one tuple of D to another cell")
        return tuple(int(v) for v in src[0]), tuple(int(v) for v in dst[0])  # type: ignore[return-value]

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """D and D′ row by row, int arrays of shape (n, 3) (a, p, o); D′ replaces one row of D."""
        cells = np.argwhere(np.ones(self.before.shape, dtype=bool))
        d = np.repeat(cells, self.before.ravel(), axis=0)
        src, dst = self.moved
        i = int(np.flatnonzero((d == src).all(axis=1))[0])
        d_prime = d.copy()
        d_prime[i] = dst
        return d, d_prime

    def frames(self) -> tuple[Any, Any]:
        """D and D′ as pandas frames with columns a, p, o (codes), for :func:`dpaudit.audit`."""
        import pandas as pd

        d, d_prime = self.rows()
        return pd.DataFrame(d, columns=["a", "p", "o"]), pd.DataFrame(d_prime, columns=["a", "p", "o"])

    def schema(self) -> Any:
        """The declared domains of the frames: the table's shape."""
        from dpaudit.schema import Categorical, Schema

        return Schema({c: Categorical(list(range(s))) for c, s in zip(("a", "p", "o"), self.before.shape)})


@dataclass(frozen=True, eq=False)
class WorstCase:
    """One release a measure asks the self-check to audit on its worst-case pair.

    ``measure`` is the configured measure whose release is drawn; ``release`` says which: ``"value"``
    (its Laplace release) or ``"names"`` (U_TC's report-noisy-max naming of top cells). ``note``, given
    |Δv| and n, says how close the pair comes to the proven bound (printed in the report).
    """

    pair: NeighbourPair
    measure: Measure
    note: Callable[[float, int], str] | None = None
    release: str = "value"


def moved(before: np.ndarray, src: tuple[int, int, int], dst: tuple[int, int, int]) -> np.ndarray:
    """``before`` with one tuple moved from cell ``src`` to cell ``dst``."""
    after = before.copy()
    after[src] -= 1
    after[dst] += 1
    return after


def family_r(k: int, m: int) -> np.ndarray:
    """docs/privacy.md, Family R: a lone (0,0) tuple, its row and column singletons, a k-diagonal of m."""
    t = np.zeros((k + 1, k + 1), dtype=np.int64)
    t[0, 0] = 1
    t[0, 1:] = t[1:, 0] = 1
    t[np.arange(1, k + 1), np.arange(1, k + 1)] = m
    return t
