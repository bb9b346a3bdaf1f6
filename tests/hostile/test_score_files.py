"""Hostile score files for ``dpaudit mia evaluate`` / :meth:`ScoreSet.load`: each is one clear DataError
(CLI: one line, exit 2), never a pickle load, a crash inside the fits, or a silently wrong number."""

from __future__ import annotations

import json
import os
import warnings
import zipfile

import numpy as np
import pytest

from dpaudit import DataError
from dpaudit._validation import WHOLE
from dpaudit.mia.designs import keep_matrix
from dpaudit.mia.scores import TRAIN_SIZE_HINT, ScoreSet, max_abs_score
from tests.hostile.conftest import assert_one_line_error, files_in, have_fifo

KEEP = keep_matrix(8, 10, seed=0)
META = json.dumps({"format": "dpaudit.scoreset", "version": 1, "train_size": 5, "pool_size": 10, "meta": {}})


def _score():
    return np.random.default_rng(0).normal(size=KEEP.shape)


def _npz(path, **arrays):
    np.savez(path, **arrays)


BAD = [
    # (file name, writer, fragment)
    ("complex.npz", lambda p: _npz(p, score=_score() + 1j, keep=KEEP, meta_json=np.array(META)), "complex"),
    ("huge.npz", lambda p: _npz(p, score=np.full(KEEP.shape, 1e200), keep=KEEP, meta_json=np.array(META)),
     "magnitude above 1e+75"),
    ("nan.npz", lambda p: _npz(p, score=np.where(KEEP, np.nan, 0.0), keep=KEEP, meta_json=np.array(META)),
     "non-finite"),
    ("inf.npz", lambda p: _npz(p, score=np.where(KEEP, np.inf, 0.0), keep=KEEP, meta_json=np.array(META)),
     "non-finite"),
    ("keep_values.npz", lambda p: _npz(p, score=_score(), keep=KEEP * 2, meta_json=np.array(META)),
     "keep must be boolean"),
    ("keep_shape.npz", lambda p: _npz(p, score=_score(), keep=KEEP[:, :5], meta_json=np.array(META)),
     "same shape"),
    ("text_scores.npz", lambda p: _npz(p, score=np.full(KEEP.shape, "a"), keep=KEEP, meta_json=np.array(META)),
     "array of real numbers"),
    ("score_3d.npz", lambda p: _npz(p, score=_score()[..., None], keep=KEEP, meta_json=np.array(META)), "2-D"),
    ("few_models.npz", lambda p: _npz(p, score=_score()[:4], keep=KEEP[:4], meta_json=np.array(META)),
     "at least 6 models"),
    ("all_in.npz", lambda p: _npz(p, score=_score(), keep=np.ones_like(KEEP), meta_json=np.array(META)),
     "leave-one-out needs"),
    ("no_score.npz", lambda p: _npz(p, keep=KEEP, meta_json=np.array(META)), "missing array(s) score"),
    ("pickled.npz", lambda p: _npz(p, score=np.array([{1: 2}], dtype=object), keep=KEEP, meta_json=np.array(META)),
     "Object arrays cannot be loaded"),
    ("meta_not_json.npz", lambda p: _npz(p, score=_score(), keep=KEEP, meta_json=np.array("{not json")),
     "meta_json is not valid JSON"),
    ("meta_foreign.npz", lambda p: _npz(p, score=_score(), keep=KEEP, meta_json=np.array('{"format": "x"}')),
     "format must be 'dpaudit.scoreset'"),
    ("meta_version.npz", lambda p: _npz(p, score=_score(), keep=KEEP, meta_json=np.array(META.replace('"version": 1', '"version": 9'))),
     "version 9 is not supported"),
    ("meta_train_size.npz", lambda p: _npz(p, score=_score(), keep=KEEP, meta_json=np.array(META.replace('"train_size": 5', '"train_size": -5'))),
     WHOLE.format(name="train_size", bounds=" >= 1 and <= 9" + TRAIN_SIZE_HINT, value=-5)),
    ("text.npz", lambda p: p.write_text("hello"), "not an .npz archive"),
    ("empty.npz", lambda p: p.write_bytes(b""), "not an .npz archive"),
    ("single.npz", lambda p: p.write_bytes(_npy_bytes()), "holds a single array"),
    ("truncated.npz", lambda p: p.write_bytes(_good_bytes()[:300]), "not a readable .npz score file"),
    # compressed archives (np.savez_compressed, or any zip method) damaged inside a member
    *[(f"compressed_truncated_{n}.npz", lambda p, n=n: p.write_bytes(_compressed_bytes()[:n]),
       "not a readable .npz score file") for n in (100, 400, 700)],
    ("compressed_garbage.npz", lambda p: p.write_bytes(_damaged(_compressed_bytes())), "not a readable .npz score file"),
    ("compressed_random_tail.npz", lambda p: p.write_bytes(_compressed_bytes()[:60] + bytes(range(256)) * 4),
     "not a readable .npz score file"),
    ("bzip2_garbage.npz", lambda p: p.write_bytes(_damaged(_zip_bytes(zipfile.ZIP_BZIP2))), "not a readable .npz"),
    ("lzma_garbage.npz", lambda p: p.write_bytes(_damaged(_zip_bytes(zipfile.ZIP_LZMA))), "not a readable .npz"),
    ("unknown_method.npz", lambda p: p.write_bytes(_method(_zip_bytes(zipfile.ZIP_STORED), 99)), "not a readable .npz"),
    ("encrypted.npz", lambda p: p.write_bytes(_encrypted(_zip_bytes(zipfile.ZIP_STORED))), "is encrypted"),
    ("huge_shape.npz", lambda p: p.write_bytes(_zip_bytes(zipfile.ZIP_STORED, score=_huge_npy())),
     "declares an array too large to read"),
]


