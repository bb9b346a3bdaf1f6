"""DP-audit bounds (dpaudit.mia.dp_audit, dp_audit_multi) on mechanisms whose exact ε is known.

Mechanisms (no training): m canaries, each included with probability ½ (x ∈ {0, 1}); the attack
score of canary i is x_i + Laplace(1/ε) (ε-DP for each canary: sensitivity 1), or randomized
response (the released bit equals x_i with probability e^ε/(1 + e^ε)), exactly ε-DP.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit._errors import DataError
from dpaudit.mia.dp_audit import epsilon_lower_bound_one_run, epsilon_one_run, one_run_p_value, split_canaries
from dpaudit.mia.dp_audit_multi import audit_verdict, epsilon_lower_bound_multi_run

LEVEL = 0.95


def laplace(rng: np.random.Generator, m: int, eps: float | None) -> tuple[np.ndarray, np.ndarray]:
    x = rng.random(m) < 0.5
    s = x.astype(float) if eps is None else x + rng.laplace(scale=1.0 / eps, size=m)
    return s[x], s[~x]


def randomized_response(rng: np.random.Generator, m: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    x = rng.random(m) < 0.5
    keep = rng.random(m) < math.exp(eps) / (1 + math.exp(eps))
    s = np.where(keep, x, ~x).astype(float)
    return s[x], s[~x]


# --------------------------------------------------------------------------------------------------
# An independent reimplementation of the one-run bound (Steinke, Nasr & Jagielski 2023, Theorem 3.1)
# --------------------------------------------------------------------------------------------------


def ref_tail(r: int, q: float, u: int) -> float:
    """f(u) = P[Binomial(r, q) ≥ u] by direct summation of the binomial terms."""
    if u <= 0:
        return 1.0
    return sum(math.comb(r, k) * q**k * (1 - q) ** (r - k) for k in range(u, r + 1))


def ref_p(m: int, r: int, v: int, eps: float, delta: float) -> float:
    q = math.exp(eps) / (1 + math.exp(eps))
    fv = ref_tail(r, q, v)
    if delta == 0 or v == 0:
        return fv
    worst = max((ref_tail(r, q, v - i) - fv) / i for i in range(1, v + 1))
    return min(1.0, fv + 2 * m * delta * worst)


def ref_epsilon(m: int, r: int, v: int, delta: float, beta: float) -> float:
    """Largest ε with ref_p ≤ β, by bisection on [0, 40]."""
    if r == 0 or ref_p(m, r, v, 0.0, delta) > beta:
        return 0.0
    lo, hi = 0.0, 40.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ref_p(m, r, v, mid, delta) <= beta else (lo, mid)
    return lo


def ref_bonferroni(a: np.ndarray, b: np.ndarray, delta: float, beta: float) -> float:
    """Best ref_epsilon over every threshold (guess "in" iff score ≥ t), each at β / #thresholds."""
    values = sorted(set(a.tolist()) | set(b.tolist()))
    best = 0.0
    for t in values:
        tp = sum(1 for s in a if s >= t)
        fp = sum(1 for s in b if s >= t)
        best = max(best, ref_epsilon(a.size + b.size, tp + fp, tp, delta, beta / len(values)))
    return best


@pytest.mark.parametrize("m,r,v,delta", [(100, 10, 10, 0.0), (200, 50, 40, 0.0), (200, 50, 40, 1e-5),
                                         (400, 120, 100, 1e-4), (50, 20, 11, 0.0), (300, 80, 75, 1e-3)])
def test_one_run_matches_independent_reimplementation(m: int, r: int, v: int, delta: float) -> None:
    for eps in (0.0, 0.5, 2.0):
        assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(ref_p(m, r, v, eps, delta), rel=1e-9, abs=1e-12)
    assert epsilon_one_run(m, r, v, delta=delta, confidence=LEVEL) == pytest.approx(
        ref_epsilon(m, r, v, delta, 1 - LEVEL), abs=1e-6)


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_one_run_scores_match_reimplementation(delta: float) -> None:
    rng = np.random.default_rng(3)
    a, b = laplace(rng, 120, 3.0)
    a, b = np.round(a, 1), np.round(b, 1)  # ties: thresholds are the distinct values
    got = epsilon_lower_bound_one_run(a, b, delta=delta).epsilon
    assert got > 0.5
    assert got == pytest.approx(ref_bonferroni(a, b, delta, 1 - LEVEL), abs=1e-6)


def test_delta_only_lowers_the_bound() -> None:
    a, b = laplace(np.random.default_rng(4), 1000, 4.0)
    e0 = epsilon_lower_bound_one_run(a, b).epsilon
    e1 = epsilon_lower_bound_one_run(a, b, delta=1e-9).epsilon
    assert 0 < e1 <= e0
    # The δ term is 2mδ·max_i(...): with Bonferroni at β/N = 5e-5 and m = 1000, δ = 1e-5 leaves nothing.
    assert epsilon_lower_bound_one_run(a, b, delta=1e-5).epsilon == 0.0


# --------------------------------------------------------------------------------------------------
# Validity: bounds ≤ the true ε in ≥ 95 % of repeated audits
# --------------------------------------------------------------------------------------------------


