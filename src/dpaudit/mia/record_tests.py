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

import numpy as np
from scipy import special

from dpaudit.mia.moments import column_blocks

__all__ = ["DEFAULT_FDR", "EXACT_PAIRS", "rank_test_pvalues", "exact_upper_tail", "benjamini_hochberg"]

#: The false discovery rate at which a record is said to stand out.
DEFAULT_FDR = 0.05
#: Records without ties and at most this many (IN, OUT) pairs get the exact p-value.
EXACT_PAIRS = 4096


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
    position = np.arange(1, n_models + 1, dtype=np.float64)[:, None]
    for cols in column_blocks(n_records, n_models):
        s, k = score[:, cols], keep[:, cols]
        order = np.argsort(s, axis=0)  # the order within ties does not change a mid-rank
        ordered = np.take_along_axis(s, order, axis=0)
        k_sorted = np.take_along_axis(k, order, axis=0)
        # each sorted position's run of equal values: its first and last position (1-based)
        start = np.ones(s.shape, dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=start[1:])
        end = np.ones(s.shape, dtype=bool)
        end[:-1] = start[1:]
        rank_sum = (position * k_sorted).sum(axis=0)  # R_in without ties: the IN scores' positions
        ties = np.zeros(s.shape[1])
        tied = np.flatnonzero(~start[1:].all(axis=0))
        if tied.size:  # mid-ranks in the records with equal scores
            st, en, ks = start[:, tied], end[:, tied], k_sorted[:, tied]
            first = np.maximum.accumulate(np.where(st, position, 0.0), axis=0)
            last = np.minimum.accumulate(np.where(en, position, np.inf)[::-1], axis=0)[::-1]
            rank_sum[tied] = (((first + last) / 2) * ks).sum(axis=0)
            length = last - first + 1
            ties[tied] = (length**2 - 1).sum(axis=0)  # Σ over runs of t³ − t: a run's t members add t² − 1 each
        n_in = k.sum(axis=0).astype(np.float64)
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
        p[cols] = block
    return p


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
