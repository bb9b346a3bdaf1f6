"""Section 2 of docs/benchmarks.md: dpaudit against what users run today on the same columns — fairlearn,
scikit-learn's ``mutual_info_score`` and the paper's formulas in plain pandas (``references.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dpaudit

from . import references as ref
from .config import Config
from .context import Context, log
from .timing import Comparison, compare, median


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def _reference_rows(name: str, size: str, frame: Any, schema: Any, criteria: tuple[str, ...], repeat: int,
                    warmup: int, *, fairlearn: tuple[str, Any] | None) -> list[Comparison]:
    crits = [ref.criterion_columns(c) for c in criteria]
    columns = sorted({c for side in crits for cols in side for c in cols})
    bins = ref.integer_bins(schema, columns)
    exact = dpaudit.audit(frame, criteria, measures=("tvd", "tc"), exact=True, schema=schema)
    tvd_exact = exact["tvd"].per_criterion
    tc_exact = exact["tc"].per_criterion
    mi_exact = [b.mi_nats for b in exact["tvd"].details.baseline]

    def audit(measures: tuple[str, ...], which: tuple[str, ...] = criteria) -> Callable[[], Any]:
        return lambda: dpaudit.audit(frame, which, measures=measures, exact=True, schema=schema)

    out: list[Comparison] = []

    def run(label: str, a_name: str, a: Callable[[], Any], b: Callable[[], list[float]], check: Callable[[list[float]], str],
            n_crit: int) -> None:
        log(f"  {name}: {label}")
        text = check(b())
        comp = compare(f"{name}, {n_crit} criteria", size, a_name, a, label, b, repeat, warmup=warmup, check=text,
                       extra={"criteria": n_crit})
        log(f"    {comp.ratio:.3g}× ({median(comp.a):.4g} s vs {median(comp.b):.4g} s)")
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


def references(cfg: Config, ctx: Context) -> tuple[list[Comparison], list[str]]:
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
    return comps, notes