def test_exact_test_rejects_true_epsilon_at_most_beta() -> None:
    """Randomized response, fixed threshold: W ~ Binomial(r, e^ε/(1+e^ε)) exactly, the extreme case."""
    eps, n = 1.0, 400
    rng = np.random.default_rng(11)
    over = [epsilon_lower_bound_one_run(*randomized_response(rng, 200, eps), threshold=0.5).epsilon > eps
            for _ in range(n)]
    rate = float(np.mean(over))
    assert rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / n)  # 0.0718
    assert rate > 0.0  # the test is not vacuous: at the true ε it rejects sometimes (measured 3.25 % of 400)


@pytest.mark.parametrize("method", [epsilon_lower_bound_one_run, epsilon_lower_bound_multi_run])
@pytest.mark.parametrize("strategy", ["bonferroni", "split"])
def test_coverage_laplace(method, strategy: str) -> None:
    eps = 4.0
    rng = np.random.default_rng(7)
    bounds = np.array([method(*laplace(rng, 500, eps), strategy=strategy, seed=i).epsilon for i in range(100)])
    assert np.mean(bounds <= eps) >= 0.95
    assert np.median(bounds) > 1.0  # informative (measured medians 2.34-2.58, max 3.44)


def test_tightness_grows_with_m() -> None:
    eps = 4.0
    medians = {}
    for name, method in (("one-run", epsilon_lower_bound_one_run), ("multi-run", epsilon_lower_bound_multi_run)):
        for m in (100, 1000, 10000):
            rng = np.random.default_rng(m)
            medians[name, m] = float(np.median([method(*laplace(rng, m, eps)).epsilon for _ in range(5)]))
        assert medians[name, 100] < medians[name, 1000] < medians[name, 10000] <= eps
    assert medians["one-run", 10000] > 3.0 and medians["multi-run", 10000] > 3.0  # measured 3.40, 3.44


def test_multi_run_delta_is_used() -> None:
    """(ε, δ)-DP: with probability δ an included canary is revealed (score 1000), else x + Laplace(1/ε)."""
    eps, delta = 1.0, 0.05
    rng = np.random.default_rng(1)
    aware, blind = [], []
    for _ in range(100):
        x = rng.random(4000) < 0.5
        s = np.where(x & (rng.random(4000) < delta), 1000.0, x + rng.laplace(scale=1 / eps, size=4000))
        s = np.round(s, 1)  # post-processing (still (ε, δ)-DP); fewer distinct thresholds, a faster test
        aware.append(epsilon_lower_bound_multi_run(s[x], s[~x], delta=delta).epsilon)
        blind.append(epsilon_lower_bound_multi_run(s[x], s[~x], delta=0.0).epsilon)
    assert np.mean(np.array(aware) <= eps) >= 0.95  # measured 100 %, median 0.71
    assert np.mean(np.array(blind) > eps) >= 0.95  # ignoring δ "catches" an honest mechanism: median 2.03


# --------------------------------------------------------------------------------------------------
# Caught: a mechanism that runs at 10 ε, a non-private one
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", [epsilon_lower_bound_one_run, epsilon_lower_bound_multi_run])
def test_claim_at_tenth_of_real_epsilon_is_caught(method) -> None:
    claimed = 1.0
    rng = np.random.default_rng(5)
    for _ in range(10):
        bound = method(*laplace(rng, 1000, 10 * claimed))
        verdict = audit_verdict(claimed, [bound])
        assert verdict.violated and bound.epsilon > claimed
        assert verdict.text.startswith("claim violated: ε ≥")


def test_honest_claim_is_consistent() -> None:
    a, b = laplace(np.random.default_rng(6), 1000, 1.0)
    v = audit_verdict(1.0, {"one-run": epsilon_lower_bound_one_run(a, b),
                            "multi-run": epsilon_lower_bound_multi_run(a, b)})
    assert not v.violated and v.text.startswith("claim consistent")
    assert v.confidence == pytest.approx(0.90)  # two bounds at 95 %: union bound


def test_non_private_mechanism_gives_a_large_bound() -> None:
    a, b = laplace(np.random.default_rng(8), 1000, None)
    one = epsilon_lower_bound_one_run(a, b)
    multi = epsilon_lower_bound_multi_run(a, b)
    assert one.epsilon > 4.5 and multi.epsilon > 4.5  # measured 4.94, 4.71: m = 1000 caps what an audit shows
    assert one.n_correct == one.n_guess == a.size


def test_explicit_threshold_and_bad_input() -> None:
    a, b = laplace(np.random.default_rng(9), 400, 4.0)
    one = epsilon_lower_bound_one_run(a, b, threshold=1.0)
    assert one.strategy == "explicit" and one.n_guess == int(np.sum(a >= 1.0) + np.sum(b >= 1.0))
    multi = epsilon_lower_bound_multi_run(a, b, threshold=0.5, two_sided=False)
    assert multi.n_correct == int(np.sum(a >= 0.5))
    with pytest.raises(DataError):
        epsilon_lower_bound_one_run(a, [], delta=0.0)
    with pytest.raises(DataError):
        epsilon_lower_bound_multi_run(a, b, strategy="best")


def test_one_run_split_ignores_membership() -> None:
    """The one-run split halves all m canaries at random, so a half's count of included ones varies."""
    a, b = np.arange(60.0), np.arange(100.0, 140.0)
    counts = set()
    for seed in range(20):
        (a1, b1), (a2, b2) = split_canaries(a, b, seed)
        assert a1.size + b1.size == 50 and a2.size + b2.size == 50
        assert sorted(np.concatenate([a1, a2]).tolist()) == a.tolist()
        assert sorted(np.concatenate([b1, b2]).tolist()) == b.tolist()
        counts.add(a2.size)
    assert len(counts) > 3
