"""The fairness audit's HTML report: every released number as the JSON holds it, every figure, nothing
external; the notebook fragment; ``dpaudit fairness --html`` and ``dpaudit report``."""

import json
import re
import sys
import types

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import dpaudit
from dpaudit import Categorical, Schema, audit
from dpaudit._format import epsilon_text
from dpaudit.cli import app
from dpaudit.measures.contribution import marginal_differences
from dpaudit.privacy import Budget
from dpaudit.report._html import esc, fmt
from dpaudit.report.html import NEGATIVE_NOTE, audit_sections, render_audit, render_audit_fragment
from dpaudit.report.json import read_json, render_json
from dpaudit.results import AuditResult

ADULT_CRITERIA = ["education-num ⊥ income", "sex ⊥ income", "race ⊥ income", "sex ⊥ income | hours-per-week"]
MEASURES = ("tvd", "tc", "repair")
SVG_NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
runner = CliRunner()


@pytest.fixture(scope="module")
def adult(data_root):
    if not (data_root / "adult" / "adult.data.gz").is_file():
        pytest.skip("adult/ is missing from DPAUDIT_DATA")
    return dpaudit.datasets.load("adult")


@pytest.fixture(scope="module")
def exact_result(adult):
    frame, schema = adult
    return audit(frame, ADULT_CRITERIA, measures=MEASURES, schema=schema, exact=True)


@pytest.fixture(scope="module")
def dp_result(adult):
    frame, schema = adult
    return audit(frame, ADULT_CRITERIA, measures=MEASURES, schema=schema, epsilon=1.0, seed=7)


@pytest.fixture(scope="module")
def exact_page(exact_result):
    return render_audit(exact_result)


@pytest.fixture(scope="module")
def dp_page(dp_result):
    return render_audit(dp_result)


def _doc(result):
    """The result's JSON document, parsed: what the page's numbers must equal."""
    return json.loads(render_json(result))


def _figures(page):
    return re.findall(r'<figure data-figure="([^"]+)"(?: class="wide")?>\s*(?:<div class="scroll">)?<svg', page)


def _text(page):
    """The page's text with tags dropped (numbers in tables sit between tags)."""
    return re.sub(r"<[^>]+>", " ", page)


def _assert_self_contained(page):
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    lowered = page.lower()
    for forbidden in ("<script", "<link", "<img", "<iframe", "<object", "<embed", "@import", "url(http",
                      "base64,"):
        assert forbidden not in lowered, forbidden
    assert set(re.findall(r"https?://[^\s\"'<>)]+", page)) <= SVG_NAMESPACES
    assert re.findall(r'\sid="([^"]+)"', page) == list(dict.fromkeys(re.findall(r'\sid="([^"]+)"', page)))


# -- the exact (curator) page -----------------------------------------------------------------------

def test_exact_page_shows_every_released_number(exact_result, exact_page):
    doc, text = _doc(exact_result), _text(exact_page)
    assert fmt(doc["n"]) == "48,842" and "48,842" in text
    for criterion in doc["criteria"]:
        assert criterion in text
    for name in MEASURES:
        m = doc["measures"][name]
        for number in (m["value"], *m["interval"], m["sensitivity"], *m["per_criterion"]):
            assert f">{fmt(number)}<" in exact_page, (name, number)
    for b in doc["measures"]["tvd"]["baseline"]:
        assert f">{fmt(b['mi_nats'])}<" in exact_page and f">{fmt(b['mi_bits'])}<" in exact_page
    for cell in doc["measures"]["tc"]["top_cells"]:
        for number in (cell["md"], cell["count"], cell["expected"]):
            assert f">{fmt(number)}<" in exact_page
    # the repair of sex ⊥ income: add ≈4,524 high-income women (spec §2.3)
    assert "add 4,524 rows (sex=Female, income=&gt;50K): 1,769 → 6,293" in exact_page


def test_exact_page_warns_and_has_every_figure(exact_page):
    assert '<p class="note warn">Exact values — curator-only, NOT differentially private' in exact_page
    assert _figures(exact_page) == ["values-tvd", "values-tc", "values-repair",
                                    "md-map-1", "md-map-2", "md-map-3", "md-map-4"]
    assert "MI (nats)" in exact_page and esc(NEGATIVE_NOTE) not in exact_page
    # labelled axes with units, and the MI baseline drawn beside U_MI^TVD
    assert "U_R (rows deleted + inserted)" in exact_page and "MD, signed (+ over, − under)" in exact_page
    assert "I(P;O|A) in nats" in exact_page
    # MD of the conditional criterion: 99 blocks of hours-per-week, all drawn (4 rows × 99 columns)
    assert ">hours-per-week (block a)<" in exact_page and "Showing the" not in exact_page
    _assert_self_contained(exact_page)


