"""The learners a DP audit trains: DP ones at a claimed (ε, δ), their non-private counterparts, broken ones.

:data:`LEARNERS` maps a name to its :class:`Learner`; ``build(epsilon, delta, random_state)`` returns a
fresh, unfitted classifier with ``fit(X, y)`` and ``predict_proba(X)`` (binary, labels 0/1). Every
learner expects the rows of X to have L2 norm ≤ 1 (the audit's preprocessing guarantees it from the
declared schema), which is the sensitivity bound of the DP ones:

``dp-logreg``
    diffprivlib's ``LogisticRegression(epsilon=ε)``: objective perturbation (Chaudhuri, Monteleoni &
    Sarwate, *Differentially Private Empirical Risk Minimization*, JMLR 2011, Alg. 2), pure ε-DP; δ is
    not used (the claim is (ε, 0), which implies (ε, δ) for every δ). The intercept is a constant
    feature 1 appended to every row (``data_norm = √2``, ``fit_intercept=False``), so the L2 penalty
    covers it: diffprivlib's own ``fit_intercept=True`` leaves the intercept unpenalised while its noise
    term b·w includes it, so the perturbed objective can be unbounded below along the intercept —
    L-BFGS then stops at an intercept near 10¹⁸ (measured: 100 rows × 220 features at ε = 1, every
    canary's logit 1.015·10¹⁸), an output the privacy proof (a strongly convex objective's unique
    minimiser) does not cover.
``logreg``
    its non-private counterpart, scikit-learn's ``LogisticRegression`` with a large C = 10⁴ (almost no
    regularisation: the model the DP one approximates, with the most memorisation).
``dp-logreg-10x`` (broken)
    claims ε but runs diffprivlib at 10 ε.

``dp-sgd``
    DP-SGD of a logistic regression with jax-privacy (:mod:`dpaudit.mia.claim.dpsgd`: per-example
    clipping to C = 0.1, Poisson sampling at q = 256/n, Gaussian noise σ·C, T = ⌈5/q⌉ steps, σ
    calibrated to (ε, δ) by jax-privacy's RDP accountant); ``dp-sgd-mlp`` the same for a network with
    one hidden layer of 32 ReLU units.
``sgd``
    the same SGD without clipping or noise (non-private).
``dp-sgd-half-noise``, ``dp-sgd-no-clip`` (broken)
    noise σ/2·C while claiming σ; no clipping, noise σ·C as if clipped.

The DP-SGD learners need the ``dpsgd`` extra (jax-privacy); it is imported only when one of them is
built, and building one without it raises a DataError naming ``pip install "dpaudit[dpsgd]"``.

``package.module:factory`` names a user's learner: ``factory(epsilon, delta)`` returns the classifier
(:func:`resolve_learner`); it is taken to claim (ε, δ)-DP.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._errors import DataError
from dpaudit.mia.claim.dpsgd import HIDDEN  # numpy only: jax and jax-privacy wait for a DP-SGD build
from dpaudit.mia.train.models import check_classifier, import_factory

__all__ = ["Learner", "LEARNERS", "resolve_learner", "diffprivlib_models", "LOGREG_C"]

#: The inverse regularisation of the non-private logistic regression (large: nearly unregularised).
LOGREG_C = 1e4


@dataclass(frozen=True)
class Learner:
    """A learner an audit can train.

    Attributes
    ----------
    name : str
    description : str
        One line, for reports.
    private : bool
        True when it claims (ε, δ)-DP.
    broken : str or None
        For the deliberately broken learners: what is broken (their claim is false), else None.
    needs : str or None
        The extra it needs (``"dpsgd"``), else None.
    build : callable (epsilon, delta, random_state) -> classifier
        A fresh, unfitted classifier; a non-private learner ignores ε and δ.
    """

    name: str
    description: str
    private: bool
    broken: str | None
    needs: str | None
    build: Callable[[float, float, int], Any]


def diffprivlib_models() -> Any:
    """``diffprivlib.models``, importable with scikit-learn ≥ 1.9.

    diffprivlib 0.6 imports two dtype constants that scikit-learn 1.9 no longer exports from
    ``sklearn.tree._tree`` (their values are unchanged: float64 and float32); they are restored first.
    Also the import of experiment 6's DP forest (``experiments/unfairness/models.py``).
    """
    import sklearn.tree._tree as sk_tree

    for name, dtype in (("DOUBLE", np.float64), ("DTYPE", np.float32)):
        if not hasattr(sk_tree, name):
            setattr(sk_tree, name, dtype)
    try:
        import diffprivlib.models as models
    except ImportError as exc:
        raise DataError(f"the dp-logreg learners need diffprivlib, which is not installed ({exc}): "
                        'pip install diffprivlib (or "dpaudit[test]")') from None
    return models


def _dp_logistic_regression(epsilon: float, random_state: int) -> Any:
    """diffprivlib's ``LogisticRegression(epsilon, data_norm=1)`` with its own budget accountant.

    diffprivlib 0.6.6 passes ``multi_class="ovr"`` to scikit-learn's constructor, which scikit-learn
    1.8 removed; the subclass calls it without (a binary fit is one-vs-rest either way: one logit), and
    its ``fit`` silences the deprecation warning diffprivlib's call of scipy's L-BFGS-B raises.
    """
    base = diffprivlib_models().LogisticRegression  # first: it makes diffprivlib importable
    from diffprivlib.accountant import BudgetAccountant
    from sklearn.linear_model import LogisticRegression as SkLogisticRegression

    class DPLogisticRegression(base):  # type: ignore[misc, valid-type]
        """Its intercept is the weight of a constant feature 1 appended to each row (module docstring)."""

        def __init__(self, *, epsilon: float = 1.0, data_norm: float | None = None, tol: float = 1e-4,
                     C: float = 1.0, fit_intercept: bool = False, max_iter: int = 100, random_state: Any = None,
                     accountant: Any = None) -> None:
            SkLogisticRegression.__init__(self, tol=tol, C=C, fit_intercept=fit_intercept, random_state=random_state,
                                          solver="lbfgs", max_iter=max_iter)
            self.epsilon = epsilon
            self.data_norm = data_norm
            self.accountant = BudgetAccountant.load_default(accountant)

        def fit(self, X: Any, y: Any, sample_weight: Any = None) -> Any:
            import warnings

            with warnings.catch_warnings():  # diffprivlib passes scipy's L-BFGS-B its deprecated iprint option
                warnings.filterwarnings("ignore", "scipy.optimize: The `disp` and `iprint`", DeprecationWarning)
                return super().fit(with_constant(X), y)

        def decision_function(self, X: Any) -> Any:
            return super().decision_function(with_constant(X))

    return DPLogisticRegression(epsilon=epsilon, data_norm=math.sqrt(2.0), random_state=random_state,
                                accountant=BudgetAccountant())


def with_constant(X: Any) -> np.ndarray:
    """X with a last column of ones (the intercept's feature): rows of norm ≤ 1 get norm ≤ √2."""
    X = np.asarray(X, dtype=np.float64)
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _diffprivlib_logreg(scale: float) -> Callable[[float, float, int], Any]:
    def build(epsilon: float, delta: float, random_state: int) -> Any:
        return _dp_logistic_regression(scale * epsilon, random_state)

    return build


def _logreg(epsilon: float, delta: float, random_state: int) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=LOGREG_C, max_iter=10_000)


