"""What is checked before a row is read: every column of the criteria is among the data's columns
and declared by the schema, and no criterion's count table would exceed the cell limit
(:func:`max_cells`, also the limit of ``dpaudit mia train``'s score matrices).

:func:`check_counting` runs twice on the way through the pipeline, both times before any row is
read: when the input is opened for an engine that copies it (:func:`dpaudit.counting.frames.open_data`,
so a bad criterion costs no copy) and when :func:`dpaudit.counting.count.count_tables` starts.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from dpaudit._errors import DataError
from dpaudit.criteria import Criterion, check_columns
from dpaudit.schema import Schema

__all__ = ["DEFAULT_MAX_CELLS", "max_cells", "check_counting"]

DEFAULT_MAX_CELLS = 100_000_000


def max_cells() -> int:
    """The most cells one count table may have: ``DPAUDIT_MAX_CELLS``, by default 100 million
    (a table of 8-byte counts, plus the measures' working copies, then fits in a few GB)."""
    raw = os.environ.get("DPAUDIT_MAX_CELLS", "")
    if not raw:
        return DEFAULT_MAX_CELLS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise DataError(f"DPAUDIT_MAX_CELLS must be a positive integer, got {raw!r}")
    return value


def _refuse_huge_tables(criteria: Sequence[Criterion], schema: Schema) -> None:
    """DataError, before any row is read, for a criterion whose declared domains multiply to more
    cells than :func:`max_cells`."""
    limit = max_cells()
    for crit in criteria:
        cells = math.prod(schema[c].size for c in crit.columns)
        if cells > limit:
            sizes = " × ".join(f"{c} {schema[c].size:,}" for c in crit.columns)
            raise DataError(
                f"criterion {crit} spans {cells:,} cells ({sizes}), more than the limit of {limit:,}; "
                "declare coarser domains (fewer categories or bins) or raise DPAUDIT_MAX_CELLS"
            )


def check_counting(criteria: Sequence[Criterion], columns: Sequence[str], schema: Schema | None) -> None:
    """What :func:`~dpaudit.counting.count.count_tables` checks before it reads a row: every column
    of the criteria is among the data's ``columns`` and declared by ``schema`` (when given), and no
    criterion's table would exceed :func:`max_cells`."""
    check_columns(criteria, columns)
    if schema is not None:
        schema.require(list(dict.fromkeys(c for crit in criteria for c in crit.columns)))
        _refuse_huge_tables(criteria, schema)
