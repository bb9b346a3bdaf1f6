"""The DP-claim audit (:mod:`dpaudit.mia.claim.audit`, ``dpaudit mia audit-dp``): design, features, verdicts.

Small and fast: 2,000 rows of Adult, m = 200 canaries, one model unless stated.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpaudit import datasets
from dpaudit._errors import DataError
from dpaudit.cli import app
from dpaudit.mia.claim.audit import audit_dp, design, design_seed, load_data
from dpaudit.mia.claim.features import unit_features
from dpaudit.mia.dp_audit import epsilon_lower_bound_one_run
from dpaudit.mia.dp_audit_fdp import epsilon_lower_bound_one_run_fdp
from dpaudit.schema import Binned, Categorical, Schema

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "docs" / "schema" / "dpaudit-dp-claim-1.json"


def memorizer(epsilon: float, delta: float):
    """A user factory that ignores its claim: 1-nearest-neighbour, which memorises every training record."""
    from sklearn.neighbors import KNeighborsClassifier

    return KNeighborsClassifier(n_neighbors=1)


class PlainNearestNeighbour:
    """A classifier that is not a scikit-learn estimator: fit and predict_proba only (1-NN, memorising)."""

    def fit(self, X, y):
        self.X, self.y = np.asarray(X), np.asarray(y)
        return self

    def predict_proba(self, X):
        nearest = self.y[np.argmin(((np.asarray(X)[:, None, :] - self.X[None]) ** 2).sum(-1), axis=1)]
        p = np.where(nearest == 1, 0.999, 0.001)
        return np.column_stack([1 - p, p])


def plain_memorizer(epsilon: float, delta: float):
    return PlainNearestNeighbour()


@pytest.fixture(scope="module")
def adult():
    """2,000 rows of Adult (its task's columns) and the declared schema of those columns."""
    frame, schema = datasets.load("adult")
    task = datasets.task("adult")
    cols = [*task.categorical, *task.numeric, task.label]
    return frame.sample(2000, random_state=0)[cols].reset_index(drop=True), Schema({c: schema[c] for c in cols})


def _audit(adult, **kw):
    frame, schema = adult
    kw = {"epsilon": 1.0, "m": 200, "seed": 0, "contrast": False, **kw}
    return audit_dp(frame, label="income", schema=schema, **kw)


# -- features ---------------------------------------------------------------------------------------


def test_features_are_in_the_unit_ball_and_scaled_to_the_declared_bounds_only():
    schema = Schema({"s": Categorical(["F", "M", "X"]), "age": Binned([0, 50, 100]), "y": Categorical([0, 1])})
    frame = pd.DataFrame({"s": ["F", "M", "F"], "age": [10.0, 20.0, 250.0], "y": [0, 1, 1]})
    X = unit_features(frame, ["s", "age"], schema)
    k = math.sqrt(2)
    # one-hot over the declared domain (X never occurs), age/100 clipped to [0, 1], all / sqrt(2)
    expect = np.array([[1, 0, 0, 0.1], [0, 1, 0, 0.2], [1, 0, 0, 1.0]]) / k
    np.testing.assert_allclose(X, expect, rtol=0, atol=1e-15)
    assert np.linalg.norm(X, axis=1).max() <= 1.0
    # the observed maximum (250, or 20 without the last row) never sets the scale
    np.testing.assert_allclose(unit_features(frame.iloc[:2], ["s", "age"], schema), expect[:2], atol=1e-15)


def test_adult_features_have_row_norm_at_most_one(adult):
    td, schema = load_data(adult[0], label="income", schema=adult[1])
    X = unit_features(td.frame, td.categorical + td.numeric, schema)
    assert X.shape == (2000, 220)
    assert np.linalg.norm(X, axis=1).max() <= 1.0 + 1e-12
    assert X.min() >= 0.0


def test_an_open_ended_bin_is_clipped_to_its_finite_edge():
    schema = Schema({"age": Binned([17, 70, float("inf")])})
    X = unit_features(pd.DataFrame({"age": [17, 43.5, 90]}), ["age"], schema)
    np.testing.assert_allclose(X[:, 0], [0.0, 0.5, 1.0])


@pytest.mark.parametrize("edges", [[float("-inf"), float("inf")], [float("-inf"), 0, float("inf")]])
def test_a_numeric_column_without_declared_bounds_is_refused(edges):
    schema = Schema({"x": Binned(edges)})
    with pytest.raises(DataError, match="declares no range.*declare at least two finite bin edges"):
        unit_features(pd.DataFrame({"x": [1.0, 2.0]}), ["x"], schema)


def test_data_without_a_schema_is_refused(adult):
    with pytest.raises(DataError, match="never to the data's: pass a schema"):
        audit_dp(adult[0], label="income", epsilon=1.0, m=10)


def test_a_value_outside_a_categorical_domain_is_refused():
    with pytest.raises(DataError, match="outside its declared domain"):
        unit_features(pd.DataFrame({"s": ["F", "Q"]}), ["s"], Schema({"s": Categorical(["F", "M"])}))


# -- design -----------------------------------------------------------------------------------------


def test_canaries_are_disjoint_from_the_base_set_and_included_with_probability_half(adult):
    td, schema = load_data(adult[0], label="income", schema=adult[1])
    X = unit_features(td.frame, td.categorical + td.numeric, schema)
    y = td.labels()
    c, keep, masks = design(X, y, "mislabelled", 1000, 40, seed=3)
    assert not keep[c.source_rows].any() and keep.sum() == len(y) - 1000
    np.testing.assert_array_equal(c.X, X[c.source_rows])
    np.testing.assert_array_equal(c.y, 1 - y[c.source_rows])
    # 40,000 Bernoulli(1/2) draws: the share within 4 standard errors (0.0025) of 1/2; models differ
    assert abs(masks.mean() - 0.5) < 0.01
    assert masks.shape == (40, 1000) and len({r.tobytes() for r in masks}) == 40
    again = design(X, y, "mislabelled", 1000, 40, seed=3)
    np.testing.assert_array_equal(again[2], masks)
    np.testing.assert_array_equal(again[0].source_rows, c.source_rows)


def test_a_rerun_is_bit_identical_and_another_seed_is_not(adult):
    a = _audit(adult, models=4, contrast=True)
    b = _audit(adult, models=4, contrast=True)
    assert json.dumps(a.to_dict()) == json.dumps(b.to_dict())
    assert _audit(adult, seed=1).included != a.included[:1]


def test_the_one_run_bound_is_the_bound_of_model_0s_canary_scores(adult):
    """Independent recomputation: fit the learner on the design by hand, bound the scores directly."""
    from threadpoolctl import threadpool_limits

    from dpaudit.mia.claim.learners import resolve_learner
    from dpaudit.mia.train.models import model_seed

    r = _audit(adult, learner="logreg", canaries="ood")
    td, schema = load_data(adult[0], label="income", schema=adult[1])
    X = unit_features(td.frame, td.categorical + td.numeric, schema)
    y = td.labels()
    c, keep, masks = design(X, y, "ood", 200, 1, seed=0)
    inc = masks[0]
    clf = resolve_learner("logreg").build(1.0, 1e-5, model_seed(0, 0))
    with threadpool_limits(limits=1):  # as the audit fits: one BLAS thread, so the same floating-point sums
        clf.fit(np.vstack([X[keep], c.X[inc]]), np.concatenate([y[keep], c.y[inc]]))
    z = clf.decision_function(c.X)
    phi = np.where(c.y == 1, z, -z)
    level = 0.95  # one bound in the verdict (one-run); the f-DP one is shown at the same level
    phi = phi - np.median(phi)  # each model's scores centred on their median (a shift: M = 1)
    grid = {"strategy": "grid", "seed": design_seed(0, 3)}
    assert r.bounds["one-run"] == epsilon_lower_bound_one_run(phi[inc], phi[~inc], delta=1e-5, confidence=level,
                                                              **grid)
    assert r.bounds["one-run f-DP"] == epsilon_lower_bound_one_run_fdp(phi[inc], phi[~inc], delta=1e-5,
                                                                        confidence=level, **grid)
    assert r.included == (int(inc.sum()),)


# -- verdicts ---------------------------------------------------------------------------------------


def test_dp_logreg_at_epsilon_1_is_consistent(adult):
    r = _audit(adult, learner="dp-logreg", contrast=True)
    assert not r.verdict.violated
    assert all(b.epsilon <= 1.0 for b in r.bounds.values())
    assert r.contrast_learner == "logreg" and set(r.contrast_bounds) == set(r.bounds)
    assert r.headline().startswith("claim consistent: the strongest bound ε ≥ ")


def test_a_memorising_user_factory_violates_its_claim(adult):
    """1-NN claims ε = 1 and memorises: every included mislabelled canary scores +36.7 (an excluded one too
    when an included canary duplicates it), the bound exceeds the claim."""
    r = _audit(adult, learner="tests.test_audit_dp:memorizer")
    assert r.learner == "tests.test_audit_dp:memorizer"
    assert r.bounds["one-run"].epsilon > 1.0  # 1.23 at seed 0: 104 of the 121 canaries at +36.7 are in
    assert r.bounds["one-run f-DP"].epsilon > r.bounds["one-run"].epsilon  # 2.13: the tighter bound
    assert r.verdict.violated and r.headline().startswith("claim violated: ε ≥ ")
    assert r.contrast_bounds is None  # a user factory has no counterpart unless one is named


def test_a_user_classifier_that_is_not_a_sklearn_estimator_is_audited(adult):
    """Scored from its predict_proba alone (before: sklearn's Pipeline asked it for __sklearn_tags__ and failed)."""
    r = _audit(adult, learner="tests.test_audit_dp:plain_memorizer")
    assert r.bounds["one-run"].epsilon > 0.5  # 0.94 at seed 0: it memorises


def test_the_command_takes_a_named_contrast_and_refuses_it_with_no_contrast(adult_files):
    base = ["mia", "audit-dp", "--data", str(adult_files / "adult.csv"), "--label", "income", "--schema",
            str(adult_files / "schema.json"), "--epsilon", "1", "-m", "100"]
    result = CliRunner().invoke(app, [*base, "--contrast", "tests.test_audit_dp:memorizer"])
    assert result.exit_code == 0, result.output
    assert "non-private (tests.test_audit_dp:memorizer): ε ≥ " in result.output
    both = CliRunner().invoke(app, [*base, "--contrast", "logreg", "--no-contrast"])
    assert both.exit_code == 2 and "contradict" in both.output and "Traceback" not in both.output


def test_a_named_contrast_and_the_multi_run_bound(adult):
    r = _audit(adult, learner="dp-logreg", models=4, m=100, contrast="tests.test_audit_dp:memorizer")
    assert list(r.bounds) == ["one-run", "one-run f-DP", "multi-run"]
    # the verdict at 95 %: its two bounds (one-run, multi-run) each at 1 − 0.05/2; f-DP shown at that level
    assert all(b.confidence == pytest.approx(1 - 0.05 / 2) for b in r.bounds.values())
    assert r.verdict.confidence == pytest.approx(0.95)
    assert 0 <= r.multi_run_canary < 100 and len(r.included) == 4
    assert r.contrast_learner == "tests.test_audit_dp:memorizer"
    assert list(r.contrast_bounds) == list(r.bounds)
    assert r.contrast_bounds["one-run"].epsilon > 0.5 > r.bounds["one-run"].epsilon


def test_the_report_gives_the_answer_first_then_the_table_then_the_contrast(adult):
    text = str(_audit(adult, contrast=True))
    lines = text.splitlines()
    assert lines[0].startswith("claim consistent")
    head = next(i for i, ln in enumerate(lines) if "ε lower bound" in ln)
    assert "confidence" in lines[head] and "correct/guesses" in lines[head] and "threshold" in lines[head]
    assert lines[head + 1].split()[0] == "one-run"
    assert any(ln.strip().startswith("non-private (logreg): ε ≥") for ln in lines[head:])


def test_the_json_document_validates_against_the_published_schema(adult):
    from dpaudit.report.json import render_json

    doc = json.loads(render_json(_audit(adult, models=4, m=50, contrast=True)))
    jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text("utf-8"))).validate(doc)
    assert doc["verdict"]["violated"] is False and doc["bounds"]["one-run"]["method"] == "one-run"


