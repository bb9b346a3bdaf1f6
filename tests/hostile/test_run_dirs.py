"""Hostile input to ``dpaudit mia train`` / :func:`train_run`: data files, run directories, options and
user classifiers that fail. Each refusal is one clear error (CLI: one line, exit 2) and leaves nothing
behind — no run directory that looks started, no temporary file, never a non-finite score file — and
each awkward-but-valid file trains exactly the models of its clean twin."""

from __future__ import annotations

import gzip
import os
import sys
import textwrap

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpaudit import DataError, DPAuditError
from dpaudit.mia.train import load_run, train_run
from dpaudit.mia.train.models import model_seed
from dpaudit.mia.train.run import save_score
from tests.hostile.conftest import assert_one_line_error, files_in, have_fifo

pytest.importorskip("sklearn")

TRAIN = ["mia", "train", "{run}", "--models", "6", "--pool", "100", "--no-progress"]


def _frame(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"sex": rng.choice(["F", "M"], n), "age": rng.integers(18, 90, n), "y": rng.integers(0, 2, n)})


PLAIN = _frame().to_csv(index=False).encode()


def _parquet(table: pa.Table):
    return lambda path: pq.write_table(table, path)


# (file name, bytes or a writer of the path, fragment of the one-line error)
BAD_DATA = [
    ("empty.csv", b"", "is empty (0 bytes)"),
    ("header_only.csv", b"sex,age,y\n", "holds no rows"),
    ("ragged_short.csv", PLAIN + b"F,30\n", "line 302 has 2 field(s) but the header has 3"),
    ("ragged_long.csv", PLAIN + b"1,2,3,4,5\n", "line 302 has 5 field(s) but the header has 3"),
    ("unclosed_quote.csv", PLAIN + b'"F,30,1\n', "line 302 is not valid CSV"),
    ("dup_header.csv", PLAIN.replace(b"sex,age,y", b"sex,sex,y", 1), "names column(s) 'sex' more than once"),
    ("latin1.csv", PLAIN + b"F\xe9,30,1\n", "line 302 is not UTF-8 text"),
    ("latin1_gz.csv.gz", gzip.compress(PLAIN + b"\xe9,30,1\n"), "line 302 is not UTF-8 text"),
    ("truncated.csv.gz", gzip.compress(PLAIN)[:60], "cannot be read as CSV"),
    ("inf.csv", PLAIN + b"F,inf,1\n", "numeric column 'age' has 1 infinite value(s)"),
    ("minus_inf.csv", PLAIN + b"F,-inf,1\n", "numeric column 'age' has 1 infinite value(s)"),
    ("huge.csv", PLAIN + b"F,1e308,1\n", "magnitude above 1e+100"),
    ("nan.csv", PLAIN + b"F,,1\n", "numeric column 'age' has 1 missing values"),
    ("label_nan.csv", PLAIN + b"F,30,\n", "the label column 'y' has 1 missing values"),
    ("one_label.csv", b"sex,age,y\n" + b"F,30,1\n" * 200, "must hold exactly two values"),
    ("data.json", b'{"sex": "F"}', "unknown file type"),
    ("garbage.parquet", b"PAR1 not parquet", "cannot be read as Parquet"),
    ("struct.parquet", _parquet(pa.table({"s": [{"a": i} for i in range(200)], "y": [i % 2 for i in range(200)]})),
     "column 's' holds nested values (first: {'a': 0})"),
    ("list.parquet", _parquet(pa.table({"l": [[i] for i in range(200)], "y": [i % 2 for i in range(200)]})),
     "column 'l' holds nested values"),
    ("map.parquet", _parquet(pa.table({"m": pa.array([[("k", i)] for i in range(200)], pa.map_(pa.string(), pa.int64())),
                                       "y": [i % 2 for i in range(200)]})), "column 'm' holds nested values"),
]


@pytest.mark.parametrize("name,content,fragment", BAD_DATA, ids=[c[0] for c in BAD_DATA])
def test_bad_data_file_is_one_line_and_writes_nothing(cli, workdir, tmp_path_factory, name, content, fragment):
    path = tmp_path_factory.mktemp("data") / name
    path.write_bytes(content) if isinstance(content, bytes) else content(path)
    before = files_in(workdir)
    result = cli(*[a.format(run=workdir / "run") for a in TRAIN], "--data", path, "--label", "y")
    assert_one_line_error(result, fragment=fragment)
    assert files_in(workdir) == before


