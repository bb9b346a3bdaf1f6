"""dpaudit: audit sensitive data and the models trained on it.

Fairness: how strongly a protected attribute depends on an outcome given admissible attributes,
measured on the data and released with ε-differential privacy (Vologdin, Tao, Gilad, PVLDB 19(9)).

``import dpaudit`` imports no dataframe engine (duckdb, polars, pyspark) and no torch: backends are
imported when data of their kind arrive.
"""

from dpaudit import datasets
from dpaudit._errors import (
    BudgetError,
    CriterionError,
    DataError,
    DatasetError,
    DPAuditError,
    SchemaError,
)
from dpaudit._version import __version__
from dpaudit.audit import audit, repair_wcnf, split_budget
from dpaudit.counting import CountTable, count_tables, infer_schema
from dpaudit.criteria import Criterion, parse_criteria
from dpaudit.measures import MEASURES, TVD, Measure, Repair, TopContribution, mutual_information, u_mi_tvd
from dpaudit.privacy import Budget, Release, exact_release, laplace_release
from dpaudit.results import AuditResult, MeasureResult
from dpaudit.schema import Binned, Categorical, Schema

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
