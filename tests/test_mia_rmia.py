"""RMIA (Zarifzadeh, Liu, Shokri, ICML 2024) as the second registered attack.

The vectorised score is checked against a brute-force oracle that applies the definition one
(target model, record, population record) at a time in exact rational arithmetic: that loop is kept
here on purpose, not a second implementation.
"""

import re
from fractions import Fraction

import numpy as np
import pytest

from dpaudit._errors import DPAuditError
from dpaudit._validation import CHOICE, EVERY, FLAG, NUMBER, WHOLE
from dpaudit.mia.attacks import ATTACKS, RMIA, attack_from
from dpaudit.mia.attacks.rmia import population_sample, rmia_score, true_label_probability
from dpaudit.mia.designs import keep_matrix
from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.fits import LOCATIONS
from dpaudit.mia.per_record import min_out_models
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.simulate import gaussian_scores
from tests.test_mia_per_record import null_violations

# ---------------------------------------------------------------- brute-force oracle


def _oracle(prob, *, gamma, keep=None, a=0.3, cols=None):
    """Score(x; θ_m) by the definition, exactly; also the number of LR values exactly equal to γ.

    ``cols``: the population columns of :func:`population_sample` (record x's population is the
    first ``len(cols) − 1`` of them that are not x); None: every other record.
    """
    n_models, n_records = prob.shape
    p = [[Fraction(float(v)) for v in row] for row in prob]
    a, gamma = Fraction(a), Fraction(gamma)

    def mean(values):
        return sum(values, Fraction(0)) / len(values)

    def pr_online(m, v):  # every reference model m' ≠ m
        return mean([p[i][v] for i in range(n_models) if i != m])

    def pr_target(m, x):
        if keep is None:
            return pr_online(m, x)
        pr_out = mean([p[i][x] for i in range(n_models) if i != m and not keep[i, x]])
        return (1 + a) * pr_out / 2 + (1 - a) / 2

    score, ties = np.empty(prob.shape), 0
    for m in range(n_models):
        for x in range(n_records):
            if cols is None:
                population = [z for z in range(n_records) if z != x]
            else:
                population = [int(z) for z in cols if z != x][: len(cols) - 1]
            ratio_x = p[m][x] / pr_target(m, x)
            lrs = [ratio_x / (p[m][z] / pr_online(m, z)) for z in population]
            score[m, x] = sum(lr >= gamma for lr in lrs) / len(population)
            ties += sum(lr == gamma for lr in lrs)
    return score, ties


def _dyadic_probabilities(seed):
    """Probabilities k/8: every sum and product is exact, so ties are exact in floating point too."""
    rng = np.random.default_rng(seed)
    prob = rng.integers(1, 9, size=(8, 12)) / 8.0
    prob[:, 11] = prob[:, 3]  # identical records: their LR is exactly 1 under every model
    prob[:, 7] = 0.5  # a constant record
    prob[2, :] = prob[2, 0]  # a model that gives every record the same probability
    return prob


