"""Sizes of the suite's three configurations and the folder its generated data is cached in."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The repository this suite lives in (benchmarks/_suite/config.py → the root).
REPO = Path(__file__).resolve().parents[2]

#: Section keys in document order, with the number each is also known by (``--only 3``).
SECTIONS = ("fairness", "references", "repair", "mia", "train", "scaling", "spark", "startup")

#: The targets of issue 14 ("Scale and speed") the summary table checks: a ratio is met when the median
#: ratio is at most the target. They apply to the full configuration's sizes.
TARGETS = {
    "census": 1.1,           # audit / one hand-written DuckDB query on a kept connection, census 10M and 100M (issue 25)
    "frame": 1.2,            # audit / pandas.factorize + np.bincount of the raw columns, Adult in memory (issue 25)
    "codes": 2.0,            # count_tables / np.bincount of the codes, a frame of Categorical columns (issue 25)
    "paper_tc": 1.0,         # dpaudit U_TC / the paper's reference implementation, Adult
    "spark": 1.2,            # audit on Spark / one hand-written Spark job, same session (issue 25)
    "rss_mib": 2048.0,       # peak RSS of the audit at 100M rows
    "mia": 15.0,             # evaluate without bootstrap / one np.sort, M = 256, N+ = 50,000
    "mia_boot": 40.0,        # evaluate with 200 bootstrap replicates / one np.sort
    "mia_rss": 4.0,          # peak RSS from loading the scores / the score matrix
    "help_s": 0.3,           # dpaudit --help as a fresh process, seconds (absolute; issue 25)
    "startup": 1.5,          # the small exact audit as a fresh process / python -c "import duckdb, pandas" (issue 25)
}
#: Targets on seconds, not ratios (shown "≤ 0.3 s").
SECONDS_TARGETS = ("help_s",)
#: Targets whose workload is the same in every configuration (only the rounds differ): judged in each.
EVERY_SIZE = ("help_s", "startup")


@dataclass(frozen=True)
class Config:
    """Everything that sizes a run. ``full`` is the default; ``quick`` tests the suite in about 2–3
    minutes; ``smoke`` is the test's few-second configuration."""

    mode: str
    repeat: int                                  # timed repeats per comparison (after one warm-up)
    repeat_large: int                            # repeats of the census runs at >= 10M rows (100M: ~5 s a call)
    repeat_costly: int                           # repeats of MIA evaluation (section 4) and training (section 5)
    repeat_adult: int                            # repeats of the Adult audit and U_TC (tens of ms a call)
    census_rows: tuple[int, ...]                 # section 1: the synthetic census Parquet
    rss_rows: int                                # section 1: peak RSS in fresh processes at >= this many rows
    frame_rows: int                              # section 1: in-memory pandas / polars census frames (0: skip)
    reference_census_rows: int                   # section 2: the census table as a pandas frame
    repair_sizes: tuple[int, ...]                # section 3: Adult sample sizes (then the whole of Adult)
    repair_limit: float                          # section 3: seconds RC2 may take per formula
    repair_max_clauses: int                      # section 3: larger formulas are not built
    mia_models: int                              # section 4
    mia_records: int
    mia_boot: int
    mia_rss: bool                                # section 4: ask run_eval for the peak RSS (fresh process)
    train_models: int                            # section 5
    train_pool: int
    scaling_rows: tuple[int, ...]                # section 6
    scaling_models: tuple[int, ...]
    scaling_records: int
    spark_rows: tuple[int, ...]                  # section 7 (when bench_spark.run_spark exists)
    repeat_startup: int = 15                     # section 8: rounds of fresh processes (after the warm-up)
    warmup: int = 1                              # untimed calls of each side before the timed rounds
    data_dir: Path = field(default_factory=lambda: default_data_dir())
    seed: int = 0
    paper_code: Path | None = field(default_factory=lambda: default_paper_code())

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    def with_repeat(self, n: int) -> Config:
        """Every repeat count set to ``n`` (``--repeat``)."""
        return self.replace(repeat=n, repeat_large=n, repeat_costly=n, repeat_adult=n, repeat_startup=n)

    def repeats_for(self, rows: int) -> int:
        return self.repeat_large if rows >= 10_000_000 else self.repeat


