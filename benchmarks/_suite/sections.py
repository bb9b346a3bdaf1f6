"""The sections of docs/benchmarks.md: each runs its comparisons and returns a :class:`SectionResult`.

A section measures; it does not format. Everything the document prints is in the result (the
comparisons' raw repeat times, the checks, notes), so ``render`` can rebuild the document from the
JSON written beside it.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import adapters
from . import references as ref
from .config import REPO, Config
from .timing import Comparison, compare, load1, machine

dpaudit = adapters.dpaudit

#: How a section that raised is marked in its notes (run_all.py then exits with status 1).
FAILED = "section failed:"

TITLES = {
    "fairness": "1. Audit vs a bare DuckDB group-by",
    "references": "2. Audit vs what users run today",
    "repair": "3. Exact U_R vs RC2 on the paper's tuple-level WCNF",
    "mia": "4. MIA evaluation vs one sort of the scores",
    "train": "5. Training the models vs a plain scikit-learn loop",
    "scaling": "6. Scaling",
    "spark": "7. The audit on Spark (local mode) vs the bare Spark group-by",
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class SectionResult:
    key: str
    mode: str
    comparisons: list[Comparison]
    env: dict[str, Any]
    load_end: list[float]
    seconds: float
    notes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["comparisons"] = [c.to_dict() for c in self.comparisons]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SectionResult:
        fields = dict(data)
        fields["comparisons"] = [Comparison.from_dict(c) for c in fields["comparisons"]]
        return cls(**fields)


class Context:
    """What sections share within one run: the Adult frame, the census files, section 1's census rows."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self._adult: tuple[Any, Any] | str | None = None
        self.census_rows: dict[int, list[Comparison]] = {}

    def adult(self) -> tuple[Any, Any] | str:
        if self._adult is None:
            self._adult = adapters.adult()
        return self._adult

    def census(self, rows: int) -> Path:
        t0 = time.perf_counter()
        path, reused = adapters.census_file(rows, self.cfg.data_dir, seed=self.cfg.seed)
        log(f"  census data {rows:,} rows: {path} "
            + ("(reused)" if reused else f"(generated in {time.perf_counter() - t0:.1f} s)"))
        return path


def _logged(comps: list[Comparison]) -> list[Comparison]:
    for c in comps:
        log(f"    {c.workload}, {c.size}: {c.a_name}: {c.ratio:.3g}× ({_median(c.a):.4g} s vs "
            f"{_median(c.b):.4g} s, {c.b_name})")
    return comps


def _median(values: list[float]) -> float:
    from .timing import median

    return median(values)


# ---------------------------------------------------------------------------------------------------
# 1. audit vs bare group-by
# ---------------------------------------------------------------------------------------------------
def fairness(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str], list[str]]:
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
    sources = ["benchmarks/bench_fairness.py (run_adult, run_paper_tc, run_census, run_frames), imported by "
               "_suite/adapters.py."]
    return comps, notes, sources


# ---------------------------------------------------------------------------------------------------
# 2. vs fairlearn, scikit-learn and the paper's formulas in plain pandas
# ---------------------------------------------------------------------------------------------------
def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def _reference_rows(name: str, size: str, frame: Any, schema: Any, criteria: tuple[str, ...], repeat: int,
                    warmup: int, *, fairlearn: tuple[str, Any] | None) -> list[Comparison]:
    crits = [ref.criterion_columns(c) for c in criteria]
    columns = sorted({c for side in crits for cols in side for c in cols})
    bins = ref.integer_bins(schema, columns)
    exact = dpaudit.audit(frame, criteria, measures=("tvd", "tc"), epsilon=None, schema=schema)
    tvd_exact = exact["tvd"].per_criterion
    tc_exact = exact["tc"].per_criterion
    mi_exact = [b.mi_nats for b in exact["tvd"].details.baseline]

    def audit(measures: tuple[str, ...], which: tuple[str, ...] = criteria) -> Callable[[], Any]:
        return lambda: dpaudit.audit(frame, which, measures=measures, epsilon=None, schema=schema)

    out: list[Comparison] = []

    def run(label: str, a_name: str, a: Callable[[], Any], b: Callable[[], list[float]], check: Callable[[list[float]], str],
            n_crit: int) -> None:
        log(f"  {name}: {label}")
        text = check(b())
        comp = compare(f"{name}, {n_crit} criteria", size, a_name, a, label, b, repeat, warmup=warmup, check=text,
                       extra={"criteria": n_crit})
        log(f"    {comp.ratio:.3g}× ({_median(comp.a):.4g} s vs {_median(comp.b):.4g} s)")
        out.append(comp)

    def equal(expected: list[float], what: str) -> Callable[[list[float]], str]:
        def check(got: list[float]) -> str:
            worst = max(_rel(g, e) for g, e in zip(got, expected))
            if worst > 1e-9:
                raise AssertionError(f"{name}: {what} differs from dpaudit's exact value by {worst:.2e} (relative)")
            return f"{what} = dpaudit's exact values (rel. diff ≤ {max(worst, 1e-16):.0e})"
        return check

    if fairlearn is not None:
        outcome, positive = fairlearn
        simple = tuple(c for c, (p, o, a) in zip(criteria, crits) if not a and o == [outcome])
        if simple:
            run("fairlearn demographic_parity_difference", "audit, U_MI^TVD, exact", audit(("tvd",), simple),
                lambda: [ref.demographic_parity(frame, ref.criterion_columns(c)[0], outcome, positive) for c in simple],
                lambda got: "a different quantity on the same columns (selection-rate gap, no conditioning)",
                len(simple))
    run("scikit-learn mutual_info_score", "audit, U_MI^TVD, exact", audit(("tvd",)),
        lambda: [ref.mutual_information(frame, p, o, a, bins=bins) for p, o, a in crits],
        equal(mi_exact, "I(P;O|A) in nats"), len(criteria))
    run("U_MI^TVD in plain pandas", "audit, U_MI^TVD, exact", audit(("tvd",)),
        lambda: [ref.tvd(frame, p, o, a, bins=bins) for p, o, a in crits], equal(list(tvd_exact), "U_MI^TVD"),
        len(criteria))
    run("U_TC (k = 500) in plain pandas", "audit, U_TC, exact", audit(("tc",)),
        lambda: [ref.tc(frame, p, o, a, bins=bins) for p, o, a in crits], equal(list(tc_exact), "U_TC"),
        len(criteria))
    return out


