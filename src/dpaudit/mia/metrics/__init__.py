"""Metrics of a membership-inference evaluation: the exact ROC, intervals, ε bounds (spec ``mia.md`` §3–4).

* :mod:`~dpaudit.mia.metrics.roc` — the exact ROC kernel and its views (TPR at FPR α, rates at a
  threshold, AUC, per-record rates);
* :mod:`~dpaudit.mia.metrics.intervals` — Clopper–Pearson and the one two-axis bootstrap;
* :mod:`~dpaudit.mia.metrics.epsilon` — ε lower bounds from a test's rates.
"""

from dpaudit.mia.metrics.epsilon import EpsilonBound, epsilon_lower_bound, epsilon_lower_bound_ci
from dpaudit.mia.metrics.intervals import Bootstrap, BootstrapCI, bootstrap_ci, clopper_pearson, percentile_interval
from dpaudit.mia.metrics.roc import (
    Roc,
    RocPoint,
    auc,
    per_record_rates,
    point_at_fpr,
    point_at_threshold,
    rates_at_threshold,
    roc_curve,
    tpr_at_fpr,
)

__all__ = ["Roc", "RocPoint", "roc_curve", "point_at_fpr", "point_at_threshold", "tpr_at_fpr", "auc",
           "rates_at_threshold", "per_record_rates", "clopper_pearson", "Bootstrap", "BootstrapCI", "bootstrap_ci",
           "percentile_interval", "EpsilonBound", "epsilon_lower_bound", "epsilon_lower_bound_ci"]