# -- the command ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult_files(adult, tmp_path_factory):
    folder = tmp_path_factory.mktemp("adult")
    frame, schema = adult
    frame.to_csv(folder / "adult.csv", index=False)
    schema.to_json(folder / "schema.json")
    return folder


@pytest.mark.parametrize("suffix", [".json", ".html", ".txt", ".md"])
def test_the_command_end_to_end_in_each_output_format(adult, adult_files, tmp_path, suffix):
    out = tmp_path / f"report{suffix}"
    argv = ["mia", "audit-dp", "--data", str(adult_files / "adult.csv"), "--label", "income", "--schema",
            str(adult_files / "schema.json"), "--epsilon", "1", "-m", "200", "--no-contrast", "-o", str(out)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("claim consistent")
    assert f"wrote {out}" in result.output
    text = out.read_text("utf-8")
    expect = _audit(adult)  # the same audit in Python: the file holds its numbers
    if suffix == ".json":
        doc = json.loads(text)
        assert doc["bounds"] == {k: b.to_dict() for k, b in expect.bounds.items()}
        assert doc["data"] == "adult.csv"
    elif suffix == ".html":
        assert text.startswith("<!DOCTYPE html>") and "claim consistent" in text and "ε lower bounds" in text
    else:
        assert expect.headline() in text and ("```text" in text) == (suffix == ".md")


def test_the_command_reads_per_record_vulnerabilities(adult_files, tmp_path):
    v = np.zeros(2000)
    v[[5, 17, 99]] = [3.0, 2.0, 1.0]
    pd.DataFrame({"row": np.arange(2000), "vulnerability": v}).to_csv(tmp_path / "v.csv", index=False)
    out = tmp_path / "r.json"
    argv = ["mia", "audit-dp", "--data", str(adult_files / "adult.csv"), "--label", "income", "--schema",
            str(adult_files / "schema.json"), "--epsilon", "1", "-m", "3", "--canaries", "vulnerable",
            "--vulnerability", str(tmp_path / "v.csv"), "--no-contrast", "-o", str(out)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["canaries"] == "vulnerable"


def test_with_m_models_the_bounds_pool_all_pairs_and_split_the_models(adult):
    """Recomputed from the scores: one-run over all M·m centred pairs; multi-run: the canary and threshold of the
    largest bound on one half of the models, that canary bounded at that threshold on the other half."""
    from dpaudit.mia.claim.audit import canary_scores_of
    from dpaudit.mia.claim.learners import resolve_learner
    from dpaudit.mia.dp_audit_multi import _at, _best

    r = _audit(adult, learner="tests.test_audit_dp:memorizer", models=60, m=10)
    td, schema = load_data(adult[0], label="income", schema=adult[1])
    X = unit_features(td.frame, td.categorical + td.numeric, schema)
    y = td.labels()
    c, keep, masks = design(X, y, "mislabelled", 10, 60, seed=0)
    scores = canary_scores_of(resolve_learner("tests.test_audit_dp:memorizer"), 1.0, 1e-5, (X[keep], y[keep]), c,
                              masks, 0, None)
    level = 1 - 0.05 / 2  # two bounds in the verdict
    z = scores - np.median(scores, axis=1, keepdims=True)
    assert r.bounds["one-run"] == epsilon_lower_bound_one_run(z[masks], z[~masks], delta=1e-5, confidence=level,
                                                              strategy="grid", seed=design_seed(0, 3))
    assert r.bounds["one-run"].n_canaries == 600
    perm = np.random.default_rng(design_seed(0, 4)).permutation(60)
    first, second = perm[:30], perm[30:]
    choice = [_best(z[first, i][masks[first, i]], z[first, i][~masks[first, i]], 1e-5, level, True)[0]
              if 0 < masks[first, i].sum() < 30 and 0 < masks[second, i].sum() < 30 else -1.0 for i in range(10)]
    i = int(np.argmax(choice))
    assert r.multi_run_canary == i
    b = r.bounds["multi-run"]
    zi, ki = z[second, i], masks[second, i]
    direction = _best(z[first, i][masks[first, i]], z[first, i][~masks[first, i]], 1e-5, level, True)[2]
    assert b.epsilon == _at(zi[ki], zi[~ki], b.threshold, direction, 1e-5, level)[0] > 0
    assert b.confidence == pytest.approx(level) and b.n_canaries == 30


@pytest.mark.parametrize("models", [2, 3])
def test_two_or_three_models_are_refused(adult, models):
    with pytest.raises(DataError, match="at least 4"):
        _audit(adult, models=models)


def test_parallel_fits_give_the_same_result_as_sequential_ones(adult):
    one = _audit(adult, models=4, m=50, n_jobs=1)
    two = _audit(adult, models=4, m=50, n_jobs=2)
    assert json.dumps(one.to_dict()) == json.dumps(two.to_dict())


# -- the design's power: orthogonal canaries, a small base set, and a report that says when it is blind ---------


def test_base_rows_draws_the_base_set_and_orthogonal_canaries_come_from_it(adult):
    from dpaudit.mia.claim.audit import base_sample

    td, schema = load_data(adult[0], label="income", schema=adult[1])
    X = unit_features(td.frame, td.categorical + td.numeric, schema)
    y = td.labels()
    c, keep, masks = design(X, y, "orthogonal", 100, 2, 0, base_rows=60)
    rows = base_sample(len(y), 60, 0)
    assert keep.sum() == 60 and np.array_equal(np.flatnonzero(keep), rows)
    assert np.array_equal(rows, base_sample(len(y), 60, 0)) and not np.array_equal(rows, base_sample(len(y), 60, 1))
    # 60 rows span at most 60 of the 220 directions: the first 100 canaries are orthogonal to every base row
    assert np.abs(X[keep] @ c.X.T).max() < 1e-9
    assert masks.shape == (2, 100)
    assert np.array_equal(base_sample(10, None, 0), np.arange(10)) and np.array_equal(base_sample(10, 50, 0), np.arange(10))


def test_orthogonal_canaries_on_a_small_base_set_expose_non_private_logreg_and_not_dp_logreg(adult):
    """The audit can come out either way on the same design: non-private logistic regression violates the
    claim ε = 1; diffprivlib's ε = 1 logistic regression stays consistent, and its report is not 'blind'."""
    r = _audit(adult, canaries="orthogonal", m=100, base_rows=100, contrast=True)
    assert r.base_rows == 100 and not r.verdict.violated
    assert max(b.epsilon for b in r.contrast_bounds.values()) > 1.0  # logreg: measured 1.5-2.5 on Adult
    assert not r.blind and "cannot tell" not in r.headline()
    np_ = _audit(adult, learner="logreg", canaries="orthogonal", m=100, base_rows=100)
    assert np_.verdict.violated and np_.headline().startswith("claim violated")


def test_a_design_that_cannot_see_a_non_private_model_says_so(adult):
    r = _audit(adult, canaries="mislabelled", contrast=True)  # logreg on mislabelled canaries: bound ≈ 0
    assert not r.verdict.violated and r.blind
    assert "cannot tell" in r.headline() and "orthogonal" in r.headline()
    assert r.to_dict()["base_rows"] == 2000 - 200


def test_the_f_dp_bound_is_shown_but_not_in_the_verdict(adult):
    """A correct pure ε-DP learner may exceed the Gaussian-DP reading of its claim, so the verdict rests on the
    bounds valid for every (ε, δ)-DP mechanism: a memoriser's f-DP bound alone does not decide it."""
    from dpaudit.mia.claim.result import NOT_IN_VERDICT
    from dpaudit.report.text_claim import FDP_NOTE

    r = _audit(adult, learner="tests.test_audit_dp:memorizer")
    assert NOT_IN_VERDICT == ("one-run f-DP",)
    assert r.verdict.method == "one-run" and r.verdict.epsilon == r.bounds["one-run"].epsilon
    assert FDP_NOTE in str(r)
