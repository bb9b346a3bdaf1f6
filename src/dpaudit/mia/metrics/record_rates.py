"""Per-record TPR and FPR of one threshold rule over an (M models, N+ records) score matrix."""

from __future__ import annotations

import numpy as np

from dpaudit._errors import DataError
from dpaudit.mia.metrics._inputs import score_matrix

__all__ = ["per_record_rates"]


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
    s, k = score_matrix(score, keep)
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
