"""Hostile data files and frames: refused with one clear error (CLI: one line, exit 2, nothing written),
and awkward-but-valid files (BOM, CRLF, gzip, TSV, semicolons, quoted commas, numeric-looking
categories) counted exactly as their clean twins.
"""

from __future__ import annotations

import gzip
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpaudit import Binned, Categorical, DataError, DPAuditError, Schema, audit
from tests.hostile.conftest import assert_one_line_error, files_in

SCHEMA = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1])})


def _write(folder, name: str, content: bytes) -> str:
    path = folder / name
    path.write_bytes(content)
    return str(path)


def _gz(text: bytes) -> bytes:
    return gzip.compress(text)


def _parquet(folder, name: str, table: pa.Table) -> str:
    path = folder / name
    pq.write_table(table, path)
    return str(path)


# (file name, bytes or a builder, fragment of the one-line error)
BAD_FILES = [
    ("empty.csv", b"", "is empty (0 bytes)"),
    ("garbage.csv", bytes(range(256)) * 3, "cannot read"),
    ("ragged.csv", b"sex,y\nF,1\nM,0\nF\n", "line 4 has 1 field(s) but the header has 2"),
    ("ragged_long.csv", b"sex,y\nF,1\nM,0,7,8\nF,1\n", "field"),
    ("bad_quote.csv", b'"sex","y"\n"F","1"\n"M,"0"\n', "line 3 is not valid CSV"),
    ("dup_header.csv", b"sex,y,sex\nF,1,M\nM,0,F\n", "names column(s) 'sex' more than once"),
    ("latin1.csv", b"sex,y\n\xe9,1\nM,0\n", "not UTF-8"),
    ("truncated.csv.gz", _gz(b"sex,y\n" + b"F,1\n" * 1000)[:40], "cannot read"),
    ("not_gzip.csv.gz", b"sex,y\nF,1\n", "cannot read"),
    ("bad.parquet", b"PAR1 this is not parquet", "cannot read"),
    ("text.parquet", b"sex,y\nF,1\n", "cannot read"),
    ("data.txt", b"sex,y\nF,1\n", "neither a registered dataset nor"),
    ("data.json", b'{"sex": "F"}', "neither a registered dataset nor"),
    ("header_only.csv", b"sex,y\n", "no rows"),
    ("outside.csv", b"sex,y\nF,1\nX,0\n", "outside the declared domain"),
    ("missing.csv", b"sex,y\nF,1\n,0\n", "missing value"),
    ("wrong_cols.csv", b"gender,label\nF,1\n", "unknown column(s)"),
    ("header_only_gz.csv.gz", _gz(b"sex,y\n"), "no rows"),
    ("outcome_text.csv", b"sex,y\nF,yes\nM,no\n", "outside the declared domain"),
]


