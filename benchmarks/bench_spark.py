"""Benchmark: counting on Spark — ``dpaudit.audit(spark_df)`` vs the bare Spark group-by a user would
write by hand, and vs dpaudit's DuckDB path, in one local-mode SparkSession.

Run from the repository root (``pip install -e ".[spark]"``, Java 17+)::

    DPAUDIT_DATA=../shared/datasets python benchmarks/bench_spark.py                    # Adult + census 10M
    python benchmarks/bench_spark.py --skip-adult --census-rows 1000000 --repeat 5
    python benchmarks/bench_spark.py --master local[2] --json out.json

What it measures (``docs/engines.md`` has the measured numbers):

1. **Adult** (the real 48,842 rows; needs ``DPAUDIT_DATA``), the paper's four criteria, exact
   U_MI^TVD, on one cached Spark DataFrame: ``audit(spark_df)`` vs the **baseline**, ONE hand-written
   Spark job: ``df.groupBy(union of the criteria's columns).count().toArrow()``, then the marginals
   in numpy (:func:`spark_union_counts`); and dpaudit on the pandas frame (its
   in-memory path) and on a DuckDB relation, for scale.
2. **Census-like Parquet** (``dpaudit.datasets.synthetic.write_census``, cached in
   ``~/.cache/dpaudit-bench`` like ``bench_fairness.py``'s) at each ``--census-rows``, the paper's four
   IPUMS criteria, exact U_MI^TVD: ``audit(spark.read.parquet(path))``, ``audit(path, engine="spark")``
   (which also sniffs the file with DuckDB), ``audit(path)`` on DuckDB and one DuckDB query on a kept
   connection, vs the baseline: the same one Spark job on ``spark.read.parquet(path)``, the binned
   columns (INCTOT, AGE: equal-width edges) binned by ``floor((x − first) / width)``.

Timing: ``_suite.timing`` (as in ``bench_fairness.py``): every side interleaved in this process (a b b a …,
after one untimed warm-up each), **medians**, the ratio of the medians to the baseline's, the range
of the per-round ratios, and ``os.getloadavg()`` before and after. Both sides use the same
``local[N]`` session. An untimed check shows the Spark baseline, dpaudit on Spark and the DuckDB
query counted the same cells.

Importable::

    run_spark(rows, *, repeat=3, warmup=1, data_dir=None, seed=0, dependence=0.5, spark=None) -> dict
    run_spark_adult(frame=None, schema=None, *, repeat=7, warmup=1, spark=None) -> dict

Each returns ``{"name", "rows", "baseline", "sides": {side: {"seconds": [...], "median": s,
"ratio": median / baseline median, "round_ratios": [min, max]}}, "load": {"before", "after"},
"check": text, ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
import numpy as np
from _fairness_baseline import (
    KeptDuckDB,
    UnionCounts,
    check,
    check_audit,
    criterion_columns,
    dense_union,
    integer_division,
    union_columns,
)
from _fairness_data import adult_data, census_file
from _suite.timing import print_result, run_sides
from bench_fairness import census_workload

import dpaudit
from dpaudit import Binned, Schema
from dpaudit._io import atomic_write_text, to_jsonable

BASELINE = "baseline: one Spark groupBy().count() job"


def spark_session(master: str | None = None) -> Any:
    """The active SparkSession, else a local one for benchmarking (UI off, shuffle partitions = cores)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    master = master or os.environ.get("DPAUDIT_SPARK_MASTER") or "local[*]"
    cores = os.cpu_count() or 2
    spark = (SparkSession.builder.master(master).appName("dpaudit-bench-spark")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(cores)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_union_counts(df: Any, criteria: Sequence[str], sch: Schema) -> UnionCounts:
    """The baseline: what a user writes by hand — ONE ``df.groupBy(cols).count()`` over the union of
    the criteria's columns (binned columns by integer division, ``floor((x − first) / width)``),
    fetched as Arrow (``toArrow``), then ``pandas.factorize`` of each grouped column, one weighted
    ``np.bincount`` and each criterion's marginal in numpy."""
    import pandas as pd
    from pyspark.sql import functions as F

    columns = union_columns(criteria)
    keys = []
    for c in columns:
        dom = sch[c]
        if isinstance(dom, Binned):
            first, width = integer_division(dom)
            keys.append(F.floor((F.col(f"`{c}`") - F.lit(first)) / F.lit(width)).alias(c))
        else:
            keys.append(F.col(f"`{c}`"))
    table = df.groupBy(*keys).count().toArrow()
    codes, labels = [], {}
    for c in columns:
        code, uniq = pd.factorize(table.column(c).to_numpy())
        codes.append(code)
        labels[c] = np.asarray(uniq)
    weights = table.column("count").to_numpy().astype(np.float64)
    return dense_union(columns, codes, labels, weights, criterion_columns(criteria))


def run_spark(rows: int, *, repeat: int = 3, warmup: int = 1, data_dir: str | Path | None = None, seed: int = 0,
              dependence: float = 0.5, spark: Any = None) -> dict[str, Any]:
    """The census-like Parquet file of ``rows`` rows, the four IPUMS criteria, exact U_MI^TVD on Spark
    (``audit(spark_df)``, ``audit(path, engine="spark")``) and on DuckDB (``audit(path)``, the
    hand-written DuckDB group-bys) vs the hand-written Spark group-bys."""
    spark = spark if spark is not None else spark_session()
    path, reused = census_file(rows, data_dir, seed=seed, dependence=dependence)
    criteria, sch, source = census_workload(path)
    crits = dpaudit.parse_criteria(criteria)
    kept = KeptDuckDB(source, criteria, sch)
    location = str(path.resolve())

    def audit_spark_df() -> Any:
        return dpaudit.audit(spark.read.parquet(location), criteria, measures="tvd", schema=sch, exact=True)

    fns: dict[str, Callable[[], Any]] = {
        BASELINE: lambda: spark_union_counts(spark.read.parquet(location), criteria, sch),
        "audit(spark_df)": audit_spark_df,
        "audit(path, engine='spark')": lambda: dpaudit.audit(str(path), criteria, measures="tvd", schema=sch,
                                                              engine="spark", exact=True),
        "audit(path) on DuckDB": lambda: dpaudit.audit(str(path), criteria, measures="tvd", schema=sch, exact=True),
        "DuckDB: one query, kept connection": kept,
    }

    def verify() -> str:
        tables = dpaudit.count_tables(spark.read.parquet(location), crits, sch)
        check(tables, kept(), criteria, sch, rows)
        text = check(tables, spark_union_counts(spark.read.parquet(location), criteria, sch), criteria, sch, rows)
        return f"count_tables(spark_df) = Spark baseline = DuckDB query: {text}; {check_audit(audit_spark_df(), tables, rows)}"

    try:
        return run_sides(f"census (Parquet file) on Spark {spark.sparkContext.master}", rows, fns, BASELINE, repeat,
                         warmup, verify, path=str(path), mib=path.stat().st_size / 2**20, reused=reused)
    finally:
        kept.close()


def run_spark_adult(frame: Any = None, schema: Schema | None = None, *, repeat: int = 7, warmup: int = 1,
                    spark: Any = None) -> dict[str, Any]:
    """Adult, the paper's four criteria, exact U_MI^TVD: ``audit(spark_df)`` on a cached Spark DataFrame
    vs the hand-written Spark group-bys on it; dpaudit on the pandas frame and a DuckDB relation."""
    import duckdb
    import pyarrow as pa

    spark = spark if spark is not None else spark_session()
    frame, sch = adult_data(frame, schema)
    criteria = dpaudit.datasets.preset("adult")
    crits = dpaudit.parse_criteria(criteria)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    sdf = spark.createDataFrame(table).cache()
    sdf.count()  # materialise the cache: both sides then read the same in-memory partitions
    con = duckdb.connect()
    relation = con.from_arrow(table)
    try:
        fns: dict[str, Callable[[], Any]] = {
            BASELINE: lambda: spark_union_counts(sdf, criteria, sch),
            "audit(spark_df)": lambda: dpaudit.audit(sdf, criteria, measures="tvd", schema=sch, exact=True),
            "audit(pandas frame)": lambda: dpaudit.audit(frame, criteria, measures="tvd", schema=sch, exact=True),
            "audit(DuckDB relation)": lambda: dpaudit.audit(relation, criteria, measures="tvd", schema=sch, exact=True),
        }

        def verify() -> str:
            tables = dpaudit.count_tables(sdf, crits, sch)
            text = check(tables, spark_union_counts(sdf, criteria, sch), criteria, sch, len(frame))
            return f"count_tables(spark_df): {text}; {check_audit(fns['audit(spark_df)'](), tables, len(frame))}"

        return run_sides(f"Adult (cached Spark DataFrame) on Spark {spark.sparkContext.master}", len(frame), fns,
                       BASELINE, repeat, warmup, verify)
    finally:
        con.close()
        sdf.unpersist()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--census-rows", type=int, nargs="*", default=[10_000_000])
    parser.add_argument("--skip-adult", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds per side (census); Adult uses 2×+1")
    parser.add_argument("--master", default=None, help="Spark master (default $DPAUDIT_SPARK_MASTER or local[*])")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    args = parser.parse_args(argv)
    spark = spark_session(args.master)
    results = []
    if not args.skip_adult:
        results.append(run_spark_adult(repeat=2 * args.repeat + 1, spark=spark))
        print_result(results[-1])
    for rows in args.census_rows:
        results.append(run_spark(rows, repeat=args.repeat, data_dir=args.data_dir, spark=spark))
        print_result(results[-1])
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(to_jsonable(results), indent=2, allow_nan=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
