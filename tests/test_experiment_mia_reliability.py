"""Smoke test of experiments/mia_reliability.py: a tiny grid end to end (train, evaluate, table, CSV, figures)."""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "mia_reliability.py"


def _module():
    spec = importlib.util.spec_from_file_location("mia_reliability", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tiny_grid_writes_every_output(tmp_path, adult_available):
    out, runs = tmp_path / "out", tmp_path / "runs"
    args = ["--datasets", "adult", "--pool", "300", "--models", "8", "12", "--n-boot", "2", "--out", str(out),
            "--runs", str(runs)]
    assert _module().main(args) == 0
    with (out / "mia_reliability.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 2 * 2  # M × FPC × α
    assert {r["M"] for r in rows} == {"8", "12"} and {r["model"] for r in rows} == {"logreg"}
    assert "trainer batched" in (out / "mia_reliability.md").read_text()
    for name in ("mia_tpr_vs_M_adult.png", "mia_fpr_vs_M_adult.png", "mia_reliability.json"):
        assert (out / name).stat().st_size > 0
    assert [p.name for p in runs.iterdir()] == ["adult_logreg_batched_m12_p300_s0"]
    assert {"per_record_empirical_null_tpr", "pp_rank_epsilon_lb", "t_threshold_fpr_loo"} <= set(rows[0])
    assert "## Null" in (out / "mia_reliability.md").read_text()
    # --replot redraws the figures from the CSV alone
    (out / "mia_tpr_vs_M_adult.png").unlink()
    assert _module().main(["--replot", "--out", str(out)]) == 0
    assert (out / "mia_tpr_vs_M_adult.png").stat().st_size > 0


def test_unavailable_model_exits_2_with_the_reason(tmp_path, adult_available):
    env = {**os.environ, "DPAUDIT_TABPFN_WEIGHTS": ""}
    res = subprocess.run([sys.executable, str(SCRIPT), "--model", "tabpfn", "--datasets", "adult", "--pool", "300",
                          "--models", "8", "--out", str(tmp_path / "o"), "--runs", str(tmp_path / "r")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "model 'tabpfn' needs" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "o").exists()
