"""The fast paths of the MIA evaluation against the code they replaced (issue 14).

The second half of this file is the oracle: the evaluation as it was before the speed work (commit
3b6c86a), kept verbatim apart from names — full argsorts, ``np.unique`` over every target, scipy's
``norm.logpdf``, full-size leave-one-out temporaries and per-replicate fancy indexing. Every fast path
is compared with it on random inputs (ties, tiny and large M, α at the edges):

* **exactly** (``np.array_equal`` / ``==``) wherever the arithmetic is the same operation sequence on the
  same numbers: the leave-one-out fits, LiRA's statistic, the PP transform, the Student-t thresholds,
  the conformal ranks and hit probabilities, the per-record estimators, the naive ROC point, its
  per-record FPR spread and AUC, every bootstrap replicate of a 0/1 rule (sums of integer weights,
  exact in float64 whatever the order), the Jarque–Bera share;
* to a **relative 1e-12** where only the order of a floating-point summation changed: sums of the
  fractional conformal hit probabilities (pooled ``pp_rank`` and its replicates: one pairwise sum over
  the whole matrix before, per-record sums and per-block products now), the bootstrap means of
  per-record values (a BLAS product of another shape), and the global ("fixed") variance (one pairwise
  row sum before, block sums now). Each of these is a sum of at most M·N+ terms of magnitude ≤ M·N+,
  so two orders differ by at most ~M·N+·ε relative to the sum (≈ 3e-9 at 12.8M targets in the worst
  case, ~1e-15 in practice for the random-walk error); 1e-12 leaves room for the inputs here
  (≤ 300k targets) and still catches any real error.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit._errors import DataError
from dpaudit.mia.attacks import attack_from
from dpaudit.mia.attacks.lira import LiRA, lira_online, norm_logpdf
from dpaudit.mia.calibrate import fpc_factor, pp_transform, threshold
from dpaudit.mia.designs import keep_matrix, poisson_keep
from dpaudit.mia.evaluate import _jarque_bera_share, evaluate
from dpaudit.mia.fits import LooFitter, loo_fits, record_moments
from dpaudit.mia.metrics import (
    Bootstrap,
    bootstrap,
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_lower_bound_ci,
    percentile_interval,
)
from dpaudit.mia.metrics.intervals import TargetEntries, TargetSets
from dpaudit.mia.metrics.roc import PooledScores, mann_whitney_auc
from dpaudit.mia.per_record import (
    conformal_ranks,
    empirical_per_record,
    hit_probability,
    min_out_models,
    normal_tail_umvue,
    parametric_per_record,
    rank_cap,
)
from dpaudit.mia.references import counted_targets, partner_models
from dpaudit.mia.results import AlphaResult, FprSpread, MiaReport, RuleResult
from dpaudit.mia.scores import ScoreSet

# ==================================================================================================
# Inputs
# ==================================================================================================


def _design(m, n, rng, *, poisson=False):
    """A keep matrix with every record IN and OUT in ≥ 3 models: efficient (M/2 IN) or Poisson (q = 0.5)."""
    if not poisson:
        return keep_matrix(m, n, seed=rng)
    keep = poisson_keep(m, n, inclusion=0.5, seed=rng)
    n_in = keep.sum(axis=0)
    bad = (n_in < 3) | (m - n_in < 3)
    if bad.any():  # the few records outside the range
        keep[:, bad] = keep_matrix(m, int(bad.sum()), seed=rng)
    return keep


def _scores(m, n, seed, *, poisson=False, ties=False, effect=1.0):
    """Random (score, keep): per-record Gaussians, IN shifted by a record effect; ``ties`` rounds the
    scores to a coarse grid so that many targets (and whole columns' OUT scores) tie."""
    rng = np.random.default_rng(seed)
    keep = _design(m, n, rng, poisson=poisson)
    loc = rng.normal(size=n)
    sd = np.exp(0.5 * rng.normal(size=n))
    shift = effect * rng.normal(size=n) ** 2 * sd
    score = loc + sd * rng.normal(size=(m, n)) + keep * shift
    if ties:
        score = np.round(score * 2) / 2
    return score, keep


def _scoreset(m, n, seed, **kw):
    score, keep = _scores(m, n, seed, **kw)
    return ScoreSet(score, keep, train_size=n // 2, pool_size=n)


def _close(new, old, rtol=1e-12):
    """Equal up to ``rtol`` relative (NaN where NaN)."""
    new, old = np.asarray(new, dtype=float), np.asarray(old, dtype=float)
    assert new.shape == old.shape
    assert np.array_equal(np.isnan(new), np.isnan(old))
    ok = ~np.isnan(old)
    np.testing.assert_allclose(new[ok], old[ok], rtol=rtol, atol=0.0)


#: Rules whose every number is the same arithmetic as before (exact); the others sum fractional call
#: probabilities or per-record means in another order (relative 1e-12).
EXACT_RULES = ("naive", "pp_normal", "pp_t")
_FIELDS = ("tpr", "fpr", "epsilon_lb", "epsilon_point", "threshold", "t_threshold_fpr_loo")


def assert_reports_match(new, old):
    """Every number of ``new`` (an :func:`evaluate` report) is ``old``'s (``old_evaluate``): exactly for
    the fixed 0/1 rules, their bootstrap intervals, the spread and the diagnostics; to 1e-12 relative
    where only a summation order changed (module docstring)."""
    assert (new.n_models, new.n_records, new.alphas) == (old.n_models, old.n_records, old.alphas)
    assert len(new.rows) == len(old.rows)
    for row_new, row_old in zip(new.rows, old.rows):
        assert row_new.alpha == row_old.alpha
        assert row_new.naive_per_record_fpr == row_old.naive_per_record_fpr
        assert list(row_new.rules) == list(row_old.rules)
        for name, rn in row_new.rules.items():
            ro = row_old.rules[name]
            assert (rn.estimable, rn.fpr_kind) == (ro.estimable, ro.fpr_kind), name
            assert (rn.reason is None) == (ro.reason is None), name
            for key in ("ci", "cp", *_FIELDS):
                a, b = getattr(rn, key), getattr(ro, key)
                assert (a is None) == (b is None), (name, key)
                if a is None:
                    continue
                if name in EXACT_RULES or key in ("cp", "threshold"):
                    assert np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True), \
                        (row_new.alpha, name, key, a, b)
                else:
                    _close(a, b)
            if name == "per_record_parametric":  # the point estimate and its realised FPR: same arithmetic
                assert (rn.tpr, rn.t_threshold_fpr_loo) == (ro.tpr, ro.t_threshold_fpr_loo)
    assert {key: new.diagnostics[key] for key in old.diagnostics} == old.diagnostics


# ==================================================================================================
# The pieces, one by one
# ==================================================================================================


@pytest.mark.parametrize("m, poisson, ties", [(6, False, False), (9, True, True), (40, False, True), (64, True, False)])
@pytest.mark.parametrize("location, variance", [("mean", "per-record"), ("median", "per-record"), ("mean", "global")])
@pytest.mark.parametrize("fpc", [None, 0.5])
def test_loo_fits_lira_and_pp_match_the_oracle(m, poisson, ties, location, variance, fpc):
    score, keep = _scores(m, 700, m * 7 + ties, poisson=poisson, ties=ties)
    new = loo_fits(score, keep, location=location, variance=variance, fpc=fpc)
    old = old_loo_fits(score, keep, location=location, variance=variance, fpc=fpc)
    for key in ("mu_in", "mu_out", "n_in", "n_out"):
        assert np.array_equal(getattr(new, key), old[key]), key
    for key in ("sd_in", "sd_out"):
        if variance == "per-record":
            assert np.array_equal(getattr(new, key), old[key]), key
        else:  # the pooled sums of squares are summed by blocks (≤ 1e-12)
            _close(getattr(new, key), old[key])
    if variance == "global":  # from here on, the same fits on both sides
        new = loo_fits(score, keep, location=location, variance="per-record", fpc=fpc)
        old = old_loo_fits(score, keep, location=location, variance="per-record", fpc=fpc)
    assert np.array_equal(lira_online(score, new), old_lira_online(score, old))
    z_out = pp_transform(score, new, sign="positive")  # the evaluation hands LiRA its OUT z
    assert np.array_equal(lira_online(score, new, z_out=z_out), old_lira_online(score, old))
    for sign in ("fitted", "positive"):
        assert np.array_equal(pp_transform(score, new, sign=sign), old_pp_transform(score, old, sign))
    # the fitter of a block of records gives that block of the whole
    fitter = LooFitter(score, keep, location=location, variance="per-record", fpc=fpc)
    part = fitter.fits(slice(100, 333))
    assert np.array_equal(part.sd_out, new.sd_out[:, 100:333]) and np.array_equal(part.mu_in, new.mu_in[:, 100:333])


def test_norm_logpdf_is_scipys_formula():
    rng = np.random.default_rng(3)
    t, mu = rng.normal(size=10_000) * 50, rng.normal(size=10_000)
    sd = np.exp(rng.normal(size=10_000) * 10)
    assert np.array_equal(norm_logpdf(t, mu, sd), stats.norm.logpdf(t, mu, sd))
    assert np.array_equal(norm_logpdf(t, mu, np.full(t.shape, 1e-30)), stats.norm.logpdf(t, mu, 1e-30))


@pytest.mark.parametrize("alpha", [1e-12, 1e-3, 0.05, 0.5, 0.999999])
def test_t_threshold_matches_np_unique(alpha):
    rng = np.random.default_rng(int(alpha * 1e6))
    short = rng.integers(2, 300, size=(40, 50))  # a short range: the lookup table
    wide = np.concatenate([rng.integers(2, 10, size=20), [10**9, 3 * 10**9]])  # a wide range: np.unique
    for n_out in (short, short.astype(np.float64), wide, np.array([7]), np.array(2), np.empty((0, 3), int)):
        new, old = threshold(alpha, kind="t", n_out=n_out), old_threshold(alpha, kind="t", n_out=n_out)
        assert np.array_equal(new, old) and np.shape(new) == np.shape(old)
    assert threshold(alpha, kind="normal") == old_threshold(alpha, kind="normal")


@pytest.mark.parametrize("m, poisson, ties", [(8, False, True), (16, True, False), (60, False, True), (120, True, True)])
def test_conformal_ranks_and_hit_probabilities_match_the_oracle(m, poisson, ties):
    score, keep = _scores(m, 400, m + 1, poisson=poisson, ties=ties)
    old = old_conformal_ranks(score, keep)
    full = conformal_ranks(score, keep)
    for key in ("greater", "equal", "n_ref"):
        assert np.array_equal(getattr(full, key), old[key]), key
    n_out_max = int((~keep).sum(axis=0).max())
    for alphas in ([0.3], [0.2, 0.05], [0.01], [1e-12], [0.999]):
        cap = rank_cap(alphas, n_out_max)
        capped = conformal_ranks(score, keep, cap=cap)
        known = old["greater"] < cap
        assert np.array_equal(capped.greater, np.minimum(old["greater"], cap))
        assert np.array_equal(capped.equal[known], old["equal"][known])
        for a in alphas:
            assert np.array_equal(hit_probability(capped, a), old_hit_probability(old, a))
            est = empirical_per_record(score, keep, a, ranks=capped)
            if old_not_estimable((~keep).sum(axis=0), a):
                assert not est.estimable
            else:
                tpr, fpr = old_empirical_per_record(old, a)
                assert np.array_equal(est.tpr, tpr) and np.array_equal(est.fpr, fpr)


@pytest.mark.parametrize("poisson, ties", [(False, False), (True, True)])
@pytest.mark.parametrize("fpc", [None, 0.3])
def test_per_record_parametric_and_normality_match_the_oracle(poisson, ties, fpc):
    score, keep = _scores(24, 900, 5, poisson=poisson, ties=ties)
    mom = record_moments(score, keep, higher=True)
    for alpha in (1e-12, 1e-3, 0.05, 0.9):
        new = parametric_per_record(score, keep, alpha, fpc=fpc, moments=mom).tpr
        assert np.array_equal(new, old_parametric_per_record(score, keep, alpha, fpc=fpc))
    assert _jarque_bera_share(mom) == old_jarque_bera_share(score, keep)
    out = ~keep
    dev = np.where(out, score - mom.mean_out, 0.0)
    _close(mom.m3_out, (dev**3).sum(axis=0))
    _close(mom.m4_out, (dev**4).sum(axis=0))


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("strict", [False, True])
def test_pooled_cut_is_the_roc_point_and_auc_is_exact(ties, strict):
    rng = np.random.default_rng(11 + ties)
    stat = rng.normal(size=(30, 500))
    keep = rng.random(stat.shape) < 0.4
    stat = stat + keep
    if ties:
        stat = np.round(stat, 1)
    pooled = PooledScores(stat, keep)
    roc = old_roc(stat, keep)
    n_neg = int((~keep).sum())
    for alpha in ((0.0,) if not strict else ()) + (1e-12, 1 / n_neg, 2 / n_neg, 1e-3, 0.01, 0.37, 1 - 1e-12, 1.0):
        point = old_point_at_fpr(roc, alpha, strict=strict)
        cut = pooled.cut(alpha, strict=strict)
        called = stat > cut
        assert int(np.count_nonzero(called & keep)) == point["tp"], alpha
        assert int(np.count_nonzero(called & ~keep)) == point["fp"], alpha
        assert float(np.min(stat, where=called, initial=math.inf)) == point["thresholds"], alpha
    negatives = np.sort(stat[~keep])
    assert mann_whitney_auc(negatives, np.sort(stat[keep])) == old_auc(roc)


def _random_sets(shape, n_sets, rng):
    return [rng.random(shape) < p for p in rng.uniform(0.01, 0.9, size=n_sets)]


@pytest.mark.parametrize("m, n, n_boot", [(5, 7, 3), (12, 300, 40), (40, 2000, 25)])
@pytest.mark.parametrize("field_bits", [None, 2, 4])
def test_bootstrap_totals_match_the_oracle(m, n, n_boot, field_bits, monkeypatch):
    """Weighted counts (exact), listed entries and per-record means (1e-12) against the direct
    products; ``field_bits`` shrinks the packed fields so that they are split, halved and bypassed."""
    if field_bits is not None:
        monkeypatch.setattr(bootstrap, "_FIELD_BITS", field_bits)
    rng = np.random.default_rng(m * n)
    boot = Bootstrap((m, n), n_boot, seed=9)
    old = OldBootstrap((m, n), n_boot, seed=9)
    assert np.array_equal(boot.w_models, old.w_models) and np.array_equal(boot.w_records, old.w_records)
    members = _random_sets((m, n), 7, rng)
    sets = TargetSets((m, n), len(members), group=boot.group)
    for i, s in enumerate(members):
        for lo in range(0, n, 3):
            sets.add(i, slice(lo, min(lo + 3, n)), s[:, lo:lo + 3])
    picked = np.flatnonzero(rng.random(m * n) < 0.2)
    values = rng.random((picked.size, 3)) * (rng.random((picked.size, 3)) < 0.5)
    values[:, 0] = values[:, 0] > 0  # a 0/1 column: exact
    entries = TargetEntries((m, n), picked, values)
    records = rng.random((n, 2))
    counts, sums, listed = [], [], []
    for block in boot.blocks():
        c, s = boot.column_totals(block, sets, records)
        counts.append(c)
        sums.append(s / block.w_records.sum(axis=1)[:, None])
        listed.append(boot.entry_totals(block, entries))
    counts, sums, listed = np.concatenate(counts), np.concatenate(sums), np.concatenate(listed)
    for i, s in enumerate(members):
        assert np.array_equal(counts[:, i], old.weighted_sum(s)), i
    for j in range(values.shape[1]):
        dense = np.zeros(m * n)
        dense[picked] = values[:, j]
        want = old.weighted_sum(dense.reshape(m, n))
        if j == 0:
            assert np.array_equal(listed[:, 0], want)
        else:
            _close(listed[:, j], want)
    for j in range(records.shape[1]):
        _close(sums[:, j], old.record_mean(records[:, j]))
        _close(boot.record_mean(records[:, j]), old.record_mean(records[:, j]))


def test_bootstrap_heavy_record_is_counted_exactly(monkeypatch):
    """A record drawn more often than one packed field holds is counted on its own."""
    monkeypatch.setattr(bootstrap, "_FIELD_BITS", 1)
    boot = Bootstrap((4, 3), 6, seed=1)
    assert boot.bits == 1 and int(boot.w_records.max()) > 1
    rng = np.random.default_rng(0)
    members = _random_sets((4, 3), 3, rng)
    sets = TargetSets((4, 3), 3, group=boot.group)
    for i, s in enumerate(members):
        sets.add(i, slice(0, 3), s)
    counts = np.concatenate([boot.column_totals(block, sets)[0] for block in boot.blocks()])
    old = OldBootstrap((4, 3), 6, seed=1)
    for i, s in enumerate(members):
        assert np.array_equal(counts[:, i], old.weighted_sum(s))


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("alphas", [(0.01, 0.001), (0.5,), (1e-12, 0.999)])
def test_rechosen_threshold_matches_the_argsort_bootstrap(ties, alphas):
    rng = np.random.default_rng(len(alphas) + ties)
    stat = rng.normal(size=(20, 1500))
    keep = rng.random(stat.shape) < 0.5
    stat = stat + 1.5 * keep
    if ties:
        stat = np.round(stat, 1)
    boot = Bootstrap(stat.shape, 30, seed=4)
    old = OldBootstrap(stat.shape, 30, seed=4)
    assert np.array_equal(boot.tpr_at_fpr(stat, keep, alphas), old.tpr_at_fpr(stat, keep, alphas))


def test_bootstrap_draw_in_the_background_is_the_same_draw():
    first = Bootstrap((10, 500), 50, seed=3)
    again = Bootstrap((10, 500), 50, seed=3)
    assert np.array_equal(first.w_records, again.w_records)
    rng = np.random.default_rng(3)
    assert np.array_equal(Bootstrap((10, 500), 50, seed=rng).w_records, first.w_records)
    assert np.array_equal(first.w_records, OldBootstrap((10, 500), 50, seed=3).w_records)


# ==================================================================================================
# The whole evaluation
# ==================================================================================================

_CASES = {
    "efficient, M=256": dict(m=256, n=400, fpr=(1e-2, 1e-3)),
    "large M=2000 (ranks by selection)": dict(m=2000, n=40, fpr=(1e-2, 1e-3)),
    "poisson, ties, M=40, fpc": dict(m=40, n=500, poisson=True, ties=True, fpr=(0.05, 1e-3), fpc=True),
    "tiny M=6, α at the edges": dict(m=6, n=300, fpr=(0.5, 1e-12, 0.999999)),
    "efficient, ties, strict, positive sign": dict(m=64, n=300, ties=True, fpr=(0.1, 0.02), strict=True,
                                                   sign="positive"),
    "median, global variance, fpc": dict(m=30, n=400, poisson=True, fpr=(0.2, 0.01), fpc=True,
                                         attack=LiRA(location="median", variance="global")),
}


@pytest.mark.parametrize("case", list(_CASES))
@pytest.mark.parametrize("n_boot", [0, 37])
@pytest.mark.parametrize("references", ["balanced", "loo"])
def test_evaluate_equals_the_pre_change_evaluation(case, n_boot, references):
    """The oracle with plain leave-one-out fits is the code before issue 14 verbatim; with balanced
    references (the default since issue 23) its fits drop each target's partner directly."""
    kw = dict(_CASES[case])
    m, n = kw.pop("m"), kw.pop("n")
    scores = _scoreset(m, n, list(_CASES).index(case), poisson=kw.pop("poisson", False), ties=kw.pop("ties", False))
    new = evaluate(scores, n_boot=n_boot, seed=5, references=references, **kw)
    old = old_evaluate(scores, n_boot=n_boot, seed=5, references=references, **kw)
    assert_reports_match(new, old)


@pytest.mark.parametrize("references", ["balanced", "loo"])
def test_evaluate_rmia_equals_the_pre_change_evaluation(references):
    """An attack without a blockwise statistic (RMIA: its population) takes the whole-matrix path."""
    scores = _scoreset(32, 300, 8)
    assert_reports_match(evaluate(scores, attack="rmia", fpr=(0.05, 0.01), n_boot=20, seed=2, references=references),
                         old_evaluate(scores, attack="rmia", fpr=(0.05, 0.01), n_boot=20, seed=2,
                                      references=references))


def test_evaluate_spans_many_blocks(monkeypatch):
    """Blocks of a few records (so every per-block pass and the bootstrap's splits run many times)."""
    from dpaudit.mia import fits

    monkeypatch.setattr(fits.column_blocks, "__defaults__", (100,))
    monkeypatch.setattr(bootstrap, "_FIELD_BITS", 5)
    scores = _scoreset(50, 700, 21, ties=True)
    for references in ("balanced", "loo"):  # the partners of a record do not depend on how records are blocked
        assert_reports_match(evaluate(scores, fpr=(0.05, 0.01), n_boot=15, seed=1, references=references),
                             old_evaluate(scores, fpr=(0.05, 0.01), n_boot=15, seed=1, references=references))


def test_a_statistic_that_overflows_is_a_data_error():
    """Equal IN scores (σ_in = 0, floored at 1e-30) against OUT scores near 1e150: LiRA's log density
    overflows to −inf. A ScoreSet refuses such scores (above max_abs_score); past that check, the one
    deliberate difference from the old code, which ranked ±inf (and NaN, where both densities overflow)
    in its ROC: the evaluation refuses a non-finite statistic."""
    keep = keep_matrix(8, 6, seed=0)
    score = np.where(keep, 0.0, 9e149) + np.where(keep, 0.0, np.arange(8)[:, None] * 1e148)
    with pytest.raises(DataError, match=r"magnitude above 1e\+75"):
        ScoreSet(score, keep, train_size=3, pool_size=6)
    scores = ScoreSet(np.zeros_like(score), keep, train_size=3, pool_size=6)
    object.__setattr__(scores, "score", score)  # past the ScoreSet's own check
    with np.errstate(over="ignore", invalid="ignore"):  # the squares of the log densities overflow
        with pytest.raises(DataError, match="lira statistic is not finite .* records 0–5"):
            evaluate(scores, fpr=(0.3,), n_boot=0)
        assert not np.isfinite(old_lira_online(score, old_loo_fits(score, keep))).all()


def test_the_comparison_catches_a_change():
    """The oracle comparison is not vacuous: another seed, α or design changes some number."""
    scores = _scoreset(40, 300, 3)
    base = old_evaluate(scores, fpr=(0.05,), n_boot=10, seed=0, references="balanced")
    assert_reports_match(evaluate(scores, fpr=(0.05,), n_boot=10, seed=0), base)
    with pytest.raises(AssertionError):  # plain leave-one-out fits are not the balanced ones
        assert_reports_match(evaluate(scores, fpr=(0.05,), n_boot=10, seed=0, references="loo"), base)
    with pytest.raises(AssertionError):
        assert_reports_match(evaluate(scores, fpr=(0.05,), n_boot=10, seed=1), base)
    with pytest.raises(AssertionError):
        assert_reports_match(evaluate(scores, fpr=(0.05,), n_boot=10, seed=0, strict=True, sign="positive"), base)
    with pytest.raises(AssertionError):
        assert_reports_match(evaluate(scores, fpr=(0.05,), n_boot=10, seed=0, fpc=True), base)


# ==================================================================================================
# The oracle: the evaluation as of commit 3b6c86a (before issue 14's speed work), verbatim but for
# the names (old_…) and the two helpers its modules shared (validation and result types, unchanged).
# ==================================================================================================

_OLD_RANK_EPS = 1e-12


def old_roc(scores, labels):
    """roc_curve: argsort of every score, one point per distinct score (fp, tp counts, thresholds)."""
    s, y = np.asarray(scores, dtype=float).ravel(), np.asarray(labels, dtype=bool).ravel()
    n_pos = int(y.sum())
    n_neg = int(y.size - n_pos)
    order = np.argsort(-s)
    s_sorted = s[order]
    ends = np.append(np.flatnonzero(s_sorted[1:] != s_sorted[:-1]), s_sorted.size - 1)
    tp = np.zeros(ends.size + 1, dtype=np.int64)
    fp = np.zeros(ends.size + 1, dtype=np.int64)
    thresholds = np.full(ends.size + 1, np.inf)
    tp[1:] = np.cumsum(y[order], dtype=np.int64)[ends]
    np.subtract(ends + 1, tp[1:], out=fp[1:])
    thresholds[1:] = s_sorted[ends]
    return {"fpr": fp / n_neg, "tpr": tp / n_pos, "thresholds": thresholds, "tp": tp, "fp": fp,
            "n_pos": n_pos, "n_neg": n_neg}


def old_point_at_fpr(roc, alpha, strict=False):
    idx = np.searchsorted(roc["fpr"], alpha, side="left" if strict else "right") - 1
    return {key: roc[key][idx] for key in ("tpr", "fpr", "thresholds", "tp", "fp")}


def old_auc(roc):
    tp, fp = roc["tp"].astype(float), roc["fp"].astype(float)
    area2 = float(np.dot(np.diff(fp), tp[1:] + tp[:-1]))
    return area2 / (2.0 * roc["n_pos"] * roc["n_neg"])


def old_per_record_rates(score, keep, threshold, counted=None):
    """(With ``counted``, issue 23: only the counted targets of each record.)"""
    hit = score >= threshold
    pos, neg = (keep, ~keep) if counted is None else (keep & counted, ~keep & counted)
    n_in = pos.sum(axis=0)
    n_out = neg.sum(axis=0)
    tp = np.count_nonzero(hit & pos, axis=0)
    fp = np.count_nonzero(hit & neg, axis=0)
    tpr = np.divide(tp, n_in, out=np.full(n_in.shape, np.nan), where=n_in > 0)
    fpr = np.divide(fp, n_out, out=np.full(n_out.shape, np.nan), where=n_out > 0)
    return tpr, fpr


def _old_loo_moments(score, group, partners=None):
    """(With ``partners``, the balanced references of issue 23: every target removes one score of each
    group, its own or its partner's.)"""
    g = group.astype(np.float64)
    n_full = g.sum(axis=0)
    mean_full = (score * g).sum(axis=0) / n_full
    if partners is None:
        dev = (score - mean_full) * g
        n = n_full - g
    else:
        dev = np.where(group, score, np.take_along_axis(score, partners, axis=0)) - mean_full
        n = np.broadcast_to(n_full - 1, score.shape)
    ss_full = (((score - mean_full) * g) ** 2).sum(axis=0)
    mean = mean_full - dev / (n_full - 1)
    ss = ss_full - dev**2 * n_full / (n_full - 1)
    _old_snap_constant(score, group, partners, mean, ss)
    ss[ss <= 4 * n_full * np.finfo(np.float64).eps * ss_full] = 0.0
    return n.astype(np.int64), mean, ss


def _old_snap_constant(score, group, partners, mean, ss):
    """(Issue 23.) A fit whose remaining scores are all equal gets that value as its mean and SS = 0,
    exactly: the remaining group's largest and smallest values from each column's sorted group, skipping
    the removed score's rank (its own, its partner's, or none)."""
    n_models = score.shape[0]
    big_sorted = np.sort(np.where(group, score, np.inf), axis=0)  # the group's values first, ascending
    order = np.argsort(np.where(group, score, np.inf), axis=0, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(n_models)[:, None], order.shape), axis=0)
    n = group.sum(axis=0)
    if partners is None:
        removed_rank = np.where(group, rank, -1)
    else:
        removed_rank = np.where(group, rank, np.take_along_axis(rank, partners, axis=0))
    top = np.broadcast_to(n - 1, score.shape)
    hi_index = np.where(removed_rank == top, top - 1, top)
    lo_index = np.where(removed_rank == 0, 1, 0)
    hi = np.take_along_axis(big_sorted, hi_index, axis=0)
    lo = np.take_along_axis(big_sorted, lo_index, axis=0)
    constant = hi == lo
    mean[constant] = hi[constant]
    ss[constant] = 0.0


