"""Bin keys of integer columns in integer arithmetic: binning at the cost of the division a user
writes by hand, for engines whose SQL has a truncating integer division (DuckDB ``//``, Spark ``div``).

A binned integer column whose declared edges are equally spaced integers ``e_i = e_0 + i·w``
(i = 0..n, all finite) is grouped on the key of an :class:`IntegerKey`, one division per value::

    key(x) = trunc((x + s) / w)                      (truncating division, as SQL engines divide)
    code   = key(x) − K                              (in numpy, on the grouped rows)

with ``K = max(1, ⌈e_0 / w⌉)`` and the shift ``s = K·w − e_0 ≥ 0``, so the shifted first edge
``e_0 + s = K·w`` is a positive multiple of ``w``. The code is exact inside the edges and keeps
every value outside them outside (:func:`key_codes` then gives the comparison codes
``#{edges <= x} − 1``: −1 below, n at or above the last edge):

* x in [e_0, e_n): y = x + s ≥ K·w > 0, where truncation is ``floor``, so
  ``code = ⌊(x − e_0)/w⌋`` exactly, in [0, n).
* x < e_0: y < K·w; if y ≥ 0, ``trunc = floor ≤ K − 1``; if y < 0, ``trunc ≤ 0 < K``: code < 0.
* x ≥ e_n: y ≥ (K + n)·w > 0, so code ≥ n.
* null: null key (SQL arithmetic keeps nulls), the missing code. Integer columns hold no NaN.

Overflow: when ``s = 0`` (e_0 a positive multiple of w) there is no addition and a division by
``w ≥ 1`` never overflows, whatever the integer type. Otherwise a column of at most 32 bits is first
widened to 64 bits (``|x| < 2^32``, ``s < 2^54``). A 64-bit column with ``e_0 = k·w`` (k ≤ 0)
uses exact floor division instead, ``key = trunc(x / w) − [x mod w < 0]`` (the remainder has the
sign of x in both engines), ``code = key − k``: no addition to x at all. Any other column (a 64-bit
one whose first edge is not a multiple of the width, floats, uneven or infinite edges) is binned by
the general expression (:func:`dpaudit.counting.encode._bin_expression`).

The keys depend on the declared edges and the column's type only, never on the data. The longest
equally spaced run of any edges (:func:`_equal_width_run`), which the general expression divides by,
is found here too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["IntegerKey", "integer_key", "key_codes"]  # and _equal_width_run, for the general expression

_EXACT_INT = 2.0**52  # integral edges up to this are exact doubles and exact in 64-bit arithmetic
_MIN_RUN_BINS = 3  # equally spaced bins worth an integer division in the general expression


def _narrow_types() -> tuple[Any, ...]:
    """The narwhals integer types of at most 32 bits (widened to 64 bits before a shift)."""
    import narwhals.stable.v2 as nw

    return nw.Int8, nw.Int16, nw.Int32, nw.UInt8, nw.UInt16, nw.UInt32


@dataclass(frozen=True)
class IntegerKey:
    """``key = trunc((x' + shift) / width) − [floor and x' mod width < 0]`` of an integer column x,
    where ``x' = x`` widened to 64 bits when ``widen``; its code is ``key − offset`` (module docstring).
    """

    shift: int
    width: int
    offset: int
    widen: bool = False
    floor: bool = False

    def sql(self, column: str, *, div: str, bigint: str = "BIGINT") -> str:
        """The key as SQL over the quoted ``column``, with the dialect's truncating integer
        division operator ``div`` (``//`` in DuckDB, ``div`` in Spark) and 64-bit type ``bigint``.

        >>> IntegerKey(10_000, 10_000, 1, widen=True).sql('"x"', div="//")
        '((CAST("x" AS BIGINT) + 10000) // 10000)'
        >>> IntegerKey(0, 10, 0, floor=True).sql("`x`", div="div")
        '((`x` div 10) - CAST((`x` % 10) < 0 AS BIGINT))'
        """
        x = f"CAST({column} AS {bigint})" if self.widen else column
        y = f"({x} + {self.shift})" if self.shift else x
        key = f"({y} {div} {self.width})"
        return f"({key} - CAST(({x} % {self.width}) < 0 AS {bigint}))" if self.floor else key


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


def integer_key(edges: Sequence[float], dtype: Any) -> IntegerKey | None:
    """The :class:`IntegerKey` binning a column of narwhals ``dtype`` by ``edges``, or None when the
    column is not an integer column or the edges are not equally spaced finite integers (then the
    general expression bins it).

    >>> import narwhals.stable.v2 as nw
    >>> integer_key(range(0, 200_001, 10_000), nw.Int32)  # INCTOT: shifted by one width, widened
    IntegerKey(shift=10000, width=10000, offset=1, widen=True, floor=False)
    >>> integer_key(range(10, 91, 10), nw.Int64)  # AGE: first edge a multiple of the width
    IntegerKey(shift=0, width=10, offset=1, widen=False, floor=False)
    >>> integer_key(range(-50, 51, 10), nw.Int64)  # 64 bits, first edge −5·w: floor division
    IntegerKey(shift=0, width=10, offset=-5, widen=False, floor=True)
    >>> integer_key([0, 1, 5], nw.Int64) is None, integer_key(range(0, 50, 10), nw.Float64) is None
    (True, True)
    """
    if not dtype.is_integer() or len(edges) < 2:
        return None
    first, width = edges[0], edges[1] - edges[0]
    if not all(math.isfinite(e) and float(e).is_integer() and abs(e) <= _EXACT_INT for e in edges):
        return None
    if any(edges[i] != first + i * width for i in range(len(edges))):
        return None
    e0, w = int(first), int(width)
    k = max(1, -(-e0 // w))  # ⌈e0 / w⌉, at least 1
    shift = k * w - e0
    if shift == 0:
        return IntegerKey(0, w, k)
    if any(dtype == narrow for narrow in _narrow_types()):
        return IntegerKey(shift, w, k, widen=True)
    if e0 % w == 0:
        return IntegerKey(0, w, e0 // w, floor=dtype.is_signed_integer())
    return None


def key_codes(keys: Any, key: IntegerKey, n_bins: int, missing_code: int) -> np.ndarray:
    """The comparison codes ``#{edges <= x} − 1`` (−1 below the first edge, ``n_bins`` at or above
    the last) of the grouped ``keys`` (an Arrow integer column, nulls for missing values, which get
    ``missing_code``)."""
    import numpy as np  # here: --help imports this module and must not load numpy
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    values = pc.fill_null(keys, 0) if keys.null_count else keys
    values = values.to_numpy(zero_copy_only=False)
    if values.dtype == np.uint64:  # as doubles: a key far above the edges stays far above (rounding is monotone)
        values = values.astype(np.float64)
    # clipped first, so key − offset cannot overflow for keys far outside the edges
    codes = np.clip(values, np.int64(key.offset - 1), np.int64(key.offset + n_bins)).astype(np.int64, copy=False)
    codes -= key.offset
    if keys.null_count:
        codes[~keys.is_valid().to_numpy(zero_copy_only=False)] = missing_code
    return codes
