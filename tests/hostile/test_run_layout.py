"""A run directory whose entries are of the wrong kind — a *file* (or a dangling link) where ``scores/``
should be, a directory where ``run.json``, ``keep.npy`` or a model's score file should be — is refused
by ``dpaudit mia train --resume`` / ``train_run(resume=True)`` and by ``dpaudit mia evaluate RUN`` /
:func:`load_run` with one line naming the entry and what to do (was a FileExistsError traceback on
resume, or "6 of 6 models are unfinished: resume" that resume could not do)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from dpaudit import DataError
from dpaudit.mia.train import load_run, train_run
from tests.hostile.conftest import assert_one_line_error, files_in

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def partial_run(tmp_path_factory):
    """A run of 6 models with model 3 unfinished, and its data file."""
    folder = tmp_path_factory.mktemp("layout")
    rng = np.random.default_rng(0)
    data = folder / "t.csv"
    data.write_text("a,b,y\n" + "".join(f"{rng.normal():.3f},{rng.integers(3)},{rng.integers(2)}\n" for _ in range(300)))
    run = train_run(folder / "run", data=data, label="y", n_models=6, pool_size=100, progress=False)
    (run / "scores" / "model_00003.npy").unlink()
    return run, data


def _scores_file(run):
    shutil.rmtree(run / "scores")
    (run / "scores").write_text("not a folder")


def _scores_dangling(run):
    shutil.rmtree(run / "scores")
    os.symlink(run / "nowhere", run / "scores")


def _scores_link_to_file(run):
    shutil.rmtree(run / "scores")
    os.symlink(run / "run.json", run / "scores")


def _as_folder(name):
    def damage(run):
        (run / name).unlink()
        (run / name).mkdir()
    return damage


LAYOUTS = {
    "scores is a file": (_scores_file, "scores is a file, not the folder of the models' scores; move or delete it"),
    "scores is a dangling link": (_scores_dangling, "scores is a dangling link, not the folder of the models' scores"),
    "scores links to a file": (_scores_link_to_file, "scores is a file, not the folder of the models' scores"),
    "a model's score file is a folder": (_as_folder("scores/model_00001.npy"),
                                         "model_00001.npy is a directory, not a regular file; delete it and resume"),
    "keep.npy is a folder": (_as_folder("keep.npy"), "keep.npy is a directory, not a regular file"),
    "run.json is a folder": (_as_folder("run.json"), "run.json is a directory, not a regular file"),
}


@pytest.fixture
def damaged(partial_run, tmp_path, request):
    run, data = partial_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy, symlinks=True)
    LAYOUTS[request.param][0](copy)
    return copy, data, LAYOUTS[request.param][1]


@pytest.mark.parametrize("damaged", list(LAYOUTS), indirect=True)
def test_resume_refuses_a_wrong_kind_of_entry_in_one_line_and_writes_nothing(cli, workdir, damaged):
    run, data, fragment = damaged
    before = files_in(run)
    result = cli("mia", "train", run, "--models", "6", "--pool", "100", "--no-progress", "--data", data,
                 "--label", "y", "--resume")
    assert_one_line_error(result, fragment=fragment)
    assert files_in(run) == before
    with pytest.raises(DataError, match=fragment.split(";")[0].replace("(", r"\(")):
        train_run(run, data=data, label="y", n_models=6, pool_size=100, progress=False, resume=True)


@pytest.mark.parametrize("damaged", list(LAYOUTS), indirect=True)
def test_evaluate_refuses_a_wrong_kind_of_entry_in_one_line(cli, workdir, damaged):
    run, _, fragment = damaged
    assert_one_line_error(cli("mia", "evaluate", run, "--n-boot", "0"), fragment=fragment)
    with pytest.raises(DataError, match=fragment.split(";")[0]):
        load_run(run)


def test_a_folder_named_like_a_temporary_is_left_alone_on_resume(partial_run, tmp_path):
    run, data = partial_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    (copy / "scores" / "mine.tmp").mkdir()
    train_run(copy, data=data, label="y", n_models=6, pool_size=100, progress=False, resume=True)
    assert (copy / "scores" / "mine.tmp").is_dir() and load_run(copy).n_models == 6
