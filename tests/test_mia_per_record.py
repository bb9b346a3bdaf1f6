"""Validity of every MIA rule: null data (no signal) and Gaussian mixtures with known truth (spec mia.md §3).

Null data: scores with real per-record structure whose membership is permuted within each record
(``ScoreSet.permuted``), so nothing links membership to the scores. A valid rule reports a TPR within
sampling error of its own realised FPR, on both sides, and no ε > 0 (:func:`null_violations`, shared
with the RMIA tests). "Sampling error" is read off the rule's own bootstrap CI: |TPR − FPR| ≤ the CI's
full width. Two documented deviations are allowed for, and only where they are documented:

* the per-record parametric estimate has no realised FPR (its FPR is α under the Gaussian model):
  it must lie between α and its t thresholds' own leave-one-out FPR, the realised FPR of the test it
  estimates, widened by the CI width — equal on Gaussian null scores (checked both ways in
  ``test_gaussian_null_parametric_and_fixed_sign_pp_t_are_exact``), apart where the tails are not;
* with plain leave-one-out references (``references="loo"``, no longer the default) naive concatenation
  and PP-N(0,1) report *less* than their FPR at small M: an IN target's IN fit has one score fewer and
  its OUT fit one score more than an OUT target's (measured on null Gaussian scores, N+ = 20,000 × 3
  seeds, TPR/FPR at α = 0.05, 0.01, 0.001: naive 0.84, 0.69, 0.54 and PP-N(0,1) 0.91, 0.86, 0.77 at
  M = 16). With the default balanced references every target's fits hold as many scores, the deficit
  is gone and every rule is held from both sides at every M (:data:`ONE_SCORE_FEWER` is empty); only
  offline RMIA's statistic, which averages over the other OUT models itself, keeps the exemption.

Mixtures: per-record Gaussian scores (``gaussian_scores``) whose exact finite-sample truths are known
(``SimulatedScores.true_tpr_of_test``; PP-t with the fitted sign: :func:`fitted_sign_t_truth`); every
estimator must recover its truth within its CI.

The old definition (each record's LOO LiRA statistic read at its in-sample FPR ≤ α) is kept here,
only here, to show the null test has teeth; so is a rule biased low on purpose (monkeypatched).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.mia import tally
from dpaudit.mia.attacks.lira import lira_online
from dpaudit.mia.calibrate import threshold
from dpaudit.mia.designs import keep_matrix, poisson_keep
from dpaudit.mia.evaluate import RULES, evaluate
from dpaudit.mia.fits import loo_fits
from dpaudit.mia.per_record import (
    conformal_ranks,
    empirical_per_record,
    hit_probability,
    min_out_models,
    models_for_every_record,
    normal_tail_umvue,
    parametric_per_record,
)
from dpaudit.mia.results import AlphaResult
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.simulate import gaussian_scores


def scoreset(sim) -> ScoreSet:
    return sim.to_scoreset()


def old_per_record_tpr(stat: np.ndarray, keep: np.ndarray, alpha: float) -> tuple[float, float]:
    """The definition dpaudit used before: each record's exact ROC of the LOO statistic at FPR ≤ α."""
    n_out = (~keep).sum(axis=0)
    neg_sorted = -np.sort(-np.where(keep, -np.inf, stat), axis=0)
    k = np.floor(alpha * n_out).astype(np.int64)
    cut = neg_sorted[np.minimum(k, stat.shape[0] - 1), np.arange(stat.shape[1])]
    called = stat > cut[None, :]
    return float(((called & keep).sum(axis=0) / keep.sum(axis=0)).mean()), float(
        ((called & ~keep).sum(axis=0) / n_out).mean())


def ci_width(entry: dict) -> float:
    return entry["ci"][1] - entry["ci"][0]


#: Rules whose null TPR is below their realised FPR at small M by design (module docstring) …
ONE_SCORE_FEWER: tuple[str, ...] = ()
#: … and the M from which that deficit is negligible, so their lower side is checked.
ONE_SCORE_FEWER_NEGLIGIBLE_FROM = 64


