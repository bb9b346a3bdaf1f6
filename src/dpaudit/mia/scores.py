"""Attack scores of M models on N+ pool records, the keep matrix, and their on-disk format (spec §1).

A membership-inference evaluation reads one object: ``score[m, x]``, the attack signal of model ``m``
on record ``x`` (for LiRA the logit-scaled confidence of the true label,
``φ = log p_y − log Σ_{c≠y} p_c``), and ``keep[m, x]``, true iff ``x`` was in model ``m``'s
training set. :class:`ScoreSet` holds the pair with the training-set size ``N``, the pool size ``N+``
and free-form metadata, validates it once, and saves/loads it so scores from any framework can be
evaluated, not only models trained by dpaudit.

Leave-one-out rule
------------------
Efficient LiRA (Carlini et al., IEEE S&P 2022, and its reference code) reuses every model both as target and as shadow:
the fits for target ``(m, x)`` use the *other* models. Every one of those fits (IN and OUT, whether the
target itself is IN or OUT) must hold at least :data:`MIN_FIT_MODELS` = 2 models, the fewest from
which a sample standard deviation (ddof = 1) exists. Hence every record must be IN in at least 3 and
OUT in at least 3 models: ``3 ≤ keep[:, x].sum() ≤ M − 3``, and ``M ≥ 6``.

On-disk format (version 1)
--------------------------
One NumPy ``.npz`` archive (compressed or not; written uncompressed by :meth:`ScoreSet.save`), read
with ``allow_pickle=False``, holding exactly these arrays:

``score``
    float (any real dtype, read as float64), shape ``(M, N+)``; row = model, column = pool record.
    Every value finite, of magnitude at most :func:`max_abs_score` (1e75).
``keep``
    bool (or integers 0/1), shape ``(M, N+)``; ``keep[m, x]`` is true iff record ``x`` was in
    model ``m``'s training set.
``meta_json``
    a 0-d (or one-element) unicode string array holding a JSON object::

        {"format": "dpaudit.scoreset", "version": 1,
         "train_size": N, "pool_size": N+, "meta": {...free-form: dataset, model, seed...}}

    ``meta.design`` (``"efficient"`` or ``"poisson"``) declares that the training sets were drawn
    from this pool (the finite-population correction is then on by default); ``meta.score_cap`` the
    magnitude the scores were clipped to.

and optionally

``record_ids``
    integers, shape ``(N+,)``, distinct: each record's own identifier (e.g. its row in the data),
    reported beside the most vulnerable records.

Any framework can write it, e.g. ``np.savez("s.npz", score=s, keep=k,
meta_json=np.array(json.dumps({...})))``.

Examples
--------
>>> from dpaudit.mia.designs import keep_matrix
>>> keep = keep_matrix(8, 5, seed=0)
>>> keep.sum(axis=0).tolist()
[4, 4, 4, 4, 4]
>>> rng = np.random.default_rng(0)
>>> s = ScoreSet(rng.normal(size=(8, 5)) + keep, keep, train_size=2, pool_size=5, meta={"model": "toy"})
>>> s
ScoreSet(n_models=8, n_records=5, train_size=2, pool_size=5, meta={'model': 'toy'})
"""

from __future__ import annotations

import json
import lzma
import os
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._errors import DataError
from dpaudit._io import atomic_open
from dpaudit._validation import whole_number
from dpaudit.counting.files import file_kind
from dpaudit.mia._score_checks import (
    MAX_ABS_SCORE,
    MIN_FIT_MODELS,
    TRAIN_SIZE_HINT,
    _check_meta,
    check_record_ids,
    check_score_keep,
    check_train_size,
    max_abs_score,
)

__all__ = ["ScoreSet", "check_score_keep", "check_train_size", "max_abs_score", "MIN_FIT_MODELS", "FORMAT_NAME",
           "FORMAT_VERSION", "MAX_ABS_SCORE", "TRAIN_SIZE_HINT"]

#: The ``format`` tag and ``version`` in ``meta_json`` of the on-disk format.
FORMAT_NAME = "dpaudit.scoreset"
FORMAT_VERSION = 1
_ARRAYS = ("score", "keep", "meta_json")
#: What reading a damaged archive raises: numpy's ValueError/EOFError on a bad .npy header or short data,
#: zipfile's BadZipFile (bad CRC, bad header), zlib/bz2/lzma errors from a damaged compressed member,
#: NotImplementedError for an unknown compression method or zip version, RuntimeError for an encrypted one.
_CORRUPT = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, lzma.LZMAError, NotImplementedError,
            RuntimeError)


class ScoreShape:
    """``n_models`` and ``n_records`` of a class holding a ``score`` matrix of shape (M, N+)."""

    score: np.ndarray

    @property
    def n_models(self) -> int:
        """M, the number of models (rows)."""
        return int(self.score.shape[0])

    @property
    def n_records(self) -> int:
        """N+, the number of pool records (columns)."""
        return int(self.score.shape[1])


