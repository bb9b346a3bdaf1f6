"""Train the M models of a LiRA experiment and record their scores (spec §1, §5).

:func:`train_run` draws a pool of N+ records from a registered dataset or the user's CSV/Parquet
file (:mod:`dpaudit.mia.data`), a membership design (efficient LiRA's keep matrix, every record IN
in exactly M/2 models; or Poisson sampling), trains M scikit-learn pipelines (declared
preprocessing + logistic regression, a small MLP, gradient-boosted trees, TabPFN (optional), or any
classifier a ``package.module:factory`` returns), logistic regressions many at a time by
:mod:`dpaudit.mia.batched_logreg`, and writes the logit-scaled confidence of every pool record under
every model to a *run directory*, one file per finished model, so an interrupted run resumes where
it stopped. :func:`load_run` reads the directory back as a :class:`~dpaudit.mia.scores.ScoreSet`.

Training-set size
-----------------
Model ``m`` trains on the pool records with ``keep[m, x]`` true. Under the efficient design every
record is IN in exactly M/2 models, so a model holds N+/2 records *on average* (the row sums of
``keep`` vary around it) and the nominal training-set size N (used by the finite-population
correction ``1 − N/N+``) is ``N+ // 2``. Under the Poisson design each record joins each training
set with probability N/N+ for any ``train_size`` N, so models hold N records on average and the FPC
is again ``1 − N/N+``.

Reproducibility
---------------
All randomness derives from ``seed``: the pool from ``SeedSequence(seed, spawn_key=(0,))``, the keep
matrix from ``keep_matrix(M, N+, seed=seed)`` (or ``poisson_keep``), and model ``m``'s own randomness (MLP initialisation,
HGB subsampling) from ``SeedSequence(seed, spawn_key=(2, m))`` only — never from the order or the
process in which models are trained. BLAS runs single-threaded inside each fit (parallelism comes
from joblib), and the batched trainer solves fixed blocks of model indices (a resumed run recomputes
whole blocks), so a resumed run, or one with another ``n_jobs``, is bit-identical to an uninterrupted
one on the same machine and library versions (recorded in ``run.json``).

Run directory (format ``dpaudit.mia.run``, version 1)
-----------------------------------------------------
``run.json``
    ``{"format": "dpaudit.mia.run", "version": 1, "config": {dataset (null for a file), data (a file's
    path, sha256, rows, how its schema was obtained), model, n_models, pool_size, train_size, seed,
    pool_indices (row positions in the loaded data, sorted), features, label, model_params, design
    ({"name": "efficient"} or {"name": "poisson", "inclusion": N/N+}), trainer ({"name": "per-model"}
    or {"name": "batched", batch_size, gtol, max_iter}), score}, "versions": {python, numpy,
    scikit-learn, dpaudit}}``.
``keep.npy``
    bool, shape (M, N+).
``scores/model_00042.npy``
    float64, shape (N+,): model 42's score of every pool record, written atomically (temporary
    file, then ``os.replace``) once the model is finished. Missing files are unfinished models.

The score is ``φ = log p_y − log Σ_{c≠y} p_c`` (:func:`logit_confidence`); for the binary models
here it is computed exactly from the model's logit ``z``: ``φ = z`` if ``y`` is the positive class,
else ``−z``, finite however confident the model is (TabPFN exposes only probabilities: their
log-odds, each probability clipped to its dtype's smallest positive value).

Examples
--------
>>> logit_confidence(np.log([[0.9, 0.1], [0.2, 0.8]]), np.array([0, 0])).round(4).tolist()
[2.1972, -1.3863]
"""

from __future__ import annotations

import json
import os
import platform
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._errors import DataError, DPAuditError
from dpaudit._io import atomic_open, atomic_write_text
from dpaudit.mia.data import DATASETS, TrainingData, from_file, registered, sha256
from dpaudit.mia.designs import keep_matrix, poisson_keep
from dpaudit.mia.scores import ScoreSet

__all__ = ["train_run", "load_run", "logit_confidence", "tabpfn_checkpoint", "resolve_model", "DATASETS", "MODELS",
           "TRAINERS", "DESIGNS", "RUN_FORMAT", "RUN_VERSION"]

