"""Integer columns to codes through a lookup table over their range, in numpy.

A column of integers whose range ``[min, max]`` is not much longer than the column (at most its
length, at least 65,536 values) is coded by computing the code of every integer of the range once
(``code_of``) and taking each row's entry: one pass over the rows whatever the domain. When the code
of every value is the value plus a constant (label-encoded columns, ``Categorical(range(n))``), the
rows are not looked up at all.

Used for binning integer columns (the code of ``x`` is ``#{edges <= x} − 1``) and for coding
categorical integers against their declared values (:func:`integer_codes`), by
:mod:`dpaudit.counting.encode` on Arrow columns and by :func:`dpaudit.counting.count.count_tables`
directly on the numpy arrays of a pandas frame's integer columns.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit.schema import Binned, Categorical, Schema

__all__ = ["range_codes", "bin_lookup", "integer_codes", "declared_keys", "frame_codes"]

#: The shortest range always coded by a lookup table, whatever the column's length.
MIN_RANGE = 1 << 16


def _range_table(values: np.ndarray, code_of: Callable[[np.ndarray], np.ndarray], limit: int | None,
                 bounds: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The codes of ``values`` and the lookup table over their range (see :func:`range_codes`);
    ``bounds``: the values' (min, max) when already known."""
    limit = limit if limit is not None else max(len(values), MIN_RANGE)
    if not len(values):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    lo, hi = bounds if bounds is not None else (int(values.min()), int(values.max()))
    if hi - lo > limit or hi >= 2**63:
        return None
    lut = np.asarray(code_of(np.arange(lo, hi + 1, dtype=np.int64)), dtype=np.int64)
    shift = int(lut[0]) - lo
    if lut[0] >= 0 and shift < 2**63 and np.array_equal(lut, np.arange(lut[0], lut[0] + len(lut))):
        codes = _shifted(values, shift)  # code = value + shift (e.g. label-encoded columns): no lookup
    elif 0 <= lo and hi <= limit:  # index by the values themselves: no subtraction pass
        codes = np.take(np.concatenate((np.zeros(lo, dtype=np.int64), lut)), values)
    else:
        codes = np.take(lut, values.astype(np.int64, copy=False) - lo)
    return codes, lut


def _shifted(values: np.ndarray, shift: int) -> np.ndarray:
    """``values + shift`` as ``int64``; with no shift an ``int64`` array is returned as a read-only
    view (not copied, and not to be written to)."""
    if shift or values.dtype != np.int64:
        codes = values.astype(np.int64, copy=True)
        codes += shift
        return codes
    codes = values.view()
    codes.flags.writeable = False
    return codes


def bin_lookup(edges: Sequence[float]) -> Callable[[np.ndarray], np.ndarray]:
    """``code_of`` for :func:`range_codes` that bins integers by ``edges``: ``#{edges <= x} − 1``,
    which is ``searchsorted(edges, x, side="right") − 1`` (comparisons of doubles)."""
    grid = np.asarray(edges, dtype=np.float64)
    return lambda values: np.searchsorted(grid, values.astype(np.float64), side="right") - 1


def range_codes(values: np.ndarray, code_of: Callable[[np.ndarray], np.ndarray],
                limit: int | None = None) -> np.ndarray | None:
    """``int64`` codes of an integer array without missing entries through a lookup table over its
    range [min, max] (from 0 when the values are small and non-negative, so the values index it
    directly), or None when the range is longer than ``limit`` (default: the array's length, at
    least :data:`MIN_RANGE`). ``code_of(r)`` gives the code of each integer of the ``int64`` range
    ``r``. The result may be a read-only view of ``values`` (when every code equals its value).

    Examples
    --------
    >>> range_codes(np.array([3, 1, 2]), lambda r: 10 * r).tolist()
    [30, 10, 20]
    >>> range_codes(np.array([0, 10**9]), lambda r: r) is None
    True
    """
    table = _range_table(values, code_of, limit)
    return None if table is None else table[0]


@functools.lru_cache(maxsize=256)
def declared_keys(domain: Categorical) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
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