def _old_loo_median(score, group, partners=None):
    n_models = score.shape[0]
    vals = np.where(group, score, np.inf)
    order = np.argsort(vals, axis=0, kind="stable")
    ordered = np.take_along_axis(vals, order, axis=0)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(n_models)[:, None], order.shape), axis=0)
    removed = group
    if partners is not None:
        rank = np.where(group, rank, np.take_along_axis(rank, partners, axis=0))
        removed = np.ones_like(group)
    n = group.sum(axis=0)[None, :] - removed
    j1 = (n - 1) // 2
    j2 = n // 2
    i1 = j1 + (removed & (j1 >= rank))
    i2 = j2 + (removed & (j2 >= rank))
    return 0.5 * (np.take_along_axis(ordered, i1, axis=0) + np.take_along_axis(ordered, i2, axis=0))


def old_loo_fits(score, keep, *, location="mean", variance="per-record", ddof=1, fpc=None, references="loo"):
    fits = {}
    partners = partner_models(keep) if references == "balanced" else None
    for label, group in (("in", keep), ("out", ~keep)):
        n, mean, ss = _old_loo_moments(score, group, partners)
        if variance == "per-record":
            var = ss / (n - ddof)
        else:
            var = np.broadcast_to((ss.sum(axis=1) / (n - ddof).sum(axis=1))[:, None], ss.shape).copy()
        if fpc is not None:
            var /= fpc
        mu = mean if location == "mean" else _old_loo_median(score, group, partners)
        fits[label] = (mu, np.sqrt(var), n)
    return {"mu_in": fits["in"][0], "sd_in": fits["in"][1], "mu_out": fits["out"][0], "sd_out": fits["out"][1],
            "n_in": fits["in"][2], "n_out": fits["out"][2]}