RUN_FORMAT = "dpaudit.mia.run"
RUN_VERSION = 1
MODELS = ("logreg", "mlp", "hgb", "tabpfn")
#: How the models are fitted: "per-model" (one scikit-learn pipeline per joblib task) or "batched"
#: (logistic regression only: :mod:`dpaudit.mia.batched_logreg`, ``batch_size`` models per task).
TRAINERS = ("auto", "batched", "per-model")
#: Membership designs: "efficient" (every record IN in exactly M/2 models, N = N+/2) or "poisson"
#: (every keep[m, x] an independent Bernoulli(N/N+) draw, any N; :func:`dpaudit.mia.scores.poisson_keep`).
DESIGNS = ("efficient", "poisson")
#: Environment variable naming a local TabPFN classifier checkpoint; dpaudit never downloads weights.
TABPFN_WEIGHTS_ENV = "DPAUDIT_TABPFN_WEIGHTS"

#: Hyper-parameters of the built-in models (recorded in run.json).
MODEL_PARAMS: dict[str, dict[str, Any]] = {
    "logreg": {"C": 1.0, "solver": "lbfgs", "max_iter": 1000, "tol": 1e-4},
    "mlp": {"hidden_layer_sizes": [64], "alpha": 1e-4, "max_iter": 200, "learning_rate_init": 1e-3},
    "hgb": {"max_iter": 100, "learning_rate": 0.1, "max_leaf_nodes": 31},
    "tabpfn": {"n_estimators": 4, "device": "cpu"},
}
#: Settings of the batched logistic-regression trainer (recorded in run.json): models per task,
#: gradient tolerance on the mean loss (sklearn's loop: tol = 1e-4), iteration cap.
BATCHED_PARAMS: dict[str, Any] = {"batch_size": 64, "gtol": 1e-8, "max_iter": 1000}


# --------------------------------------------------------------------------------------------- score
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


def _binary_logit(model: Any, X: Any, *, from_proba: bool = False) -> np.ndarray:
    """The fitted pipeline's logit of the positive class (``classes_[1]``), shape (n,).

    Exact for the built-in models with a decision function (and the MLP, whose forward pass is
    redone); a probability-only model (TabPFN) or a user's factory (``from_proba``) gives
    ``log p_1 − log p_0`` of its probabilities, each clipped to the smallest positive number of
    their dtype so the score stays finite.
    """
    from sklearn.neural_network import MLPClassifier

    clf = model[-1]
    if from_proba or (not hasattr(clf, "decision_function") and not isinstance(clf, MLPClassifier)):
        p = np.asarray(model.predict_proba(X))
        p = p if p.dtype.kind == "f" else p.astype(np.float64)
        logp = np.log(np.clip(p, np.finfo(p.dtype).tiny, None)).astype(np.float64)
        return logp[:, 1] - logp[:, 0]
    Xt = model[:-1].transform(X)
    if isinstance(clf, MLPClassifier):  # sklearn exposes only probabilities: redo the forward pass
        a = np.asarray(Xt, dtype=np.float64)
        for i, (W, b) in enumerate(zip(clf.coefs_, clf.intercepts_)):
            a = a @ W + b
            if i < len(clf.coefs_) - 1:
                a = np.maximum(a, 0.0)  # activation="relu"
        return a[:, 0]
    return np.asarray(clf.decision_function(Xt), dtype=np.float64)


# ---------------------------------------------------------------------------------------- training
def _model_seed(seed: int, m: int) -> int:
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
        params = dict(MODEL_PARAMS[model])
        if model == "tabpfn":
            params["weights_sha256"] = sha256(tabpfn_checkpoint())
        return model, params
    estimator = _call_factory(model)
    try:
        params = json.loads(json.dumps(estimator.get_params(deep=False), default=repr))
    except Exception:  # an estimator without sklearn's get_params: record its repr
        params = {"repr": repr(estimator)}
    return model, params


