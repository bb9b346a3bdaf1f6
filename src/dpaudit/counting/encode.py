"""Encoding: each counted column's values become the codes of their cells in the declared domain.

Binned numeric columns are binned by their declared edges, exactly — the code of ``x`` is
``#{edges <= x} − 1`` — in one of two forms that compute the same code: a narwhals expression run
inside any engine (:func:`_bin_expression`, for lazy frames: DuckDB, Spark, polars; applied by
:func:`engine_frame`, which also reaches the columns by position) and numpy on Arrow columns
(:func:`_bin_codes`, for in-memory frames). Both are checked against each other by
``tests/test_binning.py``. An integer column on equally spaced integral edges is instead grouped
on its key in the engine's own integer division where the engine has one (DuckDB, Spark:
:mod:`dpaudit.counting.keys`, checked by ``tests/test_integer_keys.py``).

Values (or bin codes) then become the index of their cell in the declared domain
(:func:`_column_codes`), and values outside it are refused with the column, the values and their
row counts named. :mod:`dpaudit.counting.count` codes the rows of an in-memory frame, and the grouped
rows of a lazy engine (then each value carries the number of rows it stands for, ``weights``).
:mod:`dpaudit.counting.lookup` (a lookup table over an integer column's range) serves both the
binning of integers and the coding of categorical integers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpaudit._errors import DataError
from dpaudit.counting.frames import Opened
from dpaudit.counting.keys import IntegerKey, _equal_width_run, integer_key, key_codes
from dpaudit.counting.lookup import bin_lookup, declared_keys, integer_codes, integer_limit, integer_lookup, range_codes
from dpaudit.schema import Binned, Categorical, Domain, Schema, _is_missing

_MISSING_CODE = -2  # bin code of a missing entry in a binned column (below-range is -1)
_CHAIN_BINS = 8  # bins compared one after the other; more are found by binary search
_EXACT_INT = 2.0**52  # integers and edges below this are exact doubles, and so is x - edge
_EXACT_RUN = 2.0**49  # an integer run this short is binned by one division without correction (_bin_code)


def _bin_code(x: Any, edges: Sequence[float], integral: bool) -> Any:
    """A narwhals Float64 expression equal to ``#{edges <= x} - 1`` for every non-missing ``x``.

    ``x`` is the column as Float64, so every comparison is the comparison of doubles that the
    definition (and every engine's ``x >= edge``) makes. Compiled to the cheapest exact form:

    * the longest run of equally spaced finite edges ``e_a + i·w`` (i = 0..m) becomes one division,
      ``q = floor((x − e_a) / w)``. For an integer column with integral edges and a run shorter than
      2^49 it is exact as ``floor((x − e_a + 1/2) / w)``: ``d + 1/2`` (d = x − e_a) is exact, its true
      quotient lies at least ``1/(2w)`` from every integer, and the engine's quotient — a rounded
      division, or polars' multiplication by the rounded ``1/w`` (147/49 gives 2.9999999999999996
      there) — is off by at most ``(d/w + 1)·2^−51``, below ``1/(2w)`` for d, w < 2^49. For other
      columns ``x − e_a`` may round (x = −1e−20,
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
        if (integral and width.is_integer() and edges[a].is_integer() and all(abs(edges[i]) <= _EXACT_INT for i in (a, b))
                and edges[b] - edges[a] < _EXACT_RUN):
            q = ((x - lit(edges[a] - 0.5)) / lit(width)).floor()
            return q + lit(a) if a else q
        q = ((x - lit(edges[a])) / lit(width)).floor()
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


def engine_frame(opened: Opened, columns: Sequence[str], schema: Schema,
                 dtypes: dict[str, Any]) -> tuple[Any, dict[str, str], dict[str, IntegerKey]]:
    """The frame a lazy engine groups: ``columns`` reached by position (by the engine that counts it,
    :meth:`dpaudit.counting.Engine.positional_columns`, so no engine parses a column's name), each
    binned one as its bin key — an :class:`~dpaudit.counting.keys.IntegerKey` computed by the
    engine's integer division where there is one (:meth:`~dpaudit.counting.Engine.integer_keys`),
    else its bin code (:func:`_bin_expression`) —, the new name of each column, and the keys used."""
    frame, names = opened.engine.positional_columns(opened.frame, columns)
    binned = [c for c in columns if isinstance(schema[c], Binned)]
    keys = {c: key for c in binned if (key := integer_key(schema[c].edges, dtypes[c])) is not None}  # type: ignore[union-attr]
    keyed = opened.engine.integer_keys(frame, {names[c]: key for c, key in keys.items()}) if keys else None
    frame, keys = (frame, {}) if keyed is None else (keyed, keys)
    if rest := [c for c in binned if c not in keys]:
        frame = frame.with_columns(*[_bin_expression(names[c], schema[c], dtypes[c]) for c in rest])  # type: ignore[arg-type]
    return frame, names, keys


def _bin_codes(edges: Sequence[float], column: Any) -> np.ndarray:
    """Bin codes of an Arrow column in numpy: ``#{edges <= x} − 1`` is exactly
    ``searchsorted(edges, x, side="right") − 1`` (comparisons of doubles); ``_MISSING_CODE`` for
    null/NaN. An integer column over a range no longer than the column is coded through a lookup
    table of its range (one ``searchsorted`` per distinct possible value, then one take)."""
    import pyarrow as pa

    grid = np.asarray(edges, dtype=np.float64)
    if pa.types.is_integer(column.type) and (lut := _range_lut(column, bin_lookup(edges))) is not None:
        return lut
    values = column.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)  # nulls become NaN
    codes = np.searchsorted(grid, values, side="right") - 1
    codes[np.isnan(values)] = _MISSING_CODE
    return codes