def test_paths_that_are_not_data_files_are_named(cli, workdir, tmp_path_factory):
    run = [a.format(run=workdir / "run") for a in TRAIN]
    tmp_path = tmp_path_factory.mktemp("paths")
    folder = tmp_path / "data.csv"
    folder.mkdir()
    cases = [(folder, "data file '{p}' is a directory"), (tmp_path / "nope.csv", "data file '{p}' does not exist"),
             ("/dev/null", "data file '/dev/null' is a character device, not a regular file")]
    if have_fifo():
        os.mkfifo(tmp_path / "pipe.csv")
        cases.append((tmp_path / "pipe.csv", "data file '{p}' is a named pipe (FIFO), not a regular file"))
    for path, fragment in cases:
        assert_one_line_error(cli(*run, "--data", path, "--label", "y"), fragment=fragment.format(p=path))
    assert files_in(workdir) == []


def _variants():
    yield "bom.csv", b"\xef\xbb\xbf" + PLAIN
    yield "crlf.csv", PLAIN.replace(b"\n", b"\r\n")
    yield "bom_crlf.csv", b"\xef\xbb\xbf" + PLAIN.replace(b"\n", b"\r\n")
    yield "gzipped.csv.gz", gzip.compress(PLAIN)
    yield "blank_lines_at_end.csv", PLAIN + b"\n\n"
    yield "quoted.csv", _frame().to_csv(index=False, quoting=1).encode()


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plain")
    (folder / "plain.csv").write_bytes(PLAIN)
    return load_run(train_run(folder / "run", data=folder / "plain.csv", label="y", n_models=6, pool_size=100,
                              progress=False))


@pytest.mark.parametrize("name,content", list(_variants()), ids=[v[0] for v in _variants()])
def test_awkward_but_valid_files_train_the_same_models(plain_run, tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    run = load_run(train_run(tmp_path / "run", data=path, label="y", n_models=6, pool_size=100, progress=False))
    assert np.array_equal(run.score, plain_run.score) and np.array_equal(run.keep, plain_run.keep)


def test_a_dataframe_trains_the_models_of_its_csv_and_resume_checks_it(plain_run, tmp_path):
    frame = _frame()
    run = train_run(tmp_path / "run", data=frame, label="y", n_models=6, pool_size=100, progress=False)
    scores = load_run(run)
    assert np.array_equal(scores.score, plain_run.score) and scores.meta["data"] == "pandas.DataFrame"
    (run / "scores" / "model_00002.npy").unlink()
    changed = frame.copy()
    changed.loc[0, "age"] = 99
    with pytest.raises(DataError, match=r"different configuration \(differs in: data\)"):
        train_run(run, data=changed, label="y", n_models=6, pool_size=100, progress=False, resume=True)
    train_run(run, data=frame, label="y", n_models=6, pool_size=100, progress=False, resume=True)
    assert np.array_equal(load_run(run).score, plain_run.score)


@pytest.mark.parametrize("data,fragment", [
    (5, "data must be the path of a CSV or Parquet file or a pandas DataFrame, got int"),
    ([("F", 1)], "got list"),
    (_frame().rename(columns={"age": 0}), "every column name must be a string, got 0 (int)"),
    (pd.concat([_frame(), _frame()[["age"]]], axis=1), "duplicate column names ['age']"),
    (_frame().iloc[:0], "holds no rows"),
    (_frame().assign(age=[[1]] * 300), "column 'age' holds nested values (first: [1])"),
    (_frame().assign(sex=[{"a": 1}] * 300), "column 'sex' holds nested values"),
    (_frame().assign(age=np.inf), "numeric column 'age' has 300 infinite value(s)"),
    (_frame().assign(y=["a", "b", "c"] * 100), "must hold exactly two values"),
], ids=["int", "list", "int column name", "repeated column", "no rows", "list values", "dict values", "inf",
        "three labels"])
def test_bad_data_objects_are_a_data_error(tmp_path, data, fragment):
    with pytest.raises(DataError) as info:
        train_run(tmp_path / "run", data=data, label="y", n_models=6, pool_size=100, progress=False)
    assert fragment in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "run").exists()


# -- run directories and options ---------------------------------------------------------------------