def null_violations(row: AlphaResult, n_models: int, *, fewer: tuple[str, ...] = ONE_SCORE_FEWER) -> dict[str, str]:
    """How the rules at one α fail the null check, by rule ({} when every estimable rule passes).

    Each rule's TPR must lie within its bootstrap CI's full width of its own realised FPR, above and
    below, and its ε lower bound must be 0 (or None: no counts). The parametric rule's reference is
    the interval between α and its t thresholds' leave-one-out FPR; the rules in ``fewer`` are not
    checked from below at M < :data:`ONE_SCORE_FEWER_NEGLIGIBLE_FROM` (module docstring).
    """
    bad = {}
    for name, rule in row.rules.items():
        if not rule.estimable:
            continue
        assert rule.ci is not None and rule.tpr is not None and rule.fpr is not None
        width = rule.ci[1] - rule.ci[0]
        low = high = rule.fpr
        if name == "per_record_parametric":
            assert rule.t_threshold_fpr_loo is not None
            low, high = sorted((rule.fpr, rule.t_threshold_fpr_loo))
        lower_side = name not in fewer or n_models >= ONE_SCORE_FEWER_NEGLIGIBLE_FROM
        if rule.tpr > high + width:
            bad[name] = f"TPR {rule.tpr:.5g} above its FPR {high:.5g} by more than its CI width {width:.3g}"
        elif lower_side and rule.tpr < low - width:
            bad[name] = f"TPR {rule.tpr:.5g} below its FPR {low:.5g} by more than its CI width {width:.3g}"
        elif rule.epsilon_lb not in (0.0, None):
            bad[name] = f"ε ≥ {rule.epsilon_lb:.3g} on null data"
    return bad


def fitted_sign_t_truth(sim, alpha: float, n: int, *, draws: int = 256, seed: int = 0) -> tuple[float, float]:
    """Mean TPR of PP-t with the fitted sign on a balanced design (n IN and n OUT models per record), and
    its Monte-Carlo standard error.

    An IN target's score t ~ N(μ_in, σ_in²) is called when s·(t − A)/S ≥ c, c = t_{n−1}(1 − α)√(1 + 1/n),
    with A, S the mean and sd of the record's n OUT scores and s = +1 iff B ≥ A, B the mean of the n − 1
    other IN scores ~ N(μ_in, σ_in²/(n − 1)) (``dpaudit.mia.calibrate.fitted_sign``). t and B are
    independent of each other and of (A, S), so given A and S the call probability is

        Φ((μ_in − A)/σ_B)·Φ̄((A + cS − μ_in)/σ_in) + Φ̄((μ_in − A)/σ_B)·Φ((A − cS − μ_in)/σ_in),

    σ_B = σ_in/√(n − 1); it is averaged over ``draws`` draws per record of the independent
    A ~ N(μ_out, σ_out²/n) and S ~ σ_out·√(χ²_{n−1}/(n − 1)).
    """
    rng = np.random.default_rng(seed)
    shape = (draws, sim.n_records)
    a = sim.mu_out + sim.sd_out / np.sqrt(n) * rng.standard_normal(shape)
    s = sim.sd_out * np.sqrt(rng.chisquare(n - 1, shape) / (n - 1))
    c = threshold(alpha, kind="t", n_out=n)
    up = stats.norm.cdf((sim.mu_in - a) * np.sqrt(n - 1) / sim.sd_in)
    p = up * stats.norm.sf((a + c * s - sim.mu_in) / sim.sd_in) + (1 - up) * stats.norm.cdf(
        (a - c * s - sim.mu_in) / sim.sd_in)
    return float(p.mean()), float(np.sqrt((p.var(axis=0, ddof=1) / draws).sum()) / sim.n_records)


# ------------------------------------------------------------------------------------------------
# the conformal ranks and the hit probability


