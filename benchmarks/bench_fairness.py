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
from _fairness_baseline import (
    KeptDuckDB,
    category_counts,
    category_frame,
    check,
    check_audit,
    factorize_counts,
)
from _fairness_data import adult_data, census_file
from _fairness_paper import PAPER_REPO, run_paper_tc, tc_misses
from _suite.timing import in_fresh_process, loadavg, peak_rss_mib, print_result, run_sides

import dpaudit
from dpaudit import Schema
from dpaudit._io import atomic_write_text, to_jsonable

TARGET_DUCKDB = 1.1  # audit / one kept-connection DuckDB query (census Parquet)
TARGET_FRAME = 1.2  # audit / pandas.factorize + np.bincount (in-memory frames)
TARGET_CODES = 2.0  # count_tables on a Categorical frame / np.bincount of its codes
TARGET_RSS_MIB = 2048  # peak RSS of the audit at 100M rows
DUCKDB = "baseline: DuckDB, one query, kept connection"
FACTORIZE = "baseline: pandas.factorize + np.bincount"
CODES = "np.bincount of category codes"


# --------------------------------------------------------------------------------------------------
# 1. Adult
# --------------------------------------------------------------------------------------------------
def run_adult(frame: Any = None, schema: Schema | None = None, *, repeat: int = 21, warmup: int = 1) -> dict[str, Any]:
    """Adult (pandas frame), the paper's four criteria, exact: audit (U_MI^TVD, U_TC, both) and
    ``count_tables`` vs ``pandas.factorize`` + ``np.bincount`` of the raw columns (the baseline), one
    DuckDB query on a kept connection with the frame registered once, and, on the same frame holding
    pandas Categorical columns, ``count_tables`` vs ``np.bincount`` of the category codes."""
    frame, sch = adult_data(frame, schema)
    criteria = dpaudit.datasets.preset("adult")
    crits = dpaudit.parse_criteria(criteria)
    kept = KeptDuckDB("adult", criteria, sch, frame)
    coded = category_frame(frame, criteria, sch)

    def audit(*measures: str) -> Callable[[], Any]:
        return lambda: dpaudit.audit(frame, criteria, measures=measures, exact=True, schema=sch)

    def verify() -> str:
        tables = dpaudit.count_tables(frame, crits, sch)
        for other in (kept(), category_counts(coded, criteria, sch)):
            check(tables, other, criteria, sch, len(frame))
        check(dpaudit.count_tables(coded, crits, sch), factorize_counts(frame, criteria, sch), criteria, sch, len(frame))
        return (check(tables, factorize_counts(frame, criteria, sch), criteria, sch, len(frame)) + " (factorize, "
                "DuckDB, category codes; count_tables on the Categorical frame too); "
                + check_audit(audit("tvd")(), tables, len(frame)))

    fns = {FACTORIZE: lambda: factorize_counts(frame, criteria, sch),
           "audit tvd": audit("tvd"), "audit tc": audit("tc"), "audit tvd+tc": audit("tvd", "tc"),
           "count_tables": lambda: dpaudit.count_tables(frame, crits, sch),
           "DuckDB: one query, kept connection": kept,
           CODES: lambda: category_counts(coded, criteria, sch),
           "count_tables (Categorical frame)": lambda: dpaudit.count_tables(coded, crits, sch)}
    try:
        result = run_sides("Adult (pandas frame)", len(frame), fns, FACTORIZE, repeat, warmup, verify, sql=kept.sql)
    finally:
        kept.close()
    codes = result["sides"][CODES]["median"]
    result["vs_codes"] = {side: result["sides"][side]["median"] / codes for side in ("count_tables (Categorical frame)",)}
    return result


# 2. U_TC vs the paper's reference implementation: run_paper_tc in _fairness_paper.py


# --------------------------------------------------------------------------------------------------
# 3. census-like Parquet
# --------------------------------------------------------------------------------------------------
def census_workload(path: Path) -> tuple[tuple[str, ...], Schema, str]:
    from dpaudit.datasets.synthetic import CENSUS_PRESET, CENSUS_SCHEMA

    return CENSUS_PRESET, CENSUS_SCHEMA, "read_parquet('" + str(path).replace("'", "''") + "')"


def run_census(rows: int, *, data_dir: str | Path | None = None, repeat: int = 3, warmup: int = 1, seed: int = 0,
               dependence: float = 0.5, rss: bool = True) -> dict[str, Any]:
    """The census-like Parquet file of ``rows`` rows, the paper's four IPUMS criteria, exact: audit
    (U_MI^TVD; U_MI^TVD + U_TC) and ``count_tables`` vs ONE hand-written DuckDB query on a kept
    connection (a group-by over the union of the criteria's columns, integer-division binning, then
    the marginals in numpy). With ``rss``, the peak RSS of the audit and of the baseline, each alone
    in a fresh process."""
    path, reused = census_file(rows, data_dir, seed=seed, dependence=dependence)
    criteria, sch, source = census_workload(path)
    crits = dpaudit.parse_criteria(criteria)
    kept = KeptDuckDB(source, criteria, sch)

    def audit(*measures: str) -> Callable[[], Any]:
        return lambda: dpaudit.audit(str(path), criteria, measures=measures, exact=True, schema=sch)

    def verify() -> str:
        tables = dpaudit.count_tables(str(path), crits, sch)
        return check(tables, kept(), criteria, sch, rows) + "; " + check_audit(audit("tvd")(), tables, rows)

    fns = {DUCKDB: kept, "audit tvd": audit("tvd"), "audit tvd+tc": audit("tvd", "tc"),
           "count_tables": lambda: dpaudit.count_tables(str(path), crits, sch)}
    try:
        result = run_sides("census (Parquet file)", rows, fns, DUCKDB, repeat, warmup, verify,
                           path=str(path), mib=path.stat().st_size / 2**20, reused=reused, sql=kept.sql)
    finally:
        kept.close()
    if rss:
        result["peak_rss_mib"] = {side: in_fresh_process(__file__, "--_child", side, "--_path", str(path))["peak_rss_mib"]
                                  for side in ("audit", "baseline")}
    return result


