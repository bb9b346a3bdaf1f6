"""The block diagnostic (dpaudit.diagnostics) and what --infer-schema infers (dpaudit.counting.infer).

Issue 26: ``gender ⊥ hired | salary`` with one block per distinct salary reported U_MI^TVD ≈ 0.0005
and no warning; ``hired`` of yes/no was reported as False/True. Every number here is checked against
a direct computation (numpy on the raw rows), not against dpaudit's own counting.
"""

import json

import numpy as np
import pandas as pd
import pytest

import dpaudit
from dpaudit import Binned, Categorical, Schema
from dpaudit.counting import infer_schema
from dpaudit.diagnostics import (
    DIAGNOSTIC_SHARE,
    MIN_BLOCK_ROWS,
    WARN_SHARE,
    informative,
    plan,
    public_bound,
    small_share,
    soft_small_rows,
)
from dpaudit.report.html import render_audit as render_html
from dpaudit.report.text import render_audit as render_text

N = 20_000


@pytest.fixture(scope="module")
def singleton():
    """20,000 rows, ``salary`` distinct on every row: one block per row when declared as categories."""
    rng = np.random.default_rng(0)
    gender = rng.choice(["F", "M"], N)
    salary = rng.permutation(N)
    hired = np.where(rng.random(N) < 0.3 + 0.2 * (salary / N), "yes", "no")
    frame = pd.DataFrame({"gender": gender, "hired": hired, "salary": salary})
    base = {"gender": Categorical(["F", "M"]), "hired": Categorical(["no", "yes"])}
    singletons = Schema({**base, "salary": Categorical(list(range(N)))})
    binned = Schema({**base, "salary": Binned([0, 5_000, 10_000, 15_000, 20_000])})
    return frame, singletons, binned


CRIT = "gender ⊥ hired | salary"


def _direct_share(frame, column, min_rows=MIN_BLOCK_ROWS):
    sizes = frame[column].value_counts().to_numpy()
    return sizes[sizes < min_rows].sum() / len(frame)


def test_singleton_blocks_warn_in_exact_mode_and_every_output(singleton):
    frame, singletons, _ = singleton
    res = dpaudit.audit(frame, CRIT, schema=singletons, exact=True)
    (d,) = res.diagnostics
    assert (d.blocks, d.nonempty_blocks, d.median_rows, d.kind) == (N, N, 1.0, "exact")
    assert d.small_share == pytest.approx(_direct_share(frame, "salary")) == 1.0
    assert d.warning and "bin the admissible column" in d.warning and res.warnings == (d.warning,)
    assert "WARNING, degenerate blocks" in render_text(res) and d.warning in render_text(res)
    doc = json.loads(res.to_json())
    assert doc["warnings"] == [d.warning] and doc["diagnostics"][0]["small_share"] == 1.0
    assert "Degenerate blocks" in render_html(res)
    back = dpaudit.AuditResult.from_dict(doc)
    assert back.diagnostics == res.diagnostics


def test_singleton_blocks_warn_in_dp_mode_from_a_release(singleton):
    frame, singletons, _ = singleton
    res = dpaudit.audit(frame, CRIT, schema=singletons, epsilon=1.0, measures=("tvd",))
    (d,) = res.diagnostics
    assert d.kind == "released" and d.epsilon == pytest.approx(DIAGNOSTIC_SHARE)
    assert res["tvd"].release.epsilon == pytest.approx(1.0 - DIAGNOSTIC_SHARE)  # the budget is never exceeded
    assert d.median_rows is None and d.nonempty_blocks is None  # nothing exact in DP mode
    half = (2 / N) / DIAGNOSTIC_SHARE * np.log(20)
    assert d.interval[1] - d.interval[0] == pytest.approx(2 * half)
    assert d.warning is not None and res.warnings == (d.warning,)
    doc = json.loads(res.to_json())
    assert doc["warnings"] and dpaudit.AuditResult.from_dict(doc).diagnostics == res.diagnostics
    assert "block diagnostic" in " ".join(res.stages)


def test_binned_blocks_do_not_warn_and_spend_no_epsilon(singleton):
    frame, _, binned = singleton
    exact = dpaudit.audit(frame, CRIT, schema=binned, exact=True)
    assert exact.warnings == () and exact.diagnostics[0].small_share == 0.0 and exact.diagnostics[0].blocks == 4
    dp = dpaudit.audit(frame, CRIT, schema=binned, measures=("tvd",), epsilon=1.0, seed=4)
    assert dp.warnings == () and dp.diagnostics[0].kind == "public" and dp.diagnostics[0].epsilon is None
    assert dp.diagnostics[0].interval == (0.0, public_bound(4, N))
    # the public bound rules the warning out: the measures keep the whole ε, noise as with the diagnostic off
    off = dpaudit.audit(frame, CRIT, schema=binned, measures=("tvd",), epsilon=1.0, seed=4, diagnostic_share=0)
    assert dp["tvd"].value == off["tvd"].value and dp["tvd"].release.epsilon == 1.0


