"""dpaudit mia train on a Dask cluster (backend "dask").

The tests check that a Dask run is bit-identical to a local one: every file of the run directory
(run.json, keep.npy, every score file) is compared byte for byte. They also check resuming across
backends, the refusal of workers that could not reproduce the run, and the option errors: one line
and nothing written. The cluster is a ``distributed.LocalCluster`` of 2 single-threaded worker
processes, shared by the module.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit._errors import DataError, DPAuditError
from dpaudit.cli import app
from dpaudit.mia.train import MODELS, load_run, train_run
from tests.hostile.conftest import assert_one_line_error

pytest.importorskip("sklearn")
if not os.environ.get("CI"):  # CI installs the test extra, which has dask[distributed]: never skip there
    pytest.importorskip("distributed")

from joblib import delayed  # noqa: E402

from dpaudit.mia.train.backends import LOCAL_CLUSTER_QUIET, check_workers, dask_runner  # noqa: E402
from dpaudit.mia.train.run import versions  # noqa: E402
from dpaudit.mia.train.trainer import _train_models  # noqa: E402

SMALL = {"dataset": "adult", "model": "logreg", "n_models": 8, "pool_size": 200, "seed": 3, "progress": False}
KINDS = {
    "logreg-per-model": {"trainer": "per-model"},
    "logreg-batched": {"trainer": "batched", "batch_size": 3},  # blocks {0,1,2}, {3,4,5}, {6,7}: three tasks
    "mlp": {"model": "mlp", "n_models": 6},  # algorithmic randomness from (seed, model index)
    "factory": {"model": "sklearn.tree:DecisionTreeClassifier", "n_models": 6},  # random_state set per model
}


def _files(run: Path) -> dict[str, bytes]:
    """Every file of a run directory, by relative path, as bytes."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def scheduler():
    """The address of a LocalCluster of 2 worker processes (1 thread, 768 MiB each; no dashboard)."""
    root = os.environ.get("DPAUDIT_DATA")
    if not (root and (Path(root) / "adult" / "adult.data.gz").is_file()):
        if os.environ.get("CI"):
            pytest.fail("CI must run with DPAUDIT_DATA pointing at the shared datasets folder (adult/ missing)")
        pytest.skip("real Adult files not found: set DPAUDIT_DATA to the shared datasets folder")
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="768MiB",
                      **LOCAL_CLUSTER_QUIET) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """``local_run(kind)``: the local (joblib, n_jobs=1) run of ``KINDS[kind]``, trained once per module."""
    runs: dict[str, Path] = {}

    def get(kind: str) -> Path:
        if kind not in runs:
            runs[kind] = train_run(tmp_path_factory.mktemp("local") / kind, **{**SMALL, **KINDS[kind]})
        return runs[kind]

    return get


def _executed(scheduler: str) -> dict[str, int]:
    """How many tasks each worker of the cluster has executed so far."""
    from distributed import Client

    with Client(scheduler, set_as_default=False) as client:
        return client.run(lambda dask_worker: dask_worker.state.executed_count)