def default_data_dir() -> Path:
    """``$XDG_CACHE_HOME/dpaudit-bench``, else ``~/.cache/dpaudit-bench``: outside the source tree."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dpaudit-bench"


def default_paper_code() -> Path | None:
    """The folder holding the paper's ``tuple_contribution.py`` for the U_TC comparison:
    ``$DPAUDIT_PAPER_CODE``, else ``<cache folder>/paper-code`` if it holds the file, else None (then
    ``bench_fairness.run_paper_tc`` times a plain pandas stand-in of the formula and says so)."""
    env = os.environ.get("DPAUDIT_PAPER_CODE")
    if env:
        return Path(env).expanduser()
    folder = default_data_dir() / "paper-code"
    return folder if (folder / "tuple_contribution.py").is_file() else None


# Full run (the default, about 15–20 minutes on 2 shared cores; measured: 14 min, then 2.5 min for
# Spark): a 100M-row audit call takes about 5 s, so the census runs at >= 10M rows get 5 rounds; MIA
# evaluation at M = 256, N+ = 50,000 (1–3 s a call) and training 32 models (the plain loop about 1 s
# a model) get 3; RC2 formulas that take over 5 s get 3; everything else 7, the Adult audit
# (milliseconds) 21.
FULL = Config(
    mode="full",
    repeat=7,
    repeat_large=5,
    repeat_costly=3,
    repeat_adult=21,
    census_rows=(10_000_000, 100_000_000),
    rss_rows=10_000_000,
    frame_rows=1_000_000,
    reference_census_rows=1_000_000,
    repair_sizes=(25, 50, 100, 200, 400, 800, 1_600, 3_200, 6_400, 12_800, 25_600),
    repair_limit=60.0,
    repair_max_clauses=2_000_000,               # pysat holds the parsed formula in Python lists: ~1 GB at 2M
    mia_models=256,
    mia_records=50_000,
    mia_boot=200,
    mia_rss=True,
    train_models=32,
    train_pool=20_000,
    scaling_rows=(10_000, 100_000, 1_000_000, 10_000_000, 100_000_000),
    scaling_models=(16, 32, 64, 128, 256, 512, 1_024),
    scaling_records=10_000,
    spark_rows=(1_000_000, 10_000_000),
)

QUICK = FULL.replace(
    mode="quick",
    repeat=3,
    repeat_large=3,
    repeat_costly=3,
    repeat_adult=5,
    census_rows=(100_000, 1_000_000),
    rss_rows=1_000_000,
    frame_rows=100_000,
    reference_census_rows=100_000,
    repair_sizes=(25, 50, 100, 200),
    repair_limit=10.0,
    repair_max_clauses=1_000_000,
    mia_models=64,
    mia_records=5_000,
    mia_boot=50,
    mia_rss=True,
    train_models=8,
    train_pool=2_000,
    scaling_rows=(10_000, 100_000, 1_000_000),
    scaling_models=(16, 64, 256),
    scaling_records=2_000,
    spark_rows=(100_000,),
    repeat_startup=5,
)

SMOKE = FULL.replace(
    mode="smoke",
    repeat=1,
    warmup=0,
    repeat_large=1,
    repeat_costly=1,
    repeat_adult=1,
    census_rows=(10_000,),
    rss_rows=10**12,
    frame_rows=0,
    reference_census_rows=10_000,
    repair_sizes=(25,),
    repair_limit=5.0,
    repair_max_clauses=100_000,
    mia_models=16,
    mia_records=300,
    mia_boot=5,
    mia_rss=False,
    train_models=6,
    train_pool=400,
    scaling_rows=(10_000, 20_000),
    scaling_models=(16, 32),
    scaling_records=300,
    spark_rows=(10_000,),
    repeat_startup=1,
)

PRESETS = {"full": FULL, "quick": QUICK, "smoke": SMOKE}


def inside_repo(path: Path) -> bool:
    """Whether ``path`` lies inside this repository's working tree (where generated data must not go)."""
    try:
        path.resolve().relative_to(REPO)
    except ValueError:
        return False
    return True
