"""evaluate(): the three TPR rules against simulations with known truth; CLI for mia."""

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit import DPAuditError
from dpaudit._validation import CHOICE, NUMBER, WHOLE
from dpaudit.cli import app
from dpaudit.mia.evaluate import ATTACKS, FPR_FLOOR_HINT, MAX_BOOT, MIN_FPR, RULES, SIGNS, THRESHOLD_KINDS, evaluate
from dpaudit.mia.metrics.epsilon import DELTA_HINT
from dpaudit.mia.simulate import gaussian_scores


def scoreset(sim):
    return sim.to_scoreset()


@pytest.fixture(scope="module")
def large():
    sim = gaussian_scores(256, 6000, seed=11)
    return sim, evaluate(scoreset(sim), fpr=(0.1, 0.01), n_boot=60, seed=2)


def test_calibrated_rules_recover_the_true_mean_tpr(large):
    """PP concatenated (t) and both per-record estimators recover the true mean per-record TPR at M = 256.

    Tolerance: the estimates average over N+ = 6,000 records with heterogeneous TPR, so their
    sampling sd is ≈ sd(TPR_x)/√N+ ≈ 0.004, plus the threshold's own estimation error; we allow
    0.02 absolute (and check the bootstrap CI covers the truth with 0.01 slack: the oracle truth
    knows every record's parameters, the tests at n_out = 128 do not; tests/test_mia_per_record.py
    checks each estimator against the exact truth of its own finite-M test).
    """
    sim, rep = large
    for alpha, row in zip(rep.alphas, rep.rows):
        truth = sim.true_mean_tpr(alpha)
        for rule in ("pp_t", "per_record_empirical", "per_record_parametric"):
            assert row[rule]["tpr"] == pytest.approx(truth, abs=0.02), (alpha, rule)
            lo, hi = row[rule]["ci"]
            assert lo - 0.01 <= truth <= hi + 0.01, (alpha, rule)


def test_naive_concatenation_overestimates(large):
    sim, rep = large
    row = rep.rows[1]  # α = 0.01
    truth = sim.true_mean_tpr(0.01)
    assert row["naive"]["tpr"] > truth + 0.015
    assert row["naive"]["ci"][0] > truth  # the whole CI misses the truth
    # miscalibration evidence: per-record FPR under the one global threshold spreads far beyond α
    assert row["naive_per_record_fpr"]["max"] > 5 * 0.01
    assert row["naive_per_record_fpr"]["share_above_alpha"] > 0.1


def test_t_threshold_is_calibrated_where_normal_is_not():
    """Small M: the N(0,1) threshold's realised FPR exceeds α; Student-t's is within sampling error."""
    sim = gaussian_scores(16, 20000, seed=5)
    rep = evaluate(scoreset(sim), fpr=(0.01,), n_boot=0)
    row = rep.rows[0]
    n_neg = int((~sim.keep).sum())
    se = np.sqrt(0.01 * 0.99 / n_neg)
    assert row["pp_normal"]["fpr"] > 0.01 + 10 * se  # N(0,1) ignores the fit's own noise
    # the fitted sign(Δ) shares μ_out with the standardisation: a small excess at M = 16 ...
    assert abs(row["pp_t"]["fpr"] - 0.01) < 0.01 * 0.35
    assert row["pp_t"]["tpr"] < row["pp_normal"]["tpr"]
    # ... which the fixed sign removes: the t threshold's realised FPR is within sampling error of α
    positive = evaluate(scoreset(sim), fpr=(0.01,), n_boot=0, sign="positive").rows[0]
    assert abs(positive["pp_t"]["fpr"] - 0.01) < 3 * se
    assert positive["pp_normal"]["fpr"] > 0.01 + 10 * se