def test_conformal_ranks_match_a_loop_with_ties():
    rng = np.random.default_rng(1)
    for trial in range(12):
        m, n = int(rng.integers(6, 24)), int(rng.integers(1, 12))
        keep = rng.random((m, n)) < 0.5
        keep[:3], keep[3:6] = True, False
        score = rng.integers(0, 4, size=(m, n)).astype(float) if trial % 2 else rng.normal(size=(m, n))
        r = conformal_ranks(score, keep)
        for i in range(m):
            for x in range(n):
                ref = [score[j, x] for j in range(m) if j != i and not keep[j, x]]
                assert r.greater[i, x] == sum(v > score[i, x] for v in ref)
                assert r.equal[i, x] == sum(v == score[i, x] for v in ref)
                assert r.n_ref[i, x] == len(ref)


def test_hit_probability_is_exactly_alpha_on_out_targets_and_handles_ties():
    sim = gaussian_scores(40, 500, seed=2)
    for alpha in (0.05, 0.1, 0.37):
        h = hit_probability(conformal_ranks(sim.score, sim.keep), alpha)
        fpr = np.where(sim.keep, 0.0, h).sum(axis=0) / (~sim.keep).sum(axis=0)
        assert np.allclose(fpr, alpha)  # leave-one-out over OUT targets, no ties: α by construction
    # all scores tied: every test is a coin with probability α(n_ref + 1)/(n_ref + 1) = α
    flat = hit_probability(conformal_ranks(np.zeros((40, 3)), sim.keep[:, :3]), 0.1)
    assert np.allclose(flat, 0.1)


def test_min_out_models_and_not_estimable():
    assert [min_out_models(a) for a in (0.5, 0.1, 0.01, 0.001)] == [1, 9, 99, 999]
    sim = gaussian_scores(196, 50, seed=0)  # n_out = 98 < 99
    est = empirical_per_record(sim.score, sim.keep, 0.01)
    assert not est.estimable and est.tpr is None and "needs ≥ 99 OUT models per record" in est.reason
    assert "M ≥ 198" in est.reason and "the fewest here is 98" in est.reason
    assert empirical_per_record(*(gaussian_scores(198, 50, seed=0).score, gaussian_scores(198, 50, seed=0).keep),
                                0.01).estimable


def test_not_estimable_gives_the_models_needed_at_the_designs_inclusion_rate():
    """Poisson design, q = 0.3 (realised 0.2998): a record is OUT in 0.7·M models on average, so α = 0.01
    (99 OUT models) needs M ≥ 142 on average and M ≥ 171 for all 2,000 records (probability ≥ 1/2) —
    not the efficient design's M ≥ 198. A design drawn at that M is estimable about half the time, one
    drawn 12 models below it not."""
    keep = poisson_keep(100, 2000, inclusion=0.3, seed=0)
    est = empirical_per_record(np.zeros(keep.shape), keep, 0.01)
    q = keep.mean()
    need = models_for_every_record(99, q, 2000)
    assert not est.estimable and "efficient design" not in est.reason, est.reason
    assert f"inclusion rate q = {q:.3g}" in est.reason and f"M ≥ {need} gives all 2,000 records" in est.reason
    assert 99 / 0.7 < need < 198
    drawn = [(~poisson_keep(need, 2000, inclusion=q, seed=seed)).sum(axis=0).min() >= 99 for seed in range(20)]
    assert 0.25 <= np.mean(drawn) <= 0.8  # probability ≥ 1/2 by construction; 20 draws
    assert not any((~poisson_keep(need - 12, 2000, inclusion=q, seed=seed)).sum(axis=0).min() >= 99
                   for seed in range(5))
    # the same rule through evaluate (the rank rules' reason), and a balanced design with another share
    noise = np.random.default_rng(0).normal(size=keep.shape)
    rep = evaluate(ScoreSet(noise, keep, train_size=600, pool_size=2000), fpr=(0.01,), n_boot=0)
    assert rep.rows[0].rules["pp_rank"].reason == est.reason
    third = np.zeros((60, 30), dtype=bool)
    third[:20] = True  # every record IN in 20 of 60 models: OUT share 2/3
    reason = empirical_per_record(np.zeros(third.shape), third, 0.01).reason
    assert "(M ≥ 149 with every record OUT in 40 of 60 models, as here), the fewest here is 40" in reason