RUN_CASES = [
    (TRAIN + ["--resume"], "nothing to resume: {run} does not exist"),
    (["mia", "train", "{empty}", "--models", "6", "--pool", "100", "--resume"], "holds no run (no run.json)"),
    (["mia", "train", "{nonrun}", "--models", "6", "--pool", "100"], "is not empty"),
    (["mia", "train", "{nonrun}", "--models", "6", "--pool", "100", "--resume"], "holds no run"),
    (["mia", "train", "{keep_only}", "--models", "6", "--pool", "100", "--resume"], "run.json is missing"),
    (TRAIN[:4] + ["100000000000", "--pool", "100"], "n_models must be an integer >= 6 and <= 100000"),
    (TRAIN[:4] + ["100000", "--pool", "48842"], "= 4,884,200,000 scores, more than the limit of 100,000,000 cells"),
    (TRAIN + ["--progress", "yes"], "unexpected extra argument(s) (yes)"),
    (TRAIN + ["--resume", "no"], "unexpected extra argument(s) (no)"),
    (TRAIN + ["--backend", "nope"], "backend must be one of local, dask, got 'nope'"),
    (TRAIN + ["--backend", ""], "backend must be one of local, dask"),
    (TRAIN + ["--scheduler", "tcp://127.0.0.1:1"], "applies to backend 'dask' only"),
    (TRAIN + ["--backend", "dask", "--scheduler", " "], "scheduler must be a Dask scheduler address"),
    (TRAIN + ["--backend", "dask", "--scheduler", "tcp://127.0.0.1:1", "-j", "2"], "n_jobs does not apply"),
    (TRAIN + ["--backend", "dask", "--scheduler", "tcp://127.0.0.1:1"], "cannot reach the Dask scheduler"),
    (TRAIN + ["--backend", "dask", "--scheduler", "junk"], "cannot reach the Dask scheduler at 'junk'"),
    (TRAIN + ["--backend", "dask", "-j", "100000"], "n_jobs must be"),
]


@pytest.mark.parametrize("argv,fragment", RUN_CASES, ids=[" ".join(a[3:])[:50] for a, _ in RUN_CASES])
def test_hostile_run_option_is_one_line_and_writes_nothing(cli, workdir, argv, fragment):
    (workdir / "empty").mkdir()
    (workdir / "nonrun").mkdir()
    (workdir / "nonrun" / "notes.txt").write_text("mine")
    (workdir / "keep_only").mkdir()
    np.save(workdir / "keep_only" / "keep.npy", np.zeros((6, 100), bool))
    before = files_in(workdir)
    paths = {"run": workdir / "run", "empty": workdir / "empty", "nonrun": workdir / "nonrun",
             "keep_only": workdir / "keep_only"}
    result = cli(*[a.format(**paths) for a in argv])
    assert_one_line_error(result, fragment=fragment.format(**paths))
    assert files_in(workdir) == before


def test_the_cell_limit_is_configurable(cli, workdir, monkeypatch):
    monkeypatch.setenv("DPAUDIT_MAX_CELLS", "500")
    assert_one_line_error(cli(*[a.format(run=workdir / "run") for a in TRAIN]), fragment="limit of 500 cells")
    monkeypatch.setenv("DPAUDIT_MAX_CELLS", "lots")
    assert_one_line_error(cli(*[a.format(run=workdir / "run") for a in TRAIN]),
                          fragment="DPAUDIT_MAX_CELLS must be a positive integer")
    assert files_in(workdir) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_unwritable_place_is_refused_before_training(cli, monkeypatch):
    """/proc accepts os.access(W_OK) as root, but no folder can be made there: the probe finds out."""
    monkeypatch.setattr("dpaudit.mia.train.trainer.registered", lambda *a: pytest.fail("data loaded"))
    for place in ("/proc/run", "/proc/a/b/run"):
        assert_one_line_error(cli("mia", "train", place, "--models", "6", "--pool", "100"),
                              fragment=f"cannot write the run directory '{place}'")
        with pytest.raises(DataError, match="cannot write the run directory"):
            train_run(place, n_models=6, pool_size=100, progress=False)


def test_a_corrupt_score_file_of_a_run_is_named_on_resume(cli, workdir, tmp_path):
    (tmp_path / "t.csv").write_bytes(PLAIN)
    run = train_run(workdir / "run", data=tmp_path / "t.csv", label="y", n_models=6, pool_size=100, progress=False)
    np.save(run / "scores" / "model_00001.npy", np.full(100, np.nan))
    result = cli(*[a.format(run=run) for a in TRAIN], "--data", tmp_path / "t.csv", "--label", "y", "--resume")
    assert_one_line_error(result, fragment="model_00001.npy: expected 100 finite float64 scores, got 100 NaN or "
                                           "infinite; delete it and resume")
    assert_one_line_error(cli("mia", "evaluate", run, "--n-boot", "0"), fragment="got 100 NaN or infinite")


# -- user classifiers that fail ----------------------------------------------------------------------

FACTORIES = """
    import os
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    class Boom(LogisticRegression):
        def fit(self, X, y, **kw):
            raise ValueError("boom in fit\\nsecond line of the message")

    class OneColumn(LogisticRegression):
        def predict_proba(self, X):
            return super().predict_proba(X)[:, :1]

    class Constant(LogisticRegression):
        def predict_proba(self, X):
            p = super().predict_proba(X)
            p[:, 1] = float(os.environ["PROBA"])
            return p

    class Late(LogisticRegression):
        '''Fails on the models whose random_state is a multiple of 3 while FAIL_LATE is set.'''
        def fit(self, X, y, **kw):
            if os.environ.get("FAIL_LATE") and self.random_state % 3 == 0:
                raise RuntimeError("late failure")
            return super().fit(X, y, **kw)
"""