def _range_lut(column: Any, code_of: Any, limit: int | None = None) -> np.ndarray | None:
    """Codes of an integer Arrow column through :func:`~dpaudit.counting.lookup.range_codes` (a
    lookup table over its range), nulls coded ``_MISSING_CODE``; None when the range is longer than
    ``limit`` (default: the column's length, at least 65,536)."""
    import pyarrow.compute as pc

    nulls = column.null_count
    if not nulls:
        return range_codes(column.to_numpy(), code_of, limit)
    lo = pc.min_max(column).as_py()["min"]
    if lo is None:  # all null
        return np.full(len(column), _MISSING_CODE, dtype=np.int64)
    codes = range_codes(pc.fill_null(column, lo).to_numpy(), code_of, limit)
    if codes is None:
        return None
    codes = np.array(codes, dtype=np.int64)  # writable: the nulls are marked below
    codes[~column.is_valid().to_numpy(zero_copy_only=False)] = _MISSING_CODE
    return codes


# -- values to domain codes ------------------------------------------------------------------------

def _weight_of(weights: np.ndarray | None, mask: np.ndarray) -> int:
    return int(mask.sum()) if weights is None else int(weights[mask].sum())


def _codes(name: str, domain: Domain, raw: Any, weights: np.ndarray | None) -> np.ndarray:
    """Map values (bin codes for a binned column) to domain codes; raise DataError for values
    outside the domain. ``weights`` holds the number of rows of each value (None: one each)."""
    if isinstance(domain, Binned):
        codes = np.asarray(raw, dtype=np.int64)
        if not len(codes) or (codes.min() >= 0 and codes.max() < domain.n_bins):
            return codes  # every value inside the bins: nothing to refuse or move
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
            if not rows:  # a value no row holds (an unused category of a pandas Categorical)
                pass
            elif key is None:
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
    texts, keys, key_codes = declared_keys(domain)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if not texts:
            return None
        index = pc.index_in(column, value_set=pa.array(list(texts), type=kind))
        lut = np.array([*texts.values(), -1], dtype=np.int64)
        return lut[pc.fill_null(index, len(texts)).to_numpy(zero_copy_only=False)], not index.null_count
    if pa.types.is_integer(kind):
        if not len(keys):
            return None
        if not column.null_count:
            found = integer_codes(domain, column.to_numpy())
            if found is not None:
                return found
        else:
            codes = _range_lut(column, integer_lookup(domain), limit=integer_limit(domain, len(column)))
            if codes is not None:
                codes[codes == _MISSING_CODE] = -1
                return codes, False
        # a sparse range: Arrow's hash lookup of the declared integers
        lo, hi = pc.min_max(column).as_py().values()
        inside = (keys >= lo) & (keys <= hi)
        index = pc.index_in(column, value_set=pa.array(keys[inside], type=kind))
        lut = np.append(key_codes[inside], -1)
        return lut[pc.fill_null(index, int(inside.sum())).to_numpy(zero_copy_only=False)], not index.null_count
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
                  *, raw_numbers: bool, key: IntegerKey | None = None) -> np.ndarray:
    """Domain codes of one column of counted rows (a frame's rows, or grouped rows with their
    ``weights``), as :func:`_codes` defines them; raises its DataErrors.

    A binned column holds the engine's bin codes (:func:`_bin_expression`), its bin keys (``key``,
    :func:`~dpaudit.counting.keys.key_codes`), or, with ``raw_numbers``, the numbers themselves, binned
    here by :func:`_bin_codes`. A categorical column
    is read as Arrow: values equal to a declared text or integer are coded by :func:`_known_codes`,
    the distinct remaining values (missing entries, values outside the domain, other types) by
    ``Domain.code_of``. Object columns, and columns Arrow has no kernel for, go through Python values.
    """
    import narwhals.stable.v2 as nw
    import pyarrow as pa

    if isinstance(domain, Binned):
        if key is not None:
            raw = key_codes(series.to_arrow(), key, domain.n_bins, _MISSING_CODE)
        else:
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

    if pa.types.is_dictionary(column.type):  # a pandas Categorical, say: code the few dictionary values only
        values, index = _factorize(column)
        lut = [domain.code_of(v) for v in values]
        if None not in lut:  # every value (used or not) is declared; else below names the used ones refused
            return np.asarray(lut, dtype=np.int64)[index]
    known = _known_codes(domain, column)
    if known is not None and known[1]:
        return known[0]
    rest = np.ones(len(column), dtype=bool) if known is None else known[0] < 0
    codes = np.full(len(column), -1, dtype=np.int64) if known is None else np.require(known[0], requirements="W")
    if rest.any():
        everything = bool(rest.all())
        values, index = _factorize(column if everything else column.filter(pa.array(rest)))
        sub_weights = weights if weights is None or everything else weights[rest]
        per_value = np.bincount(index, weights=sub_weights, minlength=len(values))
        codes[rest] = _codes(name, domain, values, per_value)[index]
    return codes