def _compressed_bytes() -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez_compressed(buffer, score=_score(), keep=KEEP, meta_json=np.array(META))
    return buffer.getvalue()


def _zip_bytes(method: int, **members: bytes) -> bytes:
    """A score archive whose members are packed with ``method`` (``members`` replace .npy bytes)."""
    import io

    arrays = {"score": _score(), "keep": KEEP, "meta_json": np.array(META)}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        for name, array in arrays.items():
            one = io.BytesIO()
            np.save(one, array)
            archive.writestr(name + ".npy", members.get(name, one.getvalue()))
    return buffer.getvalue()


def _damaged(data: bytes) -> bytes:
    """``data`` with 40 bytes inside the score member's packed data flipped (headers left intact)."""
    start = data.find(b"score.npy") + len(b"score.npy") + 40
    return data[:start] + bytes(b ^ 0x55 for b in data[start:start + 40]) + data[start + 40:]


def _method(data: bytes, method: int) -> bytes:
    """``data`` with every header's compression method set to ``method``."""
    out = bytearray(data)
    for magic, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        at = out.find(magic)
        while at >= 0:
            out[at + offset:at + offset + 2] = method.to_bytes(2, "little")
            at = out.find(magic, at + 4)
    return bytes(out)


def _encrypted(data: bytes) -> bytes:
    """``data`` with every header's "encrypted" flag set."""
    out = bytearray(data)
    for magic, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = out.find(magic)
        while at >= 0:
            out[at + offset] |= 1
            at = out.find(magic, at + 4)
    return bytes(out)


def _huge_npy() -> bytes:
    """A .npy member whose header declares 2·10^13 float64 values (146 TiB) but holds 1280 bytes."""
    import io

    buffer = io.BytesIO()
    np.save(buffer, _score())
    return buffer.getvalue().replace(b"(8, 10)", b"(2000000000000, 10)", 1)


def _npy_bytes() -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.zeros(3))
    return buffer.getvalue()


def _good_bytes() -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, score=_score(), keep=KEEP, meta_json=np.array(META))
    return buffer.getvalue()


@pytest.mark.parametrize("name,write,fragment", BAD, ids=[b[0] for b in BAD])
def test_bad_score_file_is_one_line_on_the_cli(cli, workdir, tmp_path, name, write, fragment):
    path = tmp_path / name
    write(path)
    result = cli("mia", "evaluate", path, "--n-boot", "0", "--json")
    assert_one_line_error(result, fragment=fragment)


@pytest.mark.parametrize("name,write,fragment", BAD, ids=[b[0] for b in BAD])
def test_bad_score_file_is_a_data_error(tmp_path, name, write, fragment):
    path = tmp_path / name
    write(path)
    with pytest.raises(DataError) as info:
        ScoreSet.load(path)
    assert fragment in str(info.value) and str(path) in str(info.value)


def test_paths_that_are_not_score_files(tmp_path):
    with pytest.raises(DataError, match="is a directory"):
        ScoreSet.load(tmp_path)
    with pytest.raises(DataError, match="no such score file"):
        ScoreSet.load(tmp_path / "nope.npz")
    for bad in (None, 5, ["a.npz"]):
        with pytest.raises(DataError, match="takes the path of a score file"):
            ScoreSet.load(bad)  # type: ignore[arg-type]


