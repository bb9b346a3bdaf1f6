"""The Spark engine: the session, reading files with Spark, moving frames onto it.

:class:`SparkEngine` is registered as ``"spark"`` in :data:`dpaudit.counting.ENGINES`. A PySpark
DataFrame is a narwhals LazyFrame, grouped by Spark like any lazy frame (``count._tally``), and only
the grouped counts — at most one row per declared cell — are collected to the driver; Spark needs
only its columns reached by position (:meth:`SparkEngine.positional_columns`).
``audit(path, ..., engine="spark")`` (``dpaudit fairness --engine spark FILE``) reads the file with
Spark here, typed exactly as the DuckDB reader types it (:func:`read_file`).

The session (:func:`session`) is the active one when there is one (``spark-submit``, a notebook, a
session the caller built), else one built with the master ``$DPAUDIT_SPARK_MASTER``, else
Spark's own configuration (``spark.master`` in ``spark-defaults.conf``, ``PYSPARK_SUBMIT_ARGS``),
else ``local[*]``. pyspark is imported only here and only when Spark is asked for.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dpaudit._errors import DataError
from dpaudit.counting.files import open_file
from dpaudit.counting.keys import IntegerKey

__all__ = ["SparkEngine", "MASTER_ENV", "session", "is_spark_frame", "read_file", "spark_errors"]

MASTER_ENV = "DPAUDIT_SPARK_MASTER"
INSTALL = "pip install 'dpaudit[spark]'"


class SparkEngine:
    """Counting on Spark (:data:`dpaudit.counting.ENGINES` ``"spark"``): a path is read by Spark, a
    frame is copied to it through Arrow, a Spark DataFrame is counted where it is.

    It satisfies the :class:`dpaudit.counting.Engine` protocol structurally (mypy checks it at the
    registration) rather than subclassing it, because the registry imports this module."""

    name = "spark"
    summary = (f"a path is read by Spark, a frame is copied to it ({INSTALL}; master from ${MASTER_ENV} or "
               "spark.master, else local[*])")

    def check(self) -> None:
        """DataError when pyspark is not installed; starts nothing."""
        _require_pyspark()

    def owns(self, data: Any) -> bool:
        return is_spark_frame(data)

    def copies(self, data: Any) -> bool:
        return not self.owns(data)

    def errors(self, what: str) -> contextlib.AbstractContextManager[None]:
        return spark_errors(what)

    def to_frame(self, data: Any, kinds: Mapping[str, str] | None = None) -> Any:
        """``data`` as a PySpark DataFrame: a Spark DataFrame as it is, a CSV/Parquet path read by
        Spark (:func:`read_file`), an in-memory frame (pandas, polars, pyarrow) or a DuckDB relation
        through Arrow."""
        if is_spark_frame(data):
            return data
        if isinstance(data, (str, Path)):
            return read_file(Path(data), kinds)
        import narwhals.stable.v2 as nw

        try:
            frame = nw.from_native(data)
        except TypeError:
            raise DataError(
                f"cannot read data of type {type(data).__module__}.{type(data).__name__}; pass a Spark DataFrame, "
                "a pandas, polars or pyarrow table, a DuckDB relation, or the path of a CSV or Parquet file"
            ) from None
        if isinstance(frame, nw.LazyFrame):
            frame = frame.collect()
        table = frame.to_arrow()
        spark = session()
        with spark_errors("the frame"):
            return spark.createDataFrame(table)

    def positional_columns(self, frame: Any, columns: Sequence[str]) -> tuple[Any, dict[str, str]]:
        """The Spark-backed narwhals ``frame`` reduced to ``columns``, renamed by position to
        ``__dpaudit_<i>``, and the new name of each column.

        Spark parses the names it is given: a dot is a field access (``default.payment.next.month``),
        backticks quote, and names match case-insensitively. ``toDF`` renames by position, parsing
        nothing, so every column is reached exactly as named.
        """
        import narwhals.stable.v2 as nw

        native = frame.to_native()
        position = {c: i for i, c in enumerate(native.columns)}
        names = {c: f"__dpaudit_{position[c]}" for c in columns}
        renamed = native.toDF(*[f"__dpaudit_{i}" for i in range(len(native.columns))])
        return nw.from_native(renamed.select(*names.values())), names


    def integer_keys(self, frame: Any, keys: Mapping[str, IntegerKey]) -> Any:
        """One ``select``, Spark SQL's integer ``div`` (truncating)."""
        import narwhals.stable.v2 as nw
        from pyspark.sql import functions as F

        native = frame.to_native()
        return nw.from_native(native.select(*[
            F.expr(keys[c].sql(f"`{c}`", div="div")).alias(c) if c in keys else F.col(f"`{c}`") for c in native.columns]))


def _require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise DataError(f"engine 'spark' needs pyspark, which is not installed: {INSTALL}") from None


def is_spark_frame(data: Any) -> bool:
    """Whether ``data`` is a PySpark DataFrame (classic or Spark Connect), without importing pyspark."""
    kind = type(data)
    return kind.__module__.startswith("pyspark.") and kind.__name__ == "DataFrame"


