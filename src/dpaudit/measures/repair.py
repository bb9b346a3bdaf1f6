"""U_R: repair distance — how many tuples must change for P ⊥ O | A to hold (spec §2.3).

The repair constraint decomposes by block A = a, so U_R of a criterion is a sum over blocks, and
each block is solved from its count table ``c[p, o]`` alone (never from rows). Three semantics:

``ci`` (default)
    The minimum total number of tuples to delete or insert, fractional tuples allowed, so that the
    block becomes exactly independent: the L1 distance of ``c`` to the nearest non-negative rank-1
    table ``u vᵀ``. Zero iff the criterion holds. **Exact** when a side of the block has at most two
    values with data (closed form below); otherwise certified bounds: an upper bound from
    alternating weighted-median descent with restarts, a lower bound from the best pairing of rows
    (or columns) into exact two-row problems; ``exact`` when they meet.

``bag`` (the unfairness paper's)
    The i-th copy of a tuple gets occurrence index i on the outcome side; a block is repaired when
    its set of pairs (p, (o, i)) is a product S' × Q'. Equivalently every kept protected value has
    the same outcome count vector t, and the others are deleted:

        U_R^bag(block) = min_{t ∈ ℕ^O} Σ_p min(‖c_p − t‖₁, ‖c_p‖₁).

    For a fixed kept set S' the best t_o is a median of {c_po : p ∈ S'}, so t ranges over the grid
    Π_o ({c_po} ∪ {0}) and the minimum over the grid is exact.

``set`` (Capuchin's MVD repair on distinct tuples, Salimi et al. SIGMOD 2019)
    The same with c replaced by its support b = [c > 0] and t ∈ {0, 1}^O: each block's set of
    distinct (p, o) pairs must become a product P' × O'.

Both ``bag`` and ``set`` are solved exactly by enumerating whichever is smaller — the t grid or the
subsets S' (medians by sorted prefix sums, vectorised) — up to ``2**22`` candidates; larger blocks go
to OR-Tools CP-SAT on the compressed formulation (one integer per outcome, one cost per protected
value) with a time limit, which reports proven lower and upper bounds.

The ci closed form for two rows n₁, n₂ (spec §2.3): with ρ = u₂/u₁ the cost is
``min(1, 1/ρ)·Σ_j |n₂ⱼ − ρ·n₁ⱼ|``. For ρ ≤ 1 it is Σ_j n₁ⱼ|n₂ⱼ/n₁ⱼ − ρ| (+ Σ_{n₁ⱼ=0} n₂ⱼ), a weighted
L1 distance minimised at the weighted median of the ratios clipped to [0, 1]; for ρ ≥ 1 the same
with σ = 1/ρ and the rows swapped. ρ = 0 or σ = 0 drops a row (cost: its total).

Replace-one sensitivity: 2 per criterion for every semantics (docs/privacy.md, "U_R").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = ["SEMANTICS", "BlockRepair", "repair_block", "repair_blocks", "u_r", "two_row_ci"]

SEMANTICS = ("ci", "bag", "set")
Semantics = Literal["ci", "bag", "set"]

#: Largest number of candidates (t grid points or subsets) enumerated exactly.
ENUMERATION_LIMIT = 1 << 22
_CHUNK_ELEMENTS = 1 << 22  # elements per vectorised chunk (bounded memory)
_REL_TOL = 1e-9


@dataclass(frozen=True)
class BlockRepair:
    """The repair of one block.

    Attributes
    ----------
    lower, upper : float
        Certified bounds on the minimum number of tuples to delete or insert.
    exact : bool
        True when ``lower == upper`` (the minimum is known).
    method : str
        How it was solved.
    repaired : ndarray or None
        ``ci``: a repaired (independent) table whose distance to the block is ``upper``.
    kept : ndarray of bool or None
        ``bag``/``set``: the protected values kept (the others are deleted).
    target : ndarray or None
        ``bag``/``set``: the outcome count vector (``set``: support) every kept value is given.
    """

    lower: float
    upper: float
    exact: bool
    method: str
    repaired: np.ndarray | None = None
    kept: np.ndarray | None = None
    target: np.ndarray | None = None


def _check_semantics(semantics: str) -> None:
    from dpaudit._errors import DPAuditError

    if semantics not in SEMANTICS:
        raise DPAuditError(f"semantics must be one of {', '.join(SEMANTICS)}, got {semantics!r}")


def check_options(semantics: str, time_limit: float) -> None:
    """DPAuditError for an unknown semantics or a time limit that is not a positive number."""
    from dpaudit._errors import DPAuditError

    _check_semantics(semantics)
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not time_limit > 0:
        raise DPAuditError(f"time_limit must be a positive number of seconds, got {time_limit!r}")


# ---------------------------------------------------------------------------------------------------
# weighted medians, vectorised over rows
def _weighted_median(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Row-wise minimiser of Σ_j w_j |x_j − m| (the lower weighted median); 0 where Σw = 0."""
    order = np.argsort(values, axis=1, kind="stable")
    xs = np.take_along_axis(values, order, axis=1)
    cw = np.cumsum(np.take_along_axis(weights, order, axis=1), axis=1)
    total = cw[:, -1:]
    idx = np.argmax(cw >= total / 2.0, axis=1)
    med = xs[np.arange(len(xs)), idx]
    return np.where(total[:, 0] > 0, med, 0.0)


