"""Binning is exact: the compiled engine expression and the in-memory numpy path equal the
comparison definition ``code = #{edges <= x} - 1`` (missing code for null/NaN) for every value.

The expression (``encode._bin_expression``: integer division on equally spaced edges, a chain or a
binary search elsewhere) runs on pandas, polars, pyarrow and DuckDB through narwhals; the numpy path
(``encode._bin_codes``) on Arrow arrays. Hypothesis draws edges with equally spaced runs (integral
and fractional widths), uneven edges and infinite ends, and values at, just below and just above
every edge (one ulp away), between them, far outside, ±inf, NaN and null, as floats and as integers.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dpaudit import Binned, Categorical, Criterion, Schema, count_tables
from dpaudit.counting.encode import _MISSING_CODE, _bin_codes, _bin_expression
from dpaudit.counting.keys import _equal_width_run

nw = pytest.importorskip("narwhals.stable.v2")
pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")

INF = math.inf


def oracle(value, edges) -> int:
    """The definition: the number of edges at or below x, minus one; doubles compared."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return _MISSING_CODE
    x = float(value)
    return sum(e <= x for e in edges) - 1


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    yield con
    con.close()


def engine_codes(kind: str, values: list, integer: bool, edges, duck) -> list[int]:
    """Bin codes of ``values`` computed by ``_bin_expression`` on one engine."""
    arrow_type = pa.int64() if integer else pa.float64()
    table = pa.table({"x": pa.array(values, type=arrow_type, from_pandas=True)})
    if kind == "pandas":
        native = table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get if integer else None)
    elif kind == "polars":
        native = pl.from_arrow(table)
    elif kind == "pyarrow":
        native = table
    else:
        native = duck.from_arrow(table)
    frame = nw.from_native(native)
    dtype = frame.collect_schema()["x"]
    out = frame.select(_bin_expression("x", Binned(edges), dtype))
    out = out.collect() if hasattr(out, "collect") else out
    return out.get_column("x").to_list()


# -- strategies -------------------------------------------------------------------------------------
_small = st.integers(-1000, 1000)
# starts near zero matter: x − start then loses the low bits of x (x = −1e−20, start = −5 gives 5.0)
_start = st.one_of(st.sampled_from([-5.0, -1.0, -0.3, 0.0, 0.1, 3.0]), st.floats(-100, 100), _small.map(float),
                   st.floats(-1e6, 1e6))
_width = st.one_of(st.integers(1, 50).map(float), st.sampled_from([0.1, 0.25, 0.3, 1 / 3, 2.5, 1e-3, 7.77]))


@st.composite
def edge_lists(draw, integral: bool = False):
    """Strictly increasing edges: an equally spaced run (start + i·w, as an engine computes it),
    optionally uneven edges around it and infinite ends."""
    if integral:
        start, width = float(draw(_small)), float(draw(st.integers(1, 40)))
    else:
        start, width = draw(_start), draw(_width)
    run = [start + i * width for i in range(draw(st.integers(1, 12)) + 1)]
    before = sorted(draw(st.lists(st.integers(1, 10_000), max_size=3, unique=True)), reverse=True)
    after = sorted(draw(st.lists(st.integers(1, 10_000), max_size=3, unique=True)))
    edges = [run[0] - b * (width if integral else draw(st.sampled_from([1.0, 0.37]))) for b in before] + run
    edges += [run[-1] + a * (width if integral else 1.3) for a in after]
    if draw(st.booleans()):
        edges = [-INF] + edges
    if draw(st.booleans()):
        edges = edges + [INF]
    edges = sorted(set(edges))
    if len(edges) < 2:
        edges = edges + [INF] if edges[-1] != INF else [-INF] + edges
    return edges


@st.composite
def float_cases(draw):
    edges = draw(edge_lists())
    finite = [e for e in edges if math.isfinite(e)]
    near = [v for e in finite for v in (e, math.nextafter(e, -INF), math.nextafter(e, INF))]
    picks = st.one_of(st.sampled_from(near or [0.0]), st.floats(allow_nan=True, allow_infinity=True),
                      st.sampled_from([INF, -INF, float("nan"), None, -0.0, 0.0, -1e-20, 1e-20, -5e-324]))
    return edges, draw(st.lists(picks, min_size=1, max_size=40))


@st.composite
def int_cases(draw):
    edges = draw(st.one_of(edge_lists(integral=True), edge_lists()))
    finite = [int(e) for e in edges if math.isfinite(e)]
    near = [v for e in finite for v in (e - 1, e, e + 1)]
    picks = st.one_of(st.sampled_from(near or [0]), st.integers(-(2**62), 2**62), st.integers(-3000, 3000),
                      st.sampled_from([None, 2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63)]))
    return edges, draw(st.lists(picks, min_size=1, max_size=40))


ENGINES = ["pandas", "polars", "pyarrow", "duckdb"]


# x − e_a rounds up to a whole number of widths: floor((x − e_a)/w) is one too high without the correction
NEEDS_CORRECTION = [
    ([float(e) for e in range(-5, 6)], [-1e-20, -5e-324, 0.0, -0.0, 1e-20]),
    ([-1.0 + i * 0.25 for i in range(12)], [1.7499999999999998, -0.25000000000000006, -1e-20]),
    ([-0.3 + i * 0.1 for i in range(11)], [0.10000000000000002, 0.1, 0.09999999999999999]),
    ([-1.0, -1.002954175052977e-28, 1.0, 2.0], [-1.002954175052977e-28]),  # e0 + (e1 − e0) is not e1
]