def _java_found() -> bool:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return True
    return shutil.which("java") is not None


def session() -> Any:
    """The active SparkSession, else a new one (master: ``$DPAUDIT_SPARK_MASTER``, else Spark's own
    configuration, else ``local[*]``). DataError when pyspark or Java is missing or Spark cannot start."""
    _require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if not _java_found():
        raise DataError("Spark needs Java (17 or newer) and none was found: install a JDK and set JAVA_HOME "
                        "or put java on PATH, or use the default engine (--engine duckdb)")
    builder = SparkSession.builder.appName("dpaudit").config("spark.ui.showConsoleProgress", "false")
    if not os.environ.get("SPARK_CONF_DIR"):  # the user's own log4j2 configuration wins
        quiet = Path(__file__).with_name("_spark_log4j2.properties")
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={quiet.as_uri()}")
    master = os.environ.get(MASTER_ENV, "").strip()
    if master:
        builder = builder.master(master)
    try:
        with warnings.catch_warnings():  # pyspark's import-time notice about pandas versions, not ours to print
            warnings.filterwarnings("ignore", message="PySpark does not yet fully support", category=FutureWarning)
            spark = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start, or the master refused the application
        raise DataError(f"cannot start Spark{f' with master {master!r}' if master else ''}: {_first_line(exc)}; "
                        f"check Java and the master URL (${MASTER_ENV} or spark.master)") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0].strip() if text else type(exc).__name__
    return line if len(line) <= 400 else line[:400] + "…"


@contextlib.contextmanager
def spark_errors(what: str) -> Iterator[None]:
    """Turn a Spark failure (a file Spark cannot parse, a column it cannot resolve, a lost executor)
    into a one-line DataError; dpaudit's own errors pass through."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        yield
    except (PySparkException, Py4JError) as exc:
        raise DataError(f"Spark failed while counting {what}: {_first_line(exc)}") from None


# DuckDB's column types (as the DuckDB reader types a CSV file) → Spark SQL types
_SPARK_TYPES = {
    "VARCHAR": "StringType", "BOOLEAN": "BooleanType", "TINYINT": "ByteType", "SMALLINT": "ShortType",
    "INTEGER": "IntegerType", "BIGINT": "LongType", "FLOAT": "FloatType", "DOUBLE": "DoubleType",
    "DATE": "DateType", "TIMESTAMP": "TimestampType",
}


def _spark_type(duckdb_type: str) -> Any:
    from pyspark.sql import types as T

    text = duckdb_type.upper()
    if text.startswith("DECIMAL("):
        precision, scale = (int(x) for x in text[len("DECIMAL("):-1].split(","))
        return T.DecimalType(precision, scale)
    if text in ("UTINYINT", "USMALLINT", "UINTEGER"):
        return T.LongType()
    if text in ("UBIGINT", "HUGEINT"):
        return T.DecimalType(38, 0)
    return getattr(T, _SPARK_TYPES.get(text, "StringType"))()  # TIME and the like: read as text


def read_file(path: Path, kinds: Mapping[str, str] | None = None) -> Any:
    """A PySpark DataFrame over the CSV/Parquet file at ``path``, typed as the DuckDB reader types it.

    The file is first opened with :func:`dpaudit.counting.files.open_file`, which refuses what it
    refuses (no such file, empty, malformed header or rows, not UTF-8) and gives each CSV column the
    type the schema and DuckDB's sniffer agree on (a declared text column stays text). Spark then
    reads the CSV with exactly those types and the sniffed dialect, failing on any value that does
    not parse (``mode=FAILFAST``) instead of counting it as missing; a Parquet file is read with its
    own types. The path must be readable by every executor (a shared file system on a cluster).
    """
    spark = session()
    frame, con = open_file(path, kinds)  # DataError for a path or file the DuckDB reader refuses
    try:
        relation = frame.to_native()
        columns, types = list(relation.columns), [str(t) for t in relation.types]
        parquet = path.name.lower().endswith((".parquet", ".pq"))
        dialect = None if parquet else con.execute(
            "SELECT Delimiter, Quote, Escape FROM sniff_csv(?)", [str(path)]).fetchall()[0]
    finally:
        con.close()
    location = str(path.resolve())
    with spark_errors(repr(str(path))):
        if parquet:
            return spark.read.parquet(location)
        from pyspark.sql import types as T

        schema = T.StructType([T.StructField(c, _spark_type(t), True) for c, t in zip(columns, types)])
        delimiter, quote, escape = (None if v in (None, "", "(empty)") else v for v in dialect)  # type: ignore[union-attr]
        quote = quote or '"'
        return spark.read.csv(location, schema=schema, header=True, enforceSchema=True, sep=delimiter or ",",
                              quote=quote, escape=escape or quote, mode="FAILFAST", multiLine=False,
                              encoding="UTF-8", dateFormat="yyyy-MM-dd")

