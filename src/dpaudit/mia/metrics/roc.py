"""The exact ROC and every operating point read from it (spec ``mia.md`` §3, §4).

One kernel, many views: :func:`roc_curve` sorts the scores once and keeps one point per distinct
score; every operating point (TPR at FPR α, the rates at a fixed threshold, the AUC) is read from it.
The same numbers without the full ROC (:class:`~dpaudit.mia.metrics.pooled.PooledScores`,
:func:`~dpaudit.mia.metrics.pooled.mann_whitney_auc`) and the per-record rates of a rule
(:func:`~dpaudit.mia.metrics.record_rates.per_record_rates`) live next door and are re-exported here.

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
from dpaudit._errors import DPAuditError
from dpaudit._validation import number_array
from dpaudit.mia.metrics._inputs import pooled_classes
from dpaudit.mia.metrics.pooled import PooledScores, mann_whitney_auc
from dpaudit.mia.metrics.record_rates import per_record_rates

__all__ = ["Roc", "RocPoint", "roc_curve", "point_at_fpr", "point_at_threshold", "tpr_at_fpr", "auc",
           "rates_at_threshold", "per_record_rates", "PooledScores", "mann_whitney_auc", "FPR_HINT"]

#: What ``alpha`` is (the ``hint`` of its message).
FPR_HINT = " (a false-positive rate)"


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
    s, y, n_pos, n_neg = pooled_classes(scores, labels)

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
    a = number_array("alpha", alpha, low=0.0, high=1.0, hint=FPR_HINT)
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
