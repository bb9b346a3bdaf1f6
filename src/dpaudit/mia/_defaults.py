"""The choices and defaults of membership-inference evaluation, simulation and training.

One definition each: the modules whose concept a value belongs to import it from here (and re-export
it where it always was: ``dpaudit.mia.evaluate.DEFAULT_FPR``, ``dpaudit.mia.simulate.FPC_DEFAULTS``,
``dpaudit.mia.train.trainer.DEFAULT_TRAINER``, …). They live here, in a module that imports nothing but
:mod:`typing`, because ``dpaudit mia … --help`` shows them: the command's help then loads no numpy,
scipy or scikit-learn (``tests/test_import_light.py``), while evaluating a score file loads what it
uses.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "ATTACK_TITLES", "DEFAULT_ATTACK", "DEFAULT_FPR", "DEFAULT_N_BOOT", "Sign", "SIGNS", "DEFAULT_SIGN",
    "ThresholdKind", "THRESHOLD_KINDS", "DEFAULT_THRESHOLD", "References", "REFERENCES", "DEFAULT_REFERENCES",
    "FPC_DESIGNS", "FPC_DEFAULTS", "MAX_REPEATS", "MODEL_NAMES", "DEFAULT_MODEL", "TABPFN_WEIGHTS_ENV", "TRAINERS",
    "DESIGNS", "DEFAULT_DATASET", "DEFAULT_DESIGN", "DEFAULT_TRAINER", "BACKENDS", "DEFAULT_BACKEND",
    "DEFAULT_DP_LEARNER", "DEFAULT_CANARY_KIND", "DEFAULT_CANARY_COUNT", "DEFAULT_DP_DELTA", "DEFAULT_AUDIT_LEVEL",
]

# -- evaluation (dpaudit.mia.evaluate) -----------------------------------------------------------------
#: The registered attacks' titles by name, in registration order (each attack class takes its ``title``
#: from here; :data:`dpaudit.mia.attacks.ATTACKS` holds the classes).
ATTACK_TITLES = {"lira": "LiRA (online)", "rmia": "RMIA"}
#: The attack of an evaluation that names none.
DEFAULT_ATTACK = "lira"
#: The target false-positive rates α unless the caller asks for others.
DEFAULT_FPR: tuple[float, ...] = (1e-2, 1e-3)
#: Bootstrap replicates unless the caller asks for another number (:func:`dpaudit.mia.metrics.bootstrap_ci`,
#: :func:`dpaudit.mia.evaluate.evaluate`, ``dpaudit mia evaluate --n-boot``).
DEFAULT_N_BOOT = 200
#: sign(Δ) of the PP transform: from the leave-one-out fits (the MIA paper), or +1
#: (:func:`dpaudit.mia.calibrate.pp_transform`).
Sign = Literal["fitted", "positive"]
SIGNS: tuple[Sign, ...] = get_args(Sign)
DEFAULT_SIGN: Sign = "fitted"
#: The PP threshold: the Student-t predictive quantile or the normal one (:func:`dpaudit.mia.calibrate.threshold`).
ThresholdKind = Literal["t", "normal"]
THRESHOLD_KINDS: tuple[ThresholdKind, ...] = get_args(ThresholdKind)
DEFAULT_THRESHOLD: ThresholdKind = "t"
#: How a target's reference fits are chosen (:mod:`dpaudit.mia.references`).
References = Literal["balanced", "loo"]
REFERENCES: tuple[References, ...] = get_args(References)
DEFAULT_REFERENCES: References = "balanced"

# -- simulation (dpaudit.mia.simulate.fpc) --------------------------------------------------------------
#: The training-set designs :func:`~dpaudit.mia.simulate.fpc_simulation` compares, the first its default.
FPC_DESIGNS = ("efficient", "subsets")
#: The sizes :func:`~dpaudit.mia.simulate.fpc_simulation` (and ``dpaudit mia simulate fpc``) uses unless told otherwise.
FPC_DEFAULTS = {"pool_size": 1000, "train_size": 500, "n_repeats": 20}
#: The most repeats (independent pools) one simulation runs: the standard error of the mean ratio over
#: repeats falls as 1/√R — measured sd per repeat 0.062 (M = 64) and 0.036 (M = 256) at the default
#: pool, so 10⁴ repeats pin the mean to 6 × 10⁻⁴ and 4 × 10⁻⁴; more only cost time (M models a repeat).
MAX_REPEATS = 10_000

# -- training (dpaudit.mia.train) ------------------------------------------------------------------------
#: The built-in models by name, in the order of :data:`dpaudit.mia.train.models.MODELS` (their
#: parameters and factories).
MODEL_NAMES = ("logreg", "mlp", "hgb", "tabpfn")
#: The model of a run that names none.
DEFAULT_MODEL = "logreg"
#: Environment variable naming a local TabPFN classifier checkpoint; dpaudit never downloads weights.
TABPFN_WEIGHTS_ENV = "DPAUDIT_TABPFN_WEIGHTS"
#: How the models are fitted: "per-model" (one scikit-learn pipeline per joblib task) or "batched"
#: (logistic regression only: :mod:`dpaudit.mia.train.batched_logreg`, ``batch_size`` models per task).
TRAINERS = ("auto", "batched", "per-model")
#: Membership designs: "efficient" (every record IN in exactly M/2 models, N = N+/2) or "poisson"
#: (every keep[m, x] an independent Bernoulli(N/N+) draw, any N; :func:`dpaudit.mia.designs.poisson_keep`).
DESIGNS = ("efficient", "poisson")
#: The defaults of :func:`~dpaudit.mia.train.train_run` and ``dpaudit mia train`` (with DEFAULT_MODEL, DEFAULT_BACKEND).
DEFAULT_DATASET, DEFAULT_DESIGN, DEFAULT_TRAINER = "adult", "efficient", "auto"
#: Where the fits run: "local" (joblib processes on this machine) or "dask" (a Dask cluster).
BACKENDS = ("local", "dask")
DEFAULT_BACKEND = "local"

# -- DP-claim audit (dpaudit.mia.claim.audit, dpaudit mia audit-dp) -------------------------------------
#: The learner, canary kind, number of canaries m, δ and confidence of an audit that names none.
DEFAULT_DP_LEARNER = "dp-logreg"
DEFAULT_CANARY_KIND = "mislabelled"
DEFAULT_CANARY_COUNT = 1000
DEFAULT_DP_DELTA = 1e-5
DEFAULT_AUDIT_LEVEL = 0.95