@settings(max_examples=300, deadline=None)
@given(edges=st.one_of(edge_lists(), edge_lists(integral=True)))
def test_every_run_found_reproduces_its_edges(edges):
    run = _equal_width_run(edges)
    if run is not None:
        a, b, width = run
        assert all(edges[a] + i * width == edges[a + i] for i in range(b - a + 1))


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=float_cases())
@example(case=NEEDS_CORRECTION[0])
@example(case=NEEDS_CORRECTION[1])
@example(case=NEEDS_CORRECTION[2])
@example(case=NEEDS_CORRECTION[3])
def test_engine_expression_equals_the_definition_on_floats(engine, duck, case):
    edges, values = case
    assert engine_codes(engine, values, False, edges, duck) == [oracle(v, edges) for v in values]


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=int_cases())
@example(case=([-5.0, 44.0, 93.0, 142.0, 191.0], [-6, 142, 190, 191]))  # polars: 147/49 = 2.9999999999999996
def test_engine_expression_equals_the_definition_on_integers(engine, duck, case):
    edges, values = case
    if engine == "pyarrow":  # Arrow refuses to compare integers beyond 2^53 with doubles (it would round
        # them); dpaudit bins pyarrow tables in numpy (test below), which takes them
        values = [v for v in values if v is None or abs(v) <= 2**53] or [None]
    assert engine_codes(engine, values, True, edges, duck) == [oracle(v, edges) for v in values]


@settings(max_examples=300, deadline=None)
@given(case=st.one_of(float_cases(), int_cases()))
@example(case=NEEDS_CORRECTION[0])
@example(case=NEEDS_CORRECTION[1])
def test_numpy_path_equals_the_definition(case):
    edges, values = case
    integer = all(v is None or isinstance(v, int) for v in values)
    column = pa.array(values, type=pa.int64() if integer else pa.float64(), from_pandas=True)
    assert _bin_codes(edges, column).tolist() == [oracle(v, edges) for v in values]
    assert _bin_codes(edges, pa.chunked_array([column[:1], column[1:]])).tolist() == [oracle(v, edges) for v in values]


# -- the compiled forms -----------------------------------------------------------------------------
def test_equal_width_runs_are_found_where_engines_reproduce_the_edges():
    assert _equal_width_run(list(map(float, range(0, 200_001, 10_000)))) == (0, 20, 10_000.0)
    assert _equal_width_run([-INF, 0.0, 10.0, 20.0, 30.0, INF]) == (1, 4, 10.0)
    assert _equal_width_run([17.0, 20, 30, 40, 50, 60, 70, INF]) == (1, 6, 10.0)  # Adult's age
    assert _equal_width_run([0.0, 1.0, 5_000.0, 10_000.0, INF]) is None  # too short
    # -1 + (-1e-28 - -1) is 0.0, not -1e-28: the run starts at -1e-28, whose + i·1.0 are the next edges
    assert _equal_width_run([-1.0, -1e-28, 1.0, 2.0, 3.0]) == (1, 4, 1.0)
    tenths = [0.1 * i for i in range(6)]
    run = _equal_width_run(tenths)
    assert run is not None and all(tenths[run[0]] + i * run[2] == tenths[run[0] + i] for i in range(run[1] - run[0] + 1))


def test_sql_uses_one_division_for_equal_width_edges(duck):
    rel = duck.sql("SELECT 5::INTEGER AS x")
    frame = nw.from_native(rel)
    sql = nw.to_native(frame.select(_bin_expression("x", Binned(range(0, 200_001, 10_000)), frame.collect_schema()["x"]))).sql_query()
    assert sql.count("floor(") == 1 and sql.count(" < ") == 1  # the division and the below-range test


def test_many_uneven_edges_are_a_binary_search(duck):
    edges = sorted({round(1.37**i, 6) for i in range(60)})
    values = [e for e in edges] + [math.nextafter(e, -INF) for e in edges] + [1e30, -5.0, float("nan")]
    assert engine_codes("duckdb", values, False, edges, duck) == [oracle(v, edges) for v in values]


# -- through count_tables, on every route ----------------------------------------------------------
@pytest.mark.parametrize("kind", ["pandas", "polars", "pyarrow", "duckdb", "parquet"])
def test_binned_counts_on_every_route(kind, duck, tmp_path):
    rng = np.random.default_rng(5)
    x = rng.normal(50, 40, 2_000).round(2)
    x[:8] = [0.0, math.nextafter(10.0, -INF), 10.0, 99.99, math.nextafter(100.0, -INF), -INF, np.nan, np.nan]
    frame = pd.DataFrame({"x": x, "y": rng.integers(0, 2, 2_000)})
    frame = frame[(frame.x < 100) | frame.x.isna()]
    edges = [-INF] + list(range(0, 101, 10))
    schema = Schema({"x": Binned(edges, missing="NA"), "y": Categorical([0, 1])})
    data = {"pandas": frame, "polars": pl.from_pandas(frame), "pyarrow": pa.Table.from_pandas(frame),
            "duckdb": duck.from_df(frame), "parquet": tmp_path / "x.parquet"}[kind]
    if kind == "parquet":
        frame.to_parquet(data, index=False)
    (table,) = count_tables(data, [Criterion.parse("x ⊥ y")], schema)
    expected = np.zeros((len(edges), 2), dtype=np.int64)
    for value, y in zip(frame.x, frame.y):
        code = oracle(None if np.isnan(value) else float(value), edges)
        expected[len(edges) - 1 if code == _MISSING_CODE else code, y] += 1
    np.testing.assert_array_equal(table.counts[0], expected)
