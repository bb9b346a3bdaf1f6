"""The target models of an experiment: a registry keyed by name, and the score they give a record.

:data:`MODELS` maps a built-in model's name to its :class:`ModelSpec` (hyper-parameters recorded in
``run.json``, a builder for the seeded classifier, how its score is read); ``package.module:factory``
names any scikit-learn classifier instead (:func:`resolve_model`). Every model is a pipeline of the
declared preprocessing (one-hot categoricals, standardised numerics) and the classifier, except
TabPFN, which encodes the raw frame itself. Adding a built-in model is one entry in
:data:`MODELS`.

The score is ``φ = log p_y − log Σ_{c≠y} p_c`` (:func:`logit_confidence`); for the binary models
here it is computed exactly from the model's logit ``z``: ``φ = z`` if ``y`` is the positive class,
else ``−z``, finite however confident the model is. A probability-only model (a user's factory,
TabPFN) gives the log-odds of its log-probabilities where ``predict_log_proba`` returns finite ones,
else of its probabilities with each clipped to :data:`PROBABILITY_RESOLUTION` = 2⁻⁵³: an output of
exactly 0/1 scores ±:data:`SCORE_CAP` = 53·ln 2 ≈ 36.74 (:func:`proba_logit`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit.mia._defaults import TABPFN_WEIGHTS_ENV
from dpaudit.mia.train.data import sha256

__all__ = ["ModelSpec", "MODELS", "TABPFN_WEIGHTS_ENV", "ModelFailure", "failure", "logit_confidence", "probability_logit",
           "binary_logit", "proba_logit", "PROBABILITY_RESOLUTION", "SCORE_CAP", "model_seed", "tabpfn_checkpoint",
           "resolve_model", "make_pipeline", "import_factory", "check_classifier"]



class ModelFailure(DPAuditError):
    """A model of the run could not be trained or scored: its ``fit`` or ``predict_proba`` raised, returned
    the wrong shape, or gave scores that are not finite (:func:`failure` words the message)."""


def failure(model: str, models: list[int], error: BaseException | str) -> ModelFailure:
    """``the model 'mod:f' failed on model 3: ValueError: <first line of its message>``.

    ``models`` are the models fitted together (one, or a batch of the batched trainer); ``error`` the
    exception, or a description of what is wrong with the scores.

    Examples
    --------
    >>> str(failure("mod:f", [3], ValueError("boom\\nin fit")))
    "the model 'mod:f' failed on model 3: ValueError: boom"
    """
    if isinstance(error, BaseException):
        lines = str(error).strip().splitlines()
        first = lines[0].strip() if lines else ""
        what = first if isinstance(error, DPAuditError) else f"{type(error).__name__}{': ' + first if first else ''}"
    else:
        what = error
    batch = f" (fitted in one batch with models {models[0]}–{models[-1]})" if len(models) > 1 else ""
    return ModelFailure(f"the model {model!r} failed on model {models[0]}{batch}: {what}")


@dataclass(frozen=True)
class ModelSpec:
    """A built-in target model.

    Attributes
    ----------
    name : str
    params : dict
        Hyper-parameters (recorded in ``run.json``).
    classifier : callable (random_state) -> estimator
        A fresh, unfitted classifier seeded from (seed, model index).
    raw_features : bool
        The classifier encodes the raw frame itself (no preprocessing).
    """

    name: str
    params: dict[str, Any]
    classifier: Callable[[int], Any]
    raw_features: bool = False


def _logreg(random_state: int) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(**MODELS["logreg"].params)


def _mlp(random_state: int) -> Any:
    from sklearn.neural_network import MLPClassifier

    params = dict(MODELS["mlp"].params)
    params["hidden_layer_sizes"] = tuple(params["hidden_layer_sizes"])
    return MLPClassifier(**params, random_state=random_state)


def _hgb(random_state: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(**MODELS["hgb"].params, early_stopping=False, random_state=random_state)


def _tabpfn(random_state: int) -> Any:
    from tabpfn import TabPFNClassifier

    return TabPFNClassifier(**MODELS["tabpfn"].params, model_path=str(tabpfn_checkpoint()), random_state=random_state)


#: The built-in models (logistic regression with C = 1 is deterministic: all its variance comes from
#: data sampling; the MLP and the trees add algorithmic randomness; TabPFN is optional).
MODELS: dict[str, ModelSpec] = {
    "logreg": ModelSpec("logreg", {"C": 1.0, "solver": "lbfgs", "max_iter": 1000, "tol": 1e-4}, _logreg),
    "mlp": ModelSpec("mlp", {"hidden_layer_sizes": [64], "alpha": 1e-4, "max_iter": 200, "learning_rate_init": 1e-3},
                     _mlp),
    "hgb": ModelSpec("hgb", {"max_iter": 100, "learning_rate": 0.1, "max_leaf_nodes": 31}, _hgb),
    "tabpfn": ModelSpec("tabpfn", {"n_estimators": 4, "device": "cpu"}, _tabpfn, raw_features=True),
}


def logit_confidence(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Logit-scaled confidence ``φ = log p_y − log Σ_{c≠y} p_c`` of each row's true label (spec §1).

    Parameters
    ----------
    logits : array_like, shape (n, C)
        Logits, log-probabilities, or anything equal to ``log p`` up to a per-row constant (the
        constant cancels). To start from probabilities pass ``np.log(p)``: the formula never forms
        ``1 − p_y``, so it stays exact as ``p_y → 1`` as long as the small ``p_c`` are representable.
    labels : array_like of int, shape (n,)
        Column index of each row's true label.

    Returns
    -------
    ndarray of float64, shape (n,)
        ``z_y − logsumexp_{c≠y} z_c``.

    Examples
    --------
    >>> logit_confidence(np.log([[1e-30, 1.0 - 1e-30]]), np.array([1])).round(3).tolist()  # 1 − p_y = 1e-30
    [69.078]
    """
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels)
    if z.ndim != 2 or z.shape[1] < 2 or y.shape != (z.shape[0],):
        raise DPAuditError(f"logit_confidence needs logits (n, C ≥ 2) and labels (n,), got {z.shape} and {y.shape}")
    rows = np.arange(z.shape[0])
    z_y = z[rows, y]
    others = z.copy()
    others[rows, y] = -np.inf
    top = others.max(axis=1)
    safe_top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        lse = safe_top + np.log(np.exp(others - safe_top[:, None]).sum(axis=1))
    return z_y - lse