@dataclass(frozen=True, eq=False, repr=False)
class ScoreSet(ScoreShape):
    """Scores of M models on N+ pool records with their membership, validated (spec §1).

    Parameters
    ----------
    score : array_like of float, shape (M, N+)
        Attack signal of model ``m`` on record ``x``; stored as a read-only float64 array. All finite.
    keep : array_like of bool, shape (M, N+)
        True iff record ``x`` is in model ``m``'s training set (integers 0/1 are converted).
        Every record must be IN in ≥ 3 and OUT in ≥ 3 models (module docstring, "Leave-one-out rule").
    train_size : int
        N, the training-set size of each model; ``0 < N < N+``.
    pool_size : int
        N+, the number of records in the pool; must equal the number of columns.
    meta : mapping, optional
        Free-form, JSON-serialisable description (dataset, model, seed, …); numpy scalars and arrays
        are converted to Python values. ``meta["design"]`` (``"efficient"`` or ``"poisson"``) says the
        training sets were drawn from this pool, which turns the finite-population correction on by
        default; ``meta["score_cap"]`` is the magnitude the scores were clipped to, if any.
    record_ids : array_like of int, shape (N+,), optional
        Each record's own identifier (a data file's row number), reported beside the most vulnerable
        records; distinct integers.

    Attributes
    ----------
    mean_in_per_model : float
        Average number of IN records per model, ``keep.sum(axis=1).mean()``. Not checked: compare with
        ``train_size`` (efficient LiRA trains each model on ``N+/2`` records, so both are ≈ ``N+/2``).

    Raises
    ------
    DataError
        With a message naming the problem for each violated condition above.

    Examples
    --------
    >>> from dpaudit.mia.designs import keep_matrix
    >>> keep = keep_matrix(6, 4, seed=0)
    >>> s = ScoreSet(np.zeros((6, 4)), keep, train_size=2, pool_size=4)
    >>> s.n_models, s.n_records, s.mean_in_per_model
    (6, 4, 2.0)
    >>> ScoreSet(np.zeros((6, 4)), keep, train_size=4, pool_size=4)
    Traceback (most recent call last):
    ...
    dpaudit._errors.DataError: train_size must be an integer >= 1 and <= 3 (smaller than pool_size), got 4
    """

    score: np.ndarray
    keep: np.ndarray
    train_size: int
    pool_size: int
    meta: dict[str, Any] = field(default_factory=dict)
    record_ids: np.ndarray | None = None
    mean_in_per_model: float = field(init=False)

    def __post_init__(self) -> None:
        score, keep = check_score_keep(self.score, self.keep)
        pool_size = whole_number("pool_size", self.pool_size, minimum=2, error=DataError)
        if pool_size != score.shape[1]:
            raise DataError(
                f"pool_size = {pool_size} but score has {score.shape[1]} columns (one per pool record); "
                "pass the number of pool records"
            )
        train_size = check_train_size(self.train_size, pool_size, error=DataError)
        meta = _check_meta(self.meta)
        ids = None if self.record_ids is None else check_record_ids(self.record_ids, pool_size)
        for name, value in (("score", score), ("keep", keep)) + ((("record_ids", ids),) if ids is not None else ()):
            view = value.view()
            view.flags.writeable = False  # a view: the caller's own array keeps its flags
            object.__setattr__(self, name, view)
        object.__setattr__(self, "train_size", train_size)
        object.__setattr__(self, "pool_size", pool_size)
        object.__setattr__(self, "meta", meta)
        object.__setattr__(self, "mean_in_per_model", float(keep.sum(axis=1).mean()))

    def __repr__(self) -> str:
        return (
            f"ScoreSet(n_models={self.n_models}, n_records={self.n_records}, train_size={self.train_size}, "
            f"pool_size={self.pool_size}, meta={self.meta!r})"
        )

    def permuted(self, *, seed: int | np.random.Generator | None) -> ScoreSet:
        """The null version of this score set: every record's membership shuffled across models.

        Each column of ``keep`` is permuted independently (so every record keeps its numbers of IN
        and OUT models), and the scores stay as they are: membership no longer has anything to do
        with the scores, so a valid evaluation must report TPR ≈ realised FPR and no ε > 0.

        Examples
        --------
        >>> from dpaudit.mia.designs import keep_matrix
        >>> keep = keep_matrix(8, 5, seed=0)
        >>> null = ScoreSet(np.zeros((8, 5)), keep, train_size=2, pool_size=5).permuted(seed=1)
        >>> bool((null.keep.sum(axis=0) == keep.sum(axis=0)).all()), null.meta["null"]
        (True, 'membership permuted within each record')
        """
        rng = np.random.default_rng(seed)
        order = rng.random(self.keep.shape).argsort(axis=0)
        keep = np.take_along_axis(np.asarray(self.keep), order, axis=0)
        meta = {**self.meta, "null": "membership permuted within each record"}
        return ScoreSet(self.score, keep, train_size=self.train_size, pool_size=self.pool_size, meta=meta,
                        record_ids=self.record_ids)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the on-disk format (module docstring) to ``path`` atomically; return the path.

        The archive is written to a temporary file in the same directory and moved into place with
        ``os.replace``, so readers never see a partial file. ``path`` is used as given (no suffix is
        added); ``.npz`` is the convention.

        Raises
        ------
        DataError
            ``path`` is not a path, or cannot be written (a missing or read-only folder, a directory).
        """
        if not isinstance(path, (str, os.PathLike)):
            raise DataError(f"ScoreSet.save takes the path of the file to write (.npz), got {type(path).__name__}")
        path = Path(path)
        header = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "train_size": self.train_size,
            "pool_size": self.pool_size,
            "meta": self.meta,
        }
        arrays: dict[str, Any] = {"score": self.score, "keep": self.keep, "meta_json": np.array(json.dumps(header))}
        if self.record_ids is not None:
            arrays["record_ids"] = self.record_ids
        with atomic_open(path, "wb") as handle:
            np.savez(handle, **arrays)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ScoreSet:
        """Read a score set written in the on-disk format (module docstring).

        Raises
        ------
        DataError
            If the file is missing, is not an ``.npz`` archive, lacks an array, has another format tag
            or version, or holds data a :class:`ScoreSet` rejects (shape mismatch, …); the message
            starts with the path.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise DataError(f"ScoreSet.load takes the path of a score file (.npz), got {type(path).__name__}")
        path = Path(path)
        kind = file_kind(path)
        if kind == "a directory":
            raise DataError(f"{path}: is a directory; pass the path of a score file (.npz)")
        if kind is not None:  # reading a FIFO would block; /dev/null is a device
            raise DataError(f"{path}: is {kind}, not a score file; save the scores to a regular .npz file")
        if not path.is_file():
            raise DataError(
                f"{path}: no such score file; write one with ScoreSet.save or the format in dpaudit.mia.scores"
            )
        with open(path, "rb") as handle:  # our handle: numpy leaks its own on a truncated archive
            if not handle.read(6).startswith((b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY")):
                raise DataError(f"{path}: not an .npz archive (a zip of .npy arrays); write one with ScoreSet.save or "
                                "np.savez")
            handle.seek(0)
            try:
                archive = np.load(handle, allow_pickle=False)
                if not isinstance(archive, np.lib.npyio.NpzFile):
                    raise DataError(f"{path}: holds a single array, not an .npz archive with {', '.join(_ARRAYS)}")
                with archive:
                    missing = [name for name in _ARRAYS if name not in archive]
                    if missing:
                        raise DataError(
                            f"{path}: missing array(s) {', '.join(missing)}; a score file holds {', '.join(_ARRAYS)}"
                        )
                    score, keep, meta_json = (archive[name] for name in _ARRAYS)
                    ids = archive["record_ids"] if "record_ids" in archive else None
            except DataError:
                raise
            except MemoryError:
                raise DataError(f"{path}: declares an array too large to read; the file is corrupt or not a score "
                                "file, write it again with ScoreSet.save or np.savez") from None
            except _CORRUPT as exc:  # a truncated, bit-flipped or foreign archive, however its member is packed
                reason = " ".join(str(exc).split()) or type(exc).__name__
                raise DataError(f"{path}: not a readable .npz score file ({reason}); the file is corrupt or truncated, "
                                "write it again with ScoreSet.save or np.savez") from None
        header = _parse_header(path, meta_json)
        try:
            return cls(score, keep, train_size=header["train_size"], pool_size=header["pool_size"], meta=header["meta"],
                       record_ids=ids)
        except DataError as exc:
            raise DataError(f"{path}: {exc}") from None


def _parse_header(path: Path, meta_json: np.ndarray) -> dict[str, Any]:
    if meta_json.dtype.kind != "U" or meta_json.size != 1:
        raise DataError(
            f"{path}: meta_json must be one JSON string, got dtype {meta_json.dtype}, shape {meta_json.shape}"
        )
    try:
        header = json.loads(str(meta_json.reshape(())[()]))
    except ValueError as exc:
        raise DataError(f"{path}: meta_json is not valid JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        found = header.get("format") if isinstance(header, dict) else header
        raise DataError(f"{path}: meta_json format must be {FORMAT_NAME!r}, got {found!r}")
    if header.get("version") != FORMAT_VERSION:
        raise DataError(
            f"{path}: score file version {header.get('version')!r} is not supported (this dpaudit reads "
            f"version {FORMAT_VERSION})"
        )
    missing = [key for key in ("train_size", "pool_size") if key not in header]
    if missing:
        raise DataError(f"{path}: meta_json lacks {', '.join(missing)}")
    header.setdefault("meta", {})
    return header
