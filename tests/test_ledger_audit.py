"""The ledger wired into audits: ``audit(..., budget=Budget.open(...))`` and ``dpaudit fairness --ledger``.

One audit is one all-or-nothing debit taken before its first release; audits of the same data share
the file's total, and the one that does not fit is refused without touching the file.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpaudit import Budget, BudgetError, Categorical, DPAuditError, Schema, audit
from dpaudit.cli import app

SCHEMA = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1]), "g": Categorical(["a", "b", "c"])})


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"sex": rng.choice(["F", "M"], 500), "y": rng.integers(0, 2, 500),
                         "g": rng.choice(["a", "b", "c"], 500)})


def test_an_audit_is_one_debit_of_all_its_releases(frame, tmp_path):
    budget = Budget.open(tmp_path / "l.json", 2.0)
    audit(frame, "sex ⊥ y | g", schema=SCHEMA, epsilon=1.0, measures=("tvd", "tc"), budget=budget)
    labels = [e.label for e in budget.entries]
    assert labels == ["tvd", "tc", "tc: explanation"]
    assert len({e.time for e in budget.entries}) == 1  # written together, under one lock
    assert budget.spent == pytest.approx(1.0)


def test_the_audit_that_does_not_fit_is_refused_and_records_nothing(frame, tmp_path):
    path = tmp_path / "l.json"
    audit(frame, "sex ⊥ y", schema=SCHEMA, epsilon=0.7, budget=Budget.open(path, 1.0), measures=("tvd",))
    before = path.read_bytes()
    with pytest.raises(BudgetError, match="only 0.3 of the total 1 remains"):
        audit(frame, "sex ⊥ y", schema=SCHEMA, epsilon=0.5, budget=Budget.open(path), measures=("tvd",))
    assert path.read_bytes() == before
    audit(frame, "sex ⊥ y", schema=SCHEMA, epsilon=0.3, budget=Budget.open(path), measures=("tvd",))  # what remains still fits
    assert Budget.open(path).remaining == 0


def test_a_refused_audit_debits_nothing_even_after_counting(frame, tmp_path):
    """A failure after counting (here: a share below the smallest releasable ε) happens before the debit."""
    budget = Budget.open(tmp_path / "l.json", 1.0)
    with pytest.raises(DPAuditError):
        audit(frame, "sex ⊥ y", schema=SCHEMA, epsilon=1.0, measures=("tvd", "tc"),
              split={"tvd": 1e-12, "tc": 1 - 1e-12}, budget=budget)
    with pytest.raises(DPAuditError, match="values outside the declared domain|outside the declared domain"):
        audit(frame.assign(y=frame.y + 5), "sex ⊥ y", schema=SCHEMA, epsilon=0.5, budget=budget, measures=("tvd",))
    assert budget.entries == ()


# -- the command line ----------------------------------------------------------------------------

@pytest.fixture
def files(frame, tmp_path):
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    schema = tmp_path / "s.json"
    SCHEMA.to_json(schema)
    return data, schema, tmp_path / "ledger.json"


def _fair(data, schema, *extra):
    return ["fairness", str(data), "-c", "sex ⊥ y", "--schema", str(schema), *map(str, extra)]


def test_cli_audits_share_the_ledger_until_it_is_spent(files):
    data, schema, ledger = files
    runner = CliRunner()
    first = runner.invoke(app, _fair(data, schema, "--epsilon", 0.6, "--ledger", ledger, "--total-budget", 1))
    assert first.exit_code == 0, first.output
    assert "spent ε = 0.6 of 1, 0.4 remains" in first.stderr
    refused = runner.invoke(app, _fair(data, schema, "--epsilon", 0.5, "--ledger", ledger))
    assert refused.exit_code == 2
    assert refused.stderr.strip().startswith("dpaudit: error: release 'audit of tvd, tc' asks for epsilon=0.5")
    assert refused.stdout == ""
    shown = runner.invoke(app, ["ledger", str(ledger), "--json"])
    doc = json.loads(shown.stdout)
    assert doc["total_epsilon"] == 1 and doc["remaining"] == pytest.approx(0.4)
    # the default measures share the audit's ε equally; U_TC's share is 1/4 value, 3/4 named cells
    entries = {e["label"]: e["epsilon"] for e in doc["entries"]}
    assert list(entries) == ["tvd", "tc", "tc: explanation"]
    assert entries == pytest.approx({"tvd": 0.3, "tc": 0.075, "tc: explanation": 0.225})
    assert math.fsum(entries.values()) == pytest.approx(0.6, rel=1e-12)
    text = runner.invoke(app, ["ledger", str(ledger)])
    assert "total ε = 1, spent 0.6, remaining 0.4 (3 debits)" in text.stdout


def test_cli_ledger_total_must_match(files):
    data, schema, ledger = files
    runner = CliRunner()
    assert runner.invoke(app, _fair(data, schema, "--epsilon", 0.1, "--ledger", ledger, "--total-budget", 1)).exit_code == 0
    other = runner.invoke(app, _fair(data, schema, "--epsilon", 0.1, "--ledger", ledger, "--total-budget", 2))
    assert other.exit_code == 2 and "1" in other.stderr and "2" in other.stderr


@pytest.mark.parametrize("extra,fragment", [
    (["--exact", "--ledger", "{ledger}", "--total-budget", "1"], "it needs --epsilon"),
    (["--epsilon", "1", "--total-budget", "1"], "give --ledger FILE too"),
    (["--epsilon", "1", "--ledger", "{ledger}"], "does not exist; create it by giving its total"),
    (["--epsilon", "1", "--ledger", "{ledger}", "--total-budget", "-1"], "total_epsilon must be a positive finite number"),
])
def test_cli_ledger_option_errors(files, extra, fragment):
    data, schema, ledger = files
    result = CliRunner().invoke(app, _fair(data, schema, *[e.format(ledger=ledger) for e in extra]))
    assert result.exit_code == 2 and fragment in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not ledger.exists()


def test_a_refused_first_audit_leaves_no_ledger_behind(files, tmp_path):
    _, schema, ledger = files
    result = CliRunner().invoke(app, _fair(tmp_path / "nope.csv", schema, "--epsilon", 1, "--ledger", ledger,
                                           "--total-budget", 1))
    assert result.exit_code == 2 and "does not exist" in result.stderr
    assert not ledger.exists() and not ledger.with_name(ledger.name + ".lock").exists()


def test_dpaudit_ledger_on_a_missing_or_corrupt_file(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["ledger", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "does not exist" in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    corrupt = runner.invoke(app, ["ledger", str(bad)])
    assert corrupt.exit_code == 2 and len(corrupt.stderr.strip().splitlines()) == 1
