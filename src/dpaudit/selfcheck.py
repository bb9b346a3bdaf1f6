"""Empirical privacy audit of every dpaudit release: ``dpaudit selfcheck``.

For each mechanism dpaudit releases — the U_MI^TVD value, the U_TC value (domain and observed
cells), the U_TC top-cell names (report-noisy-max), the U_R value (ci, bag, set) and an audit that
splits ε across two measures — the self-check

1. builds **worst-case replace-one neighbours** D, D′ (same n, one tuple moved from one cell to
   another) from the sensitivity derivations of ``docs/privacy.md``, as close to the proven bound as
   known (:func:`worst_case_pairs`);
2. computes the exact values on both with the real measures and runs the **real** release — OpenDP's
   ``make_laplace`` / ``make_noisy_top_k``, unseeded, one measurement invoked repeatedly
   (:func:`dpaudit.privacy._mechanisms.laplace_draws`) — ``draws`` times on each;
3. picks the most distinguishing test on a random half of the draws (a threshold on the output, on
   the exact log-likelihood ratio for the joint split release, or a set of named cells ordered by
   their likelihood ratio on that half) and evaluates it on the other half;
4. turns the counts into an ε lower bound with
   :func:`dpaudit.mia.metrics.epsilon_lower_bound_ci` (Clopper–Pearson; Jagielski, Ullman & Oprea
   2020). The evaluation half is independent of the choice of the test, so the bound holds with the
   stated confidence. ``level`` is family-wise: each of the m required bounds is computed at
   ``1 − (1 − level)/m`` (Bonferroni), so a correct dpaudit fails the self-check with probability at
   most ``1 − level``, and in fact far less.

A check **fails** when its bound exceeds the ε the release claims. The audit must also have teeth:
the same procedure on a **deliberately broken** release (noise for half the claimed sensitivity,
built only here) must give a bound above the claim. It is *required* where the broken release really
violates the claim by ≥ 1.5× on the pair; elsewhere (the observed-mode value and the names, whose
proven bounds are 2× and 3× above anything reachable) it is reported for information.

The noise is OpenDP's and cannot be seeded (that is the point: the release under audit is the real
one); ``seed`` only fixes the random split of the draws into the two halves. Every draw spends ε on
synthetic data only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit._validation import seed_value, unit_interval, whole_number
from dpaudit.criteria import Criterion
from dpaudit.measures import TVD, Measure, Repair, TopContribution
from dpaudit.measures.contribution import MD_LINF_SENSITIVITY, marginal_differences
from dpaudit.mia.metrics import epsilon_lower_bound_ci
from dpaudit.privacy._mechanisms import laplace_draws, noisy_top_k_draws

__all__ = ["selfcheck", "family_r", "SelfcheckReport", "CheckResult", "NeighbourPair", "worst_case_pairs",
           "CI_DRAWS", "FULL_DRAWS", "EPSILON", "SPLIT", "BROKEN_FACTOR", "permute_and_flip_probabilities"]

#: Draws per database (each of D and D′) of the default run and of ``full=True``.
CI_DRAWS = 4_000
FULL_DRAWS = 100_000
MIN_DRAWS = 100
#: The ε each stand-alone release claims, and the total of the split audit.
EPSILON = 1.0
#: The split audit: two measures, most of ε on U_R, whose pair is tight.
SPLIT: Mapping[str, float] = {"tc": 0.2, "repair": 0.8}
#: The broken release adds noise for this fraction of the claimed sensitivity.
BROKEN_FACTOR = 0.5
#: A broken release must be caught when its exact privacy loss on the pair is at least this × the claim.
REQUIRED_EXCESS = 1.5
#: The test is the one with the largest Clopper–Pearson bound on the selection half at this stricter
#: level: it prefers thresholds backed by many draws over lucky far tails (simulated at 4,000 draws:
#: the broken U_MI^TVD release is then never missed in 2,000 runs, against 1.8 % at the check level).
#: It affects only which test is evaluated, never the validity of the bound.
SELECTION_LEVEL = 1.0 - 1e-8
#: U_TC's k in the value checks: larger than any table here, so U_TC sums every cell's MD.
K_ALL = 10**6


# ---------------------------------------------------------------------------------------------------
# Worst-case neighbours
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class NeighbourPair:
    """Replace-one neighbours D, D′ of one criterion, as ``(blocks, P, O)`` count tables.

    D′ is D with one tuple moved from one cell to another (``moved``): the same n, one row replaced.
    :meth:`rows` gives both databases row by row (columns a, p, o) with exactly one row different.
    """

    name: str
    criterion: str
    before: np.ndarray
    after: np.ndarray
    description: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "before", np.asarray(self.before, dtype=np.int64))
        object.__setattr__(self, "after", np.asarray(self.after, dtype=np.int64))
        _ = self.moved  # refuses a pair that is not replace-one

    @property
    def n(self) -> int:
        return int(self.before.sum())

    @property
    def conditional(self) -> bool:
        return bool(Criterion.parse(self.criterion).admissible)

    @property
    def moved(self) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """The cell that loses the replaced tuple and the cell that receives its replacement."""
        diff = self.after - self.before
        if self.before.shape != self.after.shape or self.before.ndim != 3 or (self.before < 0).any() \
                or (self.after < 0).any():
            raise DPAuditError(f"pair {self.name}: count tables must be non-negative, (blocks, P, O), same shape")
        src, dst = np.argwhere(diff == -1), np.argwhere(diff == 1)
        if len(src) != 1 or len(dst) != 1 or np.count_nonzero(diff) != 2:
            raise DPAuditError(f"pair {self.name}: D′ must move exactly one tuple of D to another cell")
        return tuple(int(v) for v in src[0]), tuple(int(v) for v in dst[0])  # type: ignore[return-value]

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """D and D′ row by row, int arrays of shape (n, 3) (a, p, o); D′ replaces one row of D."""
        cells = np.argwhere(np.ones(self.before.shape, dtype=bool))
        d = np.repeat(cells, self.before.ravel(), axis=0)
        src, dst = self.moved
        i = int(np.flatnonzero((d == src).all(axis=1))[0])
        d_prime = d.copy()
        d_prime[i] = dst
        return d, d_prime

    def frames(self) -> tuple[Any, Any]:
        """D and D′ as pandas frames with columns a, p, o (codes), for :func:`dpaudit.audit`."""
        import pandas as pd

        d, d_prime = self.rows()
        return pd.DataFrame(d, columns=["a", "p", "o"]), pd.DataFrame(d_prime, columns=["a", "p", "o"])

    def schema(self) -> Any:
        """The declared domains of the frames: the table's shape."""
        from dpaudit.schema import Categorical, Schema

        return Schema({c: Categorical(list(range(s))) for c, s in zip(("a", "p", "o"), self.before.shape)})


