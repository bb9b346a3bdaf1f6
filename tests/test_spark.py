"""Counting on Spark (local mode): identical to DuckDB on every registered dataset's presets, on binned
edge cases, on awkward column names and types, with the same error messages; ``--engine spark``.

One module-scoped ``local[2]`` SparkSession serves every test (it is the active session, so
``engine="spark"`` and the CLI use it too). Marked ``spark`` (``-m "not spark"`` deselects them);
they run where pyspark is installed (the ``spark`` extra, not the ``test`` extra: 0.49 GB) and always
in CI, which installs it (``.ci/run``). Without pyspark or Java they skip locally with the reason and
fail in CI.
"""

from __future__ import annotations

import datetime
import decimal
import importlib.util
import json
import math
import os
import shutil
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import dpaudit
from dpaudit import Binned, Categorical, DataError, Schema, datasets
from dpaudit.cli import app
from dpaudit.counting import count_tables, infer_schema
from dpaudit.counting import spark as _spark
from dpaudit.criteria import parse_criteria

pytestmark = pytest.mark.spark
if importlib.util.find_spec("pyspark") is None:
    if os.environ.get("CI"):  # CI must run them: .ci/run installs the spark extra
        raise ImportError("the Spark tests need pyspark in CI: .ci/run installs it (pip install -e '.[spark]')")
    pytest.skip("pyspark is not installed: pip install -e '.[spark]' (not in the test extra: 0.49 GB)",
                allow_module_level=True)

INF = math.inf


def _java() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(home and (Path(home) / "bin" / "java").is_file()) or shutil.which("java") is not None


@pytest.fixture(scope="module")
def spark():
    if not _java():
        if os.environ.get("CI"):
            pytest.fail("CI must provide Java 17+ for the Spark tests")
        pytest.skip("Java not found: the Spark tests need a JDK (JAVA_HOME or java on PATH)")
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    session = (SparkSession.builder.master("local[2]").appName("dpaudit-tests")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
               .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "1g")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def to_spark(spark, frame):
    table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
    return spark.createDataFrame(table)


def to_duckdb(frame):
    """A DuckDB relation over the frame: the DuckDB (lazy, grouped) path of count_tables."""
    con = duckdb.connect()
    table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
    return con.from_arrow(table), con


def counts_of(data, criteria, schema):
    return [t.counts for t in count_tables(data, parse_criteria(criteria), schema)]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype == np.int64 and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def error_of(fn):
    with pytest.raises(DataError) as info:
        fn()
    return str(info.value)


# -- every registered dataset, every preset --------------------------------------------------------
@pytest.mark.parametrize("name", datasets.names())
def test_every_preset_identical_to_duckdb(spark, data_root, name):
    frame, schema = datasets.load(name)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    spark_frame = to_spark(spark, table)
    relation, con = to_duckdb(table)
    presets = datasets.info(name).presets
    assert presets
    try:
        for criteria in presets.values():
            on_spark = counts_of(spark_frame, criteria, schema)
            assert_same(on_spark, counts_of(relation, criteria, schema))
            assert_same(on_spark, counts_of(frame, criteria, schema))  # and the in-memory path
            assert sum(int(c.sum()) for c in on_spark[:1]) == len(frame)
    finally:
        con.close()


@pytest.mark.parametrize("name", ["adult", "credit"])  # credit: a column named with dots
def test_engine_spark_reads_files_like_duckdb(spark, data_root, tmp_path, name):
    frame, schema = datasets.load(name)
    criteria = list(datasets.info(name).presets[next(iter(datasets.info(name).presets))])
    parquet, csv = tmp_path / f"{name}.parquet", tmp_path / f"{name}.csv"
    frame.to_parquet(parquet, index=False)
    frame.to_csv(csv, index=False)
    for path in (parquet, csv):
        spark_result = dpaudit.audit(path, criteria, schema=schema, engine="spark", measures=("tvd", "tc"), exact=True)
        duck_result = dpaudit.audit(path, criteria, schema=schema, measures=("tvd", "tc"), exact=True)
        assert spark_result.to_dict() == duck_result.to_dict()
        assert_same(counts_of(path, criteria, schema), counts_of(frame, criteria, schema))