#: The smallest probability a probability-only model's output is read as: float64 cannot tell a
#: probability within 2⁻⁵³ of 1 from 1 (the spacing of floats just below 1), so an output of exactly
#: 0 or 1 means "within the float resolution", and the other class's probability is taken as 2⁻⁵³.
PROBABILITY_RESOLUTION = 2.0**-53
#: The largest |φ| a probability-only model's score can reach: log(1/2⁻⁵³) = 53·ln 2 ≈ 36.74, the
#: log-odds of a probability one resolution step from 1 (recorded as ``score_cap`` in the run).
SCORE_CAP = float(-np.log(PROBABILITY_RESOLUTION))


def proba_logit(p: np.ndarray, log_p: np.ndarray | None = None) -> np.ndarray:
    """``log p_1 − log p_0`` of a probability-only model's two-class output, always finite.

    ``log_p`` (the model's ``predict_log_proba``, if it has one) is used for every row whose two values
    are finite: a model that computes log-probabilities (naive Bayes) keeps their resolution. Every
    other row is read from the probabilities, each raised to at least 2⁻⁵³
    (:data:`PROBABILITY_RESOLUTION`): a random forest whose trees all agree outputs exactly 0 and 1,
    whose log-odds are infinite; float64 does not resolve probabilities closer than 2⁻⁵³ to 1, so such
    a row scores ±:data:`SCORE_CAP` = ±36.74. (Clipping to float64's smallest positive number instead,
    as before, put such scores at ±708: 20–70 standard deviations from the others, dominating every
    fitted mean.)

    Examples
    --------
    >>> proba_logit(np.array([[0.0, 1.0], [0.5, 0.5], [0.9, 0.1]])).round(4).tolist()
    [36.7368, 0.0, -2.1972]
    >>> proba_logit(np.array([[0.0, 1.0]]), np.array([[-100.0, -3.7e-44]])).tolist()
    [100.0]
    """
    with np.errstate(invalid="ignore"):  # NaN or ±inf from a broken model stay so, and are refused as scores
        logs = np.log(np.maximum(np.asarray(p, dtype=np.float64), PROBABILITY_RESOLUTION))
    if log_p is not None and np.shape(log_p) == logs.shape:
        lp = np.asarray(log_p, dtype=np.float64)
        logs = np.where(np.isfinite(lp).all(axis=1, keepdims=True), lp, logs)
    return logs[:, 1] - logs[:, 0]


