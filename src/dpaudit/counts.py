"""Count tables: the only step that reads rows.

A criterion φ = (P, O, A) needs the counts of every cell of A ∪ P ∪ O. All criteria of one call are
counted in **one pass over the data** (issue 14), and the tables of the criteria are then
marginalised from it in numpy:

* An **in-memory frame** (pandas, polars, pyarrow: any eager narwhals DataFrame) is not grouped at
  all. Each needed column is turned into domain codes once — Arrow's hash kernel
  (``pyarrow.compute.index_in``) against the declared values for text, a lookup table over the
  value range for integers, ``searchsorted`` on the bin edges for binned numbers — and one
  ``np.bincount`` over the row-major index of the codes counts every cell.
* A **lazy frame** — a CSV/Parquet file opened with DuckDB (which streams files larger than
  memory), a DuckDB relation, a PySpark or polars LazyFrame, … — is grouped by its own engine,
  through narwhals, **once on the union of the criteria's columns**; the grouped rows (at most one
  per cell of the union's declared domain) are coded like a frame's columns, weighted by their
  counts. When the union's declared cell count exceeds :data:`UNION_MAX_CELLS`, each distinct
  column set is grouped on its own instead (the grouped result of a union that large could hold
  as many rows as the data).

Numeric columns declared :class:`~dpaudit.schema.Binned` are binned before grouping, inside the
engine, by :func:`_bin_expression`: integer division where the edges are equally spaced, a chain or
binary search of comparisons elsewhere, always equal to ``#{edges <= x} - 1``. The counts are placed
into a dense ``int64`` array of shape ``(n_blocks, n_protected, n_outcome)`` indexed by the schema's
domains: blocks are the cells of A (one block when A is empty), rows the cells of P, columns the
cells of O. Measures only ever see these arrays.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
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
#: The largest union of columns (product of the declared domain sizes) a lazy engine groups in one
#: query: its grouped result has at most this many rows (about 200 MB for six columns and the
#: count, fetched as 8-byte numbers). Beyond it every distinct column set is grouped on its own,
#: each bounded by its criterion's cells (:func:`max_cells`). The census-like table's four criteria
#: span 1.8 million union cells, Adult's 31,680.
UNION_MAX_CELLS = 1 << 22
_CHAIN_BINS = 8  # bins compared one after the other; more are found by binary search
_MIN_RUN_BINS = 3  # equally spaced bins worth an integer division
_EXACT_INT = 2.0**52  # integers and edges below this are exact doubles, and so is x - edge


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
    _sides: dict[str, tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        idx = {c: i for i, c in enumerate(self.criterion.columns)}
        crit = self.criterion
        object.__setattr__(self, "_sides", {  # the labels of each side's columns, for cell_labels
            side: (columns, tuple(self.domains[idx[c]].labels for c in columns))
            for side, columns in (("protected", crit.protected), ("outcome", crit.outcome), ("admissible", crit.admissible))
        })

    @property
    def n(self) -> int:
        """Number of rows counted."""
        return int(self.counts.sum())

    def _labels(self, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
        idx = {c: i for i, c in enumerate(self.criterion.columns)}
        return list(itertools.product(*(self.domains[idx[c]].labels for c in columns)))

    def _side(self, side: str, flat: int) -> dict[str, Any]:
        columns, labels = self._sides[side]
        if len(columns) == 1:
            return {columns[0]: labels[0][flat]}
        out = {}
        for c, names in zip(columns[::-1], labels[::-1]):  # row-major: the last column varies fastest
            flat, code = divmod(int(flat), len(names))
            out[c] = names[code]
        return {c: out[c] for c in columns}

    def cell_labels(self, block: int, protected: int, outcome: int) -> dict[str, dict[str, Any]]:
        """Column values of one cell: ``{"protected": {...}, "outcome": {...}, "admissible": {...}}``."""
        return {
            "protected": self._side("protected", protected),
            "outcome": self._side("outcome", outcome),
            "admissible": self._side("admissible", block),
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
    """Wrap ``data`` as a narwhals DataFrame (in memory) or LazyFrame (counted by its engine).

    A CSV file's columns are read as the ``schema`` declares them (:func:`~dpaudit._datafiles.open_file`).
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