@pytest.mark.parametrize("gamma", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("offline", [False, True])
@pytest.mark.parametrize("a", [0.3, 0.5])
def test_score_equals_the_loop_with_ties(gamma, offline, a):
    prob = _dyadic_probabilities(seed=int(gamma * 10) + offline)
    keep = keep_matrix(8, 12, seed=1) if offline else None
    want, ties = _oracle(prob, gamma=gamma, keep=keep, a=a)
    got = rmia_score(prob, gamma=gamma, keep=keep, a=a, n_population=11)
    assert np.array_equal(got, want)
    if gamma == 1.0 and not offline:
        assert ties > 0  # LR = γ exactly happens, and it must count (≥, not >)


@pytest.mark.parametrize("n_population", [1, 4, 11, 50])
def test_score_equals_the_loop_with_a_population_sample(n_population):
    prob = _dyadic_probabilities(seed=7)
    cols = population_sample(12, n_population, seed=3)
    assert cols.size == min(n_population, 11) + 1 and np.unique(cols).size == cols.size
    for keep in (None, keep_matrix(8, 12, seed=2)):
        want, _ = _oracle(prob, gamma=1.0, keep=keep, cols=cols)
        assert np.array_equal(rmia_score(prob, gamma=1.0, keep=keep, n_population=n_population, seed=3), want)


def test_attack_equals_the_loop_on_scores():
    # Continuous scores with tied values (a repeated record, a repeated value within one model).
    rng = np.random.default_rng(11)
    keep = keep_matrix(8, 12, seed=4)
    score = 2 * rng.normal(size=(8, 12)) + keep
    score[:, 11] = score[:, 3]
    score[5, 6] = score[5, 2]
    s = ScoreSet(score, keep, train_size=6, pool_size=12)
    prob = true_label_probability(score)
    cols = population_sample(12, 6, seed=9)
    for attack in (RMIA(n_population=6, seed=9), RMIA(gamma=1.7, offline=True, a=0.4, n_population=6, seed=9)):
        want_signal, _ = _oracle(prob, gamma=attack.gamma, cols=cols)
        want_stat, _ = _oracle(prob, gamma=attack.gamma, keep=keep if attack.offline else None, a=attack.a, cols=cols)
        assert np.array_equal(attack.signal(s), want_signal)
        assert np.array_equal(attack.statistic(s, None), want_stat)


def test_probability_is_the_stable_sigmoid():
    score = np.array([-800.0, -40.0, 0.0, 3.0, 40.0, 800.0])
    p = true_label_probability(score)
    assert p[0] == np.finfo(float).tiny and p[-1] == 1.0
    np.testing.assert_allclose(p[1:-1], 1 / (1 + np.exp(-score[1:-1])), rtol=1e-14)
    # a ratio stays finite even when every other model gives probability ~0
    assert np.isfinite(rmia_score(true_label_probability(np.full((6, 4), -800.0)))).all()


# ---------------------------------------------------------------- who reads membership


def test_signal_ignores_keep_and_statistic_ignores_the_targets_own_membership():
    s = gaussian_scores(12, 400, seed=3).to_scoreset()  # 399 population records: fine-grained scores
    null = s.permuted(seed=5)
    for attack in (RMIA(), RMIA(offline=True)):
        assert np.array_equal(attack.signal(s), attack.signal(null))  # bit-identical
    online, offline = RMIA(), RMIA(offline=True)
    assert np.array_equal(online.statistic(s, None), online.signal(s))
    assert not np.array_equal(offline.statistic(s, None), offline.statistic(null, None))  # offline reads keep
    base = offline.statistic(s, None)
    keep = np.asarray(s.keep)
    for m, x in [(0, 0), (5, 17), (11, 399), (7, 3)]:
        flipped = keep.copy()
        flipped[m, x] = not flipped[m, x]
        stat = offline.statistic(ScoreSet(s.score, flipped, train_size=s.train_size, pool_size=s.pool_size), None)
        assert stat[m, x] == base[m, x]  # the target's own membership is never read
        changed = stat != base
        assert changed[:, x].any()  # ... but the other models' targets on x see it
        changed[:, x] = False
        assert not changed.any()  # and nothing else does (the population is online)


# ---------------------------------------------------------------- null data and known truth


@pytest.mark.parametrize("n_models", [32, 64, 256, 1024])
@pytest.mark.parametrize("offline", [False, True])
def test_null_data_show_no_leak(n_models, offline):
    """Membership permuted within each record: every rule within sampling error of its realised FPR,
    above and below, at α = 0.05, 0.01 and 0.001, and no ε > 0 (``null_violations`` of the LiRA tests).

    The Gaussian rules (PP, parametric) are miscalibrated for RMIA's bounded, discrete signal —
    measured PP-t realised FPR 0.034 at α = 0.05, M = 64 and 0.0017 at α = 0.01, M = 256 — but their
    TPR follows their own FPR; the parametric estimate lies between α and its t thresholds' realised
    FPR (0.0075 between 0.00044 and 0.01 at α = 0.01, M = 64). The online statistic reads no
    membership, so its naive rule is checked from below at every M; the offline one averages over the
    other OUT models, one fewer for an OUT target, like LiRA's leave-one-out fits.
    """
    null = gaussian_scores(n_models, 2500, seed=n_models).to_scoreset().permuted(seed=1)
    rep = evaluate(null, attack=RMIA(offline=offline), fpr=(0.05, 0.01, 0.001), n_boot=40)
    assert rep.options["attack"] == "rmia" and rep.options["attack_options"]["offline"] is offline
    assert rep.rows[0].rules["per_record_empirical"].estimable == (n_models // 2 >= min_out_models(0.05))
    fewer = ("naive",) if offline else ()  # PP-N(0,1) reads balanced references (docs/mia.md): no deficit
    for alpha, row in zip(rep.alphas, rep.rows):
        assert null_violations(row, n_models, fewer=fewer) == {}, (alpha, row.rules)


def _naive_truth(sim, attack, alpha, *, draws, seed):
    """The naive rule's TPR on these records by Monte Carlo, with its standard error: the mean over
    ``draws`` fresh draws of the models (keep matrix and scores) from the records' known Gaussians."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(draws):
        keep = keep_matrix(sim.n_models, sim.n_records, seed=rng)
        z = rng.standard_normal(keep.shape)
        score = np.where(keep, sim.mu_in + sim.sd_in * z, sim.mu_out + sim.sd_out * z)
        fresh = ScoreSet(score, keep, train_size=sim.train_size, pool_size=sim.pool_size)
        values.append(evaluate(fresh, attack=attack, fpr=(alpha,), n_boot=0).rows[0].rules["naive"].tpr)
    return float(np.mean(values)), float(np.std(values, ddof=1) / np.sqrt(draws))


@pytest.mark.parametrize("offline", [False, True])
def test_mixture_detects_membership_and_matches_the_truth(offline):
    """Gaussian scores with known truth (M = 256, 3,000 records, α = 0.01), online and offline.

    Per record, RMIA's signal (the same online score in both variants: the offline one changes only
    the naive statistic) is a monotone transform of the raw score up to each model's own population
    calibration, which adds model-level noise: its per-record test is a little weaker than the
    raw-score conformal test whose exact mean TPR is the truth. Measured over seeds 0–4 (N+ = 2,000
    and 3,000): the per-record empirical estimate is 0.013–0.019 below the truth, 0.55–1.37
    bootstrap CI widths (seed 3: 0.145 against 0.158, CI width 0.015); the tolerance is 3 widths.

    The naive rule's truth is its TPR on these records, by Monte Carlo over 4 fresh draws of the
    models (standard errors 0.00008 and 0.0002, about 2 % of the CI widths; the CI is widened by 3 of
    them): 0.0173 online, 0.0776 offline, against LiRA's 0.198 — the ratio is not standardised per
    record, so the noisy ratios of low-confidence records fill the top of the pooled ranking, and the
    offline reference Pr_OUT removes part of that noise.
    """
    sim = gaussian_scores(256, 3000, seed=3)
    s = sim.to_scoreset()
    truth = sim.true_tpr_of_test(0.01, "conformal", 128).mean()
    attack = RMIA(offline=offline)
    rmia = evaluate(s, attack=attack, fpr=(0.01,), n_boot=40).rows[0].rules
    emp = rmia["per_record_empirical"]
    width = emp.ci[1] - emp.ci[0]
    assert abs(emp.tpr - truth) <= 3 * width, (emp.tpr, truth, width)
    assert emp.tpr <= truth + width  # never more powerful than the raw-score test it approximates
    assert emp.tpr > 10 * 0.01
    naive = rmia["naive"]
    naive_truth, se = _naive_truth(sim, attack, 0.01, draws=4, seed=11)
    assert naive.ci[0] - 3 * se <= naive_truth <= naive.ci[1] + 3 * se, (naive, naive_truth, se)
    assert naive.ci[0] > 0.01 and naive.fpr <= 0.01
    lira = evaluate(s, attack="lira", fpr=(0.01,), n_boot=0).rows[0].rules
    assert lira["naive"].tpr > naive.tpr  # LiRA is the likelihood ratio of this very model


# ---------------------------------------------------------------- options and registration


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gamma": 0}, NUMBER.format(name="gamma", bounds=" > 0", value=0)),
        ({"gamma": -1.0}, NUMBER.format(name="gamma", bounds=" > 0", value=-1.0)),
        ({"gamma": float("inf")}, NUMBER.format(name="gamma", bounds=" > 0", value=float("inf"))),
        ({"gamma": "2"}, NUMBER.format(name="gamma", bounds=" > 0", value="2")),
        ({"a": -0.1}, NUMBER.format(name="a", bounds=" >= 0 and <= 1", value=-0.1)),
        ({"a": 1.5}, NUMBER.format(name="a", bounds=" >= 0 and <= 1", value=1.5)),
        ({"n_population": 0}, WHOLE.format(name="n_population", bounds=" >= 1", value=0)),
        ({"n_population": 2.5}, WHOLE.format(name="n_population", bounds=" >= 1", value=2.5)),
        ({"seed": -1}, WHOLE.format(name="seed", bounds=" >= 0", value=-1)),
        ({"seed": 1.5}, WHOLE.format(name="seed", bounds=" >= 0", value=1.5)),
        ({"seed": None}, WHOLE.format(name="seed", bounds=" >= 0", value=None)),
        ({"offline": "yes"}, FLAG.format(name="offline", value="yes")),
        ({"location": "mode"}, CHOICE.format(name="location", choices=", ".join(LOCATIONS), value="mode")),
    ],
)
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(DPAuditError) as info:
        RMIA(**kwargs)
    assert str(info.value) == message


def test_registered_by_name():
    assert ATTACKS["rmia"] is RMIA and attack_from("rmia") == RMIA()
    assert RMIA().options() == {"location": "mean", "variance": "per-record", "gamma": 1.0, "offline": False,
                                "a": 0.3, "n_population": 2000, "seed": 0}
    assert RMIA.name == "rmia" and RMIA.title and "ICML 2024" in RMIA.reference


@pytest.mark.parametrize(
    ("prob", "kwargs", "message"),
    [
        (np.full((1, 4), 0.5), {}, "prob must be an (M, N+) array with M and N+ >= 2; got shape (1, 4)"),
        (np.zeros((3, 4)), {}, EVERY.format(name="prob", kind="a finite number", bounds=" > 0 and <= 1 (a probability)",
                                            value=0.0)),
        (np.full((3, 4), np.nan), {}, EVERY.format(name="prob", kind="a finite number",
                                                   bounds=" > 0 and <= 1 (a probability)", value=np.nan)),
        (np.full((3, 4), 0.5), {"keep": np.ones((3, 4), bool)}, "every record OUT in >= 2 models"),
        (np.full((3, 4), 0.5), {"keep": np.zeros((3, 5), bool)}, "keep must have prob's shape (3, 4)"),
        (np.full((3, 4), 0.5), {"gamma": 0.0}, NUMBER.format(name="gamma", bounds=" > 0", value=0.0)),
        (np.full((3, 4), 0.5), {"seed": None}, WHOLE.format(name="seed", bounds=" >= 0", value=None)),
    ],
)
def test_score_function_checks_its_inputs(prob, kwargs, message):
    with pytest.raises(DPAuditError, match=re.escape(message)):
        rmia_score(prob, **kwargs)