def test_exact_page_explains_each_measure(exact_page):
    for phrase in ("U_MI^TVD says how strongly", "U_TC adds up the k largest cell contributions",
                   "U_R is the smallest number of rows to delete plus insert"):
        assert phrase in exact_page
    for section in ("audit", "budget", "values", "per-criterion", "cells", "repair", "caveats", "trail"):
        assert f'id="{section}"' in exact_page


# -- the DP page ------------------------------------------------------------------------------------

def test_dp_page_shows_every_released_number(dp_result, dp_page):
    doc = _doc(dp_result)
    for name in MEASURES:
        m = doc["measures"][name]
        for number in (m["value"], *m["interval"], m["sensitivity"], m["scale"]):
            assert f">{fmt(number)}<" in dp_page, (name, number)
        assert f">{epsilon_text(m['epsilon'])}<" in dp_page, name  # ε: at most 3 significant digits
        assert "per_criterion" not in m
    release = doc["measures"]["tc"]["top_cells_release"]
    assert f"ε = {epsilon_text(release['epsilon'])}, scale {fmt(release['scale'])}" in dp_page
    assert f">{epsilon_text(doc['epsilon'])}<" in dp_page  # the audit's total ε


def test_dp_page_names_cells_privately_and_shows_no_md(dp_result, dp_page):
    assert _figures(dp_page) == ["values-tvd", "values-tc", "values-repair"]
    assert "in noisy rank order" in dp_page and "MD(a,p,o) values are not released" in dp_page
    named = dp_result["tc"].details.top_cells
    # each name with its reliability and noisy MD (both released), and how they were released
    assert "Reliability: the chance that a named cell truly is among the top" in dp_page
    for c in named:
        assert f'<td class="num">{fmt(c.reliability)}</td><td class="num">{fmt(c.noisy_md)}</td>' in dp_page
    text = _text(dp_page)
    rows = re.findall(r"<tr><td class=\"num\">(\d+)</td><td>([^<]+)</td>", dp_page)
    assert [(int(r), c) for r, c in rows] == [(c.rank, c.criterion) for c in named]
    assert "MI (nats)" not in dp_page and "expected rows" not in dp_page and "md-map" not in dp_page
    assert "What the repair changes per block is not released in DP mode" in text
    # seeded: says it is not DP, and why
    assert "NOT differentially private: seeded noise" in dp_page
    assert esc(NEGATIVE_NOTE) in dp_page
    _assert_self_contained(dp_page)


def test_negative_release_is_explained_not_clipped():
    df = pd.DataFrame({"s": ["F", "M"] * 200, "y": [0, 0, 1, 1] * 100})  # exactly independent: true value 0
    schema = Schema({"s": Categorical(["F", "M"]), "y": Categorical([0, 1])})
    results = [audit(df, "s ⊥ y", schema=schema, epsilon=1.0, seed=seed, measures=("tvd",)) for seed in range(20)]
    negative = next(r for r in results if r["tvd"].value < 0)
    positive = next(r for r in results if r["tvd"].value > 0)
    page = render_audit(negative)
    value = fmt(negative["tvd"].value)
    assert value.startswith("-") and f">{value}<" in page
    assert f"U_MI^TVD was released below zero, as {value}: its true value is 0 or more" in page
    assert "not clipped to 0" in page
    assert "released below zero" not in render_audit(positive)


# -- typed results: MD maps, budget, round trip ------------------------------------------------------

def test_md_maps_hold_every_cell_in_exact_mode_only(adult, exact_result, dp_result):
    maps = exact_result["tc"].details.cell_md
    assert [m.criterion for m in maps] == ADULT_CRITERIA
    frame, schema = adult
    from dpaudit.counting import count_tables
    from dpaudit.criteria import parse_criteria

    tables = count_tables(frame, parse_criteria(ADULT_CRITERIA), schema)
    for cmap, t in zip(maps, tables):
        np.testing.assert_array_equal(np.array(cmap.md), marginal_differences(t.counts))
        assert len(cmap.blocks) == t.counts.shape[0] and cmap.cells == t.counts.size
    assert maps[1].protected == ({"sex": "Female"}, {"sex": "Male"}) and maps[1].blocks == ({},)
    assert maps[3].blocks[39] == {"hours-per-week": 40}
    assert "cell_md" not in _doc(dp_result)["measures"]["tc"]


@pytest.mark.parametrize("which", ["exact_result", "dp_result"])
def test_json_round_trip_renders_the_same_page(request, which):
    result = request.getfixturevalue(which)
    back = read_json(render_json(result))
    assert isinstance(back, AuditResult) and back.to_dict() == result.to_dict()
    assert render_audit(back) == render_audit(result)


