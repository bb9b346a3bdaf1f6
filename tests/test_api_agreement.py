"""Python and the command line are one behaviour: the same default measures (U_MI^TVD and U_TC, U_R
only when asked for), the same values on the same data (exact, and with a fixed seed), the same
refusal of an audit that says neither how private it is nor that it is exact, and a note in every
defaulted output saying how to add U_R."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import dpaudit
from dpaudit import Binned, Categorical, DPAuditError, Schema
from dpaudit._defaults import DEFAULT_MEASURES
from dpaudit.cli import app

CRITERIA = ["g ⊥ y", "g ⊥ y | z"]
SCHEMA = Schema({"g": Categorical(["a", "b"]), "y": Categorical([0, 1]), "z": Binned([0, 3, float("inf")])})


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"g": rng.choice(["a", "b"], 300), "y": rng.integers(0, 2, 300),
                          "z": rng.integers(1, 6, 300)})
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    schema = tmp_path / "schema.json"
    SCHEMA.to_json(schema)
    return str(path), str(schema)


def cli(path, schema, *args):
    argv = ["fairness", path, "--schema", schema, "--json"] + [a for c in CRITERIA for a in ("-c", c)] + list(args)
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def values(doc):
    return {name: (m["value"], m.get("per_criterion"), m["epsilon"], m["interval"]) for name, m in doc["measures"].items()}


@pytest.mark.parametrize("mode", [("--exact",), ("--epsilon", "1.5", "--seed", "11")])
def test_python_and_cli_give_the_same_measures_and_values(data, mode):
    path, schema = data
    from_cli = cli(path, schema, *mode)
    kw = {"exact": True} if mode[0] == "--exact" else {"epsilon": 1.5, "seed": 11}
    from_python = json.loads(dpaudit.audit(path, CRITERIA, schema=SCHEMA, **kw).to_json())
    assert list(from_cli["measures"]) == list(from_python["measures"]) == list(DEFAULT_MEASURES)
    assert values(from_cli) == values(from_python)
    python_note, cli_note = from_python["stages"][-1], from_cli["stages"][-1]
    assert "measures=('tvd', 'tc', 'repair')" in python_note and "U_R (repair) left out by default" in python_note
    assert "-m tvd -m tc -m repair" in cli_note and "U_R (repair) left out by default" in cli_note
    assert from_cli["stages"][:-1] == from_python["stages"][:-1]


def test_named_measures_carry_no_note_and_agree(data):
    path, schema = data
    from_cli = cli(path, schema, "--exact", "-m", "tvd", "-m", "tc", "-m", "repair")
    from_python = json.loads(dpaudit.audit(path, CRITERIA, schema=SCHEMA, exact=True,
                                           measures=("tvd", "tc", "repair")).to_json())
    assert values(from_cli) == values(from_python) and list(from_cli["measures"]) == ["tvd", "tc", "repair"]
    assert not any("left out by default" in s for s in from_cli["stages"] + from_python["stages"])


@pytest.mark.parametrize("kw", [{}, {"epsilon": None}, {"exact": False}, {"epsilon": None, "exact": False}])
def test_an_audit_without_epsilon_or_exact_is_refused(kw):
    frame = pd.DataFrame({"g": ["a", "b"] * 10, "y": [0, 1, 1, 0] * 5, "z": [1, 4] * 10})
    with pytest.raises(DPAuditError, match=r"epsilon=<float> for a DP release .* or exact=True"):
        dpaudit.audit(frame, CRITERIA, schema=SCHEMA, **kw)


def test_the_cli_refuses_neither_too(data):
    path, schema = data
    result = CliRunner().invoke(app, ["fairness", path, "--schema", schema, "-c", CRITERIA[0]])
    assert result.exit_code == 2 and "--epsilon" in result.output and "--exact" in result.output


def test_every_defaulted_output_says_how_to_add_u_r(data):
    from dpaudit.report.html import render_audit
    from dpaudit.report.text import render_audit as text

    path, _ = data
    res = dpaudit.audit(path, CRITERIA, schema=SCHEMA, epsilon=1.0)
    for shown in (str(res), text(res), render_audit(res), res.to_json(ensure_ascii=False), res._repr_html_()):
        assert "measures=('tvd', 'tc', 'repair')" in shown.replace("&#x27;", "'")


def test_progress_true_writes_step_lines_to_stderr(data, capsys):
    path, _ = data
    dpaudit.audit(path, CRITERIA, schema=SCHEMA, exact=True, measures=("tvd", "tc", "repair"), progress=True)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("dpaudit [") and "counting rows for 2 criteria" in err[0]
    assert any("U_MI^TVD" in line for line in err) and any("U_TC" in line for line in err)
    assert any("U_R" in line and "block 3/3" in line for line in err)  # the last block line is always shown
    assert capsys.readouterr().out == ""


def test_progress_is_silent_by_default(data, capsys):
    path, _ = data
    dpaudit.audit(path, CRITERIA, schema=SCHEMA, exact=True)
    assert capsys.readouterr().err == ""