def old_lira_online(t, fits):
    return (stats.norm.logpdf(t, fits["mu_in"], np.maximum(fits["sd_in"], 1e-30))
            - stats.norm.logpdf(t, fits["mu_out"], np.maximum(fits["sd_out"], 1e-30)))


def old_pp_transform(t, fits, sign="fitted"):
    z = (t - fits["mu_out"]) / np.maximum(fits["sd_out"], 1e-30)
    return z if sign == "positive" else np.where(fits["mu_in"] >= fits["mu_out"], z, -z)


def old_threshold(alpha, kind="t", n_out=None):
    if kind == "normal":
        return float(stats.norm.isf(alpha))
    n = np.asarray(n_out)
    distinct, inverse = np.unique(n.astype(np.float64), return_inverse=True)
    value = (stats.t.isf(alpha, distinct - 1) * np.sqrt(1 + 1 / distinct))[inverse].reshape(n.shape)
    return float(value) if value.ndim == 0 else value


def old_conformal_ranks(s, k):
    m = s.shape[0]
    out_t = np.ascontiguousarray(~k.T)
    order = np.argsort(np.ascontiguousarray(s.T), axis=1)
    s_sorted = np.take_along_axis(s.T, order, axis=1)
    above = np.zeros(s_sorted.shape, dtype=np.int32)
    np.cumsum(np.take_along_axis(out_t, order, axis=1)[:, :0:-1], axis=1, dtype=np.int32, out=above[:, -2::-1])
    tied = s_sorted[:, 1:] == s_sorted[:, :-1]
    if tied.any():
        cols = np.arange(m, dtype=np.int32)[None, :]
        last = np.ones(s_sorted.shape, dtype=bool)
        last[:, :-1] = ~tied
        last_pos = np.minimum.accumulate(np.where(last, cols, m - 1)[:, ::-1], axis=1)[:, ::-1]
        first = np.ones(s_sorted.shape, dtype=bool)
        first[:, 1:] = ~tied
        first_pos = np.maximum.accumulate(np.where(first, cols, 0), axis=1)
        at_or_above = above + np.take_along_axis(out_t, order, axis=1)
        ge_sorted = np.take_along_axis(at_or_above, first_pos, axis=1)
        above = np.take_along_axis(above, last_pos, axis=1)
        equal_sorted = ge_sorted - above
    else:
        equal_sorted = np.take_along_axis(out_t, order, axis=1).astype(np.int32)
    gt = np.empty_like(above)
    eq = np.empty_like(above)
    np.put_along_axis(gt, order, above, axis=1)
    np.put_along_axis(eq, order, equal_sorted, axis=1)
    n_out = (~k).sum(axis=0)
    return {"greater": np.ascontiguousarray(gt.T), "equal": np.ascontiguousarray(eq.T) - ~k,
            "n_ref": np.where(k, n_out, n_out - 1).astype(np.int32), "keep": k}


