"""Benchmark: exact U_R (ci, bag, set) against U_MI^TVD on the same data, in the same process.

The paper's U_R (a MaxSAT solve over tuple-level self-joins) is 10²–10³× slower than its other
measures. dpaudit solves every block from its count table, so the whole audit should stay within a
small factor of U_MI^TVD (target ≤ 5×). Workloads: the real Adult data (48,842 rows, from
``$DPAUDIT_DATA``) and the 10M-row synthetic Adult-like Parquet file of ``bench_fairness.py``; both
with the paper's four Adult criteria. Also the measure alone on the count tables (no counting).

Run: ``python benchmarks/bench_repair.py [--rows N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fairness as bf  # noqa: E402  (puts this tree's src/ first on sys.path)

import dpaudit  # noqa: E402
from dpaudit.measures import TVD, Repair  # noqa: E402


def best_of(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run(label: str, data, schema, repeat: int) -> None:
    crits = dpaudit.parse_criteria(bf.CRITERIA)
    tvd = best_of(lambda: dpaudit.audit(data, crits, measures=("tvd",), schema=schema), repeat)
    tables = dpaudit.count_tables(data, crits, schema)
    tvd_only = best_of(lambda: TVD().assess(tables, details=True), repeat)
    print(f"\n{label}: audit with U_MI^TVD {tvd:.3f} s (measure alone on the count tables {tvd_only * 1e3:.2f} ms)")
    print(f"  {'semantics':<9} {'audit s':>8} {'ratio to TVD audit':>19} {'measure alone ms':>17}   U_R (exact?)")
    for semantics in ("ci", "bag", "set"):
        t = best_of(lambda s=semantics: dpaudit.audit(data, crits, measures=("repair",), schema=schema, semantics=s),
                    repeat)
        alone = best_of(lambda s=semantics: Repair(semantics=s).assess(tables, details=True), repeat)
        res = dpaudit.audit(data, crits, measures=("repair",), schema=schema, semantics=semantics)
        rep = res["repair"]
        print(f"  {semantics:<9} {t:>8.3f} {t / tvd:>18.2f}x {alone * 1e3:>17.2f}   "
              f"{rep.value:,.1f} ({'exact' if rep.extras['exact'] else 'bounds'})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20240611)
    args = ap.parse_args()
    print(f"dpaudit from {Path(dpaudit.__file__).parent} | {os.cpu_count()} CPU(s) | "
          f"load average {os.getloadavg()[0]:.2f} | best of {args.repeat} after a warm-up")
    if os.environ.get("DPAUDIT_DATA"):
        frame, schema = dpaudit.datasets.load("adult")
        run("Adult (48,842 rows, pandas)", frame, schema, args.repeat)
    else:
        print("\nAdult skipped: set DPAUDIT_DATA to the shared datasets folder")
    path, _ = bf.dataset(args.rows, args.seed)
    run(f"synthetic Adult-like Parquet ({args.rows:,} rows)", str(path), bf.schema(), args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
