"""Integer bin keys (``counting/keys.py``) are exact: an integer column binned by equally spaced
integral edges and grouped by DuckDB on ``trunc((x + s) / w)`` gives, after ``key_codes``, the
comparison code ``#{edges <= x} − 1`` of every value — −1 for every value below the first edge,
``n_bins`` for every value at or above the last, the missing code for null — for every integer type,
including the extremes of each type (no overflow), every form of key (no shift, shift of a widened
column, floor division of a 64-bit column) and first edges below, at and above zero.

Through ``count_tables``, a Parquet file (grouped by DuckDB on the keys) and the same rows in a pandas
frame (binned in numpy) give the same counts and the same error messages for values outside the edges
and missing values. The Spark dialect of the same keys is checked in ``tests/test_spark.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dpaudit import Binned, Categorical, Criterion, DataError, Schema, count_tables
from dpaudit.counting.encode import _MISSING_CODE
from dpaudit.counting.engines import DuckDBEngine
from dpaudit.counting.keys import IntegerKey, integer_key, key_codes

nw = pytest.importorskip("narwhals.stable.v2")
pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

TYPES = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
         "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64()}


def bounds(kind: pa.DataType) -> tuple[int, int]:
    info = np.iinfo(kind.to_pandas_dtype())
    return int(info.min), int(info.max)


def oracle(value, edges) -> int:
    """The definition: the number of edges at or below x, minus one (exact integers here)."""
    return _MISSING_CODE if value is None else sum(e <= value for e in edges) - 1


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    yield con
    con.close()


def duckdb_codes(duck, values: list, kind: pa.DataType, edges) -> tuple[list[int], IntegerKey | None]:
    """Codes of ``values`` (an Arrow column of type ``kind``) grouped by DuckDB on their integer key."""
    frame = nw.from_native(duck.from_arrow(pa.table({"x": pa.array(values, type=kind)})))
    key = integer_key(edges, frame.collect_schema()["x"])
    if key is None:
        return [], None
    keyed = DuckDBEngine().integer_keys(frame, {"x": key})
    column = keyed.collect().get_column("x").to_arrow()
    return key_codes(column, key, len(edges) - 1, _MISSING_CODE).tolist(), key


@st.composite
def cases(draw):
    """Equally spaced integral edges (first edge below, at or above zero, a multiple of the width or
    not), a type, and values on and beside every edge, at the type's extremes, anywhere, and null."""
    kind = draw(st.sampled_from(sorted(TYPES)))
    lo, hi = bounds(TYPES[kind])
    width = draw(st.integers(1, 40))
    first = draw(st.one_of(st.integers(-1000, 1000), st.sampled_from([0, width, 3 * width, -width, -7 * width])))
    edges = [first + i * width for i in range(draw(st.integers(1, 12)) + 1)]
    near = [v for e in edges for v in (e - 1, e, e + 1) if lo <= v <= hi]
    picks = st.one_of(st.sampled_from(near or [lo]), st.sampled_from([lo, lo + 1, hi - 1, hi, None]),
                      st.integers(lo, hi), st.integers(max(lo, -3000), min(hi, 3000)))
    return kind, edges, draw(st.lists(picks, min_size=1, max_size=40))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
@example(case=("int32", list(range(0, 200_001, 10_000)), [-1, 0, 9_999, 10_000, 199_999, 200_000,
                                                          -(2**31), 2**31 - 1, None]))  # INCTOT
@example(case=("int16", list(range(10, 91, 10)), [9, 10, 89, 90, -(2**15), 2**15 - 1, 0, -1, None]))  # AGE
@example(case=("int64", list(range(-50, 51, 10)), [-(2**63), 2**63 - 1, -51, -50, -41, -1, 0, 50, 49, None]))
@example(case=("uint64", list(range(0, 31, 10)), [0, 9, 10, 29, 30, 2**64 - 1, 2**63, None]))
@example(case=("int8", [-128, -88, -48, -8], [-128, -89, -88, -9, -8, 127, None]))
def test_keys_give_the_comparison_codes(duck, case):
    kind, edges, values = case
    codes, key = duckdb_codes(duck, values, TYPES[kind], [float(e) for e in edges])
    if key is None:  # 64-bit, first edge not a multiple of the width: the general expression bins it
        assert kind in ("int64", "uint64") and edges[0] % (edges[1] - edges[0]) != 0
        return
    assert codes == [oracle(v, edges) for v in values]


