"""The optional TabPFN adapter of dpaudit.mia.train: clean refusal with the reason, and the adapter's
contract (local weights, per-model seed, scores from probabilities) checked with a stand-in class."""

from __future__ import annotations

import hashlib
import json
import sys
import types

import numpy as np
import pytest

from dpaudit._errors import DPAuditError
from dpaudit.mia.train import TABPFN_WEIGHTS_ENV, load_run, tabpfn_checkpoint, train_run
from dpaudit.mia.train.models import model_seed

pytest.importorskip("sklearn")

KW = {"dataset": "adult", "model": "tabpfn", "n_models": 6, "pool_size": 120, "seed": 5, "progress": False}


from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402

from dpaudit.mia.train.models import SCORE_CAP  # noqa: E402


class _StandIn(ClassifierMixin, BaseEstimator):
    """Records its arguments; probabilities depend on age so members and non-members differ, and
    one row gets probability exactly 1 (in float32) to exercise the clipping. (TabPFNClassifier is
    a scikit-learn estimator too.)"""

    made: list[dict] = []

    def __init__(self, *, n_estimators=4, device="auto", model_path="auto", random_state=0):
        self.n_estimators, self.device, self.model_path, self.random_state = n_estimators, device, model_path, random_state
        _StandIn.made.append({"n_estimators": n_estimators, "device": device, "model_path": model_path,
                              "random_state": random_state})

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.mean_age_ = float(X["age"][y == 1].mean())
        return self

    def predict_proba(self, X):
        p1 = 1 / (1 + np.exp(-(X["age"].to_numpy() - self.mean_age_) / 10))
        p1[0] = 1.0
        return np.column_stack([1 - p1, p1]).astype(np.float32)


@pytest.fixture
def fake_tabpfn(monkeypatch):
    module = types.ModuleType("tabpfn")
    module.TabPFNClassifier = _StandIn
    monkeypatch.setitem(sys.modules, "tabpfn", module)
    _StandIn.made = []
    return module


def test_refuses_without_the_package(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tabpfn", None)  # import tabpfn → ImportError
    with pytest.raises(DPAuditError, match=r"needs the tabpfn package, which is not installed.*pip install 'dpaudit\[tabpfn\]'"):
        train_run(tmp_path / "run", **KW)
    assert not (tmp_path / "run").exists()


def test_refuses_without_local_weights(fake_tabpfn, monkeypatch, tmp_path):
    monkeypatch.delenv(TABPFN_WEIGHTS_ENV, raising=False)
    with pytest.raises(DPAuditError, match=f"set {TABPFN_WEIGHTS_ENV} to a TabPFN classifier checkpoint"):
        train_run(tmp_path / "run", **KW)
    monkeypatch.setenv(TABPFN_WEIGHTS_ENV, str(tmp_path / "missing.ckpt"))
    with pytest.raises(DPAuditError, match="missing.ckpt: no such file"):
        tabpfn_checkpoint()
    assert not (tmp_path / "run").exists()


def test_cli_exit_2_with_the_reason(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from dpaudit.cli import app

    monkeypatch.setitem(sys.modules, "tabpfn", None)
    res = CliRunner().invoke(app, ["mia", "train", str(tmp_path / "r"), "--model", "tabpfn", "--models", "6",
                                   "--pool", "120", "--no-progress"])
    assert res.exit_code == 2 and "needs the tabpfn package" in res.stderr and "Traceback" not in res.output


def test_adapter_end_to_end(fake_tabpfn, monkeypatch, tmp_path, adult_available):
    weights = tmp_path / "clf.ckpt"
    weights.write_bytes(b"weights v1")
    monkeypatch.setenv(TABPFN_WEIGHTS_ENV, str(weights))
    run = train_run(tmp_path / "run", **KW)
    cfg = json.loads((run / "run.json").read_text())["config"]
    assert cfg["trainer"] == {"name": "per-model"}
    assert cfg["model_params"]["weights_sha256"] == hashlib.sha256(b"weights v1").hexdigest()
    assert [k["model_path"] for k in _StandIn.made] == [str(weights)] * 6
    assert [k["random_state"] for k in _StandIn.made] == [model_seed(5, m) for m in range(6)]
    assert all(k["device"] == "cpu" for k in _StandIn.made)
    s = load_run(run)
    assert np.isfinite(s.score).all()
    # the clipped row: p_y = 1 → log(1) − log(2⁻⁵³) = 53 ln 2 for y = 1, its negative otherwise: the cap
    # of a probability-only model, the same rule as a factory's (models.proba_logit), recorded in the run
    assert np.abs(s.score[:, 0]).max() == pytest.approx(SCORE_CAP, rel=1e-12) == 53 * np.log(2)
    assert s.meta["score_cap"] == SCORE_CAP and np.abs(s.score).max() == pytest.approx(SCORE_CAP, rel=1e-12)
    weights.write_bytes(b"weights v2")  # other weights: another configuration, resuming is refused
    from dpaudit._errors import DataError

    with pytest.raises(DataError, match="differs in: model_params"):
        train_run(run, **KW, resume=True)


def test_real_tabpfn_if_available(tmp_path, adult_available):
    try:
        tabpfn_checkpoint()
    except DPAuditError as exc:
        pytest.skip(f"TabPFN not available: {exc}")
    s = load_run(train_run(tmp_path / "run", **{**KW, "pool_size": 60}))
    assert s.score.shape == (6, 60) and np.isfinite(s.score).all()
