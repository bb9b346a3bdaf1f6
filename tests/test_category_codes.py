"""Frames that already hold categorical codes (pandas Categorical, polars Categorical: Arrow
dictionary columns) are coded from their few dictionary values; the counts and the refusals equal
those of the same frame holding plain values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpaudit
from dpaudit import Categorical, Criterion, DataError, Schema

SCHEMA = Schema({"a": Categorical(["x", "y", "M"], missing="M"), "b": Categorical([0, 1])})
CRIT = [Criterion.parse("a ⊥ b")]


def counts(frame):
    return dpaudit.count_tables(frame, CRIT, SCHEMA)[0].counts


def test_categorical_frame_counts_like_plain_values_with_nulls_and_unused_categories():
    rng = np.random.default_rng(0)
    values = rng.choice(np.array(["x", "y", None], dtype=object), 500)
    plain = pd.DataFrame({"a": values, "b": rng.integers(0, 2, 500)})
    # categories in another order than declared, one unused and undeclared ("z")
    coded = plain.assign(a=pd.Categorical(values, categories=["y", "z", "x"]))
    assert np.array_equal(counts(coded), counts(plain))
    assert counts(coded).sum() == 500 and counts(coded)[0, 2].sum() == sum(v is None for v in values)


def test_categorical_frame_refuses_used_undeclared_categories_and_undeclared_missing():
    frame = pd.DataFrame({"a": pd.Categorical(["x", "z", "z"], categories=["x", "z"]), "b": [0, 1, 1]})
    with pytest.raises(DataError, match=r"'z' \(2 rows\)"):
        counts(frame)
    strict = Schema({"a": Categorical(["x", "y"]), "b": Categorical([0, 1])})
    frame = pd.DataFrame({"a": pd.Categorical(["x", None], categories=["x", "y"]), "b": [0, 1]})
    with pytest.raises(DataError, match="missing value"):
        dpaudit.count_tables(frame, CRIT, strict)


def test_polars_categorical_counts_like_plain_values():
    pl = pytest.importorskip("polars")
    plain = pl.DataFrame({"a": ["x", "y", None, "x"], "b": [0, 1, 1, 0]})
    coded = plain.with_columns(pl.col("a").cast(pl.Categorical))
    assert np.array_equal(counts(coded), counts(plain))
    assert counts(coded).tolist() == [[[2, 0], [0, 1], [0, 1]]]
