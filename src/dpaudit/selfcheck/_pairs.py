"""The worst-case replace-one neighbours the self-check audits: each registered measure's own
(:meth:`~dpaudit.measures.Measure.worst_cases`, declared next to its sensitivity) and the split
audit's pair (docs/privacy.md)."""

from __future__ import annotations

import numpy as np

from dpaudit.measures import MEASURES, Measure
from dpaudit.measures._neighbours import NeighbourPair, WorstCase, family_r, moved

__all__ = ["NeighbourPair", "WorstCase", "family_r", "split_pair", "worst_cases", "worst_case_pairs", "unaudited"]


def split_pair() -> NeighbourPair:
    """A pair on which U_R ci moves by the full 2 and U_TC (all cells) by 0.69 of its bound."""
    before = np.array([[[1, 2], [2, 3], [2, 3]], [[1, 15], [0, 10], [1, 0]]])
    return NeighbourPair("split", "p ⊥ o | a", before, moved(before, (0, 0, 0), (1, 2, 0)),
                         "2 blocks × 3 × 2, n = 40 (search): U_R ci moves by 2, U_TC by 0.69 of 8/n")


def worst_cases() -> tuple[WorstCase, ...]:
    """Every stand-alone release the self-check audits: the registered measures' worst cases, in order."""
    return tuple(case for cls in MEASURES.values() for case in cls.worst_cases())


def unaudited() -> list[str]:
    """The registered measures that declare no worst case (the self-check cannot audit them)."""
    return [name for name, cls in MEASURES.items() if not cls.worst_cases()]


def worst_case_pairs() -> dict[str, NeighbourPair]:
    """Every pair the self-check uses, by check name."""
    return {**{case.pair.name: case.pair for case in worst_cases()}, "split": split_pair()}


def _value_measure(name: str) -> Measure:
    """The measure (options included) whose value release a stand-alone check audits."""
    return next(case.measure for case in worst_cases() if case.pair.name == name)
