"""plot_0 (experiments/unfairness/models.py, plot0.py) and exp8 (complexity.py): the claims against their
controls, the paper's values beside ours, and the statistics on planted and null data."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from tests.unfairness_study import study_modules

pytest.importorskip("matplotlib")
pytest.importorskip("scipy")

DPSGD = importlib.util.find_spec("opacus") is not None
needs_dpsgd = pytest.mark.skipif(not DPSGD, reason="DP-SGD needs Opacus: pip install -e '.[experiments]' "
                                 "(after a CPU torch)")


@pytest.fixture(scope="module")
def study():
    with study_modules("common", "complexity", "models", "paper", "plot0") as modules:
        yield modules


def _rows(datasets, tvd, null, gaps, kinds, seeds=20):
    """Rows of criteria; ``null``: per criterion the shuffled-data value (one number: every shuffle gives
    it) or a list with one value per shuffle."""
    rows = []
    for d, t, n, g, k in zip(datasets, tvd, null, gaps, kinds):
        draws = list(n) if isinstance(n, (list, tuple, np.ndarray)) else [n] * seeds
        row = {"dataset": d, "outcome_type": k, "data_tvd_value": t, "data_tc_observed_value": 2 * t,
               "null_tvd_seeds": draws, "null_tc_observed_seeds": [2 * v for v in draws],
               "null_tvd": float(np.mean(draws)), "null_tc_observed": 2 * float(np.mean(draws)),
               "data_repair_ci": 100 * t, "test_dp_gap": g}
        for m in ("dp_forest", "dp_sgd", "forest"):
            row[f"{m}_dp_gap"] = g
        rows.append(row)
    return rows


def _result(models, rows):
    return {"rows": rows, "paper_rows": [], "summary": {"spearman": models.correlations(rows, 0),
                                                        "paper_configuration": {"ran": False}}}


def test_spearman_interval_equals_resampling_one_by_one(study):
    """The vectorised bootstrap draws the same resamples as a loop over them from the same seed."""
    common = study["common"]

    def looped(x, y, boots, seed):
        xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        rng, rhos = np.random.default_rng(seed), []
        for _ in range(boots):
            pick = rng.integers(0, len(xs), len(xs))
            rho = common.spearman(xs[pick], ys[pick])
            if math.isfinite(rho):
                rhos.append(rho)
        return float(np.percentile(rhos, 2.5)), float(np.percentile(rhos, 97.5))

    rng = np.random.default_rng(1)
    for n in (3, 4, 9, 21):
        x, y = rng.random(n), rng.random(n)
        x[0] = x[1]  # ties
        assert common.spearman_interval(x, y, seed=4, boots=500) == pytest.approx(looped(x, y, 500, 4), abs=1e-12)
    assert all(math.isnan(v) for v in common.spearman_interval([1, 1, 1], [1, 2, 3]))


def test_planted_ranking_is_reproduced_and_its_control_is_not(study):
    """Planted: gaps rise with U_MI^TVD, the shuffled-data measure is noise → reproduced. The control in
    place of the data (the measure on shuffled data ranks the gaps as well as the real one) → never
    reproduced."""
    models = study["models"]
    n = 16  # 8 criteria per outcome type: a noise ranking rarely reaches ρ = 0.8 (with 4, 1 in 6 does)
    gaps = list(np.linspace(0.01, 0.4, n))
    tvd = list(np.linspace(0.001, 0.05, n))
    rng = np.random.default_rng(0)
    null = [list(v) for v in rng.uniform(1e-4, 2e-4, (n, study["models"].NULL_SEEDS))]  # noise, per shuffle
    datasets = ["adult", "compas", "census", "healthcare"] * 4
    kinds = ["binary", "multi-class"] * 8
    planted = models.claims(_result(models, _rows(datasets, tvd, null, gaps, kinds)))
    judged = [c for c in planted if c["verdict"] != "measured"]
    assert len(judged) == 8 and all(c["verdict"] in ("reproduced", "differs") for c in judged)
    assert any(c["verdict"] == "reproduced" for c in judged)
    # the control in place of the data: the shuffled-data measure equals the real one
    control = models.claims(_result(models, _rows(datasets, tvd, tvd, gaps, kinds)))
    assert not any(c["verdict"] == "reproduced" for c in control)


def test_noise_gaps_are_not_reproduced(study):
    """Model gaps that are pure noise, measures that are noise too, 4 criteria per outcome type (ρ takes
    multiples of 0.2): the control (20 shuffles; the data's ρ must reach the rule and beat 95 % of them)
    keeps "reproduced" to the rare case where a noise ρ beats every shuffle — at most 2 of 50 datasets."""
    models = study["models"]
    datasets = ["adult", "compas", "census", "healthcare"] * 2
    kinds = ["binary"] * 4 + ["multi-class"] * 4
    reproduced = 0
    for seed in range(50):
        rng = np.random.default_rng(100 + seed)
        rows = _rows(datasets, list(rng.random(8)), [list(v) for v in rng.random((8, models.NULL_SEEDS))],
                     list(rng.random(8)), kinds)
        reproduced += any(c["verdict"] == "reproduced" for c in models.claims(_result(models, rows)))
    assert reproduced <= 2


def test_claims_judged_on_the_paper_datasets_only(study):
    """Extras never enter the judged ρ: with every criterion from an extra dataset the claims are "not run"."""
    models = study["models"]
    rows = _rows(["credit", "cps1988", "cpssw8", "compas-two-years"], [0.1, 0.2, 0.3, 0.4], [0.2, 0.1, 0.4, 0.3],
                 [0.1, 0.2, 0.3, 0.4], ["binary"] * 4)
    judged = [c for c in models.claims(_result(models, rows)) if c["verdict"] != "measured"]
    assert judged and all(c["verdict"] == "not run" for c in judged)


def test_gap_of_planted_and_null(study):
    gap_of = study["models"].gap_of
    p = np.repeat([0, 1], 500)
    planted = np.where(p == 0, np.arange(1000) % 10 < 8, np.arange(1000) % 10 < 3).astype(int)  # 0.8 vs 0.3
    a = np.zeros(1000, dtype=int)
    assert gap_of(a, p, planted, (1, 2, 2)) == pytest.approx(0.5)
    null = (np.arange(1000) % 2).astype(int)  # 0.5 in both groups
    assert gap_of(a, p, null, (1, 2, 2)) == pytest.approx(0.0, abs=1e-12)
    # conditional, the paper's formula (min_group=1): test-size-weighted mean of the within-a gaps
    a2 = np.repeat([0, 1], 500)
    p2 = np.tile(np.repeat([0, 1], 250), 2)
    labels = np.concatenate([np.repeat([1, 0], 250), np.full(500, 1)])  # block 0 gap 1, block 1 gap 0
    assert gap_of(a2, p2, labels, (2, 2, 2), min_group=1) == pytest.approx(0.5)


def test_paper_configuration_sets_plot0_beside_ours(study, data_root, monkeypatch):
    """The paper-value columns are paper.PLOT0's; with a constant predictor every gap is 0 (known truth)
    and the difference is −paper."""
    common, plot0, paper, models = study["common"], study["plot0"], study["paper"], study["models"]

    def constant(key, x, y, seed, epochs):
        return lambda xs: np.zeros(len(xs), dtype=int)

    monkeypatch.setattr(plot0, "fit", constant)
    rows = plot0.paper_configuration(common.Config(out=Path("."), quick=True, datasets=("adult",)))
    assert [r["criterion"] for r in rows] == list(paper.CRITERIA["adult"])
    for i, r in enumerate(rows):
        assert r["paper_tvd"] == paper.PLOT0["tvd"][i] and r["paper_tc"] == paper.PLOT0["tc"][i]
        assert r["paper_dp_forest_gap"] == paper.PLOT0["dp_forest_gap"][i]
        assert r["paper_dp_network_gap"] == paper.PLOT0["dp_network_gap"][i]
        assert r["dp_forest_gap"] == 0.0 and r["dp_forest_gap_difference"] == -paper.PLOT0["dp_forest_gap"][i]
        assert 0.6 < r["dp_network_accuracy"] < 0.9  # the share of income ≤ 50K
        assert 0 < r["tvd"] < 0.1
    result = {"rows": [], "paper_rows": rows, "summary": {"spearman": models.correlations([], 0),
                                                          "paper_configuration": plot0.config_summary(
                                                              common.Config(out=Path("."), quick=True), True)}}
    (_, shown, columns) = models.tables(result)[-1]
    assert shown is rows and ("paper_dp_network_gap", "paper") in columns
    texts = [c for c in plot0.claims(result)]
    assert all(c["verdict"] == "measured" for c in texts)
    assert "0.87" in texts[1]["paper"] and texts[0]["paper"].startswith("0.12")


def test_complexity_rows_and_measurements(study, data_root, monkeypatch, tmp_path):
    """exp8 covers 1–5 trees / layers for each family; a constant predictor has gap 0 (known truth); its
    claims are measurements (the paper states none), so none can come out "reproduced"."""
    common, complexity = study["common"], study["complexity"]
    monkeypatch.setattr(complexity, "fit", lambda family, level, x, y, seed, epochs: (lambda xs: np.zeros(len(xs))))
    result = complexity.run(common.Config(out=tmp_path, quick=True))
    assert [(r["model"], r["complexity"]) for r in result["rows"]] == [
        (f, c) for f in complexity.FAMILIES for c in complexity.LEVELS]
    assert all(r["gap"] == 0.0 and r["splits"] == complexity.QUICK_REPS for r in result["rows"])
    assert (tmp_path / "complexity.png").is_file()
    assert all(c["verdict"] == "measured" for c in complexity.claims(result))


def test_dp_models_find_a_planted_gap_and_no_gap_in_null_data(study):
    """A DP forest (ε = 10) trained on data whose label is the protected bit (planted gap 1) predicts with
    a large gap; on labels independent of it, a small one."""
    models = study["models"]
    import trainers  # on sys.path through the study fixture

    rng = np.random.default_rng(0)
    n = 4000
    p = rng.integers(0, 2, n)
    x = np.column_stack([p, rng.random(n), rng.random(n)]).astype(float)
    a = np.zeros(n, dtype=int)
    for labels, low, high in ((p, 0.6, 1.0), (rng.integers(0, 2, n), 0.0, 0.15)):
        predict = trainers.dp_forest(x[:3000], labels[:3000], 2, 0, trees=10, depth=4)
        gap = models.gap_of(a[3000:], p[3000:], np.asarray(predict(x[3000:]), dtype=int), (1, 2, 2))
        assert low <= gap <= high
    if DPSGD:
        predict = trainers.dp_network(x[:3000], p[:3000], 2, 0, epochs=3)
        gap = models.gap_of(a[3000:], p[3000:], np.asarray(predict(x[3000:])), (1, 2, 2))
        assert gap > 0.6
