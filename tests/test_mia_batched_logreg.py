"""dpaudit.mia.train.batched_logreg: the batched fits are the scikit-learn pipelines' exact minimisers."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpaudit._errors import DataError
from dpaudit.mia.train.batched_logreg import fit_logistic_batch, fit_pipelines, pool_design

pytest.importorskip("sklearn")

CAT = ["colour", "shape"]
NUM = ["size", "weight", "flag"]


def _pool(n: int = 400, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue", "violet"], size=n, p=[0.5, 0.3, 0.19, 0.01])
    shape = pd.Series(rng.choice(["round", "square", None], size=n), dtype=object)  # missing is a category
    size = rng.normal(50, 10, n)
    weight = rng.exponential(3.0, n) * 1000  # badly scaled on purpose
    flag = np.zeros(n)
    flag[:3] = 1.0  # constant (0) on most training sets
    logit = 0.08 * (size - 50) + (colour == "red") - 0.5 * (shape == "square") + 0.0002 * weight
    y = (rng.random(n) < 1 / (1 + np.exp(-np.asarray(logit, dtype=float)))).astype(int)
    return pd.DataFrame({"colour": colour, "shape": shape, "size": size, "weight": weight, "flag": flag}), y


def _sklearn(frame, y, member, tol, C=1.0):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), CAT),
                             ("num", StandardScaler(), NUM)])
    pipe = Pipeline([("pre", pre), ("clf", LogisticRegression(C=C, tol=tol, max_iter=100_000))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(frame[member], y[member])
    return pipe


def _objective(pipe, frame, y, member) -> float:
    clf = pipe[-1]
    z = pipe[:-1].transform(frame[member]) @ clf.coef_[0] + clf.intercept_[0]
    s = np.where(y[member] == 1, 1.0, -1.0)
    return float(np.logaddexp(0, -s * z).sum() + 0.5 * (clf.coef_**2).sum() / clf.C)


@pytest.mark.parametrize("C", [1.0, 0.05])
def test_batched_equals_tightly_converged_sklearn(C):
    frame, y = _pool()
    keep = np.random.default_rng(1).random((6, len(y))) < 0.5
    keep[0, frame["colour"].to_numpy() == "violet"] = False  # a category this model never sees
    fit = fit_pipelines(frame, y, keep, categorical=CAT, numeric=NUM, C=C, gtol=1e-11)
    assert fit.converged.all() and fit.n_iter.max() < 100
    for m in range(6):
        tight = _sklearn(frame, y, keep[m], tol=1e-12, C=C)
        np.testing.assert_allclose(fit.logits[m], tight.decision_function(frame), atol=1e-5)
        # sklearn's default tol stops earlier: its objective is never below the batched minimiser's
        loose = _sklearn(frame, y, keep[m], tol=1e-4, C=C)
        assert _objective(loose, frame, y, keep[m]) >= _objective(tight, frame, y, keep[m]) - 1e-9


def test_unseen_category_gets_zero_weight_like_handle_unknown_ignore():
    frame, y = _pool()
    keep = np.random.default_rng(2).random((2, len(y))) < 0.5
    violet = frame["colour"].to_numpy() == "violet"
    keep[:, violet] = False
    fit = fit_pipelines(frame, y, keep, categorical=CAT, numeric=NUM)
    X, n_onehot = pool_design(frame, CAT, NUM)
    column = int(np.flatnonzero(X[violet][0, :n_onehot] * (X[~violet][:, :n_onehot].sum(axis=0) == 0))[0])
    np.testing.assert_array_equal(fit.theta[column], 0.0)


def test_models_do_not_depend_on_their_batch():
    """Each column runs its own L-BFGS: alone or in a batch, the same model up to rounding."""
    frame, y = _pool(seed=3)
    keep = np.random.default_rng(4).random((5, len(y))) < 0.5
    together = fit_pipelines(frame, y, keep, categorical=CAT, numeric=NUM).logits
    alone = np.vstack([fit_pipelines(frame, y, keep[m:m + 1], categorical=CAT, numeric=NUM).logits for m in range(5)])
    np.testing.assert_allclose(together, alone, atol=1e-7)


def test_gradient_at_the_solution_meets_gtol():
    frame, y = _pool(seed=5)
    X, _ = pool_design(frame, CAT, NUM)
    rng = np.random.default_rng(6)
    W = (rng.random((len(y), 3)) < 0.5).astype(float)
    pen = np.vstack([np.ones((X.shape[1] - 1, 3)), np.zeros((1, 3))])
    fit = fit_logistic_batch(X, y, W, pen, gtol=1e-10)
    p = 1 / (1 + np.exp(-(X @ fit.theta)))
    grad = X.T @ (W * (p - y[:, None])) + pen * fit.theta
    assert (np.abs(grad).max(axis=0) <= 1e-10 * W.sum(axis=0)).all()
    capped = fit_logistic_batch(X, y, W, pen, gtol=1e-14, max_iter=2)
    assert not capped.converged.any() and (capped.n_iter == 2).all()


def test_pool_design_columns():
    frame, _ = _pool(n=50)
    X, n_onehot = pool_design(frame, CAT, NUM)
    assert n_onehot == frame["colour"].nunique() + frame["shape"].nunique(dropna=False)
    assert X.shape == (50, n_onehot + len(NUM) + 1)
    np.testing.assert_array_equal(X[:, :n_onehot].sum(axis=1), len(CAT))
    np.testing.assert_allclose(X[:, n_onehot:-1].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_array_equal(X[:, -1], 1.0)


def test_bad_input():
    frame, y = _pool(n=40)
    keep = np.ones((2, 40), dtype=bool)
    keep[1] = y == 1
    with pytest.raises(DataError, match=r"keep\[1\] selects rows of one class only"):
        fit_pipelines(frame, y, keep, categorical=CAT, numeric=NUM)
    frame.loc[3, "size"] = np.nan
    with pytest.raises(DataError, match="numeric features hold missing or infinite values"):
        fit_pipelines(frame, y, np.ones((1, 40), dtype=bool), categorical=CAT, numeric=NUM)