def probability_logit(model: Any, X: Any) -> np.ndarray:
    """:func:`proba_logit` of any fitted object's ``predict_proba`` (and ``predict_log_proba`` if it has one), shape (n,):
    a pipeline, or a user's classifier that is not a scikit-learn estimator."""
    p = np.asarray(model.predict_proba(X))
    if p.shape != (len(X), 2):
        raise DPAuditError(f"predict_proba returned an array of shape {p.shape}, expected ({len(X)}, 2): one "
                           "column per class")
    log_p = None
    if callable(getattr(model, "predict_log_proba", None)):
        with np.errstate(divide="ignore"):
            log_p = np.asarray(model.predict_log_proba(X))
    return proba_logit(p.astype(np.float64), log_p)


def binary_logit(model: Any, X: Any, *, from_proba: bool = False) -> np.ndarray:
    """The fitted pipeline's logit of the positive class (``classes_[1]``), shape (n,).

    Exact for the built-in models with a decision function (and the MLP, whose forward pass is
    redone); a probability-only model (TabPFN) or a user's factory (``from_proba``) gives
    :func:`proba_logit` of its (log-)probabilities (an exact 0/1 output scores ±:data:`SCORE_CAP`).
    """
    from sklearn.neural_network import MLPClassifier

    clf = model[-1]
    if from_proba or (not hasattr(clf, "decision_function") and not isinstance(clf, MLPClassifier)):
        return probability_logit(model, X)
    Xt = model[:-1].transform(X)
    if isinstance(clf, MLPClassifier):  # sklearn exposes only probabilities: redo the forward pass
        a = np.asarray(Xt, dtype=np.float64)
        for i, (W, b) in enumerate(zip(clf.coefs_, clf.intercepts_)):
            a = a @ W + b
            if i < len(clf.coefs_) - 1:
                a = np.maximum(a, 0.0)  # activation="relu"
        return a[:, 0]
    return np.asarray(clf.decision_function(Xt), dtype=np.float64)


def model_seed(seed: int, m: int) -> int:
    return int(np.random.SeedSequence(seed, spawn_key=(2, m)).generate_state(1)[0])


def tabpfn_checkpoint() -> Path:
    """The local TabPFN classifier checkpoint named by ``$DPAUDIT_TABPFN_WEIGHTS``, if TabPFN can run.

    TabPFN is optional: it needs the ``tabpfn`` package and licence-gated weights, which dpaudit
    never downloads (a run must not stop for a login prompt or a network call half-way).

    Raises
    ------
    DPAuditError
        Saying what is missing (the package, the variable, or the file) and how to provide it.
    """
    try:
        import tabpfn  # noqa: F401
    except ImportError as exc:
        raise DPAuditError(f"model 'tabpfn' needs the tabpfn package, which is not installed ({exc}): "
                           "pip install 'dpaudit[tabpfn]'") from None
    value = os.environ.get(TABPFN_WEIGHTS_ENV, "")
    if not value:
        raise DPAuditError(f"model 'tabpfn' needs local weights: set {TABPFN_WEIGHTS_ENV} to a TabPFN classifier "
                           "checkpoint (.ckpt) file; dpaudit does not download them (they are licence-gated)")
    path = Path(value).expanduser()
    if not path.is_file():
        raise DPAuditError(f"{TABPFN_WEIGHTS_ENV}={value}: no such file; point it at a TabPFN classifier checkpoint (.ckpt)")
    return path


