"""The attack's statistic over every target, for the naive concatenated rule and its AUC.

:class:`Statistic` gathers it in the evaluation's pass 1 (:func:`dpaudit.mia.tally.first_pass`):
block by block when the attack computes it so, with the non-members' values, whose one sort gives
every naive cut (:meth:`Statistic.pooled`); else of the whole ScoreSet at once. Last, the members'
statistic is sorted in place of the spent matrix (:func:`sorted_positives`): the AUC is the
Mann–Whitney count of the two sorted classes and each naive threshold the smallest called score of
either (:func:`smallest_above`).
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit._errors import DataError
from dpaudit.mia.attacks import Attack
from dpaudit.mia.fits import LooFits, loo_fits
from dpaudit.mia.metrics.pooled import PooledScores
from dpaudit.mia.scores import ScoreSet

__all__ = ["Statistic", "sorted_positives", "smallest_above"]


class Statistic:
    """The attack's statistic ``stat`` (M, N+), filled block by block (:meth:`add`).

    ``blockwise``: whether the attack computes it by blocks of records (decided by the first block);
    then ``negatives`` gathers the non-members' values, ``n_neg`` of them.
    """

    def __init__(self, scores: ScoreSet, attack: Attack, signal: np.ndarray, keep: np.ndarray, fpc: float | None,
                 n_neg: int, *, references: str = "loo") -> None:
        self.scores, self.attack, self.signal, self.keep, self.fpc = scores, attack, signal, keep, fpc
        self.references = references
        self.stat: np.ndarray | None = None
        self.blockwise = True
        self.negatives, self.filled = np.empty(n_neg), 0  # the non-members' statistic (blockwise attacks)

    def add(self, cols: slice, s: np.ndarray, out: np.ndarray, fits: LooFits, z: np.ndarray,
            counted: np.ndarray | None = None) -> None:
        """The statistic of the block of records ``cols``: signals ``s``, counted OUT targets ``out``, their
        fits and PP score ``z`` (LiRA's OUT density); ``counted``: the targets the rules count (None: all),
        the others' statistic set to −inf so that no rule calls them."""
        attack = self.attack
        own = attack.block_statistic(s, fits, z) if self.blockwise else None
        if self.stat is None:  # the first block decides: statistic by blocks, or of the whole ScoreSet
            self.blockwise = own is not None
            self.stat = np.empty(self.keep.shape) if self.blockwise else np.asarray(
                attack.statistic(self.scores, loo_fits(self.signal, self.keep, location=attack.location,
                                                       variance=attack.variance, fpc=self.fpc,
                                                       references=self.references)),  # type: ignore[arg-type]
                dtype=np.float64)
        if own is not None:
            if not np.isfinite(own).all():
                raise DataError(f"the {attack.name} statistic is not finite for some targets of records "
                                f"{cols.start}–{cols.stop - 1}; check the scores for extreme values")
            if counted is not None:
                own[~counted] = -np.inf
            self.stat[:, cols] = own
            # the non-members' statistic, gathered while the block is in cache (np.compress: own[out] in the
            # same order, several times faster than a boolean index)
            part = np.compress(out.reshape(-1), own.reshape(-1))
            self.negatives[self.filled:self.filled + part.size] = part
            self.filled += part.size

    def pooled(self, counted: np.ndarray | None = None) -> PooledScores:
        """The naive rule's pooled scores: from one sort of the gathered non-members' statistic (``counted``:
        the targets the rules count, None: all; the others are neither members nor non-members)."""
        assert self.stat is not None
        labels = self.keep if counted is None else self.keep & counted
        if self.blockwise:
            self.negatives.sort()
            return PooledScores.with_sorted_negatives(self.stat, labels, self.negatives,
                                                      n_pos=int(np.count_nonzero(labels)))
        self.negatives = np.empty(0)  # never filled: freed
        if counted is not None:  # the whole-matrix statistic: the uncounted targets are set aside here
            self.stat[~counted] = -np.inf
            return PooledScores.with_sorted_negatives(self.stat, labels, np.sort(self.stat[~self.keep & counted]),
                                                      n_pos=int(np.count_nonzero(labels)))
        return PooledScores(self.stat, self.keep)


    def release(self) -> None:
        """Drop the statistic and the non-members' values (the evaluation has read everything from them)."""
        self.stat, self.negatives = None, np.empty(0)


def sorted_positives(stat: np.ndarray, keep: np.ndarray, *, own_stat: bool) -> np.ndarray:
    """The members' statistic, ascending, for :func:`~dpaudit.mia.metrics.pooled.mann_whitney_auc` (the AUC from the sorted classes).

    The members' values are gathered in place at the front of ``stat`` when it is the evaluation's
    own array (a copy otherwise), so this adds no full-size array; ``stat`` is spent afterwards.
    """
    flat, labels = stat.reshape(-1), keep.reshape(-1)
    if own_stat:
        filled = 0
        for lo in range(0, flat.size, 1 << 20):  # write position ≤ read position: a safe in-place compaction
            chunk = np.compress(labels[lo:lo + (1 << 20)], flat[lo:lo + (1 << 20)])
            flat[filled:filled + chunk.size] = chunk
            filled += chunk.size
        positives = flat[:filled]
    else:
        positives = np.compress(labels, flat)
    positives.sort()
    return positives


def smallest_above(cut: float, *ascending: np.ndarray) -> float:
    """The smallest value above ``cut`` in any of the ascending arrays (inf if none): the threshold
    of the rule "score > cut", as the smallest score it calls a member."""
    found = [a[i] for a in ascending if (i := int(np.searchsorted(a, cut, side="right"))) < a.size]
    return float(min(found)) if found else math.inf
