"""The ``bag``/``set`` repair of one block: min_t Σ_p min(‖c_p − t‖₁, ‖c_p‖₁), exactly.

Enumerates whichever is smaller — the grid of outcome targets t or the subsets of kept protected
values (medians by sorted prefix sums, vectorised) — up to :data:`ENUMERATION_LIMIT` candidates
(from :data:`RACE_LIMIT` on, RC2 gets one work unit first and answers if it proves the optimum);
larger blocks go to CP-SAT (incumbents) and RC2 (PySAT, the proof) within a work budget
(:mod:`dpaudit.measures._center_rc2`, :mod:`dpaudit.measures._limits`), which report proven bounds
and which solver closed the gap (see :mod:`dpaudit.measures.repair` for the derivation). No step
depends on the machine's speed or load.
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.measures._block import REL_TOL, BlockRepair
from dpaudit.measures._center_rc2 import RC2_BEFORE_ENUMERATION, prove_or_enumerate, rc2_available, solve_hybrid
from dpaudit.measures._limits import Limits

__all__ = ["center_block", "ENUMERATION_LIMIT", "RACE_LIMIT"]

#: Largest number of candidates (t grid points or subsets) enumerated exactly.
ENUMERATION_LIMIT = 1 << 22
#: From this many candidates on, RC2 gets ``RC2_BEFORE_ENUMERATION`` work units before the enumeration.
RACE_LIMIT = 1 << 16
_CHUNK_ELEMENTS = 1 << 22  # elements per vectorised chunk (bounded memory)




# ---------------------------------------------------------------------------------------------------
# bag and set: min_t Σ_p min(‖c_p − t‖₁, ‖c_p‖₁)
def _grid_search(rows: np.ndarray, grids: list[np.ndarray]) -> tuple[float, np.ndarray]:
    totals = rows.sum(axis=1)
    sizes = [len(g) for g in grids]
    count = int(np.prod(sizes))
    step = max(1, _CHUNK_ELEMENTS // (rows.size or 1))
    best, best_t = math.inf, np.zeros(rows.shape[1])
    for start in range(0, count, step):
        flat = np.arange(start, min(start + step, count))
        t = np.stack([g[i] for g, i in zip(grids, np.unravel_index(flat, sizes))], axis=1)
        dist = np.abs(rows[None, :, :] - t[:, None, :]).sum(axis=2)
        cost = np.minimum(dist, totals[None, :]).sum(axis=1)
        k = int(np.argmin(cost))
        if cost[k] < best:
            best, best_t = float(cost[k]), t[k]
    return best, best_t


def _subset_search(rows: np.ndarray) -> tuple[float, np.ndarray]:
    """Every kept set S' ⊆ rows: Σ_o Σ_{p∈S'} |c_po − median| + Σ_{p∉S'} ‖c_p‖₁, vectorised."""
    m, n_out = rows.shape
    totals = rows.sum(axis=1)
    orders = [np.argsort(rows[:, o], kind="stable") for o in range(n_out)]
    sorted_vals = [rows[order, o] for o, order in enumerate(orders)]
    step = max(1, _CHUNK_ELEMENTS // (m * max(n_out, 1)))
    bits = 1 << np.arange(m)
    best, best_mask = math.inf, 0
    for start in range(0, 1 << m, step):
        masks = np.arange(start, min(start + step, 1 << m))
        member = (masks[:, None] & bits[None, :]) > 0  # (S, m)
        size = member.sum(axis=1)
        half = size // 2
        cost = ((~member) * totals[None, :]).sum(axis=1).astype(np.float64)
        for order, vals in zip(orders, sorted_vals):
            mem = member[:, order]
            rank = np.cumsum(mem, axis=1)
            low = mem & (rank <= half[:, None])
            high = mem & (rank > (size - half)[:, None])
            cost += (high * vals).sum(axis=1) - (low * vals).sum(axis=1)
        k = int(np.argmin(cost))
        if cost[k] < best:
            best, best_mask = float(cost[k]), int(masks[k])
    kept = (best_mask & bits) > 0
    target = np.zeros(n_out)
    if kept.any():  # the lower median of each outcome's counts among the kept rows
        kept_rows = np.sort(rows[kept], axis=0)
        target = kept_rows[(kept.sum() - 1) // 2]
    return best, target


def _cost_of(rows: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
    dist = np.abs(rows - target[None, :]).sum(axis=1)
    totals = rows.sum(axis=1)
    return float(np.minimum(dist, totals).sum()), dist < totals


def center_block(table: np.ndarray, *, binary: bool, limits: Limits) -> BlockRepair:
    full = (table > 0).astype(np.float64) if binary else np.asarray(table, dtype=np.float64)
    active = np.flatnonzero(full.sum(axis=1) > 0)
    rows = full[active]
    kept = np.zeros(table.shape[0], dtype=bool)
    if len(active) <= 1:
        kept[active] = True
        target = rows[0] if len(active) else np.zeros(table.shape[1])
        return BlockRepair(0.0, 0.0, True, "closed form (one value with data)", kept=kept, target=target)
    grids = [np.unique(np.append(rows[:, o], 0.0)) for o in range(rows.shape[1])]
    grid_size = math.prod(len(g) for g in grids)
    subsets = 1 << len(active) if len(active) < 63 else math.inf
    stopped_by = None
    if min(grid_size, subsets) <= ENUMERATION_LIMIT:
        if grid_size <= subsets:
            what = f"exact enumeration of {grid_size:,} outcome targets"
            search = lambda: _grid_search(rows, grids)  # noqa: E731
        else:
            what = f"exact enumeration of {subsets:,} kept sets"
            search = lambda: _subset_search(rows)  # noqa: E731
        if min(grid_size, subsets) < RACE_LIMIT or not rc2_available():
            (value, target), method = search(), what
        else:  # RC2 is often much faster on such blocks, sometimes slower: it gets a fixed work budget first
            value, target, winner = prove_or_enumerate(rows, search, limits)
            method = (f"RC2 (proved within {RC2_BEFORE_ENUMERATION:g} work unit before {what})" if winner == "RC2"
                      else f"{what} (RC2 did not prove it within {RC2_BEFORE_ENUMERATION:g} work unit)")
        lower = upper = value
    else:
        hybrid = solve_hybrid(rows, binary=binary, limits=limits)
        lower, upper, target, stopped_by = hybrid.lower, hybrid.upper, hybrid.target, hybrid.stopped_by
        solvers = "CP-SAT + RC2" if rc2_available() else "CP-SAT (RC2 unavailable: pip install python-sat)"
        closed = (f"gap closed by {hybrid.closed_by}" if hybrid.closed_by
                  else f"{stopped_by} reached" if stopped_by else "gap left")
        method = f"{solvers} ({limits.describe()}; used {hybrid.work:.3g}): {closed}"
    cost, keep_active = _cost_of(rows, target)
    upper = min(upper, cost)
    kept[active] = keep_active
    exact = upper - lower <= REL_TOL * max(upper, 1.0)
    return BlockRepair(float(lower), float(upper), exact, method, kept=kept, target=target,
                       stopped_by=None if exact else stopped_by)