def _moved(before: np.ndarray, src: tuple[int, int, int], dst: tuple[int, int, int]) -> np.ndarray:
    after = before.copy()
    after[src] -= 1
    after[dst] += 1
    return after


def family_r(k: int, m: int) -> np.ndarray:
    """docs/privacy.md, Family R: a lone (0,0) tuple, its row and column singletons, a k-diagonal of m."""
    t = np.zeros((k + 1, k + 1), dtype=np.int64)
    t[0, 0] = 1
    t[0, 1:] = t[1:, 0] = 1
    t[np.arange(1, k + 1), np.arange(1, k + 1)] = m
    return t


def tvd_pair(m: int = 300) -> NeighbourPair:
    """docs/privacy.md's cross-block family: N·ΔU → 38/3 (12.52 at m = 300)."""
    a = family_r(4 * m, m)
    b = np.zeros_like(a)
    b[[1, 2, 3], [1, 2, 3]] = m  # Family A: diag(m, m, m) beside an empty row and column
    before = np.stack([a, b])
    return NeighbourPair("tvd", "p ⊥ o | a", before, _moved(before, (0, 0, 0), (1, 0, 0)),
                         f"cross-block family (docs/privacy.md), m = {m}: block a = Family R, block b = Family A; the "
                         "lone (0,0) tuple of a moves to b's empty corner")


def tc_domain_pair(m: int = 100, big: int = 1000) -> NeighbourPair:
    """Σ|d| rises by → 4 in each block: Family R loses its lone tuple, a one-cell block gains a corner."""
    a = family_r(4 * m, m)
    b = np.zeros_like(a)
    b[1, 1] = big
    before = np.stack([a, b])
    return NeighbourPair("tc/domain", "p ⊥ o | a", before, _moved(before, (0, 0, 0), (1, 0, 0)),
                         f"block a = Family R (m = {m}), block b = one cell of {big}; the lone (0,0) tuple of a moves to "
                         "b's empty corner (each block's Σ|d| rises by almost 4)")


def tc_observed_pair(h: int = 1000) -> NeighbourPair:
    """A count-1 cell with MD → 1/4 empties; the cell that gains is already observed."""
    before = np.array([[[1, h], [h, 1]]])
    return NeighbourPair("tc/observed", "p ⊥ o", before, _moved(before, (0, 0, 0), (0, 1, 1)),
                         f"[[1, {h}], [{h}, 1]] → [[0, {h}], [{h}, 2]]: a single-tuple cell with MD ≈ 1/4 empties")


