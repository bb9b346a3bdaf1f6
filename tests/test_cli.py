"""`dpaudit fairness` in both output modes, and every bad input ending in one line + exit code 2."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpaudit.cli import app

runner = CliRunner()
ADULT_CRITERIA = ["education-num ⊥ income", "sex ⊥ income", "race ⊥ income", "sex ⊥ income | hours-per-week"]


def run(*args):
    return runner.invoke(app, list(args), env={"COLUMNS": "160"})


@pytest.fixture
def csv_file(tmp_path):
    df = pd.DataFrame({"g": ["a", "a", "b", "a"] * 25, "y": [0, 0, 1, 1] * 25, "z": [1, 2, 3, 4, 5] * 20})
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": {
        "g": {"type": "categorical", "values": ["a", "b"]},
        "y": {"type": "categorical", "values": [0, 1]},
        "z": {"type": "binned", "edges": [0, 3, "inf"]},
    }}))
    return str(path), str(schema)


def test_json_exact_mode(adult_available):
    args = ["fairness", "adult", "--exact", "--json"]
    for c in ADULT_CRITERIA:
        args += ["-c", c]
    result = run(*args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["n"] == 48_842 and doc["criteria"] == ADULT_CRITERIA
    tvd = doc["measures"]["tvd"]
    assert tvd["dp"] is False and tvd["epsilon"] is None and tvd["scale"] == 0.0
    assert len(tvd["per_criterion"]) == 4
    assert tvd["value"] == pytest.approx(sum(tvd["per_criterion"]))
    assert tvd["sensitivity"] == pytest.approx(16 * 4 / 48_842)
    assert tvd["per_criterion"][1] == pytest.approx(0.014866, abs=1e-6)  # sex ⊥ income on Adult


def test_json_dp_mode(csv_file):
    path, schema = csv_file
    result = run("fairness", path, "-c", "g ⊥ y | z", "--epsilon", "0.5", "--schema", schema, "--json")
    assert result.exit_code == 0, result.output
    measures = json.loads(result.stdout)["measures"]
    # by default U_MI^TVD and U_TC (as dpaudit.audit()), sharing ε = 0.5 equally (U_TC's share: half value, half
    # names); U_R only when asked for
    assert list(measures) == ["tvd", "tc"]
    tvd, tc = measures["tvd"], measures["tc"]
    assert tvd["dp"] is True and tvd["epsilon"] == pytest.approx(0.5 / 2) and "per_criterion" not in tvd
    assert tvd["scale"] == pytest.approx(16 / 100 / (0.5 / 2))
    assert tvd["interval"][1] - tvd["interval"][0] == pytest.approx(2 * tvd["scale"] * 2.995732, rel=1e-6)
    spent = [tvd["epsilon"], tc["epsilon"], tc["top_cells_release"]["epsilon"], tc["top_cells_reliability"]["epsilon"]]
    # U_TC's share: 1/4 value, 3/4 names (4/5 of it selects the cells, 1/5 releases their reliability)
    assert tc["epsilon"] == pytest.approx(0.5 / 8)
    assert tc["top_cells_release"]["epsilon"] == pytest.approx(0.5 / 2 * 3 / 5)
    assert math.fsum(spent) == pytest.approx(0.5, rel=1e-12) and math.fsum(spent) <= 0.5 * (1 + 1e-12)


def test_one_measure_gets_the_whole_epsilon(csv_file):
    path, schema = csv_file
    result = run("fairness", path, "-c", "g ⊥ y | z", "--epsilon", "0.5", "-m", "tvd", "--schema", schema, "--json")
    measures = json.loads(result.stdout)["measures"]
    assert list(measures) == ["tvd"] and measures["tvd"]["epsilon"] == 0.5
    assert measures["tvd"]["scale"] == pytest.approx(16 / 100 / 0.5)


def test_seed_reproducible(csv_file):
    path, schema = csv_file
    args = ["fairness", path, "-c", "g _|_ y", "--epsilon", "1", "--schema", schema, "--seed", "3", "--json"]
    a, b = run(*args), run(*args)
    assert json.loads(a.stdout)["measures"]["tvd"]["value"] == json.loads(b.stdout)["measures"]["tvd"]["value"]
    assert json.loads(a.stdout)["measures"]["tvd"]["dp"] is False


def test_table_mode(csv_file):
    path, schema = csv_file
    result = run("fairness", path, "-c", "g ⊥ y", "-c", "g ⊥ y | z", "--exact", "--schema", schema)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "U_MI^TVD" in out and "n = 100" in out and "MI (bits)" in out and "NOT differentially private" in out


def test_infer_schema_says_not_dp(csv_file):
    path, _ = csv_file
    result = run("fairness", path, "-c", "g ⊥ y", "--epsilon", "1", "--infer-schema", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["dp"] is False and "inferred" in " ".join(doc["measures"]["tvd"]["reasons"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["fairness", "adult", "-c", "sex ⊥ income"], "give exactly one of --epsilon E"),
        (["fairness", "adult", "-c", "sex ⊥ income", "--exact", "--epsilon", "1"], "give exactly one of --epsilon E"),
        (["fairness", "adult", "-c", "sex ⊥ nope", "--exact"], "unknown column(s) 'nope'"),
        (["fairness", "adult", "-c", "sex income", "--exact"], "must contain exactly one '⊥'"),
        (["fairness", "adult", "-c", "sex ⊥ sex", "--exact"], "appear in both the protected and the outcome"),
        (["fairness", "adult", "-c", "sex ⊥ income", "--epsilon", "-1"], "epsilon must be a positive finite number"),
        (["fairness", "adult", "-c", "sex ⊥ income", "--exact", "-m", "nope"], "unknown measure 'nope'"),
        (["fairness", "missing.csv", "-c", "a ⊥ b", "--exact"], "not a registered dataset"),
        (["fairness", "missing.csv", "-c", "a ⊥ b", "--exact", "--infer-schema"], "does not exist"),
        (["fairness", "adult", "-c", "sex ⊥ income", "--exact", "--schema", "nope.json"], "schema file 'nope.json' does not exist"),
    ],
)
def test_bad_input_exit_2_one_line(adult_available, args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("dpaudit: error: ")
    assert result.stdout == ""


def test_out_of_domain_value_via_cli(csv_file, tmp_path):
    path, _ = csv_file
    schema = tmp_path / "narrow.json"
    schema.write_text(json.dumps({"columns": {"g": {"type": "categorical", "values": ["a"]},
                                              "y": {"type": "categorical", "values": [0, 1]}}}))
    result = run("fairness", path, "-c", "g ⊥ y", "--exact", "--schema", str(schema))
    assert result.exit_code == 2
    assert "column 'g': 1 value(s) outside the declared domain: 'b' (25 rows)" in result.stderr


def test_real_process_no_traceback(tmp_path):
    """The installed console script itself: exit code 2 and no traceback."""
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "dpaudit.cli", "fairness", str(tmp_path / "x.parquet"), "-c", "a ⊥ b",
         "--exact", "--infer-schema"],
        capture_output=True, text=True, env=env,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "does not exist" in proc.stderr


def test_tc_json_exact_and_dp(csv_file):
    path, schema = csv_file
    exact = run("fairness", path, "-c", "g ⊥ y | z", "-m", "tc", "--k", "3", "--exact", "--schema", schema, "--json")
    assert exact.exit_code == 0, exact.output
    tc = json.loads(exact.stdout)["measures"]["tc"]
    for key in ("value", "epsilon", "sensitivity", "scale", "interval", "dp", "per_criterion", "top_cells"):
        assert key in tc
    assert tc["options"] == {"k": 3, "cells": "domain", "name_cells": None}
    assert tc["sensitivity"] == pytest.approx(8 / 100)  # min(3k, 8)/n with admissible attributes
    assert {"criterion", "protected", "outcome", "admissible", "md", "count", "expected", "sign"} <= set(tc["top_cells"][0])

    dp = run("fairness", path, "-c", "g ⊥ y", "-m", "tvd", "-m", "tc", "--epsilon", "1", "--schema", schema,
             "--split", "tvd=0.4", "--split", "tc=0.6", "--name-cells", "2", "--json")
    assert dp.exit_code == 0, dp.output
    doc = json.loads(dp.stdout)["measures"]
    assert doc["tvd"]["epsilon"] == pytest.approx(0.4) and doc["tc"]["epsilon"] == pytest.approx(0.15)
    assert doc["tc"]["top_cells_release"]["epsilon"] == pytest.approx(0.36)
    assert doc["tc"]["top_cells_reliability"]["epsilon"] == pytest.approx(0.09)
    assert len(doc["tc"]["top_cells"]) == 2 and "md" not in doc["tc"]["top_cells"][0]  # no exact MD ...
    assert {"noisy_md", "reliability"} <= set(doc["tc"]["top_cells"][0])  # ... only released ones
    assert "per_criterion" not in doc["tc"]


def test_tc_table_mode_lists_cells(csv_file):
    path, schema = csv_file
    result = run("fairness", path, "-c", "g ⊥ y", "-m", "tc", "--exact", "--schema", schema)
    assert result.exit_code == 0, result.output
    assert "U_TC top cells (exact)" in result.stdout and "represented" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["--split", "tvd"], "--split takes MEASURE=FRACTION"),
    (["--split", "tvd=0.3", "--split", "tc=0.3"], "must sum to 1"),
    (["--cells", "observed", "--name-cells", "2"], "naming top cells privately needs cells='domain'"),
    (["--k", "0"], "k must be an integer >= 1"),
])
def test_tc_bad_options(csv_file, args, message):
    path, schema = csv_file
    result = run("fairness", path, "-c", "g ⊥ y", "-m", "tvd", "-m", "tc", "--epsilon", "1", "--schema", schema, *args)
    assert result.exit_code == 2 and message in result.stderr


@pytest.mark.parametrize("semantics", ["ci", "bag", "set"])
def test_repair_json_and_table(csv_file, semantics):
    path, schema = csv_file
    exact = run("fairness", path, "-c", "g ⊥ y | z", "-m", "repair", "--semantics", semantics, "--exact",
                "--schema", schema, "--json")
    assert exact.exit_code == 0, exact.output
    rep = json.loads(exact.stdout)["measures"]["repair"]
    assert rep["semantics"] == semantics and rep["sensitivity"] == (2.002 if semantics == "ci" else 2.0) and rep["exact"] is True
    assert rep["options"] == {"semantics": semantics, "work_limit": 30.0, "time_limit": None}
    assert rep["value"] == pytest.approx(sum(b["value"] for b in rep["per_block"]))
    table = run("fairness", path, "-c", "g ⊥ y", "-m", "repair", "--semantics", semantics, "--exact", "--schema", schema)
    assert table.exit_code == 0 and f"U_R ({semantics}) repair" in table.stdout
    dp = run("fairness", path, "-c", "g ⊥ y", "-m", "repair", "--semantics", semantics, "--epsilon", "2",
             "--schema", schema, "--json")
    rep = json.loads(dp.stdout)["measures"]["repair"]
    assert rep["dp"] is True and rep["scale"] == pytest.approx(1.001 if semantics == "ci" else 1.0) and "per_block" not in rep


def test_repair_bad_semantics(csv_file):
    path, schema = csv_file
    result = run("fairness", path, "-c", "g ⊥ y", "-m", "repair", "--semantics", "multiset", "--exact", "--schema", schema)
    assert result.exit_code == 2 and "semantics must be one of ci, bag, set" in result.stderr


def test_repair_wcnf_roundtrip_with_rc2(csv_file, tmp_path):
    """The exported formula's optimum (RC2) equals dpaudit's exact U_R (set semantics)."""
    from pysat.examples.rc2 import RC2
    from pysat.formula import WCNF

    from dpaudit import Schema, audit, repair_wcnf

    path, schema_file = csv_file
    schema = Schema.from_json(schema_file)
    out = tmp_path / "u_r.wcnf"
    text = repair_wcnf(path, ["g ⊥ y | z", "g ⊥ y"], schema=schema, semantics="set", path=str(out))
    assert out.read_text() == text
    solver = RC2(WCNF(from_string=text))
    solver.compute()
    exact = audit(path, ["g ⊥ y | z", "g ⊥ y"], measures=("repair",), schema=schema, semantics="set", exact=True)
    assert solver.cost == exact["repair"].value

    result = run("repair-wcnf", path, "-c", "g ⊥ y", "--semantics", "bag", "--schema", schema_file, "-o",
                 str(tmp_path / "cli.wcnf"))
    assert result.exit_code == 0 and "p wcnf" in result.stdout and (tmp_path / "cli.wcnf").is_file()
    bad = run("repair-wcnf", path, "-c", "g ⊥ y", "--semantics", "ci", "--schema", schema_file, "-o",
              str(tmp_path / "ci.wcnf"))
    assert bad.exit_code == 2 and "no tuple-level WCNF encoding" in bad.stderr
    assert not (tmp_path / "ci.wcnf").exists()  # nothing written half-way


@pytest.mark.parametrize("name", __import__("dpaudit").datasets.names())
def test_every_dataset_preset_runs_from_the_cli(adult_available, name):
    from dpaudit import datasets

    presets = datasets.info(name).presets
    preset = "paper" if "paper" in presets else next(iter(presets))
    result = run("fairness", name, "--preset", preset, "--exact", "--json", "-m", "tvd", "-m", "tc")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["n"] == datasets.info(name).rows and doc["criteria"] == list(presets[preset])
    assert all(np.isfinite(v) for v in doc["measures"]["tvd"]["per_criterion"])


def test_datasets_commands():
    listing = run("datasets", "list", "--json")
    assert listing.exit_code == 0
    assert {d["name"] for d in json.loads(listing.stdout)} >= {"adult", "compas", "healthcare", "stackoverflow"}
    info = json.loads(run("datasets", "info", "compas").stdout)
    assert info["rows"] == 11_757 and "paper" in info["presets"]
    assert run("datasets", "path", "adult").stdout.strip().endswith("adult")
    synthetic = run("datasets", "path", "census")
    assert synthetic.exit_code == 2 and "has no files to locate" in synthetic.stderr
    bad = run("datasets", "info", "nope")
    assert bad.exit_code == 2 and "unknown dataset 'nope'" in bad.stderr
    no_preset = run("fairness", "credit", "--preset", "paper", "--exact")
    assert no_preset.exit_code == 2 and "has no preset 'paper'; presets: default" in no_preset.stderr


def test_work_and_time_limit_options_reach_the_repair(csv_file):
    path, schema = csv_file
    ok = run("fairness", path, "-c", "g ⊥ y", "-m", "repair", "--semantics", "bag", "--work-limit", "4",
             "--time-limit", "2.5", "--exact", "--schema", schema, "--json")
    assert json.loads(ok.stdout)["measures"]["repair"]["options"] == {"semantics": "bag", "work_limit": 4.0,
                                                                       "time_limit": 2.5}
    for flag, name in (("--time-limit", "time_limit"), ("--work-limit", "work_limit")):
        bad = run("fairness", path, "-c", "g ⊥ y", "-m", "repair", flag, "0", "--exact", "--schema", schema)
        assert bad.exit_code == 2 and f"{name} must be a finite number > 0" in bad.stderr