def _call_factory(model: str) -> Any:
    import importlib

    module_name, _, attr = model.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise DPAuditError(f"model {model!r}: cannot import {module_name!r} ({type(exc).__name__}: {exc}); install "
                           "it or put it on PYTHONPATH") from None
    factory = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise DPAuditError(f"model {model!r}: {module_name!r} has no attribute {attr!r}")
    if not callable(factory):
        raise DPAuditError(f"model {model!r}: {attr!r} is not callable; name a class or a function returning a "
                           "classifier")
    try:
        estimator = factory()
    except Exception as exc:
        raise DPAuditError(f"model {model!r}: calling {attr}() failed ({type(exc).__name__}: {exc})") from None
    missing = [m for m in ("fit", "predict_proba") if not callable(getattr(estimator, m, None))]
    if missing:
        raise DPAuditError(f"model {model!r}: {type(estimator).__name__} has no {' or '.join(missing)}; LiRA needs "
                           "a classifier with fit and predict_proba (scikit-learn API)")
    return estimator


def _make_pipeline(categorical: list[str], numeric: list[str], model: str, random_state: int) -> Any:
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    if model == "tabpfn":  # TabPFN encodes the raw frame itself (categorical strings included)
        from tabpfn import TabPFNClassifier

        clf = TabPFNClassifier(**MODEL_PARAMS["tabpfn"], model_path=str(tabpfn_checkpoint()),
                               random_state=random_state)
        return Pipeline([("pre", "passthrough"), ("clf", clf)])
    pre = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
         ("num", StandardScaler(), numeric)],
        remainder="drop",
    )
    if ":" in model:
        clf = _call_factory(model)
        if "random_state" in getattr(clf, "get_params", dict)():
            clf.set_params(random_state=random_state)
        return Pipeline([("pre", pre), ("clf", clf)])
    params = dict(MODEL_PARAMS[model])
    if model == "logreg":
        from sklearn.linear_model import LogisticRegression

        clf = LogisticRegression(**params)
    elif model == "mlp":
        from sklearn.neural_network import MLPClassifier

        params["hidden_layer_sizes"] = tuple(params["hidden_layer_sizes"])
        clf = MLPClassifier(**params, random_state=random_state)
    else:
        from sklearn.ensemble import HistGradientBoostingClassifier

        clf = HistGradientBoostingClassifier(**params, early_stopping=False, random_state=random_state)
    return Pipeline([("pre", pre), ("clf", clf)])


def _train_models(models: list[int], members: np.ndarray, features: Any, y: np.ndarray, categorical: list[str],
                  numeric: list[str], model: str, seed: int, trainer: str) -> list[tuple[int, np.ndarray]]:
    """Fit models ``models`` (one, or one batch; ``members[i]`` = ``keep[models[i]]``) on their pool
    rows; return each one's φ of every pool record."""
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1), warnings.catch_warnings():
        # A model stopped by max_iter is still a model of the experiment; don't abort the run.
        warnings.simplefilter("ignore", ConvergenceWarning)
        if trainer == "batched":
            from dpaudit.mia.batched_logreg import fit_pipelines

            logits = fit_pipelines(features, y, members, categorical=categorical, numeric=numeric,
                                   C=MODEL_PARAMS["logreg"]["C"], gtol=BATCHED_PARAMS["gtol"],
                                   max_iter=BATCHED_PARAMS["max_iter"]).logits
        else:
            logits = np.empty((len(models), len(y)))
            for row, (m, member) in enumerate(zip(models, members)):
                pipe = _make_pipeline(categorical, numeric, model, _model_seed(seed, m))
                pipe.fit(features.iloc[np.flatnonzero(member)], y[member])
                logits[row] = _binary_logit(pipe, features, from_proba=":" in model)
    return [(m, np.where(y == 1, z, -z)) for m, z in zip(models, logits)]


# -------------------------------------------------------------------------------------- run directory
def _versions() -> dict[str, str]:
    import sklearn

    from dpaudit import __version__ as dpaudit_version

    return {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__,
            "dpaudit": dpaudit_version}


def _score_path(out: Path, m: int) -> Path:
    return out / "scores" / f"model_{m:05d}.npy"


