"""Opening data as a narwhals frame, reaching its columns safely, and reading domains off it.

:func:`open_frame` wraps any supported input (pandas, polars, pyarrow, DuckDB, Spark, a CSV/Parquet
path); :func:`_engine_names` has the frame's engine rename the needed columns by position so it
parses none of their names; :func:`infer_schema` reads categorical domains off the data (a
data-derived schema, not DP).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from dpaudit._errors import DataError
from dpaudit._io import plain
from dpaudit.counting.engines import engine_of
from dpaudit.counting.files import open_file
from dpaudit.schema import Categorical, Domain, Schema, _is_missing


def open_frame(data: Any, schema: Schema | None = None) -> tuple[Any, Any]:
    """Wrap ``data`` as a narwhals DataFrame (in memory) or LazyFrame (counted by its engine).

    A CSV file's columns are read as the ``schema`` declares them (:func:`~dpaudit.counting.files.open_file`).
    Returns the frame and an object to keep alive while the frame is used (the DuckDB connection
    behind a file, or None).
    """
    import narwhals.stable.v2 as nw

    if isinstance(data, (str, Path)):
        return open_file(Path(data), _declared_kinds(schema))
    try:
        return nw.from_native(data), None
    except TypeError:
        raise DataError(
            f"cannot read data of type {type(data).__module__}.{type(data).__name__}; pass a pandas, "
            "polars or pyarrow table, a DuckDB relation, or the path of a CSV or Parquet file"
        ) from None


def _declared_kinds(schema: Schema | None) -> dict[str, str]:
    """``"text"`` or ``"integer"`` for each categorical column whose declared values are all strings
    or all integers (booleans excluded)."""
    kinds: dict[str, str] = {}
    for name, dom in (schema.columns.items() if schema is not None else ()):
        if not isinstance(dom, Categorical):
            continue
        if all(isinstance(v, str) for v in dom.values):
            kinds[name] = "text"
        elif all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in dom.values):
            kinds[name] = "integer"
    return kinds


def _columns_of(frame: Any) -> list[str]:
    return list(frame.collect_schema().names())


def distinct_values(data: Any, columns: Sequence[str] | None = None) -> dict[str, list[Any]]:
    """Distinct values of each column (including missing ones), computed by the data's engine."""
    frame, _keep = open_frame(data)
    available = _columns_of(frame)
    columns = available if columns is None else list(columns)
    absent = [c for c in columns if c not in available]
    if absent:
        raise DataError(f"unknown column(s) {', '.join(map(repr, absent))}; the data have: {', '.join(available)}")
    frame, names = _engine_names(frame, columns)
    out: dict[str, list[Any]] = {}
    for col in columns:
        uniq = frame.select(names[col]).unique()
        uniq = uniq.collect() if hasattr(uniq, "collect") else uniq
        out[col] = uniq.get_column(names[col]).to_list()
    return out


def infer_schema(data: Any, columns: Iterable[str] | None = None, *, missing_label: str = "Missing") -> Schema:
    """Read categorical domains off the data (every distinct value becomes a category).

    The result has ``data_derived=True``: it leaks which values occur, so releases computed with it
    are **not** differentially private and say so. Missing entries become ``missing_label``.

    Examples
    --------
    >>> import pandas as pd
    >>> infer_schema(pd.DataFrame({"a": ["y", "x", None]}))["a"]
    Categorical(values=('x', 'y', 'Missing'), missing='Missing')
    """
    found = distinct_values(data, None if columns is None else list(columns))
    doms: dict[str, Domain] = {}
    for name, values in found.items():
        present = [v for v in values if not _is_missing(v)]
        has_missing = len(present) != len(values)
        try:
            present.sort()
        except TypeError:
            present.sort(key=repr)
        if has_missing and missing_label not in present:
            present.append(missing_label)
        doms[name] = Categorical(tuple(plain(v) for v in present), missing=missing_label if has_missing else None)
    return Schema(doms, data_derived=True, source="inferred from the data")


def _engine_names(frame: Any, columns: Sequence[str]) -> tuple[Any, dict[str, str]]:
    """The frame reduced to ``columns``, each renamed by position to ``__dpaudit_<i>``, and the new
    name of each column, by the frame's engine (:meth:`dpaudit.counting.Engine.positional_columns`),
    so no engine parses a column's name."""
    return engine_of(frame.to_native()).positional_columns(frame, columns)