def test_normal_tail_umvue_is_unbiased():
    rng = np.random.default_rng(3)
    for n, cut in ((3, 0.5), (6, 2.0), (40, -1.0)):
        y = rng.normal(1.0, 2.0, size=(200_000, n))
        est = normal_tail_umvue(np.full(200_000, cut), np.full(200_000, n), y.mean(1), y.std(1, ddof=1))
        truth = stats.norm.sf(cut, 1.0, 2.0)
        assert abs(est.mean() - truth) < 4 * est.std() / np.sqrt(200_000)
    point = normal_tail_umvue(np.array([0.0, 0.0]), np.array([5, 5]), np.array([1.0, -1.0]), np.zeros(2))
    assert point.tolist() == [1.0, 0.0]  # no spread: a point mass


# ------------------------------------------------------------------------------------------------
# mixtures with known truth


@pytest.fixture(scope="module")
def mixture():
    sim = gaussian_scores(256, 8000, seed=21)
    return sim, evaluate(scoreset(sim), fpr=(0.01, 0.001), n_boot=60, seed=4, sign="positive")


def test_each_estimator_recovers_its_exact_truth(mixture):
    """Each estimator against the exact TPR of the test it estimates, with n_out = M/2 = 128."""
    sim, rep = mixture
    for alpha, row in zip(rep.alphas, rep.rows):
        t_truth = sim.true_tpr_of_test(alpha, "t", 128).mean()
        for rule in ("pp_t", "per_record_parametric"):
            lo, hi = row[rule]["ci"]
            assert lo <= t_truth <= hi, (alpha, rule, row[rule], t_truth)
        # the t test at n_out = 128 loses little against the oracle with known parameters
        assert t_truth == pytest.approx(sim.true_mean_tpr(alpha), rel=0.05)
    row = rep.rows[0]  # α = 0.01: n_out = 128 ≥ 99, the empirical estimator is defined
    conformal_truth = sim.true_tpr_of_test(0.01, "conformal", 128).mean()
    for rule in ("pp_rank", "per_record_empirical"):
        lo, hi = row[rule]["ci"]
        assert lo <= conformal_truth <= hi, (rule, row[rule], conformal_truth)
        assert row[rule]["fpr"] == pytest.approx(0.01)  # exact, by the randomised rank
    assert row["pp_rank"]["tpr"] == pytest.approx(row["per_record_empirical"]["tpr"])  # one design: one number
    assert not rep.rows[1]["per_record_empirical"]["estimable"]  # α = 0.001 needs n_out ≥ 999


def test_estimators_agree_with_each_other_and_the_oracle_at_large_m():
    """M = 1,024 (n_out = 512): every estimator's CI holds the exact TPR of the test it estimates and the
    oracle's (known parameters: 0.1538; the t test 0.1532, the conformal test 0.1515, computed, not
    sampled), with both signs of PP-t (the fitted sign's truth with its Monte-Carlo error, ≤ 1e-4)."""
    sim = gaussian_scores(1024, 3000, seed=8)
    oracle = sim.true_mean_tpr(0.01)
    fitted, se = fitted_sign_t_truth(sim, 0.01, 512)
    truth = {test: sim.true_tpr_of_test(0.01, test, 512).mean() for test in ("t", "conformal")}
    for sign in ("positive", "fitted"):
        row = evaluate(scoreset(sim), fpr=(0.01,), n_boot=40, seed=1, sign=sign).rows[0]
        tests = {"pp_t": "t", "per_record_parametric": "t", "pp_rank": "conformal", "per_record_empirical": "conformal"}
        for rule, test in tests.items():
            lo, hi = row[rule]["ci"]
            want = (fitted - 4 * se, fitted + 4 * se) if (rule, sign) == ("pp_t", "fitted") else (truth[test],) * 2
            assert lo <= want[0] and want[1] <= hi and lo <= oracle <= hi, (sign, rule, row[rule], want, oracle)
        assert row["naive"]["ci"][0] > oracle  # naive concatenation still overstates


