"""One exception family for everything a user can get wrong.

Every message says what is wrong and what to change; the CLI prints it on one line and exits 2.
"""

from __future__ import annotations

__all__ = [
    "DPAuditError",
    "SchemaError",
    "CriterionError",
    "DataError",
    "BudgetError",
    "DatasetError",
]


class DPAuditError(ValueError):
    """Base class of every error dpaudit raises for bad input or a refused operation."""


class SchemaError(DPAuditError):
    """A schema is malformed, or does not cover a column that is needed."""


class CriterionError(DPAuditError):
    """A fairness criterion cannot be parsed or names unusable columns."""


class DataError(DPAuditError):
    """The data do not fit the declared schema (out-of-domain or missing values, bad input type)."""


class BudgetError(DPAuditError):
    """A release would spend more privacy budget than remains."""


class DatasetError(DPAuditError):
    """A registered dataset cannot be found, downloaded or verified."""