def integer_lookup(domain: Categorical) -> Callable[[np.ndarray], np.ndarray]:
    """``code_of`` for :func:`range_codes`: the code of each integer of a range of consecutive
    integers that equals a declared value (``int(v) == v == k``: then ``domain.code_of(k)`` is
    ``v``'s code, equal numbers hash alike), −1 for the others."""
    keys, key_codes = declared_keys(domain)[1:]

    def lookup(values: np.ndarray) -> np.ndarray:
        out = np.full(len(values), -1, dtype=np.int64)
        inside = (keys >= values[0]) & (keys <= values[-1])
        out[keys[inside] - values[0]] = key_codes[inside]
        return out

    return lookup


def integer_limit(domain: Categorical, rows: int) -> int:
    """The longest range coded by a lookup table for ``domain``: the rows, at least
    :data:`MIN_RANGE`, and at least four times the declared integers."""
    return max(rows, MIN_RANGE, 4 * len(declared_keys(domain)[1]))


def integer_codes(domain: Categorical, values: np.ndarray) -> tuple[np.ndarray, bool] | None:
    """Codes of an integer array without missing entries against the declared values of
    ``domain``, −1 for values not declared, and whether every integer of the array's range is
    declared (then no code is −1); None when the domain declares no integer or the range is too
    long for a lookup table (:func:`integer_limit`).

    Examples
    --------
    >>> codes, complete = integer_codes(Categorical([5, 7]), np.array([7, 5, 6]))
    >>> codes.tolist(), complete
    ([1, 0, -1], False)
    """
    if not len(declared_keys(domain)[1]):
        return None
    if not len(values):
        return np.empty(0, dtype=np.int64), True
    lo, hi = int(values.min()), int(values.max())
    run = _declared_run(domain)
    if run is not None and run[0] <= lo and hi <= run[1]:  # declared integers lo..hi coded in order
        return _shifted(values, run[2]), True
    table = _range_table(values, integer_lookup(domain), integer_limit(domain, len(values)), (lo, hi))
    if table is None:
        return None
    codes, lut = table
    return codes, bool(lut.min() >= 0)


@functools.lru_cache(maxsize=256)
def _declared_run(domain: Categorical) -> tuple[int, int, int] | None:
    """(first, last, shift) when the declared integers are every integer from first to last, each
    coded ``value + shift`` (``Categorical(range(n))``: shift 0); else None."""
    keys, key_codes = declared_keys(domain)[1:]
    if not len(keys):
        return None
    order = np.argsort(keys)
    keys, key_codes = keys[order], key_codes[order]
    first, shift = int(keys[0]), int(key_codes[0]) - int(keys[0])
    if np.array_equal(keys, np.arange(first, first + len(keys))) and np.array_equal(key_codes, keys + shift):
        return first, int(keys[-1]), shift
    return None

def frame_codes(frame: Any, columns: Sequence[str], schema: Schema) -> dict[str, np.ndarray] | None:
    """The codes of ``columns`` of an in-memory pandas frame read straight off its numpy integer
    columns, when every one is such a column whose values all lie in the declared domain (a
    categorical column: every integer of its range declared; a binned one: inside the bins); None
    otherwise, and the rows are then coded through Arrow (:func:`~dpaudit.counting.encode._column_codes`,
    which names the refused values). The same codes either way: both take the lookup tables of this
    module.
    """
    import narwhals.stable.v2 as nw

    if getattr(frame, "implementation", None) is not nw.Implementation.PANDAS:
        return None
    native = frame.to_native()
    out: dict[str, np.ndarray] = {}
    for name in columns:
        column = native[name]
        if not isinstance(column.dtype, np.dtype) or column.dtype.kind not in "iu":
            return None
        values, domain = column.to_numpy(), schema[name]
        if isinstance(domain, Binned):
            codes = range_codes(values, bin_lookup(domain.edges))
            if codes is None or (len(codes) and (codes.min() < 0 or codes.max() >= domain.n_bins)):
                return None
        elif isinstance(domain, Categorical):
            found = integer_codes(domain, values)
            if found is None or not found[1]:
                return None
            codes = found[0]
        else:
            return None
        out[name] = codes
    return out
