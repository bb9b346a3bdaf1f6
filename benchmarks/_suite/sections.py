"""The sections of docs/benchmarks.md: each runs its comparisons and returns a :class:`SectionResult`.

A section measures; it does not format. Everything the document prints is in the result (the
comparisons' raw repeat times, the checks, notes), so ``render`` can rebuild the document from the
JSON written beside it.
"""

from __future__ import annotations

import importlib.util
import os
import time
import traceback
from collections.abc import Callable

from . import adapters
from .config import REPO, SECTIONS, Config
from .context import FAILED, Context, SectionResult, _logged, log
from .section_references import references
from .section_repair import repair
from .timing import Comparison, load1, loadavg, machine


# ---------------------------------------------------------------------------------------------------
# 1. audit vs bare group-by
# ---------------------------------------------------------------------------------------------------
def fairness(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str]]:
    comps: list[Comparison] = []
    notes: list[str] = []
    adult = ctx.adult()
    if isinstance(adult, str):
        notes.append(adult)
    else:
        log("  Adult: audit vs DuckDB group-by")
        comps += _logged(adapters.fairness_adult(*adult, repeat=cfg.repeat_adult, warmup=cfg.warmup))
        log("  Adult: U_TC vs the paper's reference implementation")
        comps += _logged(adapters.paper_tc(*adult, repeat=cfg.repeat_adult, warmup=cfg.warmup,
                                           paper_code=cfg.paper_code))
    for rows in cfg.census_rows:
        ctx.census(rows)
        log(f"  census {rows:,} rows: audit vs DuckDB group-by, {cfg.repeats_for(rows)} rounds"
            + (", then peak RSS in fresh processes" if rows >= cfg.rss_rows else ""))
        found = _logged(adapters.fairness_census(rows, cfg.data_dir, repeat=cfg.repeats_for(rows), warmup=cfg.warmup,
                                                 seed=cfg.seed, rss=rows >= cfg.rss_rows))
        ctx.census_rows[rows] = found
        comps += found
    if cfg.frame_rows:
        log(f"  census {cfg.frame_rows:,} rows as in-memory frames")
        comps += _logged(adapters.fairness_frames(cfg.frame_rows, cfg.data_dir, repeat=cfg.repeat, warmup=cfg.warmup,
                                                  seed=cfg.seed))
    return comps, notes


# 2. vs fairlearn, scikit-learn and the paper's formulas: section_references.py; 3. U_R vs RC2: section_repair.py


# ---------------------------------------------------------------------------------------------------
# 4. MIA evaluation, 5. training, 6. scaling
# ---------------------------------------------------------------------------------------------------
def mia(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str]]:
    log(f"  M = {cfg.mia_models}, N+ = {cfg.mia_records:,}, n_boot 0 and {cfg.mia_boot}, {cfg.repeat_costly} rounds")
    comps = _logged(adapters.mia(cfg.mia_models, cfg.mia_records, (0, cfg.mia_boot), repeat=cfg.repeat_costly,
                                 warmup=cfg.warmup, seed=cfg.seed, rss=cfg.mia_rss))
    return comps, []


def train(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str]]:
    adult = ctx.adult()
    if isinstance(adult, str):
        return [], [adult]
    log(f"  M = {cfg.train_models}, N+ = {cfg.train_pool:,}, {cfg.repeat_costly} rounds")
    comps = _logged(adapters.train(cfg.train_models, cfg.train_pool, repeat=cfg.repeat_costly, warmup=cfg.warmup,
                                   seed=cfg.seed))
    return comps, []


def scaling(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str]]:
    comps: list[Comparison] = []
    notes: list[str] = []
    for rows in cfg.scaling_rows:
        if rows in ctx.census_rows:
            found = [Comparison.from_dict(c.to_dict()) for c in ctx.census_rows[rows]]
            for c in found:
                c.extra["from"] = "section 1"
            log(f"  census {rows:,} rows: measured in section 1")
        else:
            ctx.census(rows)
            found = _logged(adapters.fairness_census(rows, cfg.data_dir, repeat=cfg.repeats_for(rows),
                                                     warmup=cfg.warmup, seed=cfg.seed, rss=False))
        for c in found:
            c.extra["axis"] = "rows"
            c.extra["n"] = rows
        comps += found
    for models in cfg.scaling_models:
        log(f"  MIA evaluation, M = {models}, N+ = {cfg.scaling_records:,}")
        for c in _logged(adapters.mia(models, cfg.scaling_records, (0,), repeat=cfg.repeat, warmup=cfg.warmup,
                                      seed=cfg.seed, rss=False)):
            c.extra["axis"] = "models"
            c.extra["n"] = models
            comps.append(c)
    return comps, notes


def spark(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str]]:
    if importlib.util.find_spec("pyspark") is None:
        return [], ["not measured: pyspark is not installed (pip install -e '.[spark]'; Java 17+)"]
    comps: list[Comparison] = []
    adult = ctx.adult()
    if not isinstance(adult, str):
        log("  Adult on Spark (local mode)")
        comps += _logged(adapters.spark_adult(*adult, repeat=cfg.repeat, warmup=cfg.warmup))
    for rows in cfg.spark_rows:
        ctx.census(rows)
        log(f"  census {rows:,} rows on Spark (local mode)")
        comps += _logged(adapters.spark(rows, cfg.data_dir, repeat=cfg.repeats_for(rows), warmup=cfg.warmup,
                                        seed=cfg.seed))
    return comps, [adult] if isinstance(adult, str) else []


# ---------------------------------------------------------------------------------------------------
# 8. start-up
# ---------------------------------------------------------------------------------------------------
def startup(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str]]:
    if not os.environ.get("DPAUDIT_DATA"):  # the audit side reads Adult in each fresh process
        return [], ["not measured: the small audit reads Adult; set DPAUDIT_DATA to the shared datasets folder"]
    log(f"  dpaudit --help, the small exact audit, import dpaudit: fresh processes, {cfg.repeat_startup} rounds")
    return _logged(adapters.startup(repeat=cfg.repeat_startup, warmup=cfg.warmup)), []


RUNNERS: dict[str, Callable[[Config, Context], tuple[list[Comparison], list[str]]]] = {
    "fairness": fairness,
    "references": references,
    "repair": repair,
    "mia": mia,
    "train": train,
    "scaling": scaling,
    "spark": spark,
    "startup": startup,
}


def run_section(key: str, cfg: Config, ctx: Context) -> SectionResult:
    log(f"\n== {SECTIONS.index(key) + 1}. {key} ({cfg.mode})")
    env = machine(REPO)
    t0 = time.perf_counter()
    try:
        comps, notes = RUNNERS[key](cfg, ctx)
    except Exception as exc:  # one broken section must not lose the others' hours of timing
        log("".join(traceback.format_exception(exc)))
        comps, notes = [], [f"{FAILED} {type(exc).__name__}: {exc}"]
    seconds = time.perf_counter() - t0
    log(f"   {seconds:.1f} s, load {env['loadavg'][0] if env['loadavg'] else 0:.2f} → {load1():.2f}")
    return SectionResult(key, cfg.mode, comps, env, loadavg(), seconds, notes)
