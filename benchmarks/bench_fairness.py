"""Benchmark: ``dpaudit.audit`` on the paper's four Adult criteria vs a bare DuckDB group-by.

Run from the repository root::

    python benchmarks/bench_fairness.py                  # 10,000,000 rows, best of 3
    python benchmarks/bench_fairness.py --rows 1000000 --repeat 5

What it does (see benchmarks/README.md):

1. Generates a seeded synthetic Adult-like table (sex, race, income, education-num, hours-per-week,
   with real dependence of income on sex, race, education and hours) with numpy, written in chunks
   to ``benchmarks/_data/adult_synth_n<rows>_s<seed>.parquet`` (gitignored) with pyarrow, so memory
   stays bounded. The file is reused when one with the same row count, seed and generator version
   exists.
2. Times ``dpaudit.audit(path, criteria, measures=("tvd",), epsilon=None, schema=schema)`` for
   "education-num ⊥ income", "sex ⊥ income", "race ⊥ income", "sex ⊥ income | hours-per-week",
   with hours-per-week declared ``Categorical(range(1, 100))`` and, as a variant, ``Binned``.
3. Times the baseline in the same process: bare DuckDB ``SELECT cols, count(*) FROM
   read_parquet(path) GROUP BY cols`` for the same four column sets, fetched with ``.fetchnumpy()``.
4. Times the same audit on in-memory pandas and polars DataFrames against DuckDB run on that frame.
5. Reports the best of ``--repeat`` runs after one warm-up, the ratio audit / baseline (target for the
   Parquet path: <= 3x) and the peak RSS after each phase.

The benchmark also checks, outside the timed region, that the audit's per-criterion values equal
U_MI^TVD computed from the baseline's counts, so both sides provably do the same work.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# Benchmark the working tree this script lives in, whatever copy `pip install -e` points at.
_SRC = Path(__file__).resolve().parents[1] / "src"
if (_SRC / "dpaudit" / "__init__.py").is_file():
    sys.path.insert(0, str(_SRC))

import dpaudit  # noqa: E402
from dpaudit import Binned, Categorical, Schema  # noqa: E402
from dpaudit.measures.tvd import u_mi_tvd  # noqa: E402

GENERATOR_VERSION = "1"  # bump when the generator below changes, so cached files are regenerated
DATA_DIR = Path(__file__).resolve().parent / "_data"
CHUNK_ROWS = 1_000_000  # rows generated and written per step (one Parquet row group each)

SEX = ("Male", "Female")
SEX_P = (0.669, 0.331)
RACE = ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other")
RACE_P = (0.854, 0.096, 0.032, 0.010, 0.008)
# log-odds shift of >50K by race (relative to White), roughly the real Adult gaps
RACE_LOGIT = (0.0, -0.85, 0.05, -0.95, -1.2)
INCOME = ("<=50K", ">50K")
EDU = tuple(range(1, 17))
EDU_P = np.array([0.002, 0.005, 0.010, 0.020, 0.016, 0.029, 0.036, 0.013,
                  0.323, 0.224, 0.042, 0.033, 0.164, 0.053, 0.018, 0.013])
EDU_P = EDU_P / EDU_P.sum()
# P(>50K | education-num) in the real Adult data, used as the base rate of each education level
EDU_RATE = np.array([0.01, 0.036, 0.048, 0.062, 0.053, 0.066, 0.051, 0.076,
                     0.16, 0.19, 0.261, 0.248, 0.415, 0.557, 0.734, 0.741])
HOURS = tuple(range(1, 100))
HOURS_EDGES = (1, 20, 30, 40, 41, 50, 60, 100)  # Binned variant: 7 bins of hours-per-week

CRITERIA = (
    "education-num ⊥ income",
    "sex ⊥ income",
    "race ⊥ income",
    "sex ⊥ income | hours-per-week",
)
# the column set each criterion counts (A, P, O order, as dpaudit's CountTable)
COLUMN_SETS = (
    ("education-num", "income"),
    ("sex", "income"),
    ("race", "income"),
    ("hours-per-week", "sex", "income"),
)


# --------------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------------
def _chunk(rows: int, seed: int, index: int) -> pa.Table:
    """One chunk of the synthetic table; deterministic in (seed, index), independent of chunking
    of the other chunks."""
    rng = np.random.default_rng([seed, index])
    male = rng.random(rows) < SEX_P[0]
    race = rng.choice(len(RACE), size=rows, p=RACE_P)
    edu_code = rng.choice(len(EDU), size=rows, p=EDU_P)
    # hours: a spike at 40, otherwise a sex-dependent bell, clipped to 1..99 with heaping at 5s
    bell = rng.normal(np.where(male, 44.0, 35.0), 12.0)
    bell = np.where(rng.random(rows) < 0.5, np.round(bell / 5.0) * 5.0, np.round(bell))
    hours = np.where(rng.random(rows) < 0.45, 40.0, bell).clip(1, 99).astype(np.int64)
    base = np.log(EDU_RATE / (1 - EDU_RATE))[edu_code]
    logit = base + np.where(male, 0.45, -0.9) + np.asarray(RACE_LOGIT)[race] + 0.035 * (hours - 40)
    rich = rng.random(rows) < 1.0 / (1.0 + np.exp(-logit))

    def strings(codes: np.ndarray, labels: Sequence[str]) -> pa.Array:
        dictionary = pa.array(labels, type=pa.string())
        return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), dictionary).cast(pa.string())

    return pa.table({
        "sex": strings(np.where(male, 0, 1), SEX),
        "race": strings(race, RACE),
        "education-num": pa.array(np.asarray(EDU, dtype=np.int64)[edu_code]),
        "hours-per-week": pa.array(hours),
        "income": strings(rich.astype(np.int64), INCOME),
    })


def _metadata(rows: int, seed: int) -> dict[bytes, bytes]:
    return {b"dpaudit_bench_rows": str(rows).encode(), b"dpaudit_bench_seed": str(seed).encode(),
            b"dpaudit_bench_generator": GENERATOR_VERSION.encode()}


def dataset(rows: int, seed: int) -> tuple[Path, bool]:
    """Path of the synthetic Parquet file, generating it in chunks unless a matching one exists.

    Returns the path and whether it was reused.
    """
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / f"adult_synth_n{rows}_s{seed}.parquet"
    want = _metadata(rows, seed)
    if path.is_file():
        try:
            meta = pq.read_metadata(path)
            have = meta.metadata or {}
            if meta.num_rows == rows and all(have.get(k) == v for k, v in want.items()):
                return path, True
        except (OSError, pa.ArrowInvalid):
            pass
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    writer = None
    try:
        for index, start in enumerate(range(0, rows, CHUNK_ROWS)):
            table = _chunk(min(CHUNK_ROWS, rows - start), seed, index)
            if writer is None:
                schema = table.schema.with_metadata(want)
                writer = pq.ParquetWriter(tmp, schema, compression="snappy")
            writer.write_table(table.replace_schema_metadata(want), row_group_size=CHUNK_ROWS)
            del table
        if writer is None:  # rows == 0
            raise SystemExit("--rows must be positive")
        writer.close()
        writer = None
        tmp.replace(path)
    finally:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)
    return path, False


def schema(binned_hours: bool = False) -> Schema:
    hours = Binned(HOURS_EDGES) if binned_hours else Categorical(HOURS)
    return Schema({
        "sex": Categorical(SEX),
        "race": Categorical(RACE),
        "income": Categorical(INCOME),
        "education-num": Categorical(EDU),
        "hours-per-week": hours,
    })


# --------------------------------------------------------------------------------------------------
# the timed workloads
# --------------------------------------------------------------------------------------------------
def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _group_sql(source: str, cols: Sequence[str], binned_hours: bool = False) -> str:
    if binned_hours and "hours-per-week" in cols:
        edges = HOURS_EDGES
        arms = " ".join(f'WHEN "hours-per-week" < {b} THEN {i}' for i, b in enumerate(edges[1:]))
        bin_expr = f'CASE WHEN "hours-per-week" < {edges[0]} THEN -1 {arms} ELSE {len(edges) - 1} END'
        select = ", ".join(f"{bin_expr} AS {_q(c)}" if c == "hours-per-week" else _q(c) for c in cols)
        group = ", ".join(str(i + 1) for i in range(len(cols)))
    else:
        select = group = ", ".join(_q(c) for c in cols)
    return f"SELECT {select}, count(*) AS n FROM {source} GROUP BY {group}"


def duckdb_parquet(path: Path, binned_hours: bool = False) -> list[dict[str, np.ndarray]]:
    """Baseline: one bare DuckDB group-by count per criterion over the Parquet file."""
    source = "read_parquet('" + str(path).replace("'", "''") + "')"
    con = duckdb.connect()
    try:
        return [con.sql(_group_sql(source, cols, binned_hours)).fetchnumpy() for cols in COLUMN_SETS]
    finally:
        con.close()


def duckdb_frame(frame: Any) -> list[dict[str, np.ndarray]]:
    """Baseline: the same group-bys run by DuckDB directly on an in-memory pandas/polars frame."""
    con = duckdb.connect()
    try:
        con.register("frame", frame)
        return [con.sql(_group_sql("frame", cols)).fetchnumpy() for cols in COLUMN_SETS]
    finally:
        con.close()


def run_audit(data: Any, sch: Schema, measures: Sequence[str] = ("tvd",)) -> dpaudit.AuditResult:
    return dpaudit.audit(data, CRITERIA, measures=measures, epsilon=None, schema=sch)


def interleaved(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, list[float]]:
    """Wall times of ``repeat`` calls of each function, after one untimed warm-up call of each.

    The calls are interleaved (A B A B ..., order alternating per round) so that drift in the
    machine's load (other processes, CPU frequency, page cache) hits the audit and its baseline
    alike; the ratio of the best times is then a fair same-process comparison.
    """
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns)
    for r in range(repeat):
        for name in (order if r % 2 == 0 else order[::-1]):
            gc.collect()
            t0 = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


# --------------------------------------------------------------------------------------------------
# correctness check (untimed): the audit saw exactly the baseline's counts
# --------------------------------------------------------------------------------------------------
def _dense(result: dict[str, np.ndarray], cols: Sequence[str], sch: Schema) -> np.ndarray:
    dims = []
    index = []
    for c in cols:
        dom = sch[c]
        values = result[c]
        if isinstance(dom, Binned):
            codes = np.asarray(values, dtype=np.int64)
        else:
            lookup = {v: i for i, v in enumerate(dom.values)}
            codes = np.array([lookup[v.item() if hasattr(v, "item") else v] for v in values], dtype=np.int64)
        dims.append(dom.size)
        index.append(codes)
    flat = np.ravel_multi_index(tuple(index), tuple(dims))
    table = np.bincount(flat, weights=np.asarray(result["n"], dtype=np.float64), minlength=int(np.prod(dims)))
    table = np.rint(table).astype(np.int64).reshape(dims)
    return table if len(cols) == 3 else table[None]


def check(result: dpaudit.AuditResult, baseline: list[dict[str, np.ndarray]], sch: Schema, rows: int) -> None:
    assert result.n == rows, (result.n, rows)
    expected = [u_mi_tvd(_dense(b, cols, sch)) for b, cols in zip(baseline, COLUMN_SETS)]
    got = result["tvd"].per_criterion
    assert got is not None and all(math.isclose(g, e, rel_tol=1e-9, abs_tol=1e-15) for g, e in zip(got, expected)), (
        got, expected)


# --------------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------------
class Report:
    """Collects (workload, audit times, baseline times) and prints them."""

    def __init__(self, repeat: int) -> None:
        self.repeat = repeat
        self.rows: list[tuple[str, float, float, float, float, str]] = []

    def add(self, label: str, audit_t: list[float], base_t: list[float], note: str = "") -> float:
        a, b = min(audit_t), min(base_t)
        ma, mb = statistics.median(audit_t), statistics.median(base_t)
        self.rows.append((label, a, b, ma, mb, note))
        print(f"  {label:<40} audit {a:7.3f} s  baseline {b:7.3f} s  ratio {a / b:5.2f}x "
              f"(medians {ma:.3f} / {mb:.3f} s = {ma / mb:.2f}x)  peak RSS {peak_rss_mib():,.0f} MiB"
              + (f"  [{note}]" if note else ""), flush=True)
        return a / b

    def table(self) -> str:
        head = (f"{'workload':<40} {'audit s':>8} {'baseline s':>10} {'ratio':>7}   "
                f"{'median ratio':>12}")
        lines = [head, "-" * len(head)]
        for label, a, b, ma, mb, note in self.rows:
            lines.append(f"{label:<40} {a:>8.3f} {b:>10.3f} {a / b:>6.2f}x   {ma / mb:>11.2f}x"
                         + (f"  {note}" if note else ""))
        return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows of the synthetic table (default 10,000,000)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed repeats after one warm-up; the best is reported (default 3)")
    ap.add_argument("--seed", type=int, default=20240611, help="seed of the synthetic data")
    ap.add_argument("--frame-rows", type=int, default=None,
                    help="rows of the in-memory pandas/polars frames (default: --rows; the first N rows of the file)")
    ap.add_argument("--skip-frames", action="store_true", help="time only the Parquet path")
    ap.add_argument("--target", type=float, default=3.0, help="ratio target for the Parquet path (default 3)")
    args = ap.parse_args(argv)
    if args.rows <= 0 or args.repeat <= 0:
        ap.error("--rows and --repeat must be positive")

    print(f"dpaudit {dpaudit.__version__} | duckdb {duckdb.__version__} | pyarrow {pa.__version__} | "
          f"numpy {np.__version__} | Python {platform.python_version()} | {os.cpu_count()} CPU(s) | "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"dpaudit imported from {Path(dpaudit.__file__).parent}")
    t0 = time.perf_counter()
    path, reused = dataset(args.rows, args.seed)
    size_mib = path.stat().st_size / 2**20
    print(f"data: {path} ({args.rows:,} rows, {size_mib:,.1f} MiB, "
          f"{'reused' if reused else f'generated in {time.perf_counter() - t0:.1f} s'})")
    print(f"criteria: {' · '.join(CRITERIA)}")
    print(f"timing: best of {args.repeat} interleaved runs after 1 warm-up each; ratio = audit / baseline\n")
    report = Report(args.repeat)
    crits = dpaudit.parse_criteria(CRITERIA)

    print("Parquet file (baseline: bare DuckDB SELECT cols, count(*) FROM read_parquet(path) GROUP BY cols, .fetchnumpy())")
    sch = schema()
    t = interleaved({
        "audit": lambda: run_audit(str(path), sch),
        "audit_tc": lambda: run_audit(str(path), sch, ("tvd", "tc")),
        "count_tables": lambda: dpaudit.count_tables(str(path), crits, sch),
        "duckdb": lambda: duckdb_parquet(path),
    }, args.repeat)
    check(run_audit(str(path), sch), duckdb_parquet(path), sch, args.rows)
    parquet_ratio = report.add("parquet, hours Categorical(1..99)", t["audit"], t["duckdb"])
    report.add("  with U_TC too (tvd + tc, k=500)", t["audit_tc"], t["duckdb"])
    report.add("  of which count_tables()", t["count_tables"], t["duckdb"])

    sch_b = schema(binned_hours=True)
    t = interleaved({
        "audit": lambda: run_audit(str(path), sch_b),
        "duckdb": lambda: duckdb_parquet(path, binned_hours=True),
    }, args.repeat)
    check(run_audit(str(path), sch_b), duckdb_parquet(path, binned_hours=True), sch_b, args.rows)
    report.add(f"parquet, hours Binned({len(HOURS_EDGES) - 1} bins)", t["audit"], t["duckdb"],
               "baseline bins with a SQL CASE")
    print(f"  peak RSS after the Parquet path: {peak_rss_mib():,.0f} MiB")

    if not args.skip_frames:
        frame_rows = args.rows if args.frame_rows is None else min(args.frame_rows, args.rows)
        print(f"\nIn-memory frames of {frame_rows:,} rows, loaded as a user would (pd.read_parquet, "
              f"pl.read_parquet; baseline: the same GROUP BYs run by DuckDB on that frame)")

        def pandas_frame() -> Any:
            import pandas as pd

            return pd.read_parquet(path).iloc[:frame_rows]

        frames: list[tuple[str, Callable[[], Any]]] = [("pandas", pandas_frame)]
        try:
            import polars as pl

            frames.append(("polars", lambda: pl.read_parquet(path).head(frame_rows)))
        except ImportError:
            print("  polars is not installed; skipping it")
        for name, make in frames:
            frame = make()
            dtypes = ", ".join(f"{c}: {frame[c].dtype}" for c in ("sex", "hours-per-week"))
            t = interleaved({
                "audit": lambda frame=frame: run_audit(frame, sch),
                "duckdb": lambda frame=frame: duckdb_frame(frame),
            }, args.repeat)
            check(run_audit(frame, sch), duckdb_frame(frame), sch, frame_rows)
            report.add(f"{name} DataFrame, {frame_rows:,} rows", t["audit"], t["duckdb"], dtypes)
            del frame
            gc.collect()

    print(f"\nSummary: seconds are the best of {args.repeat}; ratio = audit / baseline "
          f"(median ratio from the medians)")
    print(report.table())
    verdict = "meets" if parquet_ratio <= args.target else "MISSES"
    print(f"\nParquet ratio {parquet_ratio:.2f}x {verdict} the target of <= {args.target:g}x.")
    print(f"Peak RSS of this process: {peak_rss_mib():,.0f} MiB (resource.getrusage ru_maxrss)")
    return 0 if parquet_ratio <= args.target else 1


if __name__ == "__main__":
    raise SystemExit(main())
