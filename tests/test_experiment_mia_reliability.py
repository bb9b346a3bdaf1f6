"""experiments/mia_reliability.py: a tiny grid end to end (train, evaluate, JSON, CSV, page, figures), the page's
null columns and generated statements, and the committed results pages as renderings of the committed JSON."""

from __future__ import annotations

import copy
import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "experiments" / "mia_reliability.py"
#: The committed runs (docs/results/…): default logreg, trees, PP sign +1, trees attacked by RMIA.
COMMITTED = [ROOT / "docs" / "results" / sub for sub in ("", "hgb", "sign_positive", "hgb_rmia")]


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
    assert {"per_record_empirical_null_tpr", "pp_t_null_ci_lo", "pp_rank_null_ci_hi", "pp_rank_epsilon_lb",
            "t_threshold_fpr_loo"} <= set(rows[0])
    page = (out / "mia_reliability.md").read_text()
    assert "## Calibration on the null" in page and "## ε lower bounds for the verdict" in page
    assert page.count("| null TPR [95% CI] |") == 6  # one table per rule, the null beside the scores
    # --page-only renders the same CSV and page from the saved JSON alone
    csv_text = (out / "mia_reliability.csv").read_text()
    (out / "mia_reliability.md").unlink()
    (out / "mia_reliability.csv").unlink()
    assert _module().main(["--page-only", "--out", str(out)]) == 0
    assert (out / "mia_reliability.md").read_text() == page and (out / "mia_reliability.csv").read_text() == csv_text
    # --replot redraws the figures from the CSV alone
    (out / "mia_tpr_vs_M_adult.png").unlink()
    assert _module().main(["--replot", "--out", str(out)]) == 0
    assert (out / "mia_tpr_vs_M_adult.png").stat().st_size > 0


def test_unavailable_model_exits_2_with_the_reason(tmp_path, adult_available):
    env = {**os.environ, "DPAUDIT_TABPFN_WEIGHTS": ""}
    res = subprocess.run([sys.executable, str(SCRIPT), "--model", "tabpfn", "--datasets", "adult", "--pool", "300",
                          "--models", "8", "--out", str(tmp_path / "o"), "--runs", str(tmp_path / "r")],
                         env=env, capture_output=True, text=True, timeout=900)  # hang guard
    assert res.returncode == 2 and "model 'tabpfn' needs" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "o").exists()


def _committed(folder: Path) -> tuple[dict, str, str]:
    return (json.loads((folder / "mia_reliability.json").read_text(encoding="utf-8")),
            (folder / "mia_reliability.md").read_text(encoding="utf-8"),
            (folder / "mia_reliability.csv").read_text(encoding="utf-8"))


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda f: f.name)
def test_committed_page_and_csv_are_rendered_from_the_committed_json(folder):
    """docs/results/…/mia_reliability.{md,csv} are exactly what the page module renders from the JSON beside them."""
    page = _module().page
    doc, md, csv_text = _committed(folder)
    assert doc["config"]["quick"] is False and max(doc["config"]["models"]) == 1024
    rows = page.rows_of_doc(doc)
    assert page.render(doc, rows) == md
    assert page.csv_text(rows) == csv_text


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda f: f.name)
def test_null_statements_agree_with_the_csv_columns(folder):
    """Recount, from the CSV alone, each rule's configurations whose null TPR CI excludes its realised FPR (α for the
    parametric rule) and the verdict ε at the largest M; the page must state the same."""
    _, md, _ = _committed(folder)
    with (folder / "mia_reliability.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    pattern = (r"^- \*\*(.+?)\*\* \((\d+) configurations\): .*?excludes (?:it|α) in (\d+) \(above: (\d+), below: (\d+); "
               r"with FPC off (\d+) above and (\d+) below\)")
    statements = {m[0]: m[1:] for m in re.findall(pattern, md, flags=re.M)}
    short = _module().page.SHORT
    for rule, name in short.items():
        sel = [r for r in rows if r[f"{rule}_null_tpr"] != "nan"]
        ref = [float(r["alpha"] if rule == "per_record_parametric" else r[f"{rule}_null_fpr"]) for r in sel]
        above = [float(r[f"{rule}_null_ci_lo"]) > f for r, f in zip(sel, ref)]
        below = [float(r[f"{rule}_null_ci_hi"]) < f for r, f in zip(sel, ref)]
        off = [r["fpc"] == "False" for r in sel]
        expected = (len(sel), sum(above) + sum(below), sum(above), sum(below), sum(a and o for a, o in zip(above, off)),
                    sum(b and o for b, o in zip(below, off)))
        assert statements[name] == tuple(str(n) for n in expected), name
    for r in rows:
        if r["fpc"] == "False" and r["M"] == "1024":
            if not r["verdict_rule"]:  # the report's verdict: no valid rule, said as such
                assert f"α = {float(r['alpha']):g}: {r['verdict']}" in md
                continue
            rule = r["verdict_rule"]
            assert f"ε ≥ {float(r[f'{rule}_epsilon_lb']):.3f} by {short[rule]}" in md


def test_a_miscalibrated_null_is_counted_listed_and_marked():
    """Teeth: move one calibrated PP-t null interval and one parametric null interval above their reference FPR; the
    page must count, list and mark both, and the naive rule never carries the ε verdict."""
    page = _module().page
    doc, md, _ = _committed(COMMITTED[0])
    rows = page.rows_of_doc(doc)
    i = next(i for i, r in enumerate(rows) if not page._excluded(r, "pp_t") and not page._excluded(r, "per_record_parametric"))
    bad = copy.deepcopy(doc)
    res = bad["reports"][2 * (i // 2) + 1]["results"][i % 2]  # rows: 2 α per (scores, null) report pair
    assert res["alpha"] == rows[i]["alpha"]
    res["pp_t"]["ci"] = [res["pp_t"]["fpr"] * 1.5, res["pp_t"]["fpr"] * 2.0]
    res["per_record_parametric"]["ci"] = [2.0 * res["alpha"], 3.0 * res["alpha"]]
    bad_rows = page.rows_of_doc(bad)
    before, after = page.null_statements(rows), page.null_statements(bad_rows)
    for k in (2, 5):  # PP-t, per-record param. (the order of RULES)
        was, now = (re.search(r"above: (\d+), below: (\d+)", line).groups() for line in (before[k], after[k]))
        assert (int(now[0]), now[1]) == (int(was[0]) + 1, was[1])
        assert page._where(rows[i]) in after[k] and page._where(rows[i]) not in before[k].split("below:")[0]
    text = page.render(bad, bad_rows)
    assert text != md and text.count(" ↑ |") == md.count(" ↑ |") + 2
    assert all("by naive" not in line for line in page.epsilon_statements(bad_rows))


def test_page_only_without_a_saved_run_is_a_clear_error(tmp_path):
    from dpaudit._errors import DataError

    with pytest.raises(DataError, match="no saved run to render"):
        _module().main(["--page-only", "--out", str(tmp_path)])