def old_hit_probability(ranks, alpha):
    budget = alpha * (ranks["n_ref"] + 1) * (1 + _OLD_RANK_EPS)
    return np.clip((budget - ranks["greater"]) / (ranks["equal"] + 1.0), 0.0, 1.0)


def old_not_estimable(n_out, alpha):
    return int(np.min(n_out)) < min_out_models(alpha)


def old_empirical_per_record(ranks, alpha, counted=None):
    hits = old_hit_probability(ranks, alpha)
    k = ranks["keep"]
    pos, neg = (k, ~k) if counted is None else (k & counted, ~k & counted)
    return np.where(pos, hits, 0.0).sum(axis=0) / pos.sum(axis=0), np.where(neg, hits, 0.0).sum(axis=0) / neg.sum(axis=0)


def _old_record_fit(score, group):
    n = group.sum(axis=0)
    mean = np.where(group, score, 0.0).sum(axis=0) / n
    top, bottom = np.where(group, score, -np.inf).max(axis=0), np.where(group, score, np.inf).min(axis=0)
    mean = np.where(top == bottom, top, mean)  # (issue 23) a constant group's mean is its value, exactly
    ss = np.where(group, (score - mean) ** 2, 0.0).sum(axis=0)
    return n, mean, np.sqrt(ss / (n - 1))


