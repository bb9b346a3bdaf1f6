"""Worst-case replace-one neighbours D, D′ of every release the self-check audits (docs/privacy.md)
and the measure whose value each stand-alone pair is drawn for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit.criteria import Criterion
from dpaudit.measures import TVD, Measure, Repair, TopContribution
from dpaudit.selfcheck._params import K_ALL


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


def _moved(before: np.ndarray, src: tuple[int, int, int], dst: tuple[int, int, int]) -> np.ndarray:
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


def tvd_pair(m: int = 300) -> NeighbourPair:
    """docs/privacy.md's cross-block family: N·ΔU → 38/3 (12.52 at m = 300)."""
    a = family_r(4 * m, m)
    b = np.zeros_like(a)
    b[[1, 2, 3], [1, 2, 3]] = m  # Family A: diag(m, m, m) beside an empty row and column
    before = np.stack([a, b])
    return NeighbourPair("tvd", "p ⊥ o | a", before, _moved(before, (0, 0, 0), (1, 0, 0)),
                         f"cross-block family (docs/privacy.md), m = {m}: block a = Family R, block b = Family A; the "
                         "lone (0,0) tuple of a moves to b's empty corner")


def tc_domain_pair(m: int = 100, big: int = 1000) -> NeighbourPair:
    """Σ|d| rises by → 4 in each block: Family R loses its lone tuple, a one-cell block gains a corner."""
    a = family_r(4 * m, m)
    b = np.zeros_like(a)
    b[1, 1] = big
    before = np.stack([a, b])
    return NeighbourPair("tc/domain", "p ⊥ o | a", before, _moved(before, (0, 0, 0), (1, 0, 0)),
                         f"block a = Family R (m = {m}), block b = one cell of {big}; the lone (0,0) tuple of a moves to "
                         "b's empty corner (each block's Σ|d| rises by almost 4)")


def tc_observed_pair(h: int = 1000) -> NeighbourPair:
    """A count-1 cell with MD → 1/4 empties; the cell that gains is already observed."""
    before = np.array([[[1, h], [h, 1]]])
    return NeighbourPair("tc/observed", "p ⊥ o", before, _moved(before, (0, 0, 0), (0, 1, 1)),
                         f"[[1, {h}], [{h}, 1]] → [[0, {h}], [{h}, 2]]: a single-tuple cell with MD ≈ 1/4 empties")


def naming_pair(a: int = 320, b: int = 12, c: int = 640) -> NeighbourPair:
    """A cell of a one-cell block gains a fresh corner tuple from a perfectly dependent block."""
    before = np.zeros((2, 2, 2), dtype=np.int64)
    before[0, 0, 1], before[1, 0, 1], before[1, 1, 0] = a, b, c
    return NeighbourPair("tc/names", "p ⊥ o | a", before, _moved(before, (1, 0, 1), (0, 1, 0)),
                         f"block 0 = one cell of {a}, block 1 = [[0, {b}], [{c}, 0]]; one tuple of block 1 moves to a "
                         "fresh corner of block 0 (found by search over the exact selection probabilities)")


#: Smallest pairs whose U_R changes by the full 2 (exhaustive search over 2×2 and 2×3 tables).
_REPAIR_PAIRS = {
    "ci": ([[0, 2], [2, 2]], (0, 0, 1), (0, 0, 0)),
    "bag": ([[0, 2], [0, 2]], (0, 0, 1), (0, 0, 0)),
    "set": ([[0, 1, 1], [0, 1, 1]], (0, 0, 1), (0, 0, 0)),
}


def repair_pair(semantics: str) -> NeighbourPair:
    table, src, dst = _REPAIR_PAIRS[semantics]
    before = np.array([table])
    after = _moved(before, src, dst)
    return NeighbourPair(f"repair/{semantics}", "p ⊥ o", before, after,
                         f"{before[0].tolist()} → {after[0].tolist()} (U_R {semantics} changes by the full 2)")


def split_pair() -> NeighbourPair:
    """A pair on which U_R ci moves by the full 2 and U_TC (all cells) by 0.69 of its bound."""
    before = np.array([[[1, 2], [2, 3], [2, 3]], [[1, 15], [0, 10], [1, 0]]])
    return NeighbourPair("split", "p ⊥ o | a", before, _moved(before, (0, 0, 0), (1, 2, 0)),
                         "2 blocks × 3 × 2, n = 40 (search): U_R ci moves by 2, U_TC by 0.69 of 8/n")


def worst_case_pairs() -> dict[str, NeighbourPair]:
    """Every pair the self-check uses, by check name."""
    pairs = [tvd_pair(), tc_domain_pair(), tc_observed_pair(), naming_pair()]
    pairs += [repair_pair(s) for s in _REPAIR_PAIRS] + [split_pair()]
    return {p.name: p for p in pairs}


def _value_measure(name: str) -> Measure:
    """The measure (options included) whose value release a stand-alone check audits."""
    if name == "tvd":
        return TVD()
    if name.startswith("tc/"):
        return TopContribution(k=K_ALL, cells=name.split("/")[1], name_cells=0)  # type: ignore[arg-type]
    return Repair(semantics=name.split("/")[1])  # type: ignore[arg-type]

