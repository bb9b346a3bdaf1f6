"""The checks of a ScoreSet's parts (:class:`dpaudit.mia.scores.ScoreSet`): scores, membership, sizes,
identifiers and metadata, each refused with a :class:`~dpaudit.DataError` naming the first problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dpaudit._errors import DataError, DPAuditError
from dpaudit._io import to_jsonable
from dpaudit._validation import whole_number

__all__ = ["MIN_FIT_MODELS", "MAX_ABS_SCORE", "TRAIN_SIZE_HINT", "max_abs_score", "check_train_size",
           "check_score_keep", "check_record_ids"]

#: Fewest models in any leave-one-out Gaussian fit (IN or OUT): a sample sd with ddof = 1 needs 2.
MIN_FIT_MODELS = 2


#: The largest score magnitude accepted (:func:`max_abs_score`).
MAX_ABS_SCORE = 1e75


def max_abs_score(n_models: int) -> float:
    """The largest score magnitude A the evaluation's arithmetic takes with M models:
    ``min(MAX_ABS_SCORE, (F / (16 M))^(1/4))``, F = 1.8e308 the largest float64.

    The largest numbers the evaluation forms are fourth powers: the Jarque–Bera check of the OUT
    scores sums ``d⁴`` over up to M models, and divides by the squared variance ``m2²``, where every
    deviation from a group mean is ``|d| ≤ 2A``; so ``Σ d⁴ ≤ 16 M A⁴ ≤ F``. Everything else stays
    smaller: LiRA's ``(s − μ)² / σ²`` with σ floored at 1e-30 is at most ``4A² · 1e60``. A = 1e75
    holds for every M up to 1.1e7.

    Examples
    --------
    >>> max_abs_score(64), f"{max_abs_score(10**9):.3g}"
    (1e+75, '3.26e+74')
    """
    return min(MAX_ABS_SCORE, (np.finfo(np.float64).max / (16 * max(n_models, 1))) ** 0.25)


#: Why a training set is smaller than the pool (the ``hint`` of the message of :func:`check_train_size`).
TRAIN_SIZE_HINT = " (smaller than pool_size)"


def check_train_size(train_size: Any, pool_size: int, *, error: type[DPAuditError] = DPAuditError) -> int:
    """N, each model's training-set size, as an int with ``0 < N < N+`` (``pool_size``, already validated).

    Examples
    --------
    >>> check_train_size(3, 6)
    3
    >>> check_train_size(6, 6)
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: train_size must be an integer >= 1 and <= 5 (smaller than pool_size), got 6
    """
    return whole_number("train_size", train_size, minimum=1, maximum=pool_size - 1, hint=TRAIN_SIZE_HINT, error=error)


#: The shape of a score and a keep matrix, as messages name it.
_SHAPE = "(n_models, n_records)"


def _array(name: str, value: Any, *, shape: str = _SHAPE) -> np.ndarray:
    """``value`` as a numpy array, ragged nested lists (rows of different lengths, or an object array
    of arrays) refused with a DataError naming ``name`` and the ``shape`` expected."""
    try:
        array = np.asarray(value)
    except (ValueError, TypeError, OverflowError):  # "inhomogeneous shape": rows of different lengths
        array = None
    if array is None or (array.dtype.kind == "O" and array.size
                         and any(isinstance(v, (list, tuple, np.ndarray)) for v in array.flat)):
        lengths = sorted({len(row) for row in value if hasattr(row, "__len__")}) if hasattr(value, "__iter__") else []
        found = f" (rows of {', '.join(map(str, lengths[:5]))} entries)" if len(lengths) > 1 else ""
        raise DataError(f"{name} is ragged{found}: it must be a rectangular array of shape {shape}, every row "
                        "the same length; pad or drop entries so that it is")
    return array


def _within(score: np.ndarray, limit: float) -> bool:
    """Whether every score is finite and of magnitude at most ``limit``: its least and greatest value
    are (NaN propagates through both, ±inf is one of them)."""
    low, high = float(score.min()), float(score.max())
    return -limit <= low and high <= limit


def _refuse_values(score: np.ndarray, limit: float) -> None:
    """The DataError naming the first non-finite score, else the first of magnitude above ``limit``."""
    finite = np.isfinite(score)
    if not finite.all():
        bad = np.argwhere(~finite)
        m, x = bad[0]
        raise DataError(
            f"score has {len(bad)} non-finite value(s) (NaN or ±inf); the first is {score[m, x]} at "
            f"model {m}, record {x}; repair the scores or drop those records"
        )
    huge = np.abs(score) > limit
    m, x = np.argwhere(huge)[0]
    raise DataError(
        f"score has {int(huge.sum())} value(s) of magnitude above {limit:.3g} (the first is {score[m, x]:g} at "
        f"model {m}, record {x}); their fourth powers overflow the normality check: rescale the scores"
    )


def check_score_keep(score: Any, keep: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate a score matrix and its keep matrix; return them as float64 and bool arrays.

    Checks, in order: both 2-D, equal shapes, all scores finite and within :func:`max_abs_score`, keep
    boolean (or integers 0/1), and the leave-one-out rule of the module docstring (``M ≥ 6``; every
    record IN in ≥ 3 and OUT in ≥ 3 models). Raises :class:`DataError` naming the first violation. No copy when the inputs already have
    the right dtypes.
    """
    score, keep = _array("score", score), _array("keep", keep)
    if np.iscomplexobj(score) or (score.dtype.kind == "O" and any(isinstance(v, complex) for v in score.flat)):
        raise DataError("score must be real numbers, got complex values; pass the real scores")
    if score.dtype.kind not in "biuf" or score.dtype.kind == "O":  # text, dates, objects: convert only objects
        try:
            if score.dtype.kind != "O":
                raise TypeError(score.dtype)
            score = score.astype(np.float64)
        except (TypeError, ValueError, OverflowError):
            raise DataError(f"score must be an array of real numbers of shape {_SHAPE}, got dtype {score.dtype}; "
                            "pass float scores") from None
    score = score.astype(np.float64, copy=False)
    for name, value in (("score", score), ("keep", keep)):
        if value.ndim != 2:
            raise DataError(f"{name} must be 2-D {_SHAPE}, got shape {value.shape}; pass one row per model and one "
                            "column per pool record")
    if score.shape != keep.shape:
        raise DataError(f"score and keep must have the same shape, got {score.shape} and {keep.shape}; both are "
                        f"{_SHAPE}, one row per model and one column per pool record")
    limit = max_abs_score(score.shape[0])
    if score.size and not _within(score, limit):  # two reductions, no matrix-sized temporary
        _refuse_values(score, limit)
    if keep.dtype != np.bool_:
        if keep.dtype.kind not in "iufO" or not np.isin(keep, (0, 1)).all():
            raise DataError(f"keep must be boolean (or integers 0/1), got dtype {keep.dtype} with other values")
        keep = keep.astype(bool)
    n_models = score.shape[0]
    least = MIN_FIT_MODELS + 1
    if n_models < 2 * least:
        raise DataError(
            f"score has {n_models} models; leave-one-out fits need every record IN in ≥ {least} and OUT in "
            f"≥ {least} models, so at least {2 * least} models"
        )
    n_in: np.ndarray = keep.sum(axis=0)
    short = np.flatnonzero((n_in < least) | (n_in > n_models - least))
    if short.size:
        x = short[0]
        raise DataError(
            f"record {x} is IN in {n_in[x]} of {n_models} models; leave-one-out needs every record IN in "
            f"≥ {least} and OUT in ≥ {least} models (≥ {MIN_FIT_MODELS} per fit besides the target); "
            f"{short.size} record(s) violate this: drop them or train more models"
        )
    return score, keep


def check_record_ids(ids: Any, pool_size: int) -> np.ndarray:
    """The records' identifiers as an int64 array of N+ distinct integers, else a DataError."""
    found = _array("record_ids", ids, shape=f"({pool_size:,},)")
    if found.shape != (pool_size,) or found.dtype.kind not in "iu":
        raise DataError(f"record_ids must be {pool_size:,} integers (one per pool record), got an array of dtype "
                        f"{found.dtype} and shape {found.shape}")
    found = found.astype(np.int64)
    if np.unique(found).size != found.size:
        raise DataError("record_ids must be distinct: each identifies one pool record")
    return found


def _check_meta(meta: Any) -> dict[str, Any]:
    if not isinstance(meta, Mapping):
        raise DataError(f"meta must be a mapping (dict) of JSON-serialisable values, got {type(meta).__name__}")
    try:
        # The round trip makes meta exactly what load() will return.
        return to_jsonable(dict(meta), nonfinite="error")
    except (TypeError, ValueError) as exc:
        raise DataError(f"meta must be JSON-serialisable (str keys; numbers, strings, lists, dicts): {exc}") from None
