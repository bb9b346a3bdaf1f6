"""Audit a learner's (ε, δ)-DP claim: train it with canaries, bound ε from below, give the verdict.

:func:`audit_dp` runs the whole audit (Steinke, Nasr & Jagielski, "Privacy Auditing with One (1)
Training Run", NeurIPS 2023; multi-run: Jagielski, Ullman & Oprea 2020, Nasr et al. 2021):

1. **Data** — a registered dataset (its declared task and schema) or the user's frame/file with a
   declared schema (:mod:`dpaudit.mia.train.data`); features in the unit ball from the schema only
   (:func:`dpaudit.mia.claim.features.unit_features`: no data-derived scaling).
2. **Design** — m canaries (:func:`dpaudit.mia.claim.canaries.choose_canaries`); every other record
   (not the canaries' source rows) is in every training set; in model j each canary is in with
   probability ½, independently (:func:`dpaudit.mia.claim.canaries.include`, seeded per model).
3. **Training** — M models of the learner at the claimed (ε, δ), each seeded by
   :func:`dpaudit.mia.train.models.model_seed` (seed, j), through joblib as ``dpaudit mia train``
   fits (one BLAS thread per fit): the scores are bit-identical on a re-run with the same seed.
   The score of a canary is the model's logit signed by the canary's label (higher = "in").
4. **Bounds** — the one-run bounds (:data:`ONE_RUN_BOUNDS`: Steinke et al.'s, and the f-DP/GDP one of
   Mahloujifar, Melis & Chaudhuri, :func:`~dpaudit.mia.dp_audit_fdp.epsilon_lower_bound_one_run_fdp`)
   take **all M·m (model, canary) pairs as one audit**: the theorems need a mechanism that is (ε, δ)-DP
   (f-DP) with respect to each inclusion coin, and M independently trained models are, since coin
   (i, j) changes model j's training set by one record and no other model (Steinke et al. §1: the
   analysis interpolates between one run and many). The guesses may be any function of all M models,
   so each model's scores are centred on their median over its m canaries (:func:`pooled_scores`),
   which removes the model-to-model shift of every canary's score (a model that took in more canaries
   scores all of them higher). Guesses: the top r of the M·m centred scores, r on a grid fixed in
   advance (``strategy="grid"`` of :func:`~dpaudit.mia.dp_audit.one_run_audit`), ties in an order
   seeded by ``design_seed(seed, 3)``. With M = 1 this is model 0's one-run audit.
   With M > 1, the multi-run bound (:func:`~dpaudit.mia.dp_audit_multi.multi_run_split_canaries`, on the
   same centred scores): on a random half of the models (seeded by ``design_seed(seed, 4)``) the
   canary, threshold and direction of the largest bound are chosen; the other half's models bound that
   canary there. The halves are independent runs, so neither the choice among m canaries nor the
   threshold needs a correction (a Bonferroni maximum over m canaries and 2M thresholds costs a
   ln(2Mm/β) wide Clopper–Pearson limit instead of ln(2/β) on half the models).
5. **Verdict** — :func:`~dpaudit.mia.dp_audit_multi.audit_verdict` over the k bounds, each computed
   at level 1 − (1 − ``level``)/k, so "claim violated" is wrong with probability ≤ 1 − ``level``
   for a learner that meets its claim.
6. **Contrast** — the same design (same canaries, same inclusion draws and seeds) with the
   learner's non-private counterpart (``dp-sgd*`` → ``sgd``, other ``dp-*`` → ``logreg``), its bounds
   reported beside.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import number, one_of, whole_number
from dpaudit.mia._defaults import (
    DEFAULT_AUDIT_LEVEL,
    DEFAULT_CANARY_COUNT,
    DEFAULT_CANARY_KIND,
    DEFAULT_DP_DELTA,
    DEFAULT_DP_LEARNER,
)
from dpaudit.mia.claim.result import NOT_IN_VERDICT, DPClaimAudit
from dpaudit.mia.dp_audit import DPAuditBound, epsilon_lower_bound_one_run
from dpaudit.mia.dp_audit_fdp import epsilon_lower_bound_one_run_fdp
from dpaudit.mia.dp_audit_multi import audit_verdict, multi_run_split_canaries

__all__ = ["audit_dp", "ONE_RUN_BOUNDS", "DEFAULT_CANARIES", "design_seed", "design", "load_data", "canary_scores_of",
           "non_private_counterpart", "pooled_scores"]

def _steinke(scores_in: np.ndarray, scores_out: np.ndarray, delta: float, level: float, seed: int) -> DPAuditBound:
    return epsilon_lower_bound_one_run(scores_in, scores_out, delta=delta, confidence=level, strategy="grid",
                                       seed=seed)


def _fdp(scores_in: np.ndarray, scores_out: np.ndarray, delta: float, level: float, seed: int) -> DPAuditBound:
    return epsilon_lower_bound_one_run_fdp(scores_in, scores_out, delta=delta, confidence=level, strategy="grid",
                                           seed=seed)


#: The one-run bounds of an audit, name → function(scores_in, scores_out, delta, level, seed) → DPAuditBound
#: (each guessing the top r on the grid of guess counts); a new bound is one entry here.
ONE_RUN_BOUNDS: dict[str, Callable[[np.ndarray, np.ndarray, float, float, int], DPAuditBound]] = {
    "one-run": _steinke,
    "one-run f-DP": _fdp,
}


#: The number of canaries m when none is given.
DEFAULT_CANARIES = DEFAULT_CANARY_COUNT


def design_seed(seed: int, *key: int) -> int:
    """An independent 32-bit seed for one part of the design (``key``: (0,) canaries, (1, j) model j's inclusion).

    Examples
    --------
    >>> design_seed(0, 1, 3) == design_seed(0, 1, 3) != design_seed(0, 1, 4)
    True
    """
    return int(np.random.SeedSequence(seed, spawn_key=(27, *key)).generate_state(1)[0])


def load_data(data: Any, *, label: Any = None, positive: Any = None, schema: Any = None) -> tuple[Any, Any]:
    """The records (:class:`~dpaudit.mia.train.data.TrainingData`) and the schema that declares their features.

    ``data``: a registered dataset's name (its task and schema; ``schema`` may replace the latter),
    or a frame / CSV / Parquet path with ``label`` and a declared ``schema`` (required: the audit's
    feature scaling comes from declared domains only).
    """
    from dpaudit import datasets
    from dpaudit.mia.train.data import _schema, from_data, registered

    if isinstance(data, str) and data in datasets.names():
        td = registered(data)
        if label is not None and label != td.label:
            raise DataError(f"dataset {data!r} declares the label {td.label!r}; leave out label={label!r} or pass the "
                            "data as a file")
        return td, _schema(schema) if schema is not None else datasets.info(data).schema
    if isinstance(data, str) and not Path(data).exists():
        with_task = [n for n in datasets.names() if datasets.info(n).task is not None]
        raise DataError(f"{data!r} is neither a registered dataset with a prediction task ({', '.join(with_task)}) "
                        "nor a data file")
    if schema is None:
        raise DataError("the audit scales every feature to its declared domain, never to the data's: pass a schema "
                        "(--schema FILE) declaring each feature (Categorical values, or Binned with finite edges)")
    if label is None:
        raise DataError("name the label column (--label COLUMN) of your data")
    schema = _schema(schema)
    return from_data(data, label=label, positive=positive, schema=schema), schema


def base_sample(n: int, base_rows: int | None, seed: int) -> np.ndarray:
    """The rows of the base set: all ``n``, or ``base_rows`` of them drawn without replacement with seed
    ``design_seed(seed, 2)`` (sorted). A DP claim holds for every data set, so an auditor may train on few
    rows: the fewer the base rows, the more room the canaries have (``"orthogonal"`` ones above all)."""
    if base_rows is None or base_rows >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(design_seed(seed, 2)).choice(n, size=base_rows, replace=False))


def design(X: np.ndarray, y: np.ndarray, kind: str, m: int, models: int, seed: int,
           vulnerability: np.ndarray | None = None, base_rows: int | None = None
           ) -> tuple[Any, np.ndarray, np.ndarray]:
    """The audit's design: the canaries, the base rows (every row — or ``base_rows`` drawn rows — but the
    canaries' sources: in every model) and the inclusion masks (M, m), model j's drawn with seed
    ``design_seed(seed, 1, j)``. ``"orthogonal"`` canaries are the base rows' least-variance directions."""
    from dpaudit.mia.claim.canaries import choose_canaries, include

    rows = base_sample(len(y), base_rows, seed)
    if kind == "orthogonal":
        c = choose_canaries(X[rows], y[rows], kind, m, seed=design_seed(seed, 0))
    else:
        c = choose_canaries(X, y, kind, m, seed=design_seed(seed, 0), vulnerability=vulnerability)
    keep = np.zeros(len(y), dtype=bool)
    keep[rows] = True
    if c.source_rows is not None:
        keep[np.asarray(c.source_rows, dtype=np.int64)] = False
    masks = np.vstack([include(m, seed=design_seed(seed, 1, j)) for j in range(models)])
    return c, keep, masks


def non_private_counterpart(learner: Any, contrast: bool | str) -> Any:
    """The contrast learner: ``contrast`` named, or for ``contrast=True`` the counterpart of a built-in ``dp-*``
    learner: ``sgd`` (the same SGD without clipping or noise) of ``dp-sgd*``, ``logreg`` of the others."""
    from dpaudit.mia.claim.learners import resolve_learner

    if contrast is False or contrast is None:
        return None
    if isinstance(contrast, str):
        return resolve_learner(contrast)
    if contrast is True:
        if not learner.name.startswith("dp-") or ":" in learner.name:
            return None
        return resolve_learner("sgd" if learner.name.startswith("dp-sgd") else "logreg")
    raise DPAuditError(f"contrast must be True, False or a learner's name, got {contrast!r}")


def _fit_score(name: str, epsilon: float, delta: float, random_state: int, X: np.ndarray, y: np.ndarray,
               X_canary: np.ndarray, y_canary: np.ndarray) -> np.ndarray:
    """One model: ``build(ε, δ, random_state)`` fitted on (X, y), and the canaries' signed logits φ."""
    import warnings

    from sklearn.pipeline import Pipeline
    from threadpoolctl import threadpool_limits

    from dpaudit.mia.claim.learners import resolve_learner
    from dpaudit.mia.train.models import binary_logit, failure, probability_logit

    learner = resolve_learner(name)
    try:
        with threadpool_limits(limits=1), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # diffprivlib's PrivacyLeakWarning / convergence chatter
            clf = learner.build(epsilon, delta, random_state)
            clf.fit(X, y)
            z = (probability_logit(clf, X_canary) if ":" in name  # a user's object need not be a sklearn estimator
                 else binary_logit(Pipeline([("pre", "passthrough"), ("clf", clf)]), X_canary))
    except DPAuditError:
        raise
    except Exception as exc:  # a learner's own failure: one line naming it
        raise failure(name, [random_state], exc) from None
    if z.shape != (len(X_canary),) or not np.all(np.isfinite(z)):
        raise failure(name, [random_state], "its canary scores are not finite numbers, one per canary")
    return np.where(y_canary == 1, z, -z)


def canary_scores_of(learner: Any, epsilon: float, delta: float, base: tuple[np.ndarray, np.ndarray], canaries: Any,
                     masks: np.ndarray, seed: int, n_jobs: int | None) -> np.ndarray:
    """Scores (M, m) of the canaries on M models; model j trains on the base set and the canaries ``masks[j]``."""
    from joblib import delayed

    from dpaudit.mia.train.backends import local_runner
    from dpaudit.mia.train.models import model_seed

    X0, y0 = base

    def task(j: int) -> Any:
        X = np.vstack([X0, canaries.X[masks[j]]])
        y = np.concatenate([y0, canaries.y[masks[j]]]).astype(np.int64)
        return delayed(_indexed)(j, learner.name, epsilon, delta, model_seed(seed, j), X, y, canaries.X, canaries.y)

    out = np.empty(masks.shape)
    for j, s in local_runner(n_jobs)(task(j) for j in range(masks.shape[0])):
        out[j] = s
    return out


def _indexed(j: int, *args: Any) -> tuple[int, np.ndarray]:
    return j, _fit_score(*args)


def pooled_scores(scores: np.ndarray) -> np.ndarray:
    """Scores (M, m) centred per model: ``scores[j] − median(scores[j])``, the one-run audit's guessing score.

    A function of each model's own output, so the pooled one-run audit stays valid (module docstring);
    with M = 1 a constant shift, which leaves the guesses as they were."""
    return scores - np.median(scores, axis=1, keepdims=True)


def _bounds(scores: np.ndarray, masks: np.ndarray, delta: float, per_bound: float, seed: int
            ) -> tuple[dict[str, DPAuditBound], int | None]:
    """Each method's bound at level ``per_bound``: the one-run ones over all M·m pairs, with M > 1 the multi-run one."""
    if masks.all() or not masks.any():
        raise DataError(f"the models include {int(masks.sum())} of {masks.size} (model, canary) pairs; the one-run "
                        "audit needs some in and some out: use more canaries")
    centred = pooled_scores(scores)
    out = {name: fn(centred[masks], centred[~masks], delta, per_bound, design_seed(seed, 3))
           for name, fn in ONE_RUN_BOUNDS.items()}
    if masks.shape[0] == 1:
        return out, None
    b, i = multi_run_split_canaries(centred, masks, delta=delta, confidence=per_bound, seed=design_seed(seed, 4))
    out["multi-run"] = replace(b, strategy=f"split, canary chosen of {masks.shape[1]}")
    return out, i


#: Libraries of the learners whose versions a result records beside :func:`dpaudit.mia.train.run.versions`'.
LEARNER_LIBRARIES = ("diffprivlib", "jax", "jax-privacy")


def run_versions() -> dict[str, str]:
    """Python, numpy, scikit-learn, dpaudit and the installed learner libraries (:data:`LEARNER_LIBRARIES`)."""
    from importlib import metadata

    from dpaudit.mia.train.run import versions

    out = versions()
    for name in LEARNER_LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def audit_dp(data: Any, *, label: Any = None, epsilon: float, delta: float = DEFAULT_DP_DELTA,
             learner: str = DEFAULT_DP_LEARNER, canaries: str = DEFAULT_CANARY_KIND, m: int = DEFAULT_CANARIES,
             models: int = 1, seed: int = 0, level: float = DEFAULT_AUDIT_LEVEL, positive: Any = None, schema: Any = None, contrast: bool | str = True,
             vulnerability: Any = None, base_rows: int | None = None, n_jobs: int | None = None) -> DPClaimAudit:
    """Audit the claim "``learner`` at (``epsilon``, ``delta``) is (ε, δ)-DP" (module docstring).

    Parameters
    ----------
    data : str, DataFrame or path
        A registered dataset's name ("adult"), or the user's records (with ``label``, ``schema``).
    epsilon, delta : float
        The claim; the learner is built with them.
    learner : str
        A built-in learner (:data:`dpaudit.mia.claim.learners.LEARNERS`) or ``pkg.mod:factory``.
    canaries : str
        ``mislabelled``, ``ood`` or ``vulnerable`` (:mod:`dpaudit.mia.claim.canaries`; ``vulnerable``
        needs ``vulnerability``, one number per record of the data).
    m, models : int
        Canaries and models M (M = 1: the one-run audit; M ≥ 4 pools the M·m pairs in the one-run bounds and
        adds the multi-run bound; 2 and 3 are refused).
    seed : int
        Every draw and fit derives from it: a re-run is bit-identical.
    level : float
        Confidence of the verdict (each of its k bounds at 1 − (1 − level)/k).
    contrast : bool or str
        True: the non-private counterpart of a built-in ``dp-*`` learner; a name: that learner; False: none.
        When its bounds are ≤ the claim too, the answer says the design could not tell a non-private model.
    base_rows : int, optional
        Train on this many rows of the data (drawn with the seed) instead of all of them.
    n_jobs : int, optional
        joblib workers for the model fits (default 1).

    Raises
    ------
    DPAuditError
        Bad arguments, data or schema (one line each), a learner that fails to train.
    """
    from dpaudit.mia.claim.canaries import CANARY_KINDS
    from dpaudit.mia.claim.features import unit_features
    from dpaudit.mia.claim.learners import resolve_learner
    from dpaudit.mia.metrics._inputs import check_level
    from dpaudit.mia.train.backends import _check_n_jobs, require_ml
    require_ml()
    eps = number("epsilon", epsilon, low=0.0, low_open=True, error=DataError)
    dlt = number("delta", delta, low=0.0, high=1.0, high_open=True, error=DataError)
    level = check_level(level)
    m = whole_number("m", m, minimum=2, error=DataError)
    models = whole_number("models", models, minimum=1, error=DataError)
    if models in (2, 3):
        raise DataError(f"models = {models}: use 1 (the one-run audit) or at least 4 (the multi-run bound chooses on "
                        "half of the models and bounds on the other half)")
    seed = whole_number("seed", seed, minimum=0, error=DataError)
    if n_jobs is not None:
        n_jobs = _check_n_jobs(n_jobs)
    if base_rows is not None:
        base_rows = whole_number("base_rows", base_rows, minimum=1, error=DataError)
    canaries = one_of("canaries", canaries, CANARY_KINDS, error=DataError)
    if (canaries == "vulnerable") != (vulnerability is not None):
        raise DataError("canaries 'vulnerable' are the records of highest vulnerability: give vulnerability (one "
                        "number per record) with them, and only with them")
    chosen = resolve_learner(learner)
    other = non_private_counterpart(chosen, contrast)
    td, declared = load_data(data, label=label, positive=positive, schema=schema)
    X = unit_features(td.frame, td.categorical + td.numeric, declared)
    y = td.labels()
    if m >= len(y):
        raise DataError(f"m = {m:,} canaries from {len(y):,} records leaves no base set; use fewer canaries")
    if vulnerability is not None:
        vulnerability = np.asarray(vulnerability, dtype=np.float64)
    c, keep, masks = design(X, y, canaries, m, models, seed, vulnerability, base_rows)
    base = (X[keep], y[keep])
    k = len([n for n in ONE_RUN_BOUNDS if n not in NOT_IN_VERDICT]) + (models > 1)
    per_bound = 1.0 - (1.0 - level) / k

    scores = canary_scores_of(chosen, eps, dlt, base, c, masks, seed, n_jobs)
    bounds, which = _bounds(scores, masks, dlt, per_bound, seed)
    contrast_bounds = None
    if other is not None:
        contrast_bounds, _ = _bounds(canary_scores_of(other, eps, dlt, base, c, masks, seed, n_jobs), masks, dlt,
                                     per_bound, seed)
    return DPClaimAudit(
        claimed_epsilon=eps, delta=dlt, learner=chosen.name, learner_description=chosen.description,
        private=bool(chosen.private), data=td.name, n_records=int(len(y)), n_features=int(X.shape[1]),
        base_rows=int(keep.sum()),
        canaries=c.kind, canary_description=c.description, m=m, models=models, level=level, seed=seed,
        bounds=bounds, verdict=audit_verdict(eps, {n: b for n, b in bounds.items() if n not in NOT_IN_VERDICT}),
        included=tuple(int(r.sum()) for r in masks),
        multi_run_canary=which, contrast_learner=None if other is None else other.name,
        contrast_bounds=contrast_bounds, versions=run_versions())