@pytest.mark.parametrize("name,content,fragment", BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_file_is_one_line_on_the_cli(cli, workdir, tmp_path_factory, name, content, fragment):
    folder = tmp_path_factory.mktemp("bad")
    path = _write(folder, name, content)
    schema = folder / "schema.json"
    SCHEMA.to_json(schema)
    before = files_in(workdir)
    result = cli("fairness", path, "-c", "sex ⊥ y", "--schema", schema, "--epsilon", "1", "--json")
    assert_one_line_error(result, fragment=fragment)
    assert files_in(workdir) == before


@pytest.mark.parametrize("name,content,fragment", BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_file_is_a_dpaudit_error_in_python(tmp_path, name, content, fragment):
    path = _write(tmp_path, name, content)
    with pytest.raises(DPAuditError) as info:
        audit(path, "sex ⊥ y", schema=SCHEMA, epsilon=1.0, measures=("tvd",))
    assert fragment in str(info.value) and "\n" not in str(info.value)


#: The malformed CSV files that ``mia train --data`` (pandas) refuses in the words of fairness DATA (DuckDB):
#: both readers go through the checks of dpaudit.counting.files.
SHARED_WITH_MIA = ("empty.csv", "ragged.csv", "ragged_long.csv", "bad_quote.csv", "dup_header.csv", "latin1.csv",
                   "header_only.csv", "header_only_gz.csv.gz")


@pytest.mark.parametrize("name,content,fragment", [c for c in BAD_FILES if c[0] in SHARED_WITH_MIA],
                         ids=list(SHARED_WITH_MIA))
def test_mia_training_data_refuses_the_same_malformed_csv(tmp_path, name, content, fragment):
    pytest.importorskip("pandas")
    from dpaudit.mia.train.data import from_file

    path = _write(tmp_path, name, content)
    with pytest.raises(DataError) as info:
        from_file(path, label="y")
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_paths_that_are_not_files(cli, workdir, tmp_path):
    folder = tmp_path / "data.csv"
    folder.mkdir()
    assert_one_line_error(cli("fairness", folder, "-c", "sex ⊥ y", "--exact", "--infer-schema"),
                          fragment="is a directory")
    assert_one_line_error(cli("fairness", tmp_path / "nope.csv", "-c", "sex ⊥ y", "--exact", "--infer-schema"),
                          fragment="does not exist")
    assert_one_line_error(cli("fairness", "/dev/null", "-c", "sex ⊥ y", "--exact", "--infer-schema"),
                          fragment="neither a registered dataset")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_a_named_pipe_is_refused_without_blocking(cli, workdir, tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    assert_one_line_error(cli("fairness", fifo, "-c", "sex ⊥ y", "--exact", "--infer-schema"),
                          fragment="not a regular file")


# -- frames and Parquet columns the counting step cannot take ---------------------------------------

def test_nested_parquet_column_is_refused(tmp_path):
    path = _parquet(tmp_path, "nested.parquet", pa.table({"sex": [{"x": 1}, {"x": 2}], "y": [0, 1]}))
    with pytest.raises(DataError, match="holds nested values"):
        audit(path, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",))
    path = _parquet(tmp_path, "lists.parquet", pa.table({"sex": [[1], [2, 3]], "y": [0, 1]}))
    with pytest.raises(DataError, match="holds nested values"):
        audit(path, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",))


@pytest.mark.parametrize("value", [[1], {"a": 1}, {1, 2}], ids=["list", "dict", "set"])
def test_unhashable_values_in_a_pandas_column_are_refused(value):
    frame = pd.DataFrame({"sex": [value, value], "y": [0, 1]})
    with pytest.raises(DataError, match="every value must be a string, a number or a boolean"):
        audit(frame, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",))


def test_binned_column_holding_text_is_refused():
    frame = pd.DataFrame({"age": ["young", "old"], "y": [0, 1]})
    schema = Schema({"age": Binned([0, 50, 120]), "y": Categorical([0, 1])})
    with pytest.raises(DataError, match="declared binned"):
        audit(frame, "age ⊥ y", schema=schema, exact=True, measures=("tvd",))


def test_a_table_too_large_for_memory_is_refused_before_counting(monkeypatch):
    big = Schema({"a": Categorical(list(range(20_000))), "b": Categorical(list(range(20_000)))})
    reads = []
    monkeypatch.setattr("dpaudit.counting.count._tally", lambda *a, **k: reads.append(a))
    with pytest.raises(DataError, match=r"spans 400,000,000 cells \(a 20,000 × b 20,000\), more than the limit"):
        audit(pd.DataFrame({"a": [0], "b": [0]}), "a ⊥ b", schema=big, exact=True, measures=("tvd",))
    assert reads == []


def test_the_cell_limit_is_configurable(monkeypatch):
    frame = pd.DataFrame({"a": [0, 1, 2], "b": [0, 1, 0]})
    schema = Schema({"a": Categorical([0, 1, 2]), "b": Categorical([0, 1])})
    monkeypatch.setenv("DPAUDIT_MAX_CELLS", "5")
    with pytest.raises(DataError, match="6 cells"):
        audit(frame, "a ⊥ b", schema=schema, exact=True, measures=("tvd",))
    monkeypatch.setenv("DPAUDIT_MAX_CELLS", "6")
    assert audit(frame, "a ⊥ b", schema=schema, exact=True, measures=("tvd",))["tvd"].value >= 0
    monkeypatch.setenv("DPAUDIT_MAX_CELLS", "lots")
    with pytest.raises(DataError, match="DPAUDIT_MAX_CELLS must be a positive integer"):
        audit(frame, "a ⊥ b", schema=schema, exact=True, measures=("tvd",))


def test_unreadable_python_objects_are_refused():
    for data in (None, 5, {"sex": ["F"], "y": [0]}, [("F", 0)]):
        with pytest.raises(DataError, match="cannot read data of type"):
            audit(data, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",))


# -- awkward files that must work, and give the numbers of their clean twin -------------------------

def _clean_frame():
    rng = np.random.default_rng(3)
    sex = rng.choice(["F", "M"], 300)
    y = (rng.random(300) < np.where(sex == "F", 0.3, 0.6)).astype(int)
    return pd.DataFrame({"sex": sex, "y": y})


def _variants(frame):
    plain = frame.to_csv(index=False).encode()
    yield "plain.csv", plain
    yield "bom.csv", b"\xef\xbb\xbf" + plain
    yield "crlf.csv", plain.replace(b"\n", b"\r\n")
    yield "bom_crlf.csv", b"\xef\xbb\xbf" + plain.replace(b"\n", b"\r\n")
    yield "gzipped.csv.gz", _gz(plain)
    yield "tabs.tsv", frame.to_csv(index=False, sep="\t").encode()
    yield "semicolons.csv", frame.to_csv(index=False, sep=";").encode()
    yield "quoted.csv", frame.to_csv(index=False, quoting=1).encode()
    yield "no_final_newline.csv", plain.rstrip(b"\n")
    yield "blank_lines_at_end.csv", plain + b"\n\n"


@pytest.mark.parametrize("name,content", list(_variants(_clean_frame())), ids=[v[0] for v in _variants(_clean_frame())])
def test_awkward_but_valid_files_count_like_the_frame(tmp_path, name, content):
    frame = _clean_frame()
    path = _write(tmp_path, name, content)
    expected = audit(frame, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",))["tvd"].value
    assert audit(path, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",))["tvd"].value == pytest.approx(expected, abs=1e-12)


def test_numeric_looking_categories_declared_as_text_are_read_as_text(tmp_path):
    """'01', '02' and '1', '2' declared as strings must not be sniffed into integers."""
    path = _write(tmp_path, "codes.csv", b"region,y\n01,1\n02,0\n01,0\n02,1\n01,1\n")
    schema = Schema({"region": Categorical(["01", "02"]), "y": Categorical([0, 1])})
    result = audit(path, "region ⊥ y", schema=schema, exact=True, measures=("tvd",))
    assert result.n == 5
    path = _write(tmp_path, "digits.csv", b"region,y\n1,1\n2,0\n1,0\n")
    schema = Schema({"region": Categorical(["1", "2"]), "y": Categorical([0, 1])})
    assert audit(path, "region ⊥ y", schema=schema, exact=True, measures=("tvd",)).n == 3


def test_a_quoted_field_with_the_delimiter_inside_is_one_value(tmp_path):
    path = _write(tmp_path, "commas.csv", b'sex,y\n"F, self-described",1\nM,0\n')
    schema = Schema({"sex": Categorical(["F, self-described", "M"]), "y": Categorical([0, 1])})
    assert audit(path, "sex ⊥ y", schema=schema, exact=True, measures=("tvd",)).n == 2


def test_legitimate_columns_named_like_renamed_duplicates_are_fine(tmp_path):
    path = _write(tmp_path, "suffix.csv", b"sex,sex_1,y\nF,a,1\nM,b,0\n")
    assert audit(path, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",)).n == 2


def test_a_schema_decides_how_csv_columns_are_read(tmp_path):
    """DuckDB alone reads a lone 'F' as boolean false and yes/no as booleans; the declared schema wins."""
    one_row = _write(tmp_path, "one.csv", b"sex,y\nF,1\n")
    assert audit(one_row, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",)).n == 1
    yes_no = _write(tmp_path, "yesno.csv", b"sex,y\nF,yes\nM,no\nF,no\n")
    words = Schema({"sex": Categorical(["F", "M"]), "y": Categorical(["no", "yes"])})
    assert audit(yes_no, "sex ⊥ y", schema=words, exact=True, measures=("tvd",)).n == 3
    with pytest.raises(DataError, match="outside the declared domain: 'no'"):
        audit(yes_no, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",))  # declared 0/1: yes/no are not silently 1/0
    flags = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([False, True])})
    assert audit(_write(tmp_path, "tf.csv", b"sex,y\nF,true\nM,false\n"), "sex ⊥ y", schema=flags, exact=True, measures=("tvd",)).n == 2


# -- property: any frame of mixed values is counted or refused with a DPAuditError ----------------


_cell = st.one_of(st.sampled_from(["F", "M", "X", "", " F"]), st.integers(-2, 3), st.floats(allow_nan=True),
                  st.none(), st.booleans(), st.lists(st.integers(), max_size=2), st.just(float("inf")))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_cell, _cell, _cell), min_size=0, max_size=12))
def test_any_frame_is_counted_or_refused_cleanly(rows):
    frame = pd.DataFrame(rows, columns=["sex", "y", "age"]) if rows else pd.DataFrame({"sex": [], "y": [], "age": []})
    schema = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1]), "age": Binned([-10, 0, 10])})
    try:
        result = audit(frame, "sex ⊥ y | age", schema=schema, measures=("tvd", "tc", "repair"), exact=True)
    except DPAuditError as exc:
        assert "\n" not in str(exc)
        return
    assert result.n == len(rows)
    for name in ("tvd", "tc", "repair"):
        assert np.isfinite(result[name].value) and result[name].value >= 0