def test_a_pipe_a_device_or_a_directory_is_named_on_the_cli(cli, workdir, tmp_path_factory):
    """Not "no such score file": a FIFO would block a reader, /dev/null is a device, a folder no run."""
    folder = tmp_path_factory.mktemp("kinds")
    cases = [("/dev/null", "/dev/null: is a character device, not a score file"),
             (folder, f"{folder} is a directory but not a run directory of `dpaudit mia train`: run.json is missing")]
    if have_fifo():
        os.mkfifo(folder / "pipe.npz")
        cases.append((folder / "pipe.npz", f"{folder / 'pipe.npz'}: is a named pipe (FIFO), not a score file"))
    for path, fragment in cases:
        assert_one_line_error(cli("mia", "evaluate", path, "--n-boot", "0"), fragment=fragment)
        if path != folder:
            with pytest.raises(DataError, match="not a score file"):
                ScoreSet.load(path)
    assert files_in(workdir) == []


@pytest.mark.parametrize("path,fragment", [
    (None, "ScoreSet.save takes the path of the file to write (.npz), got NoneType"),
    (5, "got int"),
    ("/dev/null", "it exists and is not a regular file"),
    ("/no/such/folder/s.npz", "the folder '/no/such/folder' does not exist"),
], ids=["None", "int", "device", "missing folder"])
def test_saving_to_a_bad_path_is_a_data_error(path, fragment):
    scores = ScoreSet(_score(), KEEP, train_size=5, pool_size=10)
    with pytest.raises(DataError) as info:
        scores.save(path)  # type: ignore[arg-type]
    assert fragment in str(info.value)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_saving_under_proc_is_a_data_error_and_leaves_nothing():
    """/proc passes os.access(W_OK) as root; the write itself fails, as one DataError."""
    with pytest.raises(DataError, match="cannot write '/proc/s.npz'"):
        ScoreSet(_score(), KEEP, train_size=5, pool_size=10).save("/proc/s.npz")


@pytest.mark.parametrize("sign", [1, -1])
def test_scores_at_the_magnitude_bound_evaluate_without_a_warning(sign):
    """max_abs_score: the fourth powers of the normality check stay finite (no numpy RuntimeWarning)."""
    from dpaudit.mia.evaluate import evaluate

    bound = sign * max_abs_score(KEEP.shape[0])
    score = np.where(np.random.default_rng(1).random(KEEP.shape) < 0.5, bound, -bound)
    for s in (score, np.where(KEEP, bound, -bound), np.where(KEEP, score, -bound)):  # spread, separated, σ_out = 0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for attack in ("lira", "rmia"):
                report = evaluate(ScoreSet(s, KEEP, train_size=5, pool_size=10), attack=attack, n_boot=5, fpc=True)
                assert 0 <= report.rows[0]["pp_t"]["tpr"] <= 1


def test_scores_just_above_the_bound_are_one_line_on_the_cli(cli, workdir, tmp_path):
    path = tmp_path / "s.npz"
    _npz(path, score=np.where(KEEP, 1e149, -1e149), keep=KEEP, meta_json=np.array(META))
    assert_one_line_error(cli("mia", "evaluate", path, "--n-boot", "0"), fragment="magnitude above 1e+75")


def test_a_valid_file_written_by_another_framework_loads(tmp_path):
    path = tmp_path / "other.npz"
    np.savez_compressed(path, score=_score().astype(np.float32), keep=KEEP.astype(np.int8), meta_json=np.array(META))
    loaded = ScoreSet.load(path)
    assert loaded.score.dtype == np.float64 and loaded.keep.dtype == bool and loaded.score.shape == (8, 10)


@pytest.mark.parametrize("setup,fragment", [
    (lambda d: None, "run.json is missing"),
    (lambda d: (d / "run.json").write_text("{not json"), "run.json is corrupt"),
    (lambda d: (d / "run.json").write_text('{"format": "other"}'), "is not a 'dpaudit.mia.run' file"),
    (lambda d: (d / "run.json").write_text("[]"), "run.json"),
], ids=["empty", "corrupt", "foreign", "list"])
def test_bad_run_directory_is_one_line_on_the_cli(cli, workdir, tmp_path, setup, fragment):
    run = tmp_path / "run"
    run.mkdir()
    setup(run)
    assert_one_line_error(cli("mia", "evaluate", run, "--n-boot", "0"), fragment=fragment)
