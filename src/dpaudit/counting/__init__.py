"""Reading and counting: the only package that sees rows.
"""

from dpaudit.counting.count import CountTable, check_counting, count_tables, max_cells
from dpaudit.counting.engines import DEFAULT_ENGINE, ENGINES, DuckDBEngine, Engine, check_engine, describe, engine_of
from dpaudit.counting.frames import distinct_values, infer_schema, open_frame

__all__ = ["CountTable", "count_tables", "check_counting", "max_cells", "infer_schema", "distinct_values", "open_frame",
           "Engine", "DuckDBEngine", "ENGINES", "DEFAULT_ENGINE", "check_engine", "engine_of", "describe"]