def child(kind: str, path: Path) -> int:
    """Run one side once in this (fresh) process and print its wall time and peak RSS as JSON."""
    criteria, sch, source = census_workload(path)
    after_imports = peak_rss_mib()
    t0 = time.perf_counter()
    if kind == "audit":
        dpaudit.audit(str(path), criteria, measures=("tvd", "tc"), exact=True, schema=sch)
    else:
        KeptDuckDB(source, criteria, sch)()
    print(json.dumps({"kind": kind, "seconds": time.perf_counter() - t0, "peak_rss_mib": peak_rss_mib(),
                      "after_imports_mib": after_imports}))
    return 0


# --------------------------------------------------------------------------------------------------
# 4. in-memory frames
# --------------------------------------------------------------------------------------------------
def run_frames(rows: int, *, data_dir: str | Path | None = None, repeat: int = 3, warmup: int = 1, seed: int = 0,
               dependence: float = 0.5) -> dict[str, Any]:
    """The census audit (U_MI^TVD) on in-memory pandas and polars frames of ``rows`` rows, loaded as a
    user would (``pd.read_parquet``, ``pl.read_parquet``), vs ``pandas.factorize`` + ``np.bincount`` of
    the raw columns (binned ones by integer division); on the pandas frame also one DuckDB query on a
    kept connection, and the frame with pandas Categorical columns vs ``np.bincount`` of their codes.
    Returns ``{"pandas": result, "polars": result}`` (polars if installed)."""
    import pandas as pd

    path, _ = census_file(rows, data_dir, seed=seed, dependence=dependence)
    criteria, sch, _source = census_workload(path)
    crits = dpaudit.parse_criteria(criteria)
    frames: dict[str, Any] = {"pandas": pd.read_parquet(path)}
    with contextlib.suppress(ImportError):
        import polars as pl

        frames["polars"] = pl.read_parquet(path)
    out = {}
    for name, frame in frames.items():
        fns: dict[str, Callable[[], Any]] = {
            FACTORIZE: lambda f=frame: factorize_counts(f, criteria, sch),
            "audit tvd": lambda f=frame: dpaudit.audit(f, criteria, measures=("tvd",), exact=True, schema=sch),
            "count_tables": lambda f=frame: dpaudit.count_tables(f, crits, sch)}
        kept, coded = None, None
        if name == "pandas":
            kept = KeptDuckDB("frame", criteria, sch, frame)
            coded = category_frame(frame, criteria, sch)
            fns.update({"DuckDB: one query, kept connection": kept,
                        CODES: lambda c=coded: category_counts(c, criteria, sch),
                        "count_tables (Categorical frame)": lambda c=coded: dpaudit.count_tables(c, crits, sch)})

        def verify(f: Any = frame, kept: Any = kept, coded: Any = coded) -> str:
            tables = dpaudit.count_tables(f, crits, sch)
            text = check(tables, factorize_counts(f, criteria, sch), criteria, sch, rows)
            if kept is not None:
                check(tables, kept(), criteria, sch, rows)
                check(dpaudit.count_tables(coded, crits, sch), category_counts(coded, criteria, sch), criteria, sch, rows)
            return text + "; " + check_audit(dpaudit.audit(f, criteria, schema=sch, exact=True, measures=("tvd",)), tables, rows)

        try:
            out[name] = run_sides(f"census, {name} frame", rows, fns, FACTORIZE, repeat, warmup, verify)
        finally:
            if kept is not None:
                kept.close()
        if kept is not None:
            out[name]["vs_codes"] = {"count_tables (Categorical frame)": out[name]["sides"][
                "count_tables (Categorical frame)"]["median"] / out[name]["sides"][CODES]["median"]}
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
                       if side in ("audit tvd", "count_tables") and s["ratio"] > TARGET_FRAME]
            misses += [f"Adult {side} {v:.2f}x the codes" for side, v in adult["vs_codes"].items() if v > TARGET_CODES]
            misses += tc_misses(paper)
    for rows in args.census_rows:
        r = run_census(rows, data_dir=args.data_dir, repeat=args.repeat or (5 if rows <= 10_000_000 else 3),
                       rss=not args.no_rss)
        print_result(r)
        results.append(r)
        misses += [f"census {rows:,} {side} {s['ratio']:.2f}x" for side, s in r["sides"].items()
                   if side in ("audit tvd", "count_tables") and s["ratio"] > TARGET_DUCKDB]
        if r.get("peak_rss_mib", {}).get("audit", 0) > TARGET_RSS_MIB:
            misses.append(f"census {rows:,} peak RSS {r['peak_rss_mib']['audit']:,.0f} MiB")
    if args.frame_rows:
        for r in run_frames(args.frame_rows, data_dir=args.data_dir, repeat=args.repeat or 3).values():
            print_result(r)
            results.append(r)
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(to_jsonable(results), indent=1, allow_nan=False))
    print(f"\nTargets: audit tvd and count_tables ≤ {TARGET_DUCKDB:g}x one kept DuckDB query (census), "
          f"≤ {TARGET_FRAME:g}x factorize + bincount (Adult), ≤ {TARGET_CODES:g}x bincount of category codes, U_TC no slower than the paper's code, "
          f"peak RSS ≤ {TARGET_RSS_MIB:,} MiB: " + ("all met" if not misses else "MISSED: " + "; ".join(misses)))
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
