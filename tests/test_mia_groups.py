"""Disparate vulnerability (:mod:`dpaudit.mia.groups`): checks that can fail.

* the groups' TPRs are the whole run's per-record estimates restricted to the groups (compared with an
  independent computation on each group's columns alone), and the permutation p-value with the exact
  one by full enumeration;
* null — no membership signal, membership permuted, or a signal independent of the groups, on the
  score shapes users bring (heavy tails, ties, saturated and forest-like scores) and with a tiny group:
  the test of equality rejects in at most 5 % of repeated seeded runs (plus Monte-Carlo slack), and the
  gap's interval covers the true gap 0;
* planted — one group's records more vulnerable (their scores shifted when IN): the gap is found, its
  interval covers the true gap (known in closed form for Gaussian scores), the test rejects.
"""

from __future__ import annotations

import html
import itertools
import json

import numpy as np
import pytest

from dpaudit import DataError
from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.group_results import Disparity
from dpaudit.mia.groups import (
    MIN_GROUP_RECORDS,
    PerRecordTPR,
    disparity,
    groups_of,
    permutation_pvalues,
)
from dpaudit.mia.per_record import empirical_per_record, parametric_per_record
from dpaudit.mia.results import MiaReport
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.simulate import gaussian_scores
from dpaudit.mia.simulate.shapes import shaped_scores

ALPHA = 0.1  # estimable by the empirical estimator from 9 OUT models per record
RUNS = 200
#: The most a level-5 % test may reject in RUNS independent runs: 5 % plus three binomial standard errors.
NULL_SLACK = 0.05 + 3 * np.sqrt(0.05 * 0.95 / RUNS)


def _labels(n: int, sizes: tuple[int, ...], seed: int) -> np.ndarray:
    """Group labels "g0", "g1", … of the given sizes (the rest in the last group), randomly assigned."""
    out = np.full(n, f"g{len(sizes)}", dtype=object)
    order = np.random.default_rng(seed).permutation(n)
    start = 0
    for i, size in enumerate(sizes):
        out[order[start:start + size]] = f"g{i}"
        start += size
    return out


def _claims(scores: ScoreSet, labels: np.ndarray, *, n_boot: int = 0, seed: int = 0) -> Disparity:
    tpr = empirical_per_record(scores.score, scores.keep, ALPHA).tpr
    assert tpr is not None
    return disparity([PerRecordTPR(ALPHA, "per_record_empirical", tpr)], groups_of("g", labels), n_permutations=199,
                     n_boot=n_boot, seed=seed)


# -- the computation against independent ones -------------------------------------------------------

def test_group_tprs_are_the_per_record_estimates_of_each_groups_own_columns() -> None:
    """Each group's TPR equals both estimators run on that group's columns alone (a record's estimate reads
    its own column only), and the overall TPR is the whole run's per-record TPR, to 1e-12."""
    sim = gaussian_scores(32, 300, seed=3).to_scoreset()
    labels = _labels(300, (40, 100), seed=1)
    report = evaluate(sim, fpr=(ALPHA, 0.01), n_boot=0, by=labels)
    d = report.disparity
    assert d is not None
    emp, par = d.rows
    assert (emp.rule, par.rule) == ("per_record_empirical", "per_record_parametric")
    assert emp.overall == pytest.approx(report.rows[0]["per_record_empirical"]["tpr"], abs=1e-12)
    assert par.overall == pytest.approx(report.rows[1]["per_record_parametric"]["tpr"], abs=1e-12)
    for g in emp.groups:
        mine = labels == g.group
        own = empirical_per_record(sim.score[:, mine], sim.keep[:, mine], ALPHA).tpr
        assert own is not None and g.n_records == mine.sum()
        assert g.tpr == pytest.approx(float(own.mean()), abs=1e-12)
    for g in par.groups:
        mine = labels == g.group
        own = parametric_per_record(sim.score[:, mine], sim.keep[:, mine], 0.01).tpr
        assert own is not None
        assert g.tpr == pytest.approx(float(own.mean()), abs=1e-12)
    assert [g.tpr for g in emp.groups] == sorted((g.tpr for g in emp.groups), reverse=True)
    assert emp.gap.gap == pytest.approx(emp.groups[0].tpr - emp.groups[-1].tpr, abs=1e-15)


