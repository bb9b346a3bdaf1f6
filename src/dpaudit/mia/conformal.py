"""Conformal ranks: each target's position among its record's OUT scores, and its call probability.

The empirical per-record estimator and the pooled rank rule (:mod:`dpaudit.mia.per_record`, whose
module docstring gives the test) read, for every target (m, x), how many of the record's reference
scores (its raw scores under the other models that are OUT on x) lie strictly above and exactly at
the target's score. :func:`conformal_ranks` (and :func:`block_ranks`, per block of records) count
them, capped at the few ranks the levels asked for can call (:func:`rank_cap`);
:func:`hit_probability` turns them into the randomised conformal test's probability of calling the
target a member, and :func:`min_out_models` is the fewest OUT models at which that test can call one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpaudit._validation import unit_interval, whole_number
from dpaudit.mia.fits import column_blocks
from dpaudit.mia.moments import column_counts
from dpaudit.mia.scores import check_score_keep

__all__ = ["ConformalRanks", "conformal_ranks", "block_ranks", "rank_cap", "hit_probability", "min_out_models"]

#: Relative slack in ``α(n + 1)`` so that a product that is an integer in decimals (α = 0.29,
#: n + 1 = 100) is not floored below it by binary rounding (0.29 · 100 = 28.999999999999996).
_RANK_EPS = 1e-12


@dataclass(frozen=True, eq=False)
class ConformalRanks:
    """Every target's position among its record's OUT scores under the other models; arrays (M, N+).

    Attributes
    ----------
    greater : ndarray of int
        ``G``: reference scores strictly above the target's score.
    equal : ndarray of int
        ``E``: reference scores equal to it (the target itself excluded).
    n_ref : ndarray of int
        Reference size: ``n_out(x)`` for an IN target, ``n_out(x) − 1`` for an OUT target.
    keep : ndarray of bool
        The membership the ranks were computed for.
    """

    greater: np.ndarray
    equal: np.ndarray
    n_ref: np.ndarray
    keep: np.ndarray

    @property
    def n_out(self) -> np.ndarray:
        """OUT models per record, shape (N+,)."""
        return (~self.keep).sum(axis=0)


def conformal_ranks(score: object, keep: object, *, cap: int | None = None) -> ConformalRanks:
    """Rank every target's raw score among its record's OUT scores under the other models.

    Parameters
    ----------
    score, keep : array_like, shape (M, N+)
        Validated like a ScoreSet.
    cap : int, optional
        Only ranks below ``cap`` are needed (:func:`rank_cap`: a target with ``G ≥ cap`` is never
        called a member at the levels asked for). Then ``greater`` is exact where it is below
        ``cap`` and ``cap`` elsewhere, and ``equal`` is exact where ``greater < cap`` and 0 elsewhere.
        None: every rank exact.

    Notes
    -----
    Per block of records, only the ``k = min(cap, max n_out)`` largest OUT scores of each record are
    found (:func:`block_ranks`: peeled level by level for k ≤ 8, else selected with ``np.partition``
    and sorted); ``G`` and ``G + E`` of a target are its counts of those scores ``>`` and ``≥`` it.
    Both counts are exact while ``G < k``: every OUT score above the target is then among them. An
    OUT target is among its own tied OUT scores, so ``E`` excludes it. No full sort of any column
    when ``cap`` is small (the evaluation's case: 2 at α = 0.01, M = 256).

    Examples
    --------
    >>> score = np.array([[3.0], [1.0], [2.0], [2.0], [0.0], [5.0]])
    >>> keep = np.array([[True], [False], [False], [False], [True], [True]])
    >>> r = conformal_ranks(score, keep)
    >>> r.greater[:, 0].tolist(), r.equal[:, 0].tolist(), r.n_ref[:, 0].tolist()
    ([0, 2, 0, 0, 3, 0], [0, 0, 1, 1, 0, 0], [3, 2, 2, 2, 3, 3])
    >>> conformal_ranks(score, keep, cap=1).greater[:, 0].tolist()
    [0, 1, 0, 0, 1, 0]
    """
    s, k = check_score_keep(score, keep)
    if cap is not None:
        cap = whole_number("cap", cap, minimum=1, hint=" (or None: no cap)")
    n_out = (~k).sum(axis=0)
    top = int(n_out.max()) if cap is None else min(int(cap), int(n_out.max()))
    greater = np.empty(s.shape, dtype=np.int32)
    equal = np.empty(s.shape, dtype=np.int32)
    n_ref = np.empty(s.shape, dtype=np.int32)
    for cols in column_blocks(s.shape[1], s.shape[0]):
        block = block_ranks(s[:, cols], k[:, cols], n_out[cols], top)
        greater[:, cols], equal[:, cols], n_ref[:, cols] = block.greater, block.equal, block.n_ref
    return ConformalRanks(greater=greater, equal=equal, n_ref=n_ref, keep=k)


def rank_cap(alphas: Sequence[float], n_out_max: int) -> int:
    """The ``cap`` of :func:`conformal_ranks` that :func:`hit_probability` needs at every α in ``alphas``.

    A target with ``G`` reference scores above it is called a member with positive probability only
    if ``G < α(n_ref + 1)(1 + ε)`` (the budget of :func:`hit_probability`), and ``n_ref + 1 ≤ n_out + 1``;
    so ``⌊max_α α(n_out + 1)(1 + ε)⌋ + 1`` ranks suffice.

    Examples
    --------
    >>> rank_cap([0.01, 0.001], 128), rank_cap([0.1], 1000)
    (2, 101)
    """
    return int(math.floor(max(alphas) * (n_out_max + 1) * (1 + _RANK_EPS))) + 1


#: A rank cap up to this many is served by peeling each record's largest OUT scores level by level.
_PEEL_MAX = 8
#: Stands for an IN score among the OUT scores: below every score a ScoreSet accepts (|score| ≤ 1e75).
_BELOW = -1e300


def block_ranks(s: np.ndarray, keep: np.ndarray, n_out: np.ndarray, top: int) -> ConformalRanks:
    """:func:`conformal_ranks` of one block of records, capped at ``top`` (unvalidated inputs, (M, w)).

    The OUT scores of each record are ``s`` with every IN score replaced by −1e300, below any score
    (subtracting ``keep·1e300`` leaves an OUT score exactly as it is). For ``top ≤ 8`` the largest
    distinct values are peeled off one level at a time (column maximum, its multiplicity, then those
    entries pushed down), until every record has ``top`` scores, and each target counts the levels
    above it (``G``) and at or above it (``G + E``); all ties of a level are counted, so both counts
    are exact while ``G < top``. For a larger cap each record's ``top`` largest are selected
    (``np.partition`` along contiguous rows of the transposed block) and sorted, and the counts come
    from a binary search; OUT scores tied with the ``top``-th may lie outside the selection, so
    ``≥`` is counted on the whole column for a target equal to it.
    """
    out = ~keep
    vals = np.multiply(keep, _BELOW)
    vals += s
    if top <= _PEEL_MAX:
        greater = np.zeros(s.shape, dtype=np.int32)
        at_least = np.zeros(s.shape, dtype=np.int32)
        taken = np.zeros(s.shape[1], dtype=np.int64)
        while True:
            level = vals.max(axis=0)
            live = (taken < top) & (level > _BELOW)
            if not live.any():
                break
            hit = vals == level
            count = column_counts(hit) * live  # levels beyond a record's cap count nothing
            taken += count
            greater += (level > s) * count.astype(np.int32)
            at_least += (level >= s) * count.astype(np.int32)
            vals -= hit * 1e300  # the level's entries drop below every score
        np.minimum(greater, top, out=greater)
    else:
        rows = np.ascontiguousarray(vals.T)  # records × models: the selection runs along contiguous rows
        rows.partition(rows.shape[1] - top, axis=1)
        high = np.sort(rows[:, rows.shape[1] - top:], axis=1)[:, ::-1].T.copy()  # (top, w), descending
        greater = _count_above(high, s, strict=True)
        at_least = _count_above(high, s, strict=False)
        tied = s == high[-1]
        if tied.any():  # OUT scores equal to the top-th may lie beyond the selection: count them all
            at_least = np.where(tied, greater + np.count_nonzero(tied & out, axis=0), at_least)
    equal = at_least - greater - out
    equal *= greater < top  # unknown (and irrelevant) where G ≥ cap
    return ConformalRanks(greater=greater.astype(np.int32, copy=False), equal=equal.astype(np.int32, copy=False),
                          n_ref=(n_out - out).astype(np.int32), keep=keep)


def _count_above(high: np.ndarray, s: np.ndarray, *, strict: bool) -> np.ndarray:
    """How many of each record's descending ``high[:, x]`` are > (strict) or ≥ each ``s[:, x]``.

    Binary lifting: ``count`` stays the largest c with ``high[c − 1]`` above ``s`` (⌈log₂(top + 1)⌉ steps).
    """
    top, width = high.shape
    above = np.greater if strict else np.greater_equal
    count = np.zeros(s.shape, dtype=np.intp)
    flat, cols = high.ravel(), np.arange(width)
    step = 1 << (top.bit_length() - 1)
    while step:
        cand = count + step
        pos = np.minimum(cand, top) - 1
        pos *= width
        pos += cols
        count += step * ((cand <= top) & above(flat[pos], s))
        step >>= 1
    return count


def hit_probability(ranks: ConformalRanks, alpha: float) -> np.ndarray:
    """Probability that the randomised conformal test at level α calls each target a member; (M, N+).

    ``clip((α(n_ref + 1) − G)/(E + 1), 0, 1)`` (:mod:`dpaudit.mia.per_record` docstring). Its mean over a record's OUT
    targets (leave-one-out) is exactly α when the record's OUT scores have no ties.

    Examples
    --------
    >>> r = ConformalRanks(np.array([[0, 1, 2]]), np.zeros((1, 3), int), np.full((1, 3), 149),
    ...                    np.ones((1, 3), bool))
    >>> hit_probability(r, 0.01).round(6).tolist()   # α(n + 1) = 1.5
    [[1.0, 0.5, 0.0]]
    """
    alpha = unit_interval("alpha", alpha)
    budget = alpha * (ranks.n_ref + 1) * (1 + _RANK_EPS)
    return np.clip((budget - ranks.greater) / (ranks.equal + 1.0), 0.0, 1.0)


def min_out_models(alpha: float) -> int:
    """Fewest OUT models per record for the empirical estimator: ``α(n_out + 1) ≥ 1``.

    Examples
    --------
    >>> min_out_models(0.01), min_out_models(0.001), min_out_models(0.3)
    (99, 999, 3)
    """
    alpha = unit_interval("alpha", alpha)
    return max(1, math.ceil((1 - _RANK_EPS) / alpha) - 1)

