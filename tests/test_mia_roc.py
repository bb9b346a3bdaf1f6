"""Exact ROC, TPR at FPR conventions, per-record rates, Clopper–Pearson, bootstrap, ε lower bounds."""

import json
import math
import re

import numpy as np
import pytest
from scipy import stats

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import EVERY, NUMBER, SOME, UNIT, WHOLE
from dpaudit.mia.metrics import (
    DEFAULT_LEVEL,
    BootstrapCI,
    EpsilonBound,
    Roc,
    auc,
    bootstrap_ci,
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_lower_bound_ci,
    per_record_rates,
    point_at_fpr,
    point_at_threshold,
    rates_at_threshold,
    roc_curve,
    tpr_at_fpr,
)
from dpaudit.mia.metrics.epsilon import DELTA_HINT
from dpaudit.mia.metrics.roc import FPR_HINT


def _level(value):
    """The message of a bad confidence level, as a regex."""
    return re.escape(UNIT.format(name="level", hint=f" (e.g. {DEFAULT_LEVEL:g})", value=value))


def _every(name, value, bounds, kind="an integer"):
    """The message of an array check whose first offending element is ``value``, as a regex."""
    return re.escape(EVERY.format(name=name, kind=kind, bounds=bounds, value=value))


def _tied_data(seed, shape=(7, 40), n_levels=12):
    """Scores on a coarse grid (many ties, including ties across classes), random labels."""
    rng = np.random.default_rng(seed)
    labels = rng.random(shape) < 0.4
    scores = rng.integers(0, n_levels, size=shape) / 4.0 + 0.5 * labels * rng.integers(0, 2, size=shape)
    labels.flat[0], labels.flat[1] = True, False  # both classes present
    return scores, labels


# ---------------------------------------------------------------------------------------------------
# the exact ROC
# ---------------------------------------------------------------------------------------------------


def _brute_force_roc(scores, labels):
    """Oracle, on purpose a second implementation: one loop iteration per candidate threshold."""
    s, y = np.ravel(scores), np.ravel(labels)
    candidates = [math.inf] + sorted(set(s.tolist()), reverse=True)
    tp = [int(np.sum(y & (s >= t))) for t in candidates]
    fp = [int(np.sum(~y & (s >= t))) for t in candidates]
    return np.array(candidates), np.array(tp), np.array(fp)


