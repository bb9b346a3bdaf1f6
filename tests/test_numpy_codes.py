"""A pandas frame of numpy integer columns is coded straight off its arrays
(:func:`dpaudit.counting.lookup.frame_codes`, no Arrow); every other frame through Arrow. Both must
give the same tables and the same refusals: each frame here is counted as a pandas frame (the fast
path when it applies) and as the same data in a pyarrow table (always the Arrow path), and the counts
are checked against a plain-Python oracle."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpaudit
from dpaudit import Binned, Categorical, Criterion, DataError, Schema
from dpaudit.counting.frames import open_data
from dpaudit.counting.lookup import frame_codes

CRITERIA = [Criterion.parse("g ⊥ y"), Criterion.parse("g ⊥ y | a")]


def oracle(frame: pd.DataFrame, criterion: Criterion, schema: Schema) -> np.ndarray:
    """Counts cell by cell in plain Python: each row's code is the index of its value (or bin)."""
    columns = criterion.columns
    shape = [schema[c].size for c in columns]
    out = np.zeros(shape, dtype=np.int64)
    for row in zip(*(frame[c].tolist() for c in columns)):
        index = []
        for c, v in zip(columns, row):
            dom = schema[c]
            if isinstance(dom, Binned):
                index.append(sum(e <= v for e in dom.edges) - 1)
            else:
                index.append(dom.values.index(v))
        out[tuple(index)] += 1
    sizes = [np.prod([schema[c].size for c in side], dtype=int) for side in
             (criterion.admissible, criterion.protected, criterion.outcome)]
    return out.reshape(sizes)


def both_ways(frame: pd.DataFrame, schema: Schema) -> list[np.ndarray]:
    fast = dpaudit.count_tables(frame, CRITERIA, schema)
    arrow = dpaudit.count_tables(pa.Table.from_pandas(frame, preserve_index=False), CRITERIA, schema)
    for f, a in zip(fast, arrow):
        np.testing.assert_array_equal(f.counts, a.counts)
    return [t.counts for t in fast]


DOMAINS = {
    "label-encoded": [0, 1, 2, 3],
    "shifted run": [5, 6, 7, 8],
    "reversed": [3, 2, 1, 0],
    "gaps": [0, 2, 4, 6],
    "negative run": [-3, -2, -1, 0],
    "one value": [7],
}


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint16", "uint64"])
@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_integer_frames_count_like_arrow_and_the_oracle(name, dtype):
    declared = DOMAINS[name]
    if dtype.startswith("uint") and min(declared) < 0:
        pytest.skip("negative values in an unsigned column")
    rng = np.random.default_rng(zlib.crc32(f"{name}/{dtype}".encode()))
    frame = pd.DataFrame({"g": rng.choice(declared, 300).astype(dtype), "y": rng.integers(0, 2, 300).astype(dtype),
                          "a": rng.integers(10, 40, 300).astype(dtype)})
    schema = Schema({"g": Categorical(declared), "y": Categorical([0, 1]), "a": Binned([10, 20, 30, 40])})
    original = frame.copy()
    tables = both_ways(frame, schema)
    for criterion, table in zip(CRITERIA, tables):
        np.testing.assert_array_equal(table, oracle(frame, criterion, schema))
    pd.testing.assert_frame_equal(frame, original)


def test_the_fast_path_is_taken_only_where_every_value_is_declared():
    schema = Schema({"g": Categorical([0, 1, 2]), "y": Categorical([0, 1]), "a": Binned([0, 5, 10])})
    good = pd.DataFrame({"g": [0, 2, 1], "y": [1, 0, 1], "a": [0, 9, 5]})
    columns = ("a", "g", "y")
    assert frame_codes(open_data(good).frame, columns, schema) is not None
    for change in ({"g": [0, 3, 1]}, {"a": [0, 10, 5]}, {"a": [-1, 0, 5]}, {"g": [0.0, 2.0, 1.0]},
                   {"y": [True, False, True]}, {"g": pd.array([0, None, 1], dtype="Int64")}):
        assert frame_codes(open_data(good.assign(**change)).frame, columns, schema) is None, change
    sparse = Schema({"g": Categorical([0, 10**12]), "y": Categorical([0, 1]), "a": Binned([0, 5, 10])})
    assert frame_codes(open_data(good.assign(g=[0, 10**12, 0])).frame, columns, sparse) is None


