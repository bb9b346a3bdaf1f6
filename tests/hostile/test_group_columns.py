"""Hostile ``--by COLUMN`` for ``dpaudit mia evaluate`` on a run directory (disparate vulnerability): a column
the data lack, a continuous one without declared bins, one with a tiny group or a single group, data that
changed since the run — each one clean line, exit 2; a good column gives the answer line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpaudit.mia.train import train_run
from tests.hostile.conftest import assert_one_line_error

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("groups")
    rng = np.random.default_rng(0)
    n = 120
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "age": rng.uniform(18, 90, n).round(3),
                          "rare": np.where(np.arange(n) < 5, "x", "y"), "one": "z", "y": rng.integers(0, 2, n)})
    data = folder / "t.csv"
    frame.to_csv(data, index=False)
    out = train_run(folder / "run", data=data, label="y", n_models=8, seed=0, progress=False)
    return out, data


@pytest.mark.parametrize(("column", "fragment"), [
    ("nope", "--by nope: no column 'nope' in the run's data file"),
    ("age", "column 'age' of the run's data file"),
    ("rare", "group 'x' has 5 records; each group needs ≥ 20"),
    ("one", "column 'one' has a single group ('z')"),
])
def test_bad_column_gives_one_line(cli, run, column, fragment):
    out, _ = run
    line = assert_one_line_error(cli("mia", "evaluate", out, "--n-boot", "0", "--fpr", "0.2", "--by", column),
                                 fragment=fragment)
    if column == "age":
        assert "is continuous" in line and "no schema declares its bins" in line


def test_good_column_gives_the_answer_line(cli, run):
    out, _ = run
    result = cli("mia", "evaluate", out, "--n-boot", "0", "--fpr", "0.2", "--by", "sex")
    assert result.exit_code == 0, result.output
    assert "membership risk by sex" in result.output or "membership risk differs by sex" in result.output


def test_data_changed_since_the_run(cli, run, tmp_path):
    out, data = run
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    short = pd.read_csv(data).head(10)
    original = data.read_bytes()
    try:
        short.to_csv(data, index=False)
        assert_one_line_error(cli("mia", "evaluate", copy, "--n-boot", "0", "--fpr", "0.2", "--by", "sex"),
                              fragment="the data changed since the run was trained")
    finally:
        data.write_bytes(original)
