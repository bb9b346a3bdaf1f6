"""The exact ROC and every operating point read from it (spec ``mia.md`` §3, §4).

One kernel, many views: :func:`roc_curve` sorts the scores once and keeps one point per distinct
score; every operating point (TPR at FPR α, the rates at a fixed threshold, the AUC) is read from it.

The evaluation of a whole score matrix reads only the low-FPR end and the AUC, which need no argsort
of every target: :class:`PooledScores` sorts the non-members' values once (``np.sort``, several times
faster than an argsort) and finds the operating point at FPR ≤ α from them (:meth:`PooledScores.cut`),
and :func:`mann_whitney_auc` counts the AUC from the two classes' sorted values. Both give exactly the
numbers of :func:`point_at_fpr` and :func:`auc` on :func:`roc_curve` (proofs in their docstrings;
tested against them).

Conventions (used by every function here)
-----------------------------------------
- Scores: **higher means more likely member**. A record is predicted member when
  ``score >= threshold``; tied scores therefore cross a threshold together.
- The ROC starts at (FPR, TPR) = (0, 0) with threshold ``+inf`` and ends at (1, 1) at the smallest
  score. No grid of thresholds, no interpolation, no dropped points (unlike scikit-learn's default
  ``drop_intermediate=True``).
- TPR at FPR α is the TPR of the **largest FPR ≤ α** on that curve (the highest such point, when the
  curve rises vertically there); ``strict=True`` takes the largest FPR < α, which is what the LiRA
  reference code does (``tpr[np.where(fpr < alpha)[0][-1]]``, Carlini et al., IEEE S&P 2022).
- Uncertainty (:mod:`dpaudit.mia.metrics.intervals`): Clopper–Pearson on counts is valid only for
  **independent Bernoulli trials at a threshold fixed before seeing the data** (e.g. the analytic
  PP threshold Φ⁻¹(1 − α)). When the threshold is chosen on the same data (TPR at the empirical
  FPR α) or the trials are dependent (concatenated scores share models and records), use the
  bootstrap over models and records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._arrays import as_list, frozen
from dpaudit._errors import DataError, DPAuditError
from dpaudit.mia.metrics._inputs import as_bool, as_scores, check_same_shape

__all__ = ["Roc", "RocPoint", "roc_curve", "point_at_fpr", "point_at_threshold", "tpr_at_fpr", "auc",
           "rates_at_threshold", "per_record_rates", "PooledScores", "mann_whitney_auc"]


# --------------------------------------------------------------------------------------------------
# the kernel: the exact ROC
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Roc:
    """The exact ROC of a set of scores: one point per distinct score, plus (0, 0).

    Attributes
    ----------
    fpr, tpr : ndarray of float, shape (K + 1,)
        Non-decreasing rates; ``fpr[0] = tpr[0] = 0`` and ``fpr[-1] = tpr[-1] = 1``.
    thresholds : ndarray of float, shape (K + 1,)
        Strictly decreasing; ``thresholds[0] = +inf``, ``thresholds[i]`` (i ≥ 1) is the i-th largest
        distinct score. Point i predicts member for ``score >= thresholds[i]``.
    n_pos, n_neg : int
        Number of members (positives) and non-members (negatives).
    tp, fp : ndarray of int, shape (K + 1,)
        The counts behind ``tpr = tp / n_pos`` and ``fpr = fp / n_neg`` (for Clopper–Pearson).
    """

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    n_pos: int
    n_neg: int
    tp: np.ndarray
    fp: np.ndarray

    def __len__(self) -> int:
        return int(self.fpr.size)

    def __str__(self) -> str:
        return (
            f"Roc: {self.n_pos} members, {self.n_neg} non-members, {len(self)} points "
            f"(distinct thresholds + the origin), AUC {auc(self):.4f}"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "n_pos": self.n_pos,
            "n_neg": self.n_neg,
            "fpr": self.fpr.tolist(),
            "tpr": self.tpr.tolist(),
            "thresholds": [None if math.isinf(t) else t for t in self.thresholds.tolist()],
            "tp": self.tp.tolist(),
            "fp": self.fp.tolist(),
            "convention": "member when score >= threshold; first point (0, 0) at threshold +inf",
        }


def roc_curve(scores: object, labels: object) -> Roc:
    """The exact ROC from sorted scores, ties grouped.

    Parameters
    ----------
    scores : array_like of float, any shape
        Attack scores, higher = more likely member. Flattened; must be finite.
    labels : array_like of bool, same shape as ``scores``
        True (or 1) for members, False (or 0) for non-members.

    Returns
    -------
    Roc
        One point per distinct score value (all tied scores cross the threshold together), preceded by
        (0, 0) at threshold ``+inf``. Sorting costs O(n log n); nothing else is super-linear.

    Raises
    ------
    DataError
        Empty input, shapes that differ, non-finite scores, labels that are not boolean, or labels
        without a member or without a non-member.

    Examples
    --------
    >>> roc = roc_curve([0.9, 0.5, 0.5, 0.1], [True, True, False, False])
    >>> roc.thresholds
    array([inf, 0.9, 0.5, 0.1])
    >>> roc.fpr, roc.tpr
    (array([0. , 0. , 0.5, 1. ]), array([0. , 0.5, 1. , 1. ]))
    """
    s = as_scores(scores, "scores")
    y = as_bool(labels, "labels")
    check_same_shape(s, y, "scores", "labels")
    s, y = s.ravel(), y.ravel()
    if s.size == 0:
        raise DataError("scores and labels are empty; the ROC needs at least one member and one non-member")
    n_pos = int(y.sum())
    n_neg = int(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        which = "members (True labels)" if n_pos == 0 else "non-members (False labels)"
        raise DataError(f"labels contain no {which}; the ROC needs both classes (got {y.size} records)")

    # Order within a run of ties is irrelevant (runs are grouped below), so the unstable sort is
    # fine and ~3x faster than a stable one on millions of pooled scores.
    order = np.argsort(-s)
    s_sorted = s[order]
    # Last index of each run of equal scores: a threshold at that value admits the whole run at once.
    ends = np.append(np.flatnonzero(s_sorted[1:] != s_sorted[:-1]), s_sorted.size - 1)
    # Index 0 is the origin (threshold +inf); filled in place to avoid copies of million-point curves.
    tp = np.zeros(ends.size + 1, dtype=np.int64)
    fp = np.zeros(ends.size + 1, dtype=np.int64)
    thresholds = np.full(ends.size + 1, np.inf)
    tp[1:] = np.cumsum(y[order], dtype=np.int64)[ends]
    np.subtract(ends + 1, tp[1:], out=fp[1:])
    thresholds[1:] = s_sorted[ends]
    return Roc(
        fpr=frozen(fp / n_neg),
        tpr=frozen(tp / n_pos),
        thresholds=frozen(thresholds),
        n_pos=n_pos,
        n_neg=n_neg,
        tp=frozen(tp),
        fp=frozen(fp),
    )


# --------------------------------------------------------------------------------------------------
# views: operating points read off the kernel
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RocPoint:
    """Operating point(s) of a :class:`Roc`; every field has the shape of the query (float if 0-d).

    Attributes
    ----------
    tpr, fpr : float or ndarray
        Realised rates (the realised FPR is what a threshold rule actually achieves; it can be below α).
    threshold : float or ndarray
        Member when ``score >= threshold`` (``+inf``: nobody is predicted member).
    tp, fp : int or ndarray of int
        Counts behind the rates.
    n_pos, n_neg : int
    """

    tpr: float | np.ndarray
    fpr: float | np.ndarray
    threshold: float | np.ndarray
    tp: int | np.ndarray
    fp: int | np.ndarray
    n_pos: int
    n_neg: int

    def __str__(self) -> str:
        return (
            f"RocPoint: TPR {self.tpr} ({self.tp}/{self.n_pos}) at FPR {self.fpr} ({self.fp}/{self.n_neg}), "
            f"member when score >= {self.threshold}"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "tpr": as_list(self.tpr),
            "fpr": as_list(self.fpr),
            "threshold": as_list(self.threshold),
            "tp": as_list(self.tp),
            "fp": as_list(self.fp),
            "n_pos": self.n_pos,
            "n_neg": self.n_neg,
        }


def _point(roc: Roc, idx: np.ndarray) -> RocPoint:
    def pick(values: np.ndarray, cast: type) -> Any:
        got = values[idx]
        return cast(got) if got.ndim == 0 else got

    return RocPoint(
        tpr=pick(roc.tpr, float),
        fpr=pick(roc.fpr, float),
        threshold=pick(roc.thresholds, float),
        tp=pick(roc.tp, int),
        fp=pick(roc.fp, int),
        n_pos=roc.n_pos,
        n_neg=roc.n_neg,
    )


def _check_roc(roc: object) -> Roc:
    if not isinstance(roc, Roc):
        raise DPAuditError(f"expected a Roc from roc_curve(scores, labels), got {type(roc).__name__}")
    return roc


def point_at_fpr(roc: Roc, alpha: object, *, strict: bool = False) -> RocPoint:
    """The ROC point at the largest FPR ≤ α (or < α with ``strict=True``), vectorised over α.

    Parameters
    ----------
    roc : Roc
    alpha : float or array_like of float
        Target false-positive rate(s), in [0, 1] (in (0, 1] when ``strict``: no FPR is < 0).
    strict : bool, default False
        False: largest FPR ≤ α (dpaudit's convention). True: largest FPR < α, for parity with the
        LiRA reference code (Carlini et al., IEEE S&P 2022).

    Returns
    -------
    RocPoint
        Fields of the shape of ``alpha``. Among points with the same FPR the highest TPR is taken.

    Notes
    -----
    The threshold is chosen on the same data it is evaluated on, so the counts of this point are
    **not** independent Bernoulli trials at a fixed threshold: do not feed them to
    :func:`clopper_pearson`; use :func:`bootstrap_ci`.

    Examples
    --------
    >>> roc = roc_curve([4, 3, 2, 1], [True, False, True, False])
    >>> p = point_at_fpr(roc, 0.5)
    >>> p.tpr, p.fpr, p.threshold
    (1.0, 0.5, 2.0)
    """
    roc = _check_roc(roc)
    a = np.asarray(alpha, dtype=float)
    if np.isnan(a).any() or (a < 0).any() or (a > 1).any():
        raise DPAuditError(f"alpha must be a false-positive rate in [0, 1], got {alpha!r}")
    if strict and (a == 0).any():
        raise DPAuditError("alpha = 0 with strict=True asks for an FPR below 0, which no threshold has; use alpha > 0")
    # fpr is non-decreasing: the last index with fpr <= a (side="right") or fpr < a (side="left").
    idx = np.searchsorted(roc.fpr, a, side="left" if strict else "right") - 1
    return _point(roc, idx)


def point_at_threshold(roc: Roc, threshold: object) -> RocPoint:
    """The ROC point of the rule "member when score ≥ threshold", vectorised over thresholds.

    Parameters
    ----------
    roc : Roc
    threshold : float or array_like of float
        Any real number or ±inf (``+inf``: nobody predicted member; ``-inf``: everybody). Not NaN.

    Returns
    -------
    RocPoint
        Fields of the shape of ``threshold``; ``RocPoint.threshold`` is the smallest distinct score ≥ the
        requested one (the same rule on these data).

    Examples
    --------
    >>> roc = roc_curve([4, 3, 2, 1], [True, False, True, False])
    >>> point_at_threshold(roc, 2.5).fpr
    0.5
    """
    roc = _check_roc(roc)
    t = np.asarray(threshold, dtype=float)
    if np.isnan(t).any():
        raise DPAuditError(f"threshold must not be NaN, got {threshold!r}")
    # thresholds are strictly decreasing: the last index with thresholds >= t.
    idx = np.searchsorted(-roc.thresholds, -t, side="right") - 1
    return _point(roc, idx)


def tpr_at_fpr(roc: Roc, alpha: object, *, strict: bool = False) -> float | np.ndarray:
    """TPR at the largest FPR ≤ α (``strict=True``: < α) on the exact ROC; vectorised over α.

    The measure of the MIA paper (Jälkö et al., arXiv 2605.25819, §3) and of LiRA (Carlini et al.,
    IEEE S&P 2022, §IV): vulnerability at a low FPR such as 1e-3. See :func:`point_at_fpr`.

    Returns
    -------
    float or ndarray
        A float for a scalar α, else an array of α's shape.

    Examples
    --------
    >>> roc = roc_curve([4, 3, 2, 1], [True, False, True, False])
    >>> tpr_at_fpr(roc, 0.5), tpr_at_fpr(roc, 0.5, strict=True)
    (1.0, 0.5)
    >>> tpr_at_fpr(roc, [0.0, 0.49, 1.0])
    array([0.5, 0.5, 1. ])
    """
    return point_at_fpr(roc, alpha, strict=strict).tpr


def auc(roc: Roc) -> float:
    """Area under the exact ROC (trapezoid rule).

    With ties grouped, the trapezoid over the exact ROC equals the Mann–Whitney statistic
    ``P(S_member > S_non-member) + ½ P(S_member = S_non-member)`` (Hanley & McNeil 1982), so it is
    computed from the integer counts, without rounding in the sum.

    Examples
    --------
    >>> auc(roc_curve([0.9, 0.5, 0.5, 0.1], [True, True, False, False]))
    0.875
    """
    roc = _check_roc(roc)
    tp, fp = roc.tp.astype(float), roc.fp.astype(float)
    area2 = float(np.dot(np.diff(fp), tp[1:] + tp[:-1]))  # twice the area, in count units
    return area2 / (2.0 * roc.n_pos * roc.n_neg)


def rates_at_threshold(
    scores: object, labels: object, threshold: object
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """(TPR, FPR) of the rule "member when score ≥ threshold", vectorised over thresholds.

    For a threshold fixed in advance (e.g. the PP threshold Φ⁻¹(1 − α) of spec §3a). For the integer
    counts (for :func:`clopper_pearson`, valid when the trials are independent) use
    ``point_at_threshold(roc_curve(scores, labels), threshold)``, which this reads from. Same
    conventions and errors as :func:`roc_curve`.

    Parameters
    ----------
    scores, labels : array_like, same shape
        As in :func:`roc_curve`.
    threshold : float or array_like of float

    Returns
    -------
    tpr, fpr : float or ndarray
        Of the shape of ``threshold``.

    Examples
    --------
    >>> rates_at_threshold([4, 3, 2, 1], [True, False, True, False], [2.0, 5.0])
    (array([1., 0.]), array([0.5, 0. ]))
    """
    p = point_at_threshold(roc_curve(scores, labels), threshold)
    return p.tpr, p.fpr


def per_record_rates(score: object, keep: object, threshold: object) -> tuple[np.ndarray, np.ndarray]:
    """Per-record TPR and FPR of one threshold rule over an (M, N+) score matrix.

    Record x's trials are its column: the models with ``keep[m, x]`` (x IN) are its positives, the
    others its negatives. This is the evidence of spec §3a: under one global threshold on pooled
    statistics only the pooled FPR equals α, while each record has its own FPR.

    Parameters
    ----------
    score : array_like of float, shape (M, N+)
        Statistic of model m on record x, higher = more likely member. Finite.
    keep : array_like of bool, shape (M, N+)
        ``keep[m, x]``: record x is in model m's training set.
    threshold : float or array_like of float, shape (N+,)
        One global threshold, or one per record (e.g. calibrated per record). Member when
        ``score >= threshold``.

    Returns
    -------
    tpr, fpr : ndarray of float, shape (N+,)
        ``tpr[x] = #{m IN, score ≥ t} / #{m IN}``, ``fpr[x]`` likewise over the OUT models. NaN for a
        record without IN models (tpr) or without OUT models (fpr): the rate is undefined there.

    Examples
    --------
    >>> score = [[3.0, 0.0], [1.0, 2.0], [0.0, 1.0]]
    >>> keep = [[True, False], [False, True], [True, False]]
    >>> per_record_rates(score, keep, 1.0)
    (array([0.5, 1. ]), array([1. , 0.5]))
    """
    s = as_scores(score, "score")
    k = as_bool(keep, "keep")
    check_same_shape(s, k, "score", "keep")
    if s.ndim != 2 or s.size == 0:
        raise DataError(f"score must be a non-empty (M models, N+ records) matrix, got shape {s.shape}")
    t = np.asarray(threshold, dtype=float)
    if t.ndim > 1 or (t.ndim == 1 and t.shape != (s.shape[1],)):
        raise DataError(
            f"threshold must be a number or one per record (shape ({s.shape[1]},)), got shape {t.shape}"
        )
    if np.isnan(t).any():
        raise DataError("threshold must not be NaN")
    hit = s >= t  # broadcasts a per-record threshold along the model axis
    n_in = k.sum(axis=0)
    n_out = k.shape[0] - n_in
    tp = np.count_nonzero(hit & k, axis=0)
    fp = np.count_nonzero(hit & ~k, axis=0)
    tpr = np.divide(tp, n_in, out=np.full(n_in.shape, np.nan), where=n_in > 0)
    fpr = np.divide(fp, n_out, out=np.full(n_out.shape, np.nan), where=n_out > 0)
    return tpr, fpr


# --------------------------------------------------------------------------------------------------
# the low-FPR end without the full ROC: one sort of the non-members' values
# --------------------------------------------------------------------------------------------------

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
        s = as_scores(scores, "scores")
        y = as_bool(labels, "labels")
        check_same_shape(s, y, "scores", "labels")
        self.scores, self.labels = s.reshape(-1), y.reshape(-1)
        if self.scores.size == 0:
            raise DataError("scores and labels are empty; the ROC needs at least one member and one non-member")
        self.n_pos = int(np.count_nonzero(self.labels))
        self.n_neg = int(self.labels.size - self.n_pos)
        if self.n_pos == 0 or self.n_neg == 0:
            which = "members (True labels)" if self.n_pos == 0 else "non-members (False labels)"
            raise DataError(f"labels contain no {which}; the ROC needs both classes (got {self.labels.size} records)")
        self.negatives = self.scores[~self.labels]
        self.negatives.sort()

    @classmethod
    def with_sorted_negatives(cls, scores: np.ndarray, labels: np.ndarray, negatives: np.ndarray) -> PooledScores:
        """The same object from the non-members' scores already sorted (ascending) by the caller.

        Trusted, not checked: ``scores`` float64 and finite, ``labels`` bool of the same shape with both
        classes, ``negatives`` exactly ``sort(scores[~labels])`` (the evaluation gathers them block by
        block while it computes the scores, and so skips a pass over the whole matrix).
        """
        pooled = cls.__new__(cls)
        pooled.scores, pooled.labels = scores.reshape(-1), labels.reshape(-1)
        pooled.negatives = negatives
        pooled.n_neg = int(negatives.size)
        pooled.n_pos = int(pooled.labels.size - pooled.n_neg)
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
