"""Leave-one-out LiRA fits, the LiRA statistics, the PP transform, thresholds and the FPC.

The vectorised fits are checked against a plain Python loop over (target model, record): that loop is
a brute-force oracle kept here on purpose, not a second implementation.
"""

import math
import re
import zlib

import numpy as np
import pytest
from scipy import stats

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import CHOICE, EVERY, NUMBER, UNIT, WHOLE
from dpaudit.mia.attacks.lira import lira_offline_one_sided, lira_offline_two_sided, lira_online
from dpaudit.mia.calibrate import N_OUT_HINT, SIGNS, THRESHOLD_KINDS, fpc_factor, pp_transform, threshold
from dpaudit.mia.designs import keep_matrix
from dpaudit.mia.fits import FPC_HINT, LOCATIONS, SD_FLOOR, VARIANCES, LooFits, loo_fits
from dpaudit.mia.scores import TRAIN_SIZE_HINT

# ---------------------------------------------------------------- brute-force oracle


def _oracle(score, keep, *, location, variance, ddof, fpc):
    """For each (m, x): fit IN/OUT on models m' ≠ m, one at a time."""
    m_models, n_records = score.shape
    out = {k: np.zeros(score.shape) for k in ("mu_in", "sd_in", "mu_out", "sd_out", "n_in", "n_out")}
    ss = {"in": np.zeros(score.shape), "out": np.zeros(score.shape)}
    center = np.median if location == "median" else np.mean
    for m in range(m_models):
        for x in range(n_records):
            others = np.arange(m_models) != m
            for label, member in (("in", keep[:, x]), ("out", ~keep[:, x])):
                values = score[others & member, x]
                out[f"mu_{label}"][m, x] = center(values)
                out[f"sd_{label}"][m, x] = np.std(values, ddof=ddof)
                out[f"n_{label}"][m, x] = len(values)
                ss[label][m, x] = np.sum((values - values.mean()) ** 2)
    if variance == "global":
        for label in ("in", "out"):
            for m in range(m_models):
                pooled = ss[label][m].sum() / (out[f"n_{label}"][m] - ddof).sum()
                out[f"sd_{label}"][m, :] = math.sqrt(pooled)
    if fpc is not None:
        out["sd_in"] /= math.sqrt(fpc)
        out["sd_out"] /= math.sqrt(fpc)
    return out


def _unbalanced_keep(m, n, rng):
    # Each record IN in a random number of models in [3, m − 3].
    counts = rng.integers(3, m - 2, size=n)
    ranks = rng.random((m, n)).argsort(axis=0).argsort(axis=0)
    return ranks < counts


@pytest.mark.parametrize("location", ["mean", "median"])
@pytest.mark.parametrize("variance", ["per-record", "global"])
@pytest.mark.parametrize("fpc", [None, 0.4])
@pytest.mark.parametrize("design", ["balanced", "unbalanced", "ties"])
def test_loo_fits_equal_the_loop(location, variance, fpc, design):
    rng = np.random.default_rng(zlib.crc32(repr((location, variance, fpc, design)).encode()))
    m, n = 11, 9
    if design == "balanced":
        m = 12
        keep = keep_matrix(m, n, seed=rng)
    else:
        keep = _unbalanced_keep(m, n, rng)
    score = rng.normal(size=(m, n)) * rng.uniform(0.5, 3, size=n) + 2 * keep
    if design == "ties":
        score = np.round(score)  # many equal scores: the median's order statistics must handle ties
    for ddof in (0, 1):
        fits = loo_fits(score, keep, location=location, variance=variance, ddof=ddof, fpc=fpc)
        want = _oracle(score, keep, location=location, variance=variance, ddof=ddof, fpc=fpc)
        for name, value in want.items():
            np.testing.assert_allclose(getattr(fits, name), value, rtol=1e-12, atol=1e-12, err_msg=name)
        assert fits.shape == (m, n) and fits.n_in.dtype.kind == "i"
        assert (fits.location, fits.variance, fits.ddof, fits.fpc) == (location, variance, ddof, fpc)


