"""One-run audit through Gaussian differential privacy (f-DP): a tighter ε lower bound from the same canaries.

Mahloujifar, Melis & Chaudhuri, "Auditing f-Differential Privacy in One Run" (arXiv:2410.22235,
ICML 2025). Same game as the one-run bound of :mod:`dpaudit.mia.dp_audit` (Steinke, Nasr &
Jagielski 2023): m canaries, each included independently with probability ½, one run; at a
threshold the auditor guesses "in" for the k = r canaries scoring ≥ t and abstains on the rest;
v of the guesses are right. Instead of the binomial tail of an (ε, δ)-DP mechanism, the paper
bounds the probability of v correct guesses for an **f-DP** mechanism, f a tradeoff function
(Dong, Roth & Su, JRSS-B 2022). Here f = G_μ, the **μ-GDP** tradeoff
``G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)``, whose "inverse blow-up" — the least probability under one
neighbour of an event with probability x under the other — is ``g_μ(x) = Φ(Φ⁻¹(x) − μ)``.

**The test** (the paper's numerical audit with a cap, "audit_rh_with_cap", as
``_epsilon_one_run_fdp`` of jax-privacy computes it): suppose P[≥ v correct] ≥ β. Start from
``r = β v / m`` and ``h = β (k − v) / m`` and, for i = v − 1, …, 0::

    h' = max(h, g_μ(r)),     r' = min(r + i / (k − i) · (h' − h), 1)

(stop once h' = h: nothing changes afterwards). A μ-GDP mechanism must end with
``r + h ≤ k / m``; when ``r + h > k / m`` the hypothesis "μ-GDP" is rejected at significance β.
The objective r + h − k/m falls as μ grows (g_μ falls), so the rejected μ form [0, μ̂):
:func:`mu_one_run_fdp` returns μ̂ (bisection to 1e-13).

**From μ to ε at δ**: the claim (ε, δ) is read as the Gaussian mechanism that is exactly
(ε, δ)-DP, i.e. μ-GDP with ``δ = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)`` (Balle & Wang, ICML 2018,
Thm 8; Dong, Roth & Su 2022, Cor. 2.13); that δ(ε) rises with μ, so the reported bound is
``ε̂ = ε_μ̂(δ)`` (:func:`gdp_epsilon`; 0 when μ̂ is (0, δ)-DP already). jax-privacy instead solves
for ε with ``brentq(xtol=1e-6)`` through ``dp_accounting.get_sigma_gaussian`` (μ = 1/σ); the
two agree to 1e-6 (tests/test_dp_audit_fdp.py).

**What the bound means.** With probability ≥ ``confidence`` the mechanism is not μ̂'-GDP for any
μ̂' < μ̂, hence not as private as *the Gaussian mechanism* with (ε', δ) for ε' < ε̂. This audits a
GDP-shaped claim (Gaussian mechanism, DP-SGD read through its GDP approximation). A mechanism
that is (ε, δ)-DP without being μ(ε, δ)-GDP — Laplace, randomized response, objective
perturbation — can get ε̂ > ε legitimately (measured: Laplace ε = 4, m = 10⁴, δ = 10⁻⁵ → 4.2);
compare those against the ε at δ of the smallest μ whose G_μ lies below their tradeoff curve.
δ must be > 0: no Gaussian mechanism is (ε, 0)-DP.

Reference read for this module: ``CanaryScoreAuditor.epsilon_one_run_fdp``,
``_epsilon_one_run_fdp`` and ``_gaussian_dp_blow_up_inverse`` of ``jax_privacy/auditing.py``,
jax-privacy 2.0.0 (PyPI; google-deepmind/jax_privacy), with dp_accounting 0.6.0. Threshold
choice and its confidence are those of :func:`dpaudit.mia.dp_audit.one_run_audit` (Bonferroni over
the N distinct scores, split, or a fixed threshold); jax's ``Bonferroni`` divides by its Pareto
frontier count instead and prunes thresholds whose precision is below the best bound's e^ε/(1+e^ε).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from dpaudit._errors import DataError
from dpaudit.mia.dp_audit import DPAuditBound, candidate_thresholds, one_run_audit, pure_bounds
from dpaudit.mia.metrics._inputs import DEFAULT_LEVEL, check_level
from dpaudit.mia.metrics.epsilon import check_delta

__all__ = ["epsilon_lower_bound_one_run_fdp", "epsilon_one_run_fdp", "mu_one_run_fdp", "fdp_objective",
           "gdp_epsilon", "gdp_log_delta"]


# --------------------------------------------------------------------------------------------------
# Gaussian DP ↔ (ε, δ)
# --------------------------------------------------------------------------------------------------


def gdp_log_delta(mu: float, epsilon: float) -> float:
    """log δ_μ(ε) = log(Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)): the (ε, δ) profile of μ-GDP (Balle & Wang 2018)."""
    if mu <= 0:
        return -np.inf
    x = float(special.log_ndtr(mu / 2 - epsilon / mu))
    y = epsilon + float(special.log_ndtr(-mu / 2 - epsilon / mu))
    return x + float(np.log1p(-np.exp(y - x))) if y < x else -np.inf


def gdp_epsilon(mu: float, delta: float) -> float:
    """The least ε with μ-GDP ⇒ (ε, δ)-DP: δ_μ(ε) = δ (0 when δ_μ(0) ≤ δ; brentq, xtol 1e-13).

    Examples
    --------
    >>> round(gdp_epsilon(1.0, 1e-5), 4)  # the Gaussian mechanism with σ = 1 at δ = 1e-5
    4.3772
    """
    if delta <= 0:
        raise DataError("the f-DP bound needs delta > 0: no Gaussian mechanism is (epsilon, 0)-DP")
    log_delta = float(np.log(delta))
    if mu <= 0 or gdp_log_delta(mu, 0.0) <= log_delta:
        return 0.0
    hi = 1.0
    while gdp_log_delta(mu, hi) > log_delta:
        hi *= 2
    return float(optimize.brentq(lambda e: gdp_log_delta(mu, e) - log_delta, 0.0, hi, xtol=1e-13,
                                 rtol=4 * np.finfo(float).eps))


# --------------------------------------------------------------------------------------------------
# The f-DP test of r guesses with v right (vectorised over thresholds)
# --------------------------------------------------------------------------------------------------


def fdp_objective(mu: object, m: int, n_guess: object, n_correct: object, beta: float) -> np.ndarray:
    """r + h − k/m after the recursion of the module docstring (> 0: μ-GDP rejected at significance β).

    Broadcast over ``mu``, ``n_guess`` (k) and ``n_correct`` (v); each element runs its own
    recursion, all advancing one step i → i − 1 together until every element has stopped.
    """
    mu_, k_, v_ = np.broadcast_arrays(np.asarray(mu, float), np.asarray(n_guess, np.int64),
                                      np.asarray(n_correct, np.int64))
    shape, mu_ = mu_.shape, mu_.ravel()
    k, v = k_.ravel().astype(float), v_.ravel().astype(np.int64)
    r = beta * v / m
    h = beta * (k - v) / m
    i = v - 1
    live = np.flatnonzero(i >= 0)
    while live.size:
        rl, hl, il = r[live], h[live], i[live]
        h_new = np.maximum(hl, special.ndtr(special.ndtri(rl) - mu_[live]))
        moved = h_new != hl
        r[live] = np.where(moved, np.minimum(rl + il / (k[live] - il) * (h_new - hl), 1.0), rl)
        h[live] = h_new
        i[live] = il - 1
        live = live[moved & (il > 0)]
    return (r + h - k / m).reshape(shape)


def mu_one_run_fdp(m: int, n_guess: object, n_correct: object, beta: float, iterations: int = 200) -> np.ndarray:
    """μ̂ = sup{μ ≥ 0 : μ-GDP rejected} for each (k, v) at significance β (0 when μ = 0 is not rejected).

    Bisection on [0, hi] with hi doubled from 1 until nothing is rejected there; stops at 1e-13.
    """
    k, v = (np.atleast_1d(x) for x in np.broadcast_arrays(np.asarray(n_guess, np.int64),
                                                          np.asarray(n_correct, np.int64)))
    out = np.zeros(k.shape)
    live = fdp_objective(0.0, m, k, v, beta) > 0
    if not live.any():
        return out
    kl, vl = k[live], v[live]
    lo, hi = np.zeros(kl.shape), np.ones(kl.shape)
    while (up := fdp_objective(hi, m, kl, vl, beta) > 0).any():
        lo, hi = np.where(up, hi, lo), np.where(up, 2 * hi, hi)
    for _ in range(iterations):
        if np.all(hi - lo <= 1e-13):
            break
        mid = 0.5 * (lo + hi)
        ok = fdp_objective(mid, m, kl, vl, beta) > 0
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    out[live] = lo
    return out


def epsilon_one_run_fdp(m: int, n_guess: int, n_correct: int, *, delta: float,
                        confidence: float = DEFAULT_LEVEL) -> float:
    """f-DP one-run ε lower bound at δ for k = ``n_guess`` guesses of which v = ``n_correct`` are right.

    ``gdp_epsilon(mu_one_run_fdp(m, k, v, β), δ)``, β = 1 − ``confidence``.

    Examples
    --------
    >>> epsilon_one_run_fdp(1000, 100, 50, delta=1e-5)
    0.0
    >>> 0 < epsilon_one_run_fdp(1000, 100, 100, delta=1e-5)
    True
    """
    beta = 1.0 - check_level(confidence)
    return _fdp_at(m, n_guess, n_correct, _positive_delta(delta), beta)


def _positive_delta(delta: float) -> float:
    d = check_delta(delta)
    if d <= 0:
        raise DataError("the f-DP bound needs delta > 0: no Gaussian mechanism is (epsilon, 0)-DP")
    return d


def _fdp_at(m: int, n_guess: int, n_correct: int, delta: float, beta: float) -> float:
    if n_guess <= 0:
        return 0.0
    return gdp_epsilon(float(mu_one_run_fdp(m, n_guess, n_correct, beta)[0]), delta)


def _max_mu(m: int, k: np.ndarray, v: np.ndarray, beta: float, seeds: int = 8) -> tuple[float, int]:
    """max_j μ̂_j over thresholds j and its first argmax, without bisecting each threshold.

    The objective falls with μ, so μ̂_j > μ ⇔ objective_j(μ) > 0. The thresholds of largest δ = 0
    one-run bound (Steinke et al.; the cheap vectorised :func:`dpaudit.mia.dp_audit.pure_bounds`)
    give a first μ_b; a bisection on μ then keeps only the thresholds still rejected at its
    lower end, and stops at 1e-13.
    """
    order = np.argsort(-pure_bounds(k, v, beta), kind="stable")[:seeds]
    mus = mu_one_run_fdp(m, k[order], v[order], beta)
    lo = float(mus.max())
    best = int(order[int(np.argmax(mus))])
    alive = np.flatnonzero(fdp_objective(lo, m, k, v, beta) > 0)
    if alive.size == 0:
        return lo, best if lo > 0 else 0
    hi = max(2 * lo, 1.0)
    while (up := alive[fdp_objective(hi, m, k[alive], v[alive], beta) > 0]).size:
        lo, hi, alive = hi, 2 * hi, up
    while hi - lo > 1e-13:
        mid = 0.5 * (lo + hi)
        up = alive[fdp_objective(mid, m, k[alive], v[alive], beta) > 0]
        if up.size:
            lo, alive = mid, up
        else:
            hi = mid
    return lo, int(alive.min())


def _best_fdp(scores_in: np.ndarray, scores_out: np.ndarray, delta: float, beta: float
              ) -> tuple[float, float, int, int]:
    """Best f-DP bound over every threshold at significance ``beta`` (no correction here): ε, t, k, v.

    δ_μ(ε) rises with μ, so the best ε is at the threshold of largest μ̂ (:func:`_max_mu`).
    """
    t, tp, fp = candidate_thresholds(scores_in, scores_out)
    mu, j = _max_mu(scores_in.size + scores_out.size, tp + fp, tp, beta)
    return gdp_epsilon(mu, delta), float(t[j]), int(tp[j] + fp[j]), int(tp[j])


def epsilon_lower_bound_one_run_fdp(scores_in: object, scores_out: object, *, delta: float = 1e-5,
                                    confidence: float = DEFAULT_LEVEL, strategy: str = "bonferroni",
                                    threshold: float | None = None, seed: int | None = 0) -> DPAuditBound:
    """One-run f-DP (μ-GDP) audit (Mahloujifar, Melis & Chaudhuri 2024) of m = len(in) + len(out) canaries.

    Same input, canary design and threshold choice as
    :func:`dpaudit.mia.dp_audit.epsilon_lower_bound_one_run` (see :func:`one_run_audit`), method
    ``"one-run f-DP"``; the bound at a threshold is :func:`epsilon_one_run_fdp`. ``delta`` must be
    > 0 (default 1e-5).

    Examples
    --------
    >>> b = epsilon_lower_bound_one_run_fdp(np.arange(500) + 1000.0, np.arange(500.0))
    >>> b.method, b.n_guess, b.n_correct, b.epsilon > 4
    ('one-run f-DP', 500, 500, True)
    """
    return one_run_audit(scores_in, scores_out, method="one-run f-DP", bound_at=_fdp_at, best=_best_fdp,
                         delta=_positive_delta(delta), confidence=confidence, strategy=strategy,
                         threshold=threshold, seed=seed)
