"""mia train on the user's own data and model: CSV/Parquet sources, factories, the Poisson design."""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpaudit._errors import DataError, DPAuditError
from dpaudit.cli import app
from dpaudit.mia.designs import poisson_keep
from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.per_record import models_for_every_record, parametric_per_record
from dpaudit.mia.train.data import from_file
from dpaudit.schema import Binned, Categorical, Schema

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A small tabular task: sex F/M (text that pandas must not read as booleans), age, region codes."""
    rng = np.random.default_rng(0)
    n = 400
    sex = rng.choice(["F", "M"], n)
    age = rng.integers(18, 80, n)
    region = rng.choice(["007", "012", "100"], n)
    logit = 0.04 * (age - 45) + (sex == "M") * 0.8
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    frame = pd.DataFrame({"sex": sex, "age": age, "region": region, "y": y})
    folder = tmp_path_factory.mktemp("data")
    frame.to_csv(folder / "t.csv", index=False)
    frame.to_parquet(folder / "t.parquet")
    return folder, frame


# ------------------------------------------------------------------------------------------ sources


def test_inferred_and_declared_schemas(table):
    folder, frame = table
    inferred = from_file(folder / "t.csv", label="y")
    assert inferred.categorical == ["sex"] and inferred.numeric == ["age", "region"]  # "007" read as 7
    assert inferred.positive == "yes" and inferred.source["schema"] == "inferred from the column types"
    assert inferred.labels().tolist() == (frame["y"] == "yes").astype(int).tolist()
    schema = Schema({"sex": Categorical(["F", "M"]), "age": Binned([0, 50, 120]),
                     "region": Categorical(["007", "012", "100"])})
    declared = from_file(folder / "t.csv", label="y", positive="no", schema=schema)
    assert declared.categorical == ["sex", "region"] and declared.numeric == ["age"]
    assert set(declared.features()["region"]) == {"007", "012", "100"}  # declared text stays text
    assert declared.labels().sum() == (frame["y"] == "no").sum() and declared.source["schema"] == "declared"
    parquet = from_file(folder / "t.parquet", label="y", schema=schema)
    assert parquet.features().equals(from_file(folder / "t.csv", label="y", schema=schema).features())


def test_positive_matches_the_string_form(tmp_path):
    pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 1, 0]}).to_csv(tmp_path / "b.csv", index=False)
    assert from_file(tmp_path / "b.csv", label="y", positive="1").labels().tolist() == [0, 1, 1, 0]
    assert from_file(tmp_path / "b.csv", label="y").positive == 1


@pytest.mark.parametrize("write, kwargs, message", [
    (None, {"label": "y"}, "does not exist"),
    ("sex,y\nF,a\nM,b\nF,c\n", {"label": "y"}, "exactly two values"),
    ("sex,y\nF,a\nM,b\n", {"label": "z"}, "no label column 'z'"),
    ("sex,y\nF,a\nM,b\n", {"label": "y", "positive": "c"}, "does not occur"),
    ("sex,y\nF,a\nM,\n", {"label": "y"}, "missing values; drop those rows"),
    ("age,y\n1,a\n,b\n", {"label": "y"}, "numeric column 'age' has 1 missing"),
    ("sex,y\nF,a\nX,b\n", {"label": "y", "schema": Schema({"sex": Categorical(["F", "M"])})},
     r"outside its declared domain \(first: 'X'\)"),
    ("sex,y\nF,a\nM,b\n", {"label": "y", "schema": Schema({"age": Binned([0, 1])})}, "which the data lack"),
    ("y\na\nb\n", {"label": "y"}, "no feature columns"),
])
def test_bad_sources_get_clear_errors(tmp_path, write, kwargs, message):
    path = tmp_path / "d.csv"
    if write is not None:
        path.write_text(write)
    with pytest.raises(DataError, match=message):
        from_file(path, **kwargs)


def test_unreadable_and_unknown_files(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match="cannot be read as Parquet"):
        from_file(tmp_path / "x.parquet", label="y")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(DataError, match="unknown file type"):
        from_file(tmp_path / "x.json", label="y")


# ------------------------------------------------------------------------------------------ the Poisson design


def test_poisson_keep_design():
    keep = poisson_keep(64, 20_000, inclusion=0.25, seed=3)
    assert keep.mean() == pytest.approx(0.25, abs=0.002)
    n_in = keep.sum(axis=0)
    assert n_in.min() >= 3 and (64 - n_in).min() >= 3
    assert np.array_equal(keep, poisson_keep(64, 20_000, inclusion=0.25, seed=3))
    # per-record IN counts are Binomial(M, q) (conditioned on the rule): their variance shows it
    assert n_in.var() == pytest.approx(64 * 0.25 * 0.75, rel=0.06)
    with pytest.raises(DPAuditError, match="only 7% of records would be IN and OUT in ≥ 3 models; use ≥ 28 models"):
        poisson_keep(10, 100, inclusion=0.1, seed=0)
    # at small M·q the rule's conditioning raises the realised inclusion: E[B | 3 ≤ B ≤ M − 3] / M
    from scipy import stats

    b = np.arange(3, 10)
    pmf = stats.binom.pmf(b, 12, 0.3)
    small = poisson_keep(12, 50_000, inclusion=0.3, seed=1)
    assert small.mean() == pytest.approx((b * pmf).sum() / pmf.sum() / 12, abs=0.002)


def test_evaluation_is_valid_under_the_poisson_design():
    """Per-record rules with varying n_in/n_out: null → no leakage; PP-rank and the per-record mean differ."""
    from dpaudit.mia.scores import ScoreSet

    rng = np.random.default_rng(1)
    keep = poisson_keep(256, 3000, inclusion=0.3, seed=2)
    signal = rng.exponential(0.5, 3000)
    score = rng.normal(size=keep.shape) + keep * signal
    scores = ScoreSet(score, keep, train_size=900, pool_size=3000)
    row = evaluate(scores.permuted(seed=4), fpr=(0.05,), n_boot=30).rows[0]
    for rule in ("pp_rank", "per_record_empirical", "per_record_parametric", "pp_t"):
        assert abs(row[rule]["tpr"] - row[rule]["fpr"]) <= row[rule]["ci"][1] - row[rule]["ci"][0], rule
        assert row[rule]["epsilon_lb"] in (0.0, None)
    real = evaluate(scores, fpr=(0.05,), n_boot=0).rows[0]
    assert real["pp_rank"]["tpr"] != pytest.approx(real["per_record_empirical"]["tpr"], abs=1e-9)
    assert real["per_record_empirical"]["tpr"] > 0.05


# ------------------------------------------------------------------------------------------ training


def _factory_module(tmp_path, monkeypatch, body: str) -> str:
    (tmp_path / "my_models.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_models", None)
    return "my_models"


def test_train_own_file_and_factory_with_poisson_design(table, tmp_path, monkeypatch):
    from dpaudit.mia.train import load_run, train_run

    folder, _ = table
    mod = _factory_module(tmp_path, monkeypatch, """
        from sklearn.ensemble import RandomForestClassifier
        def forest():
            return RandomForestClassifier(n_estimators=5, max_depth=4)
    """)
    run = train_run(tmp_path / "run", data=folder / "t.csv", label="y", model=f"{mod}:forest", n_models=12,
                    pool_size=300, train_size=90, design="poisson", seed=1, progress=False)
    cfg = json.loads((run / "run.json").read_text())["config"]
    assert cfg["design"]["name"] == "poisson" and cfg["design"]["inclusion"] == 0.3 and cfg["train_size"] == 90
    assert cfg["dataset"] is None and cfg["data"]["rows"] == 400 and len(cfg["data"]["sha256"]) == 64
    assert cfg["model"] == "my_models:forest" and cfg["model_params"]["n_estimators"] == 5
    assert cfg["label"] == {"column": "y", "positive": "yes"}
    scores = load_run(run)
    assert scores.train_size == 90 and scores.meta["design"] == "poisson"
    assert cfg["design"]["mean_train_size"] == pytest.approx(scores.keep.sum(axis=1).mean())
    assert 0.3 < scores.keep.mean() < 0.4  # conditioning on ≥ 3 IN models raises q = 0.3 at M = 12
    assert scores.score[scores.keep].mean() > scores.score[~scores.keep].mean()  # a forest memorises
    # seeded per model (random_state set from (seed, m)): a second run is bit-identical
    again = train_run(tmp_path / "again", data=folder / "t.csv", label="y", model=f"{mod}:forest", n_models=12,
                      pool_size=300, train_size=90, design="poisson", seed=1, progress=False)
    assert np.array_equal(load_run(again).score, scores.score)
    # the FPC of the evaluation comes from the design: 1 − N/N+ with the realised mean training-set size
    # (≈ 107 here: q = 0.3 at M = 12 is raised by redrawing records IN in < 3 models), not the nominal 90
    realised = cfg["design"]["mean_train_size"]
    assert realised > 100
    rep = evaluate(scores, fpr=(0.1,), n_boot=0, fpc=True)
    assert rep.options["train_size"] == 90 and rep.options["fpc"]
    assert rep.options["fpc_train_size"] == pytest.approx(realised)
    assert rep.options["fpc_train_size_from"] == "realised mean training-set size (Poisson design)"
    tpr = rep.rows[0]["per_record_parametric"]["tpr"]
    assert tpr == pytest.approx(parametric_per_record(scores.score, scores.keep, 0.1, fpc=1 - realised / 300).tpr.mean())
    assert tpr != pytest.approx(parametric_per_record(scores.score, scores.keep, 0.1, fpc=1 - 90 / 300).tpr.mean(),
                                rel=1e-3)
    # not estimable at α = 0.1 (9 OUT models per record): the M asked for is at the design's q = 0.3, not
    # the realised 0.36 of M = 12, nor the efficient design's M ≥ 18
    reason = rep.rows[0].rules["pp_rank"].reason
    assert f"q = 0.3 a record is OUT in M(1 − q) models on average; M ≥ {models_for_every_record(9, 0.3, 300)} " in reason
    assert "efficient design" not in reason
    shown = CliRunner().invoke(app, ["mia", "evaluate", str(run), "--fpc", "--fpr", "0.1", "--n-boot", "0"])
    assert shown.exit_code == 0, shown.output
    assert f"FPC on (1 − N/N+ with N = {realised:.6g}, the realised mean training-set size (Poisson design))" in shown.output


def test_resume_refuses_a_changed_file(table, tmp_path):
    from dpaudit.mia.train import train_run

    folder, frame = table
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    options = {"data": path, "label": "y", "model": "sklearn.naive_bayes:GaussianNB", "n_models": 6, "pool_size": 60,
               "seed": 0, "progress": False}
    train_run(tmp_path / "run", **options)
    frame.iloc[::-1].to_csv(path, index=False)
    with pytest.raises(DataError, match="differs in: data"):
        train_run(tmp_path / "run", resume=True, **options)


@pytest.mark.parametrize("model, message", [
    ("sklearn.svm:LinearSVC", "has no predict_proba"),
    ("no_such_package_xyz:f", "cannot import 'no_such_package_xyz'"),
    ("sklearn.naive_bayes:Nope", "has no attribute 'Nope'"),
    ("sklearn:__version__", "is not callable"),
    ("forest", "must be one of logreg, mlp, hgb, tabpfn or 'package.module:factory'"),
])
def test_bad_models_are_refused_before_anything_is_written(table, tmp_path, model, message):
    from dpaudit.mia.train import train_run

    folder, _ = table
    with pytest.raises(DPAuditError, match=message):
        train_run(tmp_path / "run", data=folder / "t.csv", label="y", model=model, n_models=6, pool_size=60,
                  progress=False)
    assert not (tmp_path / "run").exists()


def test_one_class_training_sets_are_refused_before_anything_is_written(tmp_path):
    from dpaudit.mia.train import train_run

    pd.DataFrame({"x": np.arange(200.0), "y": ["a"] * 199 + ["b"]}).to_csv(tmp_path / "rare.csv", index=False)
    with pytest.raises(DataError, match="holds only one class"):
        train_run(tmp_path / "run", data=tmp_path / "rare.csv", label="y", n_models=6, pool_size=100, progress=False)
    assert not (tmp_path / "run").exists()


def test_efficient_design_rejects_another_train_size(table, tmp_path):
    from dpaudit.mia.train import train_run

    folder, _ = table
    with pytest.raises(DPAuditError, match="use design 'poisson'"):
        train_run(tmp_path / "r", data=folder / "t.csv", label="y", n_models=6, pool_size=100, train_size=30)


# ------------------------------------------------------------------------------------------ the command line


def test_cli_train_own_data(table, tmp_path):
    folder, _ = table
    schema = tmp_path / "schema.json"
    Schema({"sex": Categorical(["F", "M"]), "age": Binned([0, 120]),
            "region": Categorical(["007", "012", "100"])}).to_json(schema)
    runner = CliRunner()
    res = runner.invoke(app, ["mia", "train", str(tmp_path / "run"), "--data", str(folder / "t.csv"), "--label", "y",
                              "--positive", "yes", "--schema", str(schema), "--model", "sklearn.naive_bayes:GaussianNB",
                              "--models", "16", "--pool", "200", "--design", "poisson", "--train-size", "50",
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "poisson design" in res.stdout and "N = 50" in res.stdout
    ev = runner.invoke(app, ["mia", "evaluate", str(tmp_path / "run"), "--fpr", "0.2", "--n-boot", "0", "--json"])
    assert ev.exit_code == 0, ev.output
    assert json.loads(ev.stdout)["options"]["train_size"] == 50


@pytest.mark.parametrize("extra, message", [
    (["--label", "y"], "add --data FILE"),
    (["--data", "x.csv"], "--data needs --label COL"),
    (["--data", "x.csv", "--label", "y", "--dataset", "adult"], "either --dataset NAME or --data FILE"),
    (["--model", "sklearn.svm:LinearSVC"], "has no predict_proba"),
    (["--design", "bernoulli"], "design must be one of efficient, poisson"),
])
def test_cli_train_errors(tmp_path, extra, message):
    res = CliRunner().invoke(app, ["mia", "train", str(tmp_path / "run"), "--models", "6", "--pool", "100",
                                   "--no-progress", *extra])
    assert res.exit_code == 2 and message in res.stderr and "Traceback" not in res.output
    assert not (tmp_path / "run").exists()