def test_json_without_md_maps_is_still_read(exact_result):
    doc = _doc(exact_result)
    del doc["measures"]["tc"]["cell_md"]
    back = AuditResult.from_dict(doc)
    assert back["tc"].details.cell_md is None and "cell_md" not in back.to_dict()["measures"]["tc"]
    page = render_audit(back)
    assert "md-map" not in page and "saved by an older dpaudit" in page


def test_ledger_state_is_recorded_and_shown(tmp_path):
    df = pd.DataFrame({"s": ["F", "M"] * 50, "y": [0, 1, 1, 1] * 25})
    schema = Schema({"s": Categorical(["F", "M"]), "y": Categorical([0, 1])})
    ledger = tmp_path / "ledger.json"
    audit(df, "s ⊥ y", schema=schema, epsilon=0.5, budget=Budget.open(ledger, 2.0), measures=("tvd",))
    res = audit(df, "s ⊥ y", schema=schema, epsilon=1.0, budget=Budget.open(ledger), measures=("tvd",))
    assert res.budget is not None and res.budget.spent == pytest.approx(1.5) and res.budget.remaining == 0.5
    assert res.budget.ledger == str(ledger.resolve())
    back = AuditResult.from_dict(_doc(res))
    assert back.budget == res.budget
    page = render_audit(back)
    assert f"the ledger file {ledger.resolve()}" in page
    assert "<dt>remaining</dt><dd>0.5</dd>" in page and "<dt>spent so far (all audits)</dt><dd>1.5</dd>" in page
    alone = audit(df, "s ⊥ y", schema=schema, epsilon=1.0, measures=("tvd",))
    assert alone.budget is None and "budget" not in alone.to_dict() and "No ledger was used" in render_audit(alone)
    spent = audit(df, "s ⊥ y", schema=schema, epsilon=1.0, budget=Budget(1.0), measures=("tvd",))
    assert spent.budget.ledger is None and "The budget is used up" in render_audit(spent)


# -- notebooks --------------------------------------------------------------------------------------

def test_repr_html_folds_the_page_sections_after_the_values(dp_result, dp_page):
    frag = dp_result._repr_html_()
    assert frag.startswith('<div class="dpaudit-report"><style>') and frag.endswith("</div>")
    for tag in ("<html", "<head>", "<body", "<!doctype", "<script"):
        assert tag not in frag.lower()
    assert render_audit_fragment(dp_result).startswith('<div class="dpaudit-report"><style>')
    for section in audit_sections(dp_result):  # each in its <details>, flags worded as Python
        assert section in dp_page
        title = re.match(r'<section(?: class="[^"]*")? id="[^"]*"><h2>(.*?)</h2>', section).group(1)
        assert f"<details><summary>{title}</summary><section" in frag
    style = re.search(r"<style>(.*?)</style>", frag, re.S).group(1)
    selectors = [s.strip() for rule in re.findall(r"([^{}]+)\{", style) for s in rule.split(",")]
    assert selectors and all(s.startswith(".dpaudit-report") for s in selectors)  # nothing leaks into the notebook


# -- the command line -------------------------------------------------------------------------------

def _adult_args(*extra):
    args = ["fairness", "adult"]
    for c in ADULT_CRITERIA:
        args += ["-c", c]
    return args + ["-m", "tvd", "-m", "tc", "-m", "repair", *extra]


def test_cli_html_and_report_round_trip(tmp_path, adult_available):
    page, saved = tmp_path / "audit.html", tmp_path / "audit.json"
    run = runner.invoke(app, _adult_args("--epsilon", "1", "--seed", "3", "--json", "--html", str(page)))
    assert run.exit_code == 0, run.output
    saved.write_text(run.stdout)
    doc = json.loads(run.stdout)  # stdout stays one JSON document; the "wrote" line goes to stderr
    assert doc["source"] == "adult" and f"wrote {page}" in run.stderr
    html = page.read_text()
    assert "dpaudit fairness audit — adult" in html
    assert html == render_audit(AuditResult.from_dict(doc))
    again = tmp_path / "again.html"
    rep = runner.invoke(app, ["report", str(saved), "--html", str(again)])
    assert rep.exit_code == 0, rep.output
    assert again.read_text() == html and "fairness audit" in rep.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.html", "audit.html", "audit.json"]  # no temporaries