@pytest.mark.parametrize("seed", range(6))
def test_roc_equals_brute_force_oracle_with_ties(seed):
    scores, labels = _tied_data(seed)
    roc = roc_curve(scores, labels)
    thr, tp, fp = _brute_force_roc(scores, labels)
    assert len(np.unique(scores)) < scores.size / 10  # the data really are tie-heavy
    np.testing.assert_array_equal(roc.thresholds, thr)
    np.testing.assert_array_equal(roc.tp, tp)
    np.testing.assert_array_equal(roc.fp, fp)
    assert roc.n_pos == labels.sum() and roc.n_neg == (~labels).sum()
    np.testing.assert_array_equal(roc.tpr, tp / roc.n_pos)
    np.testing.assert_array_equal(roc.fpr, fp / roc.n_neg)
    assert (roc.fpr[0], roc.tpr[0], roc.fpr[-1], roc.tpr[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert np.all(np.diff(roc.thresholds) < 0)


def test_all_tied_scores_cross_together():
    roc = roc_curve([2.0, 2.0, 2.0, 2.0], [True, False, True, False])
    np.testing.assert_array_equal(roc.fpr, [0.0, 1.0])
    np.testing.assert_array_equal(roc.tpr, [0.0, 1.0])
    assert auc(roc) == 0.5


def test_roc_accepts_zero_one_labels_and_any_shape():
    scores, labels = _tied_data(0, shape=(3, 4, 5))
    a = roc_curve(scores, labels)
    b = roc_curve(scores.ravel(), labels.ravel().astype(int))
    np.testing.assert_array_equal(a.tpr, b.tpr)
    np.testing.assert_array_equal(a.fpr, b.fpr)


def test_roc_is_frozen_and_serialisable():
    roc = roc_curve([3.0, 1.0, 2.0], [True, False, False])
    with pytest.raises(ValueError):
        roc.tpr[0] = 1.0
    d = json.loads(json.dumps(roc.to_dict()))
    assert d["thresholds"][0] is None and d["thresholds"][1:] == [3.0, 2.0, 1.0]
    assert "AUC 1.0000" in str(roc) and len(roc) == 4
    assert isinstance(roc, Roc)


# ---------------------------------------------------------------------------------------------------
# TPR at FPR: conventions on a hand-made curve
# ---------------------------------------------------------------------------------------------------

# Scores 8..1 with labels M N M M N N M N: 4 members, 4 non-members, so FPR steps are exact quarters.
# Points (FPR, TPR): (0,0) (0,.25) (.25,.25) (.25,.5) (.25,.75) (.5,.75) (.75,.75) (.75,1) (1,1).
HAND_SCORES = [8, 7, 6, 5, 4, 3, 2, 1]
HAND_LABELS = [True, False, True, True, False, False, True, False]


@pytest.mark.parametrize(
    ("alpha", "expected_le", "expected_lt"),
    [
        (0.25, 0.75, 0.25),  # ≤ takes the top of the vertical segment at FPR .25; < stays at FPR 0
        (0.3, 0.75, 0.75),  # between steps the two conventions agree
        (0.5, 0.75, 0.75),
        (0.75, 1.0, 0.75),
        (1.0, 1.0, 1.0),
        (0.1, 0.25, 0.25),
    ],
)
def test_tpr_at_fpr_le_and_strict(alpha, expected_le, expected_lt):
    roc = roc_curve(HAND_SCORES, HAND_LABELS)
    assert tpr_at_fpr(roc, alpha) == expected_le
    assert tpr_at_fpr(roc, alpha, strict=True) == expected_lt
    # strict=True is the LiRA reference code's rule, evaluated literally on the same points.
    assert tpr_at_fpr(roc, alpha, strict=True) == roc.tpr[np.where(roc.fpr < alpha)[0][-1]]


def test_tpr_at_zero_fpr():
    roc = roc_curve(HAND_SCORES, HAND_LABELS)
    assert tpr_at_fpr(roc, 0.0) == 0.25


def test_tpr_at_fpr_is_vectorised_and_returns_float_for_scalar():
    roc = roc_curve(HAND_SCORES, HAND_LABELS)
    alphas = np.array([[0.25, 0.3], [0.75, 1.0]])
    out = tpr_at_fpr(roc, alphas)
    assert out.shape == (2, 2)
    np.testing.assert_array_equal(out, [[0.75, 0.75], [1.0, 1.0]])
    assert type(tpr_at_fpr(roc, 0.25)) is float


def test_point_at_fpr_reports_realised_rate_threshold_and_counts():
    roc = roc_curve(HAND_SCORES, HAND_LABELS)
    p = point_at_fpr(roc, 0.3)
    assert (p.tpr, p.fpr, p.threshold, p.tp, p.fp) == (0.75, 0.25, 5.0, 3, 1)
    assert json.loads(json.dumps(p.to_dict()))["tp"] == 3 and "TPR 0.75" in str(p)
    # No member is predicted at FPR 0 when the top score is a non-member: the origin, threshold +inf.
    q = point_at_fpr(roc_curve([3, 2, 1], [False, True, False]), 0.0)
    assert (q.tpr, q.fpr, q.threshold) == (0.0, 0.0, math.inf)


def test_tpr_at_fpr_matches_brute_force_on_random_data():
    scores, labels = _tied_data(11, shape=(500,), n_levels=60)
    roc = roc_curve(scores, labels)
    s, y = scores, labels
    for alpha in [0.0, 0.01, 0.05, 0.1, 0.333, 0.5, 1.0]:
        # Oracle: over every rule "score >= t", the best TPR whose FPR is ≤ α (resp. < α).
        rules = [(np.mean(s[y] >= t), np.mean(s[~y] >= t)) for t in [np.inf, *np.unique(s)]]
        assert tpr_at_fpr(roc, alpha) == max(tp for tp, fp in rules if fp <= alpha)
        if alpha > 0:
            assert tpr_at_fpr(roc, alpha, strict=True) == max(tp for tp, fp in rules if fp < alpha)


# ---------------------------------------------------------------------------------------------------
# AUC and fixed-threshold rates
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_auc_equals_mann_whitney_with_ties_half(seed):
    scores, labels = _tied_data(seed, shape=(300,))
    pos, neg = scores[labels], scores[~labels]
    pairwise = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    u = stats.mannwhitneyu(pos, neg).statistic / (pos.size * neg.size)
    roc = roc_curve(scores, labels)
    assert auc(roc) == pytest.approx(pairwise, abs=1e-12)
    assert auc(roc) == pytest.approx(u, abs=1e-12)
    assert auc(roc) == pytest.approx(float(np.sum(np.diff(roc.fpr) * (roc.tpr[1:] + roc.tpr[:-1]) / 2)))


def test_rates_at_threshold_equals_loop():
    scores, labels = _tied_data(3)
    thresholds = np.array([-np.inf, -1.0, 0.0, 0.25, 0.3, 1.0, 1.25, 2.0, 2.75, 100.0, np.inf])
    tpr, fpr = rates_at_threshold(scores, labels, thresholds)
    for i, t in enumerate(thresholds):
        assert tpr[i] == np.mean(scores[labels] >= t)
        assert fpr[i] == np.mean(scores[~labels] >= t)
    one = rates_at_threshold(scores, labels, 1.0)
    assert all(type(v) is float for v in one)


def test_point_at_threshold_is_the_same_rule_on_the_curve():
    roc = roc_curve(HAND_SCORES, HAND_LABELS)
    p = point_at_threshold(roc, [5.5, 5.0, 0.0])
    np.testing.assert_array_equal(p.threshold, [6.0, 5.0, 1.0])
    np.testing.assert_array_equal(p.tp, [2, 3, 4])
    np.testing.assert_array_equal(p.fp, [1, 1, 4])


# ---------------------------------------------------------------------------------------------------
# per-record rates
# ---------------------------------------------------------------------------------------------------


def _loop_per_record(score, keep, threshold):
    """Oracle, on purpose: one Python loop per record."""
    m, n = score.shape
    t = np.broadcast_to(np.asarray(threshold, dtype=float), (n,))
    tpr, fpr = np.full(n, np.nan), np.full(n, np.nan)
    for x in range(n):
        ins = [score[i, x] >= t[x] for i in range(m) if keep[i, x]]
        outs = [score[i, x] >= t[x] for i in range(m) if not keep[i, x]]
        if ins:
            tpr[x] = sum(ins) / len(ins)
        if outs:
            fpr[x] = sum(outs) / len(outs)
    return tpr, fpr


@pytest.mark.parametrize("per_record", [False, True])
def test_per_record_rates_equal_loop(per_record):
    rng = np.random.default_rng(5)
    m, n = 16, 30
    keep = np.argsort(rng.random((m, n)), axis=0) < m // 2  # efficient-LiRA design: M/2 IN per record
    score = np.round(rng.normal(size=(m, n)) + keep, 1)  # rounding makes ties with the threshold
    threshold = np.round(rng.normal(size=n), 1) if per_record else 0.5
    got = per_record_rates(score, keep, threshold)
    want = _loop_per_record(score, keep, threshold)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_per_record_rates_nan_without_in_or_out_models():
    score = np.array([[1.0, 1.0], [0.0, 0.0]])
    keep = np.array([[True, False], [True, False]])
    tpr, fpr = per_record_rates(score, keep, 0.5)
    np.testing.assert_array_equal(tpr, [0.5, np.nan])
    np.testing.assert_array_equal(fpr, [np.nan, 0.5])


def test_pooled_threshold_miscalibrates_records():
    # Spec §3a in miniature: records with different OUT spreads get different FPRs under one threshold.
    rng = np.random.default_rng(0)
    m, n = 400, 40
    keep = np.argsort(rng.random((m, n)), axis=0) < m // 2
    sigma = np.linspace(0.5, 2.0, n)
    score = rng.normal(size=(m, n)) * sigma + 2.0 * keep
    pooled = roc_curve(score, keep)
    point = point_at_fpr(pooled, 0.05)
    _, fpr = per_record_rates(score, keep, point.threshold)
    assert point.fpr <= 0.05 and np.nanmean(fpr) == pytest.approx(point.fpr, abs=1e-12)
    assert fpr.max() > 0.1 and fpr.min() < 0.01


# ---------------------------------------------------------------------------------------------------
# Clopper–Pearson
# ---------------------------------------------------------------------------------------------------


def test_clopper_pearson_known_values():
    lo, hi = clopper_pearson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-12)
    lo, hi = clopper_pearson(10, 10)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10), rel=1e-12)
    lo, hi = clopper_pearson(5, 10)  # textbook value (e.g. Agresti & Coull 1998)
    assert (lo, hi) == pytest.approx((0.187086, 0.812914), abs=1e-6)
    lo, hi = clopper_pearson(0, 10, level=0.9)
    assert hi == pytest.approx(1 - 0.05 ** (1 / 10), rel=1e-12)


