"""Metrics of a membership-inference evaluation: the exact ROC, intervals, ε bounds (spec ``mia.md`` §3–4).

* :mod:`~dpaudit.mia.metrics.roc` — the exact ROC kernel and its views (TPR at FPR α, rates at a
  threshold, AUC);
* :mod:`~dpaudit.mia.metrics.pooled` — the low-FPR end and the AUC of a pooled ROC from one sort of the
  non-members' values;
* :mod:`~dpaudit.mia.metrics.record_rates` — per-record rates of one threshold rule;
* :mod:`~dpaudit.mia.metrics.intervals` — Clopper–Pearson, percentile intervals, the bootstrap CI of
  any statistic;
* :mod:`~dpaudit.mia.metrics.bootstrap` — the one two-axis bootstrap (with :mod:`.replicates`, the
  blocks and target sets it totals over, and :mod:`.rechosen`, the re-chosen threshold);
* :mod:`~dpaudit.mia.metrics.epsilon` — ε lower bounds from a test's rates.
"""

from dpaudit.mia.metrics._inputs import DEFAULT_LEVEL
from dpaudit.mia.metrics.epsilon import EpsilonBound, epsilon_lower_bound, epsilon_lower_bound_ci
from dpaudit.mia.metrics.intervals import (
    DEFAULT_N_BOOT,
    Bootstrap,
    BootstrapCI,
    bootstrap_ci,
    clopper_pearson,
    percentile_interval,
)
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
           "percentile_interval", "EpsilonBound", "epsilon_lower_bound", "epsilon_lower_bound_ci", "DEFAULT_LEVEL",
           "DEFAULT_N_BOOT"]