def old_parametric_per_record(s, k, alpha, fpc=None):
    scale = 1.0 if fpc is None else 1.0 / math.sqrt(fpc)
    n_in, mu_in, sd_in = _old_record_fit(s, k)
    n_out, mu_out, sd_out = _old_record_fit(s, ~k)
    cut = mu_out + sd_out * scale * old_threshold(alpha, kind="t", n_out=n_out)
    return normal_tail_umvue(cut, n_in, mu_in, sd_in * scale)


def old_jarque_bera_share(score, keep, level=0.01):
    out = ~keep
    n = out.sum(axis=0).astype(float)
    mean = np.where(out, score, 0.0).sum(axis=0) / n
    top, bottom = np.where(out, score, -np.inf).max(axis=0), np.where(out, score, np.inf).min(axis=0)
    mean = np.where(top == bottom, top, mean)  # (issue 23) a constant group's mean is its value, exactly
    dev = np.where(out, score - mean, 0.0)
    m2 = (dev**2).sum(axis=0) / n
    safe = np.where(m2 > 0, m2, 1.0)
    skew = (dev**3).sum(axis=0) / n / safe**1.5
    kurt = (dev**4).sum(axis=0) / n / safe**2
    jb = n / 6.0 * (skew**2 + (kurt - 3.0) ** 2 / 4.0)
    p = stats.chi2.sf(jb, df=2)
    return float(np.mean(np.where(m2 > 0, p < level, False)))