def test_clopper_pearson_is_vectorised():
    k = np.array([0, 3, 10])
    lo, hi = clopper_pearson(k, 10)
    assert lo.shape == hi.shape == (3,)
    for i, ki in enumerate(k):
        assert (lo[i], hi[i]) == clopper_pearson(int(ki), 10)
    assert np.all((lo <= k / 10) & (k / 10 <= hi))


@pytest.mark.parametrize("n", [1, 7, 30, 101])
def test_clopper_pearson_exact_coverage_at_least_nominal(n):
    # Exact coverage, no simulation: sum the binomial pmf over the k whose interval holds p.
    k = np.arange(n + 1)
    lo, hi = clopper_pearson(k, n)
    p = np.linspace(0.001, 0.999, 499)
    covered = (lo[None, :] <= p[:, None]) & (p[:, None] <= hi[None, :])
    coverage = (stats.binom.pmf(k[None, :], n, p[:, None]) * covered).sum(axis=1)
    assert coverage.min() >= 0.95 - 1e-9


def test_clopper_pearson_simulated_coverage():
    rng = np.random.default_rng(1)
    for p, n in [(0.01, 200), (0.3, 25), (0.9, 60)]:
        k = rng.binomial(n, p, size=4000)
        lo, hi = clopper_pearson(k, n)
        # ≥ 95% nominal; 3 binomial standard errors of slack for the simulation (SE ≈ 0.0034).
        assert np.mean((lo <= p) & (p <= hi)) >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 4000)


