"""Tests of the MIA simulators (spec mia.md §3a, §3b).

Tolerances are stated in standard errors (SE) of the Monte Carlo estimate; every test is seeded,
so a pass is deterministic, and the bounds (4–5 SE) would fail by chance well under 1e-3 per check
on a fresh seed. The Monte Carlo estimates here are deliberate brute-force oracles for the closed
forms in ``simulate.py``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pytest
from scipy import stats

from dpaudit._errors import DPAuditError
from dpaudit._validation import CHOICE, EVERY, WHOLE
from dpaudit.mia.designs import EVEN_MODELS_HINT
from dpaudit.mia.scores import TRAIN_SIZE_HINT
from dpaudit.mia.simulate import (
    DEFAULT_ALPHAS,
    FPC_DESIGNS,
    MAX_CELLS,
    MAX_REPEATS,
    FpcResult,
    SimulatedScores,
    fpc_simulation,
    gaussian_scores,
)


def _even_models(value, minimum=2):
    """The message of an M the efficient design cannot use, as a regex."""
    return re.escape(WHOLE.format(name="n_models", bounds=f" >= {minimum} and even{EVEN_MODELS_HINT}", value=value))

# --------------------------------------------------------------------------------------------
# gaussian_scores: design and moments


def test_keep_is_the_efficient_lira_design():
    sim = gaussian_scores(64, 300, seed=11)
    assert sim.keep.dtype == bool and sim.score.dtype == np.float64
    assert sim.keep.shape == sim.score.shape == (64, 300)
    assert (sim.keep.sum(axis=0) == 32).all()  # every record IN in exactly M/2 models
    assert sim.keep.sum(axis=1).mean() == pytest.approx(150)  # models' sizes average N+/2
    assert sim.keep.sum(axis=1).std() > 0  # ... but vary: the design is per record, not per model
    assert (sim.pool_size, sim.train_size) == (300, 150)
    assert gaussian_scores(4, 7, seed=0).train_size == 3


def test_scores_have_the_requested_per_record_moments():
    m = 1000
    sim = gaussian_scores(m, 200, seed=3, heterogeneity=1.0, in_sd_ratio=1.5, negative_share=0.3, effect=2.0)
    n = m // 2
    for side, mu, sd in ((sim.keep, sim.mu_in, sim.sd_in), (~sim.keep, sim.mu_out, sim.sd_out)):
        # keep has exactly n True per column, so a column-major reshape keeps the record order
        values = sim.score.T[side.T].reshape(sim.n_records, n)
        z_mean = (values.mean(axis=1) - mu) / (sd / math.sqrt(n))
        z_sd = (values.std(axis=1, ddof=1) / sd - 1.0) * math.sqrt(2 * (n - 1))
        # 200 records × 2 statistics of ~N(0, 1): the max |z| stays below 4.5 (P(fail) ≈ 3e-3);
        # their means are N(0, 1/200).
        assert np.abs(z_mean).max() < 4.5 and abs(z_mean.mean()) < 4 / math.sqrt(200)
        assert np.abs(z_sd).max() < 4.5 and abs(z_sd.mean()) < 4 / math.sqrt(200)


def test_record_parameters_follow_the_documented_distributions():
    sim = gaussian_scores(
        2, 40_000, seed=5, effect=1.5, sigma=2.0, heterogeneity=0.4, location_spread=3.0,
        in_sd_ratio=0.8, negative_share=0.25,
    )
    n = sim.n_records
    d = np.abs(sim.delta) / sim.sd_out  # effect · χ²₁: mean 1.5, sd 1.5·√2
    assert abs(d.mean() - 1.5) < 4 * 1.5 * math.sqrt(2 / n)
    log_sd = np.log(sim.sd_out)  # N(log 2, 0.4²)
    assert abs(log_sd.mean() - math.log(2.0)) < 4 * 0.4 / math.sqrt(n)
    assert abs(log_sd.std(ddof=1) / 0.4 - 1) < 4 / math.sqrt(2 * n)
    assert abs(sim.mu_out.std(ddof=1) / 3.0 - 1) < 4 / math.sqrt(2 * n)
    assert np.allclose(sim.sd_in, 0.8 * sim.sd_out)
    share_negative = (sim.delta < 0).mean()
    assert abs(share_negative - 0.25) < 4 * math.sqrt(0.25 * 0.75 / n)


def test_seeded_reproducible_and_read_only():
    a, b = gaussian_scores(8, 20, seed=1), gaussian_scores(8, 20, seed=1)
    assert np.array_equal(a.score, b.score) and np.array_equal(a.keep, b.keep)
    assert not np.array_equal(a.score, gaussian_scores(8, 20, seed=2).score)
    with pytest.raises(ValueError):
        a.score[0, 0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.score = b.score


def test_zero_effect_equal_variance_gives_tpr_alpha():
    sim = gaussian_scores(4, 50, seed=0, effect=0.0, heterogeneity=1.0)
    for alpha in DEFAULT_ALPHAS:
        assert np.allclose(sim.true_tpr(alpha), alpha, rtol=1e-12)


def test_true_tpr_equal_variance_is_the_neyman_pearson_power():
    # σ_in = σ_out: TPR_x = Φ(d_x − z_α) with d_x = |Δ_x|/σ_out,x (standard power of a z-test).
    sim = gaussian_scores(4, 500, seed=9, negative_share=0.5)
    d = np.abs(sim.delta) / sim.sd_out
    assert np.allclose(sim.true_tpr(1e-3), stats.norm.cdf(d - stats.norm.isf(1e-3)))


# --------------------------------------------------------------------------------------------
# true_mean_tpr vs Monte Carlo (brute-force oracle)


def _calibrated_statistic(sim: SimulatedScores) -> np.ndarray:
    """f_x(t) = sign(Δ_x)(t − μ_out,x)/σ_out,x with the true parameters, sign(0) = +1."""
    sign = np.where(sim.delta < 0, -1.0, 1.0)
    return sign * (sim.score - sim.mu_out) / sim.sd_out


@pytest.mark.parametrize(
    ("in_sd_ratio", "negative_share"), [(1.0, 0.0), (1.5, 0.3), (0.7, 0.5)]
)
def test_true_mean_tpr_matches_monte_carlo(in_sd_ratio, negative_share):
    m, n_rec = 2000, 300
    sim = gaussian_scores(m, n_rec, seed=17, in_sd_ratio=in_sd_ratio, negative_share=negative_share)
    f = _calibrated_statistic(sim)
    n_in = m // 2
    for alpha in (0.1, 0.01):
        hits = f > stats.norm.isf(alpha)
        p = sim.true_tpr(alpha)
        # TPR: every record has exactly n_in IN draws, so the pooled hit rate is the mean of the
        # per-record rates; conditional on the records its SE is √(Σ_x p_x(1−p_x)/n_in)/N+.
        tpr_mc = hits[sim.keep].mean()
        se = math.sqrt((p * (1 - p)).sum() / n_in) / n_rec
        assert abs(tpr_mc - sim.true_mean_tpr(alpha)) < 4.5 * se, (alpha, tpr_mc, sim.true_mean_tpr(alpha), se)
        # FPR: α for every record (calibration), binomial SE over all OUT draws.
        fpr_mc = hits[~sim.keep].mean()
        assert abs(fpr_mc - alpha) < 4.5 * math.sqrt(alpha * (1 - alpha) / (n_rec * n_in))
        # Per record, not only on average: records grouped by their true TPR (10 bins).
        per_record = (hits & sim.keep).sum(axis=0) / n_in
        bins = np.array_split(np.argsort(p), 10)
        for idx in bins:
            se_bin = math.sqrt((p[idx] * (1 - p[idx])).sum() / n_in) / idx.size
            assert abs(per_record[idx].mean() - p[idx].mean()) < 4.5 * se_bin + 1e-12


def test_true_mean_tpr_is_the_mean_of_true_tpr_and_decreases_with_alpha():
    sim = gaussian_scores(2, 1000, seed=4)
    values = [sim.true_mean_tpr(a) for a in DEFAULT_ALPHAS]
    assert values == sorted(values, reverse=True)
    assert all(v > a for v, a in zip(values, DEFAULT_ALPHAS))
    assert sim.true_mean_tpr(0.01) == pytest.approx(sim.true_tpr(0.01).mean(), rel=1e-15)


# --------------------------------------------------------------------------------------------
# FPC simulation


def _se(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / math.sqrt(values.size))


@pytest.mark.parametrize("design", ["efficient", "subsets"])
def test_fpc_ratio_concentrates_around_sqrt_fpc(design):
    res = fpc_simulation(pool_size=1000, train_size=500, n_models=256, n_repeats=40, design=design, seed=21)
    assert isinstance(res, FpcResult)
    assert res.sqrt_fpc == pytest.approx(math.sqrt(0.5)) and res.fpc == pytest.approx(0.5)
    assert res.sigma_ana == pytest.approx(1 / math.sqrt(500))
    assert res.ratio.shape == res.corrected.shape == (40,)
    assert res.mean_train_size == pytest.approx(500)
    # the bias is real: the ratio is far below 1 ...
    assert res.ratio.mean() < 1 - 20 * _se(res.ratio)
    # ... and sits at √FPC
    assert abs(res.ratio.mean() - res.sqrt_fpc) < 4 * _se(res.ratio)
    assert abs(res.ratio_sim.mean() - res.sqrt_fpc) < 4 * _se(res.ratio_sim)
    # the correction recovers σ_ana, and the fresh-data simulation agrees with the analytic value
    assert abs(res.corrected.mean() - res.sigma_ana) < 4 * _se(res.corrected)
    assert abs(res.sigma_ana_sim.mean() - res.sigma_ana) < 4 * _se(res.sigma_ana_sim)
    # per record (the σ_out LiRA fits): same shrinkage, √(1 − N/(N+ − 1)) for an OUT record
    rms = res.record_ratio_rms
    assert abs(rms.mean() - math.sqrt(1 - 500 / 999)) < 4 * _se(rms)
    assert res.record_ratio.shape == (40, 1000) and np.isfinite(res.record_ratio).all()


def test_fpc_other_fraction_and_dimension():
    # N/N+ = 0.2, d = 3: √FPC = √0.8 (simple random subsets: the efficient design fixes N = N+/2).
    res = fpc_simulation(
        pool_size=500, train_size=100, n_models=250, n_repeats=30, dim=3, design="subsets", seed=8
    )
    assert res.sqrt_fpc == pytest.approx(math.sqrt(0.8))
    assert abs(res.ratio.mean() - math.sqrt(0.8)) < 4 * _se(res.ratio)
    assert abs(res.corrected.mean() - 0.1) < 4 * _se(res.corrected)
    assert abs(res.record_ratio_rms.mean() - math.sqrt(1 - 100 / 499)) < 4 * _se(res.record_ratio_rms)


def test_fpc_with_algorithmic_noise_only_data_part_is_rescaled():
    # τ² = 1/N: half the variance is algorithmic, so dividing all of it by FPC over-corrects.
    tau = 1 / math.sqrt(500)
    res = fpc_simulation(pool_size=1000, train_size=500, n_models=256, n_repeats=30, noise_sd=tau, seed=2)
    assert res.sigma_ana == pytest.approx(math.sqrt(2 / 500))
    expected_ratio = math.sqrt((0.5 / 500 + tau**2) / (2 / 500))  # √0.75, not √FPC
    assert abs(res.ratio.mean() - expected_ratio) < 4 * _se(res.ratio)
    assert res.corrected.mean() > res.sigma_ana + 10 * _se(res.corrected)
    assert abs(res.corrected_data_only.mean() - res.sigma_ana) < 4 * _se(res.corrected_data_only)


def test_fpc_seeded_and_small_sizes():
    small = {"pool_size": 10, "train_size": 5, "n_models": 4, "n_repeats": 2}
    a, b = fpc_simulation(**small, seed=0), fpc_simulation(**small, seed=0)
    assert not np.array_equal(a.ratio, fpc_simulation(**small, seed=1).ratio)
    assert np.array_equal(a.ratio, b.ratio) and np.array_equal(a.record_ratio, b.record_ratio, equal_nan=True)
    c = fpc_simulation(pool_size=10, train_size=7, n_models=4, n_repeats=2, design="subsets", seed=0)
    # a record OUT in fewer than 2 models has no per-record sd (NaN), and the summary skips it
    assert np.isnan(c.record_ratio).any() and np.isfinite(c.record_ratio_rms).all()
    json.dumps(c.to_dict(), allow_nan=False)
    # with no record OUT twice there is nothing to summarise: NaN, exported as null
    d = fpc_simulation(pool_size=10, train_size=8, n_models=3, n_repeats=2, design="subsets", seed=0)
    assert np.isnan(d.record_ratio_rms).all()
    assert json.loads(json.dumps(d.to_dict(), allow_nan=False))["per_repeat"]["record_ratio_rms"] == [None, None]


# --------------------------------------------------------------------------------------------
# CLI-ready output


def test_to_dict_is_json_and_str_is_readable():
    sim = gaussian_scores(16, 40, seed=0)
    d = json.loads(json.dumps(sim.to_dict(), allow_nan=False))
    assert d["kind"] == "gaussian_scores" and d["pool_size"] == 40 and d["train_size"] == 20
    assert d["truth"]["0.01"]["mean_tpr"] == pytest.approx(sim.true_mean_tpr(0.01))
    assert "true mean TPR @ FPR 0.001" in str(sim)

    res = fpc_simulation(pool_size=100, train_size=50, n_models=16, n_repeats=3, seed=0)
    d = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert d["kind"] == "fpc_simulation" and len(d["per_repeat"]["ratio"]) == 3
    assert d["summary"]["ratio"]["mean"] == pytest.approx(res.ratio.mean())
    assert d["sqrt_fpc"] == pytest.approx(math.sqrt(0.5)) and "data part" in d["caveat"]
    assert "√FPC" in str(res)


# --------------------------------------------------------------------------------------------
# input validation


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_models": 3}, _even_models(3)),
        ({"n_models": 0}, _even_models(0)),
        ({"n_models": 2.5}, _even_models(2.5)),
        ({"n_models": True}, _even_models(True)),
        ({"n_records": 1}, "n_records must be an integer >= 2"),
        # memory: M × N+ ≤ MAX_CELLS, refused before anything is allocated (71 PiB asked for here)
        ({"n_models": 10**8, "n_records": 10**8}, r"n_records must be an integer >= 2 and <= 5 \(with n_models = "
                                                  r"100000000: at most 500,000,000 cells, ~17 GB"),
        ({"n_models": 10**9}, r"n_models must be an integer >= 2 and <= 2.5e\+08 \(with at least 2 records"),
        ({"n_models": 64, "n_records": MAX_CELLS // 64 + 1}, r"n_records must be an integer >= 2 and <= 7.8125e\+06"),
        ({"effect": -1.0}, "effect must be a finite number >= 0"),
        ({"sigma": 0.0}, "sigma must be a finite number > 0"),
        ({"sigma": float("nan")}, "sigma must be a finite number"),
        ({"heterogeneity": -0.1}, "heterogeneity"),
        ({"in_sd_ratio": 0}, "in_sd_ratio must be a finite number > 0"),
        ({"negative_share": 1.5}, r"negative_share must be a finite number >= 0 and <= 1"),
        ({"location_spread": "wide"}, "location_spread must be a finite number"),
        ({"seed": -1}, "seed must be a non-negative integer or None"),
        ({"seed": "x"}, "seed must be"),
    ],
)
def test_gaussian_scores_rejects_bad_input(kwargs, match):
    args = {"n_models": 4, "n_records": 10, "seed": 0} | kwargs
    n_models, n_records = args.pop("n_models"), args.pop("n_records")
    with pytest.raises(DPAuditError, match=match):
        gaussian_scores(n_models, n_records, **args)


@pytest.mark.parametrize(("test", "n_out", "message"), [
    ("z", 10, CHOICE.format(name="test", choices="t, conformal", value="z")),
    ("t", None, EVERY.format(name="n_out", kind="an integer", bounds=" >= 2", value=None)),
    ("t", 1, EVERY.format(name="n_out", kind="an integer", bounds=" >= 2", value=1)),
    ("conformal", 2.5, EVERY.format(name="n_out", kind="an integer", bounds=" >= 2", value=2.5)),
    ("conformal", [5, 0, 5, 5, 5, 5], EVERY.format(name="n_out", kind="an integer", bounds=" >= 2", value=0)),
])
def test_true_tpr_of_test_rejects_bad_input(test, n_out, message):
    sim = gaussian_scores(4, 6, seed=0)
    with pytest.raises(DPAuditError, match=re.escape(message)):
        sim.true_tpr_of_test(0.05, test, n_out)


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1, "0.01", True])
def test_true_tpr_rejects_bad_alpha(alpha):
    sim = gaussian_scores(4, 10, seed=0)
    with pytest.raises(DPAuditError, match="alpha must be a number strictly between 0 and 1"):
        sim.true_mean_tpr(alpha)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"train_size": 100}, re.escape(WHOLE.format(name="train_size", bounds=" >= 1 and <= 99" + TRAIN_SIZE_HINT,
                                                     value=100))),
        ({"train_size": 0}, re.escape(WHOLE.format(name="train_size", bounds=" >= 1 and <= 99" + TRAIN_SIZE_HINT,
                                                   value=0))),
        ({"pool_size": 2}, "pool_size must be an integer >= 3"),
        ({"design": "bogus"}, re.escape(CHOICE.format(name="design", choices=", ".join(FPC_DESIGNS), value="bogus"))),
        ({"train_size": 40}, "train_size must be pool_size/2 = 50, got train_size=40: change train_size or use"),
        ({"n_models": 15}, _even_models(15, minimum=4)),
        ({"n_models": 2}, _even_models(2, minimum=4)),
        ({"n_models": 1, "design": "subsets"}, "n_models must be an integer >= 2"),
        ({"n_repeats": 0}, "n_repeats must be an integer >= 1"),
        ({"noise_sd": -1.0}, "noise_sd must be a finite number >= 0"),
        ({"n_fresh": 1}, "n_fresh must be an integer >= 2"),
        ({"dim": 0}, "dim must be an integer >= 1"),
        # time and memory: R ≤ MAX_REPEATS, (M + R) × N+ ≤ MAX_CELLS, d × (N+ + M + n_fresh) ≤ MAX_CELLS
        ({"n_repeats": 10**9}, r"n_repeats must be an integer >= 1 and <= 10000 \(10,000 repeats pin"),
        ({"n_repeats": MAX_REPEATS + 1}, r"n_repeats must be an integer >= 1 and <= 10000"),
        ({"pool_size": 10**9, "train_size": 5 * 10**8}, r"pool_size must be an integer >= 3 and <= 1.66667e\+08"),
        ({"pool_size": 10**8, "train_size": 5 * 10**7, "n_models": 10**8}, r"n_models must be an integer >= 2 and <= 4 "),
        ({"pool_size": 50_000, "train_size": 25_000, "n_models": 9_994, "n_repeats": 10}, r"n_repeats must be an "
         r"integer >= 1 and <= 6 \(with pool_size = 50000 and n_models = 9994, \(M \+ R\) × N\+"),
        ({"n_fresh": 10**9}, r"n_fresh must be an integer >= 2 and <= 5e\+06"),
        ({"dim": 10**9}, r"dim must be an integer >= 1 and <= 3.78788e\+06 \(with N\+ \+ M \+ n_fresh"),
    ],
)
def test_fpc_simulation_rejects_bad_input(kwargs, match):
    args = {"pool_size": 100, "train_size": 50, "n_models": 16, "n_repeats": 1, "seed": 0} | kwargs
    with pytest.raises(DPAuditError, match=match):
        fpc_simulation(**args)