# --------------------------------------------------------------------------------------------------
# binning
# --------------------------------------------------------------------------------------------------
def _equal_width_run(edges: Sequence[float]) -> tuple[int, int, float] | None:
    """The longest run ``edges[a..b]`` of finite edges that are exactly ``edges[a] + i·w`` in
    floating point (so an engine computing ``edges[a] + q·w`` lands on the declared edge), with at
    least :data:`_MIN_RUN_BINS` bins; None if there is none."""
    best: tuple[int, int, float] | None = None
    a, n = 0, len(edges)
    while a < n - _MIN_RUN_BINS:
        if not (math.isfinite(edges[a]) and math.isfinite(edges[a + 1])):
            a += 1
            continue
        width = edges[a + 1] - edges[a]  # edges[a] + width itself may round off edges[a + 1]: checked too
        b = a
        while b + 1 < n and math.isfinite(edges[b + 1]) and edges[a] + (b + 1 - a) * width == edges[b + 1]:
            b += 1
        if b - a >= _MIN_RUN_BINS and (best is None or b - a > best[1] - best[0]):
            best = (a, b, width)
        a = max(b, a + 1)
    return best


def _bin_code(x: Any, edges: Sequence[float], integral: bool) -> Any:
    """A narwhals Float64 expression equal to ``#{edges <= x} - 1`` for every non-missing ``x``.

    ``x`` is the column as Float64, so every comparison is the comparison of doubles that the
    definition (and every engine's ``x >= edge``) makes. Compiled to the cheapest exact form:

    * the longest run of equally spaced finite edges ``e_a + i·w`` (i = 0..m) becomes one division,
      ``q = floor((x − e_a) / w)``. For an integer column with integral edges and width below 2^52
      it is exact as it stands: ``x − e_a`` is an exact integer and the quotient of two integers
      below 2^53 cannot round across an integer. For other columns ``x − e_a`` may round (x = −1e−20,
      e_a = −5, w = 1 gives 5.0, not 4.99…), so ``q`` is clipped to [0, m−1] and moved by one where
      ``x < e_a + q·w`` or ``x >= e_a + (q+1)·w`` — the declared edges, since the run was checked to
      be exactly ``e_a + i·w`` in floating point; the rounding error of ``q`` is far below one
      (at most about m·2^−52), so one step suffices.
    * the other edges (an infinite first or last edge, uneven bins) are compared one after the
      other (at most :data:`_CHAIN_BINS` bins) or found by binary search (nested comparisons, depth
      log2 of the bins), so a row meets few comparisons.

    Engines that evaluate a when/then lazily (DuckDB, Spark) compute each branch only for its rows;
    the others compute every branch, and no branch casts or fails on any double (±inf, NaN included).
    """
    import narwhals.stable.v2 as nw

    def lit(value: float) -> Any:
        return nw.lit(float(value), nw.Float64)

    def division(a: int, b: int, width: float) -> Any:  # x in [edges[a], edges[b])
        q = ((x - lit(edges[a])) / lit(width)).floor()
        if integral and width.is_integer() and all(abs(edges[i]) <= _EXACT_INT for i in (a, b)) and edges[a].is_integer():
            return q + lit(a) if a else q
        q = q.clip(0.0, float(b - a - 1))
        return (nw.when(x < lit(edges[a]) + q * lit(width)).then(q + lit(a - 1))
                .when(x >= lit(edges[a]) + (q + lit(1.0)) * lit(width)).then(q + lit(a + 1))
                .otherwise(q + lit(a)))

    def search(lo: int, hi: int) -> Any:  # x in [edges[lo], edges[hi])
        if hi - lo <= _CHAIN_BINS:
            chain = nw.when(x < lit(edges[lo + 1])).then(lit(lo)) if hi - lo > 1 else None
            for i in range(lo + 1, hi - 1):
                chain = chain.when(x < lit(edges[i + 1])).then(lit(i))  # type: ignore[union-attr]
            return lit(hi - 1) if chain is None else chain.otherwise(lit(hi - 1))
        mid = (lo + hi) // 2
        return nw.when(x < lit(edges[mid])).then(search(lo, mid)).otherwise(search(mid, hi))

    n = len(edges) - 1
    run = _equal_width_run(edges)
    if run is None:
        inside = search(0, n)
    else:
        a, b, width = run
        inside = division(a, b, width)
        if b < n:
            inside = nw.when(x < lit(edges[b])).then(inside).otherwise(search(b, n))
        if a > 0:
            inside = nw.when(x < lit(edges[a])).then(search(0, a)).otherwise(inside)
    inside = nw.when(x >= lit(edges[n])).then(lit(n)).otherwise(inside)
    return inside if edges[0] == -math.inf else nw.when(x < lit(edges[0])).then(lit(-1)).otherwise(inside)


