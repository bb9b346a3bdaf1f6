"""Training the models of a membership-inference experiment (spec ``mia.md`` §1, §5).

* :mod:`~dpaudit.mia.train.trainer` — :func:`train_run`: draw a pool and a membership design, train M
  models under joblib, write their scores; resumable and bit-identical;
* :mod:`~dpaudit.mia.train.backends` — where the fits run: joblib processes here, or a Dask cluster;
* :mod:`~dpaudit.mia.train.run` — the run directory format and :func:`load_run`;
* :mod:`~dpaudit.mia.train.models` — the model registry keyed by name, factories, the score;
* :mod:`~dpaudit.mia.train.data` — where the records come from (a registered dataset's prediction
  task, or the user's file);
* :mod:`~dpaudit.mia.train.batched_logreg` — many logistic regressions per matrix product.
"""

from dpaudit.mia.train.models import MODELS, TABPFN_WEIGHTS_ENV, logit_confidence, resolve_model, tabpfn_checkpoint
from dpaudit.mia.train.run import RUN_FORMAT, RUN_VERSION, load_run
from dpaudit.mia.train.trainer import BACKENDS, BATCHED_PARAMS, DESIGNS, TRAINERS, train_run

__all__ = ["train_run", "load_run", "logit_confidence", "tabpfn_checkpoint", "resolve_model", "MODELS", "TRAINERS",
           "DESIGNS", "BACKENDS", "BATCHED_PARAMS", "TABPFN_WEIGHTS_ENV", "RUN_FORMAT", "RUN_VERSION"]