def naming_pair(a: int = 320, b: int = 12, c: int = 640) -> NeighbourPair:
    """A cell of a one-cell block gains a fresh corner tuple from a perfectly dependent block."""
    before = np.zeros((2, 2, 2), dtype=np.int64)
    before[0, 0, 1], before[1, 0, 1], before[1, 1, 0] = a, b, c
    return NeighbourPair("tc/names", "p ⊥ o | a", before, _moved(before, (1, 0, 1), (0, 1, 0)),
                         f"block 0 = one cell of {a}, block 1 = [[0, {b}], [{c}, 0]]; one tuple of block 1 moves to a "
                         "fresh corner of block 0 (found by search over the exact selection probabilities)")


#: Smallest pairs whose U_R changes by the full 2 (exhaustive search over 2×2 and 2×3 tables).
_REPAIR_PAIRS = {
    "ci": ([[0, 2], [2, 2]], (0, 0, 1), (0, 0, 0)),
    "bag": ([[0, 2], [0, 2]], (0, 0, 1), (0, 0, 0)),
    "set": ([[0, 1, 1], [0, 1, 1]], (0, 0, 1), (0, 0, 0)),
}


def repair_pair(semantics: str) -> NeighbourPair:
    table, src, dst = _REPAIR_PAIRS[semantics]
    before = np.array([table])
    after = _moved(before, src, dst)
    return NeighbourPair(f"repair/{semantics}", "p ⊥ o", before, after,
                         f"{before[0].tolist()} → {after[0].tolist()} (U_R {semantics} changes by the full 2)")


def split_pair() -> NeighbourPair:
    """A pair on which U_R ci moves by the full 2 and U_TC (all cells) by 0.69 of its bound."""
    before = np.array([[[1, 2], [2, 3], [2, 3]], [[1, 15], [0, 10], [1, 0]]])
    return NeighbourPair("split", "p ⊥ o | a", before, _moved(before, (0, 0, 0), (1, 2, 0)),
                         "2 blocks × 3 × 2, n = 40 (search): U_R ci moves by 2, U_TC by 0.69 of 8/n")


def worst_case_pairs() -> dict[str, NeighbourPair]:
    """Every pair the self-check uses, by check name."""
    pairs = [tvd_pair(), tc_domain_pair(), tc_observed_pair(), naming_pair()]
    pairs += [repair_pair(s) for s in _REPAIR_PAIRS] + [split_pair()]
    return {p.name: p for p in pairs}


def _value_measure(name: str) -> Measure:
    """The measure (options included) whose value release a stand-alone check audits."""
    if name == "tvd":
        return TVD()
    if name.startswith("tc/"):
        return TopContribution(k=K_ALL, cells=name.split("/")[1], name_cells=0)  # type: ignore[arg-type]
    return Repair(semantics=name.split("/")[1])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# Exact loss of report-noisy-max (OpenDP's max-divergence selection is permute-and-flip)
# ---------------------------------------------------------------------------------------------------
def permute_and_flip_probabilities(scores: Any, scale: float) -> np.ndarray:
    """Exact selection probabilities of permute-and-flip (McKenna & Sheldon 2020) with ``scale``.

    OpenDP's ``make_noisy_top_k(k=1)`` under max-divergence (exponential noise) is this mechanism:
    visit the candidates in random order and stop at r with probability p_r = exp((q_r − max q)/scale).
    Then P(r) = p_r · Σ_m e_m(1 − p_j : j ≠ r) / (C·binom(C−1, m)), e_m the elementary symmetric sums.

    Examples
    --------
    >>> permute_and_flip_probabilities([0.0, 0.0], 1.0).tolist()
    [0.5, 0.5]
    """
    q = np.asarray(scores, dtype=np.float64).ravel()
    c = q.size
    p = np.exp((q - q.max()) / scale)
    weight = np.array([1.0 / (c * math.comb(c - 1, m)) for m in range(c)])
    out = np.empty(c)
    for r in range(c):
        e = np.zeros(c)
        e[0] = 1.0
        for j in range(c):
            if j != r:
                e[1:] = e[1:] + (1.0 - p[j]) * e[:-1]
        out[r] = p[r] * float(weight @ e)
    return out


# ---------------------------------------------------------------------------------------------------
# The test: chosen on the first half, evaluated on the second
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Test:
    upper: bool          # the event is {statistic ≥ t} (else {statistic < t})
    positive_is_d1: bool  # the event is more likely under D′ (else under D)
    threshold: float


