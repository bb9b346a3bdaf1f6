"""Shared fixtures and the one contract every hostile case must meet."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpaudit import Categorical, Schema
from dpaudit.cli import app


def assert_one_line_error(result, *, fragment: str | None = None) -> str:
    """The CLI contract: exit code 2, exactly one stderr line ``dpaudit: error: …``, no traceback."""
    stderr = result.stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert result.exit_code == 2, (result.exit_code, result.output, repr(result.exception))
    assert len(lines) == 1 and lines[0].startswith("dpaudit: error: "), stderr
    assert "Traceback" not in result.output and not isinstance(result.exception, (AssertionError, TypeError,
                                                                                   AttributeError, KeyError)), \
        repr(result.exception)
    if fragment is not None:
        assert fragment in lines[0], lines[0]
    return lines[0]


def files_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def cli():
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [str(a) for a in args])

    return invoke


@pytest.fixture(scope="session")
def small_csv(tmp_path_factory):
    """A small valid table (sex F/M, y 0/1, age) with its declared schema file."""
    folder = tmp_path_factory.mktemp("small")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], 200), "y": rng.integers(0, 2, 200),
                          "age": rng.integers(18, 90, 200)})
    path = folder / "t.csv"
    frame.to_csv(path, index=False)
    schema = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1]),
                     "age": __import__("dpaudit").Binned([0, 30, 60, 120])})
    schema_path = folder / "schema.json"
    schema.to_json(schema_path)
    return path, schema_path, schema


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A clean current directory, to check that a refused command writes nothing (``DPAUDIT_DATA`` made
    absolute first: CI gives it relative to the checkout)."""
    if os.environ.get("DPAUDIT_DATA"):
        monkeypatch.setenv("DPAUDIT_DATA", os.path.abspath(os.environ["DPAUDIT_DATA"]))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def have_fifo() -> bool:
    return hasattr(os, "mkfifo")