@pytest.mark.parametrize("kind", list(KINDS))
def test_dask_run_is_bit_identical_to_local(scheduler, local_run, tmp_path, kind):
    expected = _files(local_run(kind))
    before = _executed(scheduler)
    run = train_run(tmp_path / "dask", **{**SMALL, **KINDS[kind]}, backend="dask", scheduler=scheduler)
    after = _executed(scheduler)
    # The fits ran on the cluster, one Dask task per joblib task and no more: scikit-learn's own joblib
    # calls inside a fit (the ColumnTransformer's) must not become nested Dask tasks.
    kw = {**SMALL, **KINDS[kind]}
    n_tasks = -(-kw["n_models"] // kw.get("batch_size", 1))
    assert 1 <= sum(after.values()) - sum(before.values()) <= n_tasks
    assert _files(run) == expected  # run.json (no backend recorded), keep.npy and every score file
    assert sum(name.startswith("scores/") for name in expected) == {**SMALL, **KINDS[kind]}["n_models"]
    assert np.isfinite(load_run(run).score).all()


def test_resume_across_backends(scheduler, local_run, tmp_path):
    """A run that stopped part-way on one backend is finished on the other, bit-identical."""
    for kind in ("logreg-batched", "mlp"):
        reference = local_run(kind)
        kw = {**SMALL, **KINDS[kind]}
        # stopped locally (model 1's block {0,1,2} and model 4's block {3,4,5} are recomputed whole)
        part = Path(shutil.copytree(reference, tmp_path / f"{kind}-local-part"))
        for name in ("model_00001.npy", "model_00004.npy"):
            (part / "scores" / name).unlink()
        (part / "scores" / ".model_00004.npy.tmp").write_bytes(b"half-written")  # left by a kill
        train_run(part, **kw, resume=True, backend="dask", scheduler=scheduler)
        assert _files(part) == _files(reference)
        # stopped on Dask, finished locally
        dask_run = train_run(tmp_path / f"{kind}-dask", **kw, backend="dask", scheduler=scheduler)
        for name in ("model_00000.npy", "model_00005.npy"):
            (dask_run / "scores" / name).unlink()
        train_run(dask_run, **kw, resume=True)
        assert _files(dask_run) == _files(reference)


def test_sigkilled_dask_driver_resumes_locally(scheduler, local_run, tmp_path, adult_available):
    """The driver of a Dask run is killed (SIGKILL) after its first models; a local resume finishes it."""
    kw = {**SMALL, **KINDS["logreg-per-model"], "n_models": 24, "pool_size": 1000}
    killed = tmp_path / "killed"
    code = (f"from dpaudit.mia.train import train_run; "
            f"train_run({str(killed)!r}, **{kw!r}, backend='dask', scheduler={scheduler!r})")
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "DPAUDIT_DATA": str(adult_available)},
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600  # a hang guard, not a speed check
    try:
        while not (killed / "scores").is_dir() or not list((killed / "scores").glob("model_*.npy")):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "no model finished within 600 s: hung"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    n_done = len(list((killed / "scores").glob("model_*.npy")))
    assert 1 <= n_done < 24
    train_run(killed, **kw, resume=True)
    assert _files(killed) == _files(train_run(tmp_path / "fresh", **kw))


def test_local_cluster_without_scheduler(local_run, tmp_path, adult_available):
    """--backend dask without --scheduler starts a LocalCluster of n_jobs processes and stops it afterwards."""
    psutil = pytest.importorskip("psutil")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    run = train_run(tmp_path / "lc", **{**SMALL, **KINDS["logreg-per-model"]}, backend="dask", n_jobs=2)
    assert _files(run) == _files(local_run("logreg-per-model"))
    deadline = time.monotonic() + 300  # a hang guard, not a speed check
    while {p.pid for p in psutil.Process().children(recursive=True)} - before:
        assert time.monotonic() < deadline, "the LocalCluster's worker processes outlived the run"
        time.sleep(0.05)


def test_workers_with_other_versions_are_refused(scheduler):
    from distributed import Client

    params = dict(MODELS["logreg"].params)
    with Client(scheduler, set_as_default=False) as client:
        assert check_workers(client, "logreg", params, versions()) == 2
        with pytest.raises(DPAuditError, match=r"Dask worker tcp://127\.0\.0\.1:\d+ \(.*\) runs numpy \S+ "
                                               r"\(driver: 0\.0\.1\); .*install the same versions"):
            check_workers(client, "logreg", params, {**versions(), "numpy": "0.0.1"})
        with pytest.raises(DPAuditError, match=r"resolves model 'logreg' to .*'C': 1\.0.*the driver to .*'C': 2"):
            check_workers(client, "logreg", {**params, "C": 2}, versions())
        # ... and each task checks again on its worker (for workers that join later); the error
        # reaches the driver as the DataError it is, which the CLI prints on one line
        frame = __import__("pandas").DataFrame({"x": np.arange(8.0)})
        y = np.array([0, 1] * 4)
        job = delayed(_train_models)([0], np.ones((1, 8), bool), frame, y, [], ["x"], "logreg", 0, "per-model",
                                     {**versions(), "scikit-learn": "0.1"})
        with dask_runner(client) as parallel, \
                pytest.raises(DataError, match=r"worker .* \(pid \d+\) runs scikit-learn \S+ \(driver: 0\.1\)"):
            list(parallel([job]))


def test_scheduler_without_workers_is_refused(tmp_path, adult_available):
    import dask
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=True, **LOCAL_CLUSTER_QUIET) as empty, \
            dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(DPAuditError, match=r"the Dask scheduler at 'tcp://.*' has no workers after 1 s; start "
                                               r"some with `dask worker tcp://"):
            train_run(tmp_path / "run", **SMALL, backend="dask", scheduler=empty.scheduler_address)
    assert not (tmp_path / "run").exists()