class OldBootstrap:
    def __init__(self, shape, n_boot, *, seed=0):
        rng = np.random.default_rng(seed)
        m, n = shape
        self.shape = (int(m), int(n))
        self.n_boot = int(n_boot)
        self.w_models = rng.multinomial(m, np.full(m, 1.0 / m), size=n_boot).astype(np.float64)
        self.w_records = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64)

    def weighted_sum(self, values):
        return ((self.w_models @ np.asarray(values, dtype=np.float64)) * self.w_records).sum(axis=1)

    def rate(self, hits, mask):
        return self.weighted_sum(np.where(mask, hits, 0.0)) / np.maximum(self.weighted_sum(mask), 1e-300)

    def record_mean(self, values):
        return (self.w_records @ np.asarray(values, dtype=np.float64)) / self.w_records.sum(axis=1)

    def tpr_at_fpr(self, stat, keep, alphas, counted=None):
        """(With ``counted``, issue 23: the other targets are neither members nor non-members.)"""
        n = self.shape[1]
        counted = np.ones(np.shape(keep), dtype=bool) if counted is None else counted
        flat = np.where(counted, stat, -np.inf).ravel()
        order = np.argsort(-flat, kind="stable")
        sorted_stat = flat[order]
        group_end = np.append(sorted_stat[1:] != sorted_stat[:-1], True)
        pos_sorted = (np.asarray(keep) & counted).ravel()[order]
        neg_sorted = (~np.asarray(keep) & counted).ravel()[order]
        rows, cols = order // n, order % n
        tot_pos = self.weighted_sum(np.asarray(keep) & counted)
        tot_neg = self.weighted_sum(~np.asarray(keep) & counted)
        neg_rank = np.cumsum(neg_sorted) / max(neg_sorted.sum(), 1)
        prefix = int(np.searchsorted(neg_rank, min(1.0, 4 * max(alphas) + 0.01), side="right")) + 1
        out = np.empty((self.n_boot, len(alphas)))
        for b, (wm, wx) in enumerate(zip(self.w_models, self.w_records)):
            for length in (prefix, len(order)):
                sl = slice(0, min(length, len(order)))
                w = wm[rows[sl]] * wx[cols[sl]]
                fpr = np.cumsum(np.where(neg_sorted[sl], w, 0.0)) / max(tot_neg[b], 1e-300)
                tpr = np.cumsum(np.where(pos_sorted[sl], w, 0.0)) / max(tot_pos[b], 1e-300)
                if fpr[-1] > max(alphas) or sl.stop == len(order):
                    break
            for j, a in enumerate(alphas):
                ok = group_end[sl] & (fpr <= a + 1e-12)
                out[b, j] = tpr[np.flatnonzero(ok)[-1]] if ok.any() else 0.0
        return out


