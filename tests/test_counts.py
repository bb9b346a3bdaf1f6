"""Tests of dense count tables (dpaudit.counting) on every supported backend.

Every counting test runs on the same pandas frame handed over as pandas, polars, pyarrow, a DuckDB
relation, and CSV / Parquet files (paths as str), and must give identical results.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpaudit import (
    Binned,
    Categorical,
    CountTable,
    Criterion,
    CriterionError,
    DataError,
    Schema,
    SchemaError,
    count_tables,
)

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

INF = float("inf")
BACKENDS = ["pandas", "polars", "pyarrow", "duckdb", "csv", "parquet"]


@pytest.fixture(scope="module")
def duck():
    """One DuckDB connection for the module's relations (connecting costs tens of ms)."""
    con = duckdb.connect()
    yield con
    con.close()


@pytest.fixture(params=BACKENDS)
def make(request, tmp_path, duck):
    """Factory turning a pandas frame into the parametrised backend's input."""
    kind = request.param
    counter = itertools.count()

    def convert(df: pd.DataFrame):
        if kind == "pandas":
            return df
        if kind == "polars":
            return pl.from_pandas(df)
        if kind == "pyarrow":
            return pa.Table.from_pandas(df, preserve_index=False)
        if kind == "duckdb":
            return duck.from_df(df)  # the relation needs its connection alive: module-scoped
        path = tmp_path / f"data{next(counter)}.{kind}"
        if kind == "csv":
            df.to_csv(path, index=False)
        else:
            df.to_parquet(path, index=False)
        return str(path)

    convert.kind = kind  # type: ignore[attr-defined]
    return convert


def crit(text: str) -> Criterion:
    return Criterion.parse(text)


def one(data, text: str, schema: Schema) -> CountTable:
    (table,) = count_tables(data, [crit(text)], schema)
    return table


# -- the oracle -------------------------------------------------------------------------------------
def oracle_counts(df: pd.DataFrame, criterion: Criterion, schema: Schema) -> np.ndarray:
    """Deliberately naive oracle: walk the rows one at a time in Python and tally each into the cell
    found by searching the label tuples of the declared domains. It shares no code with count_tables
    (no group-by, no ravel_multi_index, no engine)."""

    def label(col: str, value):
        dom = schema[col]
        is_missing = value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA
        if isinstance(dom, Categorical):
            assert is_missing or value in dom.values, (col, value)
            return dom.missing if is_missing else dom.values[list(dom.values).index(value)]
        if is_missing:
            assert dom.missing is not None
            return dom.missing
        matches = [i for i in range(dom.n_bins) if dom.edges[i] <= value < dom.edges[i + 1]]
        assert len(matches) == 1, (col, value)
        return dom.labels[matches[0]]

    def cells(cols):
        return list(itertools.product(*(schema[c].labels for c in cols)))

    a_cells, p_cells, o_cells = cells(criterion.admissible), cells(criterion.protected), cells(criterion.outcome)
    out = np.zeros((len(a_cells), len(p_cells), len(o_cells)), dtype=np.int64)
    for row in df.to_dict("records"):
        a = a_cells.index(tuple(label(c, row[c]) for c in criterion.admissible))
        p = p_cells.index(tuple(label(c, row[c]) for c in criterion.protected))
        o = o_cells.index(tuple(label(c, row[c]) for c in criterion.outcome))
        out[a, p, o] += 1
    return out


# -- shared data ------------------------------------------------------------------------------------
SCHEMA = Schema(
    {
        "sex": Categorical(["Male", "Female", "Missing"], missing="Missing"),
        "race": Categorical(["White", "Black", "Asian", "Other"]),  # 'Other' never occurs
        "edu": Categorical([9, 10, 13, 16]),  # 16 never occurs
        "hours": Binned([-INF, 20, 40, INF], missing="NA"),
        "age": Binned([0, 25, 45, 65, 120]),
        "income": Categorical([0, 1]),
    }
)

CRITERIA = [
    "sex ⊥ income",
    "sex, race ⊥ income | edu",
    "race ⊥ income, sex | hours, age",
    "hours ⊥ income | sex",
    "income ⊥ sex",  # same column set as the first: shares its group-by
    "age ⊥ edu",
]


