"""dpaudit.mia.train: run directories, resume (also after SIGKILL), validation, the φ score."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dpaudit import datasets
from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import WHOLE
from dpaudit.mia.designs import EVEN_MODELS_HINT
from dpaudit.mia.train import load_run, logit_confidence, train_run
from dpaudit.mia.train.models import make_pipeline

ADULT = datasets.task("adult")

pytest.importorskip("sklearn")
pytest.importorskip("joblib")

SMALL = {"dataset": "adult", "model": "logreg", "n_models": 8, "pool_size": 200, "seed": 3, "progress": False}


def _scores(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run / "scores").glob("*.npy"))}


def _need_adult() -> None:
    root = os.environ.get("DPAUDIT_DATA")
    if not (root and (Path(root) / "adult" / "adult.data.gz").is_file()):
        if os.environ.get("CI"):
            pytest.fail("CI must run with DPAUDIT_DATA pointing at the shared datasets folder (adult/ missing)")
        pytest.skip("real Adult files not found: set DPAUDIT_DATA to the shared datasets folder")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """The default trainer for logreg: batched."""
    _need_adult()
    return train_run(tmp_path_factory.mktemp("run") / "r", **SMALL)


@pytest.fixture(scope="module")
def loop_run(tmp_path_factory):
    _need_adult()
    return train_run(tmp_path_factory.mktemp("run") / "r", **SMALL, trainer="per-model")


def _pool_and_labels(run: Path):
    cfg = json.loads((run / "run.json").read_text())["config"]
    frame, _ = datasets.load(cfg["dataset"])
    pool = frame.iloc[cfg["pool_indices"]].reset_index(drop=True)
    task = datasets.task(cfg["dataset"])
    return pool, (pool[task.label] == task.positive).to_numpy(dtype=int), np.load(run / "keep.npy")


def test_end_to_end_load_and_evaluate(small_run):
    from dpaudit.mia.evaluate import evaluate

    header = json.loads((small_run / "run.json").read_text())
    assert header["format"] == "dpaudit.mia.run" and header["version"] == 1
    cfg = header["config"]
    assert (cfg["n_models"], cfg["pool_size"], cfg["train_size"]) == (8, 200, 100)
    assert len(cfg["pool_indices"]) == 200 and "fnlwgt" not in cfg["features"]["numeric"]
    assert set(header["versions"]) >= {"numpy", "scikit-learn", "dpaudit"}
    assert len(_scores(small_run)) == 8 and not list((small_run / "scores").glob("*.tmp"))
    s = load_run(small_run)
    assert s.score.shape == (8, 200) and s.train_size == 100 and s.pool_size == 200
    assert (s.keep.sum(axis=0) == 4).all() and s.meta["model"] == "logreg" and s.meta["trainer"] == "batched"
    # members score higher on average (logistic regression overfits a little)
    assert s.score[s.keep].mean() > s.score[~s.keep].mean()
    rep = evaluate(s, fpr=(0.1,), n_boot=0)
    assert 0.0 <= rep.rows[0]["pp_t"]["tpr"] <= 1.0


def test_scores_match_sklearn_predict_proba(loop_run, adult_available):
    """φ from the exact logit equals log(p_y / (1 − p_y)) from predict_proba where that is accurate."""

    pool, y, keep = _pool_and_labels(loop_run)
    assert json.loads((loop_run / "run.json").read_text())["config"]["trainer"] == {"name": "per-model"}
    pipe = make_pipeline(list(ADULT.categorical), list(ADULT.numeric), "logreg", 0).fit(pool[keep[2]], y[keep[2]])
    p = pipe.predict_proba(pool)[np.arange(len(y)), y]
    np.testing.assert_allclose(np.load(loop_run / "scores" / "model_00002.npy"), np.log(p / (1 - p)), atol=1e-8)


def test_batched_scores_are_the_converged_sklearn_pipelines(small_run, loop_run, adult_available):
    """The batched trainer's model m is sklearn's pipeline m at its exact minimiser (tol → 0); the loop's
    default tol = 1e-4 stops visibly short of it."""
    from dpaudit.mia.train import BATCHED_PARAMS

    trainer = json.loads((small_run / "run.json").read_text())["config"]["trainer"]
    assert trainer == {"name": "batched", **BATCHED_PARAMS}
    pool, y, keep = _pool_and_labels(small_run)
    batched, loop = load_run(small_run).score, load_run(loop_run).score
    for m in (0, 5):
        pipe = make_pipeline(list(ADULT.categorical), list(ADULT.numeric), "logreg", 0).set_params(clf__tol=1e-12, clf__max_iter=100_000)
        z = pipe.fit(pool[keep[m]], y[keep[m]]).decision_function(pool)
        exact = np.where(y == 1, z, -z)
        assert np.abs(batched[m] - exact).max() < 1e-4 < np.abs(loop[m] - exact).max()


def test_batch_size_changes_scores_only_by_rounding(small_run, tmp_path, adult_available):
    small = train_run(tmp_path / "b3", **SMALL, batch_size=3)  # blocks {0,1,2}, {3,4,5}, {6,7}
    assert json.loads((small / "run.json").read_text())["config"]["trainer"]["batch_size"] == 3
    np.testing.assert_allclose(load_run(small).score, load_run(small_run).score, atol=1e-7)
    with pytest.raises(DataError, match="differs in: trainer"):
        train_run(small, **SMALL, resume=True)  # default batch size: another configuration


def test_resume_after_deleting_models_is_bit_identical(small_run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(small_run, copy)
    for name in ("model_00001.npy", "model_00006.npy"):
        (copy / "scores" / name).unlink()
    (copy / "scores" / "model_00003.npy.tmp").write_bytes(b"half-written")  # left by a crash
    with pytest.raises(DataError, match=r"2 of 8 models are unfinished.*--resume"):
        load_run(copy)
    with pytest.raises(DataError, match="not empty; pass resume=True"):
        train_run(copy, **SMALL)
    train_run(copy, **SMALL, resume=True)
    assert _scores(copy) == _scores(small_run)
    assert not list((copy / "scores").glob("*.tmp"))


@pytest.mark.parametrize("model", ["mlp", "hgb"])
def test_other_models_parallel_equals_serial(tmp_path, adult_available, model):
    """Model randomness comes from (seed, m) only: n_jobs=2 (loky processes) equals n_jobs=1 bit for bit."""
    kw = {**SMALL, "model": model, "n_models": 6}
    a = train_run(tmp_path / "a", **kw)
    b = train_run(tmp_path / "b", **kw, n_jobs=2)
    assert _scores(a) == _scores(b) and len(_scores(a)) == 6
    assert np.isfinite(load_run(a).score).all()


@pytest.mark.parametrize("trainer", [{"trainer": "per-model"}, {"trainer": "batched", "batch_size": 4}])
def test_sigkill_then_resume_is_bit_identical(tmp_path, adult_available, trainer):
    kw = {**SMALL, "n_models": 40, "pool_size": 2000, **trainer}
    killed = tmp_path / "killed"
    code = (f"from dpaudit.mia.train import train_run; "
            f"train_run({str(killed)!r}, **{kw!r})")
    env = {**os.environ, "DPAUDIT_DATA": str(adult_available)}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600  # a hang guard, not a speed check
    try:
        while not list((killed / "scores").glob("model_*.npy")) if (killed / "scores").is_dir() else True:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no model finished within 600 s: hung"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    n_done = len(list((killed / "scores").glob("model_*.npy")))
    assert 1 <= n_done < 40
    train_run(killed, **kw, resume=True)
    fresh = train_run(tmp_path / "fresh", **kw)
    assert _scores(killed) == _scores(fresh) and len(_scores(fresh)) == 40
    np.testing.assert_array_equal(load_run(killed).score, load_run(fresh).score)


def _copy(small_run, tmp_path):
    import shutil

    return Path(shutil.copytree(small_run, tmp_path / "c"))


def test_corrupt_run_json(small_run, tmp_path):
    c = _copy(small_run, tmp_path)
    (c / "run.json").write_text("{not json")
    with pytest.raises(DataError, match="run.json is corrupt"):
        load_run(c)
    with pytest.raises(DataError, match="run.json is corrupt"):
        train_run(c, **SMALL, resume=True)
    (c / "run.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(DataError, match="is not a 'dpaudit.mia.run' file"):
        load_run(c)


def test_mismatched_config_on_resume(small_run, tmp_path):
    c = _copy(small_run, tmp_path)
    with pytest.raises(DataError, match=r"different configuration \(differs in: .*seed"):
        train_run(c, **{**SMALL, "seed": 4}, resume=True)
    with pytest.raises(DataError, match="differs in: .*model"):
        train_run(c, **{**SMALL, "model": "hgb"}, resume=True)


def test_missing_or_wrong_keep(small_run, tmp_path):
    c = _copy(small_run, tmp_path)
    keep = np.load(c / "keep.npy")
    np.save(c / "keep.npy", keep[:, :10])
    with pytest.raises(DataError, match=r"keep.npy: expected a bool array of shape \(8, 200\)"):
        load_run(c)
    np.save(c / "keep.npy", ~keep)
    with pytest.raises(DataError, match="does not match the configuration's keep matrix"):
        train_run(c, **SMALL, resume=True)
    (c / "keep.npy").unlink()
    with pytest.raises(DataError, match="keep.npy is missing"):
        load_run(c)
    with pytest.raises(DataError, match="keep.npy is missing"):
        train_run(c, **SMALL, resume=True)


def test_wrong_score_shape(small_run, tmp_path):
    c = _copy(small_run, tmp_path)
    np.save(c / "scores" / "model_00004.npy", np.zeros(199))
    with pytest.raises(DataError, match=r"model_00004.npy: expected 200 finite float64 scores"):
        load_run(c)
    with pytest.raises(DataError, match=r"model_00004.npy: expected 200"):
        train_run(c, **SMALL, resume=True)
    (c / "scores" / "model_00004.npy").write_bytes(b"garbage")
    with pytest.raises(DataError, match="model_00004.npy is corrupt"):
        load_run(c)


def test_argument_errors(tmp_path):
    with pytest.raises(DPAuditError, match="train_size must be pool_size // 2 = 100"):
        train_run(tmp_path / "x", n_models=8, pool_size=200, train_size=150)
    odd = WHOLE.format(name="n_models", bounds=" >= 6 and even" + EVEN_MODELS_HINT, value=7)
    with pytest.raises(DPAuditError, match=re.escape(odd)):
        train_run(tmp_path / "x", n_models=7, pool_size=200)
    with pytest.raises(DPAuditError, match=re.escape(WHOLE.format(name="n_models", bounds=" >= 6", value=5))):
        train_run(tmp_path / "x", n_models=5, pool_size=200, design="poisson", train_size=50)
    with pytest.raises(DPAuditError, match="model must be one of"):
        train_run(tmp_path / "x", model="svm", n_models=8, pool_size=200)
    with pytest.raises(DPAuditError, match="trainer must be one of"):
        train_run(tmp_path / "x", n_models=8, pool_size=200, trainer="gpu")
    with pytest.raises(DPAuditError, match="trainer 'batched' fits logistic regression only, not 'hgb'"):
        train_run(tmp_path / "x", model="hgb", n_models=8, pool_size=200, trainer="batched")
    with pytest.raises(DPAuditError, match="batch_size applies to trainer 'batched' only"):
        train_run(tmp_path / "x", model="mlp", n_models=8, pool_size=200, batch_size=4)
    with pytest.raises(DPAuditError, match="batch_size must be an integer >= 1"):
        train_run(tmp_path / "x", n_models=8, pool_size=200, batch_size=0)
    assert not (tmp_path / "x").exists()
    with pytest.raises(DataError, match="not a directory"):
        load_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="run.json is missing"):
        load_run(tmp_path / "empty")


def test_logit_confidence_formula_and_stability():
    p = np.array([[0.7, 0.2, 0.1], [0.05, 0.9, 0.05], [0.25, 0.25, 0.5]])
    y = np.array([0, 1, 2])
    direct = np.log(p[np.arange(3), y]) - np.log(1 - p[np.arange(3), y])
    np.testing.assert_allclose(logit_confidence(np.log(p), y), direct, rtol=1e-12)
    # any per-row shift of the logits gives the same φ
    np.testing.assert_allclose(logit_confidence(np.log(p) + [[5.0], [-3.0], [100.0]], y), direct, rtol=1e-12)
    # p_y → 1: 1 − p_y rounds to 0 in float64, the log-softmax form stays finite and exact
    tiny = np.array([[1e-25, 1e-25, 1.0]])
    assert 1 - tiny[0, 2] == 0.0  # so log(p_y / (1 − p_y)) would be inf
    np.testing.assert_allclose(logit_confidence(np.log(tiny), np.array([2])), -np.log(2e-25), rtol=1e-12)
    # huge logits do not overflow
    np.testing.assert_allclose(logit_confidence(np.array([[1000.0, -1000.0]]), np.array([0])), 2000.0)
    with pytest.raises(DPAuditError, match="logit_confidence needs"):
        logit_confidence(np.zeros(3), y)