@pytest.mark.parametrize("values, message", [
    ([0, 1, 9, 9], r"'g'.*9 \(2 rows\)"),      # outside a contiguous domain
    ([0, 1, -1, 1], r"'g'.*-1 \(1 row\)"),     # below it
])
def test_refusals_are_those_of_the_arrow_path(values, message):
    schema = Schema({"g": Categorical([0, 1, 2]), "y": Categorical([0, 1]), "a": Binned([0, 5, 10])})
    frame = pd.DataFrame({"g": values, "y": [0, 1, 0, 1], "a": [1, 2, 3, 4]})
    for data in (frame, pa.Table.from_pandas(frame, preserve_index=False)):
        with pytest.raises(DataError, match=message):
            dpaudit.count_tables(data, CRITERIA, schema)


def test_binned_integer_column_above_the_last_edge_is_refused_as_before():
    schema = Schema({"g": Categorical([0, 1]), "y": Categorical([0, 1]), "a": Binned([0, 5, 10])})
    frame = pd.DataFrame({"g": [0, 1], "y": [0, 1], "a": [3, 10]})
    with pytest.raises(DataError, match="at or above the last bin edge"):
        dpaudit.count_tables(frame, CRITERIA, schema)


def test_the_codes_never_write_through_to_the_frame():
    """Label-encoded int64 columns are counted from read-only views of the frame's own arrays."""
    schema = Schema({"g": Categorical([0, 1, 2]), "y": Categorical([0, 1]), "a": Categorical([0, 1])})
    frame = pd.DataFrame({"g": np.array([0, 2, 1, 2]), "y": np.array([1, 0, 1, 1]), "a": np.array([0, 1, 1, 0])})
    codes = frame_codes(open_data(frame).frame, ("a", "g", "y"), schema)
    assert codes is not None and all(not c.flags.writeable for c in codes.values())
    with pytest.raises(ValueError):
        codes["g"][0] = 5
    assert frame["g"].tolist() == [0, 2, 1, 2]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(declared=st.lists(st.integers(-50, 50), min_size=1, max_size=8, unique=True),
       picks=st.lists(st.integers(0, 7), min_size=0, max_size=40), shift=st.integers(-3, 3),
       dtype=st.sampled_from(["int64", "int16"]))
def test_random_domains_and_values_agree_with_arrow(declared, picks, shift, dtype):
    """Values drawn mostly from the declared ones, some shifted off them: the fast path either codes
    them as Arrow does or steps aside, and a refusal is the same refusal."""
    values = [declared[p % len(declared)] + (shift if p == 7 else 0) for p in picks]
    frame = pd.DataFrame({"g": np.array(values, dtype=dtype), "y": np.zeros(len(values), dtype=dtype),
                          "a": np.ones(len(values), dtype=dtype)})
    schema = Schema({"g": Categorical(declared), "y": Categorical([0]), "a": Categorical([1])})
    outcomes = []
    for data in (frame, pa.Table.from_pandas(frame, preserve_index=False)):
        try:
            outcomes.append([t.counts.tolist() for t in dpaudit.count_tables(data, CRITERIA, schema)])
        except DataError as error:
            outcomes.append(str(error))
    assert outcomes[0] == outcomes[1]
    if all(v in declared for v in values):
        assert outcomes[0][0] == oracle(frame, CRITERIA[0], schema).tolist()


def test_many_columns_product_order():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({c: rng.integers(0, 3, 200) for c in "pqrs"})
    schema = Schema({c: Categorical([0, 1, 2]) for c in "pqrs"})
    for text in ("p, q ⊥ r | s", "s ⊥ q, p | r"):
        criterion = Criterion.parse(text)
        fast = dpaudit.count_tables(frame, [criterion], schema)[0].counts
        arrow = dpaudit.count_tables(pa.Table.from_pandas(frame), [criterion], schema)[0].counts
        np.testing.assert_array_equal(fast, arrow)
        manual = np.zeros((3,) * 4, dtype=np.int64)
        for row in frame[list(criterion.columns)].itertuples(index=False):
            manual[tuple(row)] += 1
        np.testing.assert_array_equal(fast.reshape(-1), manual.reshape(-1))
    assert list(itertools.islice(frame.columns, 4)) == list("pqrs")
