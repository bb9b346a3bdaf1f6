"""Benchmark: ``dpaudit.audit`` vs the bare DuckDB group-by a user would write by hand, and U_TC vs the
paper's reference code.

Run from the repository root::

    DPAUDIT_DATA=../shared/datasets python benchmarks/bench_fairness.py                 # Adult + census 10M
    DPAUDIT_DATA=../shared/datasets python benchmarks/bench_fairness.py --census-rows 10000000 100000000
    python benchmarks/bench_fairness.py --skip-adult --census-rows 1000000 --repeat 5
    python benchmarks/bench_fairness.py --paper-code DIR   # DIR holds the paper's tuple_contribution.py

What it measures (``benchmarks/README.md`` has the details and the measured numbers):

1. **Adult** (the real 48,842 rows, ``dpaudit.datasets.load("adult")``; needs ``DPAUDIT_DATA``), the
   paper's four criteria, exact: ``audit`` with U_MI^TVD, U_TC, both, and ``count_tables`` alone, vs
   the **baseline**: a fresh DuckDB connection running one ``SELECT cols, count(*) … GROUP BY`` per
   criterion on the frame, each fetched to numpy.
2. **U_TC on Adult vs the paper's reference implementation** (Vologdin, Tao, Gilad, PVLDB 19(9);
   ``tuple_contribution.py`` of github.com/makarenko1/Measures-for-estimating-unfairness-in-data-under-DP,
   loaded from ``--paper-code``/``$DPAUDIT_PAPER_CODE``, never copied here), timed as the paper's
   experiments time it: on a label-encoded frame, ``calculate(criteria, k=500)``; dpaudit on the raw
   frame and on the same encoded frame, both with the reference's observed-cell definition (the values
   are checked equal), and the reference on the raw frame too (its own ``encode_and_clean=True``).
   The target compares like with like (:data:`TC_PAIRS`): dpaudit's value alone on the encoded frame
   vs the reference on it, dpaudit on the raw frame vs the reference encoding it. Without the reference code, a plain
   pandas + numpy implementation of its formula stands in, and the output says so.
3. **Census-like Parquet** (``dpaudit.datasets.synthetic.write_census``, written once to the data
   folder) at each ``--census-rows``, the paper's four IPUMS criteria, vs the same baseline on
   ``read_parquet`` with the binned columns (INCTOT, AGE: equal-width edges) binned by integer
   division. The peak RSS of each side is measured in a fresh process.
4. ``--frame-rows N``: the same census audit on in-memory pandas and polars frames of N rows vs DuckDB
   on the frame (secondary).

Every comparison interleaves the sides in this one process (a b b a …, after one untimed warm-up
each), reports **medians**, the ratio of the medians and the range of the per-round ratios, and
records ``os.getloadavg()`` before and after. Untimed checks show both sides did the same work.

Generated data goes to ``$XDG_CACHE_HOME/dpaudit-bench`` (default ``~/.cache/dpaudit-bench``;
``--data-dir`` overrides; a folder inside this repository is refused), never into the source tree.

Importable (``benchmarks/run_all.py``)::

    run_adult(frame=None, schema=None, *, repeat=21, warmup=1) -> dict
    run_paper_tc(frame=None, schema=None, *, repeat=41, warmup=1, paper_code=None, k=500) -> dict
    run_census(rows, *, data_dir=None, repeat=3, warmup=1, seed=0, dependence=0.5, rss=True) -> dict
    run_frames(rows, *, data_dir=None, repeat=3, warmup=1, seed=0, dependence=0.5) -> dict

Each returns ``{"name", "rows", "baseline", "sides": {side: {"seconds": [...], "median": s,
"ratio": median / baseline median, "round_ratios": [min, max]}}, "load": {"before", "after"},
"check": text, ...}`` (``run_census`` adds ``"peak_rss_mib": {side: MiB}`` from fresh processes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
import duckdb
import numpy as np
import pyarrow as pa
from _fairness_baseline import check, criterion_columns, duckdb_counts, group_by_sql
from _fairness_data import adult_data, census_file
from _fairness_paper import PAPER_REPO, run_paper_tc, tc_misses
from _suite.timing import in_fresh_process, loadavg, peak_rss_mib, print_result, run_sides

import dpaudit
from dpaudit import Schema
from dpaudit._io import atomic_write_text, to_jsonable

TARGET_RATIO = 1.5  # audit / baseline, Adult and census
TARGET_RSS_MIB = 2048  # peak RSS of the audit at 100M rows


# --------------------------------------------------------------------------------------------------
# 1. Adult
# --------------------------------------------------------------------------------------------------
def run_adult(frame: Any = None, schema: Schema | None = None, *, repeat: int = 21, warmup: int = 1) -> dict[str, Any]:
    """Adult (pandas frame), the paper's four criteria, exact: audit (U_MI^TVD, U_TC, both) and
    ``count_tables`` vs the hand-written DuckDB group-bys on the frame."""
    frame, sch = adult_data(frame, schema)
    criteria = dpaudit.datasets.preset("adult")
    crits = dpaudit.parse_criteria(criteria)
    sqls = [group_by_sql("adult", cols, sch) for cols in criterion_columns(criteria)]

    def audit(*measures: str) -> Callable[[], Any]:
        return lambda: dpaudit.audit(frame, criteria, measures=measures, epsilon=None, schema=sch)

    fns = {"baseline: DuckDB group-by ×4": lambda: duckdb_counts("adult", sqls, frame),
           "audit tvd": audit("tvd"), "audit tc": audit("tc"), "audit tvd+tc": audit("tvd", "tc"),
           "count_tables": lambda: dpaudit.count_tables(frame, crits, sch)}
    return run_sides("Adult (pandas frame)", len(frame), fns, "baseline: DuckDB group-by ×4", repeat, warmup,
                lambda: check(audit("tvd")(), duckdb_counts("adult", sqls, frame), criteria, sch, len(frame)),
                sql=sqls)


# 2. U_TC vs the paper's reference implementation: run_paper_tc in _fairness_paper.py


# --------------------------------------------------------------------------------------------------
# 3. census-like Parquet
# --------------------------------------------------------------------------------------------------
def census_workload(path: Path) -> tuple[tuple[str, ...], Schema, str, list[str]]:
    from dpaudit.datasets.synthetic import CENSUS_PRESET, CENSUS_SCHEMA

    source = "read_parquet('" + str(path).replace("'", "''") + "')"
    sqls = [group_by_sql(source, cols, CENSUS_SCHEMA) for cols in criterion_columns(CENSUS_PRESET)]
    return CENSUS_PRESET, CENSUS_SCHEMA, source, sqls


def run_census(rows: int, *, data_dir: str | Path | None = None, repeat: int = 3, warmup: int = 1, seed: int = 0,
               dependence: float = 0.5, rss: bool = True) -> dict[str, Any]:
    """The census-like Parquet file of ``rows`` rows, the paper's four IPUMS criteria, exact: audit
    (U_MI^TVD; U_MI^TVD + U_TC) and ``count_tables`` vs the hand-written DuckDB group-bys on
    ``read_parquet`` (integer-division binning). With ``rss``, the peak RSS of the audit and of the
    baseline, each alone in a fresh process."""
    path, reused = census_file(rows, data_dir, seed=seed, dependence=dependence)
    criteria, sch, source, sqls = census_workload(path)
    crits = dpaudit.parse_criteria(criteria)

    def audit(*measures: str) -> Callable[[], Any]:
        return lambda: dpaudit.audit(str(path), criteria, measures=measures, epsilon=None, schema=sch)

    base = "baseline: DuckDB group-by ×4"
    fns = {base: lambda: duckdb_counts(source, sqls), "audit tvd": audit("tvd"), "audit tvd+tc": audit("tvd", "tc"),
           "count_tables": lambda: dpaudit.count_tables(str(path), crits, sch)}
    result = run_sides("census (Parquet file)", rows, fns, base, repeat, warmup,
                  lambda: check(audit("tvd")(), duckdb_counts(source, sqls), criteria, sch, rows),
                  path=str(path), mib=path.stat().st_size / 2**20, reused=reused, sql=sqls)
    if rss:
        result["peak_rss_mib"] = {side: in_fresh_process(__file__, "--_child", side, "--_path", str(path))["peak_rss_mib"]
                                  for side in ("audit", "baseline")}
    return result


def child(kind: str, path: Path) -> int:
    """Run one side once in this (fresh) process and print its wall time and peak RSS as JSON."""
    criteria, sch, source, sqls = census_workload(path)
    after_imports = peak_rss_mib()
    t0 = time.perf_counter()
    if kind == "audit":
        dpaudit.audit(str(path), criteria, measures=("tvd", "tc"), epsilon=None, schema=sch)
    else:
        duckdb_counts(source, sqls)
    print(json.dumps({"kind": kind, "seconds": time.perf_counter() - t0, "peak_rss_mib": peak_rss_mib(),
                      "after_imports_mib": after_imports}))
    return 0


# --------------------------------------------------------------------------------------------------
# 4. in-memory frames
# --------------------------------------------------------------------------------------------------
def run_frames(rows: int, *, data_dir: str | Path | None = None, repeat: int = 3, warmup: int = 1, seed: int = 0,
               dependence: float = 0.5) -> dict[str, Any]:
    """The census audit (U_MI^TVD) on in-memory pandas and polars frames of ``rows`` rows, loaded as a
    user would (``pd.read_parquet``, ``pl.read_parquet``), vs the hand-written group-bys run by DuckDB
    on the same frame. Returns ``{"pandas": result, "polars": result}`` (polars if installed)."""
    import pandas as pd

    path, _ = census_file(rows, data_dir, seed=seed, dependence=dependence)
    criteria, sch, _source, _ = census_workload(path)
    sqls = [group_by_sql("frame", cols, sch) for cols in criterion_columns(criteria)]
    frames: dict[str, Any] = {"pandas": pd.read_parquet(path)}
    with contextlib.suppress(ImportError):
        import polars as pl

        frames["polars"] = pl.read_parquet(path)
    out = {}
    base = "baseline: DuckDB group-by ×4 on the frame"
    for name, frame in frames.items():
        fns = {base: lambda f=frame: duckdb_counts("frame", sqls, f),
               "audit tvd": lambda f=frame: dpaudit.audit(f, criteria, measures=("tvd",), epsilon=None, schema=sch)}
        out[name] = run_sides(f"census, {name} frame", rows, fns, base, repeat, warmup,
                         lambda f=frame: check(dpaudit.audit(f, criteria, schema=sch), duckdb_counts("frame", sqls, f),
                                               criteria, sch, rows))
    return out


# --------------------------------------------------------------------------------------------------
# the command line (printing: _suite.timing.print_result)
# --------------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--census-rows", type=int, nargs="*", default=[10_000_000],
                    help="rows of each census Parquet file (default 10,000,000; e.g. 10000000 100000000)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per side (default: 21 on Adult, 41 for U_TC, 5 at ≤10M census rows, 3 above)")
    ap.add_argument("--frame-rows", type=int, default=0, help="also time in-memory pandas/polars census frames")
    ap.add_argument("--skip-adult", action="store_true", help="skip Adult and the U_TC comparison")
    ap.add_argument("--no-rss", action="store_true", help="skip the fresh-process peak RSS runs")
    ap.add_argument("--paper-code", default=None, help=f"folder with tuple_contribution.py from {PAPER_REPO}")
    ap.add_argument("--data-dir", default=None, help="generated data (default $XDG_CACHE_HOME/dpaudit-bench)")
    ap.add_argument("--json", type=Path, default=None, help="write every result (all repeats) to this file")
    ap.add_argument("--_child", choices=("audit", "baseline"), help=argparse.SUPPRESS)
    ap.add_argument("--_path", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        return child(args._child, args._path)

    print(f"dpaudit {dpaudit.__version__} from {Path(dpaudit.__file__).parent} | duckdb {duckdb.__version__} | "
          f"pyarrow {pa.__version__} | numpy {np.__version__} | Python {platform.python_version()} | "
          f"{os.cpu_count()} CPU(s) | load {loadavg()}")
    results: list[dict[str, Any]] = []
    misses: list[str] = []
    if not args.skip_adult:
        try:
            frame, sch = dpaudit.datasets.load("adult")
        except dpaudit.DPAuditError as exc:
            print(f"\nAdult skipped: {str(exc).splitlines()[0]}")
        else:
            adult = run_adult(frame, sch, repeat=args.repeat or 21)
            paper = run_paper_tc(frame, sch, repeat=args.repeat or 41, paper_code=args.paper_code)
            for r in (adult, paper):
                print_result(r)
                results.append(r)
            misses += [f"Adult {side} {s['ratio']:.2f}x" for side, s in adult["sides"].items()
                       if side.startswith("audit") and s["ratio"] > TARGET_RATIO]
            misses += tc_misses(paper)
    for rows in args.census_rows:
        r = run_census(rows, data_dir=args.data_dir, repeat=args.repeat or (5 if rows <= 10_000_000 else 3),
                       rss=not args.no_rss)
        print_result(r)
        results.append(r)
        misses += [f"census {rows:,} {side} {s['ratio']:.2f}x" for side, s in r["sides"].items()
                   if side.startswith("audit") and s["ratio"] > TARGET_RATIO]
        if r.get("peak_rss_mib", {}).get("audit", 0) > TARGET_RSS_MIB:
            misses.append(f"census {rows:,} peak RSS {r['peak_rss_mib']['audit']:,.0f} MiB")
    if args.frame_rows:
        for r in run_frames(args.frame_rows, data_dir=args.data_dir, repeat=args.repeat or 3).values():
            print_result(r)
            results.append(r)
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(to_jsonable(results), indent=1, allow_nan=False))
    print(f"\nTargets: audit ≤ {TARGET_RATIO:g}x the baseline, U_TC no slower than the paper's code, "
          f"peak RSS ≤ {TARGET_RSS_MIB:,} MiB: " + ("all met" if not misses else "MISSED: " + "; ".join(misses)))
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