def _bin_expression(name: str, domain: Binned, dtype: Any) -> Any:
    """Bin code of a numeric column inside the engine, as Int32: ``#{edges <= x} − 1`` (so −1 below
    the first edge and ``n_bins`` at or above the last), ``_MISSING_CODE`` for null/NaN. See
    :func:`_bin_code` for the expression."""
    import narwhals.stable.v2 as nw

    col = nw.col(name)
    missing = col.is_null()
    if dtype.is_float():
        missing = missing | col.is_nan()
    code = _bin_code(col.cast(nw.Float64), domain.edges, dtype.is_integer())
    return nw.when(missing).then(nw.lit(float(_MISSING_CODE), nw.Float64)).otherwise(code).cast(nw.Int32).alias(name)


def _bin_codes(edges: Sequence[float], column: Any) -> np.ndarray:
    """Bin codes of an Arrow column in numpy: ``#{edges <= x} − 1`` is exactly
    ``searchsorted(edges, x, side="right") − 1`` (comparisons of doubles); ``_MISSING_CODE`` for
    null/NaN. An integer column over a range no longer than the column is coded through a lookup
    table of its range (one ``searchsorted`` per distinct possible value, then one take)."""
    import pyarrow as pa

    grid = np.asarray(edges, dtype=np.float64)
    if pa.types.is_integer(column.type) and (lut := _range_lut(column, lambda values: np.searchsorted(
            grid, values.astype(np.float64), side="right") - 1)) is not None:
        return lut
    values = column.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)  # nulls become NaN
    codes = np.searchsorted(grid, values, side="right") - 1
    codes[np.isnan(values)] = _MISSING_CODE
    return codes


def _range_lut(column: Any, code_of: Any, limit: int | None = None) -> np.ndarray | None:
    """Codes of an integer Arrow column through a lookup table over its range [min, max] (from 0
    when the values are small and non-negative, so the values index it directly), or None when the
    range is longer than ``limit`` (default: the column's length, at least 65,536).
    ``code_of(values)`` gives the code of each value of an int64 array; nulls get ``_MISSING_CODE``."""
    import pyarrow.compute as pc

    limit = limit if limit is not None else max(len(column), 1 << 16)
    nulls = column.null_count
    if nulls:
        bounds = pc.min_max(column).as_py()
        lo, hi = bounds["min"], bounds["max"]
        if lo is None:  # all null
            return np.full(len(column), _MISSING_CODE, dtype=np.int64)
        values = pc.fill_null(column, lo).to_numpy()
    else:
        values = column.to_numpy()
        if not len(values):
            return np.empty(0, dtype=np.int64)
        lo, hi = int(values.min()), int(values.max())
    if hi - lo > limit or hi >= 2**63:
        return None
    lut = np.asarray(code_of(np.arange(lo, hi + 1, dtype=np.int64)), dtype=np.int64)
    shift = int(lut[0]) - lo
    if lut[0] >= 0 and shift < 2**63 and np.array_equal(lut, np.arange(lut[0], lut[0] + len(lut))):
        codes = values.astype(np.int64, copy=True)  # code = value + shift (e.g. label-encoded columns): no lookup
        if shift:
            codes += shift
    elif 0 <= lo and hi <= limit:  # index by the values themselves: no subtraction pass
        codes = np.take(np.concatenate((np.zeros(lo, dtype=np.int64), lut)), values)
    else:
        codes = np.take(lut, values.astype(np.int64, copy=False) - lo)
    if nulls:
        codes[~column.is_valid().to_numpy(zero_copy_only=False)] = _MISSING_CODE
    return codes


