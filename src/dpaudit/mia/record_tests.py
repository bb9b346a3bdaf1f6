"""Which records leak: one rank test per record, with the false discovery rate controlled over the pool.

A record's TPR under a level-α rule is estimated from its few IN targets, and among thousands of
records some reach a high TPR by chance (on null Gaussian scores at M = 64 the top record of 10,000
calls 7 of its 32 IN targets at α = 0.01). A record is only said to *stand out* when its IN scores
are higher than its OUT scores beyond what chance gives over the whole pool:

* per record, the one-sided Mann–Whitney test of "IN scores are stochastically larger than OUT
  scores" (Mann & Whitney 1947): ``U = R_in − n_in(n_in + 1)/2`` with ``R_in`` the sum of the IN
  scores' mid-ranks among the record's M scores; under the null (the record's scores do not depend on
  membership, so they are exchangeable across models given the numbers of IN and OUT models) its
  distribution is the Wilcoxon rank-sum distribution whatever the score distribution. The p-value is
  its normal approximation with the tie correction of the variance,
  ``σ² = n_in n_out/12 · (n + 1 − Σ(t³ − t)/(n(n − 1)))``, and a continuity correction of ½
  (Lehmann, *Nonparametrics*, 1975, §1.4); a record whose scores are all equal has p = 1;
* over the N+ records, the Benjamini–Hochberg step-up procedure (JRSS B 1995): ``q_(i) = min_{j ≥ i}
  p_(j) N+/j``; a record stands out when ``q ≤`` :data:`DEFAULT_FDR` (5 %): among the records
  flagged, at most 5 % are expected to be null ones (for independent or positively dependent
  p-values).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from dpaudit.mia.moments import column_blocks

__all__ = ["DEFAULT_FDR", "EXACT_PAIRS", "EXACT_TIED_GROUP", "EXACT_TIED_WORK", "rank_test_pvalues", "exact_upper_tail",
           "exact_tied_upper_tail", "benjamini_hochberg"]

#: The false discovery rate at which a record is said to stand out.
DEFAULT_FDR = 0.05
#: Records without ties and at most this many (IN, OUT) pairs get the exact p-value.
EXACT_PAIRS = 4096
#: Records with ties whose smaller group has at most this many models get the exact conditional p-value
#: (when their tie groups × that size² is at most :data:`EXACT_TIED_WORK`).
EXACT_TIED_GROUP = 16
EXACT_TIED_WORK = 20_000


def rank_test_pvalues(score: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """One-sided Mann–Whitney p-value per record (IN scores larger), shape (N+,) (module docstring).

    Examples
    --------
    >>> keep = np.array([[True, True], [True, False], [True, True], [False, False], [False, True], [False, False]])
    >>> score = np.array([[5.0, 1], [6, 1], [7, 1], [1, 1], [2, 1], [3, 1]])
    >>> p = rank_test_pvalues(score, keep)
    >>> round(float(p[0]), 4), float(p[1])   # every IN above every OUT: exactly 1/C(6, 3); all scores tied
    (0.05, 1.0)
    """
    score = np.asarray(score, dtype=np.float64)
    keep = np.asarray(keep, dtype=bool)
    n_models, n_records = score.shape
    p = np.empty(n_records)
    position = np.arange(1, n_models + 1, dtype=np.float64)[None, :]
    for cols in column_blocks(n_records, n_models):
        # one row per record (contiguous: sorting and gathering along rows is ~2.5× faster than along columns)
        s, k = np.ascontiguousarray(score[:, cols].T), np.ascontiguousarray(keep[:, cols].T)
        order = np.argsort(s, axis=1)  # the order within ties does not change a mid-rank
        # gathered by flat positions (row offset + order): the values of take_along_axis at a third of its cost
        order += np.arange(0, s.size, n_models)[:, None]
        ordered = s.reshape(-1).take(order).reshape(s.shape)
        k_sorted = k.reshape(-1).take(order).reshape(s.shape)
        # each sorted position's run of equal values: its first and last position (1-based)
        start = np.ones(s.shape, dtype=bool)
        np.not_equal(ordered[:, 1:], ordered[:, :-1], out=start[:, 1:])
        end = np.ones(s.shape, dtype=bool)
        end[:, :-1] = start[:, 1:]
        rank_sum = (position * k_sorted).sum(axis=1)  # R_in without ties: the IN scores' positions
        ties = np.zeros(s.shape[0])
        tied = np.flatnonzero(~start[:, 1:].all(axis=1))
        if tied.size:  # mid-ranks in the records with equal scores
            st, en, ks = start[tied], end[tied], k_sorted[tied]
            first = np.maximum.accumulate(np.where(st, position, 0.0), axis=1)
            last = np.minimum.accumulate(np.where(en, position, np.inf)[:, ::-1], axis=1)[:, ::-1]
            rank_sum[tied] = (((first + last) / 2) * ks).sum(axis=1)
            length = last - first + 1
            ties[tied] = (length**2 - 1).sum(axis=1)  # Σ over runs of t³ − t: a run's t members add t² − 1 each
        n_in = k.sum(axis=1).astype(np.float64)
        n_out = n_models - n_in
        u = rank_sum - n_in * (n_in + 1) / 2
        n = float(n_models)
        var = n_in * n_out / 12.0 * (n + 1 - ties / (n * (n - 1)))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (u - n_in * n_out / 2 - 0.5) / np.sqrt(var)
        block = np.where(var > 0, special.ndtr(-z), 1.0)
        exact = (ties == 0) & (n_in * n_out <= EXACT_PAIRS)
        for a, b in {(int(x), int(y)) for x, y in zip(n_in[exact], n_out[exact])}:
            which = exact & (n_in == a) & (n_out == b)
            block[which] = exact_upper_tail(a, b)[np.rint(u[which]).astype(np.int64)]
        # records with ties whose smaller group is small: the exact conditional p-value (the normal
        # approximation is far too small there: one IN score of 1 among 63 zeros read p = 4.6e-6, exactly 1/64)
        small = np.minimum(n_in, n_out)
        for x in np.flatnonzero((ties > 0) & (small <= EXACT_TIED_GROUP)):
            sizes = tuple(int(v) for v in np.diff(np.append(np.flatnonzero(start[x]), n_models)))
            if len(sizes) * int(small[x]) ** 2 <= EXACT_TIED_WORK:
                block[x] = exact_tied_upper_tail(sizes, int(n_in[x]), int(round(2 * u[x])))
        p[cols] = block
    return p


def exact_tied_upper_tail(sizes: tuple[int, ...], n_in: int, twice_u: int) -> float:
    """``P(2U ≥ twice_u)`` under the null for a record whose sorted scores fall in tie groups of ``sizes``
    (ascending values), with ``n_in`` IN scores: U counts (IN, OUT) pairs with the IN score above, ties
    as ½ — the permutation distribution given the ties (Lehmann 1975, §1.4).

    A group of t scores with c IN and t − c OUT adds ``c·(2·O + t − c)`` to 2U, O the OUT scores of the
    groups below; choosing c of the group's t in C(t, c) ways, a pass over the groups with the state
    (IN so far, 2U so far) gives the distribution (:func:`_tied_distribution`, over the smaller group
    so that the state stays small; U_in + U_out = n_in·n_out).

    Examples
    --------
    >>> exact_tied_upper_tail((63, 1), 1, 2 * 63)   # the one high score is the one IN score: 1 of 64 ways
    0.015625
    >>> exact_tied_upper_tail((3, 3), 3, 9)          # 3 IN among 3 low and 3 high, 2U ≥ 9: C(3,2)C(3,1)+1 of 20
    0.5
    """
    n = sum(sizes)
    n_out = n - n_in
    if n_in <= n_out:
        dist = _tied_distribution(sizes, n_in)
        return float(dist[min(max(twice_u, 0), dist.size):].sum() / dist.sum())
    dist = _tied_distribution(sizes, n_out)  # 2U_in = 2·n_in·n_out − 2U_out
    return float(dist[:max(min(2 * n_in * n_out - twice_u, dist.size - 1), -1) + 1].sum() / dist.sum())


@functools.lru_cache(maxsize=4096)
def _tied_distribution(sizes: tuple[int, ...], chosen: int) -> np.ndarray:
    """Counts of every 2U value (index) when ``chosen`` of the scores are drawn without replacement from
    tie groups of ``sizes``, U counting the chosen above the others (ties ½)."""
    n = sum(sizes)
    length = 2 * chosen * (n - chosen) + 1
    dist = [np.zeros(length) for _ in range(chosen + 1)]
    dist[0][0] = 1.0
    below = 0
    for t in sizes:
        new = [np.zeros(length) for _ in range(chosen + 1)]
        for i in range(chosen + 1):
            if not dist[i].any():
                continue
            for c in range(0, min(t, chosen - i) + 1):
                shift = c * (2 * (below - i) + t - c)
                if shift < length:
                    new[i + c][shift:] += math.comb(t, c) * dist[i][:length - shift]
        dist = new
        below += t
    return dist[chosen]


@functools.lru_cache(maxsize=64)
def exact_upper_tail(n_in: int, n_out: int) -> np.ndarray:
    """``P(U ≥ u)`` for u = 0 … n_in·n_out under the null, U the Mann–Whitney count of (IN, OUT) pairs with
    the IN score above, without ties: the recursion ``P_{a,b}(u) = a/(a + b)·P_{a−1,b}(u − b) +
    b/(a + b)·P_{a,b−1}(u)`` (the largest of the a + b scores is IN with probability a/(a + b), and then
    above all b OUT scores), in probabilities so that no count overflows.

    Examples
    --------
    >>> tail = exact_upper_tail(8, 8)
    >>> round(float(tail[64]) * 12870, 9), float(tail[0])   # all IN above all OUT: 1 of C(16, 8) arrangements
    (1.0, 1.0)
    """
    # row[j] = the pmf of U for sizes (a, j), j = 0 … n_out, built up a = 0 … n_in
    row = [np.ones(1) for _ in range(n_out + 1)]  # a = 0: U = 0
    for a in range(1, n_in + 1):
        new = [np.ones(1)]  # b = 0: U = 0
        for b in range(1, n_out + 1):
            pmf = np.zeros(a * b + 1)
            pmf[b:b + row[b].size] += a / (a + b) * row[b]  # largest is IN: U gains b
            pmf[:new[b - 1].size] += b / (a + b) * new[b - 1]  # largest is OUT
            new.append(pmf)
        row = new
    tail = np.cumsum(row[n_out][::-1])[::-1]
    return tail / tail[0]  # P(U ≥ 0) = 1 exactly, whatever the rounding of the sum


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values) of ``p``, in the same order.

    Examples
    --------
    >>> benjamini_hochberg(np.array([0.01, 0.04, 0.03, 0.5])).round(4).tolist()
    [0.04, 0.0533, 0.0533, 0.5]
    """
    p = np.asarray(p, dtype=np.float64)
    n = p.size
    order = np.argsort(p, kind="stable")
    scaled = p[order] * n / np.arange(1, n + 1)
    q_sorted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    q = np.empty(n)
    q[order] = q_sorted
    return q
