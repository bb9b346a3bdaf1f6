"""The ``bag``/``set`` repair of one block: min_t Σ_p min(‖c_p − t‖₁, ‖c_p‖₁), exactly.

Enumerates whichever is smaller — the grid of outcome targets t or the subsets of kept protected
values (medians by sorted prefix sums, vectorised) — up to :data:`ENUMERATION_LIMIT` candidates
(from :data:`RACE_LIMIT` on raced against RC2, the first to finish wins); larger blocks go to RC2
(PySAT, the proof) and OR-Tools CP-SAT (incumbents) together within a time limit
(:mod:`dpaudit.measures._center_rc2`), which report proven bounds and which solver closed the gap
(see :mod:`dpaudit.measures.repair` for the derivation).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from dpaudit.measures._block import REL_TOL, BlockRepair
from dpaudit.measures._center_rc2 import race_enumeration, rc2_available, solve_hybrid

__all__ = ["center_block", "ENUMERATION_LIMIT", "RACE_LIMIT"]

#: Largest number of candidates (t grid points or subsets) enumerated exactly.
ENUMERATION_LIMIT = 1 << 22
#: From this many candidates on, the enumeration races RC2 (two threads; the first to finish wins).
RACE_LIMIT = 1 << 16
_CHUNK_ELEMENTS = 1 << 22  # elements per vectorised chunk (bounded memory)




# ---------------------------------------------------------------------------------------------------
# bag and set: min_t Σ_p min(‖c_p − t‖₁, ‖c_p‖₁)
def _grid_search(rows: np.ndarray, grids: list[np.ndarray], stop: threading.Event | None = None
                 ) -> tuple[float, np.ndarray]:
    totals = rows.sum(axis=1)
    sizes = [len(g) for g in grids]
    count = int(np.prod(sizes))
    step = max(1, _CHUNK_ELEMENTS // (rows.size or 1))
    best, best_t = math.inf, np.zeros(rows.shape[1])
    for start in range(0, count, step):
        if stop is not None and stop.is_set():
            break
        flat = np.arange(start, min(start + step, count))
        t = np.stack([g[i] for g, i in zip(grids, np.unravel_index(flat, sizes))], axis=1)
        dist = np.abs(rows[None, :, :] - t[:, None, :]).sum(axis=2)
        cost = np.minimum(dist, totals[None, :]).sum(axis=1)
        k = int(np.argmin(cost))
        if cost[k] < best:
            best, best_t = float(cost[k]), t[k]
    return best, best_t


def _subset_search(rows: np.ndarray, stop: threading.Event | None = None) -> tuple[float, np.ndarray]:
    """Every kept set S' ⊆ rows: Σ_o Σ_{p∈S'} |c_po − median| + Σ_{p∉S'} ‖c_p‖₁, vectorised."""
    m, n_out = rows.shape
    totals = rows.sum(axis=1)
    orders = [np.argsort(rows[:, o], kind="stable") for o in range(n_out)]
    sorted_vals = [rows[order, o] for o, order in enumerate(orders)]
    step = max(1, _CHUNK_ELEMENTS // (m * max(n_out, 1)))
    bits = 1 << np.arange(m)
    best, best_mask = math.inf, 0
    for start in range(0, 1 << m, step):
        if stop is not None and stop.is_set():
            break
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


def center_block(table: np.ndarray, *, binary: bool, time_limit: float) -> BlockRepair:
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
    timed_out = False
    if min(grid_size, subsets) <= ENUMERATION_LIMIT:
        if grid_size <= subsets:
            what = f"exact enumeration of {grid_size:,} outcome targets"
            search = lambda stop: _grid_search(rows, grids, stop)  # noqa: E731
        else:
            what = f"exact enumeration of {subsets:,} kept sets"
            search = lambda stop: _subset_search(rows, stop)  # noqa: E731
        if min(grid_size, subsets) < RACE_LIMIT or not rc2_available():
            (value, target), method = search(None), what
        else:  # RC2 is often much faster on large blocks, sometimes slower: the first to finish wins
            value, target, winner = race_enumeration(rows, search)
            method = f"{what} (raced with RC2)" if winner == "enumeration" else f"RC2 (raced with {what})"
        lower = upper = value
    else:
        hybrid = solve_hybrid(rows, binary=binary, time_limit=time_limit)
        lower, upper, target, timed_out = hybrid.lower, hybrid.upper, hybrid.target, hybrid.timed_out
        solvers = "RC2 + CP-SAT" if rc2_available() else "CP-SAT (RC2 unavailable: pip install python-sat)"
        closed = (f"gap closed by {hybrid.closed_by}" if hybrid.closed_by
                  else "time limit hit" if timed_out else "gap left")
        method = f"{solvers} (time limit {time_limit:g} s): {closed}"
    cost, keep_active = _cost_of(rows, target)
    upper = min(upper, cost)
    kept[active] = keep_active
    exact = upper - lower <= REL_TOL * max(upper, 1.0)
    return BlockRepair(float(lower), float(upper), exact, method, kept=kept, target=target,
                       timed_out=timed_out and not exact)
