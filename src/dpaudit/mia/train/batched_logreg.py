"""Fit many L2 logistic regressions on subsets of one pool at once (the fast path of ``mia train``).

Model ``m`` of an efficient-LiRA run trains scikit-learn's ``Pipeline(ColumnTransformer(OneHotEncoder,
StandardScaler), LogisticRegression(C))`` on its rows ``T_m`` (``keep[m]``); that is, it minimises
(sklearn's ``_logistic_regression_path``: mean loss + ‖w‖²/(2Cn), the same minimiser)

    Σ_{i∈T_m} log(1 + exp(−ỹ_i (w·s_m(x_i) + b))) + ‖w‖² / (2C),   ỹ_i = ±1,           (1)

where ``s_m`` one-hot encodes the categorical columns (categories seen in ``T_m``) and standardises
the numeric ones with ``T_m``'s mean and (population) standard deviation.

Reparametrisation
-----------------
Let ``x̃`` be one pool-wide design: one-hot over every category in the pool, numeric columns
standardised over the pool (for conditioning only). The model's standardisation is affine in each
column, ``s_m(x)_j = (x̃_j − a_mj) / σ_mj`` (``a = 0``, ``σ = 1`` on one-hot columns), so with
``u_j = w_j / σ_mj`` and ``c = b − Σ_j u_j a_mj`` the linear predictor is ``z = x̃·u + c`` and (1) is

    f_m(u, c) = Σ_{i∈T_m} log(1 + exp(−ỹ_i z_i)) + Σ_j σ_mj² u_j² / (2C),                 (2)

a bijective change of variables: same minimiser, same logit ``z`` of every pool record. One-hot
columns of categories absent from ``T_m`` get no loss gradient, so ``u_j = 0`` at the optimum — the
zero that ``handle_unknown="ignore"`` gives such records in the pipeline. (A numeric column that
is constant on ``T_m`` gets sklearn's scale 1; its ``u_j`` is 0 at the optimum either way.)

Solver
------
All ``B`` objectives (2) of a batch are minimised together. An iteration evaluates every loss and
gradient with two matrix products ``X̃ Θ`` and ``X̃ᵀ R`` (``n × d × B``) where the loop path makes
``B`` matrix–vector products, and each model runs its own L-BFGS (memory 10, its own Armijo
backtracking and stopping test) preconditioned by one shared matrix ``P``: the Hessian of the
*pool-average* objective ``½ Σ_pool loss + Σ_j u_j² / (2C)`` at its minimiser, which is also every
model's starting point (a model trains on a random half of the pool, so its objective is close to
this average). A model stops when its gradient's largest entry is ≤ ``gtol · |T_m|``, i.e. ``gtol``
on the mean-loss gradient that sklearn tests against ``tol = 1e-4``; the default ``gtol = 1e-8``
is far tighter, so the batched scores are *closer* to the exact minimiser than the loop's.

Each model's arithmetic depends only on its own column and on the batch it was solved in, so
fixed batches make a run reproducible bit for bit (:func:`dpaudit.mia.train.train_run` fixes them).

Examples
--------
>>> import pandas as pd
>>> frame = pd.DataFrame({"colour": ["red", "blue", "red", "green"] * 25, "size": np.arange(100.0)})
>>> y = (np.arange(100) % 3 == 0).astype(int)
>>> keep = np.random.default_rng(0).random((4, 100)) < 0.5
>>> fit = fit_pipelines(frame, y, keep, categorical=["colour"], numeric=["size"])
>>> fit.logits.shape, bool(fit.converged.all())
((4, 100), True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import expit

from dpaudit._errors import DataError

__all__ = ["BatchFit", "pool_design", "fit_logistic_batch", "fit_pipelines"]

_MEMORY = 10  # L-BFGS correction pairs kept per model
_ARMIJO = 1e-4  # sufficient-decrease constant
_MAX_HALVINGS = 40


@dataclass(frozen=True)
class BatchFit:
    """Result of :func:`fit_logistic_batch` / :func:`fit_pipelines`.

    Attributes
    ----------
    theta : ndarray, shape (d + 1, B)
        Coefficients ``u`` of the pool design, intercept ``c`` last, one column per model.
    n_iter : ndarray of int, shape (B,)
        L-BFGS iterations each model took.
    converged : ndarray of bool, shape (B,)
        The gradient test was met within ``max_iter`` (else the last iterate, as sklearn keeps it).
    logits : ndarray, shape (B, n) or None
        :func:`fit_pipelines` only: each model's logit ``z`` of every pool record.
    """

    theta: np.ndarray
    n_iter: np.ndarray
    converged: np.ndarray
    logits: np.ndarray | None = None


def pool_design(frame: Any, categorical: Sequence[str], numeric: Sequence[str]) -> tuple[np.ndarray, int]:
    """The pool-wide design ``[one-hot | standardised numeric | 1]`` and the number of one-hot columns.

    Categories are every value present in the pool (missing values are a category of their own, as
    in ``OneHotEncoder``); numeric columns are centred and scaled over the pool (a constant column is
    only centred). The last column is the intercept's column of ones.
    """
    import pandas as pd

    n = len(frame)
    blocks = []
    for col in categorical:
        codes, uniques = pd.factorize(frame[col], use_na_sentinel=False)
        onehot = np.zeros((n, len(uniques)))
        onehot[np.arange(n), codes] = 1.0
        blocks.append(onehot)
    n_onehot = sum(b.shape[1] for b in blocks)
    num = frame[list(numeric)].to_numpy(dtype=np.float64, copy=True) if numeric else np.empty((n, 0))
    if not np.isfinite(num).all():
        raise DataError("the numeric features hold missing or infinite values; logistic regression needs finite numbers")
    num -= num.mean(axis=0)
    sd = num.std(axis=0)
    num /= np.where(sd > 0, sd, 1.0)
    return np.ascontiguousarray(np.hstack([*blocks, num, np.ones((n, 1))])), n_onehot


def _objective(X: np.ndarray, sign: np.ndarray, weights: np.ndarray, penalty: np.ndarray,
               theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Objective (2) of every column and the residual ``∂/∂z`` (weights × (σ(z) − y)), shape (n, B)."""
    t = sign[:, None] * (X @ theta)  # ỹ z
    e = np.exp(-np.abs(t))
    loss = np.maximum(-t, 0.0) + np.log1p(e)  # log(1 + exp(−t)), stable
    f = (weights * loss).sum(axis=0) + 0.5 * (penalty * theta**2).sum(axis=0)
    p_wrong = np.where(t >= 0, e / (1.0 + e), 1.0 / (1.0 + e))  # σ(−t)
    return f, -(weights * p_wrong) * sign[:, None]