# -- binning ---------------------------------------------------------------------------------------
EDGE_VALUES = [-5.0, -1e-20, 0.0, -0.0, 0.5, 1.5, 1.5000000000000002, 2.9999999999999996, 3.0, 4.0,
               7.0, 9.999999999999998, 10.0, 1e300]  # -inf where the first edge is -inf; +inf is above every bin
BINNED = {
    "inf edges, uneven": Binned([-INF, 0, 1.5, 3, INF], missing="NA"),
    "equal width inside": Binned([-INF, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, INF], missing="NA"),
    "equal width, offset": Binned([-5.0, -2.5, 0.0, 2.5, 5.0, 7.5, 10.0, INF], missing="NA"),
    "many uneven": Binned([-INF] + [float(x) for x in (-3, -1, 0, 0.5, 1, 1.5, 2, 3, 4, 6, 8, 9, 10, 100)] + [INF],
                          missing="NA"),
}


@pytest.mark.parametrize("label", list(BINNED))
def test_binned_edges_nulls_and_nan_identical(spark, label):
    values = EDGE_VALUES * 3 + [float("nan"), None, 2.0] + ([-INF] if BINNED[label].edges[0] == -INF else [])
    frame = pa.table({
        "x": pa.array(values, type=pa.float64()),
        "i": pa.array([None if v is None or not math.isfinite(v) else int(min(v, 2.0**62)) for v in values],
                      type=pa.int64()),
        "y": pa.array([k % 3 for k in range(len(values))], type=pa.int64()),
    })
    schema = Schema({"x": BINNED[label], "i": BINNED[label], "y": Categorical([0, 1, 2])})
    criteria = ["x ⊥ y", "i ⊥ y | x"]
    relation, con = to_duckdb(frame)
    try:
        on_spark = counts_of(to_spark(spark, frame), criteria, schema)
        assert_same(on_spark, counts_of(relation, criteria, schema))
        assert_same(on_spark, counts_of(frame, criteria, schema))
    finally:
        con.close()
    assert on_spark[0].sum() == len(values)
    assert on_spark[0][0, -1].sum() == 2  # NaN and null in the declared missing bin


@pytest.mark.parametrize("values, schema_x, expected", [
    ([-1.0, 0.0, 5.0, 5.0], Binned([0, 5, 10]), "1 row(s) below the first bin edge 0"),
    ([0.0, 10.0, 10.0, 11.0], Binned([0, 5, 10]), "3 row(s) at or above the last bin edge 10"),
    ([0.0, None, float("nan"), 1.0], Binned([0, 5, 10]), "2 row(s) with a missing value and no declared missing bin"),
    ([-INF, INF, 3.0, 4.0], Binned([0, 1, 2, 3, 4, 5]), "1 row(s) below the first bin edge 0; 1 row(s) at or above"),
])
def test_binned_out_of_range_errors_identical(spark, values, schema_x, expected):
    frame = pa.table({"x": pa.array(values, type=pa.float64()), "y": pa.array([0, 1, 0, 1], type=pa.int64())})
    schema = Schema({"x": schema_x, "y": Categorical([0, 1])})
    relation, con = to_duckdb(frame)
    try:
        on_duckdb = error_of(lambda: counts_of(relation, ["x ⊥ y"], schema))
    finally:
        con.close()
    on_spark = error_of(lambda: counts_of(to_spark(spark, frame), ["x ⊥ y"], schema))
    assert on_spark == on_duckdb == error_of(lambda: counts_of(frame, ["x ⊥ y"], schema))
    assert expected in on_spark


def test_binned_column_of_text_refused_like_duckdb(spark):
    frame = pa.table({"x": ["1", "2"], "y": [0, 1]})
    schema = Schema({"x": Binned([0, 5]), "y": Categorical([0, 1])})
    message = error_of(lambda: counts_of(to_spark(spark, frame), ["x ⊥ y"], schema))
    assert message == "column 'x' is declared binned (numeric) but holds String; declare it Categorical or convert it to numbers"