def _old_epsilon(tp, n_pos, fp, n_neg, *, delta, level, tpr_reps=None, fpr_reps=None):
    tp_count, fp_count = math.floor(tp + 1e-9), min(math.ceil(fp - 1e-9), n_neg)
    bound = epsilon_lower_bound_ci(tp_count, n_pos, fp_count, n_neg, delta=delta, level=level)
    tpr_lo, fpr_hi = float(bound.tpr_lower), float(bound.fpr_upper)
    tail = 50 * (1 - level)
    if tpr_reps is not None:
        tpr_lo = min(tpr_lo, float(np.nanpercentile(tpr_reps, tail)))
    if fpr_reps is not None:
        fpr_hi = max(fpr_hi, float(np.nanpercentile(fpr_reps, 100 - tail)))
    eps = float(epsilon_lower_bound(max(tpr_lo, 0.0), min(fpr_hi, 1.0), delta=delta))
    return eps, float(bound.point)


def _old_pooled(hits, keep, boot, *, delta, level, counted=None, **extra):
    """(With ``counted``, issue 23: only the counted targets are members or non-members.)"""
    pos, neg = (keep, ~keep) if counted is None else (keep & counted, ~keep & counted)
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    tp, fp = float(np.where(pos, hits, 0).sum()), float(np.where(neg, hits, 0).sum())
    lo, hi = clopper_pearson(math.floor(tp + 1e-9), n_pos, level=level)
    tpr_reps = fpr_reps = None
    if boot is not None:
        tpr_reps, fpr_reps = boot.rate(hits, pos), boot.rate(hits, neg)
    eps_lb, eps_point = _old_epsilon(tp, n_pos, fp, n_neg, delta=delta, level=level, tpr_reps=tpr_reps,
                                     fpr_reps=fpr_reps)
    return RuleResult(True, tp / n_pos, fp / n_neg, eps_lb, eps_point,
                      ci=None if tpr_reps is None else (percentile_interval(tpr_reps, level)),
                      cp=(float(lo), float(hi)), **extra)


