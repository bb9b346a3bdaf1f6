"""Count tables: the only step that reads rows.

For each criterion φ = (P, O, A) one group-by count over the columns A ∪ P ∪ O is pushed to the
data's own engine through narwhals (pandas, polars, pyarrow, DuckDB relations; CSV/Parquet paths are
opened with DuckDB, which streams files larger than memory). Numeric columns declared as
:class:`~dpaudit.schema.Binned` are binned inside the engine, so the group-by sees bin codes, not raw
values. The grouped result — at most one row per cell of the declared domain — is then placed into a
dense ``int64`` array of shape ``(n_blocks, n_protected, n_outcome)`` indexed by the schema's domains:
blocks are the cells of A (one block when A is empty), rows the cells of P, columns the cells of O.
Measures only ever see these arrays.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import operator
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._datafiles import open_file
from dpaudit._errors import DataError
from dpaudit._io import plain
from dpaudit.criteria import Criterion, check_columns
from dpaudit.schema import Binned, Categorical, Domain, Schema, _is_missing

__all__ = ["CountTable", "count_tables", "open_frame", "distinct_values"]

_COUNT = "__dpaudit_count__"
_MISSING_CODE = -2  # bin code of a missing entry in a binned column (below-range is -1)
DEFAULT_MAX_CELLS = 100_000_000


@dataclass(frozen=True, eq=False)
class CountTable:
    """Dense counts of one criterion over its declared domain.

    Attributes
    ----------
    criterion : Criterion
    counts : ndarray of int64, shape (n_blocks, n_protected, n_outcome)
        ``counts[a, p, o]`` is the number of rows in admissible cell ``a``, protected cell ``p`` and
        outcome cell ``o``. Cells of several columns are the row-major product of their domains.
    domains : tuple of Domain
        The domain of every column in ``criterion.columns`` order (A, then P, then O).
    """

    criterion: Criterion
    counts: np.ndarray
    domains: tuple[Domain, ...]

    @property
    def n(self) -> int:
        """Number of rows counted."""
        return int(self.counts.sum())

    def _labels(self, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
        idx = {c: i for i, c in enumerate(self.criterion.columns)}
        return list(itertools.product(*(self.domains[idx[c]].labels for c in columns)))

    def cell_labels(self, block: int, protected: int, outcome: int) -> dict[str, dict[str, Any]]:
        """Column values of one cell: ``{"protected": {...}, "outcome": {...}, "admissible": {...}}``."""
        idx = {c: i for i, c in enumerate(self.criterion.columns)}

        def side(columns: tuple[str, ...], flat: int) -> dict[str, Any]:
            if not columns:
                return {}
            doms = [self.domains[idx[c]] for c in columns]
            codes = np.unravel_index(flat, tuple(d.size for d in doms))
            return {c: d.labels[int(code)] for c, d, code in zip(columns, doms, codes)}

        crit = self.criterion
        return {
            "protected": side(crit.protected, protected),
            "outcome": side(crit.outcome, outcome),
            "admissible": side(crit.admissible, block),
        }

    @property
    def block_labels(self) -> list[tuple[Any, ...]]:
        """Values of the admissible columns for each block (``[()]`` without A)."""
        return self._labels(self.criterion.admissible)

    @property
    def protected_labels(self) -> list[tuple[Any, ...]]:
        return self._labels(self.criterion.protected)

    @property
    def outcome_labels(self) -> list[tuple[Any, ...]]:
        return self._labels(self.criterion.outcome)


def open_frame(data: Any, schema: Schema | None = None) -> tuple[Any, Any]:
    """Wrap ``data`` as a narwhals DataFrame or LazyFrame.

    A CSV file's columns are read as the ``schema`` declares them (:func:`~dpaudit._datafiles.open_file`).
    Returns the frame and an object to keep alive while the frame is used (the DuckDB connection
    behind a file, or None).
    """
    import narwhals.stable.v2 as nw

    if isinstance(data, (str, Path)):
        return open_file(Path(data), _declared_kinds(schema))
    if type(data).__module__.startswith("pandas") and type(data).__name__ == "DataFrame":
        if not any(dtype == np.dtype(object) for dtype in data.dtypes):
            return _pandas_via_duckdb(data)
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


def _pandas_via_duckdb(frame: Any) -> tuple[Any, Any]:
    """Count pandas frames with DuckDB (a zero-copy scan): pandas' own group-by re-factorises every
    column for every criterion and is about 3x slower (benchmarks/bench_fairness.py). Frames with
    object columns stay with pandas: DuckDB would cast mixed Python values to one SQL type."""
    import duckdb
    import narwhals.stable.v2 as nw

    con = duckdb.connect()
    try:
        rel = con.from_df(frame)
    except (duckdb.Error, TypeError, ValueError):  # columns DuckDB cannot type: pandas counts them
        con.close()
        return nw.from_native(frame), None
    return nw.from_native(rel), con


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
    out: dict[str, list[Any]] = {}
    for col in columns:
        uniq = frame.select(col).unique()
        uniq = uniq.collect() if hasattr(uniq, "collect") else uniq
        out[col] = uniq.get_column(col).to_list()
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


def _bin_expression(name: str, domain: Binned, dtype: Any) -> Any:
    """Bin code of a numeric column inside the engine: −1 below the first edge, ``n_bins`` at or
    above the last, ``_MISSING_CODE`` for null/NaN."""
    import narwhals.stable.v2 as nw

    col = nw.col(name)
    # A plain sum of comparisons: sum_horizontal would wrap each term in a null-guard that makes the
    # query 2-3x slower in DuckDB, and nulls are handled by the outer when() anyway.
    steps = [(col >= edge).cast(nw.Int32) for edge in domain.edges]
    code = functools.reduce(operator.add, steps) - 1
    missing = col.is_null()
    if dtype.is_float():
        missing = missing | col.is_nan()
    return nw.when(missing).then(nw.lit(_MISSING_CODE)).otherwise(code).cast(nw.Int32).alias(name)


def _codes(name: str, domain: Domain, raw: list[Any], weights: np.ndarray) -> np.ndarray:
    """Map the grouped values of one column to domain codes; raise DataError for values outside it."""
    if isinstance(domain, Binned):
        codes = np.asarray(raw, dtype=np.int64)
        # Check the raw codes first: a value at or above the last edge has code n_bins, which is
        # also the index of the declared missing bin, and must not be counted there.
        bad = (codes == -1) | (codes >= domain.n_bins)
        if domain.missing is None:
            bad |= codes == _MISSING_CODE
        if bad.any():
            _raise_binned(name, domain, codes, weights, bad)
        return np.where(codes == _MISSING_CODE, domain.n_bins, codes)
    memo: dict[Any, int | None] = {}
    codes = np.empty(len(raw), dtype=np.int64)
    problems: dict[Any, int] = {}
    missing_rows = 0
    for i, value in enumerate(raw):
        key = None if _is_missing(value) else value
        try:
            code = memo[key]
        except KeyError:
            code = memo[key] = domain.code_of(value)
        except TypeError:  # unhashable raw value
            code = domain.code_of(value)
        if code is None:
            if key is None:
                missing_rows += int(weights[i])
            else:
                problems[value] = problems.get(value, 0) + int(weights[i])
            code = -1
        codes[i] = code
    if missing_rows:
        raise DataError(
            f"column {name!r}: {missing_rows:,} row(s) have a missing value and the schema declares no "
            f"missing category; declare one (e.g. Categorical([..., 'Missing'], missing='Missing'))"
        )
    if problems:
        shown = sorted(problems.items(), key=lambda kv: -kv[1])[:5]
        listing = ", ".join(f"{v!r} ({n:,} row{'s' if n != 1 else ''})" for v, n in shown)
        more = f" and {len(problems) - 5} more" if len(problems) > 5 else ""
        raise DataError(
            f"column {name!r}: {len(problems)} value(s) outside the declared domain: {listing}{more}; "
            "add them to the schema's values for this column"
        )
    return codes


def _raise_binned(name: str, domain: Binned, codes: np.ndarray, weights: np.ndarray, bad: np.ndarray) -> None:
    below = int(weights[codes == -1].sum())
    above = int(weights[codes >= domain.n_bins].sum())
    missing = int(weights[codes == _MISSING_CODE].sum()) if domain.missing is None else 0
    parts = []
    if below:
        parts.append(f"{below:,} row(s) below the first bin edge {domain.edges[0]:g}")
    if above:
        parts.append(f"{above:,} row(s) at or above the last bin edge {domain.edges[-1]:g}")
    if missing:
        parts.append(f"{missing:,} row(s) with a missing value and no declared missing bin (missing=...)")
    if not parts:  # pragma: no cover - defensive: every bad code is one of the three kinds above
        parts.append(f"{int(weights[bad].sum()):,} row(s) outside the bins")
    raise DataError(
        f"column {name!r}: {'; '.join(parts)}; widen the edges (-inf/inf are allowed) or declare missing"
    )


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


def _check_types(frame: Any, schema: Schema, columns: Sequence[str]) -> dict[str, Any]:
    dtypes = dict(frame.collect_schema().items())
    for col in columns:
        if dtypes[col].is_nested():
            raise DataError(
                f"column {col!r} holds nested values ({dtypes[col]}); dpaudit counts flat columns: "
                "flatten it or pick one field"
            )
        if isinstance(schema[col], Binned) and not dtypes[col].is_numeric():
            raise DataError(
                f"column {col!r} is declared binned (numeric) but holds {dtypes[col]}; "
                "declare it Categorical or convert it to numbers"
            )
    return dtypes


def count_tables(data: Any, criteria: Sequence[Criterion], schema: Schema) -> list[CountTable]:
    """One dense count table per criterion, each from one group-by count over its columns.

    Parameters
    ----------
    data : pandas/polars/pyarrow frame, DuckDB relation, or path to a CSV/Parquet file
    criteria : sequence of Criterion
    schema : Schema
        Declares the domain of every column the criteria use.

    Returns
    -------
    list of CountTable, aligned with ``criteria``.

    Raises
    ------
    DataError
        For values outside the declared domain or missing values the schema does not map, naming the
        column, the values and their row counts.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpaudit import Categorical, Criterion, Schema
    >>> df = pd.DataFrame({"sex": ["F", "M", "M"], "y": [1, 0, 1]})
    >>> s = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1])})
    >>> count_tables(df, [Criterion.parse("sex ⊥ y")], s)[0].counts.tolist()
    [[[0, 1], [1, 1]]]
    """
    needed = list(dict.fromkeys(c for crit in criteria for c in crit.columns))
    frame, keep_alive = open_frame(data, Schema({c: schema[c] for c in needed if c in schema}))
    try:  # files are opened lazily: nothing below reads a row before the group-by
        check_columns(criteria, _columns_of(frame))
        schema.require(needed)
        _refuse_huge_tables(criteria, schema)
        dtypes = _check_types(frame, schema, needed)
        binned = {c: dom for c in needed if isinstance(dom := schema[c], Binned)}
        if binned:
            frame = frame.with_columns(*[_bin_expression(c, dom, dtypes[c]) for c, dom in binned.items()])
        cache: dict[tuple[str, ...], np.ndarray] = {}
        return [_count_one(frame, crit, schema, cache) for crit in criteria]
    finally:
        if keep_alive is not None:
            keep_alive.close()


def _count_one(frame: Any, crit: Criterion, schema: Schema, cache: dict) -> CountTable:
    import narwhals.stable.v2 as nw

    columns = crit.columns
    domains = tuple(schema[c] for c in columns)
    key = tuple(sorted(columns))
    if key not in cache:
        try:
            grouped = frame.group_by(*key, drop_null_keys=False).agg(nw.len().alias(_COUNT))
            if hasattr(grouped, "collect"):
                grouped = grouped.collect()
        except TypeError as exc:  # pandas object columns holding lists, dicts, sets
            raise DataError(
                f"cannot count the column(s) {', '.join(map(repr, key))}: {exc}; every value must be a string, "
                "a number or a boolean (not a list or a dict)"
            ) from None
        cache[key] = grouped
    grouped = cache[key]
    weights = grouped.get_column(_COUNT).to_numpy().astype(np.int64)
    codes = {c: _codes(c, schema[c], grouped.get_column(c).to_list(), weights) for c in key}

    def flat(cols: tuple[str, ...]) -> tuple[np.ndarray, int]:
        dims = tuple(schema[c].size for c in cols)
        if not cols:
            return np.zeros(len(weights), dtype=np.int64), 1
        return np.ravel_multi_index(tuple(codes[c] for c in cols), dims), int(np.prod(dims))

    a, n_a = flat(crit.admissible)
    p, n_p = flat(crit.protected)
    o, n_o = flat(crit.outcome)
    index = (a * n_p + p) * n_o + o
    size = n_a * n_p * n_o
    table = np.bincount(index, weights=weights, minlength=size) if len(index) else np.zeros(size)
    counts = np.rint(table).astype(np.int64).reshape(n_a, n_p, n_o)
    return CountTable(crit, counts, domains)

