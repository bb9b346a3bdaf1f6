"""``dpaudit fairness`` printing to a pipe or a file: plain text, never wrapped, the values of ``--json``
(issue 25). On a terminal the same view is drawn as rich tables (:mod:`dpaudit.report.rich`).

Each command runs as a real process with its stdout a pipe and a narrow ``COLUMNS`` (rich wrapped its
tables and lines at 80 columns when redirected, splitting a cell's name across two lines).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dpaudit.results import AuditResult

#: Box drawing (U+2500-U+257F) and block elements: what rich's tables are drawn with.
BOX = {chr(c) for c in range(0x2500, 0x25A0)}
LONG = "a-protected-group-with-a-long-name"


def _run(args: list[str], cwd: Path | None = None) -> str:
    env = {**os.environ, "COLUMNS": "40", "TERM": "xterm-256color"}
    done = subprocess.run([sys.executable, "-m", "dpaudit", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def long_names(tmp_path: Path) -> tuple[str, str]:
    frame = pd.DataFrame({"group": [LONG, "b", "b", LONG] * 30, "outcome": ["yes-it-was-granted", "no", "no", "no"] * 30,
                          "region": ["north", "south", "east"] * 40})
    data, schema = tmp_path / "d.csv", tmp_path / "s.json"
    frame.to_csv(data, index=False)
    schema.write_text(json.dumps({"columns": {
        "group": {"type": "categorical", "values": [LONG, "b"]},
        "outcome": {"type": "categorical", "values": ["yes-it-was-granted", "no"]},
        "region": {"type": "categorical", "values": ["north", "south", "east"]},
    }}))
    return str(data), str(schema)


def _values(doc: dict) -> list[str]:
    """Every number of the ``--json`` document the command's view shows, formatted as it shows them."""
    shown = []
    for m in doc["measures"].values():
        shown.append(f"{m['value']:.6g}")
        shown += [f"{v:.6g}" for v in m.get("per_criterion") or ()]
        shown += [f"{b['mi_bits']:.6g}" for b in m.get("baseline") or ()]
        shown += [f"{c['count']:,} rows vs {c['expected']:.1f} expected" for c in m.get("top_cells") or ()
                  if "count" in c]
    return shown


@pytest.mark.parametrize("mode", [["--exact"], ["--epsilon", "1", "--seed", "3"]], ids=["exact", "dp"])
def test_piped_output_is_plain_unwrapped_and_holds_the_json_values(long_names, mode):
    data, schema = long_names
    args = ["fairness", data, "-c", "group ⊥ outcome | region", "-c", "group ⊥ outcome", "--schema", schema, *mode]
    text = _run(args)
    doc = json.loads(_run([*args, "--json"]))
    assert not set(text) & BOX, "box drawing in piped output"
    assert max(map(len, text.splitlines())) > 40  # COLUMNS=40 did not wrap it
    lines = text.splitlines()
    cells = [c for m in doc["measures"].values() for c in m.get("top_cells") or ()]
    assert cells
    for cell in cells:  # every named cell on one line, whole
        name = ", ".join(f"{k}={v}" for side in ("protected", "outcome") for k, v in cell[side].items())
        assert any(name in line for line in lines), name
    for value in _values(doc):
        assert value in text, value
    for crit in doc["criteria"]:
        assert crit in text
    assert lines[0].startswith("dpaudit fairness · n = 120 · ")
    assert ("NOT differentially private" in lines[0]) == (mode == ["--exact"])


def test_piped_output_is_the_terminal_view_without_markup(long_names, tmp_path):
    """The pipe's text and the terminal's tables are one view (``command_view``): the same lines, less
    the table's frame, whatever the width of the terminal."""
    from rich.console import Console

    from dpaudit.report.rich import print_audit
    from dpaudit.report.text import command_view, render_command

    data, schema = long_names
    args = ["fairness", data, "-c", "group ⊥ outcome | region", "--schema", schema, "--exact"]
    result = AuditResult.from_dict(json.loads(_run([*args, "--json"])))
    text = _run(args)
    assert text == render_command(result) + "\n"
    out = io.StringIO()
    print_audit(result, Console(file=out, width=400, color_system=None))
    drawn = [line for line in out.getvalue().splitlines() if not set(line) & BOX]
    view = command_view(result)
    plain = text.splitlines()
    tail = len(plain) - len(view.rows) - 3 - len(view.notes)  # after the title, header, rule and rows
    assert drawn[0] == plain[0] and drawn[-tail:] == plain[-tail:]


def test_adult_piped_is_plain(adult_available):
    """The benchmark's small exact audit (``benchmarks/bench_startup.py``): plain, and its values."""
    args = ["fairness", "adult", "-c", "sex ⊥ income", "--exact"]
    text, doc = _run(args), json.loads(_run([*args, "--json"]))
    assert not set(text) & BOX
    assert "sex ⊥ income: sex=Female, income=>50K (under-represented, MD 0.04311, 1,769 rows vs 3874.5 expected)" in text
    for value in _values(doc):
        assert value in text


def test_mia_evaluate_piped_is_plain_and_loads_no_rich(tmp_path):
    """``dpaudit mia evaluate`` to a pipe: the text report (``str(report)``), no box drawing, no rich."""
    scores = tmp_path / "s.npz"
    _run(["mia", "simulate", "calibration", "--models", "16", "--records", "200", "--fpr", "0.1", "--out", str(scores),
          "--json"])
    code = ("import runpy, sys; sys.argv = ['dpaudit', 'mia', 'evaluate', sys.argv[1], '--fpr', '0.1', '--n-boot', '0']\n"
            "try:\n    runpy.run_module('dpaudit', run_name='__main__')\nexcept SystemExit as exc:\n"
            "    assert exc.code in (0, None), exc.code\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'rich', 'markdown_it', 'pygments'}), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(scores)], capture_output=True, text=True, check=False,
                          env={**os.environ, "COLUMNS": "40"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("LIRA evaluation — M = 16 models") and not set(done.stdout) & BOX
    assert max(map(len, done.stdout.splitlines())) > 40 and done.stderr.strip().splitlines()[-1] == "[]"