def resolve_model(model: str) -> tuple[str, dict[str, Any]]:
    """The model's name and recorded parameters: a built-in (:data:`MODELS`) or ``package.module:factory``.

    A factory is any importable callable returning an unfitted scikit-learn-compatible classifier with
    ``fit`` and ``predict_proba``; it is called once here to check that and to record its parameters
    (``get_params()``). Every model of the run calls it afresh; when the estimator has a
    ``random_state`` parameter it is set from (seed, model index), like the built-ins'.

    Raises
    ------
    DPAuditError
        An unknown built-in, a factory that cannot be imported or called, or an estimator without
        ``fit``/``predict_proba``.

    Examples
    --------
    >>> resolve_model("sklearn.naive_bayes:GaussianNB")[1]["var_smoothing"]
    1e-09
    """
    if not isinstance(model, str):
        raise DPAuditError(f"model must be a name or 'package.module:factory', got {model!r}")
    if ":" not in model:
        if model not in MODELS:
            raise DPAuditError(f"model must be one of {', '.join(MODELS)} or 'package.module:factory' (a callable "
                               f"returning a scikit-learn classifier), got {model!r}")
        params = dict(MODELS[model].params)
        if model == "tabpfn":
            params["weights_sha256"] = sha256(tabpfn_checkpoint())
        return model, params
    estimator = _call_factory(model)
    try:
        params = json.loads(json.dumps(estimator.get_params(deep=False), default=repr))
    except Exception:  # an estimator without sklearn's get_params: record its repr
        params = {"repr": repr(estimator)}
    return model, params


def import_factory(name: str, what: str = "model", error: type[DPAuditError] = DPAuditError) -> Any:
    """The callable ``package.module:attr`` names (``attr`` may be dotted), for a model or a learner.

    Raises ``error`` naming the ``what`` (``model 'pkg.mod:f': ...``) when the module cannot be
    imported, has no such attribute, or the attribute is not callable.
    """
    import importlib

    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise error(f"{what} {name!r}: cannot import {module_name!r} ({type(exc).__name__}: {exc}); install "
                    "it or put it on PYTHONPATH") from None
    factory: Any = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise error(f"{what} {name!r}: {module_name!r} has no attribute {attr!r}")
    if not callable(factory):
        raise error(f"{what} {name!r}: {attr!r} is not callable; name a class or a function returning a classifier")
    return factory


def check_classifier(name: str, estimator: Any, what: str = "model", error: type[DPAuditError] = DPAuditError,
                     why: str = "LiRA needs") -> Any:
    """``estimator`` itself, if it has ``fit`` and ``predict_proba``; else ``error`` naming what is missing."""
    missing = [m for m in ("fit", "predict_proba") if not callable(getattr(estimator, m, None))]
    if missing:
        raise error(f"{what} {name!r}: {type(estimator).__name__} has no {' or '.join(missing)}; {why} a classifier "
                    "with fit and predict_proba (scikit-learn API)")
    return estimator


def _call_factory(model: str) -> Any:
    factory = import_factory(model)
    attr = model.partition(":")[2]
    try:
        estimator = factory()
    except Exception as exc:
        raise DPAuditError(f"model {model!r}: calling {attr}() failed ({type(exc).__name__}: {exc})") from None
    return check_classifier(model, estimator)


def make_pipeline(categorical: list[str], numeric: list[str], model: str, random_state: int) -> Any:
    """The declared preprocessing and a fresh classifier (built-in or a factory's), seeded by ``random_state``."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    if ":" in model:
        clf = _call_factory(model)
        if "random_state" in getattr(clf, "get_params", dict)():
            clf.set_params(random_state=random_state)
    else:
        spec = MODELS[model]
        clf = spec.classifier(random_state)
        if spec.raw_features:
            return Pipeline([("pre", "passthrough"), ("clf", clf)])
    pre = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
         ("num", StandardScaler(), numeric)],
        remainder="drop",
    )
    return Pipeline([("pre", pre), ("clf", clf)])