# -- categorical values, types and names -----------------------------------------------------------
def test_out_of_domain_and_missing_messages_identical(spark):
    frame = pd.DataFrame({
        "g": pd.Series(["a", "b", "c", "d", "c", "e", "f", "g", "h", "d"], dtype=object),  # ties: c, d
        "k": np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], dtype=np.int64),
        "m": pd.Series(["x", None, "x", "y", None, "x", "y", "x", "x", "x"], dtype=object),
    })
    cases = [
        (Schema({"g": Categorical(["a", "b"]), "k": Categorical(list(range(1, 11)))}), "g ⊥ k"),
        (Schema({"g": Categorical(list("abcdefgh")), "k": Categorical([1, 2, 3])}), "g ⊥ k"),
        (Schema({"m": Categorical(["x", "y"]), "k": Categorical(list(range(1, 11)))}), "m ⊥ k"),
    ]
    for schema, criterion in cases:
        relation, con = to_duckdb(frame)
        try:
            on_duckdb = error_of(lambda: counts_of(relation, [criterion], schema))  # noqa: B023
        finally:
            con.close()
        on_spark = error_of(lambda: counts_of(to_spark(spark, frame), [criterion], schema))  # noqa: B023
        assert on_spark == on_duckdb == error_of(lambda: counts_of(frame, [criterion], schema))  # noqa: B023
    assert "'c' (2 rows), 'd' (2 rows), 'e' (1 row), 'f' (1 row), 'g' (1 row) and 1 more;" in \
        error_of(lambda: counts_of(to_spark(spark, frame), ["g ⊥ k"], cases[0][0]))
    assert on_spark.startswith("column 'm': 2 row(s) have a missing value and the schema declares no missing category")


def test_dotted_backticked_and_case_differing_names(spark):
    # compared with the in-memory path: DuckDB's relational path itself parses "a.b" next to a column
    # "A" as a field access, and "`q`" as a quoted name
    frame = pa.table({"a.b": ["x", "y", "x", None], "`q`": [1, 2, 1, 2], "A": [0, 0, 1, 1], "x.v": [0.5, 1.5, 1.0, 0.0]})
    schema = Schema({"a.b": Categorical(["x", "y", "NA"], missing="NA"), "`q`": Categorical([1, 2]),
                     "A": Categorical([0, 1]), "x.v": Binned([0, 1, 2]), "a": Categorical([1, 0])})
    criteria = ["a.b ⊥ A | `q`", "x.v ⊥ A", "A ⊥ a.b"]
    on_spark = counts_of(to_spark(spark, frame), criteria, schema)
    assert_same(on_spark, counts_of(frame, criteria, schema))
    assert on_spark[1].tolist() == [[[1, 1], [1, 1]]]
    # Spark matches names case-insensitively; the renaming by position keeps "a" and "A" apart
    cased = frame.append_column("a", pa.array([1, 1, 1, 0]))
    assert counts_of(to_spark(spark, cased), ["a ⊥ A"], schema)[0].tolist() == [[[2, 1], [0, 1]]]
    inferred = infer_schema(to_spark(spark, frame), ["a.b", "A", "`q`"])
    assert inferred.to_dict() == infer_schema(frame, ["a.b", "A", "`q`"]).to_dict()


def test_booleans_decimals_and_dates_against_declared_values(spark):
    frame = pa.table({
        "flag": pa.array([True, False, True, None], type=pa.bool_()),
        "amount": pa.array([decimal.Decimal("1.00"), decimal.Decimal("2.00"), decimal.Decimal("1.00"),
                            decimal.Decimal("2.50")], type=pa.decimal128(10, 2)),
        "day": pa.array([datetime.date(2020, 1, 1), datetime.date(2020, 1, 2)] * 2, type=pa.date32()),
        "y": pa.array([0, 1, 1, 0], type=pa.int32()),
    })
    schema = Schema({"flag": Categorical([0, 1, "NA"], missing="NA"), "amount": Binned([0, 2, 3]),
                     "day": Categorical([datetime.date(2020, 1, 1), datetime.date(2020, 1, 2)]),
                     "y": Categorical([0, 1])})
    criteria = ["flag ⊥ y", "amount ⊥ y | day"]
    relation, con = to_duckdb(frame)
    try:
        on_duckdb = counts_of(relation, criteria, schema)
        on_spark = counts_of(to_spark(spark, frame), criteria, schema)
        assert_same(on_spark, on_duckdb)
        narrow = Schema({**schema.columns, "amount": Categorical([1, 2])})  # 2.50 is outside
        assert error_of(lambda: counts_of(to_spark(spark, frame), ["amount ⊥ y"], narrow)) == \
            error_of(lambda: counts_of(relation, ["amount ⊥ y"], narrow))
    finally:
        con.close()
    assert on_spark[0].tolist() == [[[0, 1], [1, 1], [1, 0]]]  # False → 0, True → 1, null → NA


