"""Binning numeric columns by declared edges, exactly: the code of ``x`` is ``#{edges <= x} − 1``.

Two forms compute the same code: a narwhals expression run inside any engine
(:func:`_bin_expression`, for lazy frames: DuckDB, Spark, polars) and numpy on Arrow columns
(:func:`_bin_codes`, for in-memory frames). Both are checked against each other by
``tests/test_binning.py``. :func:`_range_lut` (a lookup table over an integer column's range) also
serves the coding of categorical integers (:mod:`dpaudit._coding`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpaudit.schema import Binned

_MISSING_CODE = -2  # bin code of a missing entry in a binned column (below-range is -1)
_CHAIN_BINS = 8  # bins compared one after the other; more are found by binary search
_MIN_RUN_BINS = 3  # equally spaced bins worth an integer division
_EXACT_INT = 2.0**52  # integers and edges below this are exact doubles, and so is x - edge


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
