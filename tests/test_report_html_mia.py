"""The membership-inference HTML report (``dpaudit mia evaluate --html``, ``render_mia``, ``_repr_html_``)
and the figure data it reads (``MiaReport.curves``, ``MiaReport.fpr_histograms``)."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.mia.calibrate import pp_transform, threshold
from dpaudit.mia.evaluate import CURVE_POINTS, RULE_NAMES, RULES, evaluate
from dpaudit.mia.fits import loo_fits
from dpaudit.mia.metrics.roc import roc_curve
from dpaudit.mia.per_record import parametric_per_record
from dpaudit.mia.results import MiaReport
from dpaudit.mia.simulate import gaussian_scores
from dpaudit.report._html import esc, fmt
from dpaudit.report.html_mia import CURVES_MISSING, RULE_MEANING, render_mia
from dpaudit.report.json import read_json, render_json

REPO = Path(__file__).resolve().parents[1]
SAVED = REPO / "tests" / "data" / "mia_reports_before_curves.json"  # real Adult reports, saved before curves existed


@pytest.fixture(scope="module")
def sim():
    return gaussian_scores(64, 300, seed=3)


@pytest.fixture(scope="module")
def report(sim):
    return evaluate(sim.to_scoreset(), fpr=(0.1, 0.01), n_boot=30, seed=1)


@pytest.fixture(scope="module")
def page(report):
    return render_mia(report)


def _table_rows(page: str, alpha: float) -> dict[str, list[str]]:
    """The cells of the rule table under the heading "α = …", by rule label (as the page prints them)."""
    start = page.index(f"<h3>α = {fmt(alpha)}</h3>")
    body = page[start:page.index("</table>", start)]
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", body)[1:]:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        rows[cells[0]] = cells[1:]
    return rows


def _assert_numbers_match_json(page: str, doc: dict) -> None:
    """Every rule's TPR, intervals, realised FPR and ε at every α: the JSON value as fmt prints it."""
    for result in doc["results"]:
        rows = _table_rows(page, result["alpha"])
        rules = [k for k in result if k not in ("alpha", "naive_per_record_fpr", "verdict", "vulnerable")]
        assert rules
        for rule in rules:
            r = result[rule]
            ci, cp = r.get("ci") or [None, None], r.get("cp") or [None, None]
            expected = [r.get("tpr"), ci[0], ci[1], cp[0], cp[1], r.get("fpr"), r.get("epsilon_lb"),
                        r.get("epsilon_point")]
            valid = {True: "yes", False: "no", None: "—"}[r.get("valid")] if r["estimable"] else "—"
            assert rows[esc(RULE_NAMES[rule])] == [esc(fmt(v)) for v in expected] + [valid], (result["alpha"], rule)
            if not r["estimable"]:
                assert esc(r["reason"]) in page
        spread = result["naive_per_record_fpr"]
        assert (f'<td class="num">{fmt(result["alpha"])}</td><td class="num">{fmt(spread["max"])}</td>'
                f'<td class="num">{fmt(spread["share_above_alpha"])}</td>') in page


def _figure(page: str, label: str) -> str:
    match = re.search(rf'<figure data-figure="{label}">(.*?)</figure>', page, re.S)
    assert match, f"figure {label!r} missing"
    return match.group(1)


# -- the page -----------------------------------------------------------------------------------------

def test_every_number_of_the_tables_is_the_json_value(report, page):
    doc = json.loads(render_json(report))
    _assert_numbers_match_json(page, doc)
    assert report.rows[1].rules["per_record_empirical"].estimable is False  # M = 64 at α = 0.01: a reason shown
    assert fmt(report.diagnostics["share_non_normal"]) in page


def test_a_changed_number_is_caught(report, page):
    """The check above is not vacuous: a page of a report with one TPR changed fails it."""
    doc = json.loads(render_json(report))
    doc["results"][0]["pp_t"]["tpr"] = doc["results"][0]["pp_t"]["tpr"] + 0.01
    with pytest.raises(AssertionError):
        _assert_numbers_match_json(page, doc)


def test_figures_are_inline_svg_with_labelled_log_axes(report, page):
    roc = _figure(page, "roc")
    assert roc.startswith("<svg") and "false positive rate" in roc and "true positive rate" in roc
    for rule in ("naive", "pp_normal", "pp_t", "per_record_parametric"):
        assert esc(RULE_NAMES[rule]) in roc, rule  # each curve is in the legend
    assert "chance (TPR = FPR)" in roc and "α = 0.01" in roc
    # log scales: tick labels are powers of ten, "10" with a superscript "−k" (mathtext as text spans)
    powers = re.findall(r">1</tspan>\s*<tspan[^>]*>0</tspan>\s*<tspan[^>]*font-size: 7px[^>]*>−</tspan>", roc)
    assert len(powers) >= 6
    hist = _figure(page, "fpr-histogram")
    assert hist.startswith("<svg") and "per-record FPR" in hist and "records" in hist
    assert page.count("<figure ") == 2


