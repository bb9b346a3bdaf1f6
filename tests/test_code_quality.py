"""The lint and type checks that `.ci/run` runs with the tests: ruff (pyproject's rules) and mypy (src/).

Both tools and their settings live in ``pyproject.toml`` (``[tool.ruff]``, ``[tool.mypy]``: default
strictness plus checked untyped bodies, no implicit Optional, unused ignores reported). The tests
fail with the tools' own reports, so a lint or type error fails CI like a broken test.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean():
    if shutil.which("ruff") is None and _run(sys.executable, "-m", "ruff", "--version").returncode:
        pytest.fail("ruff is not installed: it is part of the test extra (pip install -e '.[test]')")
    res = _run(sys.executable, "-m", "ruff", "check", "src", "tests", "benchmarks", "experiments")
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_is_clean():
    res = _run(sys.executable, "-m", "mypy")
    assert res.returncode == 0, res.stdout + res.stderr


#: The longest a module may be (the architecture issue: "no module over ~400 lines"). A module that
#: grows past it holds more than one job: split it by concept (docs/architecture.md).
MAX_MODULE_LINES = 400


def test_no_module_is_longer_than_the_limit():
    too_long = {}
    for folder in ("src", "benchmarks", "experiments"):  # the code that ships or is run; not the tests
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").count("\n")
            if lines > MAX_MODULE_LINES:
                too_long[str(path.relative_to(ROOT))] = lines
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {too_long}"
