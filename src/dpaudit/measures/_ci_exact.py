"""Exact ``ci`` of a block: spatial branch and bound over the column factor v (docs/fairness.md, "ci").

ci(c) = min over u ≥ 0, v ≥ 0 of Σ_{p,o} |c_po − u_p v_o|. The objective is invariant under
(u, v) → (u/t, t·v), so v ranges over the simplex Σ_o v_o = 1 (the table is transposed so that v is
the smaller side). The search covers the simplex by boxes [l, h]; a box is discarded when a certified
lower bound on the objective over it is at least the incumbent − ``TOLERANCE``. Two bounds:

*separable bound* — Σ_p min_u Σ_o dist(c_po, [u·l_o, u·h_o]), a 1-D convex piecewise-linear
minimisation per row, solved exactly at its breakpoints (vectorised);

*McCormick LP* — for every v in the box each row's best u_p is a weighted median, which lies in an
interval [a_p, b_p] computed from the box (:func:`response_range`); with w_po = u_p v_o replaced by its
McCormick envelope over [a_p, b_p] × [l_o, h_o] the problem is an LP (HiGHS) whose error shrinks with
the product of the widths, so boxes around the optimum close.

Every box's incumbent candidate is f(v) at the LP's v (weighted-median u), so the incumbent is
always achieved by a non-negative rank-1 table. When the search ends, the least bound of the discarded
boxes is a certified lower bound at most ``TOLERANCE`` below the incumbent. Proofs: docs/fairness.md.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from dpaudit.measures._limits import (
    LP_ITERATIONS_PER_CELL,
    NO_PROGRESS,
    NODE_BASE,
    TIME_LIMIT,
    UNIT_NODE_WORK,
    WORK_LIMIT,
    Limits,
)

__all__ = ["TOLERANCE", "ExactCI", "ci_branch_and_bound", "separable_bound", "response_range", "objective_at"]

#: Absolute gap (in tuples) at which the branch and bound stops: the block's ``ci`` is then known to
#: within this many tuples, and its certified lower bound is what is released (sensitivity 2 + 2·TOLERANCE
#: per criterion, docs/privacy.md).
TOLERANCE = 1e-3
#: After min(STALL_CHECK × the work limit, STALL_WORK) work units (:mod:`dpaudit.measures._limits`)
#: the search gives up if its lower bound has closed less than ``STALL_PROGRESS`` of the starting gap:
#: on the 20 × 20 Stack Overflow blocks the bound never leaves the warm-start value, and waiting out the
#: limit would change nothing but the run time. (Every block of the registered presets that closes at
#: all has moved far more by then.) Counted in work, like the limit: the same on every machine.
STALL_CHECK, STALL_WORK, STALL_PROGRESS = 0.25, 2.5, 0.01


@dataclass(frozen=True)
class ExactCI:
    """Result of :func:`ci_branch_and_bound` (in the orientation of the input table)."""

    lower: float
    upper: float
    fit: np.ndarray
    #: Why the search stopped before closing the gap: ``"work limit"``, ``"no progress"`` (see
    #: ``STALL_CHECK``) or ``"time limit"`` (an explicit wall clock); None when it finished.
    stopped_by: str | None
    nodes: int
    #: Weighted nodes (``NODE_BASE + m·k`` each) the search used: its work, in the budget's currency.
    work: int = 0


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    order = np.argsort(values, axis=-1, kind="stable")
    xs = np.take_along_axis(values, order, axis=-1)
    cw = np.cumsum(np.take_along_axis(weights, order, axis=-1), axis=-1)
    total = cw[..., -1:]
    idx = np.argmax(cw >= total / 2.0, axis=-1)
    med = np.take_along_axis(xs, idx[..., None], axis=-1)[..., 0]
    return np.where(total[..., 0] > 0, med, 0.0)


def objective_at(c: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f(v) = Σ_p min_u Σ_o |c_po − u·v_o| for a batch of v (B, k): values (B,) and best u (B, m)."""
    safe = np.where(v > 0, v, 1.0)
    ratios = np.where(v[:, None, :] > 0, c[None] / safe[:, None, :], 0.0)
    u = _weighted_median(ratios, np.broadcast_to(v[:, None, :], ratios.shape))
    return np.abs(c[None] - u[:, :, None] * v[:, None, :]).sum(axis=(1, 2)), u


