"""A new counting engine is one module plus its registration: a toy engine defined in this file only
(polars: a path scanned lazily by polars, a frame copied into a polars LazyFrame) is registered in
``dpaudit.counting.ENGINES`` and then counts ``audit(..., engine="polars")`` and ``dpaudit fairness
--engine polars`` — with no other file of the package touched — giving the default engine's results."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpaudit import Binned, Categorical, DataError, DPAuditError, Schema, audit
from dpaudit.cli import app
from dpaudit.counting import DEFAULT_ENGINE, ENGINES, Engine, check_engine, describe, engine_of

pl = pytest.importorskip("polars")

# -- the new engine: everything it needs, in one place -------------------------------------------------

_POLARS_TYPES = {"text": "String", "integer": "Int64"}


class PolarsEngine(Engine):
    """Counting on polars: a CSV/Parquet path is scanned lazily by polars, each declared column typed as
    declared; an in-memory frame is copied into a polars LazyFrame through Arrow."""

    name = "polars"
    summary = "a path is scanned by polars, a frame is copied to a polars LazyFrame"

    def __init__(self) -> None:
        self.copied: list[str] = []  # what to_frame moved in, by type: the tests read it

    def owns(self, data: Any) -> bool:
        return isinstance(data, pl.LazyFrame)

    def to_frame(self, data: Any, kinds: Mapping[str, str]) -> Any:
        import narwhals.stable.v2 as nw

        self.copied.append(type(data).__name__)
        if isinstance(data, (str, Path)):
            if str(data).endswith(".parquet"):
                return pl.scan_parquet(data)
            return pl.scan_csv(data, schema_overrides={c: getattr(pl, _POLARS_TYPES[k]) for c, k in kinds.items()})
        return pl.from_arrow(nw.from_native(data).to_arrow()).lazy()

    @contextlib.contextmanager
    def errors(self, what: str) -> Iterator[None]:
        import narwhals.stable.v2 as nw

        try:
            yield
        except (pl.exceptions.PolarsError, nw.exceptions.NarwhalsError) as exc:  # as narwhals re-raises them
            raise DataError(f"polars failed while counting {what}: {str(exc).strip().splitlines()[0]}") from None


@pytest.fixture
def polars_engine(monkeypatch):
    engine = PolarsEngine()
    monkeypatch.setitem(ENGINES, engine.name, engine)  # the registration: one entry
    return engine


# -- data with awkward names and a binned column ------------------------------------------------------

@pytest.fixture
def frame():
    rng = np.random.default_rng(12)
    n = 3000
    sex = rng.choice(["F", "M"], size=n)
    score = rng.uniform(0, 9, size=n)
    code = rng.choice(["01", "02", "10"], size=n)
    y = (rng.random(n) < np.where(sex == "M", 0.45, 0.25) + 0.03 * score).astype(int)
    return pd.DataFrame({"sex": sex, "s.core": score, "code": code, "y": y})


@pytest.fixture
def schema():
    return Schema({"sex": Categorical(["F", "M"]), "s.core": Binned([0, 3, 6, 9]),
                   "code": Categorical(["01", "02", "10"]), "y": Categorical([0, 1])})


CRITERIA = ["sex ⊥ y", "sex ⊥ y | s.core", "code ⊥ y | sex"]
MEASURES = ("tvd", "tc", "repair")


@pytest.fixture
def counted(monkeypatch):
    """The type of the data ``count_tables`` receives in each audit: the native frame of the data the
    audit opened once (``dpaudit.counting.Opened``)."""
    kinds: list[str] = []
    module = sys.modules["dpaudit.audit"]
    real = module.count_tables

    def spy(data, criteria, schema):
        kinds.append(type(data.frame.to_native()).__name__)
        return real(data, criteria, schema)

    monkeypatch.setattr(module, "count_tables", spy)
    return kinds


@pytest.mark.parametrize("epsilon", [None, 1.0])
def test_a_registered_engine_counts_a_frame_by_name(polars_engine, counted, frame, schema, epsilon):
    on_polars = audit(frame, CRITERIA, schema=schema, measures=MEASURES, epsilon=epsilon, exact=epsilon is None, seed=4 if epsilon else None, engine="polars")
    assert polars_engine.copied == ["DataFrame"] and counted == ["LazyFrame"]  # copied in, counted by polars
    default = audit(frame, CRITERIA, schema=schema, measures=MEASURES, epsilon=epsilon, exact=epsilon is None, seed=4 if epsilon else None)
    assert counted == ["LazyFrame", "DataFrame"]
    assert on_polars.to_dict() == default.to_dict() and on_polars.n == len(frame)


def test_a_registered_engine_reads_a_file_typed_by_the_schema(polars_engine, counted, frame, schema, tmp_path):
    """The declared text column ``code`` ("01", "02", "10") stays text: read as numbers it would be
    outside the declared domain."""
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    on_polars = audit(path, CRITERIA, schema=schema, measures=MEASURES, engine="polars", exact=True)
    assert polars_engine.copied == ["PosixPath"] and counted == ["LazyFrame"]
    assert on_polars.to_dict() == audit(path, CRITERIA, schema=schema, measures=MEASURES, exact=True).to_dict()


def test_its_native_frames_are_counted_by_it_whatever_the_name(polars_engine, counted, frame, schema):
    lazy = pl.from_pandas(frame).lazy()
    assert engine_of(lazy, DEFAULT_ENGINE) is polars_engine and engine_of(frame, DEFAULT_ENGINE) is ENGINES["duckdb"]
    result = audit(lazy, CRITERIA, schema=schema, exact=True, measures=("tvd",))
    assert polars_engine.copied == [] and counted == ["LazyFrame"]  # counted where it is, nothing copied
    assert result.to_dict() == audit(frame, CRITERIA, schema=schema, exact=True, measures=("tvd",)).to_dict()


def test_its_failures_are_one_line_data_errors(polars_engine, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("g,k\na,1\nb,1\na,x\n")  # k is declared integer: polars cannot parse "x"
    schema = Schema({"g": Categorical(["a", "b"]), "k": Categorical([1, 2])})
    with pytest.raises(DataError) as caught:
        audit(path, "g ⊥ k", schema=schema, engine="polars", exact=True, measures=("tvd",))
    message = str(caught.value)
    assert message.startswith("polars failed while counting the data: ") and "\n" not in message


def test_a_bad_criterion_is_refused_before_it_copies(polars_engine, frame, schema):
    with pytest.raises(DPAuditError, match="nope"):
        audit(frame, "sex ⊥ nope", schema=schema, engine="polars", exact=True, measures=("tvd",))
    assert polars_engine.copied == []


def test_the_name_is_checked_against_the_registry(polars_engine):
    assert check_engine("polars") == "polars"
    assert "polars: a path is scanned by polars" in " ".join(describe())
    ENGINES.pop("polars")
    with pytest.raises(DataError, match="^engine must be one of duckdb, spark, got 'polars'$"):
        check_engine("polars")


def test_the_command_line_takes_it(polars_engine, frame, schema, tmp_path):
    path, schema_file = tmp_path / "data.csv", tmp_path / "schema.json"
    frame.to_csv(path, index=False)
    schema.to_json(schema_file)
    args = ["fairness", str(path), "--schema", str(schema_file), "--exact", "--json", "--measure", "tvd",
            *[a for c in CRITERIA for a in ("-c", c)]]
    runner = CliRunner()
    on_polars, default = runner.invoke(app, [*args, "--engine", "polars"]), runner.invoke(app, args)
    assert on_polars.exit_code == default.exit_code == 0, on_polars.stderr
    assert on_polars.stdout == default.stdout and json.loads(on_polars.stdout)["n"] == len(frame)
    assert polars_engine.copied == ["str"]


def test_the_command_line_help_lists_the_registered_engines():
    help_text = CliRunner().invoke(app, ["fairness", "--help"], env={"COLUMNS": "200"}).stdout
    text = " ".join(word for word in help_text.split() if word != "│")  # the panel's border
    for name in ENGINES:
        assert f"{name}{' (default)' if name == DEFAULT_ENGINE else ''}: " in text