def _dpsgd(**options: Any) -> Callable[[float, float, int], Any]:
    def build(epsilon: float, delta: float, random_state: int) -> Any:
        from dpaudit.mia.claim.dpsgd import DPSGDClassifier, jax_privacy_modules

        jax_privacy_modules()  # the install hint now, not at fit
        return DPSGDClassifier(epsilon, delta, random_state, **options)

    return build


LEARNERS: dict[str, Learner] = {
    "dp-logreg": Learner("dp-logreg", "DP logistic regression (diffprivlib, objective perturbation, ε-DP, δ unused)",
                         True, None, None, _diffprivlib_logreg(1.0)),
    "logreg": Learner("logreg", f"non-private logistic regression (scikit-learn, C = {LOGREG_C:g})", False, None, None,
                      _logreg),
    "dp-logreg-10x": Learner("dp-logreg-10x", "dp-logreg that claims ε but runs at 10 ε", True,
                             "runs diffprivlib at 10 ε", None, _diffprivlib_logreg(10.0)),
    "dp-sgd": Learner("dp-sgd", "DP-SGD logistic regression (jax-privacy: clipping, Poisson sampling, Gaussian noise "
                      "calibrated by its RDP accountant)", True, None, "dpsgd", _dpsgd()),
    "dp-sgd-mlp": Learner("dp-sgd-mlp", f"DP-SGD network with one hidden layer of {HIDDEN} ReLU units (jax-privacy)", True,
                          None, "dpsgd", _dpsgd(hidden=HIDDEN)),
    "sgd": Learner("sgd", "the SGD of dp-sgd without clipping or noise (non-private)", False, None, "dpsgd",
                   _dpsgd(private=False)),
    "dp-sgd-half-noise": Learner("dp-sgd-half-noise", "dp-sgd adding noise σ/2 while claiming the σ of (ε, δ)", True,
                                 "noise multiplier halved", "dpsgd", _dpsgd(noise_factor=0.5)),
    "dp-sgd-no-clip": Learner("dp-sgd-no-clip", "dp-sgd without per-example clipping, noise as if clipped", True,
                              "clipping off", "dpsgd", _dpsgd(clip=False)),
}


def resolve_learner(name: str) -> Learner:
    """The built-in learner ``name`` (:data:`LEARNERS`), or a user's ``package.module:factory``.

    The factory is imported here (so a bad name fails before any training) and called as
    ``factory(epsilon, delta)`` by the learner's ``build``, which checks that the result has ``fit``
    and ``predict_proba``; ``random_state`` is not passed (seed the factory's classifier yourself).

    Raises
    ------
    DataError
        An unknown built-in name, a module that cannot be imported, a missing attribute or one that is
        not callable; ``build`` raises it for a factory call that fails or returns no classifier.

    Examples
    --------
    >>> resolve_learner("dp-logreg").private
    True
    """
    if not isinstance(name, str):
        raise DataError(f"learner must be a name or 'package.module:factory', got {name!r}")
    if ":" not in name:
        if name not in LEARNERS:
            raise DataError(f"learner must be one of {', '.join(LEARNERS)} or 'package.module:factory' (a callable "
                            f"factory(epsilon, delta) returning a classifier), got {name!r}")
        return LEARNERS[name]
    factory = import_factory(name, "learner", DataError)
    attr = name.partition(":")[2]

    def build(epsilon: float, delta: float, random_state: int) -> Any:
        try:
            classifier = factory(epsilon, delta)
        except Exception as exc:
            raise DataError(f"learner {name!r}: calling {attr}(epsilon={epsilon!r}, delta={delta!r}) failed "
                            f"({type(exc).__name__}: {exc})") from None
        return check_classifier(name, classifier, "learner", DataError, "an audit needs")

    return Learner(name, f"user factory {name}(epsilon, delta)", True, None, None, build)
