"""The learners of a DP audit (dpaudit.mia.claim.learners): registry, factories, the diffprivlib ones."""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
import pytest

from dpaudit._errors import DataError
from dpaudit.mia.claim.learners import LEARNERS, Learner, resolve_learner

pytest.importorskip("sklearn")
#: diffprivlib is in the test extra; importorskip would import it before learners makes it importable.
needs_diffprivlib = pytest.mark.skipif(importlib.util.find_spec("diffprivlib") is None, reason="needs diffprivlib")


def data(n: int = 400, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) / np.sqrt(d)
    y = (X[:, 0] > np.median(X[:, 0])).astype(np.int64)
    return X, y


def test_every_learner_is_described_and_the_broken_ones_claim_privacy():
    for name, learner in LEARNERS.items():
        assert isinstance(learner, Learner) and learner.name == name and learner.description
        if learner.broken is not None:
            assert learner.private
    assert LEARNERS["dp-logreg"].private and not LEARNERS["logreg"].private
    assert LEARNERS["dp-logreg"].broken is None and LEARNERS["dp-logreg-10x"].broken


@pytest.mark.parametrize("name", ["dp-logreg", "logreg", "dp-logreg-10x"])
@needs_diffprivlib
def test_the_sklearn_learners_fit_and_give_two_class_probabilities(name):
    X, y = data()
    clf = resolve_learner(name).build(1.0, 1e-5, 0).fit(X, y)
    p = clf.predict_proba(X)
    assert p.shape == (len(X), 2) and np.allclose(p.sum(axis=1), 1.0)
    assert np.isfinite(clf.decision_function(X)).all()


@needs_diffprivlib
def test_dp_logreg_is_diffprivlib_at_the_claimed_epsilon_and_seeded():
    X, y = data()
    build = LEARNERS["dp-logreg"].build
    a, b, c = build(2.0, 1e-5, 7), build(2.0, 1e-5, 7), build(2.0, 1e-5, 8)
    assert a.epsilon == 2.0 and a.data_norm == pytest.approx(2 ** 0.5)  # rows ≤ 1 plus the constant feature 1
    assert LEARNERS["dp-logreg-10x"].build(2.0, 1e-5, 7).epsilon == 20.0
    for clf in (a, b, c):
        clf.fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)
    assert a.accountant.spent_budget == [(2.0, 0)]  # its own accountant, not diffprivlib's global one


def make_classifier(epsilon, delta):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=epsilon)


def test_a_factory_is_called_with_epsilon_and_delta(monkeypatch):
    module = types.ModuleType("claim_factories")
    module.make = make_classifier  # type: ignore[attr-defined]
    module.broken = lambda epsilon, delta: object()  # type: ignore[attr-defined]
    module.fails = lambda epsilon, delta: 1 / 0  # type: ignore[attr-defined]
    module.constant = 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "claim_factories", module)
    learner = resolve_learner("claim_factories:make")
    assert learner.private and learner.broken is None
    assert learner.build(0.5, 1e-6, 0).C == 0.5
    with pytest.raises(DataError, match="has no fit or predict_proba"):
        resolve_learner("claim_factories:broken").build(1.0, 0.0, 0)
    with pytest.raises(DataError, match="ZeroDivisionError"):
        resolve_learner("claim_factories:fails").build(1.0, 0.0, 0)
    with pytest.raises(DataError, match="not callable"):
        resolve_learner("claim_factories:constant")
    with pytest.raises(DataError, match="has no attribute"):
        resolve_learner("claim_factories:nothing")
    with pytest.raises(DataError, match="cannot import"):
        resolve_learner("no_such_module_27:make")


def test_an_unknown_name_lists_the_learners():
    with pytest.raises(DataError, match="dp-logreg"):
        resolve_learner("dp-forest")


@pytest.mark.filterwarnings("ignore:scipy.optimize:DeprecationWarning")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dp_logreg_penalises_its_intercept_so_the_perturbed_objective_has_a_minimiser():
    """diffprivlib's own fit_intercept=True leaves the intercept out of the L2 penalty while its noise
    term includes it: on few rows and many features L-BFGS runs off to an intercept near 1e18. dp-logreg
    appends a constant feature instead (data_norm √2), so every fit stays finite and moderate."""
    from dpaudit.mia.claim.learners import LEARNERS, diffprivlib_models, with_constant

    diffprivlib_models()  # makes diffprivlib importable with this scikit-learn
    from diffprivlib.models.logistic_regression import _logistic_regression_path as path

    rng = np.random.default_rng(3)
    X = rng.random((100, 220))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.integers(0, 2, 100)
    ours, theirs = [], []
    for state in range(8):
        m = LEARNERS["dp-logreg"].build(1.0, 0.0, state).fit(X, y)
        ours.append(np.abs(m.decision_function(X)).max())
        assert m.coef_.shape == (1, 221) and np.isfinite(m.coef_).all()
        p = m.predict_proba(X[:3])
        np.testing.assert_allclose(p[:, 1], 1 / (1 + np.exp(-m.decision_function(X[:3]))), rtol=1e-9, atol=1e-300)
        coefs = path(X, y, epsilon=1.0, data_norm=1.0, Cs=[1.0], fit_intercept=True, random_state=state)[0]
        theirs.append(abs(coefs[0][-1]))  # diffprivlib's own intercept handling
    assert max(ours) < 1e4, ours
    assert max(theirs) > 1e6, theirs  # the failure this guards against (measured on this data)
    np.testing.assert_array_equal(with_constant(X[:2])[:, -1], [1.0, 1.0])
