"""Privacy-auditing bounds: ε lower bounds that check a model's (ε, δ)-DP claim from canary scores.

Two audits, one shape of input (``scores_in``: attack scores of canaries that were included,
``scores_out``: of canaries that were not; higher score = "guess in"):

- :func:`epsilon_lower_bound_one_run`: **one training run**, m canaries each included with
  probability ½ (Steinke, Nasr & Jagielski, "Privacy Auditing with One (1) Training Run",
  NeurIPS 2023, arXiv:2305.08846). The semantics mirror ``CanaryScoreAuditor.epsilon_one_run`` of
  jax-privacy (file ``jax_privacy/auditing.py``, google-deepmind/jax_privacy at commit
  8967688c26d4, read for this module): the auditor guesses "in" for the canaries scoring ≥ a
  threshold and abstains on the rest (one-sided, k₋ = 0).
- :func:`epsilon_lower_bound_multi_run` (in :mod:`dpaudit.mia.dp_audit_multi`): **M runs**, one
  target canary, scores of the M models trained with / without it (Jagielski, Ullman & Oprea 2020;
  Nasr et al. 2021).

:func:`audit_verdict` (in :mod:`dpaudit.mia.dp_audit_multi`) turns a claimed ε and such bounds
into "claim consistent" / "claim violated: ε ≥ … > claimed ε".

Threshold choice (both audits): ``strategy="bonferroni"`` (default) takes the best of all N
candidate thresholds (the distinct score values) each at significance β/N, so the maximum is valid
at 1 − β; ``strategy="split"`` chooses the threshold on a random half and bounds on the other half
at the full β; ``threshold=t`` uses a threshold fixed before the data were seen (no correction).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from dpaudit._errors import DataError
from dpaudit.mia.metrics._inputs import DEFAULT_LEVEL, as_scores, check_level
from dpaudit.mia.metrics.epsilon import check_delta

__all__ = ["one_run_p_value", "epsilon_one_run", "epsilon_lower_bound_one_run", "DPAuditBound", "STRATEGIES",
           "canary_scores", "candidate_thresholds", "split_halves", "split_canaries", "one_run_audit",
           "pure_bounds", "guess_counts", "top_guesses", "ONE_RUN_STRATEGIES"]

#: How the threshold is chosen when none is given.
STRATEGIES = ("bonferroni", "split")
#: One-run audits also take ``"grid"`` (guess the top r for r on :func:`guess_counts`).
ONE_RUN_STRATEGIES = (*STRATEGIES, "grid")


@dataclass(frozen=True)
class DPAuditBound:
    """An ε lower bound from an audit: the mechanism is not (ε', δ)-DP for any ε' < ``epsilon``.

    Attributes
    ----------
    epsilon : float
        The bound (0 when the scores are no evidence of leakage).
    method : str
        ``"one-run"``, ``"one-run f-DP"`` or ``"multi-run"``.
    confidence, delta : float
        The bound holds with probability ≥ ``confidence`` for every (ε, δ)-DP mechanism — except the
        ``"one-run f-DP"`` bound, which holds for every mechanism at least as private as the Gaussian
        mechanism that is exactly (ε, δ)-DP, and may exceed the ε of another (ε, δ)-DP mechanism
        (randomized response, Laplace; :mod:`dpaudit.mia.dp_audit_fdp`).
    strategy : str
        ``"bonferroni"``, ``"split"``, ``"grid"`` or ``"explicit"`` (threshold fixed in advance).
    threshold : float
        The threshold at which the bound was attained (guess "in" when score ≥ threshold; with
        ``"grid"`` the lowest score guessed "in", ties at it broken at random).
    n_guess, n_correct : int
        One-run: guesses and correct guesses at that threshold. Multi-run: true positives
        (``n_correct``) and positive guesses (``n_guess``) among the M trials.
    n_canaries : int
        m (one-run) or M (multi-run) trials used for the bound.
    """

    epsilon: float
    method: str
    confidence: float
    delta: float
    strategy: str
    threshold: float
    n_guess: int
    n_correct: int
    n_canaries: int

    def __str__(self) -> str:
        return (f"epsilon >= {self.epsilon:.4g} ({self.method}, {self.strategy}, confidence {self.confidence:.0%}, "
                f"delta={self.delta:g}; {self.n_correct}/{self.n_guess} at threshold {self.threshold:g}, "
                f"{self.n_canaries} canaries)")

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in ("epsilon", "method", "confidence", "delta", "strategy", "threshold",
                                              "n_guess", "n_correct", "n_canaries")}


# --------------------------------------------------------------------------------------------------
# Inputs shared by both audits
# --------------------------------------------------------------------------------------------------


def canary_scores(scores_in: object, scores_out: object) -> tuple[np.ndarray, np.ndarray]:
    """Finite 1-D score arrays of the included and the excluded canaries, each non-empty."""
    a = as_scores(scores_in, "scores_in").ravel()
    b = as_scores(scores_out, "scores_out").ravel()
    if a.size == 0 or b.size == 0:
        raise DataError(f"an audit needs included and excluded canaries, got {a.size} in and {b.size} out")
    return a, b


def candidate_thresholds(scores_in: np.ndarray, scores_out: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct score values t and the counts #(in ≥ t), #(out ≥ t) at each (guess "in" iff score ≥ t)."""
    t = np.union1d(scores_in, scores_out)
    n_in = scores_in.size - np.searchsorted(np.sort(scores_in), t, side="left")
    n_out = scores_out.size - np.searchsorted(np.sort(scores_out), t, side="left")
    return t, n_in.astype(np.int64), n_out.astype(np.int64)


def split_halves(scores_in: np.ndarray, scores_out: np.ndarray, seed: int | None
                 ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """A random half of each score array (threshold choice) and the rest (the bound), as jax-privacy's ``Split``.

    For the multi-run bound, whose Clopper–Pearson limits condition on the numbers in and out.
    """
    rng = np.random.default_rng(seed)
    parts = []
    for s in (scores_in, scores_out):
        perm = rng.permutation(s.size)
        cut = s.size // 2
        parts.append((s[perm[:cut]], s[perm[cut:]]))
    (in1, in2), (out1, out2) = parts
    if min(in1.size, in2.size, out1.size, out2.size) == 0:
        raise DataError("strategy='split' needs at least 2 included and 2 excluded canaries")
    return (in1, out1), (in2, out2)


def split_canaries(scores_in: np.ndarray, scores_out: np.ndarray, seed: int | None
                   ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """A random half of all m canaries, chosen without looking at membership, and the rest.

    The one-run theorem needs the bound half's memberships to stay independent fair coins given
    the guesses; a split that takes half of the included and half of the excluded canaries (as
    jax-privacy's ``Split`` does) fixes how many included canaries the second half holds.
    """
    rng = np.random.default_rng(seed)
    scores = np.concatenate([scores_in, scores_out])
    if scores.size < 2:
        raise DataError("strategy='split' needs at least 2 canaries")
    member = np.arange(scores.size) < scores_in.size
    perm = rng.permutation(scores.size)
    first, second = perm[: scores.size // 2], perm[scores.size // 2:]
    return ((scores[first][member[first]], scores[first][~member[first]]),
            (scores[second][member[second]], scores[second][~member[second]]))


def check_strategy(strategy: str, allowed: tuple[str, ...] = STRATEGIES) -> str:
    if strategy not in allowed:
        raise DataError(f"strategy must be one of {allowed}, got {strategy!r}")
    return strategy


def guess_counts(m: int) -> np.ndarray:
    """The grid of guess counts r of ``strategy="grid"``: 1, 2, 4, … (powers of two below m) and m."""
    powers = 2 ** np.arange(int(np.log2(m)) + 1 if m >= 1 else 0, dtype=np.int64)
    return np.union1d(powers[powers < m], [m]).astype(np.int64)


def top_guesses(scores_in: np.ndarray, scores_out: np.ndarray, seed: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Scores sorted from the highest (ties in a random order seeded by ``seed``) and the cumulative number of
    included canaries among the top r, for r = 1..m: the correct guesses v(r) of guessing "in" for the top r."""
    scores = np.concatenate([scores_in, scores_out])
    member = np.arange(scores.size) < scores_in.size
    order = np.lexsort((np.random.default_rng(seed).permutation(scores.size), -scores))
    return scores[order], np.cumsum(member[order])


# --------------------------------------------------------------------------------------------------
# One run (Steinke, Nasr & Jagielski 2023)
# --------------------------------------------------------------------------------------------------


def one_run_p_value(m: int, n_guess: int, n_correct: int, epsilon: float, delta: float = 0.0) -> float:
    """Largest probability that an (ε, δ)-DP mechanism lets ≥ v of r guesses be correct.

    With m canaries each included independently with probability ½, r = ``n_guess`` guesses and
    W the number of correct ones, Steinke, Nasr & Jagielski (2023, main theorem, Thm 3.1 of arXiv:2305.08846)
    prove, for every (ε, δ)-DP mechanism and every v::

        P[W ≥ v] ≤ f(v) + 2 m δ · max_{i = 1..v} (f(v − i) − f(v)) / i,
        f(u) = P[Binomial(r, q) ≥ u],   q = e^ε / (1 + e^ε).

    For δ = 0 the bound is f(v) (the binomial tail). This returns that bound at v = ``n_correct``,
    capped at 1 — the p-value of the hypothesis "the mechanism is (ε, δ)-DP" — exactly as
    ``_one_run_p_value`` of jax-privacy's ``auditing.py`` computes it.

    Examples
    --------
    >>> round(one_run_p_value(100, 10, 10, 0.0), 6) == round(0.5 ** 10, 6)
    True
    """
    q = float(special.expit(epsilon))
    tail = float(stats.binom.sf(n_correct - 1, n_guess, q))
    if delta == 0 or n_correct == 0:
        return tail
    i = np.arange(1, n_correct + 1)
    alpha = float(np.max((stats.binom.sf(n_correct - i - 1, n_guess, q) - tail) / i))
    return min(tail + alpha * delta * 2 * m, 1.0)


def _epsilon_cap(n_guess: int, significance: float) -> float:
    """ε above which even v = r correct guesses have p-value > β: f(r) = q^r = β at q = β^(1/r)."""
    return float(special.logit(significance ** (1.0 / n_guess))) + 1.0


def epsilon_one_run(m: int, n_guess: int, n_correct: int, *, delta: float = 0.0,
                    confidence: float = DEFAULT_LEVEL) -> float:
    """One-run ε lower bound for r = ``n_guess`` guesses of which v = ``n_correct`` are right.

    ``sup {ε ≥ 0 : one_run_p_value(m, r, v, ε, δ) ≤ β}``, β = 1 − ``confidence``; 0 when even ε = 0 is
    not rejected (the largest ε the observation rejects at level β: the paper's ε lower bound).
    f(v) increases with ε (so does the p-value for δ = 0); the root is found by Brent's method on
    [0, logit(β^(1/r)) + 1], where the p-value is > β (``xtol`` 1e-12); jax-privacy's
    ``_epsilon_one_run`` brackets by doubling and solves with ``xtol`` 1e-6.

    Examples
    --------
    >>> q = 0.05 ** (1 / 100)  # all 100 guesses right: rejected while q^100 ≤ 0.05
    >>> round(epsilon_one_run(1000, 100, 100), 6) == round(float(np.log(q / (1 - q))), 6)
    True
    >>> epsilon_one_run(1000, 100, 50)
    0.0
    """
    beta = 1.0 - check_level(confidence)
    d = check_delta(delta)
    if n_guess <= 0 or one_run_p_value(m, n_guess, n_correct, 0.0, 0.0) > beta:
        return 0.0
    if one_run_p_value(m, n_guess, n_correct, 0.0, d) > beta:
        return 0.0
    hi = _epsilon_cap(n_guess, beta)
    return float(optimize.brentq(lambda e: beta - one_run_p_value(m, n_guess, n_correct, e, d), 0.0, hi,
                                 xtol=1e-12, rtol=4 * np.finfo(float).eps))


def pure_bounds(n_guess: np.ndarray, n_correct: np.ndarray, beta: float, iterations: int = 200) -> np.ndarray:
    """The δ = 0 bounds of many (r, v) at once by bisection on f(v) = β (an upper bound for every δ > 0)."""
    out = np.zeros(n_guess.shape)
    live = (n_guess > 0) & (stats.binom.sf(n_correct - 1, n_guess, 0.5) <= beta)
    if not live.any():
        return out
    r, v = n_guess[live], n_correct[live]
    lo = np.zeros(r.shape)
    hi = special.logit(beta ** (1.0 / r)) + 1.0
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        ok = stats.binom.sf(v - 1, r, special.expit(mid)) <= beta
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
        if np.all(hi - lo <= 1e-13):
            break
    out[live] = lo
    return out


def _best_one_run(scores_in: np.ndarray, scores_out: np.ndarray, delta: float, beta: float
                  ) -> tuple[float, float, int, int]:
    """Best bound over every threshold at significance ``beta`` (no correction here): ε, t, r, v."""
    t, tp, fp = candidate_thresholds(scores_in, scores_out)
    m = scores_in.size + scores_out.size
    guesses = tp + fp
    pure = pure_bounds(guesses, tp, beta)
    best = (0.0, float(t[0]), int(guesses[0]), int(tp[0]))
    # Any δ ≥ 0 bound is ≤ its δ = 0 bound: visit thresholds by decreasing δ = 0 bound, stop when it cannot win.
    for idx in np.argsort(-pure, kind="stable"):
        if pure[idx] <= best[0]:
            break
        eps = epsilon_one_run(m, int(guesses[idx]), int(tp[idx]), delta=delta, confidence=1.0 - beta)
        if eps > best[0]:
            best = (eps, float(t[idx]), int(guesses[idx]), int(tp[idx]))
    return best


#: ``bound_at(m, r, v, delta, beta)``: the bound of r guesses with v right among m canaries, at significance β.
BoundAt = Callable[[int, int, int, float, float], float]
#: ``best(scores_in, scores_out, delta, beta)``: the best bound over every threshold (no correction): ε, t, r, v.
BestBound = Callable[[np.ndarray, np.ndarray, float, float], tuple[float, float, int, int]]


def one_run_audit(scores_in: object, scores_out: object, *, method: str, bound_at: BoundAt, best: BestBound,
                  delta: float, confidence: float, strategy: str, threshold: float | None, seed: int | None
                  ) -> DPAuditBound:
    """A one-run bound with its threshold choice: ``threshold`` fixed, or ``strategy`` bonferroni / split.

    Shared by the one-run bounds (:func:`epsilon_lower_bound_one_run` here and
    :func:`dpaudit.mia.dp_audit_fdp.epsilon_lower_bound_one_run_fdp`), which differ only in
    ``bound_at`` (the bound at one threshold) and ``best`` (the search over all thresholds).
    """
    a, b = canary_scores(scores_in, scores_out)
    beta = 1.0 - check_level(confidence)
    d = check_delta(delta)

    def at(t: float, s_in: np.ndarray, s_out: np.ndarray, how: str) -> DPAuditBound:
        tp, fp = int(np.sum(s_in >= t)), int(np.sum(s_out >= t))
        m = s_in.size + s_out.size
        return DPAuditBound(bound_at(m, tp + fp, tp, d, beta), method, 1.0 - beta, d, how, float(t), tp + fp, tp, m)

    if threshold is not None:
        return at(threshold, a, b, "explicit")
    if check_strategy(strategy, ONE_RUN_STRATEGIES) == "grid":
        m = a.size + b.size
        ordered, correct = top_guesses(a, b, seed)
        grid = guess_counts(m)
        bounds = [bound_at(m, int(r), int(correct[r - 1]), d, beta / grid.size) for r in grid]
        k = int(np.argmax(bounds))
        r = int(grid[k])
        return DPAuditBound(float(bounds[k]), method, 1.0 - beta, d, "grid", float(ordered[r - 1]), r,
                            int(correct[r - 1]), m)
    if strategy == "split":
        (a1, b1), (a2, b2) = split_canaries(a, b, seed)
        _, t, _, _ = best(a1, b1, d, beta)
        return at(t, a2, b2, "split")
    n_thresholds = np.union1d(a, b).size
    eps, t, r, v = best(a, b, d, beta / n_thresholds)
    return DPAuditBound(eps, method, 1.0 - beta, d, "bonferroni", t, r, v, a.size + b.size)


def _steinke_at(m: int, n_guess: int, n_correct: int, delta: float, beta: float) -> float:
    return epsilon_one_run(m, n_guess, n_correct, delta=delta, confidence=1.0 - beta)


def epsilon_lower_bound_one_run(scores_in: object, scores_out: object, *, delta: float = 0.0,
                                confidence: float = DEFAULT_LEVEL, strategy: str = "bonferroni",
                                threshold: float | None = None, seed: int | None = 0) -> DPAuditBound:
    """One-run audit (Steinke, Nasr & Jagielski 2023) of m = len(in) + len(out) canaries from one model.

    Each canary must have been included in training independently with probability ½ (the
    theorem's randomness; the numbers of included and excluded canaries are then random). At a
    threshold t the auditor guesses "in" for the r canaries scoring ≥ t, abstains on the rest, and
    v of the guesses are included canaries; the bound is :func:`epsilon_one_run` (m, r, v).

    Threshold choice: ``threshold`` given → that threshold, confidence as given ("explicit");
    ``"bonferroni"`` → the largest bound over the N distinct score values, each at β/N (jax-privacy's
    ``Bonferroni`` divides by the number of thresholds on its Pareto frontier of (FN, TN) counts,
    ≤ N + 1, a number that depends on the data, so its bound is larger); ``"split"`` → the best
    threshold on a random half of the m canaries (:func:`split_canaries`, seeded by ``seed``), the
    bound on the other half at β with m the size of that half (jax-privacy's ``Split`` halves the
    included and the excluded canaries separately instead); ``"grid"`` → the largest bound of guessing
    the top r canaries, r on :func:`guess_counts`, each at β/(grid size) (ties broken by ``seed``).

    Examples
    --------
    >>> b = epsilon_lower_bound_one_run(np.arange(500) + 1000.0, np.arange(500.0))
    >>> q = (0.05 / 1000) ** (1 / 500)  # 1000 distinct scores: Bonferroni at 0.05 / 1000
    >>> b.n_guess, b.n_correct, round(b.epsilon, 6) == round(float(np.log(q / (1 - q))), 6)
    (500, 500, True)
    """
    return one_run_audit(scores_in, scores_out, method="one-run", bound_at=_steinke_at, best=_best_one_run,
                         delta=delta, confidence=confidence, strategy=strategy, threshold=threshold, seed=seed)
