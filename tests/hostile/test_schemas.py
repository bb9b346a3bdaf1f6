"""Hostile schema files: every malformed schema is a SchemaError with one line (CLI: exit 2), never a
crash, an overflow, a recursion error or a silently different domain."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit import Binned, Categorical, Schema, SchemaError
from tests.hostile.conftest import assert_one_line_error

COL = '{{"columns": {{"sex": {}, "y": {{"type": "categorical", "values": [0, 1]}}}}}}'

BAD_SCHEMAS = [
    # (schema text, fragment)
    ("", "does not exist"),
    ("[]", "does not exist"),
    ("{", "not valid JSON"),
    ('{"columns": []}', 'must be an object with a "columns" object'),
    ('{"cols": {}}', 'must be an object with a "columns" object'),
    ("{" + '"a": ' * 1 + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    (COL.format('"FM"'), "expected an object with a 'type'"),
    (COL.format('{"type": "categorical", "values": "FM"}'), "categorical values must be a list of values, got 'FM'"),
    (COL.format('{"type": "categorical", "values": []}'), "needs at least one value"),
    (COL.format('{"type": "categorical", "values": ["F", "F"]}'), "lists 'F' twice"),
    (COL.format('{"type": "categorical", "values": [["F"], ["M"]]}'), "must be single values"),
    (COL.format('{"type": "categorical", "values": [{"F": 1}]}'), "must be single values"),
    (COL.format('{"type": "categorical", "values": ["F", null]}'), "cannot list a missing value"),
    (COL.format('{"type": "categorical", "values": 5}'), "categorical values must be a list"),
    (COL.format('{"type": "categorical"}'), "needs 'values'"),
    (COL.format('{"type": "categorical", "values": ["F"], "missing": "Missing"}'), "is not one of the declared values"),
    (COL.format('{"type": "binned", "edges": "0123"}'), "bin edges must be numbers in a list, got '0123'"),
    (COL.format('{"type": "binned", "edges": [0, 1e999]}'), None),  # 1e999 parses as inf: a valid open edge
    (COL.format('{"type": "binned", "edges": [0, ' + "9" * 400 + "]}"), "bin edges must be numbers"),
    (COL.format('{"type": "binned", "edges": [0, "ten"]}'), "bin edges must be numbers"),
    (COL.format('{"type": "binned", "edges": [0, true]}'), "bin edges must be numbers"),
    (COL.format('{"type": "binned", "edges": [0, null]}'), "bin edges must be numbers"),
    (COL.format('{"type": "binned", "edges": [0, [1]]}'), "bin edges must be numbers"),
    (COL.format('{"type": "binned", "edges": [5, 1]}'), "strictly increasing"),
    (COL.format('{"type": "binned", "edges": [0, "nan"]}'), "strictly increasing"),
    (COL.format('{"type": "binned", "edges": [0]}'), "at least two edges"),
    (COL.format('{"type": "binned", "edges": ' + json.dumps(list(range(20_000))) + "}"), "at most 10,001 edges"),
    (COL.format('{"type": "binned", "edges": [0, 1], "missing": 7}'), "missing bin's label must be a string"),
    (COL.format('{"type": "binned"}'), "needs 'edges'"),
    (COL.format('{"type": "histogram"}'), "unknown domain type 'histogram'"),
    ('{"columns": {}, "data_derived": "no"}', '"data_derived" must be true or false'),
]


@pytest.mark.parametrize("text,fragment", [c for c in BAD_SCHEMAS if c[1] is not None],
                         ids=[f"schema{i}" for i, c in enumerate(BAD_SCHEMAS) if c[1] is not None])
def test_bad_schema_file_is_one_line_on_the_cli(cli, workdir, small_csv, text, fragment):
    csv, _, _ = small_csv
    path = workdir / "schema.json"
    path.write_text(text, encoding="utf-8")
    result = cli("fairness", csv, "-c", "sex ⊥ y", "--schema", path, "--exact")
    assert_one_line_error(result, fragment=fragment if fragment != "does not exist" else None)


@pytest.mark.parametrize("text,fragment", [c for c in BAD_SCHEMAS if c[1] not in (None, "does not exist")],
                         ids=[f"schema{i}" for i, c in enumerate(BAD_SCHEMAS) if c[1] not in (None, "does not exist")])
def test_bad_schema_text_is_a_schema_error(text, fragment):
    with pytest.raises(SchemaError) as info:
        Schema.from_json(text)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_schema_files_that_are_not_utf8_json(tmp_path):
    latin = tmp_path / "latin1.json"
    latin.write_bytes('{"columns": {"s": {"type": "categorical", "values": ["é"]}}}'.encode("latin-1"))
    with pytest.raises(SchemaError, match="is not UTF-8 text"):
        Schema.from_json(latin)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + Schema({"s": Categorical(["\u00e9"])}).to_json().encode())
    assert Schema.from_json(bom)["s"].values == ("\u00e9",)
    with pytest.raises(SchemaError, match="is a directory"):
        Schema.from_json(tmp_path)
    with pytest.raises(SchemaError, match="must be a JSON text or the path"):
        Schema.from_json(None)  # type: ignore[arg-type]
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as handle:
        handle.truncate(65 * 2**20)
    with pytest.raises(SchemaError, match="larger than 64 MiB"):
        Schema.from_json(huge)


def test_infinite_edges_written_as_overflowing_numbers_are_open_bins():
    schema = Schema.from_json(COL.format('{"type": "binned", "edges": [0, 1e999]}'))
    assert schema["sex"].edges == (0.0, float("inf"))


# -- property: arbitrary JSON either builds a schema that round-trips, or is a SchemaError ----------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)
domain_specs = st.fixed_dictionaries(
    {"type": st.sampled_from(["categorical", "binned", "other"])},
    optional={"values": json_values, "edges": json_values, "missing": json_values},
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=4), domain_specs | json_values, max_size=3))
def test_any_json_is_a_schema_or_a_schema_error(columns):
    text = json.dumps({"columns": columns})
    try:
        schema = Schema.from_json(text)
    except SchemaError as exc:
        assert "\n" not in str(exc)
        return
    for dom in schema.columns.values():
        assert isinstance(dom, (Categorical, Binned)) and dom.size >= 1
    assert Schema.from_json(schema.to_json()) == schema
