"""Tests of declared domains (dpaudit.schema): validation, labels, JSON, inference, lookups."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpaudit import Binned, Categorical, Schema, SchemaError
from dpaudit._errors import DPAuditError
from dpaudit.counting import infer_schema

INF = float("inf")


# -- Categorical ------------------------------------------------------------------------------------
class TestCategorical:
    def test_values_sizes_labels_and_codes_follow_declared_order(self):
        dom = Categorical(["Male", "Female", "Other"])
        assert dom.values == ("Male", "Female", "Other")
        assert isinstance(dom.values, tuple)
        assert dom.size == 3
        assert dom.labels == ("Male", "Female", "Other")
        assert [dom.code_of(v) for v in ["Male", "Female", "Other"]] == [0, 1, 2]

    def test_unknown_value_has_no_code(self):
        dom = Categorical(["a", "b"])
        assert dom.code_of("c") is None
        assert dom.code_of(["unhashable"]) is None

    @pytest.mark.parametrize("missing_value", [None, float("nan"), np.nan, pd.NA, np.float64("nan")])
    def test_missing_entries_map_to_declared_missing_category(self, missing_value):
        dom = Categorical(["a", "Missing", "b"], missing="Missing")
        assert dom.code_of(missing_value) == 1
        assert dom.code_of("Missing") == 1

    @pytest.mark.parametrize("missing_value", [None, float("nan"), pd.NA])
    def test_missing_entries_have_no_code_without_missing_category(self, missing_value):
        assert Categorical(["a", "b"]).code_of(missing_value) is None

    def test_integer_and_boolean_values(self):
        dom = Categorical([0, 1])
        assert dom.code_of(1) == 1
        assert dom.code_of(np.int64(0)) == 0
        assert dom.code_of(1.0) == 1  # numeric equality, as in the engines' group-by output
        assert Categorical([False, True]).code_of(True) == 1

    def test_empty_values(self):
        with pytest.raises(SchemaError, match="at least one value"):
            Categorical([])

    def test_duplicate_value_is_named(self):
        with pytest.raises(SchemaError, match=r"lists 'b' twice"):
            Categorical(["a", "b", "c", "b"])

    def test_duplicate_integer_value_is_named(self):
        with pytest.raises(SchemaError, match=r"lists 3 twice"):
            Categorical([1, 3, 3])

    def test_missing_label_not_in_values(self):
        with pytest.raises(SchemaError, match=r"missing='Missing' is not one of the declared values"):
            Categorical(["a", "b"], missing="Missing")

    @pytest.mark.parametrize("bad", [None, float("nan"), np.nan, pd.NA])
    def test_missing_value_cannot_be_a_value(self, bad):
        with pytest.raises(SchemaError, match=r"cannot list a missing value \(None/NaN\)"):
            Categorical(["a", bad])

    def test_errors_are_dpaudit_errors_and_value_errors(self):
        with pytest.raises(DPAuditError):
            Categorical([])
        with pytest.raises(ValueError):
            Categorical([])

    def test_frozen(self):
        dom = Categorical(["a"])
        with pytest.raises(AttributeError):
            dom.values = ("b",)  # type: ignore[misc]

    def test_equality_ignores_code_cache(self):
        a, b = Categorical(["x", "y"]), Categorical(("x", "y"))
        a.code_of("x")  # fills the private cache on a only
        assert a == b
        assert Categorical(["x", "y"]) != Categorical(["y", "x"])
        assert Categorical(["x", "M"], missing="M") != Categorical(["x", "M"])

    def test_to_dict(self):
        assert Categorical(["a", "M"], missing="M").to_dict() == {
            "type": "categorical",
            "values": ["a", "M"],
            "missing": "M",
        }


# -- Binned -----------------------------------------------------------------------------------------
class TestBinned:
    def test_edges_become_floats_and_labels_are_half_open(self):
        dom = Binned([0, 10, 20])
        assert dom.edges == (0.0, 10.0, 20.0)
        assert all(isinstance(e, float) for e in dom.edges)
        assert dom.n_bins == 2
        assert dom.size == 2
        assert dom.labels == ("[0, 10)", "[10, 20)")

    def test_missing_bin_is_an_extra_last_cell(self):
        dom = Binned([0, 10, 20], missing="NA")
        assert dom.n_bins == 2
        assert dom.size == 3
        assert dom.labels == ("[0, 10)", "[10, 20)", "NA")

    def test_labels_with_infinite_and_fractional_edges(self):
        dom = Binned([-INF, -2.5, 0, 0.5, INF])
        assert dom.labels == ("[-inf, -2.5)", "[-2.5, 0)", "[0, 0.5)", "[0.5, inf)")

    def test_numeric_strings_and_numpy_edges_are_accepted(self):
        assert Binned(["-inf", "1", "2.5"]).edges == (-INF, 1.0, 2.5)
        assert Binned(np.array([1, 2, 3])).edges == (1.0, 2.0, 3.0)

    def test_single_bin(self):
        assert Binned([0, 1]).labels == ("[0, 1)",)

    @pytest.mark.parametrize("edges", [[], [5], [-INF]])
    def test_too_few_edges(self, edges):
        with pytest.raises(SchemaError, match="at least two edges"):
            Binned(edges)

    @pytest.mark.parametrize("edges", [[0, 10, 10], [0, 20, 10], [5, 1], [0, 0], [INF, -INF]])
    def test_non_increasing_edges(self, edges):
        with pytest.raises(SchemaError, match="strictly increasing"):
            Binned(edges)

    def test_nan_edge(self):
        with pytest.raises(SchemaError, match="strictly increasing"):
            Binned([0, float("nan"), 10])

    @pytest.mark.parametrize("edges", [["a", "b"], [0, "ten", 20], [0, None, 20], [0, [1], 2]])
    def test_non_numeric_edges(self, edges):
        with pytest.raises(SchemaError, match="bin edges must be numbers"):
            Binned(edges)

    @pytest.mark.parametrize("edges", [5, None])
    def test_non_sequence_edges_raise_schema_error(self, edges):
        # regression: the error path itself used to raise TypeError
        with pytest.raises(SchemaError, match="bin edges must be numbers"):
            Binned(edges)  # type: ignore[arg-type]

    def test_to_dict_writes_infinite_edges_as_strings(self):
        assert Binned([-INF, 0, INF], missing="M").to_dict() == {
            "type": "binned",
            "edges": ["-inf", 0.0, "inf"],
            "missing": "M",
        }

    def test_equality(self):
        assert Binned([0, 1, 2]) == Binned((0.0, 1.0, 2.0))
        assert Binned([0, 1, 2]) != Binned([0, 1, 3])
        assert Binned([0, 1], missing="M") != Binned([0, 1])


# -- Schema construction and lookup -----------------------------------------------------------------
@pytest.fixture
def schema() -> Schema:
    return Schema(
        {
            "sex": Categorical(["Male", "Female"]),
            "race": Categorical(["White", "Black", "Missing"], missing="Missing"),
            "hours": Binned([-INF, 0, 40, INF], missing="unknown"),
            "income": Categorical([0, 1]),
        }
    )


class TestSchemaLookup:
    def test_getitem_and_contains(self, schema):
        assert schema["sex"] == Categorical(["Male", "Female"])
        assert "hours" in schema
        assert "age" not in schema
        assert schema.data_derived is False
        assert schema.source == "declared"

    def test_getitem_unknown_column_names_it_and_the_declared_ones(self, schema):
        with pytest.raises(SchemaError, match=r"column 'age' is not declared in the schema") as info:
            schema["age"]
        assert "declared: hours, income, race, sex" in str(info.value)

    def test_getitem_on_empty_schema(self):
        with pytest.raises(SchemaError, match=r"'x' is not declared.*\(declared: \(none\)\)"):
            Schema({})["x"]

    def test_require_passes_for_declared_columns(self, schema):
        assert schema.require(["sex", "income"]) is None
        assert schema.require([]) is None

    def test_require_names_every_absent_column(self, schema):
        with pytest.raises(SchemaError, match=r"not declared in the schema: 'age', 'zip'") as info:
            schema.require(["sex", "age", "income", "zip"])
        assert "'sex'" not in str(info.value).split("(declared")[0]

    def test_columns_must_be_a_mapping(self):
        with pytest.raises(SchemaError, match="must be a mapping"):
            Schema([("sex", Categorical(["a"]))])  # type: ignore[arg-type]

    def test_domains_must_be_categorical_or_binned(self):
        with pytest.raises(SchemaError, match=r"column 'sex': domain must be Categorical or Binned, got list"):
            Schema({"sex": ["Male", "Female"]})  # type: ignore[dict-item]

    def test_columns_copied(self):
        cols = {"a": Categorical([1])}
        s = Schema(cols)
        cols["b"] = Categorical([2])
        assert "b" not in s

    def test_equality_compares_domains_and_data_derived(self, schema):
        same = Schema(dict(schema.columns))
        assert same == schema
        assert Schema(dict(schema.columns), data_derived=True) != schema
        assert Schema({"sex": Categorical(["Female", "Male"])}) != Schema({"sex": Categorical(["Male", "Female"])})
        assert schema != "not a schema"


# -- JSON -------------------------------------------------------------------------------------------
class TestJson:
    def test_round_trip_string(self, schema):
        text = schema.to_json()
        back = Schema.from_json(text)
        assert back == schema
        assert back["hours"].edges == (-INF, 0.0, 40.0, INF)
        assert back["hours"].missing == "unknown"
        assert back["race"].missing == "Missing"
        assert back["income"].values == (0, 1)
        assert list(back.columns) == list(schema.columns)  # column order kept

    def test_json_is_strict_json_with_infinite_edges_as_strings(self, schema):
        def refuse(name):
            raise AssertionError(f"non-standard JSON constant {name}")

        raw = json.loads(schema.to_json(), parse_constant=refuse)
        assert raw["columns"]["hours"]["edges"] == ["-inf", 0.0, 40.0, "inf"]
        assert raw["data_derived"] is False
        assert "Infinity" not in schema.to_json()

    def test_round_trip_through_file_path(self, schema, tmp_path):
        path = tmp_path / "schema.json"
        text = schema.to_json(path)
        assert path.read_text(encoding="utf-8") == text + "\n"
        assert Schema.from_json(path) == schema  # Path
        assert Schema.from_json(str(path)) == schema  # str path

    def test_data_derived_round_trips(self):
        s = Schema({"a": Categorical(["x"])}, data_derived=True)
        assert Schema.from_json(s.to_json()).data_derived is True

    def test_numpy_values_serialise(self):
        s = Schema({"a": Categorical([np.int64(1), np.int64(2)])})
        assert Schema.from_json(s.to_json())["a"].values == (1, 2)

    def test_unserialisable_value(self):
        s = Schema({"a": Categorical([object()])})
        with pytest.raises(TypeError, match="cannot write"):
            s.to_json()

    def test_hand_written_json_with_defaults(self):
        text = '{"columns": {"a": {"type": "categorical", "values": ["x", "y"]}, "b": {"type": "binned", "edges": [0, 1, "inf"]}}}'
        s = Schema.from_json(text)
        assert s["a"] == Categorical(["x", "y"])
        assert s["b"] == Binned([0, 1, INF])
        assert s.data_derived is False

    def test_leading_whitespace_json_string(self):
        assert Schema.from_json('  \n {"columns": {}}') == Schema({})

    def test_invalid_json(self):
        with pytest.raises(SchemaError, match=r"schema is not valid JSON \(.* at line 1\)"):
            Schema.from_json('{"columns": ')

    def test_invalid_json_in_file_reports_line(self, tmp_path):
        path = tmp_path / "bad.json"
        path.write_text('{\n"columns": {,}\n}', encoding="utf-8")
        with pytest.raises(SchemaError, match=r"not valid JSON \(.* at line 2\)"):
            Schema.from_json(path)

    @pytest.mark.parametrize("text", ['{"cols": {}}', '{"columns": []}', '{"columns": "a"}'])
    def test_missing_columns_object(self, text):
        with pytest.raises(SchemaError, match='must be an object with a "columns" object'):
            Schema.from_json(text)

    def test_top_level_array_in_file(self, tmp_path):
        path = tmp_path / "arr.json"
        path.write_text("[1, 2]", encoding="utf-8")
        with pytest.raises(SchemaError, match='"columns" object'):
            Schema.from_json(path)

    def test_unknown_domain_type_names_column_and_type(self):
        with pytest.raises(SchemaError, match=r"column 'age': unknown domain type 'ordinal'"):
            Schema.from_json('{"columns": {"age": {"type": "ordinal", "values": [1]}}}')

    @pytest.mark.parametrize("spec", ['{"values": [1]}', '[1, 2]', '"categorical"'])
    def test_domain_without_type(self, spec):
        with pytest.raises(SchemaError, match=r"column 'age': expected an object with a 'type'"):
            Schema.from_json(f'{{"columns": {{"age": {spec}}}}}')

    def test_categorical_without_values(self):
        with pytest.raises(SchemaError, match=r"column 'sex': a categorical domain needs 'values'"):
            Schema.from_json('{"columns": {"sex": {"type": "categorical"}}}')

    def test_binned_without_edges(self):
        with pytest.raises(SchemaError, match=r"column 'age': a binned domain needs 'edges'"):
            Schema.from_json('{"columns": {"age": {"type": "binned"}}}')

    def test_invalid_domain_inside_json_is_reported(self):
        with pytest.raises(SchemaError, match="strictly increasing"):
            Schema.from_json('{"columns": {"age": {"type": "binned", "edges": [3, 1]}}}')
        with pytest.raises(SchemaError, match="lists 'x' twice"):
            Schema.from_json('{"columns": {"a": {"type": "categorical", "values": ["x", "x"]}}}')

    def test_file_not_found(self, tmp_path):
        missing = tmp_path / "nope.json"
        with pytest.raises(SchemaError, match=r"schema file '.*nope\.json' does not exist"):
            Schema.from_json(missing)
        with pytest.raises(SchemaError, match=r"does not exist"):
            Schema.from_json(str(missing))

    def test_directory_is_not_a_schema_file(self, tmp_path):
        with pytest.raises(SchemaError, match="is a directory"):
            Schema.from_json(tmp_path)


# -- inference --------------------------------------------------------------------------------------
class TestInfer:
    def test_marks_data_derived_and_sorts_values(self):
        df = pd.DataFrame({"sex": ["M", "F", "M"], "y": [1, 0, 1]})
        s = infer_schema(df)
        assert s.data_derived is True
        assert s.source == "inferred from the data"
        assert s["sex"] == Categorical(["F", "M"])
        assert s["y"] == Categorical([0, 1])
        assert s["y"].missing is None
        assert all(type(v) is int for v in s["y"].values)  # plain Python scalars, not numpy

    def test_nulls_add_missing_category(self):
        df = pd.DataFrame(
            {
                "sex": pd.Series(["M", None, "F"], dtype=object),
                "x": [1.5, np.nan, 0.5],
                "y": [1, 0, 1],
            }
        )
        s = infer_schema(df)
        assert s["sex"] == Categorical(["F", "M", "Missing"], missing="Missing")
        assert s["x"] == Categorical([0.5, 1.5, "Missing"], missing="Missing")
        assert s["y"].missing is None
        assert "Missing" not in s["y"].values

    def test_custom_missing_label_and_column_subset(self):
        df = pd.DataFrame({"a": pd.Series(["x", None], dtype=object), "b": [1, 2]})
        s = infer_schema(df, columns=["a"], missing_label="?")
        assert list(s.columns) == ["a"]
        assert s["a"] == Categorical(["x", "?"], missing="?")

    def test_literal_missing_value_and_nulls_share_the_missing_category(self):
        # regression: a column holding both the string 'Missing' and nulls used to raise SchemaError
        df = pd.DataFrame({"a": pd.Series(["x", "Missing", None], dtype=object)})
        s = infer_schema(df)
        assert s["a"] == Categorical(["Missing", "x"], missing="Missing")

    def test_inferred_schema_serialises(self):
        df = pd.DataFrame({"sex": pd.Series(["M", None], dtype=object), "y": np.array([3, 4], dtype=np.int64)})
        s = infer_schema(df)
        back = Schema.from_json(s.to_json())
        assert back == s
        assert back.data_derived is True

    def test_unknown_column(self):
        from dpaudit import DataError

        with pytest.raises(DataError, match=r"unknown column\(s\) 'zzz'"):
            infer_schema(pd.DataFrame({"a": [1]}), columns=["zzz"])

    def test_polars_frame(self):
        pl = pytest.importorskip("polars")
        s = infer_schema(pl.DataFrame({"a": ["y", None, "x"], "b": [2.0, None, 1.0]}))
        assert s.data_derived is True
        assert s["a"] == Categorical(["x", "y", "Missing"], missing="Missing")
        assert s["b"] == Categorical([1.0, 2.0, "Missing"], missing="Missing")

    def test_mixed_types_do_not_crash_sorting(self):
        s = infer_schema(pd.DataFrame({"a": pd.Series([1, "b", 2], dtype=object)}))
        assert set(s["a"].values) == {1, "b", 2}
        assert s["a"].size == 3


def test_is_missing_helper():
    from dpaudit.schema import _is_missing

    for v in [None, float("nan"), np.nan, pd.NA, pd.NaT, np.float32("nan"), np.datetime64("NaT")]:
        assert _is_missing(v), v
    for v in [0, 0.0, "", "nan", "Missing", False, math.inf, np.int64(1)]:
        assert not _is_missing(v), v


def test_path_type_hint_accepts_pathlike(tmp_path):
    p = Path(tmp_path) / "s.json"
    Schema({"a": Binned([0, 1])}).to_json(str(p))
    assert Schema.from_json(p)["a"] == Binned([0, 1])


@pytest.mark.parametrize("bad", [5, "abc", None])
def test_categorical_values_must_be_a_list(bad):
    from dpaudit import Categorical, SchemaError

    with pytest.raises(SchemaError, match="categorical values must be a list of values"):
        Categorical(bad)
