"""The audit of many models at once: one-run bounds over all M·m (model, canary) pairs with top-r guesses on a
grid (``strategy="grid"``), scores centred per model (:func:`dpaudit.mia.claim.audit.pooled_scores`), and the
multi-run bound that chooses its canary on half of the models (:func:`multi_run_split_canaries`).

Validity is checked on a mechanism of known privacy that has the shape of a trained model's canary scores: each
model's m scores move together with the number of canaries it took in (a model-level shift), and each canary's
own score moves when it is in. A Gaussian mechanism with that mean vector is exactly μ-GDP per inclusion coin,
μ = ‖Δ‖₂, so every (ε, δ) on its GDP curve is its true privacy.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit._errors import DataError
from dpaudit.mia.claim.audit import pooled_scores
from dpaudit.mia.dp_audit import epsilon_lower_bound_one_run, epsilon_one_run, guess_counts, top_guesses
from dpaudit.mia.dp_audit_fdp import epsilon_lower_bound_one_run_fdp, gdp_epsilon
from dpaudit.mia.dp_audit_multi import multi_run_split_canaries

DELTA = 1e-5


def shifted_gaussian(models: int, m: int, own: float, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Scores (M, m), inclusions (M, m) and the exact GDP μ per coin of
    score_ji = own·b_ji + shift·(Σ_k b_jk − m/2)/√m + N(0, 1): a coin moves its own score by own + shift/√m and
    the m − 1 others by shift/√m."""
    rng = np.random.default_rng(seed)
    b = rng.random((models, m)) < 0.5
    level = shift * (b.sum(axis=1, keepdims=True) - m / 2) / np.sqrt(m)
    scores = own * b + level + rng.normal(size=(models, m))
    c = shift / np.sqrt(m)
    return scores, b, float(np.sqrt((own + c) ** 2 + (m - 1) * c**2))


def test_the_grid_of_guess_counts():
    assert guess_counts(1).tolist() == [1]
    assert guess_counts(6).tolist() == [1, 2, 4, 6]
    assert guess_counts(8).tolist() == [1, 2, 4, 8]
    assert guess_counts(1000).size == 11


def test_ties_are_broken_by_the_seed_and_the_grid_bound_is_the_best_top_r_bound():
    scores_in, scores_out = np.array([3.0, 2.0, 2.0, 2.0]), np.array([2.0, 2.0, 1.0, 0.0])
    a = top_guesses(scores_in, scores_out, 0)[1]
    assert np.array_equal(a, top_guesses(scores_in, scores_out, 0)[1])
    assert any(not np.array_equal(a, top_guesses(scores_in, scores_out, s)[1]) for s in range(1, 20))
    rng = np.random.default_rng(1)
    si, so = rng.normal(1.0, 1.0, 300), rng.normal(0.0, 1.0, 300)  # no ties: the top r are unique
    b = epsilon_lower_bound_one_run(si, so, delta=DELTA, confidence=0.95, strategy="grid")
    order = np.argsort(-np.concatenate([si, so]))
    correct = np.cumsum(order < 300)
    grid = guess_counts(600)
    by_hand = [epsilon_one_run(600, int(r), int(correct[r - 1]), delta=DELTA, confidence=1 - 0.05 / grid.size)
               for r in grid]
    assert b.epsilon == pytest.approx(max(by_hand), abs=1e-9) and b.epsilon > 0
    assert b.n_guess == grid[int(np.argmax(by_hand))] and b.strategy == "grid"


@pytest.mark.parametrize("bound", [epsilon_lower_bound_one_run, epsilon_lower_bound_one_run_fdp])
def test_pooled_bounds_hold_on_a_mechanism_of_known_privacy(bound):
    """Every pooled grid bound ≤ the mechanism's exact ε(δ) in ≥ 95 % of 100 audits (M = 20, m = 50), and it sees
    the leak (true ε(10⁻⁵) = 9.5): its median is above 1."""
    values, true = [], None
    for seed in range(100):
        scores, b, mu = shifted_gaussian(20, 50, own=1.5, shift=1.0, seed=seed)
        true = gdp_epsilon(mu, DELTA)
        z = pooled_scores(scores)
        values.append(bound(z[b], z[~b], delta=DELTA, confidence=0.95, strategy="grid", seed=seed).epsilon)
    values = np.array(values)
    assert np.mean(values <= true) >= 0.95
    assert np.median(values) > 1.0


