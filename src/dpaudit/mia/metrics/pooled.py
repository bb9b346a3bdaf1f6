"""The low-FPR end of the pooled ROC without building it: one sort of the non-members' values.

The evaluation of a whole score matrix reads only the low-FPR end and the AUC, which need no argsort
of every target: :class:`PooledScores` sorts the non-members' values once (``np.sort``, several times
faster than an argsort) and finds the operating point at FPR ≤ α from them (:meth:`PooledScores.cut`),
and :func:`mann_whitney_auc` counts the AUC from the two classes' sorted values. Both give exactly the
numbers of :func:`~dpaudit.mia.metrics.roc.point_at_fpr` and :func:`~dpaudit.mia.metrics.roc.auc` on
:func:`~dpaudit.mia.metrics.roc.roc_curve` (proofs in their docstrings; tested against them).
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.mia.metrics._inputs import pooled_classes

__all__ = ["PooledScores", "mann_whitney_auc"]

#: Flat elements per chunk when a pooled matrix is scanned (8 MB of float64).
_CHUNK = 1 << 20


class PooledScores:
    """A pooled statistic of members and non-members with the non-members' values sorted once.

    Everything the evaluation reads from the pooled ROC without building it (no argsort of all
    targets): the operating point at FPR ≤ α (:meth:`cut`), the largest non-member scores with their
    positions (:meth:`top`), the members between two scores (:meth:`members_between`), and, with the
    members' values sorted as well, the AUC (:func:`mann_whitney_auc`). The bootstrap re-chooses its
    thresholds on the same sorted values (:meth:`dpaudit.mia.metrics.Bootstrap.tpr_at_fpr`).

    Parameters
    ----------
    scores : ndarray of float, any shape
        Finite; higher = more likely member. Kept by reference (not copied).
    labels : ndarray of bool, same shape
        Members. Both classes must occur.

    Attributes
    ----------
    negatives : ndarray of float, shape (n_neg,)
        The non-members' scores, ascending.
    n_pos, n_neg : int

    Examples
    --------
    >>> p = PooledScores(np.array([4.0, 3.0, 2.0, 1.0]), np.array([True, False, True, False]))
    >>> p.cut(0.5), p.cut(0.49), p.cut(1.0)
    (1.0, 3.0, -inf)
    """

    def __init__(self, scores: np.ndarray, labels: np.ndarray) -> None:
        self.scores, self.labels, self.n_pos, self.n_neg = pooled_classes(scores, labels)
        self.negatives = self.scores[~self.labels]
        self.negatives.sort()

    @classmethod
    def with_sorted_negatives(cls, scores: np.ndarray, labels: np.ndarray, negatives: np.ndarray, *,
                              n_pos: int | None = None) -> PooledScores:
        """The same object from the non-members' scores already sorted (ascending) by the caller.

        Trusted, not checked: ``scores`` float64 and finite, ``labels`` bool of the same shape with both
        classes, ``negatives`` exactly ``sort(scores[~labels])`` (the evaluation gathers them block by
        block while it computes the scores, and so skips a pass over the whole matrix). With ``n_pos``
        (the members' number), some targets may be neither: their score is −inf, below every cut, and
        ``negatives`` holds the non-members' scores only.
        """
        pooled = cls.__new__(cls)
        pooled.scores, pooled.labels = scores.reshape(-1), labels.reshape(-1)
        pooled.negatives = negatives
        pooled.n_neg = int(negatives.size)
        pooled.n_pos = int(pooled.labels.size - pooled.n_neg) if n_pos is None else n_pos
        return pooled

    def cut(self, alpha: float, *, strict: bool = False) -> float:
        """The score ``c`` such that "member iff score > c" is the ROC point at the largest FPR ≤ α.

        With ``k`` the largest count with ``k/n_neg ≤ α`` (``< α`` when ``strict``; the same float
        comparison as :func:`point_at_fpr` on ``roc.fpr = fp/n_neg``), ``c`` is the (k + 1)-th largest
        non-member score (−inf when k = n_neg). Proof that the rule is :func:`point_at_fpr`'s point: a
        threshold ``v`` admits ``#{non-members ≥ v}`` false positives, which is ≤ k iff fewer than
        k + 1 non-members reach v, iff ``v > c``; the largest FPR ≤ α is at the smallest distinct score
        ``v > c``, and "score ≥ v" is "score > c". Ties need no care: ``c`` is a score, and the rule
        admits or rejects all of its ties together. O(1) on the sorted non-members.

        Examples
        --------
        >>> PooledScores(np.array([0.9, 0.5, 0.5, 0.1]), np.array([True, True, False, False])).cut(0.5)
        0.1
        """
        n = self.n_neg

        def within(count: int) -> bool:
            return count / n < alpha if strict else count / n <= alpha

        k = min(n, max(0, int(math.floor(alpha * n))))
        while k < n and within(k + 1):
            k += 1
        while k > 0 and not within(k):
            k -= 1
        return -math.inf if k == n else float(self.negatives[n - 1 - k])

    def _select(self, low: float, high: float, members: bool) -> tuple[np.ndarray, np.ndarray]:
        """Values (descending) and flat positions of the members (or non-members) with low < score ≤ high."""
        found = []
        for lo in range(0, self.scores.size, _CHUNK):
            s, y = self.scores[lo:lo + _CHUNK], self.labels[lo:lo + _CHUNK]
            hit = (s > low) & (s <= high)
            hit &= y if members else ~y
            found.append(np.flatnonzero(hit) + lo)
        where = np.concatenate(found)
        values = self.scores[where]
        order = np.argsort(-values, kind="stable")
        return values[order], where[order]

    def top(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``count`` largest non-member scores (and any ties of the smallest), descending, with flat positions.

        Found by one comparison with the ``count``-th largest sorted value and a sort of what is
        selected, not of every target.
        """
        count = min(max(count, 1), self.n_neg)
        return self._select(_below(self.negatives[self.n_neg - count]), math.inf, members=False)

    def members_between(self, low: float, high: float) -> tuple[np.ndarray, np.ndarray]:
        """Member scores with ``low < score ≤ high`` (descending) and their flat positions."""
        return self._select(low, high, members=True)


def _below(value: float) -> float:
    """The largest float below ``value`` (so that ``score > _below(v)`` is ``score ≥ v``)."""
    return float(np.nextafter(value, -np.inf))


def mann_whitney_auc(negatives: np.ndarray, positives: np.ndarray) -> float:
    """AUC of the exact ROC from the two classes' sorted scores: the Mann–Whitney statistic.

    ``AUC = Σ_pos (#neg < s + #neg ≤ s) / (2·n_pos·n_neg)`` = ``P(S_pos > S_neg) + ½ P(S_pos = S_neg)``
    (Hanley & McNeil 1982), which is the trapezoid over the exact ROC (:func:`auc`): its sum
    ``Σ_groups Δfp·(tp_before + tp_after)`` counts every (member, non-member) pair twice when the
    member scores higher and once when they tie. The count is an exact integer, so this equals
    :func:`auc` whenever that one's float sum is exact (2·n_pos·n_neg < 2⁵³). Both inputs ascending;
    the members are searched in chunks among the slice of non-members they span, so every binary
    search runs in cache, and ``#neg ≤ s`` is searched again only for a member equal to a non-member
    (``#neg ≤ s = #neg < s + #neg = s``).

    Examples
    --------
    >>> mann_whitney_auc(np.array([0.1, 0.5]), np.array([0.5, 0.9]))
    0.875
    """
    total = 0
    step = 1 << 14
    for lo in range(0, positives.size, step):
        chunk = positives[lo:lo + step]
        first = int(np.searchsorted(negatives, chunk[0], side="left"))
        last = int(np.searchsorted(negatives, chunk[-1], side="right"))
        span = negatives[first:last]
        below = np.searchsorted(span, chunk, side="left")  # #neg < s, less the `first` before the span
        total += 2 * (first * chunk.size + int(below.sum()))
        if span.size:  # #neg = s: a second search only for the members that tie a non-member
            tied = span[np.minimum(below, span.size - 1)] == chunk
            if tied.any():
                total += int((np.searchsorted(span, chunk[tied], side="right") - below[tied]).sum())
    return total / (2.0 * positives.size * negatives.size)