def references(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str], list[str]]:
    import pandas as pd

    comps: list[Comparison] = []
    notes: list[str] = []
    try:
        import fairlearn  # noqa: F401

        have_fairlearn = True
    except ImportError:
        have_fairlearn = False
        notes.append("fairlearn is not installed (pip install fairlearn): its rows are missing")
    adult = ctx.adult()
    if isinstance(adult, str):
        notes.append(adult)
    else:
        frame, schema = adult
        comps += _reference_rows("Adult", f"{len(frame):,}", frame, schema, dpaudit.datasets.preset("adult"),
                                 cfg.repeat, cfg.warmup, fairlearn=("income", ">50K") if have_fairlearn else None)
    from dpaudit.datasets.synthetic import CENSUS_PRESET, CENSUS_SCHEMA

    rows = cfg.reference_census_rows
    frame = pd.read_parquet(ctx.census(rows))
    comps += _reference_rows("census", f"{rows:,}", frame, CENSUS_SCHEMA, CENSUS_PRESET, cfg.repeat, cfg.warmup,
                             fairlearn=None)
    notes.append("fairlearn needs a binary outcome: the census criteria (INCTOT, OCC, MARST) have none, and "
                 "fairlearn cannot condition on A, so it is compared on Adult's three unconditional criteria only")
    sources = ["baselines: _suite/references.py (plain pandas, scikit-learn, fairlearn); their equality with "
               "dpaudit is tested in tests/test_bench_references.py"]
    return comps, notes, sources


# ---------------------------------------------------------------------------------------------------
# 3. exact U_R vs RC2 on the tuple-level WCNF
# ---------------------------------------------------------------------------------------------------
def rc2_tuple_level(data: Any, criteria: tuple[str, ...], schema: Any, semantics: str, limit: float,
                    max_clauses: int) -> dict[str, Any]:
    """The paper's pipeline, complete: ``dpaudit.repair_wcnf`` writes the tuple-level WCNF, pysat
    parses it, RC2 solves it (interrupted after ``limit`` seconds)."""
    from pysat.examples.rc2 import RC2
    from pysat.formula import WCNF

    t0 = time.perf_counter()
    text = dpaudit.repair_wcnf(data, criteria, schema=schema, semantics=semantics, max_clauses=max_clauses)
    wcnf = WCNF(from_string=text)
    t1 = time.perf_counter()
    rc2 = RC2(wcnf, solver="g3")
    model = importlib.import_module("bench_repair_solvers").compute_within(rc2, limit)
    t2 = time.perf_counter()
    cost = int(rc2.cost)
    rc2.delete()
    return {"finished": model is not None, "cost": cost, "encode": t1 - t0, "solve": t2 - t1,
            "clauses": len(wcnf.hard) + len(wcnf.soft), "variables": int(wcnf.nv)}