def test_text_categories_that_look_numeric_stay_text(spark, tmp_path):
    path = tmp_path / "codes.csv"
    path.write_text("code,flag,y\n01,yes,0\n02,no,1\n01,yes,1\n")
    schema = Schema({"code": Categorical(["01", "02"]), "flag": Categorical([0, 1]), "y": Categorical([0, 1])})
    on_spark = counts_of(_spark.read_file(path, {"code": "text", "flag": "integer"}), ["code ⊥ y"], schema)
    assert_same(on_spark, counts_of(path, ["code ⊥ y"], schema))
    assert on_spark[0].tolist() == [[[1, 1], [0, 1]]]
    with_spark = error_of(lambda: dpaudit.audit(path, "flag ⊥ y", schema=schema, engine="spark", exact=True, measures=("tvd",)))
    assert with_spark == error_of(lambda: dpaudit.audit(path, "flag ⊥ y", schema=schema, exact=True, measures=("tvd",)))
    assert "outside the declared domain: 'yes' (2 rows), 'no' (1 row)" in with_spark


def test_unparseable_value_is_an_error_not_a_missing_count(spark, tmp_path):
    path = tmp_path / "late.csv"
    rows = "\n".join(f"{i % 3},{i % 2}" for i in range(25_000))  # beyond DuckDB's sniffing sample
    path.write_text(f"k,y\n{rows}\nthree,1\n")
    schema = Schema({"k": Categorical([0, 1, 2]), "y": Categorical([0, 1])})
    message = error_of(lambda: dpaudit.audit(path, "k ⊥ y", schema=schema, engine="spark", exact=True, measures=("tvd",)))
    assert message.startswith("Spark failed while counting the data:") and "\n" not in message


def test_schema_infer_on_spark_matches_duckdb(spark, tmp_path):
    frame = pd.DataFrame({"s": ["F", "M", None, "M"], "y": [1, 0, 1, 1]})
    path = tmp_path / "small.parquet"
    frame.to_parquet(path, index=False)
    on_spark = dpaudit.audit(path, "s ⊥ y", schema="infer", engine="spark", exact=True, measures=("tvd",))
    assert on_spark.to_dict() == dpaudit.audit(path, "s ⊥ y", schema="infer", exact=True, measures=("tvd",)).to_dict()
    assert not on_spark.dp


# -- options and failures --------------------------------------------------------------------------
def test_engine_is_validated_before_anything_is_read(monkeypatch):
    monkeypatch.setattr(sys.modules["dpaudit.audit"], "count_tables", lambda *a, **k: pytest.fail("counted"))
    with pytest.raises(DataError, match="^engine must be one of duckdb, spark, got 'sparkk'$"):
        dpaudit.audit("no-such-file.csv", "a ⊥ b", schema=Schema({"a": Categorical([0]), "b": Categorical([0])}),
                      engine="sparkk", exact=True, measures=("tvd",))
    with pytest.raises(DataError, match="engine must be one of"):
        dpaudit.audit("no-such-file.csv", "a ⊥ b", schema="infer", engine=None, exact=True, measures=("tvd",))  # type: ignore[arg-type]


