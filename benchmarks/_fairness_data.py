"""The data ``bench_fairness.py`` times on: the folder generated data goes to (outside the source tree),
the census-like Parquet file and the real Adult frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from _suite.config import REPO, default_data_dir

import dpaudit
from dpaudit import Schema


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
# the real Adult data
# --------------------------------------------------------------------------------------------------
def adult_data(frame: Any, sch: Schema | None) -> tuple[Any, Schema]:
    if frame is None:
        return dpaudit.datasets.load("adult")
    return frame, sch if sch is not None else dpaudit.datasets.info("adult").schema
