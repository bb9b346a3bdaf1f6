"""Reading and counting: the only package that sees rows, as one pipeline — open → encode → count.

Each module imports only the modules before it in this order (none goes back up):

* ``files``   — CSV/Parquet files opened with DuckDB, typed by the schema; malformed files refused
  (the path and CSV checks also serve the readers of ``dpaudit mia``).
* ``keys``    — bin keys of integer columns in the engines' own integer division (``//``, ``div``).
* ``checks``  — what is checked before a row is read: the criteria's columns, the cell limit.
* ``spark``   — the Spark engine: its session, reading a file with Spark, moving a frame onto it.
* ``engines`` — the :class:`Engine` protocol (the one seam for a new engine) and the registry
  :data:`ENGINES`.
* ``frames``  — :func:`open_data`: the input opened **once**, as an :class:`Opened` (a narwhals
  frame, the engine that counts it, what to keep alive); every later step takes it as it is.
* ``encode``  — values to domain codes: binning by the declared edges (in the engine and in numpy),
  categorical values by Arrow kernels and lookup tables; values outside the domain refused.
* ``count``   — :func:`count_tables` (all criteria in one pass, one dense :class:`CountTable` each).
* ``infer``   — :func:`infer_schema`: domains read off the data (never DP), text kept as written,
  continuous columns binned.

``audit(data, ...)`` calls :func:`open_data` once and hands the :class:`Opened` to
:func:`infer_schema` (``schema="infer"``) and :func:`count_tables`; called on their own, those two
open what they are given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpaudit._lazy import lazy_package

if TYPE_CHECKING:
    from dpaudit.counting.checks import check_counting, max_cells
    from dpaudit.counting.count import UNION_MAX_CELLS, CountTable, count_tables
    from dpaudit.counting.engines import (
        DEFAULT_ENGINE,
        ENGINES,
        DuckDBEngine,
        Engine,
        check_engine,
        describe,
        engine_of,
    )
    from dpaudit.counting.frames import Opened, declared_kinds, open_data
    from dpaudit.counting.infer import distinct_values, infer_schema

#: Where each name lives (the imports above, for type checkers), imported on first use (:mod:`dpaudit._lazy`):
#: ``--engine``'s help reads the engine registry without loading numpy or the counting code.
_LAZY = {
    "dpaudit.counting.checks": ("check_counting", "max_cells"),
    "dpaudit.counting.count": ("UNION_MAX_CELLS", "CountTable", "count_tables"),
    "dpaudit.counting.infer": ("distinct_values", "infer_schema"),
    "dpaudit.counting.engines": ("DEFAULT_ENGINE", "ENGINES", "DuckDBEngine", "Engine", "check_engine", "describe",
                                 "engine_of"),
    "dpaudit.counting.frames": ("Opened", "declared_kinds", "open_data"),
}
lazy_package(__name__, _LAZY)

__all__ = [
    "CountTable", "count_tables", "infer_schema", "distinct_values", "UNION_MAX_CELLS",
    "check_counting", "max_cells",
    "Opened", "open_data", "declared_kinds",
    "Engine", "DuckDBEngine", "ENGINES", "DEFAULT_ENGINE", "check_engine", "engine_of", "describe",
]