def test_missing_pyspark_is_one_line_with_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    message = error_of(lambda: dpaudit.audit(pd.DataFrame({"a": [0]}), "a ⊥ a", schema="infer", engine="spark", exact=True, measures=("tvd",)))
    assert message == "engine 'spark' needs pyspark, which is not installed: pip install 'dpaudit[spark]'"
    result = CliRunner().invoke(app, ["fairness", "x.csv", "-c", "a ⊥ b", "--exact", "--infer-schema",
                                      "--engine", "spark"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"dpaudit: error: {message}"]


def test_missing_java_is_a_clear_error(monkeypatch):
    from pyspark.sql import SparkSession

    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    monkeypatch.setattr(_spark, "_java_found", lambda: False)
    message = error_of(_spark.session)
    assert message.startswith("Spark needs Java (17 or newer) and none was found")


def test_active_session_is_used(spark):
    assert _spark.session() is spark


# -- the command line ------------------------------------------------------------------------------
def cli(*args):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "160"})


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_cli_engine_spark_matches_duckdb(spark, tmp_path, suffix):
    rng = np.random.default_rng(3)
    n = 3_000
    frame = pd.DataFrame({
        "sex": rng.choice(["F", "M"], n), "race": rng.choice(["r1", "r2", "r3"], n),
        "hours": rng.integers(1, 100, n), "income": rng.choice(["<=50K", ">50K"], n, p=[0.7, 0.3]),
        "score": rng.normal(0.0, 3.0, n),
    })
    path = tmp_path / f"data{suffix}"
    frame.to_parquet(path, index=False) if suffix == ".parquet" else frame.to_csv(path, index=False)
    schema = tmp_path / "schema.json"
    Schema({"sex": Categorical(["F", "M"]), "race": Categorical(["r1", "r2", "r3"]),
            "hours": Binned([1, 20, 40, 41, 60, 100]), "income": Categorical(["<=50K", ">50K"]),
            "score": Binned([-INF, -2, -1, 0, 1, 2, INF])}).to_json(schema)
    args = ["fairness", str(path), "--schema", str(schema), "-c", "sex ⊥ income", "-c", "race ⊥ income | hours",
            "-c", "sex,race ⊥ income | score", "-m", "tvd", "-m", "tc", "-m", "repair", "--exact", "--json"]
    on_duckdb = cli(*args, "--engine", "duckdb")
    on_spark = cli(*args, "--engine", "spark")
    assert on_duckdb.exit_code == 0, on_duckdb.stderr
    assert on_spark.exit_code == 0, on_spark.stderr
    assert on_spark.stdout == on_duckdb.stdout
    assert json.loads(on_spark.stdout)["n"] == n


def test_cli_bad_engine_is_one_line_exit_2(tmp_path):
    result = cli("fairness", "adult", "--preset", "paper", "--exact", "--engine", "polars")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == ["dpaudit: error: engine must be one of duckdb, spark, got 'polars'"]


def test_cli_engine_spark_on_a_registered_dataset(spark, data_root):
    args = ["fairness", "healthcare", "--preset", "paper", "--exact", "--json", "-m", "tvd", "-m", "tc"]
    on_spark, on_duckdb = cli(*args, "--engine", "spark"), cli(*args)
    assert on_spark.exit_code == on_duckdb.exit_code == 0, on_spark.stderr
    assert on_spark.stdout == on_duckdb.stdout


def test_parquet_written_by_spark_counts_like_duckdb(spark, tmp_path):
    frame = pa.table({"g": ["a", "b", "a", "c"] * 50, "x": [0.0, 1.5, 2.5, None] * 50})
    folder = tmp_path / "one.parquet"
    to_spark(spark, frame).coalesce(1).write.parquet(str(folder))
    part = next(folder.glob("part-*.parquet"))
    schema = Schema({"g": Categorical(["a", "b", "c"]), "x": Binned([0, 1, 2, 3], missing="NA")})
    assert pq.read_table(part).num_rows == 200
    assert_same(counts_of(_spark.read_file(part), ["g ⊥ x"], schema), counts_of(part, ["g ⊥ x"], schema))


def test_a_session_dpaudit_starts_keeps_stderr_quiet(tmp_path):
    """A fresh process (no active session): Spark's start-up logging (default log4j profile notice,
    WARN lines) stays off stderr; dpaudit's own output is all there is on stdout."""
    import subprocess

    data = tmp_path / "d.csv"
    pd.DataFrame({"g": ["a", "b"] * 20, "y": [0, 1, 1, 0] * 10}).to_csv(data, index=False)
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"columns": {"g": {"type": "categorical", "values": ["a", "b"]}, "y": {"type": "categorical", "values": [0, 1]}}}))
    done = subprocess.run([sys.executable, "-m", "dpaudit", "fairness", str(data), "-c", "g ⊥ y", "-m", "tvd",
                           "--exact", "--schema", str(schema), "--engine", "spark", "--json"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "SPARK_CONF_DIR": ""})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n"] == 40
    assert "log4j profile" not in done.stderr and " WARN " not in done.stderr, done.stderr
