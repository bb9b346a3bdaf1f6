"""The canaries of a DP audit: which records are planted, and which of them the model is trained on.

A one-run audit (Steinke, Nasr & Jagielski, *Privacy Auditing with One (1) Training Run*, NeurIPS 2023,
§3) plants m canaries, includes each in the training data independently with probability ½
(:func:`include`), and counts how many an attacker guesses right from the trained model's scores. The
bound is valid whatever the canaries are; how tight it gets depends on how much each canary moves the
model, so the canaries are chosen to stand out (:func:`choose_canaries`):

``"mislabelled"``
    m records of the data drawn without replacement (seeded), their label flipped (y ↦ 1 − y): the
    model fits them only when they are trained on.
``"ood"``
    m synthetic records outside the data's distribution: directions uniform on the unit sphere of the
    feature space (a standard normal vector divided by its L2 norm, so every row has norm exactly 1,
    within the learners' row-norm ≤ 1 bound) with labels drawn Bernoulli(½). The data's rows are
    non-negative (one-hot and min–max scaled columns), so such a row, with about half its coordinates
    negative, is far from every record.
``"vulnerable"``
    the m records with the highest ``vulnerability`` score of an earlier evaluation (a per-record array
    such as the per-record TPR or the LiRA score; ties broken by row order), labels kept.

Features are in the learners' space (rows of L2 norm ≤ 1, see :mod:`dpaudit.mia.claim.learners`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpaudit._errors import DataError

__all__ = ["CANARY_KINDS", "Canaries", "choose_canaries", "include"]

CANARY_KINDS = ("mislabelled", "ood", "vulnerable")
#: Rows of norm up to 1 + this are accepted (float rounding of the preprocessing's division by √d).
NORM_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Canaries:
    """The m canary records, in the learners' feature space.

    Attributes
    ----------
    X : ndarray of float64, shape (m, d)
    y : ndarray of int64, shape (m,)
    kind : str
        One of :data:`CANARY_KINDS`.
    description : str
        One line for reports.
    source_rows : ndarray of int64 or None
        The rows of the data each canary was made from (None for the synthetic ``"ood"`` ones).
    """

    X: np.ndarray
    y: np.ndarray
    kind: str
    description: str
    source_rows: np.ndarray | None


def _rng(seed: int | None, stream: int) -> np.random.Generator:
    """An independent stream per use, so the canaries and their inclusion never share draws."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(27, stream)))


def _check_data(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise DataError(f"canaries need features (n, d) and labels (n,), got {X.shape} and {y.shape}")
    if not np.isin(y, (0, 1)).all():
        raise DataError("canaries need labels 0/1")
    if X.size and not np.all(np.isfinite(X)):
        raise DataError("canaries need finite features")
    norm = float(np.linalg.norm(X, axis=1).max()) if X.size else 0.0
    if norm > 1.0 + NORM_TOLERANCE:
        raise DataError(f"canaries need rows of L2 norm ≤ 1 (the learners' feature space), the largest is {norm:.6g}")
    return X, y.astype(np.int64)


def choose_canaries(X: np.ndarray, y: np.ndarray, kind: str, m: int, *, seed: int | None,
                    vulnerability: np.ndarray | None = None) -> Canaries:
    """m canaries of ``kind`` (see the module docstring for each construction), deterministic given ``seed``.

    Raises
    ------
    DataError
        An unknown kind, m < 1 or more canaries than records (for the kinds made from the data), rows of
        norm > 1, labels not 0/1, or ``"vulnerable"`` without a per-record ``vulnerability``.
    """
    X, y = _check_data(X, y)
    n, d = X.shape
    if kind not in CANARY_KINDS:
        raise DataError(f"canary kind must be one of {', '.join(CANARY_KINDS)}, got {kind!r}")
    if not isinstance(m, int | np.integer) or m < 1:
        raise DataError(f"the number of canaries must be a positive integer, got {m!r}")
    m = int(m)
    if kind != "ood" and m > n:
        raise DataError(f"{m} {kind} canaries need at least {m} records, the data have {n}")
    rng = _rng(seed, 0)
    if kind == "mislabelled":
        rows = np.sort(rng.choice(n, size=m, replace=False))
        return Canaries(X[rows].copy(), 1 - y[rows], kind, f"{m} records of the data with their label flipped", rows)
    if kind == "ood":
        if d < 1:
            raise DataError("out-of-distribution canaries need at least one feature column")
        Z = rng.standard_normal((m, d))
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        labels = rng.integers(0, 2, size=m).astype(np.int64)
        return Canaries(Z, labels, kind, f"{m} random unit-norm directions with random labels", None)
    if vulnerability is None:
        raise DataError("'vulnerable' canaries need the per-record vulnerability scores of an earlier evaluation "
                        "(vulnerability=, e.g. the per-record TPR or LiRA score of every row)")
    v = np.asarray(vulnerability, dtype=np.float64)
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise DataError(f"vulnerability must hold one finite score per record ({n}), got shape {v.shape}")
    rows = np.sort(np.argsort(-v, kind="stable")[:m])
    return Canaries(X[rows].copy(), y[rows].copy(), kind, f"the {m} records most vulnerable in an earlier evaluation",
                    rows)


def include(m: int, *, seed: int | None) -> np.ndarray:
    """Which of the m canaries are trained on: each independently with probability ½ (seeded).

    Examples
    --------
    >>> include(8, seed=1).tolist() == include(8, seed=1).tolist()
    True
    """
    if not isinstance(m, int | np.integer) or m < 0:
        raise DataError(f"the number of canaries must be a non-negative integer, got {m!r}")
    return _rng(seed, 1).random(int(m)) < 0.5