def _atomic_save(path: Path, array: np.ndarray) -> None:
    with atomic_open(path, "wb", fsync=True) as handle:
        np.save(handle, array, allow_pickle=False)


def _read_header(out: Path) -> dict[str, Any]:
    path = out / "run.json"
    if not path.is_file():
        raise DataError(f"{out} is not a dpaudit run directory: {path.name} is missing")
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{path} is corrupt (not valid JSON: {exc}); delete the run directory and train again") from None
    if not isinstance(header, dict) or header.get("format") != RUN_FORMAT or not isinstance(header.get("config"), dict):
        raise DataError(f"{path} is not a {RUN_FORMAT!r} file; delete it or choose another directory")
    if header.get("version") != RUN_VERSION:
        raise DataError(f"{path}: run format version {header.get('version')!r} is not supported (this dpaudit reads "
                        f"version {RUN_VERSION})")
    cfg = header["config"]
    for key, kind in (("n_models", int), ("pool_size", int), ("train_size", int), ("pool_indices", list)):
        if not isinstance(cfg.get(key), kind) or isinstance(cfg.get(key), bool):
            raise DataError(f"{path}: config.{key} is missing or not a {kind.__name__}")
    if len(cfg["pool_indices"]) != cfg["pool_size"]:
        raise DataError(f"{path}: config.pool_indices holds {len(cfg['pool_indices'])} entries, "
                        f"pool_size is {cfg['pool_size']}")
    return header


def _read_keep(out: Path, cfg: dict[str, Any]) -> np.ndarray:
    path = out / "keep.npy"
    if not path.is_file():
        raise DataError(f"{out}: keep.npy is missing (the membership of every model); the run directory is "
                        "incomplete: delete it and train again")
    try:
        keep = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"{path} is corrupt ({exc})") from None
    want = (cfg["n_models"], cfg["pool_size"])
    if keep.dtype != np.bool_ or keep.shape != want:
        raise DataError(f"{path}: expected a bool array of shape {want}, got {keep.dtype} {keep.shape}")
    return keep


def _read_score(out: Path, m: int, pool_size: int) -> np.ndarray:
    path = _score_path(out, m)
    try:
        row = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"{path} is corrupt ({exc}); delete it and resume to retrain that model") from None
    if row.dtype != np.float64 or row.shape != (pool_size,) or not np.isfinite(row).all():
        raise DataError(f"{path}: expected {pool_size} finite float64 scores, got {row.dtype} {row.shape}; "
                        "delete it and resume to retrain that model")
    return row


def _finished(out: Path, n_models: int) -> list[int]:
    return [m for m in range(n_models) if _score_path(out, m).is_file()]


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise DPAuditError(f"{name} must be a whole number ≥ {minimum}, got {value!r}")
    return int(value)