def random_frame(n: int = 300, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(np.array(["Male", "Female", None], dtype=object), size=n, p=[0.5, 0.4, 0.1])
    race = rng.choice(np.array(["White", "Black", "Asian"], dtype=object), size=n, p=[0.7, 0.2, 0.1])
    hours = rng.uniform(-10, 90, size=n).round(1)
    hours[rng.random(n) < 0.1] = np.nan
    hours[:6] = [20.0, 40.0, 19.9, -5.0, 39.99, np.nan]  # edges and specials
    return pd.DataFrame(
        {
            "sex": pd.Series(sex, dtype=object),
            "race": pd.Series(race, dtype=object),
            "edu": rng.choice(np.array([9, 10, 13], dtype=np.int64), size=n),
            "hours": hours.astype(np.float64),
            "age": rng.integers(17, 91, size=n).astype(np.int64),
            "income": rng.integers(0, 2, size=n).astype(np.int64),
        }
    )


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return random_frame()


# -- dense tables against the oracle ----------------------------------------------------------------
def test_dense_tables_match_oracle(make, frame):
    criteria = [crit(t) for t in CRITERIA]
    tables = count_tables(make(frame), criteria, SCHEMA)
    assert len(tables) == len(criteria)
    for table, criterion in zip(tables, criteria):
        assert table.criterion == criterion
        expected = oracle_counts(frame, criterion, SCHEMA)
        assert table.counts.dtype == np.int64
        assert table.counts.shape == expected.shape
        np.testing.assert_array_equal(table.counts, expected, err_msg=str(criterion))
        assert table.n == len(frame)
        assert table.domains == tuple(SCHEMA[c] for c in criterion.columns)


def test_each_criterion_alone_equals_the_joint_call(make, frame):
    data = make(frame)
    joint = count_tables(data, [crit(t) for t in CRITERIA], SCHEMA)
    for text, table in zip(CRITERIA, joint):
        alone = one(data, text, SCHEMA)
        np.testing.assert_array_equal(alone.counts, table.counts, err_msg=text)


def test_swapped_roles_give_transposed_tables(make, frame):
    a, b = count_tables(make(frame), [crit("sex ⊥ income"), crit("income ⊥ sex")], SCHEMA)
    np.testing.assert_array_equal(a.counts, b.counts.transpose(0, 2, 1))


def test_n_equals_row_count(make, frame):
    tables = count_tables(make(frame), [crit(t) for t in CRITERIA], SCHEMA)
    assert [t.n for t in tables] == [len(frame)] * len(CRITERIA)
    small = frame.head(17)
    assert one(make(small), "race ⊥ income | hours", SCHEMA).n == 17


def test_empty_domain_cells_are_present_with_zero(make, frame):
    t = one(make(frame), "sex, race ⊥ income | edu", SCHEMA)
    assert t.counts.shape == (4, 3 * 4, 2)
    other = [i for i, lab in enumerate(t.protected_labels) if lab[1] == "Other"]
    assert len(other) == 3
    assert (t.counts[:, other, :] == 0).all()
    assert t.block_labels[3] == (16,)
    assert (t.counts[3] == 0).all()
    # and the cells that do occur are not all zero
    assert t.counts[:3].sum() == len(frame)


def test_input_frame_is_not_modified(frame):
    copy = frame.copy()
    count_tables(frame, [crit(t) for t in CRITERIA], SCHEMA)
    pd.testing.assert_frame_equal(frame, copy)


# -- multi-column P and A: order and labels ---------------------------------------------------------
def test_multi_column_product_order_and_labels(make):
    df = pd.DataFrame(
        {
            "a1": pd.Series(["x", "x", "y", "y", "y", "x"], dtype=object),
            "a2": np.array([1, 2, 1, 1, 2, 2], dtype=np.int64),
            "p1": pd.Series(["m", "f", "f", "m", "f", "f"], dtype=object),
            "p2": pd.Series(["u", "v", "v", "u", "u", "v"], dtype=object),
            "o": np.array([0, 1, 1, 0, 0, 1], dtype=np.int64),
        }
    )
    schema = Schema(
        {
            "a1": Categorical(["x", "y"]),
            "a2": Categorical([1, 2]),
            "p1": Categorical(["f", "m"]),
            "p2": Categorical(["u", "v", "w"]),
            "o": Categorical([0, 1]),
        }
    )
    t = one(make(df), "p1, p2 ⊥ o | a1, a2", schema)
    assert t.block_labels == [("x", 1), ("x", 2), ("y", 1), ("y", 2)]
    assert t.protected_labels == [("f", "u"), ("f", "v"), ("f", "w"), ("m", "u"), ("m", "v"), ("m", "w")]
    assert t.outcome_labels == [(0,), (1,)]
    expected = np.zeros((4, 6, 2), dtype=np.int64)
    P = {lab: i for i, lab in enumerate(t.protected_labels)}
    A = {lab: i for i, lab in enumerate(t.block_labels)}
    for row in df.itertuples(index=False):
        expected[A[(row.a1, row.a2)], P[(row.p1, row.p2)], row.o] += 1
    np.testing.assert_array_equal(t.counts, expected)
    # spot-check the row-major layout by hand: block ('x', 2) holds rows 1 and 5 = (f, v, 1) twice
    assert t.counts[1, 1, 1] == 2
    assert t.counts[1].sum() == 2
    # block ('y', 1): rows 2 (f, v, 1) and 3 (m, u, 0)
    assert t.counts[2, 1, 1] == 1 and t.counts[2, 3, 0] == 1 and t.counts[2].sum() == 2


def test_column_order_inside_a_side_matters(make):
    df = pd.DataFrame({"p": pd.Series(["a", "b"], dtype=object), "q": pd.Series(["c", "c"], dtype=object), "o": [1, 1]})
    schema = Schema({"p": Categorical(["a", "b"]), "q": Categorical(["c", "d"]), "o": Categorical([1])})
    pq = one(make(df), "p, q ⊥ o", schema)
    qp = one(make(df), "q, p ⊥ o", schema)
    assert pq.protected_labels == [("a", "c"), ("a", "d"), ("b", "c"), ("b", "d")]
    assert qp.protected_labels == [("c", "a"), ("c", "b"), ("d", "a"), ("d", "b")]
    assert pq.counts[0, :, 0].tolist() == [1, 0, 1, 0]
    assert qp.counts[0, :, 0].tolist() == [1, 1, 0, 0]


def test_without_admissible_there_is_one_block(make, frame):
    t = one(make(frame), "sex ⊥ income", SCHEMA)
    assert t.block_labels == [()]
    assert t.counts.shape == (1, 3, 2)


# -- binned columns ---------------------------------------------------------------------------------
def _binned_frame(values) -> pd.DataFrame:
    return pd.DataFrame({"x": np.asarray(values, dtype=np.float64), "y": np.zeros(len(values), dtype=np.int64)})


def test_binned_bins_are_half_open(make):
    values = [0.0, 9.999, 10.0, 10.5, 19.999999, 20.0, 29.0, 29.999]
    schema = Schema({"x": Binned([0, 10, 20, 30]), "y": Categorical([0])})
    t = one(make(_binned_frame(values)), "x ⊥ y", schema)
    assert t.protected_labels == [("[0, 10)",), ("[10, 20)",), ("[20, 30)",)]
    assert t.counts[0, :, 0].tolist() == [2, 3, 3]


def test_binned_infinite_edges(make):
    values = [-1e300, -50.0, -0.001, 0.0, 99.0, 100.0, 1e300]
    schema = Schema({"x": Binned([-INF, 0, 100, INF]), "y": Categorical([0])})
    t = one(make(_binned_frame(values)), "x ⊥ y", schema)
    assert t.protected_labels == [("[-inf, 0)",), ("[0, 100)",), ("[100, inf)",)]
    assert t.counts[0, :, 0].tolist() == [3, 2, 2]


def test_binned_integer_column(make):
    df = pd.DataFrame({"age": np.array([0, 17, 18, 64, 65, 65, 99], dtype=np.int64), "y": np.ones(7, dtype=np.int64)})
    schema = Schema({"age": Binned([0, 18, 65, 100]), "y": Categorical([0, 1])})
    t = one(make(df), "y ⊥ age", schema)
    assert t.counts[0].tolist() == [[0, 0, 0], [2, 2, 3]]


def test_binned_missing_bin_receives_nan(make):
    values = [1.0, np.nan, 5.0, np.nan, np.nan, 15.0]
    schema = Schema({"x": Binned([0, 10, 20], missing="NA"), "y": Categorical([0])})
    t = one(make(_binned_frame(values)), "x ⊥ y", schema)
    assert t.protected_labels == [("[0, 10)",), ("[10, 20)",), ("NA",)]
    assert t.counts[0, :, 0].tolist() == [2, 1, 3]


def test_binned_missing_bin_declared_but_unused_is_zero(make):
    schema = Schema({"x": Binned([0, 10], missing="NA"), "y": Categorical([0])})
    t = one(make(_binned_frame([1.0, 2.0])), "x ⊥ y", schema)
    assert t.counts[0, :, 0].tolist() == [2, 0]


def test_binned_column_as_admissible_with_missing(make):
    df = pd.DataFrame(
        {
            "h": np.array([5.0, np.nan, 50.0, 5.0], dtype=np.float64),
            "s": pd.Series(["a", "b", "a", "b"], dtype=object),
            "y": np.array([1, 0, 0, 1], dtype=np.int64),
        }
    )
    schema = Schema({"h": Binned([0, 10, 100], missing="NA"), "s": Categorical(["a", "b"]), "y": Categorical([0, 1])})
    t = one(make(df), "s ⊥ y | h", schema)
    assert t.block_labels == [("[0, 10)",), ("[10, 100)",), ("NA",)]
    assert t.counts.tolist() == [[[0, 1], [0, 1]], [[1, 0], [0, 0]], [[0, 0], [1, 0]]]


def test_binned_below_first_edge(make):
    schema = Schema({"x": Binned([0, 10]), "y": Categorical([0])})
    with pytest.raises(DataError, match=r"column 'x': 2 row\(s\) below the first bin edge 0; widen the edges") as info:
        one(make(_binned_frame([-1.0, 5.0, -0.5])), "x ⊥ y", schema)
    assert "above" not in str(info.value)


def test_binned_at_or_above_last_edge(make):
    schema = Schema({"x": Binned([0, 10]), "y": Categorical([0])})
    with pytest.raises(DataError, match=r"column 'x': 3 row\(s\) at or above the last bin edge 10;"):
        one(make(_binned_frame([10.0, 5.0, 11.0, 1e9])), "x ⊥ y", schema)


def test_binned_below_above_and_missing_reported_together(make):
    schema = Schema({"x": Binned([0, 10]), "y": Categorical([0])})
    with pytest.raises(DataError) as info:
        one(make(_binned_frame([-1.0, 5.0, 12.0, 13.0, np.nan])), "x ⊥ y", schema)
    msg = str(info.value)
    assert msg.startswith("column 'x': ")
    assert "1 row(s) below the first bin edge 0" in msg
    assert "2 row(s) at or above the last bin edge 10" in msg
    assert "1 row(s) with a missing value and no declared missing bin (missing=...)" in msg


def test_binned_above_last_edge_is_an_error_even_with_a_missing_bin(make):
    # regression: values >= the last edge were silently counted in the declared missing bin
    schema = Schema({"x": Binned([0, 10], missing="NA"), "y": Categorical([0])})
    with pytest.raises(DataError) as info:
        one(make(_binned_frame([5.0, 10.0, 20.0, np.nan])), "x ⊥ y", schema)
    msg = str(info.value)
    assert "column 'x': 2 row(s) at or above the last bin edge 10" in msg
    assert "missing" not in msg.split(";")[0]
    assert "no declared missing bin" not in msg  # the NaN row is fine: the bin is declared


def test_binned_below_first_edge_with_a_missing_bin(make):
    schema = Schema({"x": Binned([0, 10], missing="NA"), "y": Categorical([0])})
    with pytest.raises(DataError, match=r"column 'x': 1 row\(s\) below the first bin edge 0; widen"):
        one(make(_binned_frame([-3.0, 5.0, np.nan])), "x ⊥ y", schema)


def test_binned_missing_without_missing_bin(make):
    schema = Schema({"x": Binned([0, 10]), "y": Categorical([0])})
    with pytest.raises(
        DataError, match=r"column 'x': 2 row\(s\) with a missing value and no declared missing bin \(missing=\.\.\.\)"
    ):
        one(make(_binned_frame([np.nan, 5.0, np.nan])), "x ⊥ y", schema)


def test_binned_on_string_column(make):
    df = pd.DataFrame({"s": pd.Series(["a", "b"], dtype=object), "y": [0, 1]})
    schema = Schema({"s": Binned([0, 10]), "y": Categorical([0, 1])})
    with pytest.raises(DataError, match=r"column 's' is declared binned \(numeric\) but holds .*; declare it Categorical"):
        one(make(df), "s ⊥ y", schema)


# -- categorical errors and missing values ----------------------------------------------------------
def test_out_of_domain_values_named_with_row_counts(make):
    df = pd.DataFrame(
        {
            "race": pd.Series(["White", "Martian", "Martian", "Venusian", "Black", "Martian"], dtype=object),
            "y": np.array([0, 0, 1, 1, 0, 1], dtype=np.int64),  # Martians spread over two groups
        }
    )
    schema = Schema({"race": Categorical(["White", "Black"]), "y": Categorical([0, 1])})
    with pytest.raises(DataError) as info:
        one(make(df), "race ⊥ y", schema)
    msg = str(info.value)
    assert msg.startswith("column 'race': 2 value(s) outside the declared domain: ")
    assert "'Martian' (3 rows), 'Venusian' (1 row);" in msg  # most frequent first
    assert "add them to the schema's values" in msg


def test_out_of_domain_integer_value(make, frame):
    df = frame.head(50).copy()
    df.loc[df.index[:4], "edu"] = 12
    with pytest.raises(DataError, match=r"column 'edu': 1 value\(s\) outside the declared domain: 12 \(4 rows\)"):
        one(make(df), "sex ⊥ income | edu", SCHEMA)


def test_out_of_domain_listing_is_capped_at_five(make):
    values = ["ok"] + [f"v{i}" for i in range(7) for _ in range(i + 1)]
    df = pd.DataFrame({"c": pd.Series(values, dtype=object), "y": np.zeros(len(values), dtype=np.int64)})
    schema = Schema({"c": Categorical(["ok"]), "y": Categorical([0])})
    with pytest.raises(DataError) as info:
        one(make(df), "c ⊥ y", schema)
    msg = str(info.value)
    assert "7 value(s) outside the declared domain: 'v6' (7 rows), 'v5' (6 rows), 'v4' (5 rows)" in msg
    assert "'v2' (3 rows) and 2 more;" in msg
    assert "'v1'" not in msg and "'v0'" not in msg


def test_out_of_domain_row_counts_use_thousands_separators(make):
    values = ["Martian"] * 1500 + ["Earthling"]
    df = pd.DataFrame({"c": pd.Series(values, dtype=object), "y": np.zeros(len(values), dtype=np.int64)})
    schema = Schema({"c": Categorical(["Earthling"]), "y": Categorical([0])})
    with pytest.raises(DataError, match=r"'Martian' \(1,500 rows\)"):
        one(make(df), "c ⊥ y", schema)


def test_missing_string_without_missing_category(make):
    df = pd.DataFrame(
        {
            "sex": pd.Series(["Male", None, "Female", None, None], dtype=object),
            "y": np.array([0, 0, 1, 1, 1], dtype=np.int64),  # the missing rows fall in two groups
        }
    )
    schema = Schema({"sex": Categorical(["Male", "Female"]), "y": Categorical([0, 1])})
    with pytest.raises(
        DataError,
        match=r"column 'sex': 3 row\(s\) have a missing value and the schema declares no missing category; declare one",
    ):
        one(make(df), "sex ⊥ y", schema)


def test_missing_float_without_missing_category(make):
    df = pd.DataFrame({"score": np.array([1.5, np.nan, 2.5, np.nan]), "y": np.array([0, 1, 0, 1], dtype=np.int64)})
    schema = Schema({"score": Categorical([1.5, 2.5]), "y": Categorical([0, 1])})
    with pytest.raises(DataError, match=r"column 'score': 2 row\(s\) have a missing value"):
        one(make(df), "y ⊥ score", schema)


def test_missing_values_mapped_to_declared_category(make):
    df = pd.DataFrame(
        {
            "sex": pd.Series(["Male", None, "Female", None, "Missing"], dtype=object),
            "score": np.array([1.5, np.nan, 2.5, 1.5, np.nan]),
            "y": np.array([0, 0, 1, 1, 1], dtype=np.int64),
        }
    )
    schema = Schema(
        {
            "sex": Categorical(["Male", "Female", "Missing"], missing="Missing"),
            "score": Categorical([1.5, 2.5, "n/a"], missing="n/a"),
            "y": Categorical([0, 1]),
        }
    )
    t = one(make(df), "sex ⊥ y", schema)
    assert t.counts[0].tolist() == [[1, 0], [0, 1], [1, 2]]  # None and the literal 'Missing' share a cell
    t = one(make(df), "score ⊥ y", schema)
    assert t.counts[0].tolist() == [[1, 1], [0, 1], [1, 1]]
    assert t.protected_labels == [(1.5,), (2.5,), ("n/a",)]


def test_missing_error_takes_precedence_over_out_of_domain(make):
    df = pd.DataFrame({"c": pd.Series(["a", None, "zzz"], dtype=object), "y": [0, 0, 0]})
    schema = Schema({"c": Categorical(["a"]), "y": Categorical([0])})
    with pytest.raises(DataError, match=r"column 'c': 1 row\(s\) have a missing value"):
        one(make(df), "c ⊥ y", schema)


def test_boolean_column(make):
    df = pd.DataFrame({"b": [True, False, True], "y": np.array([1, 1, 0], dtype=np.int64)})
    schema = Schema({"b": Categorical([False, True]), "y": Categorical([0, 1])})
    assert one(make(df), "b ⊥ y", schema).counts[0].tolist() == [[0, 1], [1, 1]]


def test_empty_frame_gives_zero_table(make):
    df = pd.DataFrame({"s": pd.Series([], dtype=object), "t": pd.Series([], dtype=object)})
    schema = Schema({"s": Categorical(["a", "b"]), "t": Categorical(["c", "d", "e"])})
    t = one(make(df), "s ⊥ t", schema)
    assert t.counts.shape == (1, 2, 3)
    assert t.counts.dtype == np.int64
    assert t.n == 0
    assert not t.counts.any()


# -- column and schema errors -----------------------------------------------------------------------
def test_unknown_column_is_a_criterion_error(make, frame):
    with pytest.raises(CriterionError, match=r"criterion 'gender ⊥ income' uses unknown column\(s\) 'gender'"):
        count_tables(make(frame), [crit("sex ⊥ income"), crit("gender ⊥ income")], SCHEMA)


def test_column_missing_from_schema_is_a_schema_error(make, frame):
    small = Schema({"sex": SCHEMA["sex"]})
    with pytest.raises(SchemaError, match=r"columns not declared in the schema: 'income'"):
        one(make(frame), "sex ⊥ income", small)


def test_no_criteria_gives_no_tables(make, frame):
    assert count_tables(make(frame), [], SCHEMA) == []


# -- engine-specific representations of missing values ----------------------------------------------
def test_polars_nan_and_null_both_count_as_missing():
    df = pl.DataFrame({"x": [1.0, float("nan"), None, 15.0], "y": [0, 0, 0, 0]})
    assert df["x"].is_nan().sum() == 1 and df["x"].null_count() == 1
    schema = Schema({"x": Binned([0, 10, 20], missing="NA"), "y": Categorical([0])})
    assert one(df, "x ⊥ y", schema).counts[0, :, 0].tolist() == [1, 1, 2]
    cat = Schema({"x": Categorical([1.0, 15.0, "NA"], missing="NA"), "y": Categorical([0])})
    assert one(df, "x ⊥ y", cat).counts[0, :, 0].tolist() == [1, 1, 2]
    with pytest.raises(DataError, match=r"column 'x': 2 row\(s\) with a missing value"):
        one(df, "x ⊥ y", Schema({"x": Binned([0, 20]), "y": Categorical([0])}))


def test_pandas_nullable_dtypes():
    df = pd.DataFrame(
        {
            "s": pd.Series(["a", pd.NA, "b"], dtype="string"),
            "i": pd.Series([1, pd.NA, 30], dtype="Int64"),
            "y": [0, 0, 0],
        }
    )
    schema = Schema(
        {
            "s": Categorical(["a", "b", "M"], missing="M"),
            "i": Binned([0, 10, 100], missing="M"),
            "y": Categorical([0]),
        }
    )
    assert one(df, "s ⊥ y | i", schema).counts[:, :, 0].tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_duckdb_nan_in_float_column():
    con = duckdb.connect()
    try:
        rel = con.sql("SELECT * FROM (VALUES (1.0::DOUBLE, 0), ('nan'::DOUBLE, 0), (NULL, 0)) t(x, y)")
        schema = Schema({"x": Binned([0, 10], missing="NA"), "y": Categorical([0])})
        assert one(rel, "x ⊥ y", schema).counts[0, :, 0].tolist() == [1, 2]
        with pytest.raises(DataError, match=r"column 'x': 2 row\(s\) with a missing value"):
            one(rel, "x ⊥ y", Schema({"x": Binned([0, 10]), "y": Categorical([0])}))
    finally:
        con.close()


# -- input types and files --------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [[{"sex": "Male"}], {"sex": ["Male"]}, 42, np.zeros((2, 2))], ids=["list", "dict", "int", "ndarray"])
def test_unsupported_input_type(bad):
    with pytest.raises(DataError, match=r"cannot read data of type .*; pass a pandas, polars or pyarrow table"):
        count_tables(bad, [crit("sex ⊥ income")], SCHEMA)


def test_unsupported_input_names_its_type():
    with pytest.raises(DataError, match=r"builtins\.list"):
        count_tables([1, 2], [crit("sex ⊥ income")], SCHEMA)


@pytest.mark.parametrize("name", ["nope.csv", "nope.parquet", "nope.csv.gz", "nope.tsv", "nope.pq"])
def test_nonexistent_file(tmp_path, name):
    path = str(tmp_path / name)
    with pytest.raises(DataError, match=r"data file '.*nope\..*' does not exist; check the path"):
        count_tables(path, [crit("sex ⊥ income")], SCHEMA)


@pytest.mark.parametrize("name", ["data.txt", "data.json", "data.xlsx", "adult"])
def test_unsupported_file_suffix(tmp_path, name):
    path = tmp_path / name
    path.write_text("sex,income\nMale,1\n")
    with pytest.raises(DataError, match=r"is neither a registered dataset nor a \.csv/\.csv\.gz/\.tsv/\.parquet file"):
        count_tables(str(path), [crit("sex ⊥ income")], SCHEMA)


def test_unreadable_parquet_file(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"this is not parquet")
    with pytest.raises(DataError, match=r"cannot read '.*broken\.parquet': "):
        count_tables(str(path), [crit("sex ⊥ income")], SCHEMA)


def test_path_object_tsv_and_gzip_and_uppercase_suffix(tmp_path, frame):
    expected = oracle_counts(frame, crit("sex ⊥ income | edu"), SCHEMA)
    tsv = tmp_path / "d.tsv"
    frame.to_csv(tsv, sep="\t", index=False)
    gz = tmp_path / "d.csv.gz"
    frame.to_csv(gz, index=False, compression="gzip")
    upper = tmp_path / "D.PARQUET"
    frame.to_parquet(upper, index=False)
    for source in [tsv, str(gz), Path(upper)]:
        t = one(source, "sex ⊥ income | edu", SCHEMA)
        np.testing.assert_array_equal(t.counts, expected, err_msg=str(source))


# -- integer columns: the lookup-free path (codes = values + shift) and the lookup path -------------
@pytest.mark.parametrize(
    "declared",
    [
        [0, 1, 2, 3],  # label-encoded: code = value
        [5, 6, 7, 8],  # contiguous, shifted: code = value - 5
        [3, 2, 1, 0],  # reversed: needs the lookup table
        [0, 2, 4, 6],  # gaps: needs the lookup table
        [-2, -1, 0, 1],  # negative values, contiguous
    ],
)
def test_integer_codes_equal_the_oracle(make, declared):
    rng = np.random.default_rng(len(declared) + declared[0])
    df = pd.DataFrame({"g": rng.choice(declared, 400), "y": rng.integers(0, 2, 400)})
    schema = Schema({"g": Categorical(declared), "y": Categorical([0, 1])})
    original = df.copy()
    table = one(make(df), "g ⊥ y", schema)
    np.testing.assert_array_equal(table.counts, oracle_counts(df, crit("g ⊥ y"), schema))
    pd.testing.assert_frame_equal(df, original)  # the user's column is never written through


def test_integer_value_outside_a_contiguous_domain_is_named(make):
    df = pd.DataFrame({"g": [0, 1, 2, 9, 9], "y": [0, 1, 0, 1, 1]})
    schema = Schema({"g": Categorical([0, 1, 2]), "y": Categorical([0, 1])})
    with pytest.raises(DataError, match=r"'g'.*9 \(2 rows\)"):
        one(make(df), "g ⊥ y", schema)


def test_names_an_engine_would_parse_are_counted_as_named(make):
    """A dot (field access in DuckDB and Spark), backticks and a double quote in column names: every
    column, binned ones included, is reached by position, never by parsing its name."""
    df = pd.DataFrame({"s.core": [1.0, 5.0, 7.0, 2.0, 8.5], "`q`": [0, 1, 0, 1, 1], 'we"ird': ["a", "b", "a", "b", "b"]})
    schema = Schema({"s.core": Binned([0, 3, 6, 9]), "`q`": Categorical([0, 1]), 'we"ird': Categorical(["a", "b"])})
    for text in ('we"ird ⊥ s.core', 'we"ird ⊥ `q` | s.core'):
        np.testing.assert_array_equal(one(make(df), text, schema).counts, oracle_counts(df, crit(text), schema))


def test_files_share_one_duckdb_database_per_process(tmp_path):
    """open_file reads through a cursor of one in-memory database kept for the process (a new database
    costs ~14 ms to open and close); a forked child gets its own, never its parent's."""
    import os

    from dpaudit.counting.files import connection

    frame = pd.DataFrame({"x": [1, 2, 2], "y": [0, 1, 1]})
    frame.to_parquet(tmp_path / "f.parquet", index=False)
    schema = Schema({"x": Categorical([1, 2]), "y": Categorical([0, 1])})
    first, second = connection(), connection()
    first.execute("CREATE TABLE shared_probe AS SELECT 7 AS v")
    try:
        assert first is not second
        assert second.execute("SELECT v FROM shared_probe").fetchall() == [(7,)]  # the same database
        child = os.fork() if hasattr(os, "fork") else None
        if child == 0:  # the child: its own database (no probe table), counting as the parent does
            try:
                seen = connection().execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'shared_probe'")
                counts = one(str(tmp_path / "f.parquet"), "x ⊥ y", schema).counts.tolist()
                os._exit(0 if seen.fetchall() == [(0,)] and counts == [[[1, 0], [0, 2]]] else 1)
            except BaseException:
                os._exit(2)
        if child is not None:  # a child that reused the parent's database would hang: not waited for forever
            import time

            for _ in range(3000):
                done, status = os.waitpid(child, os.WNOHANG)
                if done:
                    break
                time.sleep(0.1)
            else:
                os.kill(child, 9)
                os.waitpid(child, 0)
                pytest.fail("the forked child hung reading through its parent's DuckDB database")
            assert status == 0
    finally:
        first.execute("DROP TABLE shared_probe")
        first.close()
        second.close()
    assert one(str(tmp_path / "f.parquet"), "x ⊥ y", schema).counts.tolist() == [[[1, 0], [0, 2]]]
