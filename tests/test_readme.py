"""The README's examples run as written: every fenced ``python`` block is executed, in order, with
``DPAUDIT_DATA`` set, in a fresh folder; and its first command's options exist."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(language: str) -> list[str]:
    """The fenced code blocks of README.md in ``language``, dedented (a block may sit in a list item)."""
    text = README.read_text(encoding="utf-8")
    blocks = []
    for indent, body in re.findall(rf"^([ \t]*)```{language}[ \t]*\n(.*?)^[ \t]*```[ \t]*$", text, re.M | re.S):
        lines = body.splitlines()
        blocks.append("\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines))
    return blocks


def test_the_readme_has_python_snippets():
    assert _blocks("python"), "README.md has no ```python block"


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_readme_python_snippet_runs(index, data_root, tmp_path, monkeypatch):
    monkeypatch.setenv("DPAUDIT_DATA", str(data_root))
    monkeypatch.chdir(tmp_path)  # anything a snippet writes stays here
    source = _blocks("python")[index]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, f"README.md python block {index + 1}", "exec"), {"__name__": "__readme__"})
    assert out.getvalue().strip(), "a README snippet should show what it computes"


def test_readme_first_command_shows_the_default_measures(data_root, monkeypatch):
    """The main job of the README ("Two commands", 1.) prints U_MI^TVD and U_TC, the default
    measures, and says how to add U_R."""
    from typer.testing import CliRunner

    from dpaudit.cli import app

    monkeypatch.setenv("DPAUDIT_DATA", str(data_root))
    first = _blocks("bash")[0]
    command = first.split("&&", 1)[1].strip()
    args = shlex.split(command)
    assert args[0] == "dpaudit"
    result = CliRunner().invoke(app, args[1:], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    for title in ("U_MI^TVD", "U_TC"):
        assert title in result.stdout
    assert "U_R (repair) left out by default" in result.stdout and "-m tvd -m tc -m repair" in result.stdout
    assert result.stderr == ""  # no spinner or progress outside a terminal