# --------------------------------------------------------------------------------------------------
# values to domain codes
# --------------------------------------------------------------------------------------------------
def _weight_of(weights: np.ndarray | None, mask: np.ndarray) -> int:
    return int(mask.sum()) if weights is None else int(weights[mask].sum())


def _codes(name: str, domain: Domain, raw: Any, weights: np.ndarray | None) -> np.ndarray:
    """Map values (bin codes for a binned column) to domain codes; raise DataError for values
    outside the domain. ``weights`` holds the number of rows of each value (None: one each)."""
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
            rows = 1 if weights is None else int(weights[i])
            if key is None:
                missing_rows += rows
            else:
                problems[value] = problems.get(value, 0) + rows
            code = -1
        codes[i] = code
    if missing_rows:
        raise DataError(
            f"column {name!r}: {missing_rows:,} row(s) have a missing value and the schema declares no "
            f"missing category; declare one (e.g. Categorical([..., 'Missing'], missing='Missing'))"
        )
    if problems:
        # most rows first, ties by value: the same listing whichever engine grouped the rows, in any order
        shown = sorted(problems.items(), key=lambda kv: (-kv[1], repr(kv[0])))[:5]
        listing = ", ".join(f"{v!r} ({n:,} row{'s' if n != 1 else ''})" for v, n in shown)
        more = f" and {len(problems) - 5} more" if len(problems) > 5 else ""
        raise DataError(
            f"column {name!r}: {len(problems)} value(s) outside the declared domain: {listing}{more}; "
            "add them to the schema's values for this column"
        )
    return codes


def _raise_binned(name: str, domain: Binned, codes: np.ndarray, weights: np.ndarray | None, bad: np.ndarray) -> None:
    below = _weight_of(weights, codes == -1)
    above = _weight_of(weights, codes >= domain.n_bins)
    missing = _weight_of(weights, codes == _MISSING_CODE) if domain.missing is None else 0
    parts = []
    if below:
        parts.append(f"{below:,} row(s) below the first bin edge {domain.edges[0]:g}")
    if above:
        parts.append(f"{above:,} row(s) at or above the last bin edge {domain.edges[-1]:g}")
    if missing:
        parts.append(f"{missing:,} row(s) with a missing value and no declared missing bin (missing=...)")
    if not parts:  # pragma: no cover - defensive: every bad code is one of the three kinds above
        parts.append(f"{_weight_of(weights, bad):,} row(s) outside the bins")
    raise DataError(
        f"column {name!r}: {'; '.join(parts)}; widen the edges (-inf/inf are allowed) or declare missing"
    )


@functools.lru_cache(maxsize=256)
def _declared_keys(domain: Categorical) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
    """The declared texts with their codes, and the integers equal to a declared number
    (``int(v) == v``, within int64) with theirs, as two arrays."""
    texts = {v: i for i, v in enumerate(domain.values) if isinstance(v, str)}
    whole: dict[int, int] = {}
    for v in domain.values:
        try:
            k = int(v)
        except (TypeError, ValueError, OverflowError):
            continue
        if k == v and -(2**63) <= k < 2**63:
            whole[k] = domain.code_of(k)  # type: ignore[assignment]
    return texts, np.array(list(whole), dtype=np.int64), np.array(list(whole.values()), dtype=np.int64)