def repair(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str], list[str]]:
    comps: list[Comparison] = []
    notes: list[str] = []
    adult = ctx.adult()
    if isinstance(adult, str):
        return comps, [adult], []
    frame, schema = adult
    criteria = dpaudit.datasets.preset("adult")
    sizes = sorted({min(n, len(frame)) for n in (*cfg.repair_sizes, len(frame))})
    for semantics in ("bag", "set"):
        for n in sizes:
            sample = frame if n >= len(frame) else frame.sample(n=n, random_state=cfg.seed)
            size = f"{n:,}" + (" (all)" if n >= len(frame) else "")
            workload = f"Adult sample, {semantics}"
            exact = dpaudit.audit(sample, criteria, measures=("repair",), epsilon=None, schema=schema,
                                  semantics=semantics)["repair"]
            try:
                first = rc2_tuple_level(sample, criteria, schema, semantics, cfg.repair_limit, cfg.repair_max_clauses)
            except dpaudit.DPAuditError as exc:
                clauses = str(exc).split(" clauses")[0].rsplit("have ", 1)[-1]
                comps.append(Comparison(workload, size, "audit, U_R exact", "RC2, tuple-level WCNF",
                                        status=f"not built: {clauses} clauses > {cfg.repair_max_clauses:,}",
                                        extra={"value": exact.value}))
                log(f"  {semantics} n={n:,}: formula above {cfg.repair_max_clauses:,} clauses; larger samples skipped")
                break
            if not first["finished"]:
                comps.append(Comparison(workload, size, "audit, U_R exact", "RC2, tuple-level WCNF",
                                        status=f"RC2 unfinished after {cfg.repair_limit:g} s",
                                        extra={"clauses": first["clauses"], "value": exact.value}))
                log(f"  {semantics} n={n:,}: RC2 past {cfg.repair_limit:g} s; larger samples skipped")
                break
            if first["cost"] != round(exact.value):
                raise AssertionError(f"RC2 optimum {first['cost']} != dpaudit's exact U_R {exact.value} "
                                     f"({semantics}, n = {n})")
            runs: list[dict[str, Any]] = []

            def baseline(sample: Any = sample, semantics: str = semantics, runs: list[dict[str, Any]] = runs) -> None:
                runs.append(rc2_tuple_level(sample, criteria, schema, semantics, cfg.repair_limit,
                                            cfg.repair_max_clauses))

            comp = compare(workload, size, "audit, U_R exact",
                           lambda sample=sample, semantics=semantics: dpaudit.audit(
                               sample, criteria, measures=("repair",), epsilon=None, schema=schema, semantics=semantics),
                           "RC2, tuple-level WCNF", baseline,
                           cfg.repeat if first["encode"] + first["solve"] < 5 else cfg.repeat_costly, warmup=0,
                           check=f"RC2 optimum = dpaudit's exact U_R = {first['cost']:,}",
                           extra={"clauses": first["clauses"], "variables": first["variables"], "value": first["cost"]})
            comp.extra["encode"] = _median([r["encode"] for r in runs])
            comp.extra["solve"] = _median([r["solve"] for r in runs])
            if not all(r["finished"] for r in runs):
                comp.status = f"RC2 unfinished after {cfg.repair_limit:g} s in a timed run"
            comps.append(comp)
            log(f"  {semantics} n={n:,}: {comp.ratio or float('nan'):.3g}× ({first['clauses']:,} clauses)")
    solve_rc2 = adapters.rc2_compressed()
    if solve_rc2 is None:
        notes.append("bench_repair_solvers.solve_rc2 could not be imported: the compressed-formulation row is missing")
    else:
        comps.append(_compressed(frame, schema, criteria, cfg, solve_rc2))
    return comps, notes, ["baseline: rc2_tuple_level in _suite/sections.py (dpaudit.repair_wcnf + pysat RC2); "
                          "compressed formulation: bench_repair_solvers.solve_rc2 (imported)"]


