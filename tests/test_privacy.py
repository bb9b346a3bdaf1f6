"""Laplace release through OpenDP, the 95% interval, seeding, and the budget accountant."""

import math

import numpy as np
import pytest

from dpaudit import Budget, BudgetError, DPAuditError
from dpaudit.privacy import INTERVAL_Z, exact_release, laplace_release


def test_noise_spread_matches_scale():
    # 4,000 OpenDP draws at scale b: std of Laplace is b·√2, mean absolute deviation is b.
    sensitivity, epsilon = 0.02, 0.5
    scale = sensitivity / epsilon
    draws = np.array([laplace_release(1.0, sensitivity=sensitivity, epsilon=epsilon).value for _ in range(4000)])
    noise = draws - 1.0
    # Standard errors: std of |Lap| is b, so the MAD estimate has SE b/√4000 ≈ 0.016 b; 5 SE bounds.
    assert np.mean(np.abs(noise)) == pytest.approx(scale, rel=0.08)
    assert np.std(noise) == pytest.approx(scale * math.sqrt(2), rel=0.1)
    assert abs(np.mean(noise)) < 5 * scale * math.sqrt(2) / math.sqrt(4000)
    # The 95% interval covers the true value about 95% of the time.
    coverage = np.mean(np.abs(noise) <= scale * INTERVAL_Z)
    assert 0.93 <= coverage <= 0.97


def test_release_fields():
    r = laplace_release(0.3, sensitivity=0.01, epsilon=2.0)
    assert r.dp and r.epsilon == 2.0 and r.sensitivity == 0.01 and r.scale == 0.005
    assert r.interval == pytest.approx((r.value - 0.005 * math.log(20), r.value + 0.005 * math.log(20)))
    assert "OpenDP" in r.mechanism and r.reasons == ()


def test_seeded_release_is_reproducible_and_marked_not_dp():
    a = laplace_release(0.3, sensitivity=0.01, epsilon=1.0, seed=7)
    b = laplace_release(0.3, sensitivity=0.01, epsilon=1.0, seed=7)
    assert a.value == b.value and not a.dp
    assert any("seeded" in reason for reason in a.reasons)


def test_extra_reasons_void_dp():
    r = laplace_release(0.3, sensitivity=0.01, epsilon=1.0, reasons=("schema inferred",))
    assert not r.dp and r.reasons == ("schema inferred",)


def test_exact_release():
    r = exact_release(0.25, sensitivity=0.1)
    assert (r.value, r.epsilon, r.scale, r.interval, r.dp) == (0.25, None, 0.0, (0.25, 0.25), False)


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), "x"])
def test_bad_epsilon(bad):
    with pytest.raises(DPAuditError, match="epsilon must be a"):
        laplace_release(0.1, sensitivity=1.0, epsilon=bad)


def test_bad_sensitivity():
    with pytest.raises(DPAuditError, match="sensitivity must be a positive"):
        laplace_release(0.1, sensitivity=0.0, epsilon=1.0)


def test_budget_refuses_before_overspending():
    budget = Budget(1.0)
    budget.spend(0.5, "tvd")
    budget.spend(0.25, "tc")
    with pytest.raises(BudgetError, match=r"release 'repair' asks for epsilon=0.5 but only 0.25 of the total 1 remains \(0.25 short\)"):
        budget.spend(0.5, "repair")
    assert budget.ledger == (("tvd", 0.5), ("tc", 0.25))  # the refused release was not recorded
    assert budget.remaining == 0.25
    budget.spend(0.25, "repair")  # spending exactly the rest is allowed
    assert budget.remaining == 0.0
    with pytest.raises(BudgetError):
        budget.spend(1e-6, "more")


def test_budget_float_split_sums_to_total():
    budget = Budget(1.0)
    for _ in range(3):
        budget.spend(1 / 3, "third")
    assert budget.remaining == 0.0


def test_budget_total_must_be_positive():
    with pytest.raises(DPAuditError, match="total_epsilon must be a positive"):
        Budget(0)