def test_the_permutation_pvalue_matches_full_enumeration() -> None:
    """Two groups of 5: the 252 relabellings enumerated give the exact p-value of Welch's t²; the random
    permutations estimate it within 4 standard errors."""
    rng = np.random.default_rng(4)
    values = np.r_[rng.normal(0.0, 1.0, 5), rng.normal(1.2, 2.0, 5)]
    codes = np.repeat([0, 1], 5)

    def welch(c: np.ndarray) -> float:
        a, b = values[c == 0], values[c == 1]
        return float((a.mean() - b.mean()) ** 2 / (a.var(ddof=1) / a.size + b.var(ddof=1) / b.size))

    observed = welch(codes)
    stats = []
    for chosen in itertools.combinations(range(10), 5):
        c = np.ones(10, dtype=np.int64)
        c[list(chosen)] = 0
        stats.append(welch(c))
    exact = float(np.mean(np.array(stats) >= observed * (1 - 1e-9)))
    n = 20_000
    p, p_gap = permutation_pvalues(values[:, None], codes, 2, n, np.random.default_rng(5))
    assert abs(float(p[0]) - exact) < 4 * np.sqrt(exact * (1 - exact) / n) + 1 / n
    assert float(p_gap[0]) == pytest.approx(float(p[0]), abs=1e-12)  # two groups: the same test


# -- null: no gap claimed ---------------------------------------------------------------------------

@pytest.mark.parametrize(("case", "shape", "effect", "sizes"), [
    ("no signal", "gaussian", 0.0, (200,)),
    ("signal independent of the groups", "gaussian", 1.0, (150,)),
    ("heavy tails, membership permuted", "student_t3", 1.0, (200,)),
    ("ties, membership permuted", "tied", 1.0, (100, 100)),
    ("saturated, signal", "saturated", 1.0, (200,)),
    ("forest-like, membership permuted", "forest", 1.0, (200,)),
    ("tiny group", "gaussian", 1.0, (MIN_GROUP_RECORDS,)),
])
def test_null_rejects_at_most_five_percent(case: str, shape: str, effect: float, sizes: tuple[int, ...]) -> None:
    claimed = 0
    for seed in range(RUNS):
        scores = shaped_scores(shape, 24, 400, seed=seed, effect=effect)
        if "permuted" in case:
            scores = scores.permuted(seed=seed + 10_000)
        claimed += _claims(scores, _labels(400, sizes, seed=seed + 20_000), seed=seed).claimed
    assert claimed / RUNS <= NULL_SLACK, (case, claimed)


def test_null_gap_interval_covers_zero() -> None:
    """Membership permuted: the true gap is 0 and the records bootstrap interval covers it ≥ 95 % − slack (two
    groups: the interval of TPR(first) − TPR(last) covers 0 exactly when that of TPR(g0) − TPR(g1) does)."""
    runs, covered, claimed = 100, 0, 0
    for seed in range(runs):
        scores = shaped_scores("gaussian", 24, 400, seed=seed, effect=1.0).permuted(seed=seed + 1)
        d = _claims(scores, _labels(400, (120,), seed=seed), n_boot=200, seed=seed)
        ci = d.rows[0].gap.ci
        assert ci is not None
        covered += ci[0] <= 0 <= ci[1]
        claimed += d.claimed
    assert covered / runs >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / runs)
    assert claimed / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)


def test_weak_null_equal_means_unequal_spreads() -> None:
    """Every record's TPR has mean α under permuted membership, but constant-score records have TPR α exactly
    and the others spread around it: groups made of each (unequal spreads and sizes) have equal means, and the
    studentized test keeps its level."""
    claimed = 0
    for seed in range(RUNS):
        scores = shaped_scores("gaussian", 24, 400, seed=seed, effect=1.0).permuted(seed=seed + 1)
        score = np.array(scores.score)
        score[:, :60] = 0.0  # 60 records score the same under every model: their TPR is α exactly
        fixed = ScoreSet(score, scores.keep, train_size=200, pool_size=400)
        labels = np.where(np.arange(400) < 60, "constant", "varying").astype(object)
        labels[60:90] = "constant"  # the constant group also holds 30 varying records
        claimed += _claims(fixed, labels, seed=seed).claimed
    assert claimed / RUNS <= NULL_SLACK, claimed