def test_the_cheapest_safe_key_is_chosen():
    assert integer_key(range(10, 91, 10), nw.Int16) == IntegerKey(0, 10, 1)  # no shift: one division
    assert integer_key(range(0, 101, 10), nw.Int32) == IntegerKey(10, 10, 1, widen=True)
    assert integer_key(range(5, 106, 10), nw.UInt8) == IntegerKey(5, 10, 1, widen=True)
    assert integer_key(range(0, 101, 10), nw.Int64) == IntegerKey(0, 10, 0, floor=True)
    assert integer_key(range(0, 101, 10), nw.UInt64) == IntegerKey(0, 10, 0, floor=False)  # never negative
    assert integer_key(range(5, 106, 10), nw.Int64) is None
    assert integer_key([0.0, 10.0, float("inf")], nw.Int32) is None
    assert integer_key([0.0, 10.0, 30.0], nw.Int32) is None
    assert integer_key([0.0, 0.5, 1.0], nw.Int32) is None
    assert integer_key(range(0, 101, 10), nw.Float64) is None
    assert integer_key([0.0, 2.0**53 + 2], nw.Int64) is None  # beyond exact doubles


def test_duckdb_groups_on_the_key_not_the_general_expression(duck):
    frame = nw.from_native(duck.sql("SELECT 5::INTEGER AS x"))
    sql = DuckDBEngine().integer_keys(frame, {"x": IntegerKey(10, 10, 1, widen=True)}).to_native().sql_query()
    assert '((CAST("x" AS BIGINT) + 10) // 10) AS "x"' in sql and "CASE" not in sql


def test_other_frames_have_no_integer_keys():
    pl = pytest.importorskip("polars")
    frame = nw.from_native(pl.LazyFrame({"x": [1, 2]}))
    assert DuckDBEngine().integer_keys(frame, {"x": IntegerKey(0, 10, 1)}) is None


# -- through count_tables: a Parquet file (DuckDB, keys) against the same rows in pandas (numpy) -------
def _frames(values, dtype: str) -> pd.DataFrame:
    x = pd.array(values, dtype=dtype)
    return pd.DataFrame({"x": x, "y": np.arange(len(values)) % 2})


def _both(tmp_path, frame: pd.DataFrame, schema: Schema):
    path = tmp_path / "x.parquet"
    frame.to_parquet(path, index=False)
    out = []
    for data in (frame, str(path)):
        try:
            out.append(count_tables(data, [Criterion.parse("x ⊥ y")], schema)[0].counts.tolist())
        except DataError as exc:
            out.append(str(exc))
    return out


@pytest.mark.parametrize("dtype", ["Int8", "Int16", "Int32", "Int64", "UInt8", "UInt32", "UInt64"])
@pytest.mark.parametrize("edges", [range(10, 51, 10), range(0, 41, 10), range(5, 46, 10)])
def test_file_and_frame_count_alike(tmp_path, dtype, edges):
    inside = [edges[0], edges[0] + 1, edges[1], edges[-1] - 1, edges[2]]
    schema = Schema({"x": Binned(edges, missing="NA"), "y": Categorical([0, 1])})
    on_frame, on_file = _both(tmp_path, _frames(inside + [None], dtype), schema)
    assert on_file == on_frame and isinstance(on_file, list) and sum(map(sum, on_file[0])) == 6


@pytest.mark.parametrize("dtype", ["Int8", "Int16", "Int32", "Int64", "UInt8", "UInt64"])
@pytest.mark.parametrize("edges", [range(10, 51, 10), range(0, 41, 10), range(5, 46, 10)])
def test_file_and_frame_refuse_alike(tmp_path, dtype, edges):
    lo, hi = (int(b) for b in (np.iinfo(dtype.lower()).min, np.iinfo(dtype.lower()).max))
    values = [v for v in (lo, edges[0] - 1, edges[0] - 11, edges[0], edges[-1], edges[-1] + 9, hi, hi, None, None)
              if v is None or lo <= v <= hi]
    schema = Schema({"x": Binned(edges), "y": Categorical([0, 1])})
    on_frame, on_file = _both(tmp_path, _frames(values, dtype), schema)
    assert isinstance(on_file, str) and on_file == on_frame
    assert "at or above the last bin edge" in on_file and "2 row(s) with a missing value" in on_file
