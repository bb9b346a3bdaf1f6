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
