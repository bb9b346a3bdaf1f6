"""Benchmark: which exact solver should U_R (``bag``) fall back to for large protected domains?

Run from the repository root::

    python benchmarks/bench_repair_solvers.py                 # 30 s limit per solver and block
    python benchmarks/bench_repair_solvers.py --limit 10 --blocks 4 --seed 1

Spec §2.3: ``bag`` and ``set`` are solved exactly from a block's count table,

    U_R^bag(block) = min_t Σ_p min(‖c_p − t‖₁, ‖c_p‖₁),

by enumeration while the t grid or the kept subsets are small (``repair_block``), and otherwise "on a
real MaxSAT/CP solver with a time limit". This script measures the candidates on the same blocks:

``cpsat-int``
    ``dpaudit.measures._center_cpsat.solve_center``: OR-Tools CP-SAT on the integer formulation
    (one integer t_o per outcome, one |c_po − t_o| per cell, one min per protected value).
``rc2-bool``
    pysat RC2 (core-guided MaxSAT, stratified) on the compressed boolean formulation of
    ``dpaudit.measures._center_rc2`` (imported from there) —
    "one boolean per protected value, one per distinct column class": k_p says protected value p is
    kept; for each outcome o with distinct positive counts v₁ < … < v_m, y_oj says t_o ≥ v_j (an
    order encoding, hard clauses y_o,j+1 → y_oj). The tuple columns (o, i) with v_{j−1} < i ≤ v_j are
    one class of weight w = v_j − v_{j−1}: they are held by H_oj = {p : c_po ≥ v_j}. Soft clauses:
    (k_p) with weight ‖c_p‖₁ (deleting p's tuples), and for every p and class: (¬k_p ∨ y_oj) with
    weight w if p ∈ H_oj (a kept tuple dropped), else (¬k_p ∨ ¬y_oj) (a tuple inserted). Its optimum
    is U_R^bag exactly (t_o only needs values in {0} ∪ {c_po}, where a median lies).
``cpsat-bool``
    CP-SAT on that same boolean formulation (so the comparison separates solver from formulation).
``hybrid``
    What dpaudit runs above the enumeration limit: RC2 and CP-SAT (integer formulation, incumbents)
    together, stopped when either proves the optimum or RC2's bound meets CP-SAT's incumbent.
``enumeration``
    ``repair_block`` where its exact enumeration applies (grid or subsets ≤ 2**22 candidates).

Blocks: (a) Stack Overflow, Country ⊥ Age | Gender, block Gender = Male (20 countries × 8 age
bands, counts up to 1,779); (b) seeded random blocks with 24–30 protected values and 3–6 outcome
values, row totals log-normal (median e^3 to e^6 per block) and outcome distributions drawn around a shared one (so they are
near-independent, the hard case: many values almost but not quite equal); ``--big 60,120,180`` adds
random blocks with those many protected values (e.g. ~180 countries); (c) ``--uniform`` blocks of the
same shapes with counts uniform on 0..399 (30% zeros), i.e. no structure at all.

Every solver gets ``--limit`` seconds per block. The table prints wall time, the proven lower bound,
the best upper bound found (RC2 finds none before it finishes: it reports its core-guided lower bound
only) and whether optimality was proven. The script checks that all solvers that proved optimality
agree.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from pathlib import Path

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
import numpy as np

from dpaudit.measures._center_cpsat import solve_center  # the formulations live in the library
from dpaudit.measures._center_rc2 import center_cost, column_classes, solve_hybrid, solve_rc2, target_from
from dpaudit.measures._limits import Limits
from dpaudit.measures.repair import ENUMERATION_LIMIT, repair_block

SO_PATH = Path("/work/shared/datasets/stackoverflow/so_countries_col_new.csv.gz")


def solve_hybrid_(rows: np.ndarray, limit: float) -> dict:
    """What dpaudit runs: RC2 and CP-SAT taking turns (``_center_rc2.solve_hybrid``) within ``limit``
    work units (deterministic; ≈ seconds on the reference machine)."""
    start = time.perf_counter()
    h = solve_hybrid(rows, binary=False, limits=Limits(limit))
    return {"time": time.perf_counter() - start, "lower": h.lower, "upper": h.upper, "optimal": h.lower == h.upper,
            "method": f"closed by {h.closed_by}" if h.closed_by else f"{h.stopped_by} ({h.work:.3g} units)"}


def solve_rc2_(rows: np.ndarray, limit: float) -> dict:
    """RC2 alone on the compressed formulation, stopped after ``limit`` seconds (a wall clock: this
    compares solvers' speed)."""
    start = time.perf_counter()
    return {**solve_rc2(rows, Limits(math.inf, limit)), "time": time.perf_counter() - start}


def solve_cpsat_bool(rows: np.ndarray, limit: float, workers: int) -> dict:
    from ortools.sat.python import cp_model

    m = rows.shape[0]
    classes = column_classes(rows)
    model = cp_model.CpModel()
    keep = [model.NewBoolVar(f"k{p}") for p in range(m)]
    y = [model.NewBoolVar(f"y{k}") for k in range(len(classes))]
    for k in range(1, len(classes)):
        if classes[k][0] == classes[k - 1][0]:
            model.AddImplication(y[k], y[k - 1])
    terms = [int(rows[p].sum()) * (1 - keep[p]) for p in range(m)]
    for k, (_, _, weight, holders) in enumerate(classes):
        for p in range(m):
            z = model.NewBoolVar("")
            if holders[p]:  # z ≥ k_p ∧ ¬y
                model.AddBoolOr([keep[p].Not(), y[k], z])
            else:  # z ≥ k_p ∧ y
                model.AddBoolOr([keep[p].Not(), y[k].Not(), z])
            terms.append(weight * z)
    model.Minimize(sum(terms))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(limit)
    solver.parameters.num_workers = workers
    start = time.perf_counter()
    status = solver.Solve(model)
    elapsed = time.perf_counter() - start
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return {"time": elapsed, "lower": 0.0, "upper": math.nan, "optimal": False}
    t = target_from(classes, [bool(solver.Value(v)) for v in y], rows.shape[1])
    upper = center_cost(rows, t)
    lower = upper if status == cp_model.OPTIMAL else float(solver.BestObjectiveBound())
    return {"time": elapsed, "lower": lower, "upper": upper, "optimal": status == cp_model.OPTIMAL}


def solve_cpsat_int(rows: np.ndarray, limit: float, workers: int) -> dict:
    start = time.perf_counter()
    lower, upper, _ = solve_center(rows, binary=False, time_limit=limit, workers=workers)
    elapsed = time.perf_counter() - start
    return {"time": elapsed, "lower": float(lower), "upper": float(upper), "optimal": lower == upper}


def enumeration(rows: np.ndarray) -> dict | None:
    active = rows[rows.sum(axis=1) > 0]
    grid = math.prod(len(np.unique(np.append(active[:, o], 0))) for o in range(active.shape[1]))
    subsets = 2 ** len(active)
    if min(grid, subsets) > ENUMERATION_LIMIT:
        return None
    start = time.perf_counter()
    result = repair_block(rows, "bag")
    elapsed = time.perf_counter() - start
    return {"time": elapsed, "lower": result.lower, "upper": result.upper, "optimal": result.exact,
            "method": result.method}


# ---------------------------------------------------------------------------------------------------
def stackoverflow_block() -> np.ndarray:
    import pandas as pd

    df = pd.read_csv(SO_PATH, keep_default_na=False)
    counts = df.groupby(["Gender", "Country", "Age"]).size()
    return counts.loc["Male"].unstack(fill_value=0).to_numpy()


def random_block(rng: np.random.Generator, m: int) -> np.ndarray:
    n_out = int(rng.integers(3, 7))
    sizes = np.maximum(1, rng.lognormal(mean=rng.uniform(3.0, 6.0), sigma=1.2, size=m)).astype(int)
    base = rng.dirichlet(np.full(n_out, 2.0))
    probs = rng.dirichlet(base * 30, size=m)
    return np.array([rng.multinomial(s, p) for s, p in zip(sizes, probs)])


def random_blocks(n: int, seed: int, big: list[int] = ()) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = [random_block(rng, int(rng.integers(24, 31))) for _ in range(n)]
    return out + [random_block(rng, m) for m in big]


def uniform_blocks(n: int, seed: int) -> list[np.ndarray]:
    """Counts uniform on 0..399 with 30% zeros: no structure at all (hard for core-guided MaxSAT)."""
    rng = np.random.default_rng(seed + 10_000)
    out = []
    for _ in range(n):
        shape = (int(rng.integers(24, 31)), int(rng.integers(3, 7)))
        counts = rng.integers(0, 400, size=shape)
        counts[rng.random(shape) < 0.3] = 0
        out.append(counts)
    return out


def fmt(x: float) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.0f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=30.0, help="seconds per solver and block (default 30)")
    ap.add_argument("--blocks", type=int, default=8, help="random blocks (default 8)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="CP-SAT workers (default 2, as dpaudit)")
    ap.add_argument("--uniform", type=int, default=3, help="random blocks with uniform counts (default 3)")
    ap.add_argument("--big", default="", help="extra random blocks with these protected-domain sizes, e.g. 60,120,180")
    ap.add_argument("--skip-so", action="store_true", help="skip the Stack Overflow block")
    args = ap.parse_args(argv)

    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, limit {args.limit:g} s per solver; "
          f"CP-SAT workers {args.workers}; RC2 is single-threaded")
    blocks: list[tuple[str, np.ndarray]] = []
    if not args.skip_so and SO_PATH.is_file():
        blocks.append(("SO Country⊥Age|Gender=Male", stackoverflow_block()))
    big = [int(x) for x in args.big.split(",") if x.strip()]
    blocks += [(f"random #{k}", b) for k, b in enumerate(random_blocks(args.blocks, args.seed, big))]
    blocks += [(f"uniform #{k}", b) for k, b in enumerate(uniform_blocks(args.uniform, args.seed))]

    solvers = {
        "cpsat-int": lambda r: solve_cpsat_int(r, args.limit, args.workers),
        "rc2-bool": lambda r: solve_rc2_(r, args.limit),
        "cpsat-bool": lambda r: solve_cpsat_bool(r, args.limit, args.workers),
        "hybrid": lambda r: solve_hybrid_(r, args.limit),
    }
    header = f"{'block':<28} {'shape':>6} {'max':>6} {'classes':>7}  {'solver':<11} {'time s':>8} {'lower':>9} {'upper':>9}  optimal"
    print(header)
    print("-" * len(header))
    summary: dict[str, list[float]] = {name: [] for name in solvers}
    for name, rows in blocks:
        rows = rows[rows.sum(axis=1) > 0]
        classes = len(column_classes(rows))
        results = {s: f(rows) for s, f in solvers.items()}
        enum = enumeration(rows)
        if enum is not None:
            results["enumeration"] = enum
        proven = {r["lower"] for r in results.values() if r["optimal"]}
        status = "" if len(proven) <= 1 else "  MISMATCH " + str(sorted(proven))
        for k, (solver, r) in enumerate(results.items()):
            lead = f"{name:<28} {rows.shape[0]:>3}×{rows.shape[1]:<2} {int(rows.max()):>6,} {classes:>7}" if k == 0 else " " * 52
            print(f"{lead}  {solver:<11} {r['time']:>8.2f} {fmt(r['lower']):>9} {fmt(r['upper']):>9}  "
                  f"{'yes' if r['optimal'] else 'NO'}{' (' + r['method'] + ')' if 'method' in r else ''}")
            if solver in summary:
                summary[solver].append(r["time"] if r["optimal"] else math.inf)
        if status:
            print(status)
        # every solver's bounds must bracket every proven optimum
        for r in results.values():
            for value in proven:
                assert r["lower"] <= value + 1e-6 and (math.isnan(r["upper"]) or r["upper"] >= value - 1e-6), (name, r)
    print()
    print("solver       solved  total time of solved blocks (s)  geometric mean (s)")
    for solver, times in summary.items():
        done = [t for t in times if math.isfinite(t)]
        gm = math.exp(sum(math.log(max(t, 1e-3)) for t in done) / len(done)) if done else math.nan
        print(f"{solver:<12} {len(done):>3}/{len(times):<3} {sum(done):>30.2f}  {gm:>18.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