def separable_bound(c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Σ_p min_{u ≥ 0} Σ_o dist(c_po, [u·lo_o, u·hi_o]) for boxes lo, hi of shape (B, k).

    Each row's function of u is convex piecewise linear (a sum of max(0, u·l − c, c − u·h)) with
    breakpoints {c/h, c/l} and is non-increasing beyond the largest, so its minimum is attained at
    u = 0 or at a breakpoint: evaluating there is exact.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        bh = np.where(hi[:, None, :] > 0, c[None] / np.where(hi > 0, hi, 1.0)[:, None, :], 0.0)
        bl = np.where(lo[:, None, :] > 0, c[None] / np.where(lo > 0, lo, 1.0)[:, None, :], 0.0)
    cand = np.concatenate([bh, bl, np.zeros(bh.shape[:2] + (1,))], axis=2)  # (B, m, 2k+1)
    under = cand[..., None] * lo[:, None, None, :] - c[None, :, None, :]
    over = c[None, :, None, :] - cand[..., None] * hi[:, None, None, :]
    g = np.maximum(np.maximum(under, over), 0.0).sum(axis=3)
    return g.min(axis=2).sum(axis=1)


def response_range(c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row p, an interval [a_p, b_p] holding every minimiser u of Σ_o |c_po − u·v_o| for every v in [lo, hi].

    The right derivative at t, Σ_{t·v_o ≥ c_o} v_o − Σ_{t·v_o < c_o} v_o, is at most
    D⁺(t) = Σ_{t·h_o ≥ c_o} h_o − Σ_{t·h_o < c_o} l_o; where D⁺(t) < 0 every minimiser exceeds t, so
    a_p is the least breakpoint c_o/h_o (or 0) with D⁺ ≥ 0. Symmetrically the left derivative is at
    least D⁻(t) = Σ_{t·l_o > c_o} l_o − Σ_{t·l_o ≤ c_o} h_o, and b_p is the least t ∈ {0} ∪ {c_o/l_o}
    with D⁻(t) > 0 (∞ if none).
    """
    m, k = c.shape
    # Cells are compared through the same floating-point ratios as the candidate t (t·h ≥ c ⟺ t ≥ c/h),
    # so round-off in a product can never move a cell across its own breakpoint.
    with np.errstate(divide="ignore", invalid="ignore"):
        r_a = np.where(hi[None] > 0, c / np.where(hi > 0, hi, 1.0)[None], np.where(c > 0, np.inf, 0.0))
        r_b = np.where(lo[None] > 0, c / np.where(lo > 0, lo, 1.0)[None], np.inf)
    t_a = np.sort(np.concatenate([np.zeros((m, 1)), np.where(np.isfinite(r_a), r_a, 0.0)], axis=1), axis=1)
    d_plus = np.where(t_a[:, :, None] >= r_a[:, None, :], hi[None, None, :], -lo[None, None, :]).sum(2)
    ok = d_plus >= 0
    a = np.where(ok.any(1), t_a[np.arange(m), np.argmax(ok, axis=1)], t_a[:, -1])
    t_b = np.sort(np.concatenate([np.zeros((m, 1)), r_b], axis=1), axis=1)
    finite = np.isfinite(t_b)
    tb = np.where(finite, t_b, 0.0)
    d_minus = np.where(tb[:, :, None] > r_b[:, None, :], lo[None, None, :], -hi[None, None, :]).sum(2)
    bad = (d_minus > 0) & finite
    b = np.where(bad.any(1), tb[np.arange(m), np.argmax(bad, axis=1)], np.inf)
    return a, b


class _McCormick:
    """The LP min Σ e s.t. e ≥ |c − w|, w in the McCormick envelope of u·v over the boxes, Σ v = 1.

    Solved by HiGHS (dual simplex) through SciPy's bindings (``scipy.optimize._highspy``, the module
    behind ``linprog(method="highs")``; SciPy ≥ 1.15): the model keeps one sparsity pattern, so each box
    only refills the coefficient and bound arrays, and the previous box's optimal basis warm-starts the
    next solve — about 3× faster than a fresh ``linprog`` problem per box. (The separate ``highspy``
    package prints a banner on stdout, which would corrupt ``--json`` output.)
    """

    def __init__(self, c: np.ndarray) -> None:
        from scipy.optimize._highspy import _core as highspy

        self.c = c
        m, k = c.shape
        n = m * k
        self.m, self.k, self.n = m, k, n
        self.I = np.repeat(np.arange(m), k)
        self.J = np.tile(np.arange(k), m)
        ar = np.arange(n)
        ow, oe = m + k, m + k + n
        ones = np.ones(n)
        # Six row blocks of n rows: e ≥ c − w, e ≥ w − c, two McCormick under- and two over-estimators;
        # then Σ v = 1. The sparsity pattern is fixed; the box-dependent coefficients are filled in per
        # call, in row-wise (CSR) order through the permutation ``order``.
        blocks = [[(oe + ar), (ow + ar)], [(oe + ar), (ow + ar)]] + [[m + self.J, self.I, ow + ar]] * 4
        rows = np.concatenate([np.tile(np.arange(r * n, (r + 1) * n), len(cols)) for r, cols in enumerate(blocks)]
                              + [np.full(k, 6 * n)])
        cols = np.concatenate([np.concatenate(cols) for cols in blocks] + [m + np.arange(k)])
        import scipy.sparse as sp  # here, not at import: `import dpaudit` loads no solver (issue 25)

        probe = sp.csr_matrix((np.arange(1.0, len(rows) + 1.0), (rows, cols)), shape=(6 * n + 1, oe + n))
        probe.sort_indices()
        self.order = probe.data.astype(np.int64) - 1
        self.start, self.index = probe.indptr.astype(np.int32), probe.indices.astype(np.int32)
        self.num_col, self.num_row = oe + n, 6 * n + 1
        self.fixed = np.concatenate([-ones, -ones, -ones, ones])
        self.cost = np.concatenate([np.zeros(m + k + n), ones])
        self.cv = c.ravel()
        self.inf = highspy.kHighsInf
        self.row_lower = np.concatenate([np.full(6 * n, -self.inf), [1.0]])
        self.integrality = np.zeros(self.num_col, dtype=np.int32)
        self.status = highspy.HighsModelStatus
        self.highs = highspy._Highs()
        self.highs.setOptionValue("output_flag", False)
        self.highs.setOptionValue("presolve", "off")
        self.highs.setOptionValue("threads", 1)
        self.highs.setOptionValue("simplex_iteration_limit", LP_ITERATIONS_PER_CELL * n)  # work, not seconds
        self.basis = None
        self.violation = np.zeros(k)

    def solve(self, a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[float, np.ndarray | None]:
        m, k, n = self.m, self.k, self.n
        ai, bi, lj, hj = a[self.I], b[self.I], lo[self.J], hi[self.J]
        ones = np.ones(n)
        vals = np.concatenate([self.fixed,
                               ai, lj, -ones,  # a·v + l·u − w ≤ a·l
                               bi, hj, -ones,  # b·v + h·u − w ≤ b·h
                               -bi, -lj, ones,  # w − b·v − l·u ≤ −b·l
                               -ai, -hj, ones,  # w − a·v − h·u ≤ −a·h
                               np.ones(k)])  # Σ v = 1
        rhs = np.concatenate([-self.cv, self.cv, ai * lj, bi * hj, -bi * lj, -ai * hj, [1.0]])
        col_lower = np.concatenate([a, lo, np.full(n, -self.inf), np.zeros(n)])
        col_upper = np.concatenate([b, hi, np.full(2 * n, self.inf)])
        h = self.highs
        h.passModel(self.num_col, self.num_row, len(vals), 2, 1, 0.0, self.cost, col_lower, col_upper,
                    self.row_lower, rhs, self.start, self.index, vals[self.order], self.integrality)
        if self.basis is not None:
            h.setBasis(self.basis)
        h.run()
        status = h.getModelStatus()
        if status == self.status.kInfeasible:  # no point of the box is a candidate optimum
            return math.inf, None
        if status != self.status.kOptimal:  # pragma: no cover - numerical trouble: keep the box, learn nothing
            self.basis = None
            return -math.inf, None
        self.basis = h.getBasis()
        # Simplex optima of these small LPs are accurate to round-off; shave a relative 1e-11
        # so round-off never lifts the bound above the true LP value.
        value = float(h.getInfo().objective_function_value)
        x = np.asarray(h.getSolution().col_value)
        u, v, w = x[:m], x[m:m + k], x[m + k:m + k + n]
        # How far the LP's w is from the product u·v, per column: where the relaxation is loosest.
        self.violation = np.bincount(self.J, weights=np.abs(w - u[self.I] * v[self.J]), minlength=k).astype(np.float64)
        return value * (1.0 - 1e-11) - 1e-12, v


def ci_branch_and_bound(table: np.ndarray, *, upper: float, fit: np.ndarray, lower: float = 0.0,
                        limits: Limits, tolerance: float = TOLERANCE) -> ExactCI:
    """Global minimum of Σ|c − u vᵀ| over u, v ≥ 0, warm-started from a feasible ``fit`` of cost ``upper``
    and a certified ``lower`` bound.

    Returns the incumbent (``upper``, achieved by ``fit``) and a certified ``lower`` bound: within
    ``tolerance`` of each other when the search finished, otherwise (``stopped_by`` the work limit, the
    no-progress rule or an explicit wall clock) the least bound of the open and discarded boxes. Every
    child box costs ``NODE_BASE + m·k`` of the budget ``limits.node_work``.
    """
    c = np.asarray(table, dtype=np.float64)
    flip = c.shape[1] > c.shape[0]
    if flip:
        c = c.T
    m, k = c.shape
    fit_c = np.asarray(fit, dtype=np.float64).T if flip else np.asarray(fit, dtype=np.float64)
    inc, inc_v = float(upper), fit_c.sum(axis=0)
    inc_v = inc_v / inc_v.sum() if inc_v.sum() > 0 else np.full(k, 1.0 / k)
    f0, _ = objective_at(c, inc_v[None])
    if f0[0] < inc:
        inc = float(f0[0])
    rows = c.sum(axis=1)
    colmass = c.sum(axis=0)
    lp = _McCormick(c)
    # Heap entries: (bound, counter, lo, hi, branching hint (coordinate, value) from the box's LP or None).
    heap: list[tuple[float, int, np.ndarray, np.ndarray, tuple[int, float] | None]] = [
        (float(lower), 0, np.zeros(k), np.ones(k), None)]
    counter, nodes = 1, 0
    closed = math.inf  # the least bound of a discarded box (each is ≥ the incumbent of its time − tolerance)

    def done(bound: float) -> bool:
        nonlocal closed
        if bound >= inc - tolerance:
            closed = min(closed, bound)
            return True
        return False

    gap0, checked = inc - float(lower), False
    weight, budget = NODE_BASE + m * k, limits.node_work
    stall_at = min(STALL_CHECK * budget, STALL_WORK * UNIT_NODE_WORK)
    while heap:
        work = nodes * weight
        over, late = work >= budget, limits.out_of_time()
        if over or late or (not checked and work >= stall_at):
            reached = max(float(lower), min(heap[0][0], closed))  # best-first: heap[0] is the least open bound
            stalled = reached - float(lower) < STALL_PROGRESS * gap0
            if over or late or stalled:
                why = WORK_LIMIT if over else TIME_LIMIT if late else NO_PROGRESS
                return _result(inc, inc_v, c, flip, reached, stopped_by=why, nodes=nodes, work=work)
            checked = True
        bound, _, lo, hi, hint = heapq.heappop(heap)
        if done(bound):
            continue
        # Branch where the box's LP was loosest (largest Σ_p |w − u·v| × width), at the LP's v; boxes
        # without an LP: largest width × column mass, at the incumbent. Cuts near an edge go to the middle.
        if hint is not None and hi[hint[0]] - lo[hint[0]] > 1e-12:
            j, at = hint
        else:
            j = int(np.argmax((hi - lo) * (colmass + 1e-12)))
            at = inc_v[j]
        w = hi[j] - lo[j]
        cut = at if lo[j] + 0.1 * w < at < hi[j] - 0.1 * w else lo[j] + 0.5 * w
        for side in (0, 1):
            klo, khi = lo.copy(), hi.copy()
            if side == 0:
                khi[j] = cut
            else:
                klo[j] = cut
            s_lo, s_hi = klo.sum(), khi.sum()
            if s_lo > 1.0 or s_hi < 1.0:  # the box misses the simplex
                continue
            khi = np.minimum(khi, 1.0 - (s_lo - klo))
            klo = np.maximum(klo, 1.0 - (s_hi - khi))
            nodes += 1
            child = max(bound, float(separable_bound(c, klo[None], khi[None])[0]))
            if done(child):
                continue
            a, b = response_range(c, klo, khi)
            b = np.minimum(b, rows + inc)  # a row's cost is at least u_p·Σv − r_p = u_p − r_p
            a = np.maximum(a, rows - inc)  # ... and at least r_p − u_p
            if np.any(a > b):
                continue
            v = 0.5 * (klo + khi)
            hint = None
            if np.all(np.isfinite(b)):
                value, v_lp = lp.solve(a, b, klo, khi)
                child = max(child, value)
                if done(child):
                    continue
                if v_lp is not None:
                    v = np.clip(v_lp, klo, khi)
                    jj = int(np.argmax(lp.violation * (khi - klo)))
                    hint = (jj, float(v[jj]))
            if v.sum() > 0:
                fv, _ = objective_at(c, (v / v.sum())[None])
                if fv[0] < inc:
                    inc, inc_v = float(fv[0]), v / v.sum()
            heapq.heappush(heap, (child, counter, klo, khi, hint))
            counter += 1
    return _result(inc, inc_v, c, flip, max(float(lower), closed), stopped_by=None, nodes=nodes, work=nodes * weight)


def _polish(c: np.ndarray, v: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Alternating weighted medians from v (best u for v, best v for u, …) until no strict decrease:
    the search stops within its tolerance of the minimum, and this moves its incumbent onto the
    exact local minimum it lies at (the repair's cost can only go down)."""
    f, u = objective_at(c, v[None])
    value, u = float(f[0]), u[0]
    for _ in range(100):
        g, w = objective_at(c.T, u[None])
        if not float(g[0]) < value - 1e-13 * max(value, 1.0) or w[0].sum() <= 0:
            break
        v = w[0] / w[0].sum()
        f, uu = objective_at(c, v[None])
        value, u = float(f[0]), uu[0]
    return value, u, v


def _result(inc: float, v: np.ndarray, c: np.ndarray, flip: bool, lower: float, *, stopped_by: str | None,
            nodes: int, work: int) -> ExactCI:
    value, u, v = _polish(c, v)
    fit = np.outer(u, v)
    fit = fit.T if flip else fit
    return ExactCI(min(lower, value), value, fit, stopped_by, nodes, work)
