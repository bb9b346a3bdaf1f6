"""bag/set above the enumeration limit: RC2 (proof) and CP-SAT (incumbents) taking turns within one
work budget (issues 16, 25).

The hybrid must agree with the exhaustive enumeration wherever that is feasible, prove the hard
near-independent blocks of ``benchmarks/bench_repair_solvers.py`` within a work budget, say which
solver closed the gap, leave status ``"work limit"`` with certified bounds when the budget runs out —
the same bounds on every run, busy machine or not — and ``"timed out"`` only under an explicit wall
clock. The per-block status travels through the typed results, their JSON and the renderers;
``audit(progress=)`` is called once per block.
"""

from __future__ import annotations

import json
import math
import multiprocessing

import numpy as np
import pytest

pytest.importorskip("pysat")

from dpaudit import audit  # noqa: E402
from dpaudit.measures import _center as center_module  # noqa: E402
from dpaudit.measures._center import _grid_search, _subset_search  # noqa: E402
from dpaudit.measures._center_rc2 import (  # noqa: E402
    Hybrid,
    bool_model,
    center_cost,
    prove_or_enumerate,
    run_rc2,
    solve_hybrid,
)
from dpaudit.measures._limits import DEFAULT_WORK_LIMIT, UNIT_PROPAGATIONS, Limits  # noqa: E402
from dpaudit.measures.repair import Repair, repair_block  # noqa: E402
from dpaudit.report.text import render_audit  # noqa: E402
from dpaudit.results import AuditResult, BlockRepairDetail, RepairDetails  # noqa: E402
from tests.test_repair import _frame  # noqa: E402  (g ⊥ y | z, 600 rows, 3 × 2 × 2 domain)


def near_independent_block(rng: np.random.Generator, m: int) -> np.ndarray:
    """bench_repair_solvers.random_block: log-normal group sizes, outcome shares drawn around a shared one."""
    n_out = int(rng.integers(3, 7))
    sizes = np.maximum(1, rng.lognormal(mean=rng.uniform(3.0, 6.0), sigma=1.2, size=m)).astype(int)
    base = rng.dirichlet(np.full(n_out, 2.0))
    probs = rng.dirichlet(base * 30, size=m)
    return np.array([rng.multinomial(s, p) for s, p in zip(sizes, probs)])


def exhaustive(rows: np.ndarray) -> float:
    """The exact minimum by enumeration (grid or subsets, whichever is smaller), no solver."""
    rows = rows[rows.sum(axis=1) > 0]
    grids = [np.unique(np.append(rows[:, o], 0.0)) for o in range(rows.shape[1])]
    if math.prod(len(g) for g in grids) <= 2 ** len(rows):
        return _grid_search(rows.astype(float), grids)[0]
    return _subset_search(rows.astype(float))[0]


def test_hybrid_equals_enumeration_on_enumerable_blocks():
    """Blocks of 14–18 protected values (enumerable in well under a second): same optimum, bag and set."""
    rng = np.random.default_rng(16)
    for _ in range(6):
        rows = near_independent_block(rng, int(rng.integers(14, 19)))
        rows = rows[rows.sum(axis=1) > 0]
        for binary in (False, True):
            table = (rows > 0).astype(float) if binary else rows.astype(float)
            h = solve_hybrid(table, binary=binary, limits=Limits())
            assert h.closed_by is not None and h.stopped_by is None
            assert h.lower == h.upper == exhaustive(table)
            assert center_cost(table, h.target) == h.upper


def test_hybrid_proves_the_hard_benchmark_blocks():
    """bench_repair_solvers' random blocks (24–30 protected values, seed 0; CP-SAT alone proved 3 of 12
    of its blocks at 30 s): the hybrid proves all 8 within 10 work units (measured: at most 3.6 used),
    and equals the exhaustive enumeration on those whose outcome grid is small enough to enumerate."""
    rng = np.random.default_rng(0)
    blocks = [near_independent_block(rng, int(rng.integers(24, 31))) for _ in range(8)]
    checked = 0
    for rows in blocks:
        rows = rows[rows.sum(axis=1) > 0].astype(float)
        h = solve_hybrid(rows, binary=False, limits=Limits(10.0))
        assert h.closed_by is not None and h.stopped_by is None and h.lower == h.upper, h
        assert center_cost(rows, h.target) == h.upper and h.work <= 10.0
        grid = math.prod(len(np.unique(np.append(rows[:, o], 0))) for o in range(rows.shape[1]))
        if grid <= 1 << 21:
            assert h.upper == exhaustive(rows)
            checked += 1
    assert checked >= 2