def _known_codes(domain: Categorical, column: Any) -> tuple[np.ndarray, bool] | None:
    """Codes of the values of a text or integer Arrow column that equal a declared value, −1 for
    the others (nulls, values outside the domain), and whether there are no others for certain;
    None for other column types.

    Exact: an Arrow string equals a declared ``str`` exactly when Python's ``==`` says so, and an
    integer ``k`` equals a declared number ``v`` (int, bool, integral float …) exactly when
    ``int(v) == v == k``, and then ``domain.code_of(k)`` is ``v``'s code (equal numbers hash alike).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    texts, keys, key_codes = _declared_keys(domain)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if not texts:
            return None
        index = pc.index_in(column, value_set=pa.array(list(texts), type=kind))
        lut = np.array([*texts.values(), -1], dtype=np.int64)
        return lut[pc.fill_null(index, len(texts)).to_numpy(zero_copy_only=False)], not index.null_count
    if pa.types.is_integer(kind):
        if not len(keys):
            return None

        complete = [True]

        def lookup(values: np.ndarray) -> np.ndarray:  # values: consecutive integers
            out = np.full(len(values), -1, dtype=np.int64)
            inside = (keys >= values[0]) & (keys <= values[-1])
            out[keys[inside] - values[0]] = key_codes[inside]
            complete[0] = bool(inside.sum() == len(values))  # every integer of the range is declared
            return out

        codes = _range_lut(column, lookup, limit=max(len(column), 1 << 16, 4 * len(keys)))
        if codes is None:  # a sparse range: Arrow's hash lookup of the declared integers
            lo, hi = pc.min_max(column).as_py().values()
            inside = (keys >= lo) & (keys <= hi)
            index = pc.index_in(column, value_set=pa.array(keys[inside], type=kind))
            lut = np.append(key_codes[inside], -1)
            return lut[pc.fill_null(index, int(inside.sum())).to_numpy(zero_copy_only=False)], not index.null_count
        if column.null_count:
            codes[codes == _MISSING_CODE] = -1
            return codes, False
        return codes, complete[0]
    return None


def _factorize(column: Any) -> tuple[list[Any], np.ndarray]:
    """Distinct values of an Arrow column (as Python objects, None for null) and each row's index
    into them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()  # one dictionary for all rows
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column, null_encoding="encode")
    values = column.dictionary.to_pylist()
    index = column.indices
    if index.null_count:
        index = pc.fill_null(index, len(values))
        values.append(None)
    return values, index.to_numpy(zero_copy_only=False).astype(np.intp, copy=False)


def _column_codes(name: str, domain: Domain, series: Any, dtype: Any, weights: np.ndarray | None,
                  *, raw_numbers: bool) -> np.ndarray:
    """Domain codes of one column of counted rows (a frame's rows, or grouped rows with their
    ``weights``), as :func:`_codes` defines them; raises its DataErrors.

    A binned column holds the engine's bin codes (:func:`_bin_expression`), or, with
    ``raw_numbers``, the numbers themselves, binned here by :func:`_bin_codes`. A categorical column
    is read as Arrow: values equal to a declared text or integer are coded by :func:`_known_codes`,
    the distinct remaining values (missing entries, values outside the domain, other types) by
    ``Domain.code_of``. Object columns, and columns Arrow has no kernel for, go through Python values.
    """
    import narwhals.stable.v2 as nw
    import pyarrow as pa

    if isinstance(domain, Binned):
        raw = _bin_codes(domain.edges, series.to_arrow()) if raw_numbers else series.to_numpy()
        return _codes(name, domain, raw, weights)
    if dtype != nw.Object:
        try:
            return _arrow_codes(name, domain, series.to_arrow(), weights)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            pass  # an Arrow type without the kernels used: Python values below
    return _codes(name, domain, series.to_list(), weights)


def _arrow_codes(name: str, domain: Categorical, column: Any, weights: np.ndarray | None) -> np.ndarray:
    import pyarrow as pa

    known = _known_codes(domain, column)
    if known is not None and known[1]:
        return known[0]
    rest = np.ones(len(column), dtype=bool) if known is None else known[0] < 0
    codes = np.full(len(column), -1, dtype=np.int64) if known is None else known[0]
    if rest.any():
        everything = bool(rest.all())
        values, index = _factorize(column if everything else column.filter(pa.array(rest)))
        sub_weights = weights if weights is None or everything else weights[rest]
        per_value = np.bincount(index, weights=sub_weights, minlength=len(values))
        codes[rest] = _codes(name, domain, values, per_value)[index]
    return codes