def test_model_only_the_driver_can_import_is_refused_before_writing(scheduler, tmp_path, monkeypatch):
    """A factory module on the driver's path but not on the workers' is refused before anything is written."""
    (tmp_path / "driver_only_models.py").write_text("from sklearn.naive_bayes import GaussianNB\n\n\n"
                                                    "def nb():\n    return GaussianNB()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("driver_only_models", None)
    with pytest.raises(DPAuditError, match=r"Dask worker .* cannot use model 'driver_only_models:nb'.* cannot "
                                           r"import 'driver_only_models'"):
        train_run(tmp_path / "run", **{**SMALL, "model": "driver_only_models:nb"}, backend="dask",
                  scheduler=scheduler)
    assert not (tmp_path / "run").exists()


def test_option_errors_write_nothing(tmp_path, monkeypatch):
    out = tmp_path / "run"
    cases = [
        ({"backend": "spark"}, "backend must be one of local, dask, got 'spark'"),
        ({"scheduler": "tcp://127.0.0.1:8786"}, "applies to backend 'dask' only"),
        ({"backend": "dask", "scheduler": ""}, "scheduler must be a Dask scheduler address"),
        ({"backend": "dask", "scheduler": "tcp://127.0.0.1:8786", "n_jobs": 2}, "n_jobs does not apply"),
        ({"backend": "dask", "n_jobs": 0}, "n_jobs must be a non-zero whole number"),
        ({"backend": "dask", "scheduler": f"tcp://127.0.0.1:{_closed_port()}"},
         r"cannot reach the Dask scheduler at 'tcp://127\.0\.0\.1:\d+' \(ConnectionRefusedError"),
        ({"backend": "dask", "scheduler": "nonsense"}, "cannot reach the Dask scheduler at 'nonsense'.*missing port"),
        ({"backend": "dask", "scheduler": "foo://host:1"}, "unknown address scheme 'foo'"),
    ]
    for options, message in cases:
        with pytest.raises(DPAuditError, match=message):
            train_run(out, **SMALL, **options)
        assert not out.exists(), options
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` → ImportError
    with pytest.raises(DPAuditError, match=r"backend 'dask' needs dask and distributed .*: pip install 'dpaudit\[dask\]'"):
        train_run(out, **SMALL, backend="dask")
    assert not out.exists()


def test_cli_backend_dask(scheduler, local_run, tmp_path):
    res = CliRunner().invoke(app, ["mia", "train", str(tmp_path / "run"), "--models", "8", "--pool", "200", "--seed",
                                   "3", "--trainer", "per-model", "--no-progress", "--backend", "dask",
                                   "--scheduler", scheduler])
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output and "8 models" in res.output
    assert _files(tmp_path / "run") == _files(local_run("logreg-per-model"))


@pytest.mark.parametrize(("options", "fragment"), [
    (["--backend", "spark"], "backend must be one of local, dask, got 'spark'"),
    (["--scheduler", "tcp://127.0.0.1:8786"], "applies to backend 'dask' only (--backend dask)"),
    (["--backend", "dask", "--scheduler", "tcp://127.0.0.1:{port}"], "cannot reach the Dask scheduler"),
    (["--backend", "dask", "--scheduler", "nonsense"], "cannot reach the Dask scheduler at 'nonsense'"),
    (["--backend", "dask", "--scheduler", "tcp://127.0.0.1:8786", "--n-jobs", "2"], "n_jobs does not apply"),
    (["--backend", "dask", "!nodask"], "pip install 'dpaudit[dask]'"),
])
def test_cli_option_errors(tmp_path, monkeypatch, options, fragment):
    if "!nodask" in options:
        monkeypatch.setitem(sys.modules, "distributed", None)
        options = [o for o in options if o != "!nodask"]
    options = [o.format(port=_closed_port()) for o in options]
    res = CliRunner().invoke(app, ["mia", "train", str(tmp_path / "run"), "--models", "8", "--pool", "200",
                                   "--no-progress", *options])
    assert_one_line_error(res, fragment=fragment)
    assert not (tmp_path / "run").exists()


def test_import_dpaudit_does_not_import_dask():
    code = ("import sys, dpaudit, dpaudit.mia.train, dpaudit.cli; "
            "print(sorted(m for m in ('dask', 'distributed', 'joblib._dask') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