@pytest.fixture
def factories(tmp_path_factory, monkeypatch):
    folder = tmp_path_factory.mktemp("models")
    (folder / "hostile_models.py").write_text(textwrap.dedent(FACTORIES))
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("hostile_models", None)
    return "hostile_models"


@pytest.mark.parametrize("factory,env,fragment", [
    ("Boom", None, "failed on model 0: ValueError: boom in fit; nothing was written"),
    ("OneColumn", None, "failed on model 0: predict_proba returned an array of shape (100, 1), expected (100, 2)"),
    ("Constant", "nan", "failed on model 0: expected 100 finite float64 scores, got 100 NaN or infinite"),
    ("Constant", "inf", "failed on model 0: expected 100 finite float64 scores, got 100 NaN or infinite"),
], ids=["fit raises", "one column", "nan", "inf"])
def test_a_failing_classifier_is_one_line_and_leaves_nothing(cli, workdir, factories, monkeypatch, factory, env,
                                                             fragment):
    if env is not None:
        monkeypatch.setenv("PROBA", env)
    for run in (workdir / "run", workdir / "new" / "parent" / "run"):
        result = cli(*[a.format(run=run) for a in TRAIN], "--trainer", "per-model", "--model", f"{factories}:{factory}")
        line = assert_one_line_error(result, fragment=fragment)
        assert line.startswith(f"dpaudit: error: the model '{factories}:{factory}' failed on model 0: ")
        assert files_in(workdir) == []
    (workdir / "empty").mkdir()  # an empty directory given by the user stays, empty
    assert_one_line_error(cli(*[a.format(run=workdir / "empty") for a in TRAIN], "--trainer", "per-model",
                              "--model", f"{factories}:{factory}"), fragment=fragment)
    assert files_in(workdir) == ["empty"]


def test_a_late_failure_keeps_the_finished_models_and_resume_completes_them(tmp_path, factories, monkeypatch):
    first = next(m for m in range(6) if model_seed(0, m) % 3 == 0)
    options = {"n_models": 6, "pool_size": 100, "model": f"{factories}:Late", "progress": False}
    monkeypatch.setenv("FAIL_LATE", "1")
    with pytest.raises(DPAuditError) as info:
        train_run(tmp_path / "run", **options)
    assert str(info.value) == (f"the model '{factories}:Late' failed on model {first}: RuntimeError: late failure; "
                               f"{tmp_path / 'run'} keeps its {first} finished model(s): fix the model, then train "
                               "the rest with --resume (train_run(..., resume=True))")
    assert files_in(tmp_path / "run") == ["keep.npy", "run.json", "scores",
                                          *(f"scores/model_{m:05d}.npy" for m in range(first))]
    with pytest.raises(DPAuditError, match=f"keeps its {first} finished model"):  # resumed, the same model fails
        train_run(tmp_path / "run", **options, resume=True)
    monkeypatch.delenv("FAIL_LATE")
    train_run(tmp_path / "run", **options, resume=True)
    fresh = train_run(tmp_path / "fresh", **options)
    assert np.array_equal(load_run(tmp_path / "run").score, load_run(fresh).score)


def test_a_failed_write_of_a_new_run_removes_it(tmp_path, monkeypatch):
    """If the first score cannot be written (a full disk), the run directory and the parents it created go."""
    (tmp_path / "t.csv").write_bytes(PLAIN)

    def full(*args):
        raise DataError("cannot write: No space left on device")

    monkeypatch.setattr("dpaudit.mia.train.run.save_score", full)
    for run in (tmp_path / "a" / "b" / "run", tmp_path / "empty"):
        if run.name == "empty":
            run.mkdir()
        with pytest.raises(DataError, match="No space left"):
            train_run(run, data=tmp_path / "t.csv", label="y", n_models=6, pool_size=100, progress=False)
    assert files_in(tmp_path) == ["empty", "t.csv"]


def test_a_score_file_is_never_written_with_non_finite_scores(tmp_path):
    (tmp_path / "scores").mkdir()
    for row, fragment in ((np.full(5, np.nan), "got 5 NaN or infinite"), (np.zeros(4), r"got float64 \(4,\)"),
                          (np.zeros(5, np.float32), r"got float32 \(5,\)")):
        with pytest.raises(DataError, match=fr"model 2's scores were not written: .*{fragment}"):
            save_score(tmp_path, 2, row, 5)
    assert files_in(tmp_path) == ["scores"]