def test_centring_per_model_removes_the_model_level_shift():
    """With a large model-level shift the raw pooled scores hide the leak; centred ones show it."""
    scores, b, _ = shifted_gaussian(20, 50, own=3.0, shift=20.0, seed=0)
    raw = epsilon_lower_bound_one_run(scores[b], scores[~b], delta=DELTA, strategy="grid").epsilon
    z = pooled_scores(scores)
    centred = epsilon_lower_bound_one_run(z[b], z[~b], delta=DELTA, strategy="grid").epsilon
    assert centred > raw + 0.5


def test_no_signal_gives_no_bound():
    """Scores independent of membership: the pooled one-run and the multi-run bounds are 0 in ≥ 95 % of audits."""
    one, multi = [], []
    for seed in range(60):
        rng = np.random.default_rng(seed)
        b = rng.random((20, 50)) < 0.5
        z = pooled_scores(rng.standard_t(2, size=(20, 50)) + rng.normal(size=(20, 1)))  # heavy tails, shifts
        one.append(epsilon_lower_bound_one_run(z[b], z[~b], delta=DELTA, strategy="grid", seed=seed).epsilon)
        multi.append(multi_run_split_canaries(z, b, delta=DELTA, seed=seed)[0].epsilon)
    assert np.mean(np.array(one) == 0) >= 0.95 and np.mean(np.array(multi) == 0) >= 0.95


def test_the_multi_run_split_bound_holds_and_finds_the_leaking_canary():
    values = []
    for seed in range(100):
        rng = np.random.default_rng(seed)
        b = rng.random((200, 5)) < 0.5
        scores = rng.normal(size=(200, 5)) + 2.0 * (b & (np.arange(5) == 3))  # canary 3: the Gaussian mechanism μ = 2
        bound, which = multi_run_split_canaries(scores, b, delta=DELTA, confidence=0.95, seed=seed)
        values.append(bound.epsilon)
        assert bound.epsilon == 0 or which == 3
    true = gdp_epsilon(2.0, DELTA)
    assert np.mean(np.array(values) <= true) >= 0.95 and np.median(values) > 1.0


def test_the_multi_run_split_bound_refuses_bad_shapes_and_too_few_models():
    b = np.zeros((10, 3), dtype=bool)
    with pytest.raises(DataError, match="models, canaries"):
        multi_run_split_canaries(np.zeros((10, 2)), b)
    with pytest.raises(DataError, match="at least 4"):
        multi_run_split_canaries(np.zeros((3, 3)), b[:3])
    bound, which = multi_run_split_canaries(np.zeros((10, 3)), b)  # no canary ever in: no evidence
    assert bound.epsilon == 0 and which is None


def test_the_delta_term_caps_what_a_one_run_audit_can_show():
    """docs/mia.md: at δ = 10⁻⁵ all m/2 guesses right certify at most ≈ ln(β′/(4δ)), whatever m (4.03 at
    m = 6,400, 3.59 at m = 102,400), while δ = 0 goes on growing."""
    for m, expect in ((6400, 4.03), (102400, 3.59)):
        beta = 0.025 / guess_counts(m).size
        capped = epsilon_one_run(m, m // 2, m // 2, delta=DELTA, confidence=1 - beta)
        assert capped == pytest.approx(expect, abs=0.005) and capped < np.log(beta / (4 * DELTA)) + 0.25
        assert epsilon_one_run(m, m // 2, m // 2, delta=0.0, confidence=1 - beta) > capped + 2