def test_page_is_self_contained(page):
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page.lower() and "<img" not in page.lower() and "<link" not in page.lower()
    urls = set(re.findall(r"[a-z]+://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
                    "http://purl.org/dc/elements/1.1/", "http://creativecommons.org/ns#",
                    "http://www.w3.org/1999/02/22-rdf-syntax-ns#"}, urls
    assert all(h.startswith("#") for h in re.findall(r'href="([^"]*)"', page))


def test_sections_sentences_and_configuration(report, page):
    for title in ("Summary", "ROC curves", "TPR at each α", "What each rule estimates",
                  "Per-record FPR of the naive threshold", "Gaussian-model diagnostics", "Configuration"):
        assert f"<h2>{esc(title)}</h2>" in page
    for rule in RULES:
        assert esc(RULE_MEANING[rule]) in page
    assert "FPC off" in page
    for label, value in (("models M", "64"), ("pool records N+", "300"), ("training-set size N", "150"),
                         ("bootstrap replicates", "30"), ("bootstrap seed", "1"), ("PP threshold of the headline", "t"),
                         ("design", "efficient (every record IN in exactly M/2 models)")):
        assert f"<dt>{esc(label)}</dt><dd>{esc(value)}</dd>" in page, label


def test_fpc_on_is_said(sim):
    rep = evaluate(sim.to_scoreset(), fpr=(0.1,), n_boot=0, fpc=True)
    page = render_mia(rep)
    assert "FPC on" in page and "1 − N/N+ = 0.5" in page and "bootstrap replicates</dt><dd>0</dd>" in page


def test_repr_html_is_a_fragment_with_the_same_sections(report, page):
    frag = report._repr_html_()
    assert "<html" not in frag and "<body" not in frag and "<style>" in frag and "<script" not in frag
    assert frag.count("<section") == page.count("<section") == 8
    assert _figure(frag, "roc") == _figure(page, "roc")
    _assert_numbers_match_json(frag, json.loads(render_json(report)))


def test_json_round_trip_renders_the_same_page(report, page, tmp_path):
    doc = json.loads(render_json(report))
    assert "curves" in doc and "fpr_histograms" in doc
    back = MiaReport.from_dict(doc)
    assert back == report
    assert render_mia(back) == page
    saved = tmp_path / "r.json"
    saved.write_text(render_json(report))
    assert render_mia(read_json(saved)) == page


def test_old_json_without_curves_renders_with_a_note(report):
    doc = json.loads(render_json(report))
    del doc["curves"], doc["fpr_histograms"]
    old = MiaReport.from_dict(doc)
    assert old.curves is None and old.fpr_histograms is None
    page = render_mia(old)
    assert esc(CURVES_MISSING) in page and "histogram is not in this document" in page
    assert "data-figure=\"fpr-histogram\"" not in page
    assert "false positive rate" in _figure(page, "roc")  # the operating points are still drawn
    _assert_numbers_match_json(page, doc)


def test_saved_adult_reports_render():
    """Real Adult evaluations (logistic regression, M = 16 … 1,024) saved by an earlier dpaudit."""
    reports = json.loads(SAVED.read_text())["reports"]
    for doc in (reports[0], reports[-1]):
        page = render_mia(MiaReport.from_dict(doc))
        assert esc(CURVES_MISSING) in page
        _assert_numbers_match_json(page, json.loads(render_json(MiaReport.from_dict(doc))))
        assert "not recorded" in page  # the old options name no bootstrap seed


# -- the figure data ---------------------------------------------------------------------------------

def _oracle_pp_points(score, keep, n_out, kind):
    """(FPR, TPR) of the PP rule at every α of the curve grid, counted directly on the whole matrix (balanced
    references, the default: every target's OUT fit holds n_out − 1 scores)."""
    f = pp_transform(score, loo_fits(score, keep, references="balanced"), sign="fitted")
    n_pos = int(keep.sum())
    n_neg = keep.size - n_pos
    points = set()
    for a in np.geomspace(1.0, 1.0 / n_neg, CURVE_POINTS)[1:]:
        if kind == "normal":
            cut = stats.norm.isf(a)
            hits = f >= cut
        else:
            hits = f >= threshold(a, kind="t", n_out=n_out - 1)[None, :]
        points.add((int((hits & ~keep).sum()) / n_neg, int((hits & keep).sum()) / n_pos))
    return points | {(1.0, 1.0)}


def test_curves_are_the_rules_counted_directly(sim, report):
    score, keep = sim.score, sim.keep
    n_out = (~keep).sum(axis=0)
    for rule, kind in (("pp_normal", "normal"), ("pp_t", "t")):
        c = report.curves[rule]
        assert (c.records, c.models) == (300, 64) and c.fpr_kind == "realised"
        assert set(zip(c.fpr, c.tpr)) == _oracle_pp_points(score, keep, n_out, kind), rule
        assert list(c.fpr) == sorted(c.fpr) and c.fpr[-1] == c.tpr[-1] == 1.0
    # the naive curve: points of the exact ROC of the LiRA statistic, from FPR 1/n_neg to 1
    from dpaudit.mia.attacks import attack_from

    lira = attack_from("lira")
    stat = lira.statistic(sim.to_scoreset(), loo_fits(score, keep, references="balanced"))
    roc = roc_curve(stat, keep)
    naive = report.curves["naive"]
    exact = set(zip(roc.fpr.tolist(), roc.tpr.tolist()))
    assert set(zip(naive.fpr, naive.tpr)) <= exact and len(naive.fpr) > 50
    assert naive.fpr[0] == 1 / int((~keep).sum())  # continuous scores: no ties, the first point is one FP
    assert naive.fpr[-1] == naive.tpr[-1] == 1.0 and len(naive.fpr) <= CURVE_POINTS
    # the per-record parametric curve: the estimator itself at each nominal α
    par = report.curves["per_record_parametric"]
    assert par.fpr_kind == "nominal" and par.tpr[-1] == 1.0
    for a, t in list(zip(par.fpr, par.tpr))[:-1:7]:
        assert t == pytest.approx(float(parametric_per_record(score, keep, a).tpr.mean()), rel=1e-12)


def test_large_evaluations_count_the_pp_curves_on_every_kth_model():
    big = gaussian_scores(64, 2100, seed=5)  # 134,400 targets > 2**17: every 2nd model, every record
    rep = evaluate(big.to_scoreset(), fpr=(0.05,), n_boot=0)
    c = rep.curves["pp_normal"]
    assert (c.models, c.records) == (32, 2100)
    keep = big.keep[::2]
    f = pp_transform(big.score, loo_fits(big.score, big.keep, references="balanced"), sign="fitted")[::2]
    n_neg = int((~keep).sum())
    got = set(zip(c.fpr, c.tpr))
    for a in np.geomspace(1.0, 1.0 / n_neg, CURVE_POINTS)[[20, 60, 120]]:
        hits = f >= stats.norm.isf(a)
        assert (int((hits & ~keep).sum()) / n_neg, int((hits & keep).sum()) / int(keep.sum())) in got
    assert (rep.curves["naive"].models, rep.curves["naive"].records) == (64, 2100)
    # the sampled curve passes through the table's operating point (every target) within sampling error
    row = rep.rows[0].rules["pp_normal"]
    assert np.interp(row.fpr, c.fpr, c.tpr) == pytest.approx(row.tpr, rel=0.05)
    page = render_mia(rep)
    assert "PP concat N(0,1), 32 of 64 models" in page


def test_fpr_histogram_counts_every_record(report, sim):
    for h, row in zip(report.fpr_histograms, report.rows):
        assert h.alpha == row.alpha and sum(h.counts) == 300 and len(h.counts) <= 41
        assert h.edges[0] < 0 <= h.edges[1] and h.edges[-1] >= row.naive_per_record_fpr.max
        # records in bins wholly above α: at most the share above α
        above = sum(c for lo, c in zip(h.edges[:-1], h.counts) if lo > h.alpha)
        assert above <= round(row.naive_per_record_fpr.share_above_alpha * 300)


# -- the command --------------------------------------------------------------------------------------

def test_cli_html_writes_the_page(tmp_path, sim):
    scores = tmp_path / "s.npz"
    sim.to_scoreset().save(scores)
    out = tmp_path / "report.html"
    runner = CliRunner()
    res = runner.invoke(app, ["mia", "evaluate", str(scores), "--fpr", "0.1", "--n-boot", "0", "--json",
                              "--html", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and f"wrote {out}" in res.stderr
    _assert_numbers_match_json(page, doc)
    assert render_mia(MiaReport.from_dict(doc)) == page  # the saved --json renders the same page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "s.npz"]  # no temporary file left


def test_cli_html_refuses_a_bad_path_before_any_work(tmp_path):
    runner = CliRunner()
    missing = tmp_path / "no-such-scores.npz"  # would fail too, but only after the output path is checked
    res = runner.invoke(app, ["mia", "evaluate", str(missing), "--html", str(tmp_path / "nope" / "r.html")])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith("dpaudit: error: cannot write") and "nope" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    directory = runner.invoke(app, ["mia", "evaluate", str(missing), "--html", str(tmp_path)])
    assert directory.exit_code == 2 and "is a directory" in directory.stderr
    assert list(tmp_path.iterdir()) == []


def test_page_text_is_escaped(report):
    """A hostile value in the options (e.g. a scores meta string) is text, never markup."""
    doc = json.loads(render_json(report))
    doc["options"]["scores"] = {"dataset": "<script>alert(1)</script>"}
    page = render_mia(MiaReport.from_dict(doc))
    assert "<script" not in page and html_lib.escape("<script>alert(1)</script>") in page