def test_null_data_with_tiny_blocks_warn():
    """P and O independent, 2,000 admissible values over 20,000 rows (≈ 10 rows a block): the measure is
    far from 0 by the block structure alone, and the diagnostic says so."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"p": rng.integers(0, 2, N), "o": rng.integers(0, 2, N), "a": rng.integers(0, 2000, N)})
    schema = Schema({"p": Categorical([0, 1]), "o": Categorical([0, 1]), "a": Categorical(list(range(2000)))})
    res = dpaudit.audit(frame, "p ⊥ o | a", schema=schema, exact=True)
    assert res.diagnostics[0].small_share == pytest.approx(_direct_share(frame, "a")) and res.warnings
    assert res.diagnostics[0].small_share > 0.9
    one_block = dpaudit.audit(frame, "p ⊥ o", schema=schema, exact=True)
    assert res["tvd"].value > 10 * one_block["tvd"].value  # tiny blocks look dependent under the null
    dp = dpaudit.audit(frame, "p ⊥ o | a", schema=schema, epsilon=1.0)
    assert dp.warnings and dp.diagnostics[0].kind == "released"


def test_share_zero_releases_nothing_and_says_the_bound(singleton):
    frame, singletons, _ = singleton
    res = dpaudit.audit(frame, CRIT, schema=singletons, measures=("tvd",), epsilon=1.0, diagnostic_share=0)
    (d,) = res.diagnostics
    assert d.kind == "public" and d.epsilon is None and d.interval == (0.0, 1.0)
    assert d.warning and "not checked" in d.warning and res["tvd"].release.epsilon == 1.0


@pytest.mark.parametrize("bad", [-0.1, 1.0, float("nan"), True, "0.1"])
def test_bad_share_refused(singleton, bad):
    frame, singletons, _ = singleton
    with pytest.raises(dpaudit.DPAuditError, match="diagnostic_share"):
        dpaudit.audit(frame, CRIT, schema=singletons, epsilon=1.0, diagnostic_share=bad)


def test_plan_releases_only_what_could_warn():
    # 100 rows in 3 blocks: the bound 0.6 less the half-width (2/100)/0.05·ln 20 = 1.2 can never exceed 10 %
    assert plan([3], 100, 0.05) == [0.0] and not informative(3, 100, 0.05)
    # 20,000 rows: one block (public), 4 blocks (bound 0.004), 20,000 blocks (released with all of ε_d)
    assert plan([1, 4, 20_000], N, 0.05) == [0.0, 0.0, 0.05]
    assert plan([500, 20_000], N, 0.05) == [0.025, 0.025] and plan([500], N, 0.0) == [0.0]


def test_small_and_soft_counts_against_a_loop():
    rng = np.random.default_rng(2)
    for _ in range(50):
        rows = rng.integers(0, 60, rng.integers(1, 30))
        counts = rows.reshape(-1, 1, 1)
        m = MIN_BLOCK_ROWS
        assert small_share(counts, m) == pytest.approx(sum(c for c in rows if c < m) / max(rows.sum(), 1))
        assert soft_small_rows(counts, m) == sum(c if c <= m else max(0, 2 * m - c) for c in rows)


def test_adult_presets_do_not_warn():
    """Adult's paper preset: max exact share 0.0044 (sex ⊥ income | hours-per-week, 99 blocks); in DP mode
    the public bound (≤ 0.041) rules the warning out, so no ε is spent on it."""
    from dpaudit import datasets

    frame, schema = datasets.load("adult")
    crits = datasets.preset("adult", "paper")
    exact = dpaudit.audit(frame, crits, schema=schema, exact=True)
    assert exact.warnings == () and max(d.small_share for d in exact.diagnostics) < 0.005
    dp = dpaudit.audit(frame, crits, schema=schema, epsilon=1.0, seed=0)
    assert dp.warnings == () and all(d.epsilon is None for d in dp.diagnostics)
    assert max(d.interval[1] for d in dp.diagnostics) < WARN_SHARE


# -- inference ---------------------------------------------------------------------------------------------


@pytest.fixture()
def hr_csv(tmp_path):
    rng = np.random.default_rng(3)
    n = 2_000
    salary = np.round(rng.normal(50_000, 12_000, n), 2)
    frame = pd.DataFrame({"gender": rng.choice(["F", "M"], n), "hired": rng.choice(["yes", "no"], n),
                          "salary": salary, "flag": rng.choice(["true", "false"], n)})
    path = tmp_path / "hr.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_inference_keeps_yes_no_as_text(hr_csv):
    path, _ = hr_csv
    schema = infer_schema(path)
    assert schema["hired"] == Categorical(["no", "yes"]) and schema["flag"] == Categorical(["false", "true"])
    res = dpaudit.audit(path, "gender ⊥ hired", schema="infer", exact=True, measures=("tc",))
    named = [c.outcome["hired"] for c in res["tc"].details.top_cells]
    assert set(named) == {"yes", "no"}
    assert "hired=yes" in render_text(res) and "hired=True" not in render_text(res)


def test_inference_bins_a_continuous_column_and_says_so(hr_csv):
    path, frame = hr_csv
    schema = infer_schema(path)
    dom = schema["salary"]
    assert isinstance(dom, Binned) and dom.n_bins <= 11
    widths = np.diff(dom.edges)
    assert np.allclose(widths, widths[0]) and dom.edges[0] <= frame.salary.min() < frame.salary.max() < dom.edges[-1]
    assert "salary" in schema.source and "equal-width" in schema.source
    res = dpaudit.audit(path, "gender ⊥ hired | salary", schema="infer", exact=True)
    assert any("binned" in s and "salary" in s for s in res.stages) and res.warnings == ()
    counts = np.histogram(frame.salary, bins=np.array(dom.edges))[0]
    assert res.diagnostics[0].small_share == pytest.approx(counts[counts < MIN_BLOCK_ROWS].sum() / len(frame))
    with pytest.raises(dpaudit.SchemaError, match="salary"):
        infer_schema(path, bins=None)


def test_inference_keeps_few_numbers_as_categories():
    frame = pd.DataFrame({"k": list(range(20)) * 3, "x": [0.5, 1.5] * 30})
    schema = infer_schema(frame)
    assert schema["k"] == Categorical(list(range(20))) and schema["x"] == Categorical([0.5, 1.5])


def test_the_command_warns_on_the_terminal_and_in_json(singleton, tmp_path):
    from typer.testing import CliRunner

    from dpaudit.cli import app

    frame, singletons, _ = singleton
    path, schema = tmp_path / "hr.csv", tmp_path / "schema.json"
    frame.to_csv(path, index=False)
    singletons.to_json(schema)
    base = ["fairness", str(path), "-c", CRIT, "-m", "tvd", "--schema", str(schema)]
    runner = CliRunner()
    shown = runner.invoke(app, base + ["--exact"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "degenerate blocks" in shown.stdout and "bin the admissible column" in shown.stdout
    doc = json.loads(runner.invoke(app, base + ["--epsilon", "1", "--json", "--diagnostic-share", "0.1"]).stdout)
    assert doc["warnings"] and doc["diagnostics"][0]["epsilon"] == pytest.approx(0.1)
    assert doc["measures"]["tvd"]["epsilon"] == pytest.approx(0.9)


# -- the outside review's findings (issue 26) -----------------------------------------------------

def test_the_notebook_view_shows_the_warning_before_anything_is_folded(singleton):
    frame, singletons, _ = singleton
    view = dpaudit.audit(frame, CRIT, schema=singletons, exact=True)._repr_html_()
    warning, folded = view.find("Degenerate blocks"), view.find("<details>")
    assert 0 < warning < folded and view.find("how to read") < 0  # readings: a list, not the text label
    assert view.find('<ul class="readings">') < folded


def test_a_released_warning_rounds_its_at_least_share_down():
    from dpaudit.diagnostics import _warning

    text = _warning("p ⊥ o | a", 0.9966, WARN_SHARE, MIN_BLOCK_ROWS, "released")
    assert "at least 99.6% of the rows" in text
    assert "at least 100% of the rows" in _warning("p ⊥ o | a", 1.004, WARN_SHARE, MIN_BLOCK_ROWS, "released")


def test_the_diagnostic_debit_and_trail_name_one_criterion_and_seeded_noise(singleton, tmp_path):
    frame, singletons, _ = singleton
    budget = dpaudit.Budget.open(tmp_path / "l.json", 2.0)
    seeded = dpaudit.audit(frame, CRIT, schema=singletons, epsilon=1.0, seed=1, budget=budget)
    labels = [e["label"] for e in json.loads((tmp_path / "l.json").read_text())["entries"]]
    assert "block diagnostic (1 criterion)" in labels
    (trail,) = [s for s in seeded.stages if s.startswith("block diagnostic:")]
    assert "seeded numpy Laplace, NOT private" in trail and "OpenDP" not in trail


def test_diagnostic_share_needs_epsilon(singleton):
    frame, singletons, _ = singleton
    with pytest.raises(dpaudit.DPAuditError, match="diagnostic_share is a share of ε: it needs epsilon"):
        dpaudit.audit(frame, CRIT, schema=singletons, exact=True, diagnostic_share=0.5)
