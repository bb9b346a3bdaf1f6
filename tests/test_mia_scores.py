"""ScoreSet validation, the on-disk format (save/load round trip, load errors) and keep_matrix."""

import json
import re

import numpy as np
import pytest

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import WHOLE
from dpaudit.mia.designs import EVEN_MODELS_HINT, keep_matrix
from dpaudit.mia.scores import FORMAT_NAME, FORMAT_VERSION, TRAIN_SIZE_HINT, ScoreSet

#: The ``bounds`` of the message of an M that :func:`keep_matrix` cannot use.
EVEN = " >= 2 and even" + EVEN_MODELS_HINT
#: The ``bounds`` of the message of a training-set size that a pool of 6 records cannot hold.
TRAIN = " >= 1 and <= 5" + TRAIN_SIZE_HINT


def _valid(m=8, n=6, seed=0):
    keep = keep_matrix(m, n, seed=seed)
    score = np.random.default_rng(seed).normal(size=(m, n)) + keep
    return score, keep


def _make(score=None, keep=None, train_size=3, pool_size=None, meta=None):
    s, k = _valid()
    score = s if score is None else score
    keep = k if keep is None else keep
    pool_size = np.shape(score)[-1] if pool_size is None else pool_size
    return ScoreSet(score, keep, train_size=train_size, pool_size=pool_size, meta={} if meta is None else meta)


# ---------------------------------------------------------------- keep_matrix


def test_keep_matrix_is_balanced_and_seeded():
    k = keep_matrix(16, 500, seed=3)
    assert k.dtype == np.bool_ and k.shape == (16, 500)
    assert (k.sum(axis=0) == 8).all()
    assert np.array_equal(k, keep_matrix(16, 500, seed=3))
    assert not np.array_equal(k, keep_matrix(16, 500, seed=4))
    # Each model holds about N+/2 records: Binomial-like spread, 500/2 ± 5·√(500/4).
    assert np.all(np.abs(k.sum(axis=1) - 250) < 5 * np.sqrt(125))


def test_keep_matrix_columns_are_uniform_over_models():
    # Every model is IN for a record with probability 1/2: 20,000 columns, SE 0.0035 per model.
    k = keep_matrix(6, 20_000, seed=0)
    assert np.all(np.abs(k.mean(axis=1) - 0.5) < 5 * 0.5 / np.sqrt(20_000))


def test_keep_matrix_accepts_generator():
    a = keep_matrix(4, 10, seed=np.random.default_rng(1))
    assert np.array_equal(a, keep_matrix(4, 10, seed=np.random.default_rng(1)))


@pytest.mark.parametrize(
    ("m", "n", "message"),
    [
        (7, 5, WHOLE.format(name="n_models", bounds=EVEN, value=7)),
        (0, 5, WHOLE.format(name="n_models", bounds=EVEN, value=0)),
        (4, 0, WHOLE.format(name="n_records", bounds=" >= 1", value=0)),
        (4.0, 5, WHOLE.format(name="n_models", bounds=EVEN, value=4.0)),
        (True, 5, WHOLE.format(name="n_models", bounds=EVEN, value=True)),
    ],
)
def test_keep_matrix_rejects_bad_sizes(m, n, message):
    with pytest.raises(DPAuditError, match=re.escape(message)):
        keep_matrix(m, n, seed=0)


# ---------------------------------------------------------------- ScoreSet validation


