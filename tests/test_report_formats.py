"""The output-format registry (``dpaudit.report.FORMATS``) and ``--save FILE``: a new format is one render
function plus its registration — here a Markdown format registered from this test file alone and written by
``dpaudit fairness``, ``dpaudit mia evaluate`` and ``dpaudit report`` without a change to any command."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpaudit._errors import DataError, DPAuditError
from dpaudit.cli import app
from dpaudit.mia.results import MiaReport
from dpaudit.report import FORMATS, Format, describe_formats, format_for, register_format
from dpaudit.report.json import read_json, render_json
from dpaudit.results import AuditResult

runner = CliRunner()


def render_markdown(result: AuditResult | MiaReport) -> str:
    """A toy Markdown report: one table row per measure (audit) or per rule and α (MIA evaluation)."""
    if isinstance(result, AuditResult):
        lines = [f"# Fairness audit (n = {result.n})", "", "| measure | value | DP |", "|---|---|---|"]
        lines += [f"| {name} | {m.release.value:.6g} | {'yes' if m.release.dp else 'no'} |"
                  for name, m in result.measures.items()]
    else:
        lines = [f"# Membership inference (M = {result.n_models})", "", "| α | rule | TPR |", "|---|---|---|"]
        lines += [f"| {alpha:g} | {name} | {r.tpr:.6g} |" for alpha, row in zip(result.alphas, result.rows)
                  for name, r in row.rules.items() if r.estimable]
    return "\n".join(lines) + "\n"


@pytest.fixture
def markdown():
    fmt = register_format(Format("rst", (".rst", ".rest"), "reStructuredText report", render_markdown))
    yield fmt
    del FORMATS["rst"]


@pytest.fixture
def data(tmp_path):
    frame = pd.DataFrame({"g": ["a", "a", "b", "a"] * 25, "y": [0, 0, 1, 1] * 25})
    path, schema = tmp_path / "data.csv", tmp_path / "schema.json"
    frame.to_csv(path, index=False)
    schema.write_text(json.dumps({"columns": {"g": {"type": "categorical", "values": ["a", "b"]},
                                              "y": {"type": "categorical", "values": [0, 1]}}}))
    return ["fairness", str(path), "-c", "g ⊥ y", "--schema", str(schema), "-m", "tvd", "-m", "tc"]


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    from dpaudit.mia.simulate import gaussian_scores

    path = tmp_path_factory.mktemp("scores") / "s.npz"
    gaussian_scores(16, 80, seed=2).to_scoreset().save(path)
    return path


def _md_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[4:]]


def test_fairness_mia_and_report_write_a_format_registered_by_a_test(tmp_path, data, scores, markdown):
    md, saved = tmp_path / "audit.rst", tmp_path / "audit.json"
    run = runner.invoke(app, [*data, "--exact", "--json", "--save", str(md)])
    assert run.exit_code == 0, run.output
    assert run.stderr.strip() == f"wrote {md} (reStructuredText report)"  # stdout stays one JSON document
    saved.write_text(run.stdout)
    doc = json.loads(run.stdout)
    assert _md_rows(md.read_text()) == [[name, f"{m['value']:.6g}", "no"] for name, m in doc["measures"].items()]
    assert md.read_text().startswith("# Fairness audit (n = 100)")

    again = tmp_path / "again.rest"
    rep = runner.invoke(app, ["report", str(saved), "--save", str(again)])
    assert rep.exit_code == 0, rep.output
    assert again.read_text() == md.read_text() and "reStructuredText report of a fairness audit" in rep.stdout

    mia_md, mia_json = tmp_path / "mia.rst", tmp_path / "mia.json"
    run = runner.invoke(app, ["mia", "evaluate", str(scores), "--n-boot", "0", "--fpr", "0.1", "--save", str(mia_md),
                              "--save", str(mia_json)])
    assert run.exit_code == 0, run.output
    report = read_json(mia_json)
    assert isinstance(report, MiaReport) and mia_md.read_text() == render_markdown(report)
    tprs = {row[1]: float(row[2]) for row in _md_rows(mia_md.read_text())}
    assert tprs and tprs == pytest.approx({k: r.tpr for k, r in report.rows[0].rules.items() if r.estimable}, rel=1e-5)
    rep = runner.invoke(app, ["report", str(mia_json), "--save", str(tmp_path / "mia2.rst")])
    assert rep.exit_code == 0 and (tmp_path / "mia2.rst").read_text() == mia_md.read_text()
    assert "reStructuredText report of a membership-inference evaluation" in rep.stdout
    assert ".rst/.rest (reStructuredText report)" in describe_formats()


@pytest.mark.parametrize("command", [["fairness"], ["mia", "evaluate"], ["report"]], ids=" ".join)
def test_help_lists_the_registered_suffixes(command):
    text = " ".join(runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).stdout.split())
    assert "--save FILE" in text and "--html FILE" in text
    for fmt in FORMATS.values():
        assert f"{'/'.join(fmt.suffixes)} ({fmt.description})" in text


def test_builtin_formats_are_what_the_other_outputs_print(tmp_path, data):
    txt, js, htm, html = (tmp_path / n for n in ("r.TXT", "r.json", "r.htm", "r.html"))
    run = runner.invoke(app, [*data, "--epsilon", "1", "--seed", "4", "--json", "--html", str(html),
                              "--save", str(txt), "--save", str(js), "--save", str(htm)])
    assert run.exit_code == 0, run.output
    result = AuditResult.from_dict(json.loads(run.stdout))
    assert js.read_text() == run.stdout == render_json(result)
    assert txt.read_text() == str(result) + "\n"
    assert htm.read_text() == html.read_text() and html.read_text().startswith("<!DOCTYPE html>")
    assert run.stderr.splitlines() == [f"wrote {html} (HTML report)", f"wrote {txt} (text report)",
                                       f"wrote {js} (JSON document)", f"wrote {htm} (HTML report)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "r.TXT", "r.htm", "r.html", "r.json",
                                                          "schema.json"]  # no temporaries


def test_mia_text_format_is_what_the_command_prints(tmp_path, scores):
    out = tmp_path / "mia.txt"
    run = runner.invoke(app, ["mia", "evaluate", str(scores), "--n-boot", "0", "--save", str(out)])
    assert run.exit_code == 0, run.output
    assert run.stdout == out.read_text() + f"wrote {out} (text report)\n"


def test_every_document_is_rendered_before_anything_is_written_or_printed(tmp_path, data, scores):
    def refuse(result):
        raise DPAuditError("this format cannot render that")

    register_format(Format("broken", (".broken",), "broken report", refuse))
    try:
        for argv in ([*data, "--exact"], ["mia", "evaluate", str(scores), "--n-boot", "0"]):
            run = runner.invoke(app, [*argv, "--html", str(tmp_path / "a.html"), "--save", str(tmp_path / "b.txt"),
                                      "--save", str(tmp_path / "c.broken")])
            assert run.exit_code == 2 and run.stdout == ""
            assert run.stderr == "dpaudit: error: this format cannot render that\n"
    finally:
        del FORMATS["broken"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "schema.json"]


def test_format_for_picks_by_suffix_and_names_the_known_ones():
    assert format_for("a/b/report.HTM").name == "html" and format_for("x.json").name == "json"
    assert format_for("notes.txt") is FORMATS["text"]
    for bad in ("report.pdf", "report", ".txt", "report.txt.bak"):
        with pytest.raises(DataError) as err:
            format_for(bad)
        message = str(err.value)
        assert "\n" not in message and f"{bad!r}" in message
        assert all(s in message for f in FORMATS.values() for s in f.suffixes)


def test_format_for_prefers_the_longest_suffix(markdown):
    nested = register_format(Format("json-md", (".json.rst",), "JSON in Markdown", render_json))
    try:
        assert format_for("r.json.rst") is nested and format_for("r.rst") is markdown
    finally:
        del FORMATS["json-md"]


@pytest.mark.parametrize("fmt, message", [
    (Format("text", (".text",), "again", str), "already registered"),
    (Format("plain", (".txt",), "again", str), "already selects format 'text'"),
    (Format("plain", ("txt",), "no dot", str), "lower-case '.name'"),
    (Format("plain", (".TXT2",), "upper", str), "lower-case '.name'"),
    (Format("plain", (), "none", str), "at least one file suffix"),
])
def test_register_format_refuses_clashes(fmt, message):
    before = dict(FORMATS)
    with pytest.raises(DPAuditError, match=message):
        register_format(fmt)
    assert FORMATS == before
