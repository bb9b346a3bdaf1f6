"""No leakage claimed on null data, for the score shapes users bring, with the default options (issue 23).

The corpus (:mod:`dpaudit.mia.simulate.shapes`): Gaussian, Student-t₃, log-normal, discrete/tied,
constant records, 5 % of scores saturated at the cap (708.4), a mixture with 5 % vulnerable records,
unequal IN/OUT variances, a random forest's vote shares; M from 16 to 1,024; α from 0.05 to 0.001;
each null = membership permuted within records. On every one:

* every rule's TPR lies within its bootstrap CI's full width of its own realised FPR, above and
  below — no exemption for small M (balanced references, :mod:`dpaudit.mia.references`, remove the
  one-score-fewer deficit of plain leave-one-out); the parametric rule, which has no realised FPR,
  either is marked not valid (its Gaussian check failed) or lies within its CI width of the interval
  between α and its t thresholds' own leave-one-out FPR;
* every ε lower bound is 0, and no verdict says "evidence of leakage";
* the rank test flags no record (or, in a few of the corpus's evaluations, one: the false discovery
  rate is 5 %);
* the Gaussian rules are marked not valid where their realised FPR is off α (Student-t₃, log-normal,
  saturated and forest scores at M ≥ 64), and a verdict never rests on a rule marked not valid unless
  its ε bound is above 0.

The before-state these tests replace (measured, ``experiments/mia_score_shapes.py``): with 5 % of the
scores saturated, M = 64, PP-t reported TPR 0.031 at realised FPR 0.023, ε ≥ 0.24 (α = 0.01); the
parametric rule 0.107 at α = 0.01 with no warning.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.simulate.shapes import SHAPES, shaped_scores
from dpaudit.mia.verdict import GAUSSIAN_RULES

#: (M, N+) of the corpus: targets per evaluation 64k–512k, so the suite spends ~20 s here.
SIZES = ((16, 4000), (64, 4000), (256, 1500), (1024, 500))
ALPHAS = (0.05, 0.01, 0.001)
N_BOOT = 60


def null_problems(report) -> list[str]:
    """Every way ``report`` (an evaluation of null data) claims a signal, as readable lines."""
    bad = []
    for row in report.rows:
        a = row.alpha
        for name, r in row.rules.items():
            if not r.estimable:
                continue
            width = r.ci[1] - r.ci[0]
            low = high = r.fpr
            if name == "per_record_parametric":
                if r.valid is False:
                    continue
                low, high = sorted((r.fpr, r.t_threshold_fpr_loo))
            if r.tpr > high + width or r.tpr < low - width:
                bad.append(f"α={a:g} {name}: TPR {r.tpr:.5g} vs FPR [{low:.5g}, {high:.5g}] (CI width {width:.3g})")
            if r.epsilon_lb not in (0.0, None):
                bad.append(f"α={a:g} {name}: ε ≥ {r.epsilon_lb:.3g} on null data")
        if row.verdict.kind == "leakage":
            bad.append(f"α={a:g}: verdict {row.verdict.text!r} on null data")
        if row.verdict.rule is not None:
            chosen = row.rules[row.verdict.rule]
            if chosen.valid is False and not chosen.epsilon_lb:
                bad.append(f"α={a:g}: the verdict rests on {row.verdict.rule}, not valid here")
    return bad


@pytest.fixture(scope="module")
def corpus():
    """Every (shape, M) null of the corpus, evaluated once with the default options."""
    out = {}
    for shape in SHAPES:
        for i, (m, n) in enumerate(SIZES):
            null = shaped_scores(shape, m, n, seed=100 + i).permuted(seed=200 + i)
            out[shape, m] = evaluate(null, fpr=ALPHAS, n_boot=N_BOOT, seed=1)
    return out


@pytest.mark.parametrize("shape", SHAPES)
def test_no_rule_claims_leakage_on_the_null_of_any_shape(corpus, shape):
    problems = {m: null_problems(corpus[shape, m]) for m, _ in SIZES}
    assert not any(problems.values()), {m: p for m, p in problems.items() if p}


def test_the_rank_test_flags_no_record_on_the_nulls(corpus):
    """BH at 5 %: on null data a flagged record is a false discovery, and an evaluation has one with
    probability at most 5 % (the corpus's 36 evaluations: at most a few)."""
    flagged = {key: rep.rows[0].vulnerable.standing_out for key, rep in corpus.items()}
    assert sum(v > 0 for v in flagged.values()) <= 3, {k: v for k, v in flagged.items() if v}
    assert max(flagged.values()) <= 2


@pytest.mark.parametrize("shape", ["student_t3", "lognormal", "saturated", "forest"])
def test_gaussian_rules_are_not_valid_where_their_fpr_is_off(corpus, shape):
    for m in (64, 256, 1024):
        for row in corpus[shape, m].rows:
            if row.alpha > 0.01:
                continue
            for name in ("pp_t", "per_record_parametric"):
                r = row.rules[name]
                assert r.valid is False and r.warning, (shape, m, row.alpha, name)
                if name == "pp_t" and not row.rules["pp_rank"].estimable:  # the verdict says why it is not used
                    assert row.verdict.notes and r.warning in row.verdict.notes[0]


def test_gaussian_rules_are_valid_on_gaussian_scores(corpus):
    """The check is not a blanket refusal: on Gaussian scores PP-t and the parametric rule pass it
    (M ≥ 64; at M = 16 the fitted sign lifts PP-t's FPR towards 1.5 α) and lead where the rank rule is
    not estimable."""
    for m in (64, 256, 1024):
        for row in corpus["gaussian", m].rows:
            for name in ("pp_t", "per_record_parametric"):
                assert row.rules[name].valid is True, (m, row.alpha, name, row.rules[name].warning)
            expected = "pp_rank" if row.rules["pp_rank"].estimable else "pp_t"
            assert row.verdict.rule == expected and row.verdict.kind == "no_evidence", (m, row.alpha)


def test_the_verdict_reads_not_estimable_where_no_rule_is_valid(corpus):
    row = corpus["saturated", 64].rows[1]  # α = 0.01, M = 64: the rank rule needs M ≥ 198
    assert row.verdict.kind == "not_estimable" and row.verdict.needs_models == 198
    assert row.verdict.text == "not estimable: needs M ≥ 198"
    assert "PP concat t is not calibrated for these scores" in row.verdict.notes[0]


@pytest.mark.parametrize("shape", ["gaussian", "saturated", "forest", "student_t3"])
def test_the_same_shapes_with_a_signal_are_caught(shape):
    """The control that would come out the other way: the same shapes with membership shifting the IN
    scores give "evidence of leakage" (the rank rule at M = 256, α = 0.05) and flag records."""
    scores = shaped_scores(shape, 256, 1500, seed=5, effect=1.0)
    row = evaluate(scores, fpr=(0.05,), n_boot=N_BOOT, seed=1).rows[0]
    assert row.verdict.kind == "leakage" and row.verdict.rule == "pp_rank", row.verdict.text
    assert row.vulnerable.standing_out > 0


def test_the_check_catches_the_old_fitted_sign():
    """The corpus check has teeth: plain leave-one-out references with the fitted sign (the code before
    this issue) claim leakage on the saturated null at M = 64."""
    null = shaped_scores("saturated", 64, 4000, seed=101).permuted(seed=201)
    old = evaluate(null, fpr=(0.01,), n_boot=N_BOOT, seed=1, references="loo")
    assert any("ε ≥" in p or "TPR" in p for p in null_problems(old))
    assert old.rows[0].rules["pp_t"].epsilon_lb > 0


def test_gaussian_rules_listed_are_the_ones_checked():
    assert set(GAUSSIAN_RULES) == {"pp_normal", "pp_t", "per_record_parametric"}
    assert np.isfinite(shaped_scores("forest", 16, 50, seed=0).score).all()
