"""Exact ROC, TPR at a fixed FPR, confidence intervals and the DP-audit view (spec ``mia.md`` §3, §4).

One kernel, many views: :func:`roc_curve` sorts the scores once and keeps one point per distinct
score; every operating point (TPR at FPR α, the rates at a fixed threshold, the AUC) is read from it.

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
- Uncertainty: Clopper–Pearson on counts is valid only for **independent Bernoulli trials at a
  threshold fixed before seeing the data** (e.g. the analytic PP threshold Φ⁻¹(1 − α)). When the
  threshold is chosen on the same data (TPR at the empirical FPR α) or the trials are dependent
  (concatenated scores share models and records), use :func:`bootstrap_ci` over models and records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpaudit._errors import DataError, DPAuditError
from dpaudit.mia._checks import open_unit

__all__ = [
    "Roc",
    "RocPoint",
    "BootstrapCI",
    "EpsilonBound",
    "roc_curve",
    "point_at_fpr",
    "point_at_threshold",
    "tpr_at_fpr",
    "auc",
    "rates_at_threshold",
    "per_record_rates",
    "clopper_pearson",
    "bootstrap_ci",
    "epsilon_lower_bound",
    "epsilon_lower_bound_ci",
]

_AXES = ("models", "records")


# --------------------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------------------


def _as_scores(scores: object, name: str) -> np.ndarray:
    try:
        arr = np.asarray(scores, dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"{name} must be an array of real numbers, got {type(scores).__name__}") from None
    bad = ~np.isfinite(arr)
    if bad.any():
        raise DataError(
            f"{name} must be finite: {int(bad.sum())} of {arr.size} values are NaN or infinite "
            f"(first at flat index {int(np.flatnonzero(bad)[0])}); drop or impute them before the ROC"
        )
    return arr


def _as_bool(labels: object, name: str) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind in "iuf" and np.isin(arr, (0, 1)).all():  # 0/1 codes are unambiguous
        return arr.astype(bool)
    raise DataError(f"{name} must be boolean (True = member) or 0/1, got dtype {arr.dtype} with other values")


def _check_same_shape(a: np.ndarray, b: np.ndarray, na: str, nb: str) -> None:
    if a.shape != b.shape:
        raise DataError(f"{na} has shape {a.shape} but {nb} has shape {b.shape}; they must match element for element")


def _check_level(level: float) -> float:
    return open_unit("level", level, " (e.g. 0.95)")


def _check_counts(k: object, n: object, kname: str, nname: str) -> tuple[np.ndarray, np.ndarray]:
    k_arr, n_arr = np.asarray(k), np.asarray(n)
    for arr, name in ((k_arr, kname), (n_arr, nname)):
        if arr.dtype.kind not in "iuf" or (arr.dtype.kind == "f" and not np.all(arr == np.round(arr))):
            raise DPAuditError(f"{name} must be whole numbers (counts), got {arr!r}")
    k_arr, n_arr = np.broadcast_arrays(k_arr.astype(np.int64), n_arr.astype(np.int64))
    if (n_arr < 1).any():
        raise DPAuditError(f"{nname} must be at least 1 trial, got {n_arr.min()}")
    if ((k_arr < 0) | (k_arr > n_arr)).any():
        raise DPAuditError(f"{kname} must satisfy 0 <= {kname} <= {nname}, got {kname}={k_arr!r}, {nname}={n_arr!r}")
    return k_arr, n_arr


def _out(arr: np.ndarray) -> float | np.ndarray:
    """A Python float for 0-d results (numpy's scalar-in, scalar-out convention), else the array."""
    arr = np.asarray(arr)
    return float(arr) if arr.ndim == 0 else arr


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(arr)
    arr.setflags(write=False)
    return arr


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
    s = _as_scores(scores, "scores")
    y = _as_bool(labels, "labels")
    _check_same_shape(s, y, "scores", "labels")
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
        fpr=_frozen(fp / n_neg),
        tpr=_frozen(tp / n_pos),
        thresholds=_frozen(thresholds),
        n_pos=n_pos,
        n_neg=n_neg,
        tp=_frozen(tp),
        fp=_frozen(fp),
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
        def plain(v: object) -> object:
            return np.asarray(v).tolist()

        return {
            "tpr": plain(self.tpr),
            "fpr": plain(self.fpr),
            "threshold": plain(self.threshold),
            "tp": plain(self.tp),
            "fp": plain(self.fp),
            "n_pos": self.n_pos,
            "n_neg": self.n_neg,
        }


def _point(roc: Roc, idx: np.ndarray) -> RocPoint:
    def pick(values: np.ndarray, cast: type) -> object:
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
    s = _as_scores(score, "score")
    k = _as_bool(keep, "keep")
    _check_same_shape(s, k, "score", "keep")
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
# uncertainty
# --------------------------------------------------------------------------------------------------


def clopper_pearson(k: object, n: object, *, level: float = 0.95) -> tuple[float | np.ndarray, float | np.ndarray]:
    """Exact two-sided Clopper–Pearson interval for a binomial proportion k/n; vectorised.

    ``lower = Beta⁻¹(a/2; k, n − k + 1)``, ``upper = Beta⁻¹(1 − a/2; k + 1, n − k)`` with
    ``a = 1 − level``; ``lower = 0`` when k = 0 and ``upper = 1`` when k = n (Clopper & Pearson,
    Biometrika 1934). Coverage is at least ``level`` for every true proportion, and each one-sided
    bound alone fails with probability at most ``a/2``.

    Valid for k successes in n **independent** Bernoulli trials with a common probability, counted
    at a threshold **fixed independently of these data** (an analytic threshold, or one chosen on a
    held-out split). Not valid for a threshold chosen on the same data (the empirical "FPR = α"
    point) nor for concatenated scores that share models and records: use :func:`bootstrap_ci`.

    Parameters
    ----------
    k : int or array_like of int
        Successes, ``0 <= k <= n``.
    n : int or array_like of int
        Trials, ``n >= 1``. Broadcast against ``k``.
    level : float, default 0.95
        Two-sided confidence level.

    Returns
    -------
    lower, upper : float or ndarray
        Floats for scalar inputs, else arrays of the broadcast shape.

    Examples
    --------
    >>> lo, hi = clopper_pearson(0, 10)
    >>> lo, round(hi, 6), round(1 - 0.025 ** (1 / 10), 6)
    (0.0, 0.308497, 0.308497)
    """
    level = _check_level(level)
    k_arr, n_arr = _check_counts(k, n, "k", "n")
    a = 1.0 - level
    # Beta(0, ·) and Beta(·, 0) are degenerate: keep scipy's parameters valid and set the edges exactly.
    lower = stats.beta.ppf(a / 2, np.maximum(k_arr, 1), n_arr - k_arr + 1)
    upper = stats.beta.ppf(1 - a / 2, k_arr + 1, np.maximum(n_arr - k_arr, 1))
    lower = np.where(k_arr == 0, 0.0, lower)
    upper = np.where(k_arr == n_arr, 1.0, upper)
    return _out(lower), _out(upper)


@dataclass(frozen=True, eq=False)
class BootstrapCI:
    """A percentile bootstrap interval.

    Attributes
    ----------
    estimate : float or ndarray
        ``stat_fn`` on the original data.
    lower, upper : float or ndarray
        Percentiles ``(1 − level)/2`` and ``(1 + level)/2`` of the replicates (NaN if any replicate
        is NaN: the statistic was undefined on some resample).
    level : float
    n_boot : int
    over : tuple of str
        Resampled axes ("models", "records").
    replicates : ndarray, shape (n_boot, *estimate.shape)
    """

    estimate: float | np.ndarray
    lower: float | np.ndarray
    upper: float | np.ndarray
    level: float
    n_boot: int
    over: tuple[str, ...]
    replicates: np.ndarray

    def __str__(self) -> str:
        return (
            f"{self.estimate} ({self.level:.0%} percentile bootstrap CI [{self.lower}, {self.upper}], "
            f"{self.n_boot} resamples over {' and '.join(self.over)})"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "estimate": np.asarray(self.estimate).tolist(),
            "lower": np.asarray(self.lower).tolist(),
            "upper": np.asarray(self.upper).tolist(),
            "level": self.level,
            "n_boot": self.n_boot,
            "over": list(self.over),
            "method": "percentile bootstrap",
        }


def bootstrap_ci(
    stat_fn: Callable[[np.ndarray, np.ndarray], object],
    score: object,
    keep: object,
    *,
    n_boot: int = 200,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    over: str | Sequence[str] = ("models", "records"),
) -> BootstrapCI:
    """Percentile bootstrap CI of ``stat_fn(score, keep)``, resampling models and/or records.

    Each replicate draws model rows and/or record columns with replacement (the same draw for
    ``score`` and ``keep``), and recomputes ``stat_fn`` on the resampled matrices. Resampling both axes
    at once is the "pigeonhole" bootstrap for crossed designs (Owen, Ann. Appl. Stat. 2007), which is
    conservative: it accounts for the dependence of concatenated scores that share a model or a record.
    This is the interval to report for TPR at an empirical FPR α (threshold chosen on the data),
    where :func:`clopper_pearson` is invalid (spec §4).

    Parameters
    ----------
    stat_fn : callable ``(score_b, keep_b) -> float or array``
        The statistic, e.g. ``lambda s, k: tpr_at_fpr(roc_curve(s, k), [1e-2, 1e-3])``. Its output
        shape must not depend on the resample. It receives already computed statistics: if it refits
        LiRA with leave-one-out shadows, a duplicated model row would be its own shadow.
    score : array_like of float, shape (M, N+)
    keep : array_like of bool, shape (M, N+)
    n_boot : int, default 200
        Resamples (at least 2). Percentiles far in the tails need more.
    level : float, default 0.95
    seed : int, numpy Generator or None, default 0
        Reproducible by default.
    over : "models", "records" or both, default both

    Returns
    -------
    BootstrapCI

    Notes
    -----
    Which axes: resampling only models treats the records as fixed (in a simulation with a random
    record effect, a nominal 95% interval over models alone covered the population TPR about 83% of
    the time; over records 95%; over both 99%). Resample both unless the records are the population.

    Memory: one resampled copy of the matrices exists at a time (plus the small index arrays for all
    replicates, drawn at once), so peak memory is about twice the input, whatever ``n_boot``.
    Errors raised by ``stat_fn`` on a resample (e.g. no member left) propagate.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> keep = rng.random((8, 50)) < 0.5
    >>> score = rng.normal(size=(8, 50)) + keep
    >>> ci = bootstrap_ci(lambda s, k: auc(roc_curve(s, k)), score, keep, n_boot=50)
    >>> bool(ci.lower <= ci.estimate <= ci.upper)
    True
    """
    if not callable(stat_fn):
        raise DPAuditError(f"stat_fn must be a function (score, keep) -> statistic, got {type(stat_fn).__name__}")
    s = _as_scores(score, "score")
    k = _as_bool(keep, "keep")
    _check_same_shape(s, k, "score", "keep")
    if s.ndim != 2 or s.size == 0:
        raise DataError(f"score must be a non-empty (M models, N+ records) matrix, got shape {s.shape}")
    level = _check_level(level)
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 2:
        raise DPAuditError(f"n_boot must be an integer >= 2 (e.g. 200), got {n_boot!r}")
    axes = (over,) if isinstance(over, str) else tuple(over)
    if not axes or any(ax not in _AXES for ax in axes) or len(set(axes)) != len(axes):
        raise DPAuditError(f"over must name 'models', 'records' or both, got {over!r}")
    axes = tuple(ax for ax in _AXES if ax in axes)

    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    m, n = s.shape
    rows = rng.integers(0, m, size=(n_boot, m)) if "models" in axes else None
    cols = rng.integers(0, n, size=(n_boot, n)) if "records" in axes else None

    estimate = np.asarray(stat_fn(s, k), dtype=float)
    reps = np.empty((n_boot, *estimate.shape))
    for b in range(n_boot):
        r = rows[b] if rows is not None else slice(None)
        c = cols[b] if cols is not None else slice(None)
        if rows is not None and cols is not None:
            idx: tuple = np.ix_(r, c)
        else:
            idx = (r, c)
        value = np.asarray(stat_fn(s[idx], k[idx]), dtype=float)
        if value.shape != estimate.shape:
            raise DPAuditError(
                f"stat_fn returned shape {value.shape} on a resample but {estimate.shape} on the data; "
                "it must return the same shape every time"
            )
        reps[b] = value
    a = 1.0 - level
    if np.isnan(reps).any():
        lo = hi = np.full(estimate.shape, np.nan)
    else:
        lo, hi = np.quantile(reps, [a / 2, 1 - a / 2], axis=0)
    reps.setflags(write=False)
    return BootstrapCI(
        estimate=_out(estimate),
        lower=_out(lo),
        upper=_out(hi),
        level=level,
        n_boot=int(n_boot),
        over=axes,
        replicates=reps,
    )


# --------------------------------------------------------------------------------------------------
# DP-audit view
# --------------------------------------------------------------------------------------------------


def _check_rate(x: object, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise DPAuditError(f"{name} must be a rate in [0, 1], got {x!r}") from None
    if np.isnan(arr).any() or (arr < 0).any() or (arr > 1).any():
        raise DPAuditError(f"{name} must be a rate in [0, 1], got {x!r}")
    return arr


def _check_delta(delta: object) -> float:
    try:
        d = float(delta)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise DPAuditError(f"delta must be a number in [0, 1), got {delta!r}") from None
    if not 0.0 <= d < 1.0:
        raise DPAuditError(f"delta must be in [0, 1) (usually well below 1/n), got {delta!r}")
    return d


def epsilon_lower_bound(tpr: object, fpr: object, *, delta: float = 0.0) -> float | np.ndarray:
    """ε lower bound implied by one operating point: ε ≥ ln((TPR − δ) / FPR).

    An (ε, δ)-DP mechanism makes every membership test satisfy ``TPR ≤ e^ε · FPR + δ`` (the
    hypothesis-testing view of DP; Kairouz, Oh & Viswanath, ICML 2015), so an observed (TPR, FPR)
    rules out every smaller ε. Vectorised (broadcast) over ``tpr`` and ``fpr``.

    Conventions:

    - ``0`` when ``TPR − δ ≤ FPR``: the point is no evidence of leakage (ε ≥ 0 holds anyway), which
      also covers FPR = TPR − δ = 0 (no NaN is returned).
    - ``+inf`` when ``FPR = 0 < TPR − δ``: no finite ε explains the point estimate. Point estimates
      at FPR = 0 are common with few trials, which is why :func:`epsilon_lower_bound_ci` is the number
      to report.

    The symmetric bound ``ln((1 − δ − FPR) / (1 − TPR))`` (Jagielski et al. 2020) is the same formula
    applied to the complementary test: call ``epsilon_lower_bound(1 - fpr, 1 - tpr, delta=delta)``.

    Examples
    --------
    >>> round(epsilon_lower_bound(0.5, 0.05), 6), round(float(np.log(10)), 6)
    (2.302585, 2.302585)
    >>> epsilon_lower_bound([0.1, 0.3, 0.2], [0.2, 0.0, 0.0], delta=0.2)
    array([ 0., inf,  0.])
    """
    d = _check_delta(delta)
    t = _check_rate(tpr, "tpr")
    f = _check_rate(fpr, "fpr")
    t, f = np.broadcast_arrays(t, f)
    excess = t - d
    informative = excess > f  # implies excess > 0
    finite = informative & (f > 0)
    eps = np.zeros(t.shape)
    eps[finite] = np.log(excess[finite] / f[finite])
    eps[informative & (f == 0)] = np.inf
    return _out(eps)


@dataclass(frozen=True, eq=False)
class EpsilonBound:
    """A conservative ε lower bound from counts, with its ingredients.

    Attributes
    ----------
    epsilon : float or ndarray
        ``ln((TPR_lower − δ) / FPR_upper)``: holds with probability ≥ ``level`` (see
        :func:`epsilon_lower_bound_ci`).
    point : float or ndarray
        The same formula on the point estimates k/n (may be inf).
    tpr_lower, fpr_upper : float or ndarray
        Clopper–Pearson lower bound of TPR and upper bound of FPR.
    level, delta : float
    """

    epsilon: float | np.ndarray
    point: float | np.ndarray
    tpr_lower: float | np.ndarray
    fpr_upper: float | np.ndarray
    level: float
    delta: float

    def __str__(self) -> str:
        return (
            f"epsilon >= {self.epsilon} with confidence {self.level:.0%} (delta={self.delta:g}; "
            f"TPR >= {self.tpr_lower}, FPR <= {self.fpr_upper}, Clopper-Pearson); point estimate {self.point}"
        )

    def to_dict(self) -> dict[str, object]:
        def plain(v: object) -> object:
            out = np.asarray(v).tolist()
            return out

        return {
            "epsilon": plain(self.epsilon),
            "point": plain(self.point),
            "tpr_lower": plain(self.tpr_lower),
            "fpr_upper": plain(self.fpr_upper),
            "level": self.level,
            "delta": self.delta,
            "method": "Clopper-Pearson (Jagielski et al. 2020; Nasr et al. 2021)",
        }


def epsilon_lower_bound_ci(
    k_tp: object,
    n_pos: object,
    k_fp: object,
    n_neg: object,
    *,
    delta: float = 0.0,
    level: float = 0.95,
) -> EpsilonBound:
    """Conservative ε lower bound from true/false-positive counts (Clopper–Pearson).

    ``ε_LB = ln((TPR_lo − δ) / FPR_hi)`` where ``TPR_lo`` is the lower end of the two-sided
    Clopper–Pearson interval of ``k_tp / n_pos`` and ``FPR_hi`` the upper end of that of
    ``k_fp / n_neg``, both at ``level``; conventions of :func:`epsilon_lower_bound` (0 when
    uninformative, inf only if FPR_hi = 0, which never happens since n_neg is finite). This is the
    audit recipe of Jagielski, Ullman & Oprea (NeurIPS 2020, "Auditing differentially private machine
    learning: how private is private SGD?", Alg. 2) and Nasr, Song, Thakurta, Papernot & Carlini
    (IEEE S&P 2021, "Adversary instantiation: lower bounds for differentially private machine
    learning").

    Guarantee: each one-sided end fails with probability ≤ (1 − level)/2, so by the union bound both
    hold, and the mechanism is **not** (ε, δ)-DP for any ε < ``epsilon``, with probability ≥ ``level``.
    It requires what Clopper–Pearson requires: independent trials (in a DP audit, one trained model
    per trial, the target record IN or OUT) and a threshold fixed before these counts were seen
    (chosen on a separate split). Counts pooled over the records of efficient LiRA are dependent,
    and the guarantee is about one record's privacy only if every trial tests the same record.

    Parameters
    ----------
    k_tp, n_pos : int or array_like of int
        True positives among ``n_pos`` member trials.
    k_fp, n_neg : int or array_like of int
        False positives among ``n_neg`` non-member trials.
    delta : float, default 0.0
    level : float, default 0.95

    Returns
    -------
    EpsilonBound

    Examples
    --------
    >>> b = epsilon_lower_bound_ci(500, 1000, 0, 1000)
    >>> b.point, round(b.epsilon, 3)
    (inf, 4.846)
    """
    level = _check_level(level)
    d = _check_delta(delta)
    k_tp_a, n_pos_a = _check_counts(k_tp, n_pos, "k_tp", "n_pos")
    k_fp_a, n_neg_a = _check_counts(k_fp, n_neg, "k_fp", "n_neg")
    tpr_lo, _ = clopper_pearson(k_tp_a, n_pos_a, level=level)
    _, fpr_hi = clopper_pearson(k_fp_a, n_neg_a, level=level)
    return EpsilonBound(
        epsilon=epsilon_lower_bound(tpr_lo, fpr_hi, delta=d),
        point=epsilon_lower_bound(k_tp_a / n_pos_a, k_fp_a / n_neg_a, delta=d),
        tpr_lower=tpr_lo,
        fpr_upper=fpr_hi,
        level=level,
        delta=d,
    )