def test_cli_exact_html_with_terminal_view(tmp_path, adult_available):
    page = tmp_path / "exact.html"
    run = runner.invoke(app, _adult_args("--exact", "--html", str(page)), env={"COLUMNS": "160"})
    assert run.exit_code == 0, run.output
    assert "U_MI^TVD" in run.stdout and f"wrote {page} (HTML report)" in run.stdout
    assert _figures(page.read_text())[-1] == "md-map-4"


def test_cli_bad_html_path_is_refused_before_any_work(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(sys.modules["dpaudit.audit"], "audit", lambda *a, **k: calls.append(a))
    ledger = tmp_path / "ledger.json"
    for bad in (tmp_path / "missing" / "r.html", tmp_path):  # no such folder; a directory
        run = runner.invoke(app, ["fairness", "adult", "-c", "sex ⊥ income", "--epsilon", "1", "--html", str(bad),
                                  "--ledger", str(ledger), "--total-budget", "3"])
        assert run.exit_code == 2
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("dpaudit: error: cannot write")
    assert calls == [] and list(tmp_path.iterdir()) == []  # nothing counted, no ledger, no file


def test_cli_report_refuses_bad_documents(tmp_path):
    out = tmp_path / "r.html"
    cases = {"not.json": "{not json", "other.json": json.dumps({"hello": 1}),
             "partial.json": json.dumps({"n": 10, "criteria": ["a ⊥ b"], "measures": {"tvd": {}}, "epsilon": None})}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    for name in [*cases, "missing.json"]:
        run = runner.invoke(app, ["report", str(tmp_path / name), "--html", str(out)])
        assert run.exit_code == 2, (name, run.output)
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("dpaudit: error:"), (name, run.stderr)
    # the output path is checked first, before the document is read
    run = runner.invoke(app, ["report", str(tmp_path / "missing.json"), "--html", str(tmp_path / "no" / "r.html")])
    assert run.exit_code == 2 and "cannot write" in run.stderr
    assert not out.exists()


def test_cli_report_renders_an_mia_document_with_the_mia_page(tmp_path, monkeypatch):
    from dpaudit.mia.evaluate import evaluate
    from dpaudit.mia.results import MiaReport
    from dpaudit.mia.simulate import gaussian_scores

    report = evaluate(gaussian_scores(16, 200, seed=1).to_scoreset(), fpr=(0.1,), n_boot=0)
    saved = tmp_path / "mia.json"
    saved.write_text(render_json(report))
    seen = []

    def render_mia(rep):
        seen.append(rep)
        return f"<!DOCTYPE html>\n<html><body>M = {rep.n_models}</body></html>\n"

    monkeypatch.setitem(sys.modules, "dpaudit.report.html_mia", types.SimpleNamespace(render_mia=render_mia))
    out = tmp_path / "mia.html"
    run = runner.invoke(app, ["report", str(saved), "--html", str(out)])
    assert run.exit_code == 0, run.output
    assert len(seen) == 1 and isinstance(seen[0], MiaReport) and seen[0].to_dict() == report.to_dict()
    assert out.read_text() == "<!DOCTYPE html>\n<html><body>M = 16</body></html>\n"


def test_large_and_multi_column_criteria_get_readable_maps():
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame({"country": rng.integers(0, 100, n), "work": rng.integers(0, 3, n),
                       "years": rng.integers(0, 60, n), "sex": rng.choice(["F", "M"], n),
                       "race": rng.choice(["a", "b", "c"], n), "y": rng.integers(0, 2, n),
                       "big": rng.integers(0, 400, n)})
    schema = Schema({"country": Categorical(list(range(100))), "work": Categorical([0, 1, 2]),
                     "years": Categorical(list(range(60))), "sex": Categorical(["F", "M"]),
                     "race": Categorical(["a", "b", "c"]), "y": Categorical([0, 1]),
                     "big": Categorical(list(range(400)))})
    criteria = ["country ⊥ work | years", "sex,race ⊥ y", "big ⊥ work | years"]
    res = audit(df, criteria, measures=("tc",), schema=schema, k=5, exact=True)
    maps = res["tc"].details.cell_md
    assert maps[0].cells == 100 * 3 * 60 and np.array(maps[0].md).shape == (60, 100, 3)  # 18,000 cells: kept
    assert maps[1].protected[1] == {"sex": "F", "race": "b"} and maps[2].md is None and maps[2].cells == 72_000
    page = render_audit(res)
    assert _figures(page) == ["values-tc", "md-map-1", "md-map-2"]
    # 60 blocks × 300 (country, work) pairs: the blocks run down, at most 40 rows and 100 columns are drawn
    assert "Showing the 40 of 60 rows and 100 of 300 columns with the largest total MD." in page
    assert "sex, race" in page and "big ⊥ work | years: 72,000 cells, too many for a heat map" in page
    _assert_self_contained(page)