# --------------------------------------------------------------------------------------------------
# counting
# --------------------------------------------------------------------------------------------------
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


def _series(frame: Any, columns: Sequence[str]) -> dict[str, Any] | None:
    """Each of ``columns`` of an in-memory frame as a narwhals Series, fetched once (a pandas column
    lookup costs more than coding a small column); None for a lazy frame."""
    import narwhals.stable.v2 as nw

    return {c: frame.get_column(c) for c in columns} if isinstance(frame, nw.DataFrame) else None


def _dtypes(frame: Any, columns: Sequence[str], series: dict[str, Any] | None) -> dict[str, Any]:
    """The narwhals dtype of each of ``columns``: of its ``series`` (an in-memory frame's), else from
    the lazy frame's schema."""
    if series is not None:
        return {c: series[c].dtype for c in columns}
    schema = frame.collect_schema()
    return {c: schema[c] for c in columns}


def _check_types(dtypes: dict[str, Any], schema: Schema, columns: Sequence[str]) -> dict[str, Any]:
    """DataError for a nested column or a binned column that holds no numbers; returns ``dtypes``
    (the frame's narwhals dtypes by column name)."""
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
    """One dense count table per criterion, all counted in one pass over the data.

    An in-memory frame's columns are coded once and counted by one ``np.bincount``; a lazy frame
    (a CSV/Parquet file, a DuckDB relation, a Spark DataFrame, …) is grouped once by its engine on
    the union of the criteria's columns (per distinct column set when that union spans more than
    :data:`UNION_MAX_CELLS` cells). Each criterion's table is the marginal of that count over its
    columns A ∪ P ∪ O: ``counts[a, p, o] = Σ`` of the union's cells that agree with (a, p, o).

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
    declared = Schema({c: schema[c] for c in needed if c in schema}) if isinstance(data, (str, Path)) else None
    frame, keep_alive = open_frame(data, declared)  # a file's columns are read as declared
    try:  # files are opened lazily: nothing before _tally reads a row
        check_columns(criteria, frame.columns)
        schema.require(needed)
        _refuse_huge_tables(criteria, schema)
        if not criteria:
            return []
        series = _series(frame, needed)
        tallies = _tally(frame, criteria, schema, _check_types(_dtypes(frame, needed, series), schema, needed), series)
        tables = []
        for crit in criteria:
            tally = next(t for t in tallies if set(crit.columns) <= set(t.columns))
            counts = tally.counts(crit.columns)
            n_a, n_p, n_o = (math.prod(schema[c].size for c in side)
                             for side in (crit.admissible, crit.protected, crit.outcome))
            tables.append(CountTable(crit, counts.reshape(n_a, n_p, n_o), tuple(schema[c] for c in crit.columns)))
        return tables
    finally:
        if keep_alive is not None:
            keep_alive.close()


@dataclass(eq=False)
class _Tally:
    """Domain codes of counted rows, per column, and the number of data rows each row stands for
    (``weights``; None: one each, the rows of an in-memory frame)."""

    columns: tuple[str, ...]
    codes: dict[str, np.ndarray]
    weights: np.ndarray | None
    sizes: dict[str, int]
    _dense: np.ndarray | None = None

    def counts(self, columns: tuple[str, ...]) -> np.ndarray:
        """``int64`` counts of every cell of ``columns`` (some of :attr:`columns`), row-major.

        When the union of :attr:`columns` has no more cells than there are rows (and at most
        :data:`UNION_MAX_CELLS`), all rows are counted once into the dense union table and each
        request sums it over the other columns; otherwise the rows are counted per request.
        """
        rows = len(self.codes[self.columns[0]])
        union = math.prod(self.sizes[c] for c in self.columns)
        if union > min(rows, UNION_MAX_CELLS):
            return self._bincount(columns)
        if self._dense is None:
            self._dense = self._bincount(self.columns).reshape([self.sizes[c] for c in self.columns])
        axes = [self.columns.index(c) for c in columns]
        summed = self._dense.sum(axis=tuple(i for i in range(len(self.columns)) if i not in axes))
        return np.transpose(summed, np.argsort(np.argsort(axes))).reshape(-1)

    def _bincount(self, columns: tuple[str, ...]) -> np.ndarray:
        flat = self.codes[columns[0]].astype(np.int64, copy=True)
        for c in columns[1:]:
            np.multiply(flat, self.sizes[c], out=flat)
            np.add(flat, self.codes[c], out=flat)
        counted = np.bincount(flat, weights=self.weights, minlength=math.prod(self.sizes[c] for c in columns))
        return counted if self.weights is None else np.rint(counted).astype(np.int64)


def _tally(frame: Any, criteria: Sequence[Criterion], schema: Schema, dtypes: dict[str, Any],
           series: dict[str, Any] | None) -> list[_Tally]:
    """Read the rows, once: the codes of every column the criteria use (see the module docstring);
    ``series``: an in-memory frame's columns (:func:`_series`), None for a lazy frame.

    Columns are coded in the order a DataError names them: criterion by criterion, each
    criterion's columns sorted by name.
    """
    import narwhals.stable.v2 as nw

    order = tuple(dict.fromkeys(c for crit in criteria for c in sorted(crit.columns)))
    sizes = {c: schema[c].size for c in order}
    if series is not None and all(dtypes[c] != nw.Object for c in order):
        codes = {c: _column_codes(c, schema[c], series[c], dtypes[c], None, raw_numbers=True)
                 for c in order}
        return [_Tally(order, codes, None, sizes)]
    frame, names = _engine_names(frame, order)
    binned = [c for c in order if isinstance(schema[c], Binned)]
    if binned:
        frame = frame.with_columns(*[_bin_expression(names[c], schema[c], dtypes[c]) for c in binned])  # type: ignore[arg-type]
    if math.prod(sizes.values()) <= UNION_MAX_CELLS:
        groups = [order]
    else:
        groups = list(dict.fromkeys(tuple(sorted(crit.columns)) for crit in criteria))
    return [_group(frame, columns, schema, dtypes, sizes, names) for columns in groups]


def _engine_names(frame: Any, columns: Sequence[str]) -> tuple[Any, dict[str, str]]:
    """The frame reduced to ``columns``, each renamed by position to ``__dpaudit_<i>``, and the new
    name of each column.

    Engines parse the names they are given: DuckDB and Spark read a dot as a field access
    (``default.payment.next.month``, a binned ``s.core``), backticks or quotes as quoting, and Spark
    matches case-insensitively. Reaching a column by position parses nothing (``nw.nth``; Spark's
    ``toDF``), so every column is counted exactly as named.
    """
    import narwhals.stable.v2 as nw

    if frame.implementation.is_spark_like():
        from dpaudit._spark import positional_columns

        return positional_columns(frame, columns)
    position = {c: i for i, c in enumerate(frame.columns)}
    names = {c: f"__dpaudit_{position[c]}" for c in columns}
    return frame.select(*[nw.nth(position[c]).alias(names[c]) for c in columns]), names


def _group(frame: Any, columns: tuple[str, ...], schema: Schema, dtypes: dict[str, Any],
           sizes: dict[str, int], names: dict[str, str]) -> _Tally:
    """One group-by count over ``columns`` (reached in the frame by ``names``) run by the frame's
    engine, coded."""
    import narwhals.stable.v2 as nw

    try:
        grouped = frame.group_by(*(names[c] for c in columns), drop_null_keys=False).agg(nw.len().alias(_COUNT))
        if hasattr(grouped, "collect"):
            grouped = grouped.collect()
    except TypeError as exc:  # pandas object columns holding lists, dicts, sets
        raise DataError(
            f"cannot count the column(s) {', '.join(map(repr, columns))}: {exc}; every value must be a string, "
            "a number or a boolean (not a list or a dict)"
        ) from None
    weights = grouped.get_column(_COUNT).to_numpy().astype(np.int64)
    codes = {c: _column_codes(c, schema[c], grouped.get_column(names[c]), dtypes[c], weights, raw_numbers=False)
             for c in columns}
    return _Tally(columns, codes, weights, {c: sizes[c] for c in columns})