# -- planted: the gap is found ----------------------------------------------------------------------

def test_planted_gap_found_with_its_true_value_covered() -> None:
    """Group "g0" (records 0–149) has standardised effect 2, the others 0.5 (Gaussian scores, so each
    record's true conformal-test TPR is known in closed form): the test rejects in every run and the gap's
    interval covers the true gap in ≥ 95 % − slack of the runs."""
    runs, rejected, covered = 40, 0, 0
    m, n_high, n_low = 24, 150, 250
    for seed in range(runs):
        high = gaussian_scores(m, n_high, seed=seed, effect=2.0)
        low = gaussian_scores(m, n_low, seed=seed + 1000, effect=0.5)
        truth = (high.true_tpr_of_test(ALPHA, "conformal", m // 2).mean()
                 - low.true_tpr_of_test(ALPHA, "conformal", m // 2).mean())
        scores = ScoreSet(np.hstack([high.score, low.score]), np.hstack([high.keep, low.keep]), train_size=200,
                          pool_size=400)
        labels = np.array(["g0"] * n_high + ["g1"] * n_low, dtype=object)
        d = _claims(scores, labels, n_boot=200, seed=seed)
        gap = d.rows[0].gap
        assert gap.high == "g0" and gap.ci is not None
        rejected += d.claimed
        covered += gap.ci[0] <= truth <= gap.ci[1]
    assert rejected == runs
    assert covered / runs >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / runs)


def test_planted_shift_of_one_groups_in_scores_is_found_by_evaluate() -> None:
    """A signal-free score set in which the IN scores of group "b"'s records are raised by 1.5 σ: evaluate's
    report names "b" first, claims a difference, and writes it to JSON and back."""
    scores = shaped_scores("student_t3", 32, 600, seed=7, effect=0.0)
    labels = _labels(600, (200,), seed=3)
    labels = np.where(labels == "g0", "b", "a").astype(object)
    score = np.array(scores.score)
    score[np.asarray(scores.keep) & (labels == "b")[None, :]] += 1.5
    planted = ScoreSet(score, scores.keep, train_size=300, pool_size=600)
    report = evaluate(planted, fpr=(ALPHA, 0.01), n_boot=50, by=labels)
    d = report.disparity
    assert d is not None and d.claimed and d.rows[0].groups[0].group == "b"
    assert d.answer.startswith("membership risk differs by group: TPR@10% ")
    again = MiaReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again.disparity == d
    text = str(report)
    assert d.answer in text and "gap b − a" in text
    page = report._repr_html_()
    assert 'id="disparity"' in page and "Membership risk by group" in page and "gap: b − a" in page
    assert html.escape(d.answer, quote=True) in page
    null = evaluate(scores, fpr=(ALPHA,), n_boot=0, by=labels).disparity
    assert null is not None and not null.claimed and null.answer.startswith("no difference in membership risk")


# -- refusals ----------------------------------------------------------------------------------------

def test_bad_groups_are_refused_with_what_to_do() -> None:
    sim = gaussian_scores(16, 100, seed=0).to_scoreset()
    with pytest.raises(DataError, match="group 'b' has 5 records; each group needs ≥ 20"):
        evaluate(sim, fpr=(ALPHA,), by=["a"] * 95 + ["b"] * 5)
    with pytest.raises(DataError, match="single group"):
        evaluate(sim, fpr=(ALPHA,), by=["a"] * 100)
    with pytest.raises(DataError, match="gives 99 group labels; the score set has 100 records"):
        evaluate(sim, fpr=(ALPHA,), by=["a", "b"] * 49 + ["a"])
    with pytest.raises(DataError, match="missing values"):
        evaluate(sim, fpr=(ALPHA,), by=["a", None] * 50)
    with pytest.raises(DataError, match="do not say which rows of which data"):
        evaluate(sim, fpr=(ALPHA,), by="sex")