def _progress(enabled: bool, total: int, done: int) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = Console(stderr=True)
    bar = Progress(TextColumn("training models"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                   console=console, disable=not (enabled and console.is_terminal), transient=False)
    return bar


def _require_ml() -> None:
    try:
        import joblib  # noqa: F401
        import sklearn  # noqa: F401
        import threadpoolctl  # noqa: F401
    except ImportError as exc:
        raise DPAuditError(f"training models needs scikit-learn and joblib ({exc}): pip install 'dpaudit[mia]'") from None


def train_run(
    out_dir: str | os.PathLike[str],
    *,
    dataset: str | None = None,
    data: str | os.PathLike[str] | None = None,
    label: str | None = None,
    positive: Any = None,
    schema: Any = None,
    model: str = "logreg",
    n_models: int,
    pool_size: int,
    train_size: int | None = None,
    design: str = "efficient",
    seed: int = 0,
    n_jobs: int = 1,
    resume: bool = False,
    progress: bool = True,
    trainer: str = "auto",
    batch_size: int | None = None,
) -> Path:
    """Train M models on membership splits of a pool and write their scores to ``out_dir``.

    Parameters
    ----------
    out_dir : path
        The run directory (module docstring). Must not exist or be empty unless ``resume``.
    dataset : {"adult", "credit"}, optional
        A registered dataset with a fixed feature list (:data:`DATASETS`); the default when no
        ``data`` is given is ``"adult"``.
    data : path, optional
        Instead of ``dataset``: the user's CSV or Parquet file (:func:`dpaudit.mia.data.from_file`),
        with ``label`` (required), ``positive`` (default: the larger label in string order) and
        ``schema`` (a Schema or schema JSON path declaring the features; default: inferred from the
        column types).
    model : str
        ``"logreg"`` (C = 1; deterministic, all variance from data sampling), ``"mlp"`` (one hidden
        layer of 64), ``"hgb"`` (histogram gradient-boosted trees; :data:`MODEL_PARAMS`), ``"tabpfn"``
        (only when the ``tabpfn`` package is installed and ``$DPAUDIT_TABPFN_WEIGHTS`` names a local
        checkpoint, :func:`tabpfn_checkpoint`), or ``"package.module:factory"``: any importable
        callable returning a scikit-learn-compatible classifier with ``predict_proba``
        (:func:`resolve_model`), fitted after the same preprocessing (one-hot categoricals, scaled
        numerics) and scored by the log-odds of its probabilities.
    n_models : int
        M, ≥ 6 (leave-one-out fits need 3 IN and 3 OUT models per record); even for the efficient design.
    pool_size : int
        N+, records drawn without replacement from the data.
    train_size : int, optional
        N, the expected training-set size. The efficient design fixes N = N+ // 2; the Poisson design
        takes any 0 < N < N+ (default N+ // 2). The FPC of the evaluation is 1 − N/N+.
    design : {"efficient", "poisson"}
        The membership design (:data:`DESIGNS`): efficient LiRA's (every record IN in exactly M/2
        models, :func:`~dpaudit.mia.scores.keep_matrix`) or Poisson sampling (record x in model m's
        training set with probability N/N+, independently; :func:`~dpaudit.mia.scores.poisson_keep`).
    seed : int
        Root of all randomness (module docstring, "Reproducibility").
    n_jobs : int
        joblib workers (-1: all cores). Runs under any joblib backend
        (``with joblib.parallel_config(backend="dask"): train_run(...)``). A factory's module must be
        importable in the workers (installed, or on ``PYTHONPATH``).
    resume : bool
        Keep finished models of an existing run with the same configuration; train the rest. The
        result is bit-identical to an uninterrupted run.
    progress : bool
        Show a progress bar (models done, rate, ETA) on stderr when it is a terminal.
    trainer : {"auto", "batched", "per-model"}
        ``"batched"`` fits logistic-regression models ``batch_size`` at a time by
        :func:`dpaudit.mia.batched_logreg.fit_pipelines` (the same pipelines' exact minimisers, solved
        to a 10⁴× tighter gradient tolerance than sklearn's L-BFGS default; ~15× faster than the
        loop, ``benchmarks/bench_mia_train.py``); ``"per-model"`` fits one scikit-learn pipeline per
        task. ``"auto"``: batched for logreg, per-model otherwise. Recorded in ``run.json``.
    batch_size : int, optional
        Models per batched task (default ``BATCHED_PARAMS["batch_size"]`` = 64). Batches are fixed
        blocks of model indices, so a resumed run recomputes whole batches and stays bit-identical;
        another batch size changes scores only by rounding (≲ 1e-7).

    Returns
    -------
    Path
        ``out_dir``; read it with :func:`load_run`.

    Raises
    ------
    DPAuditError
        Bad arguments, an unusable data file or model, or a training set with one class. All are
        checked before anything is written. DataError: a run directory that exists (without
        ``resume``), is corrupt, or holds a different configuration.
    """
    _require_ml()
    from joblib import Parallel, delayed

    if data is None and (label is not None or positive is not None or schema is not None):
        raise DPAuditError("label, positive and schema describe a data file: pass it with data=... (--data FILE)")
    if data is not None and dataset is not None:
        raise DPAuditError("give either a registered dataset or a data file, not both")
    model, model_params = resolve_model(model)
    n_models = _check_int("n_models", n_models, 6)
    pool_size = _check_int("pool_size", pool_size, 4)
    if design not in DESIGNS:
        raise DPAuditError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
    if design == "efficient":
        if n_models % 2:
            raise DPAuditError(f"n_models must be even (every record IN in exactly M/2 models), got {n_models}")
        if train_size is not None and train_size != pool_size // 2:
            raise DPAuditError(
                f"train_size must be pool_size // 2 = {pool_size // 2} under the efficient design (each model trains "
                f"on half the pool on average), got {train_size!r}; use design 'poisson' (--design poisson) for "
                "another training-set size")
    train_size = pool_size // 2 if train_size is None else _check_int("train_size", train_size, 1)
    if not train_size < pool_size:
        raise DPAuditError(f"train_size must be smaller than pool_size = {pool_size}, got {train_size}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise DPAuditError(f"seed must be a whole number ≥ 0, got {seed!r}")
    seed = int(seed)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise DPAuditError(f"n_jobs must be a non-zero whole number (-1: all cores), got {n_jobs!r}")
    if trainer not in TRAINERS:
        raise DPAuditError(f"trainer must be one of {', '.join(TRAINERS)}, got {trainer!r}")
    if trainer == "auto":
        trainer = "batched" if model == "logreg" else "per-model"
    if trainer == "batched" and model != "logreg":
        raise DPAuditError(f"trainer 'batched' fits logistic regression only, not {model!r}; use trainer 'per-model'")
    if batch_size is not None and trainer != "batched":
        raise DPAuditError("batch_size applies to trainer 'batched' only")
    batch = _check_int("batch_size", BATCHED_PARAMS["batch_size"] if batch_size is None else batch_size, 1)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DataError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not resume:
        raise DataError(f"{out} is not empty; pass resume=True (--resume) to continue that run, or choose a new directory")

    if data is not None:
        if label is None:
            raise DPAuditError("a data file needs its label column: label=... (--label COL)")
        source = from_file(data, label=label, positive=positive, schema=schema)
    else:
        source = registered(dataset or "adult")
    n_rows = len(source.frame)
    if pool_size > n_rows:
        raise DPAuditError(f"pool_size {pool_size} exceeds the {n_rows:,} rows of {source.name!r}")
    pool_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    pool_idx = np.sort(pool_rng.choice(n_rows, size=pool_size, replace=False))
    if design == "efficient":
        keep = keep_matrix(n_models, pool_size, seed=seed)
        design_cfg: dict[str, Any] = {"name": "efficient"}
    else:
        keep = poisson_keep(n_models, pool_size, inclusion=train_size / pool_size, seed=seed)
        design_cfg = {"name": "poisson", "inclusion": train_size / pool_size,
                      "mean_train_size": float(keep.sum(axis=1).mean())}
    y = source.labels(pool_idx)
    _check_two_classes(keep, y)
    config = {
        **source.config(), "model": model, "n_models": n_models, "pool_size": pool_size,
        "train_size": train_size, "seed": seed, "pool_indices": pool_idx.tolist(),
        "model_params": model_params, "design": design_cfg,
        "trainer": {"name": trainer, **({**BATCHED_PARAMS, "batch_size": batch} if trainer == "batched" else {})},
        "score": "logit-scaled confidence log p_y - log sum_{c!=y} p_c",
    }
    header = {"format": RUN_FORMAT, "version": RUN_VERSION, "config": config, "versions": _versions()}

    if (out / "run.json").exists() or (out / "keep.npy").exists():
        old = _read_header(out)
        old["config"].setdefault("trainer", {"name": "per-model"})  # runs written before trainers were recorded
        old["config"].setdefault("design", {"name": "efficient"})  # ... and before designs were
        if old["config"] != config:
            diff = sorted(k for k in set(old["config"]) | set(config) if old["config"].get(k) != config.get(k))
            raise DataError(f"{out} holds a run with a different configuration (differs in: {', '.join(diff)}); "
                            "resume with the same options or choose a new directory")
        if old.get("versions") != header["versions"]:
            raise DataError(f"{out} was trained with {old.get('versions')}, this is {header['versions']}: resuming "
                            "would not be bit-identical; finish it with the original versions or start a new directory")
        if not np.array_equal(_read_keep(out, config), keep):
            raise DataError(f"{out}/keep.npy does not match the configuration's keep matrix; the run directory is corrupt")
    else:
        out.mkdir(parents=True, exist_ok=True)
        _atomic_save(out / "keep.npy", keep)
        atomic_write_text(out / "run.json", json.dumps(header, indent=1) + "\n")
    (out / "scores").mkdir(exist_ok=True)
    for stale in (out / "scores").glob("*.tmp"):  # left by a killed run (hidden temporaries and older names)
        stale.unlink()
    done = _finished(out, n_models)
    for m in done:
        _read_score(out, m, pool_size)  # refuse to build on a corrupt file
    finished = set(done)
    # Tasks: one model each, or the fixed blocks [k·batch, (k+1)·batch) that still miss a model (a
    # block is recomputed whole, so its models come out as in an uninterrupted run).
    size = batch if trainer == "batched" else 1
    tasks = [list(range(lo, min(lo + size, n_models))) for lo in range(0, n_models, size)]
    tasks = [t for t in tasks if not finished.issuperset(t)]
    if not tasks:
        return out

    features = source.features(pool_idx)
    jobs = (delayed(_train_models)(t, keep[t], features, y, source.categorical, source.numeric, model, seed, trainer)
            for t in tasks)
    runner = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    bar = _progress(progress, n_models, len(done))
    start, new = time.perf_counter(), 0
    with bar:
        task = bar.add_task("train", total=n_models, completed=len(done), rate="")
        for results in runner(jobs):
            for m, row in results:
                if m not in finished:
                    _atomic_save(_score_path(out, m), row)
                    new += 1
                    bar.update(task, advance=1)
            bar.update(task, rate=f"{new / max(time.perf_counter() - start, 1e-9):.2f} models/s")
    return out


def _check_two_classes(keep: np.ndarray, y: np.ndarray) -> None:
    """Refuse (before anything is written) a design in which some model's training set has one class."""
    positives = keep.astype(np.int64) @ y
    sizes = keep.sum(axis=1)
    bad = np.flatnonzero((positives == 0) | (positives == sizes))
    if bad.size:
        m = int(bad[0])
        raise DataError(f"model {m}'s training set ({int(sizes[m])} records) holds only one class, as do {bad.size} "
                        "model(s) in all; use a larger pool (or train_size) or a label with both classes common")


def load_run(run_dir: str | os.PathLike[str]) -> ScoreSet:
    """Read a finished run directory as a :class:`ScoreSet` (scores M × N+, keep, N, N+).

    Raises
    ------
    DataError
        The directory is not a run, is corrupt, or some models are unfinished (say how many; finish
        them with ``train_run(..., resume=True)`` / ``dpaudit mia train --resume``).
    """
    out = Path(run_dir)
    if not out.is_dir():
        raise DataError(f"{out} is not a directory (expected a run directory written by dpaudit mia train)")
    header = _read_header(out)
    cfg = header["config"]
    keep = _read_keep(out, cfg)
    n_models, pool_size = cfg["n_models"], cfg["pool_size"]
    done = set(_finished(out, n_models))
    missing = [m for m in range(n_models) if m not in done]
    if missing:
        raise DataError(f"{out}: {len(missing)} of {n_models} models are unfinished (first: model_{missing[0]:05d}); "
                        "finish them with `dpaudit mia train --resume` (train_run(..., resume=True))")
    score = np.stack([_read_score(out, m, pool_size) for m in range(n_models)])
    meta = {k: cfg[k] for k in ("dataset", "model", "seed") if cfg.get(k) is not None}
    if "data" in cfg:
        meta["data"] = cfg["data"].get("file")
    meta["design"] = cfg.get("design", {"name": "efficient"}).get("name", "efficient")
    trainer = cfg.get("trainer")  # absent in runs written before trainers were recorded
    meta["trainer"] = trainer.get("name", "per-model") if isinstance(trainer, dict) else "per-model"
    meta.update(source=RUN_FORMAT, run_dir=str(out), versions=header.get("versions", {}))
    return ScoreSet(score, keep, train_size=cfg["train_size"], pool_size=pool_size, meta=meta)