def test_pp_t_with_the_fitted_sign_recovers_its_truth():
    """PP-t with the default (fitted) sign, on a mixture where 30 % of records score *lower* when IN:
    its truth (:func:`fitted_sign_t_truth`) lies in its CI widened by 4 Monte-Carlo standard errors of
    the truth (≤ 3e-5 here, against CI widths ≥ 1e-3). The positive sign's truth lies far below the
    CI, so the check tells the two signs apart."""
    sim = gaussian_scores(256, 4000, seed=31, negative_share=0.3)
    rep = evaluate(scoreset(sim), fpr=(0.01, 0.001), n_boot=40, seed=4)
    assert rep.options["sign"] == "fitted"
    for alpha, row in zip(rep.alphas, rep.rows):
        truth, se = fitted_sign_t_truth(sim, alpha, 128)
        lo, hi = row["pp_t"]["ci"]
        assert lo - 4 * se <= truth <= hi + 4 * se, (alpha, row["pp_t"], truth, se)
        assert sim.true_tpr_of_test(alpha, "t", 128).mean() < lo  # the one-sided test misses the negative records


def test_finite_sample_truths_match_monte_carlo():
    sim = gaussian_scores(4, 40, seed=5, in_sd_ratio=1.5)
    rng = np.random.default_rng(0)
    n, reps, alpha = 30, 40_000, 0.1
    out = sim.mu_out[:, None, None] + sim.sd_out[:, None, None] * rng.standard_normal((40, reps, n))
    y = sim.mu_in[:, None] + sim.sd_in[:, None] * rng.standard_normal((40, reps))
    cut = out.mean(2) + out.std(2, ddof=1) * threshold(alpha, kind="t", n_out=n)
    mc_t = (y > cut).mean(1)
    greater = (out > y[:, :, None]).sum(2)
    mc_conf = np.clip(alpha * (n + 1) - greater, 0, 1).mean(1)
    se = 0.5 / np.sqrt(reps)
    assert np.abs(mc_t - sim.true_tpr_of_test(alpha, "t", n)).max() < 5 * se
    assert np.abs(mc_conf - sim.true_tpr_of_test(alpha, "conformal", n)).max() < 5 * se


# ------------------------------------------------------------------------------------------------
# null data


NULL_CASES = [  # (M, α, generator options): variance patterns, locations and effects that the permutation hides
    (16, (0.05, 0.01), {}),
    (32, (0.05, 0.01), {"in_sd_ratio": 0.5}),
    (64, (0.05, 0.01, 0.001), {"heterogeneity": 0.0}),
    (256, (0.01, 0.001), {"heterogeneity": 1.0, "in_sd_ratio": 2.0}),
    (512, (0.01, 0.002), {"effect": 3.0, "location_spread": 3.0}),
    (1024, (0.01, 0.002), {}),
]


@pytest.mark.parametrize("m, alphas, options", NULL_CASES)
def test_null_data_no_rule_reports_leakage(m, alphas, options):
    """Every rule within sampling error of its realised FPR on both sides (:func:`null_violations`)."""
    sim = gaussian_scores(m, 4000, seed=m, **options)
    null = scoreset(sim).permuted(seed=7)
    for sign in ("fitted", "positive"):
        rep = evaluate(null, fpr=alphas, n_boot=40, seed=3, sign=sign)
        for alpha, row in zip(rep.alphas, rep.rows):
            assert null_violations(row, m) == {}, (m, alpha, sign)
            ranked = m // 2 >= min_out_models(alpha)
            for rule in RULES:
                assert row.rules[rule].estimable == (ranked or rule not in ("pp_rank", "per_record_empirical"))
            if ranked:
                assert row["per_record_empirical"]["fpr"] == pytest.approx(alpha)


def test_the_null_check_catches_a_rule_biased_low(monkeypatch):
    """A rule made to under-report on purpose: the members' PP scores lowered by 0.5, i.e. the PP-N(0,1)
    and PP-t thresholds raised by 0.5 for members only. The null check flags both rules (and nothing
    else), where the one-sided check it replaced (TPR ≤ FPR + CI width) passed them."""
    sim = gaussian_scores(256, 4000, seed=256, heterogeneity=1.0, in_sd_ratio=2.0)
    null = scoreset(sim).permuted(seed=7)
    count_pp = tally._count_pp

    def members_lowered(plan, counts, sets, cols, f, z, k, *rest):
        count_pp(plan, counts, sets, cols, f - 0.5 * k, z, k, *rest)

    monkeypatch.setattr(tally, "_count_pp", members_lowered)
    row = evaluate(null, fpr=(0.01,), n_boot=40, seed=3).rows[0]
    assert set(null_violations(row, 256)) == {"pp_normal", "pp_t"}
    for rule in ("pp_normal", "pp_t"):
        r = row.rules[rule]
        assert r.tpr < r.fpr / 2 and r.tpr <= r.fpr + (r.ci[1] - r.ci[0])  # the old check let it through