def test_loo_fits_even_and_odd_group_sizes_for_the_median():
    # Record 0 is IN in 4 of 8 models: LOO IN medians of 3 (target IN) and of 4 values (target OUT).
    keep = np.array([[1, 0, 0, 1, 1, 0, 1, 0]], bool).T
    score = np.array([[5.0, 0.0, 1.0, 1.0, 9.0, 2.0, 3.0, 4.0]]).T
    fits = loo_fits(score, keep, location="median")
    # IN scores 5, 1, 9, 3. Target 0 (5) leaves 1, 3, 9 → 3; target 4 (9) leaves 1, 3, 5 → 3;
    # target 3 (1) leaves 3, 5, 9 → 5; target 6 (3) leaves 1, 5, 9 → 5; OUT targets see all four →
    # (3 + 5)/2 = 4.
    assert fits.mu_in[:, 0].tolist() == [3.0, 4.0, 4.0, 5.0, 3.0, 4.0, 5.0, 4.0]
    # OUT scores 0, 1, 2, 4 (models 1, 2, 5, 7): target 1 leaves 1, 2, 4 → 2; target 2 leaves 0, 2, 4
    # → 2; target 5 leaves 0, 1, 4 → 1; target 7 leaves 0, 1, 2 → 1; IN targets see all four → 1.5.
    assert fits.mu_out[:, 0].tolist() == [1.5, 2.0, 2.0, 1.5, 1.5, 1.0, 1.5, 1.0]


def test_loo_fits_are_accurate_far_from_zero():
    # Scores with a huge common offset: centring keeps the variances at full precision.
    rng = np.random.default_rng(5)
    keep = keep_matrix(10, 50, seed=1)
    base = rng.normal(size=(10, 50))
    shifted = loo_fits(base + 1e8, keep)
    plain = loo_fits(base, keep)
    np.testing.assert_allclose(shifted.sd_in, plain.sd_in, rtol=1e-6)
    np.testing.assert_allclose(shifted.sd_out, plain.sd_out, rtol=1e-6)
    np.testing.assert_allclose(shifted.mu_in - 1e8, plain.mu_in, atol=1e-6)


def test_fpc_divides_the_variances():
    keep = keep_matrix(10, 20, seed=0)
    score = np.random.default_rng(0).normal(size=(10, 20))
    a, b = loo_fits(score, keep), loo_fits(score, keep, fpc=0.25)
    np.testing.assert_allclose(b.sd_in, 2 * a.sd_in)
    np.testing.assert_allclose(b.sd_out, 2 * a.sd_out)
    assert np.array_equal(a.mu_in, b.mu_in)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"location": "mode"}, DPAuditError, CHOICE.format(name="location", choices=", ".join(LOCATIONS), value="mode")),
        ({"variance": "fixed"}, DPAuditError, CHOICE.format(name="variance", choices=", ".join(VARIANCES),
                                                            value="fixed")),
        ({"ddof": -1}, DPAuditError, WHOLE.format(name="ddof", bounds=" >= 0", value=-1)),
        ({"ddof": 2}, DPAuditError, "ddof = 2 needs more than 2 models in every leave-one-out fit"),
        ({"fpc": 0.0}, DPAuditError, NUMBER.format(name="fpc", bounds=" > 0 and <= 1" + FPC_HINT, value=0.0)),
        ({"fpc": 1.5}, DPAuditError, NUMBER.format(name="fpc", bounds=" > 0 and <= 1" + FPC_HINT, value=1.5)),
        ({"fpc": True}, DPAuditError, NUMBER.format(name="fpc", bounds=" > 0 and <= 1" + FPC_HINT, value=True)),
    ],
)
def test_loo_fits_rejects_bad_options(kwargs, error, message):
    keep = keep_matrix(6, 4, seed=0)
    with pytest.raises(error, match=re.escape(message)):
        loo_fits(np.zeros((6, 4)), keep, **kwargs)


def test_loo_fits_validates_the_data_like_scoreset():
    keep = keep_matrix(6, 4, seed=0)
    score = np.zeros((6, 4))
    score[1, 3] = np.nan
    with pytest.raises(DataError, match=re.escape("the first is nan at model 1, record 3")):
        loo_fits(score, keep)
    with pytest.raises(DataError, match="at least 6 models"):
        loo_fits(np.zeros((4, 4)), keep_matrix(4, 4, seed=0))