def _hessian(X: np.ndarray, sign: np.ndarray, weights: np.ndarray, penalty: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Hessian of one objective (2) (a single column of ``weights``/``penalty``/``theta``)."""
    p = expit(sign * (X @ theta))
    return (X * (weights * p * (1.0 - p))[:, None]).T @ X + np.diag(penalty)


def fit_logistic_batch(
    X: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    penalty: np.ndarray,
    *,
    theta0: np.ndarray | None = None,
    precond: np.ndarray | None = None,
    gtol: float = 1e-8,
    max_iter: int = 1000,
) -> BatchFit:
    """Minimise ``Σ_i W_ib log(1 + exp(−ỹ_i x_i·θ_b)) + ½ Σ_j Λ_jb θ_jb²`` for every column ``b`` at once.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Design (:func:`pool_design`), shared by all models.
    y : ndarray of {0, 1}, shape (n,)
        Labels, shared.
    weights : ndarray, shape (n, B)
        Row weight of each record in each model (0/1 membership, or 0.5 for the pool average).
    penalty : ndarray, shape (d, B)
        Diagonal L2 weights ``Λ`` (``σ_mj² / C``; 0 for the intercept).
    theta0 : ndarray, shape (d,) or (d, B), optional
        Starting point (default 0).
    precond : ndarray, shape (d, d), optional
        Symmetric positive definite approximation of the Hessians; L-BFGS's initial inverse Hessian
        is its inverse (default: the Hessian of column 0 at ``theta0``).
    gtol : float
        Stop a column when ``max_j |∂f/∂θ_j| ≤ gtol · Σ_i W_ib``.
    max_iter : int
        Iteration cap per column.

    Returns
    -------
    BatchFit
        ``theta`` (d, B), ``n_iter``, ``converged``.
    """
    n, d = X.shape
    B = weights.shape[1]
    sign = np.where(np.asarray(y) == 1, 1.0, -1.0)
    theta = np.zeros((d, B)) if theta0 is None else np.array(np.broadcast_to(
        np.asarray(theta0, dtype=np.float64).reshape(d, -1), (d, B)))
    # A coordinate whose column is 0 on every row of the model (an unseen category) has no loss
    # gradient: its exact minimiser is 0. Hold it there (θ and every step), so it is 0, not ≈ 0.
    free = (np.abs(X).T @ weights) > 0
    theta[~free] = 0.0
    if precond is None:
        precond = _hessian(X, sign, weights[:, 0], penalty[:, 0], theta[:, 0])
    factor = cho_factor(precond)
    scale = gtol * weights.sum(axis=0)
    n_iter = np.zeros(B, dtype=np.int64)
    converged = np.zeros(B, dtype=bool)

    active = np.arange(B)  # columns still being solved; the state below holds only these
    W, L, th, F = weights, penalty, theta.copy(), free
    f, R = _objective(X, sign, W, L, th)
    g = X.T @ R + L * th
    S: list[np.ndarray] = []  # s_k = θ_{k+1} − θ_k, (d, |active|)
    Yd: list[np.ndarray] = []  # y_k = g_{k+1} − g_k
    rho: list[np.ndarray] = []
    for it in range(max_iter + 1):
        done = np.abs(g).max(axis=0) <= scale[active]
        if it == max_iter:
            done[:] = True
        if done.any():
            theta[:, active[done]] = th[:, done]
            converged[active[done]] = it < max_iter or (np.abs(g[:, done]).max(axis=0) <= scale[active[done]])
            n_iter[active[done]] = it
            keep = ~done
            active, W, L, th, F, f, g = active[keep], W[:, keep], L[:, keep], th[:, keep], F[:, keep], f[keep], g[:, keep]
            S, Yd, rho = [s[:, keep] for s in S], [v[:, keep] for v in Yd], [r[keep] for r in rho]
        if active.size == 0:
            break
        # two-loop recursion, per column, initial inverse Hessian = P⁻¹
        q = g.copy()
        alphas = []
        for s, v, r in zip(reversed(S), reversed(Yd), reversed(rho)):
            a = r * (s * q).sum(axis=0)
            q -= a * v
            alphas.append(a)
        step = cho_solve(factor, q)
        for s, v, r, a in zip(S, Yd, rho, reversed(alphas)):
            step += s * (a - r * (v * step).sum(axis=0))
        step = np.where(F, -step, 0.0)  # g is 0 on held coordinates, so this stays a descent direction
        slope = (g * step).sum(axis=0)
        uphill = slope >= 0  # cannot happen with positive curvature pairs; restart those columns
        if uphill.any():
            step[:, uphill] = np.where(F[:, uphill], -cho_solve(factor, g[:, uphill]), 0.0)
            slope = (g * step).sum(axis=0)
        # Armijo backtracking, each column its own step length; rounding slack as scipy's ftol
        alpha = np.ones(active.size)
        new_th, new_f, new_R = th + step, *_objective(X, sign, W, L, th + step)
        slack = 64 * np.finfo(float).eps * np.maximum(np.abs(f), 1.0)
        bad = ~(new_f <= f + _ARMIJO * alpha * slope + slack)
        for _ in range(_MAX_HALVINGS):
            if not bad.any():
                break
            idx = np.flatnonzero(bad)
            alpha[idx] *= 0.5
            trial = th[:, idx] + alpha[idx] * step[:, idx]
            tf, tR = _objective(X, sign, W[:, idx], L[:, idx], trial)
            new_th[:, idx], new_f[idx], new_R[:, idx] = trial, tf, tR
            ok = tf <= f[idx] + _ARMIJO * alpha[idx] * slope[idx] + slack[idx]
            bad[idx[ok]] = False
        new_g = X.T @ new_R + L * new_th
        s_k, y_k = new_th - th, new_g - g
        sy = (s_k * y_k).sum(axis=0)
        good = sy > 1e-12 * np.sqrt((s_k**2).sum(axis=0) * (y_k**2).sum(axis=0))
        S.append(np.where(good, s_k, 0.0))
        Yd.append(np.where(good, y_k, 0.0))
        rho.append(np.where(good, 1.0 / np.where(good, sy, 1.0), 0.0))  # a skipped pair contributes nothing
        if len(S) > _MEMORY:
            S.pop(0), Yd.pop(0), rho.pop(0)
        th, f, g = new_th, new_f, new_g
    return BatchFit(theta=theta, n_iter=n_iter, converged=converged)


def fit_pipelines(
    frame: Any,
    y: np.ndarray,
    keep: np.ndarray,
    *,
    categorical: Sequence[str],
    numeric: Sequence[str],
    C: float = 1.0,
    gtol: float = 1e-8,
    max_iter: int = 1000,
) -> BatchFit:
    """Fit the one-hot + standard-scaling + ``LogisticRegression(C)`` pipeline of every row of ``keep``.

    Parameters
    ----------
    frame : pandas.DataFrame
        The pool's features.
    y : ndarray of {0, 1}, shape (n,)
        The pool's labels.
    keep : ndarray of bool, shape (B, n)
        Model ``m`` trains on the rows where ``keep[m]`` is true (each needs both classes).
    categorical, numeric : column names
        As in the pipeline's ``ColumnTransformer``.
    C : float
        Inverse regularisation strength, as sklearn's.
    gtol, max_iter : see :func:`fit_logistic_batch`.

    Returns
    -------
    BatchFit
        With ``logits`` (B, n): each model's decision function on every pool record, equal to the
        pipeline's ``decision_function`` at the exact minimiser (module docstring).
    """
    X, n_onehot = pool_design(frame, categorical, numeric)
    keep = np.asarray(keep, dtype=bool)
    y = np.asarray(y)
    n_models, n = keep.shape
    for m in range(n_models):
        labels = np.unique(y[keep[m]])
        if labels.size != 2:
            raise DataError(f"keep[{m}] selects rows of one class only; each model needs both classes to train")
    weights = keep.T.astype(np.float64)  # (n, B)
    size = keep.sum(axis=1)
    num = X[:, n_onehot:-1]
    mean = (keep @ num) / size[:, None]
    second = (keep @ num**2) / size[:, None]
    var = second - mean**2
    # constant on T_m (up to the rounding of E[x²] − E[x]²): sklearn's scale 1; any positive
    # penalty gives u_j = 0 there (module docstring)
    sigma = np.where(var > 1e3 * np.finfo(float).eps * second, np.sqrt(np.maximum(var, 0.0)), 1.0)
    d = X.shape[1]
    penalty = np.zeros((d, n_models))
    penalty[:n_onehot] = 1.0 / C
    penalty[n_onehot:-1] = (sigma**2).T / C
    # the shared start and preconditioner: the pool-average model (weights ½, pool scaling)
    avg_w = np.full((n, 1), 0.5)
    avg_pen = np.where(np.arange(d) < d - 1, 1.0 / C, 0.0)[:, None]
    start = fit_logistic_batch(X, y, avg_w, avg_pen, gtol=gtol, max_iter=max_iter).theta[:, 0]
    sign = np.where(y == 1, 1.0, -1.0)
    precond = _hessian(X, sign, avg_w[:, 0], avg_pen[:, 0], start)
    fit = fit_logistic_batch(X, y, weights, penalty, theta0=start, precond=precond, gtol=gtol, max_iter=max_iter)
    return BatchFit(fit.theta, fit.n_iter, fit.converged, logits=(X @ fit.theta).T)