def _event_counts(stat: np.ndarray, thresholds: np.ndarray, upper: bool) -> np.ndarray:
    s = np.sort(stat)
    below = np.searchsorted(s, thresholds, side="left")  # #{stat < t}
    return s.size - below if upper else below


def _choose(s0: np.ndarray, s1: np.ndarray) -> _Test:
    pooled = np.unique(np.concatenate([s0, s1]))
    if pooled.size > 1024:
        pooled = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, 1025)))
    best: tuple[float, _Test] = (-1.0, _Test(True, True, float(pooled[0])))
    for upper in (True, False):
        c0, c1 = _event_counts(s0, pooled, upper), _event_counts(s1, pooled, upper)
        for positive_is_d1, (kp, np_), (kn, nn) in ((True, (c1, s1.size), (c0, s0.size)),
                                                    (False, (c0, s0.size), (c1, s1.size))):
            eps = np.atleast_1d(epsilon_lower_bound_ci(kp, np_, kn, nn, level=SELECTION_LEVEL).epsilon)
            i = int(np.argmax(eps))
            if eps[i] > best[0]:
                best = (float(eps[i]), _Test(upper, positive_is_d1, float(pooled[i])))
    return best[1]


@dataclass(frozen=True)
class _Outcome:
    test: str
    k_tp: int
    n_pos: int
    k_fp: int
    n_neg: int
    epsilon: float
    point: float


def _audit(out0: np.ndarray, out1: np.ndarray, statistic: Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], np.ndarray]],
           describe: Callable[[_Test], str], level: float, rng: np.random.Generator) -> _Outcome:
    """Pick the test on a random half of each sample, evaluate it on the other half, bound ε."""
    i0, i1 = rng.permutation(len(out0)), rng.permutation(len(out1))
    h0, h1 = len(out0) // 2, len(out1) // 2
    sel0, ev0, sel1, ev1 = out0[i0[:h0]], out0[i0[h0:]], out1[i1[:h1]], out1[i1[h1:]]
    stat = statistic(sel0, sel1)  # fitted on the selection half only
    test = _choose(stat(sel0), stat(sel1))
    e0, e1 = stat(ev0), stat(ev1)
    in0 = (e0 >= test.threshold) if test.upper else (e0 < test.threshold)
    in1 = (e1 >= test.threshold) if test.upper else (e1 < test.threshold)
    (kp, np_), (kn, nn) = ((int(in1.sum()), e1.size), (int(in0.sum()), e0.size))
    if not test.positive_is_d1:
        (kp, np_), (kn, nn) = (kn, nn), (kp, np_)
    bound = epsilon_lower_bound_ci(kp, np_, kn, nn, level=level)
    return _Outcome(describe(test), kp, np_, kn, nn, float(bound.epsilon), float(bound.point))