# ---------------------------------------------------------------- statistics


def _fits(mu_in, sd_in, mu_out, sd_out):
    arrays = [np.asarray(v, float).reshape(1, -1) for v in (mu_in, sd_in, mu_out, sd_out)]
    n = np.full(arrays[0].shape, 5)
    return LooFits(*arrays, n, n)


def _logpdf(t, mu, sd):
    return -0.5 * ((t - mu) / sd) ** 2 - math.log(sd) - 0.5 * math.log(2 * math.pi)


def test_lira_statistics_match_their_formulas():
    points = [(0.3, 1.0, 0.5, -1.0, 2.0), (-2.0, 0.2, 0.1, 0.4, 1.7), (5.0, 4.0, 3.0, 1.0, 0.5)]
    t = np.array([[p[0] for p in points]])
    fits = _fits(*([p[i] for p in points] for i in range(1, 5)))
    online = lira_online(t, fits)
    one = lira_offline_one_sided(t, fits)
    two = lira_offline_two_sided(t, fits)
    for j, (tj, mu_in, sd_in, mu_out, sd_out) in enumerate(points):
        assert online[0, j] == pytest.approx(_logpdf(tj, mu_in, sd_in) - _logpdf(tj, mu_out, sd_out), rel=1e-12)
        assert one[0, j] == pytest.approx(0.5 * math.erfc(-(tj - mu_out) / sd_out / math.sqrt(2)), rel=1e-12)
        assert two[0, j] == pytest.approx(-_logpdf(tj, mu_out, sd_out), rel=1e-12)
    # And the scipy calls they stand for.
    np.testing.assert_allclose(one, stats.norm.cdf(t, fits.mu_out, fits.sd_out))


def test_zero_sd_is_floored():
    fits = _fits([1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0])
    t = np.array([[1.0, 0.0]])
    for statistic in (lira_online, lira_offline_one_sided, lira_offline_two_sided, pp_transform):
        assert np.all(np.isfinite(statistic(t, fits))), statistic.__name__
    assert lira_online(t, fits)[0, 0] > 1e50 and lira_online(t, fits)[0, 1] < -1e50
    assert pp_transform(t, fits)[0, 0] == pytest.approx(1.0 / SD_FLOOR)


def test_statistics_reject_a_score_of_another_shape():
    fits = _fits([1.0], [1.0], [0.0], [1.0])
    with pytest.raises(DataError, match=re.escape("score has shape (2, 1) but the fits have shape (1, 1)")):
        lira_online(np.zeros((2, 1)), fits)


# ---------------------------------------------------------------- PP transform and thresholds


def _gaussian_scores(m, n, seed):
    """Records with their own OUT mean/sd and an IN shift of either sign (some records have Δ < 0)."""
    rng = np.random.default_rng(seed)
    keep = keep_matrix(m, n, seed=rng)
    mu_out = rng.normal(0, 3, size=n)
    sd_out = rng.uniform(0.2, 4, size=n)
    shift = rng.choice([-1.0, 1.0], size=n) * rng.uniform(1, 3, size=n) * sd_out
    sd_in = sd_out * rng.uniform(0.5, 2, size=n)
    z = rng.standard_normal((m, n))
    score = np.where(keep, mu_out + shift + sd_in * z, mu_out + sd_out * z)
    return score, keep, shift


def test_pp_transform_makes_out_scores_standard_normal():
    m, n = 512, 60
    score, keep, shift = _gaussian_scores(m, n, seed=0)
    f = pp_transform(score, loo_fits(score, keep))
    out = np.where(~keep, f, np.nan)
    mean = np.nanmean(out, axis=0)
    sd = np.nanstd(out, axis=0, ddof=1)
    # 256 OUT draws per record: SE of the mean 1/16, of the sd ≈ 1/√512; 5 SE bounds per record.
    assert np.all(np.abs(mean) < 5 / 16)
    assert np.all(np.abs(sd - 1) < 5 / math.sqrt(512))
    assert abs(np.nanmean(out)) < 5 / math.sqrt(m * n / 2)
    # The sign makes IN scores land above the OUT ones whether Δ is positive or negative.
    in_mean = np.nanmean(np.where(keep, f, np.nan), axis=0)
    assert np.all(in_mean > 0.5) and (shift < 0).any() and (shift > 0).any()


