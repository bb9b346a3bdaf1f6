"""Benchmark: ``write_census`` (the census-like IPUMS-CPS generator) vs writing a trivial numpy table.

Run from the repository root::

    python benchmarks/bench_census_generator.py                    # 10,000,000 rows, 1M-row chunks
    python benchmarks/bench_census_generator.py --rows 2000000 --repeat 3

What it does:

1. **Peak memory, in fresh processes.** The script re-invokes itself with ``subprocess`` to run
   ``dpaudit.datasets.synthetic.write_census(path, rows, chunk_rows=...)`` alone in a new Python
   process and reports that process's wall time, peak RSS (``resource.getrusage`` ``ru_maxrss``) and
   its RSS after the imports (before any row is generated), then the same for the baseline below.
   Writing is chunked, so the peak should not grow with ``--rows``: it is the imports plus about one
   chunk of columns, its Arrow copy and the Parquet writer's buffers.
2. **Time, in this process.** ``write_census`` and the baseline are run alternately (A B, then B A,
   ...) ``--repeat`` times each; the best times and their ratio are printed.
3. **Baseline.** A trivial numpy table with the same columns, dtypes, value ranges, row count and
   chunking (uniform random integers per column, e.g. HEALTH in 1..5, INCTOT in 0..199,999),
   written with the same ``pyarrow.parquet.ParquetWriter`` settings (one row group per chunk). The
   ratio is therefore the cost of the census model over the cost of producing random columns and
   writing Parquet.
4. **Check (untimed).** The file has ``--rows`` rows in ``ceil(rows / chunk)`` row groups, and its
   first rows equal ``census()``'s for the same seed.

Files are written to a temporary folder that is removed at the end (``--keep DIR`` keeps the census
file there instead).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _suite.timing import in_fresh_process, interleaved, ru_maxrss_mib

import dpaudit
from dpaudit.datasets import synthetic
from dpaudit.datasets.synthetic import CENSUS_COLUMNS, census, write_census

# (dtype, low, high inclusive) of each baseline column: the census table's ranges
BASELINE_COLUMNS = {
    "HEALTH": (np.int16, 1, 5),
    "INCTOT": (np.int32, 0, 199_999),
    "EDUC": (np.int16, 2, 125),
    "OCC": (np.int16, 0, 9800),
    "MARST": (np.int16, 1, 6),
    "AGE": (np.int16, 15, 85),
    "SEX": (np.int16, 1, 2),
    "RACE": (np.int16, 100, 830),
}
assert tuple(BASELINE_COLUMNS) == CENSUS_COLUMNS


def write_baseline(path: Path, rows: int, chunk_rows: int, seed: int = 0) -> Path:
    """The trivial table: uniform random integers per column, chunked, one row group per chunk."""
    rng = np.random.default_rng(seed)
    writer = None
    try:
        for start in range(0, rows, chunk_rows):
            size = min(chunk_rows, rows - start)
            table = pa.table({
                name: pa.array(rng.integers(low, high, size, endpoint=True, dtype=dtype))
                for name, (dtype, low, high) in BASELINE_COLUMNS.items()
            })
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table, row_group_size=len(table))
            del table
    finally:
        if writer is not None:
            writer.close()
    return path


def run_one(kind: str, path: Path, args: argparse.Namespace) -> None:
    if kind == "census":
        write_census(path, args.rows, dependence=args.dependence, seed=args.seed, chunk_rows=args.chunk_rows)
    else:
        write_baseline(path, args.rows, args.chunk_rows, seed=args.seed)


def child(kind: str, path: Path, args: argparse.Namespace) -> int:
    """Run one writer in this (fresh) process; print wall time and RSS as JSON."""
    rss_before = ru_maxrss_mib()  # after the imports
    t0 = time.perf_counter()
    run_one(kind, path, args)
    seconds = time.perf_counter() - t0
    print(json.dumps({"kind": kind, "seconds": seconds, "rss_after_imports_mib": rss_before,
                      "peak_rss_mib": ru_maxrss_mib(), "bytes": path.stat().st_size}))
    return 0


def fresh_writer(kind: str, path: Path, args: argparse.Namespace) -> dict:
    return in_fresh_process(__file__, "--_child", kind, "--_path", str(path), "--rows", str(args.rows),
                            "--chunk-rows", str(args.chunk_rows), "--seed", str(args.seed),
                            "--dependence", repr(args.dependence))


def check(path: Path, args: argparse.Namespace) -> None:
    meta = pq.read_metadata(path)
    assert meta.num_rows == args.rows, (meta.num_rows, args.rows)
    assert meta.num_row_groups == math.ceil(args.rows / args.chunk_rows), meta.num_row_groups
    head_rows = min(args.rows, 100_000)
    first = pq.ParquetFile(path).iter_batches(batch_size=head_rows, columns=list(CENSUS_COLUMNS))
    got = pa.Table.from_batches([next(first)]).to_pandas()
    expected, _ = census(head_rows, dependence=args.dependence, seed=args.seed)
    assert got.equals(expected), "the file's first rows differ from census()"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows to write (default 10,000,000)")
    ap.add_argument("--chunk-rows", type=int, default=1_000_000, help="rows per chunk (default 1,000,000)")
    ap.add_argument("--repeat", type=int, default=2, help="in-process timed runs of each writer (default 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dependence", type=float, default=0.5)
    ap.add_argument("--keep", type=Path, default=None, help="keep the census file in this folder")
    ap.add_argument("--_child", choices=("census", "numpy"), help=argparse.SUPPRESS)
    ap.add_argument("--_path", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        return child(args._child, args._path, args)
    if args.rows <= 0 or args.chunk_rows <= 0 or args.repeat <= 0:
        ap.error("--rows, --chunk-rows and --repeat must be positive")

    print(f"dpaudit {dpaudit.__version__} (generator census v{synthetic.GENERATOR_VERSION}) | "
          f"pyarrow {pa.__version__} | numpy {np.__version__} | Python {platform.python_version()} | "
          f"{os.cpu_count()} CPU(s) | load average {os.getloadavg()[0]:.2f}")
    print(f"dpaudit imported from {Path(dpaudit.__file__).parent}")
    print(f"rows {args.rows:,} in chunks of {args.chunk_rows:,}; dependence {args.dependence:g}, seed {args.seed}\n")

    with tempfile.TemporaryDirectory(prefix="bench_census_") as tmp:
        folder = Path(tmp)
        census_path = folder / "census.parquet"
        numpy_path = folder / "numpy.parquet"

        print("1. Fresh processes (wall time of the write; peak RSS = resource.getrusage ru_maxrss)")
        fresh = {kind: fresh_writer(kind, path, args)
                 for kind, path in (("census", census_path), ("numpy", numpy_path))}
        for kind, label in (("census", "write_census"), ("numpy", "numpy baseline")):
            r = fresh[kind]
            print(f"  {label:<15} {r['seconds']:7.2f} s   file {r['bytes'] / 2**20:7.1f} MiB   "
                  f"peak RSS {r['peak_rss_mib']:6.0f} MiB (after imports {r['rss_after_imports_mib']:.0f} MiB, "
                  f"+{r['peak_rss_mib'] - r['rss_after_imports_mib']:.0f} MiB while writing)")
        check(census_path, args)
        print("  check: row count, row groups and the first rows equal census() for the same seed: ok")

        print(f"\n2. This process, alternating, {args.repeat} run(s) each")
        times = interleaved({"census": lambda: run_one("census", census_path, args),
                             "numpy": lambda: run_one("numpy", numpy_path, args)}, args.repeat, warmup=0)
        best = {k: min(v) for k, v in times.items()}
        med = {k: statistics.median(v) for k, v in times.items()}
        size = {"census": census_path.stat().st_size, "numpy": numpy_path.stat().st_size}
        for kind, label in (("census", "write_census"), ("numpy", "numpy baseline")):
            print(f"  {label:<15} best {best[kind]:7.2f} s  median {med[kind]:7.2f} s   "
                  f"{args.rows / best[kind] / 1e6:5.2f} M rows/s   file {size[kind] / 2**20:.1f} MiB")
        print(f"  ratio write_census / baseline: {best['census'] / best['numpy']:.2f}x (best), "
              f"{med['census'] / med['numpy']:.2f}x (median)")
        print(f"  peak RSS of this process: {ru_maxrss_mib():,.0f} MiB")

        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            kept = args.keep / f"census_n{args.rows}_d{args.dependence:g}_s{args.seed}.parquet"
            os.replace(census_path, kept)
            print(f"\nkept {kept}")

    print(f"\nSummary: {args.rows:,} rows, write_census {fresh['census']['seconds']:.2f} s in a fresh process "
          f"(best in-process {best['census']:.2f} s, {best['census'] / best['numpy']:.2f}x the numpy baseline), "
          f"{fresh['census']['bytes'] / 2**20:.1f} MiB, peak RSS {fresh['census']['peak_rss_mib']:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