def test_fpc_widens_the_fits_and_lowers_tpr(large):
    sim, rep = large
    with_fpc = evaluate(scoreset(sim), fpr=(0.01,), n_boot=0, fpc=True)
    assert with_fpc.options["fpc"] is True
    assert with_fpc.rows[0]["pp_t"]["tpr"] < rep.rows[1]["pp_t"]["tpr"]
    assert with_fpc.rows[0]["pp_t"]["fpr"] < rep.rows[1]["pp_t"]["fpr"]


def test_report_serialises_and_prints(large):
    _, rep = large
    d = rep.to_dict()
    assert d["alphas"] == [0.1, 0.01] and set(d["results"][0]) >= set(RULES) | {"naive_per_record_fpr"}
    for rule in RULES:
        entry = d["results"][0][rule]
        assert entry["estimable"] and {"tpr", "fpr", "ci", "epsilon_lb", "epsilon_point"} <= set(entry)
    assert d["results"][0]["per_record_parametric"]["fpr_kind"] == "nominal"
    json.dumps(d, allow_nan=False, default=float)
    assert 0 <= d["diagnostics"]["share_non_normal"] <= 0.05  # Gaussian simulation
    text = str(rep)
    assert "PP concat t" in text and "per-record FPR max" in text and "per-record empirical" in text
    assert "ε ≥ (95%)" in text and "inf" not in text


@pytest.mark.parametrize("kwargs, message", [
    ({"fpr": (0.0,)}, NUMBER.format(name="fpr", bounds=f" >= {MIN_FPR:g} and < 1{FPR_FLOOR_HINT}", value=0.0)),
    ({"fpr": (1e-13,)}, NUMBER.format(name="fpr", bounds=f" >= {MIN_FPR:g} and < 1{FPR_FLOOR_HINT}", value=1e-13)),
    ({"threshold_kind": "z"}, CHOICE.format(name="threshold", choices=", ".join(THRESHOLD_KINDS), value="z")),
    ({"n_boot": -1}, WHOLE.format(name="n_boot", bounds=f" >= 0 and <= {MAX_BOOT}", value=-1)),
    ({"sign": "negative"}, CHOICE.format(name="sign", choices=", ".join(SIGNS), value="negative")),
    ({"attack": "magic"}, CHOICE.format(name="attack", choices=", ".join(ATTACKS), value="magic")),
    ({"delta": 1.0}, NUMBER.format(name="delta", bounds=f" >= 0 and < 1{DELTA_HINT}", value=1.0)),
])
def test_bad_options(kwargs, message):
    sim = gaussian_scores(8, 50, seed=0)
    with pytest.raises(DPAuditError, match=re.escape(message)):
        evaluate(scoreset(sim), **kwargs)


def test_cli_simulate_evaluate_roundtrip(tmp_path):
    runner = CliRunner()
    out = tmp_path / "s.npz"
    sim = runner.invoke(app, ["mia", "simulate", "calibration", "--models", "32", "--records", "300",
                              "--fpr", "0.1", "--out", str(out), "--json"])
    assert sim.exit_code == 0, sim.output
    doc = json.loads(sim.stdout)
    truth = doc["true_mean_tpr"]["0.1"]
    assert 0 < truth["t_test"] < truth["oracle"] and truth["conformal_test"] > 0 and out.is_file()
    row = doc["evaluation"]["results"][0]
    assert row["per_record_parametric"]["tpr"] == pytest.approx(truth["t_test"], abs=0.05)
    ev = runner.invoke(app, ["mia", "evaluate", str(out), "--fpr", "0.1", "--n-boot", "10", "--json"])
    assert ev.exit_code == 0, ev.output
    rep = json.loads(ev.stdout)
    assert rep["n_models"] == 32 and rep["results"][0]["naive"]["ci"][0] <= rep["results"][0]["naive"]["tpr"]
    table = runner.invoke(app, ["mia", "evaluate", str(out), "--fpr", "0.1", "--n-boot", "0", "--fpc"])
    assert table.exit_code == 0 and "FPC on" in table.stdout
    fpc = runner.invoke(app, ["mia", "simulate", "fpc", "--repeats", "3", "--models", "16", "--json"])
    assert fpc.exit_code == 0 and json.loads(fpc.stdout)["sqrt_fpc"] == pytest.approx(np.sqrt(0.5))


