"""Values to domain codes: each counted column's values (or bin codes) become the index of their
cell in the declared domain, and values outside it are refused with the column, the values and
their row counts named.

Used by :mod:`dpaudit.counts` on the rows of an in-memory frame and on the grouped rows of a lazy
engine (then each value carries the number of rows it stands for, ``weights``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dpaudit._binning import _MISSING_CODE, _bin_codes, _range_lut
from dpaudit._errors import DataError
from dpaudit.schema import Binned, Categorical, Domain, _is_missing


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