def test_repair_block_above_the_enumeration_limit_says_who_closed_the_gap():
    rng = np.random.default_rng(0)
    blocks = [near_independent_block(rng, int(rng.integers(24, 31))) for _ in range(8)]
    rows = next(b for b in blocks  # too many kept sets and outcome targets to enumerate
                if math.prod(len(np.unique(np.append(b[:, o], 0))) for o in range(b.shape[1])) > 1 << 22)
    res = repair_block(rows, "bag")
    assert res.exact and res.status == "exact" and res.stopped_by is None
    assert res.method.startswith(f"CP-SAT + RC2 (work limit {DEFAULT_WORK_LIMIT:g}; used ")
    assert "): gap closed by " in res.method


def _uniform_block() -> np.ndarray:
    """Uniform counts (no structure, hard for both solvers)."""
    rng = np.random.default_rng(10_000)
    counts = rng.integers(0, 400, size=(30, 6))
    counts[rng.random(counts.shape) < 0.3] = 0
    return counts


def _burn(stop) -> None:  # a CPU burner (a separate process: the GIL does not shield the solvers)
    x = 0
    while not stop.is_set():
        x = (x * 31 + 7) % 1_000_003


def test_small_work_limit_leaves_the_same_certified_bounds_on_a_busy_machine():
    """With 0.5 work units the gap stays, the bounds are certified — and a second run while two CPU
    burners compete for both cores gives exactly the same bounds, target and method (issue 25: a
    wall-clock limit gave different bounds on every run)."""
    counts = _uniform_block()
    quiet = repair_block(counts, "bag", work_limit=0.5)
    assert not quiet.exact and quiet.stopped_by == "work limit" and quiet.status == "work limit"
    assert "work limit reached" in quiet.method
    assert 0 <= quiet.lower < quiet.upper <= counts.sum()
    assert quiet.upper == np.abs(counts[quiet.kept] - quiet.target).sum() + counts[~quiet.kept].sum()
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(2)]
    for b in burners:
        b.start()
    try:
        busy = repair_block(counts, "bag", work_limit=0.5)
    finally:
        stop.set()
        for b in burners:
            b.join()
    assert (busy.lower, busy.upper, busy.method, busy.status) == (quiet.lower, quiet.upper, quiet.method, quiet.status)
    assert np.array_equal(busy.target, quiet.target) and np.array_equal(busy.kept, quiet.kept)


def test_wall_clock_limit_sets_timed_out():
    """An explicit ``time_limit`` still stops the solvers, with status "timed out" (machine-dependent)."""
    counts = _uniform_block()
    res = repair_block(counts, "bag", work_limit=1e6, time_limit=1e-6)
    assert not res.exact and res.stopped_by == "time limit" and res.status == "timed out"
    assert "time limit 1e-06 s" in res.method and "time limit reached" in res.method
    assert 0 <= res.lower <= res.upper <= counts.sum()


def test_rc2_budget_counts_propagations():
    """RC2 stops once its propagations exceed the budget (checked before each SAT call; one call may
    overrun by its own last propagations) and its cost is still a proven lower bound."""
    counts = _uniform_block()
    full = solve_hybrid(counts, binary=False, limits=Limits(0.5))
    run = run_rc2(counts, Limits(0.01))
    assert run.target is None and run.stopped_by == "work limit"
    assert run.propagations >= 0.01 * UNIT_PROPAGATIONS and run.lower <= full.upper
    assert run_rc2(counts, Limits(0.01)) == run  # the same stopping point, every time


