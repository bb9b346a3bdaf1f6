"""Input checks shared by the metrics (scores, labels, counts, levels) and numpy's scalar convention."""

from __future__ import annotations

import numpy as np

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import number_array, unit_interval

__all__ = ["as_scores", "as_bool", "check_same_shape", "pooled_classes", "score_matrix", "check_level", "check_counts",
           "scalar_or_array", "DEFAULT_LEVEL"]

#: Level of every interval and ε bound unless the caller asks for another.
DEFAULT_LEVEL = 0.95


def as_scores(scores: object, name: str) -> np.ndarray:
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


def as_bool(labels: object, name: str) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind in "iuf" and np.isin(arr, (0, 1)).all():  # 0/1 codes are unambiguous
        return arr.astype(bool)
    raise DataError(f"{name} must be boolean (True = member) or 0/1, got dtype {arr.dtype} with other values")


def check_same_shape(a: np.ndarray, b: np.ndarray, na: str, nb: str) -> None:
    if a.shape != b.shape:
        raise DataError(f"{na} has shape {a.shape} but {nb} has shape {b.shape}; they must match element for element")


def pooled_classes(scores: object, labels: object) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Pooled scores and labels of an ROC, flat (views when contiguous), with members and non-members counted.

    Raises DataError for inputs :func:`as_scores`/:func:`as_bool` reject, shapes that differ, empty
    input, or labels without a member or without a non-member.
    """
    s = as_scores(scores, "scores")
    y = as_bool(labels, "labels")
    check_same_shape(s, y, "scores", "labels")
    s, y = s.reshape(-1), y.reshape(-1)
    if s.size == 0:
        raise DataError("scores and labels are empty; the ROC needs at least one member and one non-member")
    n_pos = int(np.count_nonzero(y))
    n_neg = int(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        which = "members (True labels)" if n_pos == 0 else "non-members (False labels)"
        raise DataError(f"labels contain no {which}; the ROC needs both classes (got {y.size} records)")
    return s, y, n_pos, n_neg


def score_matrix(score: object, keep: object) -> tuple[np.ndarray, np.ndarray]:
    """A non-empty (M models, N+ records) score matrix and its boolean keep matrix of the same shape."""
    s = as_scores(score, "score")
    k = as_bool(keep, "keep")
    check_same_shape(s, k, "score", "keep")
    if s.ndim != 2 or s.size == 0:
        raise DataError(f"score must be a non-empty (M models, N+ records) matrix, got shape {s.shape}")
    return s, k


def check_level(level: float) -> float:
    return unit_interval("level", level, f" (e.g. {DEFAULT_LEVEL:g})")


def check_counts(k: object, n: object, kname: str, nname: str) -> tuple[np.ndarray, np.ndarray]:
    """Successes ``k`` among ``n`` trials as int64 arrays of one shape: whole numbers, n ≥ 1, 0 ≤ k ≤ n."""
    k_arr = number_array(kname, k, integer=True, low=0).astype(np.int64)
    n_arr = number_array(nname, n, integer=True, low=1).astype(np.int64)
    k_arr, n_arr = np.broadcast_arrays(k_arr, n_arr)
    if (k_arr > n_arr).any():
        raise DPAuditError(f"{kname} must be at most {nname} (successes among trials), got {kname}={k_arr!r}, "
                           f"{nname}={n_arr!r}")
    return k_arr, n_arr


def scalar_or_array(arr: np.ndarray) -> float | np.ndarray:
    """A Python float for 0-d results (numpy's scalar-in, scalar-out convention), else the array."""
    arr = np.asarray(arr)
    return float(arr) if arr.ndim == 0 else arr
