"""dpaudit: audit sensitive data and the models trained on it.

Fairness: how strongly a protected attribute depends on an outcome given admissible attributes,
measured on the data and released with ε-differential privacy (Vologdin, Tao, Gilad, PVLDB 19(9)).

``import dpaudit`` imports nothing but this module, the version and the exception family: every other
name below is imported when it is first used (:mod:`dpaudit._lazy`), so no numpy, dataframe engine
(duckdb, polars, pyspark), solver, plotting library or torch is loaded before data of their kind
arrive (``tests/test_import_light.py`` pins the list).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpaudit._errors import (
    BudgetError,
    CriterionError,
    DataError,
    DatasetError,
    DPAuditError,
    SchemaError,
)
from dpaudit._lazy import lazy_package
from dpaudit._version import __version__

if TYPE_CHECKING:
    from dpaudit import datasets
    from dpaudit.audit import audit, repair_wcnf, split_budget
    from dpaudit.counting import CountTable, count_tables, infer_schema
    from dpaudit.criteria import Criterion, parse_criteria
    from dpaudit.measures import MEASURES, TVD, Measure, Repair, TopContribution, mutual_information, u_mi_tvd
    from dpaudit.privacy import Budget, Release, exact_release, laplace_release
    from dpaudit.results import AuditResult, MeasureResult
    from dpaudit.schema import Binned, Categorical, Schema

#: Where each public name lives (the imports above, for type checkers), imported on first use.
_LAZY = {
    "dpaudit.audit": ("audit", "repair_wcnf", "split_budget"),
    "dpaudit.counting": ("CountTable", "count_tables", "infer_schema"),
    "dpaudit.criteria": ("Criterion", "parse_criteria"),
    "dpaudit.measures": ("MEASURES", "TVD", "Measure", "Repair", "TopContribution", "mutual_information", "u_mi_tvd"),
    "dpaudit.privacy": ("Budget", "Release", "exact_release", "laplace_release"),
    "dpaudit.results": ("AuditResult", "MeasureResult"),
    "dpaudit.schema": ("Binned", "Categorical", "Schema"),
}
lazy_package(__name__, _LAZY)

__all__ = [
    "__version__",
    "AuditResult",
    "Binned",
    "Budget",
    "BudgetError",
    "Categorical",
    "CountTable",
    "Criterion",
    "CriterionError",
    "DataError",
    "DatasetError",
    "DPAuditError",
    "MEASURES",
    "Measure",
    "MeasureResult",
    "Release",
    "Repair",
    "Schema",
    "SchemaError",
    "TVD",
    "TopContribution",
    "audit",
    "count_tables",
    "datasets",
    "exact_release",
    "infer_schema",
    "laplace_release",
    "mutual_information",
    "parse_criteria",
    "repair_wcnf",
    "split_budget",
    "u_mi_tvd",
]
