"""The reliability release of U_TC's private names (docs/privacy.md, "How reliable the names are"):
its sensitivity holds on every replace-one neighbour of many small databases and on the adversarial
pairs of the self-check, and the real OpenDP release stays within its claimed ε on the worst pair found."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from dpaudit.measures._naming import MD_LINF_TIGHT
from dpaudit.measures.contribution import marginal_differences, naming_pair, tc_domain_pair
from dpaudit.privacy._mechanisms import laplace_vector_draws
from dpaudit.selfcheck._bound import _audit, _describe_threshold

EPSILON = 1.0


def _neighbours(table: np.ndarray):
    """Every replace-one neighbour of a (B, P, O) table: one tuple moved to any other cell."""
    cells = list(itertools.product(*map(range, table.shape)))
    for src in cells:
        if table[src] == 0:
            continue
        for dst in cells:
            if dst != src:
                after = table.copy()
                after[src] -= 1
                after[dst] += 1
                yield after


def _released(table: np.ndarray, chosen: np.ndarray, m: int) -> np.ndarray:
    """What the reliability release perturbs: the MD of the chosen cells and the (m+1)-th largest MD."""
    md = marginal_differences(table).ravel()
    return np.append(md[chosen], np.sort(md)[::-1][m])


def _tables(seed: int = 0, count: int = 50):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        shape = (int(rng.integers(1, 4)), int(rng.integers(2, 4)), int(rng.integers(2, 4)))
        yield rng.integers(0, 6, size=shape)
    yield naming_pair().before
    yield tc_domain_pair(m=3, big=5).before


def test_no_md_and_no_order_statistic_moves_more_than_one_over_n():
    """Step 2′: every |Δd| ≤ 1, so ‖ΔMD‖∞ ≤ 1/n and every order statistic of MD moves ≤ 1/n."""
    worst = 0.0
    for table in _tables():
        n = table.sum()
        md = marginal_differences(table).ravel()
        order = np.sort(md)
        for after in _neighbours(table):
            moved = marginal_differences(after).ravel()
            change = float(np.abs(moved - md).max()) * n
            assert change <= MD_LINF_TIGHT + 1e-9, (table.tolist(), after.tolist(), change)
            assert float(np.abs(np.sort(moved) - order).max()) * n <= MD_LINF_TIGHT + 1e-9
            worst = max(worst, change)
    assert worst > 0.9  # the bound is nearly reached: 1/n is tight


def test_the_released_vector_moves_at_most_m_plus_one_over_n_in_l1():
    """For any named set S of m cells (public: the selection's output), ‖Δv‖₁ ≤ (m+1)/n."""
    rng = np.random.default_rng(1)
    for table in _tables(seed=2, count=25):
        n, size = table.sum(), table.size
        for m in sorted({1, size // 2, size - 1}):
            chosen = rng.choice(size, size=m, replace=False)
            v = _released(table, chosen, m)
            for after in _neighbours(table):
                assert np.abs(_released(after, chosen, m) - v).sum() * n <= (m + 1) * MD_LINF_TIGHT + 1e-9


@functools.cache
def _worst_pair(m: int = 2):
    """The neighbours (and named set) whose released vector moves most in L1, among the tables searched."""
    best = (-1.0, None)
    for table in _tables(seed=3, count=50):
        if table.size <= m:
            continue
        md = marginal_differences(table).ravel()
        chosen = np.argsort(-md, kind="stable")[:m]
        v = _released(table, chosen, m)
        for after in _neighbours(table):
            change = float(np.abs(_released(after, chosen, m) - v).sum()) * table.sum()
            if change > best[0]:
                best = (change, (table, after, chosen))
    return best


def test_the_real_release_stays_within_its_claim_on_the_worst_pair():
    m = 2
    change, (before, after, chosen) = _worst_pair(m)
    n = before.sum()
    sensitivity = (m + 1) * MD_LINF_TIGHT / n
    assert 0.5 < change / (m + 1) <= 1 + 1e-9  # an adversarial pair: over half of the L1 bound is reached
    v0, v1 = _released(before, chosen, m), _released(after, chosen, m)
    scale = sensitivity / EPSILON
    exact = float(np.abs(v1 - v0).sum() / scale)  # the Laplace vector's exact loss on this pair
    assert exact <= EPSILON * (1 + 1e-9)
    draws = 4000
    out0 = laplace_vector_draws(v0, sensitivity_l1=sensitivity, epsilon=EPSILON, draws=draws)
    out1 = laplace_vector_draws(v1, sensitivity_l1=sensitivity, epsilon=EPSILON, draws=draws)

    def llr(sel0, sel1):  # the exact log-likelihood ratio, fixed in advance
        return lambda x: (np.abs(x - v0) - np.abs(x - v1)).sum(axis=1) / scale

    # a 99.9 % lower bound: the real (unseeded) noise may not make this test fail more than once in 1,000 runs
    outcome = _audit(out0, out1, llr, _describe_threshold, 0.001, np.random.default_rng(0))
    assert outcome.epsilon <= EPSILON, outcome
    print(f"reliability release: ‖Δv‖₁ = {change:.3f}/n of {m + 1}/n, exact loss {exact:.3f}, "
          f"ε lower bound {outcome.epsilon:.3f} ≤ {EPSILON}")


@pytest.mark.parametrize("broken", [0.25])
def test_a_release_with_too_little_noise_is_caught(broken):
    """The check has teeth: noise for a quarter of the sensitivity shows ε > the claim on the same pair."""
    m = 2
    change, (before, after, chosen) = _worst_pair(m)
    sensitivity = (m + 1) * MD_LINF_TIGHT / before.sum()
    v0, v1 = _released(before, chosen, m), _released(after, chosen, m)
    scale = broken * sensitivity / EPSILON
    out0 = laplace_vector_draws(v0, sensitivity_l1=broken * sensitivity, epsilon=EPSILON, draws=4000)
    out1 = laplace_vector_draws(v1, sensitivity_l1=broken * sensitivity, epsilon=EPSILON, draws=4000)

    def llr(sel0, sel1):
        return lambda x: (np.abs(x - v0) - np.abs(x - v1)).sum(axis=1) / scale

    outcome = _audit(out0, out1, llr, _describe_threshold, 0.05, np.random.default_rng(0))
    assert outcome.epsilon > EPSILON, outcome