def test_rc2_before_enumeration_agrees():
    rng = np.random.default_rng(3)
    rows = near_independent_block(rng, 17).astype(float)
    rows = rows[rows.sum(axis=1) > 0]
    value, target, winner = prove_or_enumerate(rows, lambda: _subset_search(rows), Limits())
    assert winner == "RC2"  # it proves this block well within its one work unit
    assert value == exhaustive(rows) == center_cost(rows, target)
    value, target, winner = prove_or_enumerate(rows, lambda: _subset_search(rows), Limits(1e-9, seconds=1e-9))
    assert winner == "enumeration" and value == exhaustive(rows)


def test_bool_model_skips_empty_groups():
    _, _, _, _, soft = bool_model(np.array([[0, 0], [3, 1]]))
    assert all(weight > 0 for _, weight in soft)


# ---------------------------------------------------------------------------------------------------
# status in the typed results, JSON and renderers; progress per block
def _timed_out_audit(monkeypatch: pytest.MonkeyPatch) -> AuditResult:
    df, schema = _frame()
    monkeypatch.setattr(center_module, "ENUMERATION_LIMIT", 1)
    calls = []

    def gap_in_first_block(rows, binary, limits):  # the first block stops at its budget
        calls.append(1)
        if len(calls) == 1:
            return Hybrid(0.0, float(rows.sum()), np.zeros(rows.shape[1]), None, "work limit", limits.work)
        return solve_hybrid(rows, binary=binary, limits=limits)

    monkeypatch.setattr(center_module, "solve_hybrid", gap_in_first_block)
    return audit(df, "g ⊥ y | z", measures=(Repair(semantics="bag", work_limit=5),), schema=schema, exact=True)


def test_status_round_trips_and_is_rendered(monkeypatch):
    res = _timed_out_audit(monkeypatch)
    details = res["repair"].details
    assert isinstance(details, RepairDetails)
    statuses = [b.status for b in details.per_block]
    assert statuses == ["work limit", "exact"]
    assert details.status == "work limit" and details.status_counts()["work limit"] == statuses.count("work limit")
    doc = json.loads(res.to_json())
    rep = doc["measures"]["repair"]
    assert rep["options"] == {"semantics": "bag", "work_limit": 5.0, "time_limit": None}
    assert rep["status"] == "work limit" and [b["status"] for b in rep["per_block"]] == statuses
    back = AuditResult.from_dict(doc)
    assert [b.status for b in back["repair"].details.per_block] == statuses
    assert back.to_dict() == res.to_dict()
    # renderers: text, rich, HTML
    assert f"repair (bag): {details.status_line()}" in render_audit(res)
    assert "work limit" in details.status_line()
    from io import StringIO

    from rich.console import Console

    from dpaudit.report.html import render_audit as render_html
    from dpaudit.report.rich import print_audit

    out = StringIO()
    print_audit(res, Console(file=out, width=200))
    assert details.status_line() in out.getvalue() and "(work limit, ≤" in out.getvalue()
    page = render_html(res)
    assert "Block status: " + details.status_line() in page and "A solver used up its work budget" in page


def test_old_json_without_status_still_loads():
    old = {"criterion": "g ⊥ y", "admissible": {}, "value": 3.0, "lower": 3.0, "upper": 5.0, "exact": False,
           "method": "CP-SAT (time limit 10 s)"}
    assert BlockRepairDetail.from_dict(old).status == "timed out"
    assert BlockRepairDetail.from_dict({**old, "method": "ci: weighted medians"}).status == "bounds"
    assert BlockRepairDetail.from_dict({**old, "exact": True, "upper": 3.0}).status == "exact"
    details = RepairDetails("ci", False, 5.0, (BlockRepairDetail.from_dict({**old, "method": "ci bounds"}),))
    assert details.status == "bounds" and details.status_line() == "1 block: 1 bounds"


def test_progress_is_called_per_block():
    df, schema = _frame()
    calls: list[str] = []
    audit(df, ["g ⊥ y | z", "g ⊥ y"], measures=("repair",), schema=schema, semantics="set", progress=calls.append, exact=True)
    per_block = [c for c in calls if ": block " in c]
    assert len(per_block) == 3  # two blocks of z, one without A
    assert per_block[0].startswith("U_R (set) g ⊥ y | z: block 1/3 exact, ")
    assert per_block[-1].startswith("U_R (set) g ⊥ y: block 3/3 exact, ") and per_block[-1].endswith(" s")