def test_fitted_sign_inflates_fpr_when_membership_has_no_effect():
    # Δ = 0 for every record: the fitted sign shares μ_out with (t − μ_out), so the t threshold
    # overshoots α (≈ 1.4α at M = 18); with sign="positive" it is exact. SE from per-record rates.
    alpha, m, n = 0.01, 18, 20_000
    rng = np.random.default_rng(8)
    keep = keep_matrix(m, n, seed=rng)
    score = rng.normal(size=(1, n)) + rng.uniform(0.5, 2, size=(1, n)) * rng.standard_normal((m, n))
    fits = loo_fits(score, keep)
    thr = threshold(alpha, n_out=fits.n_out)
    for sign in ("positive", "fitted"):
        exceed = np.where(~keep, pp_transform(score, fits, sign=sign) > thr, 0)
        per_record = exceed.sum(axis=0) / (~keep).sum(axis=0)
        se = per_record.std(ddof=1) / math.sqrt(n)
        if sign == "positive":
            assert abs(per_record.mean() - alpha) < 5 * se
        else:
            assert per_record.mean() > alpha + 8 * se and per_record.mean() == pytest.approx(1.4 * alpha, rel=0.1)
    with pytest.raises(DPAuditError, match=re.escape(CHOICE.format(name="sign", choices=", ".join(SIGNS),
                                                                   value="minus"))):
        pp_transform(score, fits, sign="minus")


def test_pp_transform_sign_of_zero_delta_is_plus():
    fits = _fits([0.0], [1.0], [0.0], [2.0])
    assert pp_transform(np.array([[3.0]]), fits)[0, 0] == 1.5


def test_t_threshold_is_exact_and_normal_is_not():
    # A fresh Gaussian draw standardised by mean/sd (ddof = 1) of n_out draws exceeds the t threshold
    # with probability exactly α. 200,000 trials: binomial SE √(α(1−α)/n) ≈ 2.2e-4; 5 SE tolerance.
    alpha, n_out, trials = 0.01, 8, 200_000
    rng = np.random.default_rng(11)
    draws = rng.standard_normal((trials, n_out + 1))
    fit = draws[:, :n_out]
    z = (draws[:, n_out] - fit.mean(axis=1)) / fit.std(axis=1, ddof=1)
    se = math.sqrt(alpha * (1 - alpha) / trials)
    rate_t = np.mean(z > threshold(alpha, kind="t", n_out=n_out))
    rate_normal = np.mean(z > threshold(alpha, kind="normal"))
    assert abs(rate_t - alpha) < 5 * se
    # Exact value for the normal threshold: P(T₇ > Φ⁻¹(0.99)/√(1 + 1/8)) ≈ 0.032.
    expected_normal = stats.t.sf(stats.norm.isf(alpha) / math.sqrt(1 + 1 / n_out), n_out - 1)
    assert rate_normal > 2.5 * alpha
    assert abs(rate_normal - expected_normal) < 5 * math.sqrt(expected_normal / trials)


def test_pipeline_t_threshold_gives_fpr_alpha_per_record():
    # keep_matrix → LOO fits → PP → t threshold at each target's own n_out: realised FPR ≈ α.
    # M = 18 gives 8 OUT models per OUT target. Trials within a record share scores, so the SE comes
    # from the spread of the per-record rates over the independent records.
    alpha, m, n = 0.02, 18, 20_000
    score, keep, _ = _gaussian_scores(m, n, seed=3)
    fits = loo_fits(score, keep)
    exceed = pp_transform(score, fits) > threshold(alpha, n_out=fits.n_out)
    per_record = np.where(~keep, exceed, 0).sum(axis=0) / (~keep).sum(axis=0)
    se = per_record.std(ddof=1) / math.sqrt(n)
    assert abs(per_record.mean() - alpha) < 5 * se
    naive = pp_transform(score, fits) > threshold(alpha, kind="normal")
    assert naive[~keep].mean() > 2 * alpha