@pytest.mark.parametrize("m, alpha", [(32, 0.01), (64, 0.001), (256, 0.01)])
def test_gaussian_null_parametric_and_fixed_sign_pp_t_are_exact(m, alpha):
    """No signal and Gaussian scores: the t-based rules are exact at any M and α (both sides)."""
    sim = gaussian_scores(m, 6000, seed=m + 1, effect=0.0)
    row = evaluate(scoreset(sim), fpr=(alpha,), n_boot=40, seed=2, sign="positive").rows[0]
    for rule in ("per_record_parametric", "pp_t"):
        assert abs(row[rule]["tpr"] - alpha) <= ci_width(row[rule]), (rule, row[rule])
    assert abs(row["per_record_parametric"]["t_threshold_fpr_loo"] - alpha) <= ci_width(row["pp_t"])
    assert abs(row["pp_t"]["fpr"] - alpha) <= ci_width(row["pp_t"])


def test_the_old_per_record_definition_fails_the_null_test():
    """The old estimator on the same kind of null data: TPR far below its realised FPR (M = 512),
    and at α < 1/n_out it reads FPR 0 and overstates a mixture's truth (the tests above have teeth)."""
    sim = gaussian_scores(512, 4000, seed=512, effect=3.0, location_spread=3.0)
    null = scoreset(sim).permuted(seed=7)
    online = lira_online(null.score, loo_fits(null.score, null.keep))
    tpr, fpr = old_per_record_tpr(online, np.asarray(null.keep), 0.01)
    new = evaluate(null, fpr=(0.01,), n_boot=40, seed=3).rows[0]["per_record_empirical"]
    assert fpr - tpr > 5 * ci_width(new)  # the check above would fail it
    mix = gaussian_scores(256, 8000, seed=21)
    online = lira_online(mix.score, loo_fits(mix.score, mix.keep))
    old_tpr, old_fpr = old_per_record_tpr(online, mix.keep, 0.001)
    assert old_fpr == 0.0 and old_tpr > 1.25 * mix.true_mean_tpr(0.001)  # +31 %, at FPR 0


def test_epsilon_bounds_come_from_realised_rates():
    """Pure noise at a tiny α: no ε > 0 (the old report said ε ≥ 30.7 at α = 1e-15, now refused as below MIN_FPR); with
    signal, the bound is below the point estimate and positive."""
    rng = np.random.default_rng(0)
    keep = keep_matrix(64, 2000, seed=1)
    noise = ScoreSet(rng.normal(size=keep.shape), keep, train_size=1000, pool_size=2000)
    for alpha in (1e-3, 1e-12):
        row = evaluate(noise, fpr=(alpha,), n_boot=0).rows[0]
        for rule in RULES:
            assert row[rule]["epsilon_lb"] in (0.0, None), (alpha, rule, row[rule])
    sim = gaussian_scores(256, 4000, seed=2, effect=3.0)
    row = evaluate(scoreset(sim), fpr=(0.01,), n_boot=0).rows[0]
    for rule in ("naive", "pp_t", "pp_rank"):
        assert 0 < row[rule]["epsilon_lb"] < row[rule]["epsilon_point"], row[rule]


def test_parametric_with_fpc_uses_the_corrected_variances():
    sim = gaussian_scores(64, 2000, seed=3)
    plain = parametric_per_record(sim.score, sim.keep, 0.01).tpr.mean()
    corrected = parametric_per_record(sim.score, sim.keep, 0.01, fpc=0.5).tpr.mean()
    assert corrected < plain  # a √2 higher threshold, partly offset by a wider IN spread