def test_scoreset_fields_and_readonly_arrays():
    score, keep = _valid()
    s = ScoreSet(score, keep.astype(int), train_size=3, pool_size=6, meta={"seed": np.int64(5), "v": np.arange(2)})
    assert s.n_models == 8 and s.n_records == 6
    assert s.keep.dtype == np.bool_ and s.score.dtype == np.float64
    assert s.meta == {"seed": 5, "v": [0, 1]}
    assert s.mean_in_per_model == 3.0  # 8 models × 6 records / 2 IN per record / 8 models
    with pytest.raises(ValueError):
        s.score[0, 0] = 1.0
    score[0, 0] = 1.0  # the caller's own array stays writable
    assert "ScoreSet(n_models=8, n_records=6, train_size=3" in repr(s)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"score": np.zeros(6)}, "score must be 2-D (n_models, n_records), got shape (6,)"),
        ({"keep": np.ones((8, 6, 1), bool)}, "keep must be 2-D (n_models, n_records), got shape (8, 6, 1)"),
        ({"keep": np.ones((8, 5), bool)}, "score and keep must have the same shape, got (8, 6) and (8, 5)"),
        ({"score": [["a"] * 6] * 8}, "score must be an array of real numbers of shape (n_models, n_records)"),
        ({"keep": np.full((8, 6), 2)}, "keep must be boolean (or integers 0/1), got dtype int64 with other values"),
        ({"keep": np.full((8, 6), "x")}, "keep must be boolean (or integers 0/1), got dtype <U1 with other values"),
        ({"pool_size": 7}, "pool_size = 7 but score has 6 columns (one per pool record); pass the number of pool records"),
        ({"pool_size": 6.0}, WHOLE.format(name="pool_size", bounds=" >= 2", value=6.0)),
        ({"train_size": 0}, WHOLE.format(name="train_size", bounds=TRAIN, value=0)),
        ({"train_size": 6}, WHOLE.format(name="train_size", bounds=TRAIN, value=6)),
        ({"train_size": "3"}, WHOLE.format(name="train_size", bounds=TRAIN, value="3")),
        ({"meta": [1]}, "meta must be a mapping (dict) of JSON-serialisable values, got list"),
        ({"meta": {"f": object()}}, "meta must be JSON-serialisable (str keys; numbers, strings, lists, dicts)"),
        ({"meta": {"f": float("nan")}}, "meta must be JSON-serialisable"),
    ],
)
def test_scoreset_validation_messages(kwargs, message):
    with pytest.raises(DataError, match=re.escape(message)):
        _make(**kwargs)


def test_scoreset_non_finite_scores_are_located():
    score, keep = _valid()
    score[2, 4] = np.nan
    score[5, 1] = np.inf
    message = (
        "score has 2 non-finite value(s) (NaN or ±inf); the first is nan at model 2, record 4; "
        "repair the scores or drop those records"
    )
    with pytest.raises(DataError, match=re.escape(message)):
        ScoreSet(score, keep, train_size=3, pool_size=6)


def test_scoreset_needs_six_models():
    keep = np.array([[1, 0], [1, 0], [1, 1], [0, 1]], bool)
    message = (
        "score has 4 models; leave-one-out fits need every record IN in ≥ 3 and OUT in ≥ 3 models, "
        "so at least 6 models"
    )
    with pytest.raises(DataError, match=re.escape(message)):
        ScoreSet(np.zeros((4, 2)), keep, train_size=1, pool_size=2)


def test_scoreset_names_the_first_record_without_enough_in_or_out_models():
    keep = keep_matrix(8, 6, seed=0)
    keep[:, 2] = [1, 1, 0, 0, 0, 0, 0, 0]  # IN in 2: the IN fit of an IN target has 1 model
    keep[:, 4] = [1, 1, 1, 1, 1, 1, 0, 0]  # OUT in 2
    keep[:, 5] = [1, 1, 1, 1, 1, 0, 0, 0]  # OUT in 3: fine
    message = (
        "record 2 is IN in 2 of 8 models; leave-one-out needs every record IN in ≥ 3 and OUT in ≥ 3 models "
        "(≥ 2 per fit besides the target); 2 record(s) violate this: drop them or train more models"
    )
    with pytest.raises(DataError, match=re.escape(message)):
        ScoreSet(np.zeros((8, 6)), keep, train_size=3, pool_size=6)


def test_scoreset_accepts_the_boundary_counts():
    keep = np.zeros((6, 3), bool)
    keep[:3] = True  # every record IN in exactly 3 and OUT in exactly 3 of 6 models
    ScoreSet(np.zeros((6, 3)), keep, train_size=1, pool_size=3)


# ---------------------------------------------------------------- on-disk format


