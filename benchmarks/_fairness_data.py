"""The data ``bench_fairness.py`` times on: the folder generated data goes to (outside the source tree),
the census-like Parquet file, the synthetic Adult-like table (used by ``bench_repair.py``) and the real
Adult frame."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _suite.config import REPO, default_data_dir

import dpaudit
from dpaudit import Binned, Categorical, Schema
from dpaudit._io import atomic_open


# --------------------------------------------------------------------------------------------------
# where generated data goes
# --------------------------------------------------------------------------------------------------
def data_dir_of(data_dir: str | Path | None) -> Path:
    """The folder for generated data (created), refusing one inside this repository."""
    folder = Path(data_dir).expanduser().resolve() if data_dir is not None else default_data_dir()
    if folder == REPO or REPO in folder.parents:
        raise SystemExit(f"--data-dir {folder} is inside the repository {REPO}; generated data stays out of the "
                         "source tree (default: $XDG_CACHE_HOME/dpaudit-bench or ~/.cache/dpaudit-bench)")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def census_file(rows: int, data_dir: str | Path | None = None, *, seed: int = 0,
                dependence: float = 0.5) -> tuple[Path, bool]:
    """The census-like Parquet file of ``rows`` rows (written once, then reused while its rows, seed
    and generator version, read from the Parquet metadata, match). Returns the path and whether it
    was reused. Same file name as ``benchmarks/_suite``'s, so both share the cache."""
    from dpaudit.datasets.synthetic import GENERATOR_VERSION, write_census

    folder = data_dir_of(data_dir)
    path = folder / f"census_n{rows}_d{dependence:g}_s{seed}_v{GENERATOR_VERSION}.parquet"
    want = {b"dpaudit.n_rows": str(rows).encode(), b"dpaudit.seed": str(seed).encode(),
            b"dpaudit.generator": f"census v{GENERATOR_VERSION}".encode()}
    if path.is_file():
        try:
            meta = pq.read_metadata(path).metadata or {}
            if all(meta.get(k) == v for k, v in want.items()):
                return path, True
        except (OSError, pa.ArrowInvalid):
            pass
    write_census(path, rows, dependence=dependence, seed=seed)
    return path, False


# --------------------------------------------------------------------------------------------------
# the synthetic Adult-like table (used by bench_repair.py)
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
HOURS_EDGES = (1, 20, 30, 40, 41, 50, 60, 100)  # Binned variant: 7 bins of hours-per-week
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


def schema(binned_hours: bool = False) -> Schema:
    """The declared schema of the synthetic Adult-like table."""
    return Schema({
        "sex": Categorical(SEX), "race": Categorical(RACE), "income": Categorical(INCOME),
        "education-num": Categorical(EDU),
        "hours-per-week": Binned(HOURS_EDGES) if binned_hours else Categorical(HOURS),
    })


# --------------------------------------------------------------------------------------------------
# the real Adult data
# --------------------------------------------------------------------------------------------------
def _adult(frame: Any, sch: Schema | None) -> tuple[Any, Schema]:
    if frame is None:
        return dpaudit.datasets.load("adult")
    return frame, sch if sch is not None else dpaudit.datasets.info("adult").schema