def test_threshold_shapes_and_values():
    assert threshold(0.01, kind="normal") == pytest.approx(stats.norm.ppf(0.99))
    assert threshold(0.01, kind="normal", n_out=np.arange(2, 5)) == threshold(0.01, kind="normal")
    value = threshold(0.01, n_out=8)
    assert isinstance(value, float)
    assert value == pytest.approx(stats.t.ppf(0.99, 7) * math.sqrt(1 + 1 / 8))
    grid = threshold(0.01, n_out=np.array([[2, 8], [100, 10_000]]))
    assert grid.shape == (2, 2) and grid[0, 1] == pytest.approx(value)
    assert np.all(np.diff(grid.ravel()) < 0) and grid[1, 1] == pytest.approx(stats.norm.ppf(0.99), rel=1e-3)
    assert threshold(0.01, n_out=8.0) == value


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0.0,), {"kind": "normal"}, UNIT.format(name="alpha", hint="", value=0.0)),
        ((1.0,), {"n_out": 5}, UNIT.format(name="alpha", hint="", value=1.0)),
        (("a",), {"n_out": 5}, UNIT.format(name="alpha", hint="", value="a")),
        ((0.01,), {"kind": "z"}, CHOICE.format(name="kind", choices=", ".join(THRESHOLD_KINDS), value="z")),
        ((0.01,), {}, "kind='t' needs n_out, the number of OUT scores per fit (e.g. fits.n_out)"),
        ((0.01,), {"n_out": 1}, EVERY.format(name="n_out", kind="an integer", bounds=" >= 2" + N_OUT_HINT, value=1)),
        ((0.01,), {"n_out": np.array([5, 1])}, EVERY.format(name="n_out", kind="an integer", bounds=" >= 2" + N_OUT_HINT,
                                                            value=1)),
        ((0.01,), {"n_out": 2.5}, EVERY.format(name="n_out", kind="an integer", bounds=" >= 2" + N_OUT_HINT, value=2.5)),
        ((0.01,), {"n_out": True}, EVERY.format(name="n_out", kind="an integer", bounds=" >= 2" + N_OUT_HINT,
                                                value=True)),
        ((0.01,), {"n_out": np.inf}, EVERY.format(name="n_out", kind="an integer", bounds=" >= 2" + N_OUT_HINT,
                                                  value=np.inf)),
    ],
)
def test_threshold_errors(args, kwargs, message):
    with pytest.raises(DPAuditError, match=re.escape(message)):
        threshold(*args, **kwargs)


def test_fpc_factor():
    assert fpc_factor(250, 1000) == 0.75
    assert fpc_factor(np.int64(1), 2) == 0.5
    for bad in ((0, 10), (10, 10), (11, 10), (2.0, 10)):
        message = WHOLE.format(name="train_size", bounds=" >= 1 and <= 9" + TRAIN_SIZE_HINT, value=bad[0])
        with pytest.raises(DPAuditError, match=re.escape(message)):
            fpc_factor(*bad)
    with pytest.raises(DPAuditError, match=re.escape(WHOLE.format(name="pool_size", bounds=" >= 2", value=10.0))):
        fpc_factor(2, 10.0)


def test_fpc_corrects_the_efficient_lira_variance():
    # Spec §3b in miniature: the "model" is the mean of its training set. Efficient LiRA draws each
    # training set of N from one pool of N+; the spread of a record's OUT scores is then ≈ √FPC times
    # the spread over fresh training sets from the distribution (σ/√N), and fpc= recovers it.
    rng = np.random.default_rng(0)
    m, pool, train = 256, 40, 20
    values = rng.standard_normal(pool)
    values = (values - values.mean()) / values.std()  # population variance exactly 1
    keep = rng.random((m, pool)).argsort(axis=1) < train  # every model trains on exactly N records
    model_mean = (keep * values).sum(axis=1) / train
    score = np.repeat(model_mean[:, None], pool, axis=1)
    fpc = fpc_factor(train, pool)
    sd_ana = 1 / math.sqrt(train)
    raw = loo_fits(score, keep, variance="global").sd_out.mean()
    corrected = loo_fits(score, keep, variance="global", fpc=fpc).sd_out.mean()
    assert raw / sd_ana == pytest.approx(math.sqrt(fpc), rel=0.15)
    assert corrected / sd_ana == pytest.approx(1.0, rel=0.15)