def _compressed(frame: Any, schema: Any, criteria: tuple[str, ...], cfg: Config,
                solve_rc2: Callable[[Any, float], dict[str, Any]]) -> Comparison:
    """U_R (bag) on the whole of Adult: dpaudit's exact solver vs RC2 on the compressed per-block formulation,
    both on the same count tables (counting excluded on both sides)."""
    from dpaudit.measures.repair import u_r

    tables = dpaudit.count_tables(frame, dpaudit.parse_criteria(criteria), schema)
    blocks = [t.counts[b] if t.counts.ndim == 3 else t.counts for t in tables
              for b in range(t.counts.shape[0] if t.counts.ndim == 3 else 1)]
    blocks = [b[b.sum(axis=1) > 0] for b in blocks if b.sum() > 0]
    results: list[list[dict[str, Any]]] = []

    def baseline() -> None:
        results.append([solve_rc2(b, cfg.repair_limit) for b in blocks])

    def exact() -> float:
        return sum(u_r(t.counts, semantics="bag") for t in tables)

    value = exact()
    log(f"  bag, all of Adult, {len(blocks)} blocks: u_r vs bench_repair_solvers.solve_rc2")
    comp = compare("Adult, bag, count tables", f"{len(frame):,} (all)", "u_r on the count tables",
                   exact, "RC2, compressed formulation (bench_repair_solvers)", baseline, cfg.repeat,
                   warmup=cfg.warmup, extra={"blocks": len(blocks), "value": value})
    proven = all(r["optimal"] for run in results for r in run)
    total = sum(r["lower"] for r in results[-1])
    if not proven:
        comp.status = f"RC2 unproven within {cfg.repair_limit:g} s on some block"
    elif round(total) != round(value):
        raise AssertionError(f"compressed RC2 optimum {total} != dpaudit's exact U_R {value}")
    comp.check = f"RC2 optimum = dpaudit's exact U_R = {value:,.0f}" if proven else ""
    return comp


# ---------------------------------------------------------------------------------------------------
# 4. MIA evaluation, 5. training, 6. scaling
# ---------------------------------------------------------------------------------------------------
def mia(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str], list[str]]:
    log(f"  M = {cfg.mia_models}, N+ = {cfg.mia_records:,}, n_boot 0 and {cfg.mia_boot}, {cfg.repeat_costly} rounds")
    comps = _logged(adapters.mia(cfg.mia_models, cfg.mia_records, (0, cfg.mia_boot), repeat=cfg.repeat_costly,
                                 warmup=cfg.warmup, seed=cfg.seed, rss=cfg.mia_rss))
    origin = comps[0].extra.get("source", "") if comps else ""
    return comps, [], [f"{origin} (through _suite/adapters.mia)."]


def train(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str], list[str]]:
    adult = ctx.adult()
    if isinstance(adult, str):
        return [], [adult], []
    log(f"  M = {cfg.train_models}, N+ = {cfg.train_pool:,}, {cfg.repeat_costly} rounds")
    comps = _logged(adapters.train(cfg.train_models, cfg.train_pool, repeat=cfg.repeat_costly, warmup=cfg.warmup,
                                   seed=cfg.seed))
    return comps, [], ["dpaudit.mia.train.train_run vs benchmarks/bench_mia_train.py's sklearn_loop (imported)."]


def scaling(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str], list[str]]:
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
    return comps, notes, ["census rows: bench_fairness.run_census as in section 1 (sizes measured there are "
                          "reused); models: as section 4, without bootstrap."]


def spark(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str], list[str]]:
    comps: list[Comparison] = []
    if adapters.function("spark", "run_spark") is None:  # the hook: the note says how to fill the section in
        return [], [str(adapters.spark(0, cfg.data_dir, repeat=1, warmup=0))], []
    adult = ctx.adult()
    if adapters.function("spark", "run_spark_adult") is not None and not isinstance(adult, str):
        log("  Adult on Spark (local mode)")
        comps += _logged(adapters.spark_adult(*adult, repeat=cfg.repeat, warmup=cfg.warmup))
    for rows in cfg.spark_rows:
        ctx.census(rows)
        log(f"  census {rows:,} rows on Spark (local mode)")
        found = adapters.spark(rows, cfg.data_dir, repeat=cfg.repeats_for(rows), warmup=cfg.warmup, seed=cfg.seed)
        if isinstance(found, str):
            log(f"  {found}")
            return [], [found], []
        comps += _logged(found)
    return comps, [], ["benchmarks/bench_spark.py's run_spark_adult and run_spark (imported by _suite/adapters.py)."]


RUNNERS: dict[str, Callable[[Config, Context], tuple[list[Comparison], list[str], list[str]]]] = {
    "fairness": fairness,
    "references": references,
    "repair": repair,
    "mia": mia,
    "train": train,
    "scaling": scaling,
    "spark": spark,
}


def run_section(key: str, cfg: Config, ctx: Context) -> SectionResult:
    log(f"\n== {TITLES[key]} ({cfg.mode})")
    env = machine(REPO)
    t0 = time.perf_counter()
    try:
        comps, notes, sources = RUNNERS[key](cfg, ctx)
    except Exception as exc:  # one broken section must not lose the others' hours of timing
        log("".join(traceback.format_exception(exc)))
        comps, notes, sources = [], [f"{FAILED} {type(exc).__name__}: {exc}"], []
    seconds = time.perf_counter() - t0
    log(f"   {seconds:.1f} s, load {env['loadavg'][0] if env['loadavg'] else 0:.2f} → {load1():.2f}")
    try:
        end = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        end = []
    return SectionResult(key, cfg.mode, comps, env, end, seconds, notes, sources)