def _scaled_l1(n1: np.ndarray, n2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """min over ρ ∈ [0, 1] of Σ_j |n2 − ρ·n1| per row, and the minimising ρ."""
    safe = np.where(n1 > 0, n1, 1.0)
    rho = np.clip(_weighted_median(np.where(n1 > 0, n2 / safe, 0.0), n1), 0.0, 1.0)
    return np.abs(n2 - rho[:, None] * n1).sum(axis=1), rho


def two_row_ci(n1: np.ndarray, n2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact ci repair of 2-row tables, vectorised: costs and the two repaired rows.

    Parameters
    ----------
    n1, n2 : ndarray, shape (N, k)
        The two rows of N tables.

    Returns
    -------
    cost : ndarray (N,)
    r1, r2 : ndarray (N, k)
        Repaired rows (a non-negative rank-1 pair) with ``Σ|n1−r1| + Σ|n2−r2| = cost``.

    Examples
    --------
    Adult, sex ⊥ income (rows Female, Male; columns <=50K, >50K): add ≈4,524 high-income women.

    >>> cost, r1, r2 = two_row_ci(np.array([[14423, 1769]]), np.array([[22732, 9918]]))
    >>> round(float(cost[0]), 1), np.round(r1[0], 1).tolist()
    (4523.8, [14423.0, 6292.8])
    """
    n1 = np.atleast_2d(np.asarray(n1, dtype=np.float64))
    n2 = np.atleast_2d(np.asarray(n2, dtype=np.float64))
    cost_a, rho = _scaled_l1(n1, n2)  # ρ = u2/u1 ≤ 1: row 1 kept, row 2 → ρ·n1
    cost_b, sigma = _scaled_l1(n2, n1)  # σ = u1/u2 ≤ 1: row 2 kept, row 1 → σ·n2
    use_a = cost_a <= cost_b
    r1 = np.where(use_a[:, None], n1, sigma[:, None] * n2)
    r2 = np.where(use_a[:, None], rho[:, None] * n1, n2)
    return np.minimum(cost_a, cost_b), r1, r2


# ---------------------------------------------------------------------------------------------------
# ci on general blocks
def _fit_side(table: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Best non-negative u for fixed v: u_i = weighted median of c_ij / v_j with weights v_j."""
    safe = np.where(other > 0, other, 1.0)
    ratios = np.where(other[None, :] > 0, table / safe[None, :], 0.0)
    return _weighted_median(ratios, np.broadcast_to(other, table.shape).copy())


def _descent(table: np.ndarray, v: np.ndarray, max_iter: int = 200) -> tuple[float, np.ndarray, np.ndarray]:
    best = math.inf
    u = _fit_side(table, v)
    for _ in range(max_iter):
        v = _fit_side(table.T, u)
        u = _fit_side(table, v)
        cost = float(np.abs(table - np.outer(u, v)).sum())
        if cost >= best - _REL_TOL * max(best, 1.0):
            best = min(best, cost)
            break
        best = cost
    return best, u, v


def _ci_upper(table: np.ndarray, restarts: int, seed: int) -> tuple[float, np.ndarray]:
    """Alternating weighted-median descent from the independence fit, every row, and random starts."""
    rng = np.random.default_rng(seed)
    starts = [table.sum(axis=0)] + [row for row in table] + [
        table.sum(axis=0) * rng.uniform(0.5, 1.5, size=table.shape[1]) for _ in range(restarts)
    ]
    best, best_fit = math.inf, np.zeros_like(table)
    for v0 in starts:
        if not np.any(v0 > 0):
            continue
        cost, u, v = _descent(table, np.asarray(v0, dtype=np.float64))
        if cost < best:
            best, best_fit = cost, np.outer(u, v)
    return best, best_fit


def _pairing_lower(table: np.ndarray) -> float:
    """Best fractional pairing of rows into exact two-row problems — a lower bound on the optimum.

    For any rank-1 fit with per-row costs κ_i, and any weights x ≥ 0 on row pairs with
    Σ_{i'} x_{ii'} ≤ 1 for every row, Σ x_{ii'}·two_row(i, i') ≤ Σ x_{ii'}(κ_i + κ_{i'}) ≤ Σ_i κ_i.
    The maximum over that (data-independent) fractional matching polytope is an LP (HiGHS); it is at
    least the best integral pairing and at least the average over all pairs.
    """
    from scipy.optimize import linprog

    m = table.shape[0]
    if m < 2:
        return 0.0
    i, j = np.triu_indices(m, 1)
    costs = two_row_ci(table[i], table[j])[0]
    incidence = np.zeros((m, len(i)))
    incidence[i, np.arange(len(i))] = 1.0
    incidence[j, np.arange(len(i))] = 1.0
    res = linprog(-costs, A_ub=incidence, b_ub=np.ones(m), bounds=(0, None), method="highs")
    if not res.success:  # pragma: no cover - the LP is always feasible and bounded
        return 0.0
    # The LP value is a max; shave a relative 1e-9 so solver round-off never overstates the bound.
    return max(0.0, float(-res.fun) * (1 - 1e-9))


def _ci_block(table: np.ndarray, *, restarts: int = 8, seed: int = 0) -> BlockRepair:
    rows = np.flatnonzero(table.sum(axis=1) > 0)
    cols = np.flatnonzero(table.sum(axis=0) > 0)
    sub = table[np.ix_(rows, cols)]
    repaired = np.zeros_like(table)
    if len(rows) <= 1 or len(cols) <= 1:
        repaired[np.ix_(rows, cols)] = sub
        return BlockRepair(0.0, 0.0, True, "closed form (one value with data)", repaired=repaired)
    if min(len(rows), len(cols)) == 2:
        flip = len(rows) != 2
        two = sub.T if flip else sub
        cost, r1, r2 = two_row_ci(two[:1], two[1:])
        fit = np.vstack([r1, r2])
        repaired[np.ix_(rows, cols)] = fit.T if flip else fit
        value = float(cost[0])
        return BlockRepair(value, value, True, "closed form (two values)", repaired=repaired)
    upper, fit = _ci_upper(sub, restarts, seed)
    # The released statistic: a max over a fixed family of 1-Lipschitz functions (docs/privacy.md);
    # it is never clipped by the heuristic upper bound, which would make it data-path dependent.
    lower = max(_pairing_lower(sub), _pairing_lower(sub.T))
    repaired[np.ix_(rows, cols)] = fit
    exact = abs(upper - lower) <= 1e-7 * max(upper, 1.0)
    return BlockRepair(lower, upper, exact, "bounds: weighted-median descent / best pairing", repaired=repaired)


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


def _center_block(table: np.ndarray, *, binary: bool, time_limit: float) -> BlockRepair:
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
    if min(grid_size, subsets) <= ENUMERATION_LIMIT:
        if grid_size <= subsets:
            value, target = _grid_search(rows, grids)
            method = f"exact enumeration of {grid_size:,} outcome targets"
        else:
            value, target = _subset_search(rows)
            method = f"exact enumeration of {subsets:,} kept sets"
        lower = upper = value
    else:
        from dpaudit.measures._center_cpsat import solve_center

        lower, upper, target = solve_center(rows, binary=binary, time_limit=time_limit)
        method = f"CP-SAT (time limit {time_limit:g} s)"
    cost, keep_active = _cost_of(rows, target)
    upper = min(upper, cost)
    kept[active] = keep_active
    exact = upper - lower <= _REL_TOL * max(upper, 1.0)
    return BlockRepair(float(lower), float(upper), exact, method, kept=kept, target=target)


# ---------------------------------------------------------------------------------------------------
def repair_block(counts: np.ndarray, semantics: Semantics = "ci", *, time_limit: float = 10.0) -> BlockRepair:
    """Repair one block's (P × O) count table under ``semantics``.

    Examples
    --------
    Flip test (spec §5) with N = 100 rows per group at t = 0.5: ci = 2Nt/(1+t), bag = N·min(2t, 1),
    set = 0 below t = 1.

    >>> table = np.array([[75, 25], [25, 75]])
    >>> [round(repair_block(table, s).lower, 6) for s in ("ci", "bag", "set")]
    [66.666667, 100.0, 0.0]
    """
    _check_semantics(semantics)
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"a block is a 2-D (P, O) table, got shape {table.shape}")
    if semantics == "ci":
        return _ci_block(table)
    return _center_block(table, binary=semantics == "set", time_limit=time_limit)


def repair_blocks(counts: np.ndarray, semantics: Semantics = "ci", *, time_limit: float = 10.0) -> list[BlockRepair]:
    """Repair every block of a ``(blocks, P, O)`` table; empty blocks cost 0."""
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim == 2:
        table = table[None]
    return [repair_block(block, semantics, time_limit=time_limit) for block in table]


def u_r(counts: np.ndarray, *, semantics: Semantics = "ci", time_limit: float = 10.0) -> float:
    """U_R of one criterion: the sum over blocks of the certified lower bounds (the minimum when exact).

    Examples
    --------
    >>> u_r(np.array([[10, 0], [0, 10]]), semantics="ci")
    10.0
    """
    return math.fsum(b.lower for b in repair_blocks(counts, semantics, time_limit=time_limit))


def describe_block(table: Any, block_index: int, result: BlockRepair, *, top: int = 10) -> dict[str, Any]:
    """JSON-ready description of one block's repair (values, bounds, what changes)."""
    labels = table.cell_labels(block_index, 0, 0)["admissible"]
    out: dict[str, Any] = {
        "criterion": str(table.criterion),
        "admissible": labels,
        "value": result.lower,
        "lower": result.lower,
        "upper": result.upper,
        "exact": result.exact,
        "method": result.method,
    }
    counts = table.counts[block_index]
    if result.repaired is not None:
        change = result.repaired - counts
        flat = np.argsort(-np.abs(change), axis=None, kind="stable")[:top]
        out["changes"] = [
            {
                **{k: v for k, v in table.cell_labels(block_index, int(p), int(o)).items() if k != "admissible"},
                "count": int(counts[p, o]),
                "repaired": float(result.repaired[p, o]),
                "change": float(change[p, o]),
            }
            for p, o in zip(*np.unravel_index(flat, change.shape))
            if abs(change[p, o]) > 1e-9
        ]
    if result.kept is not None:
        out["kept"] = [table.cell_labels(block_index, int(p), 0)["protected"] for p in np.flatnonzero(result.kept)]
        out["deleted"] = [
            table.cell_labels(block_index, int(p), 0)["protected"]
            for p in np.flatnonzero(~result.kept & (counts.sum(axis=1) > 0))
        ]
        out["target"] = [
            {**table.cell_labels(block_index, 0, int(o))["outcome"], "count": float(result.target[o])}
            for o in range(len(result.target))
        ]
    return out