def _identity(sel0: np.ndarray, sel1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.asarray(x, dtype=np.float64)


def _describe_threshold(test: _Test) -> str:
    side = "≥" if test.upper else "<"
    return f"output {side} {test.threshold:.6g}, more likely under {'D′' if test.positive_is_d1 else 'D'}"


def _empirical_log_ratio(sel0: np.ndarray, sel1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Named cell → log(P̂_D′ / P̂_D) on the selection half (add-½ smoothing; unseen cells → 0)."""
    cells = np.union1d(sel0, sel1)
    ratio = {int(c): math.log(((sel1 == c).sum() + 0.5) / (sel1.size + 1.0)) - math.log(((sel0 == c).sum() + 0.5) / (sel0.size + 1.0))
             for c in cells}
    return lambda x: np.array([ratio.get(int(c), 0.0) for c in np.ravel(x)])


def _describe_cells(statistic_of: Callable[[np.ndarray], np.ndarray], universe: np.ndarray) -> Callable[[_Test], str]:
    def describe(test: _Test) -> str:
        s = statistic_of(universe)
        chosen = universe[(s >= test.threshold) if test.upper else (s < test.threshold)]
        return (f"named cell ∈ {{{', '.join(str(int(c)) for c in chosen)}}}, more likely under "
                f"{'D′' if test.positive_is_d1 else 'D'}")
    return describe


# ---------------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckResult:
    """One audited release on one pair.

    ``change`` is |v(D) − v(D′)| (for the names: the largest move of one cell's MD), ``ratio`` is
    ``change / sensitivity`` (for the joint split release: its exact loss over its claim);
    ``exact_loss`` is the largest privacy loss of the mechanism *as run* on this pair (Laplace:
    ``ε·change/sensitivity``; names: from the exact permute-and-flip probabilities), the most any test
    can show. A real release ``passed`` when ``epsilon_lb ≤ claimed_epsilon``; a broken one when it was
    caught (``epsilon_lb > claimed_epsilon``).
    """

    name: str
    release: str
    pair: str
    n: int
    claimed_epsilon: float
    sensitivity: float | None
    change: float | None
    ratio: float
    exact_loss: float
    draws: int
    test: str
    k_tp: int
    n_pos: int
    k_fp: int
    n_neg: int
    epsilon_lb: float
    point: float
    level: float
    broken: bool
    required: bool
    passed: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["point"] = None if math.isinf(self.point) else self.point
        return out


@dataclass(frozen=True)
class SelfcheckReport:
    """Every check, the broken releases, the split audit's accounting, and the verdict."""

    checks: tuple[CheckResult, ...]
    broken: tuple[CheckResult, ...]
    composition: Mapping[str, Any]
    draws: int
    level: float
    check_level: float
    full: bool
    seed: int
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def failures(self) -> list[str]:
        out = [f"{c.name}: ε lower bound {c.epsilon_lb:.3f} exceeds the claimed ε = {c.claimed_epsilon:g}"
               for c in self.checks if not c.passed]
        out += [f"{c.name} (broken, noise for {BROKEN_FACTOR:g}× the sensitivity) was not caught: ε lower bound "
                f"{c.epsilon_lb:.3f} ≤ {c.claimed_epsilon:g}; raise --draws"
                for c in self.broken if c.required and not c.passed]
        if not self.composition["ok"]:
            out.append(f"budget split: {self.composition['problem']}")
        return out

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failures": self.failures,
            "draws_per_database": self.draws,
            "full": self.full,
            "level": self.level,
            "check_level": self.check_level,
            "seed": self.seed,
            "seconds": round(self.seconds, 2),
            "checks": [c.to_dict() for c in self.checks],
            "broken": [c.to_dict() for c in self.broken],
            "composition": dict(self.composition),
            "method": ("worst-case replace-one neighbours; real OpenDP releases drawn repeatedly; test chosen on "
                       "half of the draws, evaluated on the other half; Clopper-Pearson epsilon lower bound "
                       "(dpaudit.mia.metrics.epsilon_lower_bound_ci), Bonferroni over the required checks"),
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        half = self.draws // 2
        lines = [
            "dpaudit selfcheck: empirical ε lower bounds of every release on worst-case replace-one neighbours",
            f"{self.draws:,} real OpenDP draws per database ({half:,} choose the test, {self.draws - half:,} evaluate it); "
            f"Clopper–Pearson, all {len(self.checks)} bounds hold together with {self.level:.0%} confidence "
            f"(each at {self.check_level:.2%})",
            "",
        ]
        header = f"{'release':<20} {'claimed ε':>9} {'|Δv|/Δ':>7} {'exact loss':>10} {'ε lower bound':>13}  result"
        lines += [header, "-" * len(header)]
        for c in self.checks:
            lines.append(f"{c.name:<20} {c.claimed_epsilon:>9.3g} {c.ratio:>7.3f} {c.exact_loss:>10.3f} "
                         f"{c.epsilon_lb:>13.3f}  {'pass' if c.passed else 'FAIL'}")
        lines += ["", f"broken releases (noise for {BROKEN_FACTOR:g}× the claimed sensitivity): caught when the bound "
                  "exceeds the claim", header, "-" * len(header)]
        for c in self.broken:
            verdict = "caught" if c.passed else ("NOT CAUGHT" if c.required else "not caught (not required)")
            lines.append(f"{c.name:<20} {c.claimed_epsilon:>9.3g} {c.ratio:>7.3f} {c.exact_loss:>10.3f} "
                         f"{c.epsilon_lb:>13.3f}  {verdict}")
        comp = self.composition
        parts = " + ".join(f"{k} {v:g}" for k, v in comp["releases"].items())
        lines += ["", f"budget split {dict(comp['split'])}: ε = {comp['epsilon']:g} → {parts} = {comp['sum']:g} "
                  f"(ledger spent {comp['spent']:g}): {'ok' if comp['ok'] else 'WRONG'}"]
        lines += ["", "pairs:"] + [f"  {c.name}: {c.pair}" + (f" — {c.note}" if c.note else "") for c in self.checks]
        lines += [f"  {n}" for n in self.notes]
        lines += ["", f"{'PASS' if self.ok else 'FAIL'} ({self.seconds:.1f} s)"]
        lines += [f"  {f}" for f in self.failures]
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------------
def _result(name: str, release: str, pair: NeighbourPair, claimed: float, sensitivity: float | None,
            change: float | None, ratio: float, exact_loss: float, draws: int, outcome: _Outcome, level: float,
            broken: bool, note: str = "") -> CheckResult:
    if broken:
        required = exact_loss >= REQUIRED_EXCESS * claimed
        passed = outcome.epsilon > claimed
    else:
        required, passed = True, outcome.epsilon <= claimed
    return CheckResult(name, release, pair.description, pair.n, claimed, sensitivity, change, ratio, exact_loss, draws,
                       outcome.test, outcome.k_tp, outcome.n_pos, outcome.k_fp, outcome.n_neg, outcome.epsilon,
                       outcome.point, level, broken, required, passed, note)


def _laplace_check(pair: NeighbourPair, draws: int, level: float, rng: np.random.Generator, broken: bool) -> CheckResult:
    measure = _value_measure(pair.name)
    v0, v1 = measure.value(pair.before), measure.value(pair.after)
    sensitivity = measure.sensitivity([Criterion.parse(pair.criterion)], pair.n)
    change = abs(v1 - v0)
    noise = sensitivity * (BROKEN_FACTOR if broken else 1.0)
    out0 = laplace_draws(v0, sensitivity=noise, epsilon=EPSILON, draws=draws)
    out1 = laplace_draws(v1, sensitivity=noise, epsilon=EPSILON, draws=draws)
    outcome = _audit(out0, out1, _identity, _describe_threshold, level, rng)
    return _result(pair.name, f"{measure.title} value (Laplace)", pair, EPSILON, sensitivity, change,
                   change / sensitivity, EPSILON * change / noise, draws, outcome, level, broken,
                   _NOTES.get(pair.name, lambda r: "")(change * (pair.n if pair.name.startswith(("tvd", "tc")) else 1)))


def _names_check(pair: NeighbourPair, draws: int, level: float, rng: np.random.Generator, broken: bool) -> CheckResult:
    s0, s1 = marginal_differences(pair.before).ravel(), marginal_differences(pair.after).ravel()
    sensitivity = MD_LINF_SENSITIVITY / pair.n  # what private_top_cells declares
    noise = sensitivity * (BROKEN_FACTOR if broken else 1.0)
    out0 = noisy_top_k_draws(s0, 1, sensitivity_linf=noise, epsilon=EPSILON, draws=draws)[:, 0]
    out1 = noisy_top_k_draws(s1, 1, sensitivity_linf=noise, epsilon=EPSILON, draws=draws)[:, 0]
    scale = 2.0 * noise / EPSILON
    exact = float(np.abs(np.log(permute_and_flip_probabilities(s0, scale))
                         - np.log(permute_and_flip_probabilities(s1, scale))).max())
    change = float(np.abs(s1 - s0).max())
    universe = np.arange(s0.size)
    fitted: dict[str, Callable[[np.ndarray], np.ndarray]] = {}

    def statistic(sel0: np.ndarray, sel1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        fitted["stat"] = _empirical_log_ratio(sel0, sel1)
        return fitted["stat"]

    outcome = _audit(out0, out1, statistic, lambda t: _describe_cells(fitted["stat"], universe)(t), level, rng)
    note = (f"largest move of one cell's MD: {change * pair.n:.3f}/n of the declared 3/n, so report-noisy-max realises "
            f"at most 2·(1/n)/scale = ε/3 here")
    return _result(pair.name, "U_TC top-cell name (report-noisy-max, k = 1)", pair, EPSILON, sensitivity, change,
                   change / sensitivity, exact, draws, outcome, level, broken, note)


def _notes() -> dict[str, Callable[[float], str]]:
    return {
        "tvd": lambda c: (f"N·|ΔU| = {c:.3f} of the released 16 ({c / 16:.1%}); the proven supremum is 38/3 ≈ 12.667 "
                          f"({c / (38 / 3):.1%} of it)"),
        "tc/domain": lambda c: f"n·|ΔU_TC| = {c:.3f} of min(3k, 8) = 8 ({c / 8:.1%}): the bound is tight",
        "tc/observed": lambda c: ("the emptied and the appearing cell move U_TC in opposite directions, so at most "
                                  "one of the two 2·max(1/4, 1/n) terms is reachable: ≈ 50 % is the practical maximum"),
        "repair/ci": lambda c: f"|ΔU_R| = {c:g} = the bound 2",
        "repair/bag": lambda c: f"|ΔU_R| = {c:g} = the bound 2",
        "repair/set": lambda c: f"|ΔU_R| = {c:g} = the bound 2",
    }


_NOTES = _notes()


def _split_checks(draws: int, level: float, rng: np.random.Generator,
                  broken: bool) -> tuple[list[CheckResult], dict[str, Any]]:
    """The audit of two measures with a split: each release against its share, and all of them jointly."""
    from dpaudit.audit import audit
    from dpaudit.counts import count_tables
    from dpaudit.privacy import Budget

    pair = split_pair()
    df0, df1 = pair.frames()
    schema = pair.schema()
    criterion = Criterion.parse(pair.criterion)
    measures = [TopContribution(k=K_ALL, name_cells=1), Repair(semantics="ci")]
    exact0 = audit(df0, criterion, measures=measures, schema=schema)
    exact1 = audit(df1, criterion, measures=measures, schema=schema)
    budget = Budget(EPSILON)
    private = audit(df0, criterion, measures=measures, epsilon=EPSILON, schema=schema, split=dict(SPLIT), budget=budget)
    tc_value, repair = private["tc"].release, private["repair"].release
    names = private["tc"].details.release  # type: ignore[union-attr]
    releases = {"tc value": float(tc_value.epsilon or 0.0), "tc names": float(names.epsilon),
                "repair value": float(repair.epsilon or 0.0)}
    total = math.fsum(releases.values())
    problems = []
    if not math.isclose(total, EPSILON, rel_tol=1e-9):
        problems.append(f"the releases spend {total:g}, not ε = {EPSILON:g}")
    for name, share in SPLIT.items():
        spent = math.fsum(v for k, v in releases.items() if k.startswith(name))
        if not math.isclose(spent, share * EPSILON, rel_tol=1e-9):
            problems.append(f"{name} spends {spent:g}, not its share {share * EPSILON:g}")
    if not math.isclose(budget.spent, EPSILON, rel_tol=1e-9):
        problems.append(f"the ledger debits {budget.spent:g}, not ε = {EPSILON:g}")
    composition = {"epsilon": EPSILON, "split": dict(SPLIT), "releases": releases, "sum": total,
                   "spent": budget.spent, "ok": not problems, "problem": "; ".join(problems)}

    factor = BROKEN_FACTOR if broken else 1.0
    scores = [np.concatenate([marginal_differences(t.counts).ravel() for t in count_tables(df, [criterion], schema)])
              for df in (df0, df1)]
    laplace = {}
    for key, release, exact in (("tc value", tc_value, "tc"), ("repair value", repair, "repair")):
        v0, v1 = exact0[exact].release.value, exact1[exact].release.value
        noise = release.sensitivity * factor
        eps = float(release.epsilon or 0.0)
        laplace[key] = (v0, v1, noise / eps, release.sensitivity, eps,
                        laplace_draws(v0, sensitivity=noise, epsilon=eps, draws=draws),
                        laplace_draws(v1, sensitivity=noise, epsilon=eps, draws=draws))
    names_noise = names.sensitivity_linf * factor
    n0 = noisy_top_k_draws(scores[0], 1, sensitivity_linf=names_noise, epsilon=names.epsilon, draws=draws)[:, 0]
    n1 = noisy_top_k_draws(scores[1], 1, sensitivity_linf=names_noise, epsilon=names.epsilon, draws=draws)[:, 0]

    def names_loss_at(noise: float) -> float:
        scale = 2.0 * noise / names.epsilon
        return float(np.abs(np.log(permute_and_flip_probabilities(scores[0], scale))
                            - np.log(permute_and_flip_probabilities(scores[1], scale))).max())

    names_loss = names_loss_at(names_noise)

    results = []
    for key, (v0, v1, b, sens, eps, o0, o1) in laplace.items():
        outcome = _audit(o0, o1, _identity, _describe_threshold, level, rng)
        change = abs(v1 - v0)
        results.append(_result(f"split: {key}", f"{key} at its share of the split", pair, eps, sens, change,
                               change / sens, change / b, draws, outcome, level, broken))
    fitted: dict[str, Callable[[np.ndarray], np.ndarray]] = {}

    def names_stat(sel0: np.ndarray, sel1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        fitted["stat"] = _empirical_log_ratio(sel0, sel1)
        return fitted["stat"]

    universe = np.arange(scores[0].size)
    outcome = _audit(n0, n1, names_stat, lambda t: _describe_cells(fitted["stat"], universe)(t), level, rng)
    change = float(np.abs(scores[1] - scores[0]).max())
    results.append(_result("split: tc names", "tc names at half of tc's share", pair, names.epsilon,
                           names.sensitivity_linf, change, change / names.sensitivity_linf, names_loss, draws, outcome,
                           level, broken))

    # The joint release: one draw = (tc value, tc name, repair value); statistic = exact Laplace log-likelihood
    # ratios (fixed in advance) + the names' log-ratio fitted on the selection half.
    joint0 = np.column_stack([laplace["tc value"][5], laplace["repair value"][5], n0])
    joint1 = np.column_stack([laplace["tc value"][6], laplace["repair value"][6], n1])

    def joint_stat(sel0: np.ndarray, sel1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        name_part = _empirical_log_ratio(sel0[:, 2], sel1[:, 2])

        def stat(x: np.ndarray) -> np.ndarray:
            total_llr = name_part(x[:, 2])
            for col, key in ((0, "tc value"), (1, "repair value")):
                v0, v1, b = laplace[key][:3]
                total_llr = total_llr + (np.abs(x[:, col] - v0) - np.abs(x[:, col] - v1)) / b
            return total_llr

        return stat

    outcome = _audit(joint0, joint1, joint_stat,
                     lambda t: f"log-likelihood ratio {'≥' if t.upper else '<'} {t.threshold:.4g}, more likely under "
                               f"{'D′' if t.positive_is_d1 else 'D'}", level, rng)
    exact_joint = math.fsum(r.exact_loss for r in results)
    # the fraction of ε the pair realises under the correct noise (Laplace: ε·|Δv|/Δ; names: exact loss)
    realised = (math.fsum(r.ratio * r.claimed_epsilon for r in results[:2]) + names_loss_at(names.sensitivity_linf)) / total
    results.append(_result("split: joint", "all three releases together", pair, total, None, None,
                           realised, exact_joint, draws, outcome, level, broken,
                           "sequential composition: the joint loss is at most the sum of the shares"))
    return results, composition


def selfcheck(draws: int | None = None, *, seed: int = 0, level: float = 0.95, full: bool = False) -> SelfcheckReport:
    """Audit every dpaudit release empirically on worst-case neighbours (module docstring).

    Parameters
    ----------
    draws : int, optional
        Real OpenDP draws per database (D and D′) and release; default 4,000, or 100,000 with ``full``.
    seed : int, default 0
        Seeds only the split of the draws into test-choosing and evaluation halves (OpenDP's noise is
        not seedable).
    level : float, default 0.95
        Family-wise confidence of the bounds (Bonferroni over the required checks).
    full : bool, default False
        The large run (≥ 10⁵ draws per database; a few minutes).

    Returns
    -------
    SelfcheckReport
        ``ok`` is False when a release's bound exceeds its claimed ε, a required broken release is not
        caught, or the split audit's shares do not compose to ε.
    """
    start = time.perf_counter()
    draws = whole_number("draws", FULL_DRAWS if full and draws is None else CI_DRAWS if draws is None else draws,
                         minimum=MIN_DRAWS)
    seed = int(seed_value("seed", seed, allow_none=False))  # type: ignore[arg-type]
    level = unit_interval("level", level)
    pairs = worst_case_pairs()
    n_required = len(pairs) - 1 + 4  # every stand-alone release, and the split's three releases and the joint one
    check_level = 1.0 - (1.0 - level) / n_required
    rng = np.random.default_rng(seed)
    checks: list[CheckResult] = []
    broken: list[CheckResult] = []
    composition: dict[str, Any] = {}
    for is_broken, into in ((False, checks), (True, broken)):
        for name, pair in pairs.items():
            if name == "split":
                split_results, composition = _split_checks(draws, check_level, rng, is_broken)
                into.extend(split_results)
            elif name == "tc/names":
                into.append(_names_check(pair, draws, check_level, rng, is_broken))
            else:
                into.append(_laplace_check(pair, draws, check_level, rng, is_broken))
    notes = (
        "exact loss: the largest privacy loss of the mechanism as run on the pair — no test can show more; "
        "ε lower bound ≤ exact loss ≤ claimed ε for a correct release",
        "U_TC without A reaches n·|ΔU_TC| = 5.96 of 6 on docs/privacy.md's A-empty family (m = 100): also tight",
    )
    return SelfcheckReport(tuple(checks), tuple(broken), composition, draws, level, check_level, full, seed,
                           time.perf_counter() - start, notes)


# ---------------------------------------------------------------------------------------------------
# The command (registered in dpaudit.cli as ``dpaudit selfcheck``)
# ---------------------------------------------------------------------------------------------------