# ---------------------------------------------------------------------------------------------------
# bootstrap
# ---------------------------------------------------------------------------------------------------


def test_bootstrap_ci_covers_true_value_in_simulation():
    # Scores with a random record effect b_x ~ N(0, 0.5²) and model noise: at the fixed threshold t the
    # population TPR is P(b + e + d ≥ t) = Φ((d − t) / √(1 + 0.25)).
    rng = np.random.default_rng(2024)
    m, n, d, t = 10, 60, 1.0, 1.5
    truth = stats.norm.sf((t - d) / math.sqrt(1.25))

    def stat(s, k):
        return float(np.mean(s[k] >= t))

    hits = 0
    n_sim = 40
    for _ in range(n_sim):
        keep = np.argsort(rng.random((m, n)), axis=0) < m // 2
        score = rng.normal(0.0, 0.5, size=n) + rng.normal(size=(m, n)) + d * keep
        ci = bootstrap_ci(stat, score, keep, n_boot=200, seed=rng)
        hits += ci.lower <= truth <= ci.upper
    assert hits / n_sim >= 0.8  # nominal 95%, and the two-way bootstrap is conservative


def test_bootstrap_resamples_only_the_requested_axes():
    m, n = 5, 7
    score = np.arange(m)[:, None] * 100.0 + np.arange(n)[None, :]  # row id in hundreds, column id in units
    keep = np.zeros((m, n), dtype=bool)
    keep[0] = True
    seen = []

    def record(s, k):
        seen.append(s.copy())
        return 0.0

    bootstrap_ci(record, score, keep, n_boot=5, over="models")
    assert all((s % 100 == np.arange(n)).all() for s in seen[1:])  # columns untouched
    seen.clear()
    bootstrap_ci(record, score, keep, n_boot=5, over=("records",))
    assert all((s // 100 == np.arange(m)[:, None]).all() for s in seen[1:])  # rows untouched
    seen.clear()
    bootstrap_ci(record, score, keep, n_boot=20)
    assert any(len(np.unique(s // 100)) < m for s in seen[1:])
    assert any(len(np.unique(s % 100)) < n for s in seen[1:])


def test_bootstrap_is_reproducible_and_vector_valued():
    scores, labels = _tied_data(4, shape=(12, 50))

    def stat(s, k):
        return tpr_at_fpr(roc_curve(s, k), [0.1, 0.5])

    a = bootstrap_ci(stat, scores, labels, n_boot=30, seed=3)
    b = bootstrap_ci(stat, scores, labels, n_boot=30, seed=3)
    assert isinstance(a, BootstrapCI) and a.replicates.shape == (30, 2)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    np.testing.assert_array_equal(a.estimate, stat(scores, labels))
    assert np.all(a.lower <= a.upper)
    np.testing.assert_allclose(a.lower, np.quantile(a.replicates, 0.025, axis=0))
    assert a.over == ("models", "records") and json.loads(json.dumps(a.to_dict()))["n_boot"] == 30
    assert "bootstrap" in str(a)


def test_bootstrap_nan_replicate_gives_nan_interval():
    score = np.zeros((3, 3))
    keep = np.ones((3, 3), dtype=bool)
    ci = bootstrap_ci(lambda s, k: np.nan, score, keep, n_boot=4)
    assert math.isnan(ci.lower) and math.isnan(ci.upper)


# ---------------------------------------------------------------------------------------------------
# ε lower bounds
# ---------------------------------------------------------------------------------------------------


def test_epsilon_lower_bound_known_numbers():
    assert epsilon_lower_bound(0.5, 0.05) == pytest.approx(math.log(10))
    assert epsilon_lower_bound(0.5, 0.05, delta=0.1) == pytest.approx(math.log(8))
    assert epsilon_lower_bound(0.1, 0.2) == 0.0  # below the diagonal: no evidence
    assert epsilon_lower_bound(0.2, 0.2) == 0.0
    assert epsilon_lower_bound(0.0, 0.0) == 0.0  # no NaN at the origin
    assert epsilon_lower_bound(0.3, 0.0) == math.inf
    assert epsilon_lower_bound(0.3, 0.0, delta=0.3) == 0.0
    out = epsilon_lower_bound([0.5, 0.9], [[0.05], [0.9]])
    assert out.shape == (2, 2)
    np.testing.assert_allclose(out, [[math.log(10), math.log(18)], [0.0, 0.0]])


def test_epsilon_lower_bound_ci_closed_form():
    # k_tp = n and k_fp = 0 have closed-form Clopper–Pearson ends: TPR_lo = a^(1/n), FPR_hi = 1 − a^(1/n).
    n, a = 100, 0.025
    b = epsilon_lower_bound_ci(n, n, 0, n)
    assert isinstance(b, EpsilonBound)
    assert b.tpr_lower == pytest.approx(a ** (1 / n)) and b.fpr_upper == pytest.approx(1 - a ** (1 / n))
    assert b.epsilon == pytest.approx(math.log(a ** (1 / n) / (1 - a ** (1 / n))))
    assert b.point == math.inf
    d = epsilon_lower_bound_ci(n, n, 0, n, delta=0.01)
    assert d.epsilon == pytest.approx(math.log((a ** (1 / n) - 0.01) / (1 - a ** (1 / n))))
    assert epsilon_lower_bound_ci(50, 100, 50, 100).epsilon == 0.0
    assert json.loads(json.dumps(b.to_dict()))["level"] == 0.95 and "confidence 95%" in str(b)


def test_epsilon_lower_bound_ci_is_sound_on_randomised_response():
    # ε-DP randomised response has TPR = e^ε/(1+e^ε), FPR = 1/(1+e^ε): the bound must stay ≤ ε
    # in at least 95% of audits.
    rng = np.random.default_rng(7)
    eps, n = 2.0, 500
    tpr, fpr = math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))
    k_tp, k_fp = rng.binomial(n, tpr, size=3000), rng.binomial(n, fpr, size=3000)
    bound = epsilon_lower_bound_ci(k_tp, n, k_fp, n).epsilon
    assert bound.shape == (3000,)
    assert np.mean(bound <= eps) >= 0.95
    assert np.mean(bound) > 1.0  # and it is not vacuous


# ---------------------------------------------------------------------------------------------------
# every input error, with its message
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "labels", "message"),
    [
        ([], [], "are empty"),
        ([1.0, 2.0], [True], r"shape \(2,\) but labels has shape \(1,\)"),
        ([1.0, np.nan], [True, False], "must be finite: 1 of 2"),
        ([1.0, np.inf], [True, False], "NaN or infinite"),
        ([1.0, 2.0], [False, False], r"no members \(True labels\)"),
        ([1.0, 2.0], [True, 1], r"no non-members \(False labels\)"),
        ([1.0, 2.0], [2, 0], "labels must be boolean"),
        ([1.0, 2.0], ["a", "b"], "labels must be boolean"),
        (["x", "y"], [True, False], "scores must be an array of real numbers"),
    ],
)
def test_roc_curve_errors(scores, labels, message):
    with pytest.raises(DataError, match=message):
        roc_curve(scores, labels)


def test_operating_point_errors():
    roc = roc_curve(HAND_SCORES, HAND_LABELS)
    for bad, first in ((-0.1, -0.1), (1.5, 1.5), (np.nan, np.nan), ([0.1, 2.0], 2.0), ("x", "x")):
        with pytest.raises(DPAuditError, match=_every("alpha", first, " >= 0 and <= 1" + FPR_HINT, "a finite number")):
            tpr_at_fpr(roc, bad)
    with pytest.raises(DPAuditError, match="alpha = 0 with strict=True"):
        tpr_at_fpr(roc, [0.0, 0.1], strict=True)
    with pytest.raises(DPAuditError, match="threshold must not be NaN"):
        point_at_threshold(roc, np.nan)
    with pytest.raises(DPAuditError, match="expected a Roc from roc_curve"):
        tpr_at_fpr(([0, 1], [0, 1]), 0.1)
    with pytest.raises(DPAuditError, match="expected a Roc"):
        auc("roc")


def test_per_record_rates_errors():
    score, keep = np.zeros((3, 4)), np.zeros((3, 4), dtype=bool)
    with pytest.raises(DataError, match=r"score has shape \(3, 4\) but keep has shape \(4, 3\)"):
        per_record_rates(score, keep.T, 0.0)
    with pytest.raises(DataError, match=r"\(M models, N\+ records\) matrix, got shape \(12,\)"):
        per_record_rates(score.ravel(), keep.ravel(), 0.0)
    with pytest.raises(DataError, match=r"one per record \(shape \(4,\)\), got shape \(3,\)"):
        per_record_rates(score, keep, np.zeros(3))
    with pytest.raises(DataError, match="threshold must not be NaN"):
        per_record_rates(score, keep, np.nan)
    with pytest.raises(DataError, match="score must be finite"):
        per_record_rates(np.full((3, 4), np.inf), keep, 0.0)
    with pytest.raises(DataError, match="keep must be boolean"):
        per_record_rates(score, np.full((3, 4), 0.5), 0.0)


@pytest.mark.parametrize(
    ("k", "n", "kwargs", "message"),
    [
        (11, 10, {}, "k must be at most n"),
        (-1, 10, {}, _every("k", -1, " >= 0")),
        (0, 0, {}, _every("n", 0, " >= 1")),
        (2.5, 10, {}, _every("k", 2.5, " >= 0")),
        (True, 10, {}, _every("k", True, " >= 0")),
        (1, [10, np.inf], {}, _every("n", np.inf, " >= 1")),
        (1, 10, {"level": 1.0}, _level(1.0)),
        (1, 10, {"level": "high"}, _level("high")),
    ],
)
def test_clopper_pearson_errors(k, n, kwargs, message):
    with pytest.raises(DPAuditError, match=message):
        clopper_pearson(k, n, **kwargs)


def test_bootstrap_errors():
    score, keep = np.zeros((3, 4)), np.ones((3, 4), dtype=bool)

    def ok(s, k):
        return 0.0

    with pytest.raises(DPAuditError, match="stat_fn must be a function"):
        bootstrap_ci(0.5, score, keep)
    for over in ("rows", (), ("models", "models"), ("models", ["records"])):
        with pytest.raises(DPAuditError, match=re.escape(SOME.format(name="over", choices="models, records",
                                                                     value=over))):
            bootstrap_ci(ok, score, keep, over=over)
    for n_boot in (1, True):
        with pytest.raises(DPAuditError, match=re.escape(WHOLE.format(name="n_boot", bounds=" >= 2", value=n_boot))):
            bootstrap_ci(ok, score, keep, n_boot=n_boot)
    with pytest.raises(DPAuditError, match=_level(95)):
        bootstrap_ci(ok, score, keep, level=95)
    with pytest.raises(DataError, match=r"\(M models, N\+ records\) matrix"):
        bootstrap_ci(ok, score[0], keep[0])
    calls = iter(range(100))
    with pytest.raises(DPAuditError, match=r"stat_fn returned shape \(2,\) on a resample but \(\) on the data"):
        bootstrap_ci(lambda s, k: 0.0 if next(calls) == 0 else [0.0, 1.0], score, keep)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: epsilon_lower_bound(1.2, 0.1), _every("tpr", 1.2, " >= 0 and <= 1", "a finite number")),
        (lambda: epsilon_lower_bound(0.5, np.nan), _every("fpr", np.nan, " >= 0 and <= 1", "a finite number")),
        (lambda: epsilon_lower_bound(0.5, "x"), _every("fpr", "x", " >= 0 and <= 1", "a finite number")),
        (lambda: epsilon_lower_bound(0.5, 0.1, delta=-0.1),
         re.escape(NUMBER.format(name="delta", bounds=" >= 0 and < 1" + DELTA_HINT, value=-0.1))),
        (lambda: epsilon_lower_bound(0.5, 0.1, delta=1.0),
         re.escape(NUMBER.format(name="delta", bounds=" >= 0 and < 1" + DELTA_HINT, value=1.0))),
        (lambda: epsilon_lower_bound(0.5, 0.1, delta=None),
         re.escape(NUMBER.format(name="delta", bounds=" >= 0 and < 1" + DELTA_HINT, value=None))),
        (lambda: epsilon_lower_bound_ci(11, 10, 0, 10), "k_tp must be at most n_pos"),
        (lambda: epsilon_lower_bound_ci(1, 10, 0, 0), _every("n_neg", 0, " >= 1")),
        (lambda: epsilon_lower_bound_ci(1, 10, 0.5, 10), _every("k_fp", 0.5, " >= 0")),
        (lambda: epsilon_lower_bound_ci(1, 10, 0, 10, level=0), _level(0)),
    ],
)
def test_epsilon_errors(call, message):
    with pytest.raises(DPAuditError, match=message):
        call()
