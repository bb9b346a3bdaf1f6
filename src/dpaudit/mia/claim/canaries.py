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
``"orthogonal"``
    m synthetic records along the directions in which the data vary least: the right singular vectors
    v_d, v_{d−1}, … of the data matrix X (n × d; singular values ascending, the null space of X first
    when n < d or a one-hot block leaves directions unused), each of norm 1, sign fixed so that its
    largest-magnitude coordinate is positive, all labelled 1; for d < m ≤ 2d the canaries m − d … are the
    antipodes −v of the first ones. A linear model's weight along a direction the data do not span
    (X v = 0) is moved only by the canaries on it, so a canary left out scores exactly the intercept
    while one trained on scores higher: a non-private logistic regression separates them perfectly (on
    Adult, 50–500 base rows and m = 100: ε ≥ 1.6 in one run; ``benchmarks/dp_audit_canaries.py``), where
    ``"mislabelled"`` and ``"ood"`` canaries give ≈ 0 — a linear model's total self-influence (leverage)
    is at most d, so it can single out at most about d canaries, and only those the data leave room
    for. The design reads the auditor's data (which the audit is not releasing); only the inclusion
    draws must be random. Within a repeated singular value (the null space) the basis is made canonical
    (:func:`canonical_basis`: Gram–Schmidt of the subspace's projector in coordinate order), so the
    canaries do not depend on which basis a BLAS build's SVD returns.
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

CANARY_KINDS = ("mislabelled", "ood", "vulnerable", "orthogonal")
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
    if kind == "orthogonal":
        return _orthogonal(X, m)
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


def _orthogonal(X: np.ndarray, m: int) -> Canaries:
    """The ``"orthogonal"`` canaries (module docstring): least-variance right singular vectors, then antipodes."""
    n, d = X.shape
    if d < 1 or m > 2 * d:
        raise DataError(f"{m} orthogonal canaries need at least {(m + 1) // 2} feature columns (one direction per "
                        f"canary, then its antipode), the data have {d}; use m ≤ {2 * d}")
    if n:
        sv, vt = np.linalg.svd(X, full_matrices=n < d)[1:]
        sv = np.concatenate([sv, np.zeros(d - sv.size)])
    else:
        sv, vt = np.zeros(d), np.eye(d)
    V = canonical_basis(sv[::-1], vt[::-1])  # least variance first (null space first)
    V = V * np.where(V[np.arange(d), np.abs(V).argmax(axis=1)] < 0, -1.0, 1.0)[:, None]
    V /= np.maximum(np.linalg.norm(V, axis=1), 1.0)[:, None]
    Z = np.vstack([V, -V])[:m] if m > d else V[:m].copy()
    return Canaries(Z, np.ones(m, dtype=np.int64), "orthogonal",
                    f"{m} unit records along the data's {min(m, d)} least-variance directions, labelled 1", None)


#: Singular values within this (relative to the largest, absolute below it) count as one repeated value.
SAME_SINGULAR_VALUE = 1e-9
#: A projected unit vector shorter than this is not taken as a new basis vector of a repeated value's space.
BASIS_RESIDUAL = 1e-3


def canonical_basis(sv: np.ndarray, V: np.ndarray) -> np.ndarray:
    """The rows of ``V`` (right singular vectors, in the order of ``sv``) with each repeated singular value's
    basis replaced by one that depends only on its subspace, not on LAPACK's choice within it.

    Within a run of equal singular values (the null space above all) any orthonormal basis is a valid
    output of the SVD, and BLAS builds differ in which they return. The subspace itself is determined:
    its projector P = BᵀB. The basis taken is Gram–Schmidt on P e₁, P e₂, … in coordinate order, keeping a
    vector when its residual is ≥ :data:`BASIS_RESIDUAL` — the same on every machine up to rounding.
    """
    d = V.shape[1]
    tol = SAME_SINGULAR_VALUE * max(float(sv.max(initial=0.0)), 1.0)
    out = V.copy()
    start = 0
    while start < len(sv):
        stop = start + 1
        while stop < len(sv) and abs(sv[stop] - sv[start]) <= tol:
            stop += 1
        if stop - start > 1:
            B = V[start:stop]
            P = B.T @ B
            chosen: list[np.ndarray] = []
            for j in range(d):
                r = P[:, j].copy()
                for q in chosen:
                    r -= (q @ r) * q
                norm = float(np.linalg.norm(r))
                if norm >= BASIS_RESIDUAL:
                    chosen.append(r / norm)
                    if len(chosen) == stop - start:
                        break
            out[start:start + len(chosen)] = chosen
        start = stop
    return out


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
