"""Benchmark: exact U_R (ci, bag, set) against U_MI^TVD on the same data, in the same process.

The paper's U_R (a MaxSAT solve over tuple-level self-joins) is 10²–10³× slower than its other
measures. dpaudit solves every block from its count table, so the whole audit should stay within a
small factor of U_MI^TVD (target ≤ 5×). Workloads: the real Adult data (48,842 rows, from
``$DPAUDIT_DATA``) and a synthetic Adult-like Parquet file (``dataset`` below, 10M rows by default,
written once to ``bench_fairness.py``'s cache folder); both with the paper's four Adult criteria.
Also the measure alone on the count tables (no counting). Every time is the best of ``--repeat``
calls after one warm-up.

Run: ``python benchmarks/bench_repair.py [--rows N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _fairness_data import data_dir_of
from _suite.timing import interleaved

import dpaudit
from dpaudit import Categorical, Schema
from dpaudit._io import atomic_open
from dpaudit.measures import TVD, Repair

# --------------------------------------------------------------------------------------------------
# the synthetic Adult-like table (data_dir_of: bench_fairness's cache folder)
# --------------------------------------------------------------------------------------------------
GENERATOR_VERSION = "1"  # bump when the generator below changes, so cached files are regenerated
CHUNK_ROWS = 1_000_000  # rows generated and written per step (one Parquet row group each)
SEX = ("Male", "Female")
SEX_P = (0.669, 0.331)
RACE = ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other")
RACE_P = (0.854, 0.096, 0.032, 0.010, 0.008)
RACE_LOGIT = (0.0, -0.85, 0.05, -0.95, -1.2)  # log-odds shift of >50K by race, roughly Adult's gaps
INCOME = ("<=50K", ">50K")
EDU = tuple(range(1, 17))
EDU_P = np.array([0.002, 0.005, 0.010, 0.020, 0.016, 0.029, 0.036, 0.013,
                  0.323, 0.224, 0.042, 0.033, 0.164, 0.053, 0.018, 0.013])
EDU_P = EDU_P / EDU_P.sum()
EDU_RATE = np.array([0.01, 0.036, 0.048, 0.062, 0.053, 0.066, 0.051, 0.076,  # P(>50K | education-num)
                     0.16, 0.19, 0.261, 0.248, 0.415, 0.557, 0.734, 0.741])
HOURS = tuple(range(1, 100))
CRITERIA = ("education-num ⊥ income", "sex ⊥ income", "race ⊥ income", "sex ⊥ income | hours-per-week")


def _chunk(rows: int, seed: int, index: int) -> pa.Table:
    """One chunk of the synthetic Adult-like table; deterministic in (seed, index)."""
    rng = np.random.default_rng([seed, index])
    male = rng.random(rows) < SEX_P[0]
    race = rng.choice(len(RACE), size=rows, p=RACE_P)
    edu_code = rng.choice(len(EDU), size=rows, p=EDU_P)
    bell = rng.normal(np.where(male, 44.0, 35.0), 12.0)  # hours: a spike at 40, else a sex-dependent bell
    bell = np.where(rng.random(rows) < 0.5, np.round(bell / 5.0) * 5.0, np.round(bell))
    hours = np.where(rng.random(rows) < 0.45, 40.0, bell).clip(1, 99).astype(np.int64)
    logit = (np.log(EDU_RATE / (1 - EDU_RATE))[edu_code] + np.where(male, 0.45, -0.9)
             + np.asarray(RACE_LOGIT)[race] + 0.035 * (hours - 40))
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


def dataset(rows: int, seed: int, data_dir: str | Path | None = None) -> tuple[Path, bool]:
    """The synthetic Adult-like Parquet file (in the data folder), generated in 1M-row chunks unless a
    matching one exists. Returns the path and whether it was reused."""
    folder = data_dir_of(data_dir)
    path = folder / f"adult_synth_n{rows}_s{seed}.parquet"
    want = {b"dpaudit_bench_rows": str(rows).encode(), b"dpaudit_bench_seed": str(seed).encode(),
            b"dpaudit_bench_generator": GENERATOR_VERSION.encode()}
    if path.is_file():
        try:
            meta = pq.read_metadata(path)
            if meta.num_rows == rows and all((meta.metadata or {}).get(k) == v for k, v in want.items()):
                return path, True
        except (OSError, pa.ArrowInvalid):
            pass
    if rows <= 0:
        raise SystemExit("rows must be positive")
    with atomic_open(path, "wb") as handle:  # a temporary sibling, renamed onto path when complete
        writer = None
        try:
            for index, start in enumerate(range(0, rows, CHUNK_ROWS)):
                table = _chunk(min(CHUNK_ROWS, rows - start), seed, index)
                if writer is None:
                    writer = pq.ParquetWriter(handle, table.schema.with_metadata(want), compression="snappy")
                writer.write_table(table.replace_schema_metadata(want), row_group_size=CHUNK_ROWS)
        finally:
            if writer is not None:
                writer.close()
    return path, False


def schema() -> Schema:
    """The declared schema of the synthetic Adult-like table."""
    return Schema({"sex": Categorical(SEX), "race": Categorical(RACE), "income": Categorical(INCOME),
                   "education-num": Categorical(EDU), "hours-per-week": Categorical(HOURS)})


# --------------------------------------------------------------------------------------------------
# the benchmark
# --------------------------------------------------------------------------------------------------
def best_of(fn: Callable[[], Any], repeat: int) -> float:
    """The fastest of ``repeat`` timed calls after one warm-up."""
    return min(interleaved({"fn": fn}, repeat)["fn"])


def run(label: str, data: Any, sch: Schema, repeat: int) -> None:
    crits = dpaudit.parse_criteria(CRITERIA)
    tvd = best_of(lambda: dpaudit.audit(data, crits, measures=("tvd",), schema=sch, exact=True), repeat)
    tables = dpaudit.count_tables(data, crits, sch)
    tvd_only = best_of(lambda: TVD().assess(tables, details=True), repeat)
    print(f"\n{label}: audit with U_MI^TVD {tvd:.3f} s (measure alone on the count tables {tvd_only * 1e3:.2f} ms)")
    print(f"  {'semantics':<9} {'audit s':>8} {'ratio to TVD audit':>19} {'measure alone ms':>17}   U_R (exact?)")
    for semantics in ("ci", "bag", "set"):
        t = best_of(lambda s=semantics: dpaudit.audit(data, crits, measures=("repair",), schema=sch, semantics=s, exact=True),
                    repeat)
        alone = best_of(lambda s=semantics: Repair(semantics=s).assess(tables, details=True), repeat)
        res = dpaudit.audit(data, crits, measures=("repair",), schema=sch, semantics=semantics, exact=True)
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
        frame, sch = dpaudit.datasets.load("adult")
        run("Adult (48,842 rows, pandas)", frame, sch, args.repeat)
    else:
        print("\nAdult skipped: set DPAUDIT_DATA to the shared datasets folder")
    path, _ = dataset(args.rows, args.seed)
    run(f"synthetic Adult-like Parquet ({args.rows:,} rows)", str(path), schema(), args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