def test_save_load_round_trip(tmp_path):
    score, keep = _valid(m=10, n=7, seed=2)
    meta = {"dataset": "adult", "model": "logreg", "seed": 2, "nested": {"c": [1.5, None, "x"]}}
    s = ScoreSet(score.astype(np.float32).astype(np.float64), keep, train_size=4, pool_size=7, meta=meta)
    path = s.save(tmp_path / "scores.npz")
    assert path == tmp_path / "scores.npz"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.npz"]  # no temporary left behind
    t = ScoreSet.load(path)
    assert np.array_equal(t.score, s.score) and t.score.dtype == np.float64
    assert np.array_equal(t.keep, s.keep) and t.keep.dtype == np.bool_
    assert (t.train_size, t.pool_size, t.meta) == (4, 7, meta)
    # The documented header.
    with np.load(path, allow_pickle=False) as z:
        header = json.loads(str(z["meta_json"]))
    assert header == {"format": FORMAT_NAME, "version": FORMAT_VERSION, "train_size": 4, "pool_size": 7, "meta": meta}


def test_save_overwrites_atomically(tmp_path):
    path = tmp_path / "s.npz"
    _make(meta={"v": 1}).save(path)
    _make(meta={"v": 2}).save(str(path))
    assert ScoreSet.load(str(path)).meta == {"v": 2}
    assert len(list(tmp_path.iterdir())) == 1


def test_load_foreign_writer_with_int_keep_and_float32(tmp_path):
    # What another framework would write following the module docstring.
    score, keep = _valid()
    header = {"format": "dpaudit.scoreset", "version": 1, "train_size": 3, "pool_size": 6, "meta": {"by": "jax"}}
    path = tmp_path / "foreign.npz"
    np.savez_compressed(
        path, score=score.astype(np.float32), keep=keep.astype(np.int8), meta_json=np.array(json.dumps(header))
    )
    s = ScoreSet.load(path)
    assert s.keep.dtype == np.bool_ and np.array_equal(s.keep, keep)
    assert np.allclose(s.score, score, atol=1e-6) and s.meta == {"by": "jax"}


def _write(path, header=None, **arrays):
    score, keep = _valid()
    base = {"score": score, "keep": keep}
    if header is not None:
        base["meta_json"] = np.array(header if isinstance(header, str) else json.dumps(header))
    base.update(arrays)
    np.savez(path, **{k: v for k, v in base.items() if v is not None})
    return path


GOOD = {"format": "dpaudit.scoreset", "version": 1, "train_size": 3, "pool_size": 6, "meta": {}}


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "absent.npz", "absent.npz: no such score file"),
        (lambda p: (p / "text.npz").write_text("hello") and p / "text.npz", "text.npz: not an .npz archive"),
        (lambda p: np.save(p / "one.npy", np.zeros(3)) or p / "one.npy", "one.npy: holds a single array, not an .npz archive"),
        (lambda p: _write(p / "m.npz", GOOD, keep=None), "m.npz: missing array(s) keep; a score file holds score, keep, meta_json"),
        (lambda p: _write(p / "m.npz"), "m.npz: missing array(s) meta_json"),
        (lambda p: _write(p / "j.npz", "{not json"), "j.npz: meta_json is not valid JSON"),
        (lambda p: _write(p / "n.npz", header=None, meta_json=np.zeros(1)), "n.npz: meta_json must be one JSON string, got dtype float64"),
        (lambda p: _write(p / "f.npz", {**GOOD, "format": "other"}), "f.npz: meta_json format must be 'dpaudit.scoreset', got 'other'"),
        (lambda p: _write(p / "f.npz", [1, 2]), "f.npz: meta_json format must be 'dpaudit.scoreset', got [1, 2]"),
        (lambda p: _write(p / "v.npz", {**GOOD, "version": 2}), "v.npz: score file version 2 is not supported (this dpaudit reads version 1)"),
        (lambda p: _write(p / "t.npz", {k: v for k, v in GOOD.items() if k != "train_size"}), "t.npz: meta_json lacks train_size"),
        (lambda p: _write(p / "s.npz", GOOD, keep=np.ones((8, 5), bool)), "s.npz: score and keep must have the same shape, got (8, 6) and (8, 5)"),
        (lambda p: _write(p / "s.npz", {**GOOD, "pool_size": 9}), "s.npz: pool_size = 9 but score has 6 columns"),
        (lambda p: _write(p / "o.npz", GOOD, keep=np.array([[None] * 6] * 8, dtype=object)), "o.npz: not a readable .npz score file"),
    ],
)
def test_load_errors(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(DataError, match=re.escape(message)):
        ScoreSet.load(path)
