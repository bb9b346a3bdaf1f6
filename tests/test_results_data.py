"""Results as data: ``to_frame`` against the result's own values, per-criterion values labelled by
criterion, iteration like a mapping, ``repr`` length, the compact notebook view, ``save`` by suffix,
and the exact-mode ``by_group`` / ``parity`` frames against fairlearn and a direct computation."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

import dpaudit
from dpaudit import AuditResult, Categorical, DPAuditError, Schema

CRITERIA = ["s ⊥ y", "s ⊥ y | a"]
SCHEMA = Schema({"s": Categorical(["F", "M", "X"]), "y": Categorical([0, 1]), "a": Categorical(["p", "q", "r"])})


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(8)
    n = 600
    s = rng.choice(["F", "M", "X"], n, p=[0.45, 0.45, 0.1])
    a = rng.choice(["p", "q", "r"], n)
    y = (rng.random(n) < np.where(s == "M", 0.6, 0.35) + np.where(a == "q", 0.1, 0.0)).astype(int)
    return pd.DataFrame({"s": s, "y": y, "a": a})


@pytest.fixture(scope="module")
def exact(frame):
    return dpaudit.audit(frame, CRITERIA, schema=SCHEMA, exact=True, measures=("tvd", "tc", "repair"))


@pytest.fixture(scope="module")
def private(frame):
    return dpaudit.audit(frame, CRITERIA, schema=SCHEMA, epsilon=1.0, seed=2)


def test_to_frame_exact_rows_are_the_result_values(exact):
    df = exact.to_frame()
    assert list(df.columns) == ["criterion", "measure", "value", "lower", "upper", "epsilon", "dp"]
    assert len(df) == len(exact.measures) * (len(CRITERIA) + 1)
    for name, m in exact.items():
        rows = df[df.measure == name]
        assert list(rows.criterion) == CRITERIA + ["(sum)"]
        assert list(rows.value) == [*m.per_criterion, m.value]
        assert rows[["lower", "upper", "epsilon"]].isna().all().all() and not rows.dp.any()


def test_to_frame_dp_has_the_released_sums_only(private):
    df = private.to_frame()
    assert list(df.criterion) == ["(sum)", "(sum)"] and list(df.measure) == list(private)
    for row in df.itertuples():
        r = private[row.measure].release
        assert (row.value, row.lower, row.upper, row.epsilon, row.dp) == (r.value, *r.interval, r.epsilon, r.dp)


def test_per_criterion_is_labelled_and_refused_in_dp_mode(exact, private):
    assert exact.per_criterion("tvd") == dict(zip(CRITERIA, exact["tvd"].per_criterion))
    assert exact.per_criterion()["repair"] == dict(zip(CRITERIA, exact["repair"].per_criterion))
    with pytest.raises(DPAuditError, match="DP audit releases only"):
        private.per_criterion("tvd")


def test_a_result_iterates_like_a_mapping(exact):
    assert list(exact) == ["tvd", "tc", "repair"] and len(exact) == 3 and "tc" in exact and 0 not in exact
    assert dict(exact.items()) == dict(exact.measures)
    with pytest.raises(KeyError, match="computed tvd, tc, repair"):
        exact["nope"]


def test_repr_is_one_short_line(exact, private, frame):
    many = dpaudit.audit(frame, ["s ⊥ y | a", "s,a ⊥ y", "a ⊥ y", "a ⊥ s", "s ⊥ a | y"],
                         schema=SCHEMA, exact=True, measures=("tvd", "tc", "repair"))
    for res in (exact, private, many):
        text = repr(res)
        assert len(text) <= 300 and "\n" not in text and f"n={res.n:,}" in text
        assert all(f"{name}={m.value:.4g}" in text for name, m in res.items())
    assert "exact" in repr(exact) and "ε=1" in repr(private)


def test_notebook_view_puts_values_first_and_folds_the_rest(exact, private):
    for res in (exact, private):
        html = res._repr_html_()
        body = html.split("</style>", 1)[1]
        assert body.count("<details>") >= 4
        assert body.index("<table") < body.index("<details>")  # the values table first
        assert not re.search(r"(?<![\w<!-])--[a-z]", body), re.search(r".{40}--[a-z].{20}", body)
        assert ("measures=(&#x27;tvd&#x27;, &#x27;tc&#x27;, &#x27;repair&#x27;)" in body) == (res is private)  # as Python


@pytest.mark.parametrize("suffix", [".json", ".html", ".txt", ".md"])
def test_save_by_suffix(exact, tmp_path, suffix):
    path = exact.save(tmp_path / f"audit{suffix}")
    text = path.read_text(encoding="utf-8")
    if suffix == ".json":
        back = AuditResult.from_dict(json.loads(text))
        assert back.to_dict() == exact.to_dict() and str(back) == str(exact)
    elif suffix == ".html":
        assert text.startswith("<!DOCTYPE html>") or text.lstrip().lower().startswith("<!doctype html>")
    else:
        assert str(exact) in text and (text.startswith("```") == (suffix == ".md"))


def test_save_refuses_an_unknown_suffix(exact, tmp_path):
    with pytest.raises(DPAuditError, match=r"cannot tell the format .*\.md \(text report in a Markdown code block\).*\.json"):
        exact.save(tmp_path / "audit.xlsx")
    assert not (tmp_path / "audit.xlsx").exists()


def test_by_group_matches_fairlearn_metricframe(exact, frame):
    fairlearn = pytest.importorskip("fairlearn.metrics")
    by = exact.by_group("s ⊥ y")
    frame_mf = fairlearn.MetricFrame(metrics={"rate": fairlearn.selection_rate}, y_true=frame.y, y_pred=frame.y,
                                     sensitive_features=frame.s)
    assert by.index.names == ["s"]
    assert by["y=1"].to_dict() == pytest.approx(frame_mf.by_group["rate"].to_dict(), abs=1e-12)
    assert by["rows"].to_dict() == frame.s.value_counts().to_dict()
    parity = exact.parity()
    row = parity[(parity.criterion == "s ⊥ y") & (parity.outcome == "y=1")].iloc[0]
    assert row.block == "(all rows)" and row.groups == 3
    assert row.difference == pytest.approx(fairlearn.demographic_parity_difference(
        frame.y, frame.y, sensitive_features=frame.s), abs=1e-12)
    assert row.ratio == pytest.approx(fairlearn.demographic_parity_ratio(
        frame.y, frame.y, sensitive_features=frame.s), abs=1e-12)


def test_conditional_by_group_matches_fairlearn_control_features(exact, frame):
    fairlearn = pytest.importorskip("fairlearn.metrics")
    by = exact.by_group(1)
    assert by.index.names == ["a", "s"]
    mf = fairlearn.MetricFrame(metrics=fairlearn.selection_rate, y_true=frame.y, y_pred=frame.y,
                               sensitive_features=frame.s, control_features=frame.a)
    assert by["y=1"].to_dict() == pytest.approx(mf.by_group.to_dict(), abs=1e-12)
    parity = exact.parity()
    rows = parity[(parity.criterion == "s ⊥ y | a") & (parity.outcome == "y=1")].set_index("block")
    diff, ratio = mf.difference(), mf.ratio()
    for block in ("p", "q", "r"):
        assert rows.loc[f"a={block}", "difference"] == pytest.approx(diff[block], abs=1e-12)
        assert rows.loc[f"a={block}", "ratio"] == pytest.approx(ratio[block], abs=1e-12)


def test_by_group_against_a_direct_count(exact, frame):
    by = exact.by_group("s ⊥ y | a")
    for (a, s), row in by.iterrows():
        sub = frame[(frame.a == a) & (frame.s == s)]
        assert row["rows"] == len(sub) and row["y=0"] == (sub.y == 0).mean() and row["y=1"] == (sub.y == 1).mean()
    parity = exact.parity()
    assert set(parity.outcome) == {"y=0", "y=1"} and len(parity) == 2 * (1 + 3)
    for r in parity.itertuples():
        assert 0 <= r.difference <= 1 and (math.isnan(r.ratio) or 0 <= r.ratio <= 1)


def test_by_group_is_refused_in_dp_mode_and_after_json(private, exact):
    for call in (private.by_group, private.parity):
        with pytest.raises(DPAuditError, match="not release"):
            call()
    back = AuditResult.from_dict(json.loads(exact.to_json()))
    with pytest.raises(DPAuditError, match="read back from JSON"):
        back.by_group()
    with pytest.raises(DPAuditError, match="no criterion 'x ⊥ y'"):
        exact.by_group("x ⊥ y")


def test_the_text_report_reads_exact_values_as_exact_and_says_how_to_read_them():
    df = pd.DataFrame({"s": ["a", "b"] * 30, "y": [0, 1, 1] * 20})
    schema = dpaudit.Schema({"s": dpaudit.Categorical(["a", "b"]), "y": dpaudit.Categorical([0, 1])})
    text = str(dpaudit.audit(df, "s ⊥ y", schema=schema, exact=True))
    row = next(line for line in text.splitlines() if line.strip().startswith("U_MI^TVD"))
    assert " exact " in row and "[" not in row
    assert "how to read:" in text and "0 = " in text.split("how to read:")[1]


def test_markdown_is_one_format_for_python_and_the_command(tmp_path):
    from typer.testing import CliRunner

    from dpaudit.cli import app

    df = pd.DataFrame({"s": ["a", "b"] * 30, "y": [0, 1, 1] * 20})
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.json").write_text(json.dumps({"columns": {"s": {"type": "categorical", "values": ["a", "b"]},
                                                          "y": {"type": "categorical", "values": [0, 1]}}}))
    res = CliRunner().invoke(app, ["fairness", str(tmp_path / "d.csv"), "-c", "s ⊥ y", "--schema",
                                   str(tmp_path / "s.json"), "--exact", "--save", str(tmp_path / "cli.md")])
    assert res.exit_code == 0, res.output
    schema = dpaudit.Schema.from_json(tmp_path / "s.json")
    dpaudit.audit(str(tmp_path / "d.csv"), "s ⊥ y", schema=schema, exact=True).save(tmp_path / "py.md")
    cli, py = (tmp_path / "cli.md").read_text(), (tmp_path / "py.md").read_text()
    assert cli.startswith("```text\n") and cli.endswith("```\n")

    def same(text):  # the one line that differs names the command's flags or the Python call
        return [line for line in text.splitlines() if "add it with" not in line]
    assert same(cli) == same(py)