def test_cli_errors(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["mia", "evaluate", str(tmp_path / "nope.npz")])
    assert missing.exit_code == 2 and "no such score file" in missing.stderr
    bad = runner.invoke(app, ["mia", "simulate", "other"])
    assert bad.exit_code == 2 and CHOICE.format(name="simulation", choices="calibration, fpc", value="other") in bad.stderr
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    junk = runner.invoke(app, ["mia", "evaluate", str(tmp_path / "junk.npz")])
    assert junk.exit_code == 2 and junk.stderr.startswith("dpaudit: error:")


def test_cli_options_reach_the_report(tmp_path):
    runner = CliRunner()
    out = tmp_path / "s.npz"
    assert runner.invoke(app, ["mia", "simulate", "calibration", "--models", "16", "--records", "200",
                               "--out", str(out)]).exit_code == 0
    ev = runner.invoke(app, ["mia", "evaluate", str(out), "--fpr", "0.1", "--n-boot", "0", "--threshold", "normal",
                             "--strict", "--sign", "positive", "--attack", "rmia", "--json"])
    assert ev.exit_code == 0, ev.output
    options = json.loads(ev.stdout)["options"]
    assert options["threshold"] == "normal" and options["strict"] is True and options["sign"] == "positive"
    assert options["attack"] == "rmia" and options["attack_options"]["gamma"] == 1.0
    bad = runner.invoke(app, ["mia", "evaluate", str(out), "--attack", "magic"])
    assert bad.exit_code == 2 and CHOICE.format(name="attack", choices=", ".join(ATTACKS), value="magic") in bad.stderr
    fpc = runner.invoke(app, ["mia", "simulate", "fpc", "--pool", "400", "--train", "100", "--models", "16",
                              "--repeats", "2", "--design", "subsets", "--json"])
    doc = json.loads(fpc.stdout)
    assert doc["pool_size"] == 400 and doc["train_size"] == 100 and doc["sqrt_fpc"] == pytest.approx(np.sqrt(0.75))


def test_cli_train_then_evaluate_run_directory(tmp_path, adult_available):
    pytest.importorskip("sklearn", reason="scikit-learn is the 'mia' extra")
    runner = CliRunner()
    run_dir = tmp_path / "run"
    trained = runner.invoke(app, ["mia", "train", str(run_dir), "--models", "6", "--pool", "120", "--no-progress"])
    assert trained.exit_code == 0, trained.output
    ev = runner.invoke(app, ["mia", "evaluate", str(run_dir), "--fpr", "0.2", "--n-boot", "0", "--json"])
    assert ev.exit_code == 0, ev.output and json.loads(ev.stdout)["n_models"] == 6
    again = runner.invoke(app, ["mia", "train", str(run_dir), "--models", "6", "--pool", "120", "--no-progress"])
    assert again.exit_code == 2 and "is not empty" in again.stderr
    other = runner.invoke(app, ["mia", "train", str(run_dir), "--models", "6", "--pool", "120", "--no-progress",
                                "--resume", "--trainer", "per-model"])
    assert other.exit_code == 2 and "differs in: trainer" in other.stderr
    wrong = runner.invoke(app, ["mia", "train", str(tmp_path / "mlp"), "--models", "6", "--pool", "120",
                                "--model", "mlp", "--trainer", "batched"])
    assert wrong.exit_code == 2 and "fits logistic regression only" in wrong.stderr
    assert not (tmp_path / "mlp").exists()


def test_report_round_trips_through_json(large):
    from dpaudit.report.json import read_json, render_json

    _, rep = large
    back = read_json(render_json(rep))
    assert back.to_dict() == json.loads(render_json(rep)) and str(back) == str(rep)
    assert back.rows[1].rules["pp_t"] == rep.rows[1].rules["pp_t"]