def _old_per_record(values, boot, level, **fields):
    ci = None if boot is None else (percentile_interval(boot.record_mean(values), level))
    return RuleResult(True, float(values.mean()), ci=ci, **fields)


def old_evaluate(scores, *, attack=None, fpr=(1e-2, 1e-3), threshold_kind="t", fpc=False, strict=False, n_boot=200,
                 level=0.95, delta=0.0, seed=0, sign="fitted", references="loo"):
    attack = attack_from(attack)
    alphas = tuple(float(a) for a in fpr)
    keep = np.asarray(scores.keep)
    fpc_value = fpc_factor(scores.train_size, scores.pool_size) if fpc else None
    signal = np.asarray(attack.signal(scores), dtype=np.float64)
    fits = old_loo_fits(signal, keep, location=attack.location, variance=attack.variance, fpc=fpc_value,
                        references=references)
    stat = old_lira_online(signal, fits) if attack.name == "lira" else attack.statistic(scores, None)
    counted = counted_targets(keep)  # (issue 23) None: every target counts
    every = np.ones(keep.shape, dtype=bool) if counted is None else counted
    pooled = old_roc(stat[every], keep[every])
    f = old_pp_transform(signal, fits, sign)
    z_positive = f if sign == "positive" else old_pp_transform(signal, fits, "positive")
    ranks = old_conformal_ranks(signal, keep)
    n_out_records = (~keep).sum(axis=0)
    boot = OldBootstrap(keep.shape, n_boot, seed=seed) if n_boot else None
    naive_boot = boot.tpr_at_fpr(stat, keep, alphas, counted) if boot else None
    eps = {"delta": delta, "level": level}
    rows = []
    for j, alpha in enumerate(alphas):
        rules = {}
        point = old_point_at_fpr(pooled, alpha, strict=strict)
        _, rec_fpr = old_per_record_rates(stat, keep, point["thresholds"], counted)
        naive = _old_pooled(stat >= point["thresholds"], keep, boot, threshold=float(point["thresholds"]),
                            counted=counted, **eps)
        rules["naive"] = RuleResult(True, naive.tpr, naive.fpr, naive.epsilon_lb, naive.epsilon_point,
                                    ci=None if naive_boot is None else (percentile_interval(naive_boot[:, j], level)),
                                    threshold=naive.threshold)
        for kind in ("normal", "t"):
            rules[f"pp_{kind}"] = _old_pooled(f >= old_threshold(alpha, kind=kind, n_out=fits["n_out"]), keep, boot,
                                              counted=counted, **eps)
        if old_not_estimable(n_out_records, alpha):
            rules["pp_rank"] = rules["per_record_empirical"] = RuleResult.not_estimable("(reason)")
        else:
            rank = rules["pp_rank"] = _old_pooled(old_hit_probability(ranks, alpha), keep, boot, counted=counted, **eps)
            emp_tpr, emp_fpr = old_empirical_per_record(ranks, alpha, counted)
            rules["per_record_empirical"] = _old_per_record(emp_tpr, boot, level, fpr=float(emp_fpr.mean()),
                                                            epsilon_lb=rank.epsilon_lb, epsilon_point=rank.epsilon_point)
        par = old_parametric_per_record(signal, keep, alpha, fpc=fpc_value)
        crossed = z_positive >= old_threshold(alpha, kind="t", n_out=fits["n_out"])
        tail_fpr = float((np.where(keep, False, crossed).sum(axis=0) / (~keep).sum(axis=0)).mean())
        rules["per_record_parametric"] = _old_per_record(par, boot, level, fpr=alpha, fpr_kind="nominal",
                                                         t_threshold_fpr_loo=tail_fpr)
        spread = FprSpread(float(np.nanmax(rec_fpr)), float(np.nanmean(rec_fpr > alpha)))
        rows.append(AlphaResult(alpha, {r: rules[r] for r in rules}, spread))
    diagnostics = {"share_non_normal": old_jarque_bera_share(signal, keep), "min_n_out": int(fits["n_out"].min()),
                   "auc_naive": float(old_auc(pooled))}
    return MiaReport(scores.n_models, scores.n_records, alphas, tuple(rows), {}, diagnostics)
