"""Hostile column labels: a frame whose labels are not strings (integers, a MultiIndex, a mix, None) or
repeat a name is refused by every entry that reads a frame (``audit``, ``count_tables``,
``infer_schema``) with one DataError naming the labels and the fix — never a TypeError from a join
or sort, nor narwhals' DuplicateError, and never counted silently from one of two same-named columns.
"""

from __future__ import annotations

import duckdb
import pandas as pd
import pyarrow as pa
import pytest

from dpaudit import Categorical, Criterion, DataError, Schema, audit, count_tables
from dpaudit.counting import infer_schema

SCHEMA = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1])})
BASE = pd.DataFrame({"sex": ["F", "M"] * 5, "y": [0, 1] * 5})


def _relabelled(labels) -> pd.DataFrame:
    frame = pd.concat([BASE, BASE[["y"]]], axis=1) if len(labels) == 3 else BASE.copy()
    frame.columns = labels
    return frame


FRAMES = {
    "pandas int labels": (lambda: _relabelled([0, 1]), "column labels must be strings", "0, 1 (int)"),
    "pandas mixed labels": (lambda: _relabelled(["sex", 1]), "column labels must be strings", "1 (int) is not"),
    "pandas None label": (lambda: _relabelled(["sex", None]), "column labels must be strings", "nan (float)"),
    "pandas float labels": (lambda: _relabelled([0.5, "y"]), "column labels must be strings", "0.5 (float)"),
    "pandas MultiIndex": (lambda: _relabelled(pd.MultiIndex.from_tuples([("a", "sex"), ("a", "y")])),
                          "MultiIndex of 2 levels", "('a', 'sex')"),
    "pandas repeated name": (lambda: _relabelled(["sex", "y", "y"]), "repeat column names", "'y' (2 times)"),
    "pandas repeated unused name": (lambda: _relabelled(["sex", "y", "sex"]), "repeat column names", "'sex'"),
    "pyarrow repeated name": (lambda: pa.table([pa.array(["F", "M"]), pa.array([0, 1]), pa.array([1, 0])],
                                               names=["sex", "y", "y"]), "repeat column names", "'y' (2 times)"),
    "duckdb repeated name": (lambda: duckdb.sql("select 'F' as sex, 1 as y, 0 as y"), "repeat column names",
                             "'y' (2 times)"),
}

ENTRIES = {
    "audit": lambda data: audit(data, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",)),
    "audit infer": lambda data: audit(data, "sex ⊥ y", schema="infer", exact=True, measures=("tvd",)),
    "count_tables": lambda data: count_tables(data, [Criterion.parse("sex ⊥ y")], SCHEMA),
    "infer_schema": lambda data: infer_schema(data, ["sex", "y"]),
    "infer_schema all": lambda data: infer_schema(data),
}


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("name", list(FRAMES))
def test_frame_with_bad_labels_is_one_data_error(name, entry):
    make, fragment, names = FRAMES[name]
    with pytest.raises(DataError) as info:
        ENTRIES[entry](make())
    message = str(info.value)
    assert fragment in message and names in message, message
    assert "\n" not in message
    assert "frame.columns" in message or "rename" in message, message


def test_a_copying_engine_refuses_bad_labels_before_copying(monkeypatch):
    """engine="spark" copies a pandas frame in: the labels are refused before any session is started."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed (without it the engine says so first)")
    from dpaudit.counting import spark

    monkeypatch.setattr(spark.SparkEngine, "to_frame", lambda *a, **k: pytest.fail("copied before the check"))
    with pytest.raises(DataError, match="column labels must be strings"):
        audit(_relabelled([0, 1]), "sex ⊥ y", schema=SCHEMA, engine="spark", exact=True, measures=("tvd",))


def test_string_labels_of_numpy_type_are_fine():
    import numpy as np

    frame = BASE.copy()
    frame.columns = np.array(["sex", "y"])  # numpy str_ labels are strings
    assert audit(frame, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",)).n == 10
