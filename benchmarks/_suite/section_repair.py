"""Section 3 of docs/benchmarks.md: dpaudit's exact U_R against RC2, on the paper's tuple-level WCNF of
growing Adult samples and on the compressed per-block formulation ``bench_repair_solvers.py`` compares."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import dpaudit

from .config import Config
from .context import Context, log
from .timing import Comparison, compare, median


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
    timer = threading.Timer(limit, rc2.interrupt)  # the baseline's cap: wall clock (a benchmark times it anyway)
    timer.start()
    try:
        model = rc2.compute(expect_interrupt=True)
    finally:
        timer.cancel()
    t2 = time.perf_counter()
    cost = int(rc2.cost)
    rc2.delete()
    return {"finished": model is not None, "cost": cost, "encode": t1 - t0, "solve": t2 - t1,
            "clauses": len(wcnf.hard) + len(wcnf.soft), "variables": int(wcnf.nv)}


def repair(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str]]:
    comps: list[Comparison] = []
    notes: list[str] = []
    adult = ctx.adult()
    if isinstance(adult, str):
        return comps, [adult]
    frame, schema = adult
    criteria = dpaudit.datasets.preset("adult")
    sizes = sorted({min(n, len(frame)) for n in (*cfg.repair_sizes, len(frame))})
    for semantics in ("bag", "set"):
        for n in sizes:
            sample = frame if n >= len(frame) else frame.sample(n=n, random_state=cfg.seed)
            size = f"{n:,}" + (" (all)" if n >= len(frame) else "")
            workload = f"Adult sample, {semantics}"
            exact = dpaudit.audit(sample, criteria, measures=("repair",), exact=True, schema=schema,
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
                               sample, criteria, measures=("repair",), exact=True, schema=schema, semantics=semantics),
                           "RC2, tuple-level WCNF", baseline,
                           cfg.repeat if first["encode"] + first["solve"] < 5 else cfg.repeat_costly, warmup=0,
                           check=f"RC2 optimum = dpaudit's exact U_R = {first['cost']:,}",
                           extra={"clauses": first["clauses"], "variables": first["variables"], "value": first["cost"]})
            comp.extra["encode"] = median([r["encode"] for r in runs])
            comp.extra["solve"] = median([r["solve"] for r in runs])
            if not all(r["finished"] for r in runs):
                comp.status = f"RC2 unfinished after {cfg.repair_limit:g} s in a timed run"
            comps.append(comp)
            log(f"  {semantics} n={n:,}: {comp.ratio or float('nan'):.3g}× ({first['clauses']:,} clauses)")
    comps.append(_compressed(frame, schema, criteria, cfg))
    return comps, notes


def _compressed(frame: Any, schema: Any, criteria: tuple[str, ...], cfg: Config) -> Comparison:
    """U_R (bag) on the whole of Adult: dpaudit's exact solver vs RC2 on the compressed per-block formulation
    (``dpaudit.measures._center_rc2.solve_rc2``, one of the solvers ``bench_repair_solvers.py`` compares),
    both on the same count tables (counting excluded on both sides)."""
    from dpaudit.measures._center_rc2 import solve_rc2
    from dpaudit.measures._limits import Limits
    from dpaudit.measures.repair import u_r

    tables = dpaudit.count_tables(frame, dpaudit.parse_criteria(criteria), schema)
    blocks = [t.counts[b] if t.counts.ndim == 3 else t.counts for t in tables
              for b in range(t.counts.shape[0] if t.counts.ndim == 3 else 1)]
    blocks = [b[b.sum(axis=1) > 0] for b in blocks if b.sum() > 0]
    results: list[list[dict[str, Any]]] = []

    def baseline() -> None:
        results.append([solve_rc2(b, Limits(math.inf, cfg.repair_limit)) for b in blocks])

    def exact() -> float:
        return sum(u_r(t.counts, semantics="bag") for t in tables)

    value = exact()
    log(f"  bag, all of Adult, {len(blocks)} blocks: u_r vs RC2 on the compressed formulation")
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
