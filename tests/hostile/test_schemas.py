"""Hostile schema files: every malformed schema is a SchemaError with one line (CLI: exit 2), never a
crash, an overflow, a recursion error or a silently different domain."""

from __future__ import annotations

import json
import re

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
    # a field of the wrong JSON type, each named with its column (a JSON object's keys were read as the list)
    (COL.format('{"type": "categorical", "values": {"F": 1, "M": 2}}'), "column 'sex': 'values' must be a JSON list"),
    (COL.format('{"type": "categorical", "values": {}}'), "column 'sex': 'values' must be a JSON list"),
    (COL.format('{"type": "categorical", "values": null}'), "column 'sex': categorical values must be a list"),
    (COL.format('{"type": "categorical", "values": true}'), "column 'sex': categorical values must be a list"),
    (COL.format('{"type": "categorical", "values": ["F", "M"], "missing": {"F": 1}}'),
     "column 'sex': missing={'F': 1} is not one of the declared values"),
    (COL.format('{"type": "categorical", "values": ["F", "M"], "missing": ["F"]}'),
     "column 'sex': missing=['F'] is not one of the declared values"),
    (COL.format('{"type": "binned", "edges": {"0": 1, "10": 2}}'), "column 'sex': 'edges' must be a JSON list"),
    (COL.format('{"type": "binned", "edges": null}'), "column 'sex': bin edges must be numbers in a list"),
    (COL.format('{"type": "binned", "edges": [0, {"a": 1}]}'), "column 'sex': bin edges must be numbers"),
    (COL.format('{"type": "binned", "edges": [0, 1], "missing": {"a": 1}}'), "missing bin's label must be a string"),
    (COL.format('{"type": ["categorical"], "values": ["F", "M"]}'), "'type' must be the string 'categorical' or"),
    (COL.format('{"type": null}'), "'type' must be the string 'categorical' or 'binned', got None"),
    (COL.format("[1, 2]"), "expected an object with a 'type'"),
    ('{"columns": null}', 'must be an object with a "columns" object'),
    ('{"columns": "sex"}', 'must be an object with a "columns" object'),
    ('{"columns": {}, "data_derived": null}', '"data_derived" must be true or false'),
    ('{"columns": {}, "data_derived": {}}', '"data_derived" must be true or false'),
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
    for name, dom in schema.columns.items():
        assert isinstance(dom, (Categorical, Binned)) and dom.size >= 1
        assert isinstance(columns[name]["values" if isinstance(dom, Categorical) else "edges"], list)  # not an object
    assert Schema.from_json(schema.to_json()) == schema


# -- a text that is neither a JSON object nor a readable path: one short line, whatever its length ---

NOT_JSON_NOR_PATH = {
    "long text": ("x" * 5000, "neither a JSON object nor the path of a readable file (File name too long"),
    "long path-like text": ("a/" * 1500, "does not exist"),
    "long component": ("y" * 300 + "/schema.json", "File name too long"),
    "multi-line text": ("sex: [F, M]\ny: [0, 1]\n", "neither a JSON object nor the path of an existing file"),
    "long multi-line text": ("sex: [F, M]\n" * 400, "File name too long"),
    "NUL byte": ("schema\x00.json", "it holds a NUL byte"),
    "empty text": ("", "is an empty text"),
    "blank text": ("  \n ", "is an empty text"),
    "JSON string": ('"columns"', "does not exist"),
}


@pytest.mark.parametrize("name", list(NOT_JSON_NOR_PATH))
def test_a_text_that_is_no_json_object_nor_a_path_is_one_short_line(name):
    text, fragment = NOT_JSON_NOR_PATH[name]
    with pytest.raises(SchemaError) as info:
        Schema.from_json(text)
    message = str(info.value)
    assert fragment in message and "\n" not in message and len(message) < 400, message
    assert message.endswith('pass a JSON object {"columns": {...}} or the path of a schema JSON file'), message


def test_a_long_schema_argument_is_one_line_on_the_cli(cli, workdir, small_csv):
    csv, _, _ = small_csv
    assert_one_line_error(cli("fairness", csv, "-c", "sex ⊥ y", "--schema", "x" * 5000, "--exact"),
                          fragment="File name too long")


@pytest.mark.parametrize("make,fragment", [
    (lambda: Categorical({"F": 1, "M": 2}), "categorical values must be a list, got a mapping"),
    (lambda: Categorical({"F", "M"}), "a set has no order"),
    (lambda: Categorical(frozenset({1, 2})), "a set has no order"),
    (lambda: Binned({0: 1, 10: 2}), "bin edges must be a list, got a mapping"),
    (lambda: Binned({0, 10}), "a set has no order"),
    (lambda: Schema({1: Categorical(["a"])}), "column names must be strings, got 1 (int)"),
], ids=["Categorical dict", "Categorical set", "Categorical frozenset", "Binned dict", "Binned set", "Schema int name"])
def test_unordered_or_mistyped_python_domains_are_a_schema_error(make, fragment):
    with pytest.raises(SchemaError, match=re.escape(fragment)):
        make()
