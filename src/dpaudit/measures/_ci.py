"""The ``ci`` repair of one block: the L1 distance to the nearest non-negative rank-1 table.

Closed form when a side has at most two values with data (:func:`two_row_ci`, spec §2.3); otherwise
the global branch and bound of :mod:`dpaudit.measures._ci_exact`, warm-started from an upper bound by
alternating weighted-median descent with restarts and a lower bound from the best pairing of rows (or
columns) into exact two-row problems. It ends with certified bounds at most ``TOLERANCE`` (0.001
tuples) apart, or, when its work budget (:mod:`dpaudit.measures._limits`) runs out first, with the
bounds it has (``stopped_by``).
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.measures._block import REL_TOL, BlockRepair
from dpaudit.measures._ci_exact import STALL_CHECK, STALL_WORK, TOLERANCE, ci_branch_and_bound
from dpaudit.measures._limits import NO_PROGRESS, TIME_LIMIT, Limits

__all__ = ["two_row_ci", "ci_block", "TOLERANCE"]


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
        if cost >= best - REL_TOL * max(best, 1.0):
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


def ci_block(table: np.ndarray, *, limits: Limits, restarts: int = 8, seed: int = 0) -> BlockRepair:
    """The ci repair of one block: exact (to ``TOLERANCE``) unless the branch and bound's work budget
    (or an explicit wall clock, ``limits.seconds``) runs out.

    ``lower`` is a certified lower bound (the released statistic) and ``upper`` the cost of the
    returned repaired table; ``exact`` when ``upper − lower ≤ TOLERANCE`` (closed forms: equal).
    """
    table = np.asarray(table, dtype=np.float64)
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
    pairing = max(_pairing_lower(sub), _pairing_lower(sub.T))
    if upper - pairing <= TOLERANCE:  # the warm-start bounds already meet
        repaired[np.ix_(rows, cols)] = fit
        return BlockRepair(pairing, upper, True, "descent / best pairing (bounds meet)", repaired=repaired)
    res = ci_branch_and_bound(sub, upper=upper, fit=fit, lower=pairing, limits=limits)
    repaired[np.ix_(rows, cols)] = res.fit
    if res.stopped_by is None:
        return BlockRepair(res.lower, res.upper, True, f"branch and bound (gap ≤ {TOLERANCE:g})", repaired=repaired)
    # Stopped: the certified bounds the search reached. Its lower bound depends on how far the search got
    # (with the work budget: the same on every machine), so it is not shown to move by at most the
    # sensitivity between neighbours; Repair.assess marks such a release (docs/privacy.md).
    why = (f"no progress in its first {min(STALL_CHECK * limits.work, STALL_WORK):g} work units"
           if res.stopped_by == NO_PROGRESS else f"the {limits.seconds:g} s time limit"
           if res.stopped_by == TIME_LIMIT else f"the work limit {limits.work:g} ({res.nodes:,} nodes)")
    return BlockRepair(res.lower, res.upper, False, f"branch and bound stopped: {why}", repaired=repaired,
                       stopped_by=res.stopped_by)
