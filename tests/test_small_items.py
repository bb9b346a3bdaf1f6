"""Issue 26, point 8: --version, ε printed with ≤ 3 significant digits, "1 criterion", the naming
mechanism named once on the DP page, a repeated criterion refused, and ledger entries that say
which data and criteria their ε was spent on."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import dpaudit
from dpaudit import Budget, Categorical, CriterionError, DPAuditError, Schema, audit
from dpaudit._version import __version__
from dpaudit.cli import app
from dpaudit.criteria import parse_criteria
from dpaudit.privacy._ledger_entries import data_fingerprint
from dpaudit.report.html import render_html

SCHEMA = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1]), "g": Categorical(["a", "b", "c"])})


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(1)
    return pd.DataFrame({"sex": rng.choice(["F", "M"], 300), "y": rng.integers(0, 2, 300),
                         "g": rng.choice(["a", "b", "c"], 300)})


def test_version_flag():
    out = CliRunner().invoke(app, ["--version"])
    assert out.exit_code == 0 and out.stdout.strip() == f"dpaudit {__version__}"


@pytest.fixture(scope="module")
def third(frame):
    """An audit whose three measures get ε = 1/3 each: the ε a long float would print as 0.333333."""
    return audit(frame, "sex ⊥ y", schema=SCHEMA, epsilon=1.0, measures=("tvd", "tc", "repair"), seed=3)


def test_epsilon_has_at_most_three_significant_digits(third):
    text, page = str(third), render_html(third)
    for shown in (text, page, "\n".join(third.stages)):
        assert "0.3333" not in shown and "0.1667" not in shown and "0.16667" not in shown
        assert "0.333" in shown
    eps = re.findall(r"ε = ([0-9.e-]+)", text + page)
    assert eps and all(len(v.replace("0.", "").lstrip("0").replace(".", "")) <= 3 for v in eps), eps


def test_one_criterion_is_singular(third, frame):
    assert any("sum over 1 criterion " in s for s in third.stages)
    assert not any("1 criteria" in s for s in third.stages)
    two = audit(frame, ["sex ⊥ y", "sex ⊥ y | g"], schema=SCHEMA, epsilon=1.0, seed=0)
    assert any("sum over 2 criteria " in s for s in two.stages)


def test_the_naming_mechanism_is_named_once(third):
    page = render_html(third)
    assert "report-noisy-top-k (report-noisy-top-k" not in page
    assert "named privately by noisy top-k (seeded numpy Gumbel, NOT private)" in page


@pytest.mark.parametrize("crits", [["sex ⊥ y", "sex ⊥ y"], ["sex ⊥ y | g", "sex ⊥ y"] + ["sex ⊥ y | g"],
                                   ["sex, g ⊥ y", "g, sex ⊥ y"]])
def test_a_repeated_criterion_is_refused(crits, frame):
    with pytest.raises(CriterionError, match="is given twice"):
        parse_criteria(crits)
    with pytest.raises(DPAuditError, match="is given twice"):
        audit(frame, crits, schema=SCHEMA, exact=True)


def test_distinct_criteria_on_the_same_columns_are_kept():
    assert len(parse_criteria(["sex ⊥ y | g", "sex ⊥ g | y", "sex ⊥ y"])) == 3


def test_cli_refuses_a_repeated_criterion():
    out = CliRunner().invoke(app, ["fairness", "adult", "--preset", "paper", "-c", "sex ⊥ income", "--exact"])
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr.startswith("dpaudit: error: criterion 'sex ⊥ income' is given twice")


def test_ledger_records_the_file_and_criteria(frame, tmp_path):
    data, schema, ledger = tmp_path / "d.csv", tmp_path / "s.json", tmp_path / "ledger.json"
    frame.to_csv(data, index=False)
    SCHEMA.to_json(schema)
    runner = CliRunner()
    ran = runner.invoke(app, ["fairness", str(data), "-c", "sex ⊥ y", "-c", "sex ⊥ y | g", "--schema", str(schema),
                              "-m", "tvd", "-e", "0.5", "--ledger", str(ledger), "--total-budget", "1"])
    assert ran.exit_code == 0, ran.output
    audit(frame, "sex ⊥ y", schema=SCHEMA, measures=("tvd",), epsilon=0.25, budget=Budget.open(ledger))  # a frame: a fingerprint
    doc = json.loads(runner.invoke(app, ["ledger", str(ledger), "--json"]).stdout)
    first, second = doc["entries"]
    assert first["data"] == str(data) and first["criteria"] == ["sex ⊥ y", "sex ⊥ y | g"]
    assert second["data"] == data_fingerprint(["sex", "y", "g"], 300) and second["criteria"] == ["sex ⊥ y"]
    assert str(frame.iloc[0, 0]) not in second["data"].split("(")[0].replace("sha256", "")  # no value of the data
    shown = runner.invoke(app, ["ledger", str(ledger)]).stdout
    assert f"on {data}: sex ⊥ y; sex ⊥ y | g" in shown
    assert f"on {data_fingerprint(['sex', 'y', 'g'], 300)}: sex ⊥ y" in shown
    assert "(2 debits)" in shown


def test_fingerprint_depends_on_columns_and_rows_only():
    assert data_fingerprint(["a", "b"], 10) == data_fingerprint(["a", "b"], 10)
    assert len({data_fingerprint(["a", "b"], 10), data_fingerprint(["b", "a"], 10),
                data_fingerprint(["a", "b"], 11), data_fingerprint(["ab"], 10)}) == 4


def test_a_ledger_written_before_data_and_criteria_is_still_read(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"format": "dpaudit.ledger", "version": 1, "total_epsilon": 1.0, "entries": [
        {"id": "0" * 32, "label": "tvd", "epsilon": 0.5, "time": "2025-01-31T12:00:00+00:00", "pid": 1}]}))
    entry, = dpaudit.privacy.LedgerBudget.view(path).entries
    assert entry.data is None and entry.criteria == ()
    shown = CliRunner().invoke(app, ["ledger", str(path)])
    assert shown.exit_code == 0 and "on " not in shown.stdout and "(1 debit)" in shown.stdout


def test_a_malformed_criteria_field_is_refused(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "dpaudit.ledger", "version": 1, "total_epsilon": 1.0, "entries": [
        {"id": "0" * 32, "label": "tvd", "epsilon": 0.5, "time": "2025-01-31T12:00:00+00:00", "pid": 1,
         "criteria": "sex ⊥ y"}]}))
    with pytest.raises(dpaudit.DataError, match="criteria"):
        dpaudit.privacy.LedgerBudget.view(path)
