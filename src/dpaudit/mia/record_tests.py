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

import numpy as np
from scipy import special

__all__ = ["DEFAULT_FDR", "rank_test_pvalues", "benjamini_hochberg"]

#: The false discovery rate at which a record is said to stand out.
DEFAULT_FDR = 0.05


def rank_test_pvalues(score: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """One-sided Mann–Whitney p-value per record (IN scores larger), shape (N+,) (module docstring).

    Examples
    --------
    >>> keep = np.array([[True, True], [True, False], [True, True], [False, False], [False, True], [False, False]])
    >>> score = np.array([[5.0, 1], [6, 1], [7, 1], [1, 1], [2, 1], [3, 1]])
    >>> p = rank_test_pvalues(score, keep)
    >>> round(float(p[0]), 4), float(p[1])   # every IN score above every OUT score; all scores tied
    (0.0404, 1.0)
    """
    score = np.asarray(score, dtype=np.float64)
    keep = np.asarray(keep, dtype=bool)
    n_models, n_records = score.shape
    order = np.argsort(score, axis=0, kind="stable")
    ordered = np.take_along_axis(score, order, axis=0)
    # mid-ranks: runs of equal values in each sorted column share the mean of their positions (1-based)
    start = np.ones(score.shape, dtype=bool)
    start[1:] = ordered[1:] != ordered[:-1]
    flat_start = start.T.reshape(-1)  # column by column
    run = np.cumsum(flat_start) - 1
    position = np.tile(np.arange(1, n_models + 1, dtype=np.float64), n_records)
    length = np.bincount(run).astype(np.float64)
    first = position[flat_start]
    mid = (first + (first + length - 1)) / 2
    ranks_sorted = mid[run].reshape(n_records, n_models).T
    ranks = np.empty_like(ranks_sorted)
    np.put_along_axis(ranks, order, ranks_sorted, axis=0)
    n_in = keep.sum(axis=0).astype(np.float64)
    n_out = n_models - n_in
    u = (ranks * keep).sum(axis=0) - n_in * (n_in + 1) / 2
    column_of_run = np.repeat(np.arange(n_records), start.sum(axis=0))
    ties = np.bincount(column_of_run, weights=length**3 - length, minlength=n_records)
    n = float(n_models)
    var = n_in * n_out / 12.0 * (n + 1 - ties / (n * (n - 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (u - n_in * n_out / 2 - 0.5) / np.sqrt(var)
    return np.where(var > 0, special.ndtr(-z), 1.0)


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
