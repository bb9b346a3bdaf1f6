"""The run directory of ``dpaudit mia train`` (format ``dpaudit.mia.run``, version 1).

``run.json``
    ``{"format": "dpaudit.mia.run", "version": 1, "config": {dataset (null for a file), data (a file's
    path, sha256, rows, how its schema was obtained), model, n_models, pool_size, train_size, seed,
    pool_indices (row positions in the loaded data, sorted), features, label, model_params, design
    ({"name": "efficient"} or {"name": "poisson", "inclusion": N/N+, "mean_train_size"}), trainer
    ({"name": "per-model"} or {"name": "batched", batch_size, gtol, max_iter}), score}, "versions":
    {python, numpy, scikit-learn, dpaudit}}``.
``keep.npy``
    bool, shape (M, N+).
``scores/model_00042.npy``
    float64, shape (N+,): model 42's score of every pool record, written atomically (temporary file,
    then ``os.replace``, after an fsync) once the model is finished, and only when every score is
    finite. Missing files are unfinished models.

A new run's directory is written when its first model is finished (:func:`create_run`), so a run
that fails or is killed before that leaves nothing behind; if writing it fails, what was written is
removed again (:func:`discard_run`). :func:`check_run_dir` checks the path first, by creating and
removing a hidden folder there, so an unwritable place (a read-only mount, ``/proc``) is refused
before any model is trained.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._errors import DataError, DPAuditError
from dpaudit._io import atomic_open, atomic_write_text, check_writable, temporary_sibling
from dpaudit.counting.files import file_kind
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.train.models import ModelFailure

__all__ = ["RUN_FORMAT", "RUN_VERSION", "versions", "check_run_size", "check_run_dir", "resume_run", "check_layout", "create_run", "discard_run", "RunWriter",
           "finished_models", "check_scores", "save_score", "read_score", "load_run"]

RUN_FORMAT = "dpaudit.mia.run"
RUN_VERSION = 1


def versions() -> dict[str, str]:
    import sklearn

    from dpaudit._version import __version__ as dpaudit_version

    return {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__,
            "dpaudit": dpaudit_version}


def _score_path(out: Path, m: int) -> Path:
    return out / "scores" / f"model_{m:05d}.npy"


def _atomic_save(path: Path, array: np.ndarray) -> None:
    with atomic_open(path, "wb", fsync=True) as handle:
        np.save(handle, array, allow_pickle=False)


def check_scores(row: np.ndarray, pool_size: int) -> str | None:
    """What is wrong with one model's scores (not float64 of shape (N+,), or not all finite), or None."""
    if row.dtype != np.float64 or row.shape != (pool_size,):
        return f"expected {pool_size} finite float64 scores, got {row.dtype} {row.shape}"
    bad = int(np.count_nonzero(~np.isfinite(row)))
    return f"expected {pool_size} finite float64 scores, got {bad} NaN or infinite" if bad else None


def save_score(out: Path, m: int, row: np.ndarray, pool_size: int) -> None:
    """Write model m's scores of every pool record (atomically, after an fsync); never a non-finite one."""
    problem = check_scores(row, pool_size)
    if problem:
        raise DataError(f"model {m}'s scores were not written: {problem}")
    _atomic_save(_score_path(out, m), row)


def check_run_size(n_models: int, pool_size: int) -> None:
    """Refuse a run whose M × N+ score and keep matrices exceed the cell limit (:func:`dpaudit.counting.max_cells`)."""
    from dpaudit.counting import max_cells

    limit = max_cells()
    if n_models * pool_size > limit:
        raise DPAuditError(f"{n_models:,} models × {pool_size:,} pool records = {n_models * pool_size:,} scores, more "
                           f"than the limit of {limit:,} cells (the score and keep matrices are held in memory, 8 "
                           "bytes per score and more while they are drawn); use fewer models or a smaller pool, or "
                           "raise DPAUDIT_MAX_CELLS")


def check_run_dir(out_dir: object, *, resume: bool) -> Path:
    """``out_dir`` as a Path, if a run can be written there: a new run needs a missing or empty directory,
    ``resume`` one that holds a run. Either way the place must be writable: a hidden folder is created
    there (or in the nearest existing ancestor) and removed at once.

    Raises
    ------
    DPAuditError
        ``out_dir`` is not a path.
    DataError
        The path is a file, is not empty (without ``resume``), holds no run (with ``resume``), or
        cannot be written.
    """
    if not isinstance(out_dir, (str, os.PathLike)):
        raise DPAuditError(f"out_dir must be the path of a run directory, got {type(out_dir).__name__}")
    out = Path(out_dir)
    try:
        if out.exists() and not out.is_dir():
            raise DataError(f"{out} exists and is not a directory")
        started = (out / "run.json").exists() or (out / "keep.npy").exists()
        if resume and not started:
            state = "does not exist" if not out.exists() else "holds no run (no run.json)"
            raise DataError(f"nothing to resume: {out} {state}; drop --resume (resume=False) to start a new run")
        if resume:
            check_layout(out)
        if not resume and out.is_dir() and any(out.iterdir()):
            raise DataError(f"{out} is not empty; pass resume=True (--resume) to continue that run, or choose a new "
                            "directory")
        if not out.exists():
            check_writable(out, parents=True)  # the run directory (and its missing parents) can be created
        folder = next(p for p in (out, *out.absolute().parents) if p.exists())
        os.rmdir(tempfile.mkdtemp(prefix=".dpaudit-probe-", dir=folder))
    except OSError as exc:
        raise DataError(f"cannot write the run directory {str(out)!r}: {exc.strerror or exc}") from None
    return out


def check_layout(out: Path) -> None:
    """Refuse (DataError) a run directory whose entries are of the wrong kind: ``run.json`` or
    ``keep.npy`` that is not a regular file, ``scores`` that is not a folder (a file, a dangling link),
    a ``scores/model_NNNNN.npy`` that is not a regular file. Entries that are absent pass (they are
    checked where they are read)."""
    entries = [(out / "run.json", False), (out / "keep.npy", False), (out / "scores", True)]
    if (out / "scores").is_dir():
        entries += [(path, False) for path in sorted((out / "scores").glob("model_*.npy"))]
    for path, folder in entries:
        if not path.exists() and not path.is_symlink():
            continue
        if path.is_dir() if folder else path.is_file():
            continue
        kind = "a dangling link" if not path.exists() else "a file" if folder else file_kind(path) or "not a file"
        if folder:
            raise DataError(f"{path} is {kind}, not the folder of the models' scores; move or delete it, then "
                            "resume (the models are trained again)")
        fix = ("delete it and resume to retrain that model" if path.parent.name == "scores" else
               "the run directory is corrupt: delete it and train again")
        raise DataError(f"{path} is {kind}, not a regular file; {fix}")


def create_run(out: Path, header: dict[str, Any], keep: np.ndarray) -> list[Path]:
    """Write a new run's ``keep.npy``, ``run.json`` and ``scores/``, creating ``out`` and its missing
    parents; return the folders created (deepest first), for :func:`discard_run`. On failure, what was
    written is removed again."""
    created = []
    folder = out
    while not folder.exists() and folder != folder.parent:
        created.append(folder)
        folder = folder.parent
    try:
        out.mkdir(parents=True, exist_ok=True)
        _atomic_save(out / "keep.npy", keep)
        atomic_write_text(out / "run.json", json.dumps(header, indent=1) + "\n")
        (out / "scores").mkdir(exist_ok=True)
    except BaseException as exc:
        discard_run(out, created)
        if isinstance(exc, OSError):
            raise DataError(f"cannot write the run directory {str(out)!r}: {exc.strerror or exc}") from None
        raise
    return created


def discard_run(out: Path, created: list[Path]) -> None:
    """Remove a run that :func:`create_run` wrote and no model finished: the directory itself if it was
    created (first renamed to a hidden sibling, so it vanishes at once), else its run.json (first: without
    it the folder is no run), keep.npy and scores/; then the parents it created. Best effort: a failure
    here must not hide the error that made the run fail."""
    try:
        if out in created:
            trash = temporary_sibling(out)
            os.rename(out, trash)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            for name in ("run.json", "keep.npy"):
                (out / name).unlink(missing_ok=True)
            shutil.rmtree(out / "scores", ignore_errors=True)
        for parent in created[1:]:
            parent.rmdir()
    except OSError:
        pass


class RunWriter:
    """Writes a run's finished models as they arrive (:func:`save_score`), in a ``with`` block.

    A new run's directory is created with its first model (:func:`create_run`) and removed again
    (:func:`discard_run`) if the block fails before any model is written. A :class:`ModelFailure`
    leaving the block gets the state of the run added to its message: nothing written, or the finished
    models kept and how to train the rest. ``finished`` (the models already on disk) is updated.
    """

    def __init__(self, out: Path, header: dict[str, Any], keep: np.ndarray, finished: set[int], *, new: bool) -> None:
        self.out, self.header, self.keep, self.finished, self.new = out, header, keep, finished, new
        self.created: list[Path] | None = None if new else []  # None: nothing of the run on disk
        self.saved = 0

    def save(self, m: int, row: np.ndarray) -> bool:
        """Write model ``m``'s scores unless it is finished already; True if written."""
        if m in self.finished:
            return False
        if self.created is None:
            self.created = create_run(self.out, self.header, self.keep)
        save_score(self.out, m, row, self.header["config"]["pool_size"])
        self.finished.add(m)
        self.saved += 1
        return True

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, trace: Any) -> None:
        if exc is None:
            return
        if self.new and self.created is not None and self.saved == 0:
            discard_run(self.out, self.created)
            self.created = None
        if isinstance(exc, ModelFailure):
            state = ("nothing was written: fix the model or choose another (--model)" if self.created is None else
                     f"{self.out} keeps its {len(self.finished)} finished model(s): fix the model, then train the "
                     "rest with --resume (train_run(..., resume=True))")
            raise ModelFailure(f"{exc}; {state}") from None


def resume_run(out: Path, header: dict[str, Any], keep: np.ndarray) -> list[int]:
    """Check that ``out`` holds this very run (config, versions, keep); return its finished models.

    Stale temporary files of a killed run are removed; every finished score file is read once, so a
    corrupt one is refused before anything builds on it.
    """
    config = header["config"]
    old = _read_header(out)
    old["config"].setdefault("trainer", {"name": "per-model"})  # runs written before trainers were recorded
    old["config"].setdefault("design", {"name": "efficient"})  # ... and before designs were
    if old["config"] != config:
        diff = sorted(k for k in set(old["config"]) | set(config) if old["config"].get(k) != config.get(k))
        raise DataError(f"{out} holds a run with a different configuration (differs in: {', '.join(diff)}); "
                        "resume with the same options or choose a new directory")
    if old.get("versions") != header["versions"]:
        raise DataError(f"{out} was trained with {old.get('versions')}, this is {header['versions']}: resuming "
                        "would not be bit-identical; finish it with the original versions or start a new directory")
    if not np.array_equal(_read_keep(out, config), keep):
        raise DataError(f"{out}/keep.npy does not match the configuration's keep matrix; the run directory is corrupt")
    check_layout(out)
    (out / "scores").mkdir(exist_ok=True)
    for stale in (out / "scores").glob("*.tmp"):  # left by a killed run (hidden temporaries and older names)
        if stale.is_file() or stale.is_symlink():  # a folder of that name is none of ours
            stale.unlink()
    done = finished_models(out, config["n_models"])
    for m in done:
        read_score(out, m, config["pool_size"])
    return done


def _read_header(out: Path) -> dict[str, Any]:
    path = out / "run.json"
    if not path.is_file():
        raise DataError(f"{out} is a directory but not a run directory of `dpaudit mia train`: {path.name} is missing")
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{path} is corrupt (not valid JSON: {exc}); delete the run directory and train again") from None
    if not isinstance(header, dict) or header.get("format") != RUN_FORMAT or not isinstance(header.get("config"), dict):
        raise DataError(f"{path} is not a {RUN_FORMAT!r} file; delete it or choose another directory")
    if header.get("version") != RUN_VERSION:
        raise DataError(f"{path}: run format version {header.get('version')!r} is not supported (this dpaudit reads "
                        f"version {RUN_VERSION})")
    cfg = header["config"]
    for key, kind in (("n_models", int), ("pool_size", int), ("train_size", int), ("pool_indices", list)):
        if not isinstance(cfg.get(key), kind) or isinstance(cfg.get(key), bool):
            raise DataError(f"{path}: config.{key} is missing or not a {kind.__name__}")
    if len(cfg["pool_indices"]) != cfg["pool_size"]:
        raise DataError(f"{path}: config.pool_indices holds {len(cfg['pool_indices'])} entries, "
                        f"pool_size is {cfg['pool_size']}")
    return header


def _read_keep(out: Path, cfg: dict[str, Any]) -> np.ndarray:
    path = out / "keep.npy"
    if not path.is_file():
        raise DataError(f"{out}: keep.npy is missing (the membership of every model); the run directory is "
                        "incomplete: delete it and train again")
    try:
        keep = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, MemoryError) as exc:
        raise DataError(f"{path} is corrupt ({exc})") from None
    want = (cfg["n_models"], cfg["pool_size"])
    if keep.dtype != np.bool_ or keep.shape != want:
        raise DataError(f"{path}: expected a bool array of shape {want}, got {keep.dtype} {keep.shape}")
    return keep


def read_score(out: Path, m: int, pool_size: int) -> np.ndarray:
    path = _score_path(out, m)
    try:
        row = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, MemoryError) as exc:
        raise DataError(f"{path} is corrupt ({exc}); delete it and resume to retrain that model") from None
    problem = check_scores(row, pool_size)
    if problem:
        raise DataError(f"{path}: {problem}; delete it and resume to retrain that model")
    return row


def finished_models(out: Path, n_models: int) -> list[int]:
    return [m for m in range(n_models) if _score_path(out, m).is_file()]


def load_run(run_dir: str | os.PathLike[str]) -> ScoreSet:
    """Read a finished run directory as a :class:`ScoreSet` (scores M × N+, keep, N, N+).

    Raises
    ------
    DataError
        The directory is not a run, is corrupt, or some models are unfinished (say how many; finish
        them with ``train_run(..., resume=True)`` / ``dpaudit mia train --resume``).
    """
    if not isinstance(run_dir, (str, os.PathLike)):
        raise DataError(f"load_run takes the path of a run directory, got {type(run_dir).__name__}")
    out = Path(run_dir)
    if not out.is_dir():
        raise DataError(f"{out} is not a directory (expected a run directory written by dpaudit mia train)")
    check_layout(out)
    header = _read_header(out)
    cfg = header["config"]
    keep = _read_keep(out, cfg)
    n_models, pool_size = cfg["n_models"], cfg["pool_size"]
    done = set(finished_models(out, n_models))
    missing = [m for m in range(n_models) if m not in done]
    if missing:
        raise DataError(f"{out}: {len(missing)} of {n_models} models are unfinished (first: model_{missing[0]:05d}); "
                        "finish them with `dpaudit mia train --resume` (train_run(..., resume=True))")
    score = np.stack([read_score(out, m, pool_size) for m in range(n_models)])
    meta = {k: cfg[k] for k in ("dataset", "model", "seed") if cfg.get(k) is not None}
    if "data" in cfg:
        meta["data"] = cfg["data"].get("file") or cfg["data"].get("frame")
    meta["design"] = cfg.get("design", {"name": "efficient"}).get("name", "efficient")
    trainer = cfg.get("trainer")  # absent in runs written before trainers were recorded
    meta["trainer"] = trainer.get("name", "per-model") if isinstance(trainer, dict) else "per-model"
    for key in ("score_cap", "n_rows"):
        if isinstance(cfg.get(key), (int, float)):
            meta[key] = cfg[key]
    meta.update(source=RUN_FORMAT, run_dir=str(out), versions=header.get("versions", {}))
    ids = cfg.get("pool_indices")  # each pool record's row in the data
    ids = np.asarray(ids) if isinstance(ids, list) and len(ids) == pool_size else None
    return ScoreSet(score, keep, train_size=cfg["train_size"], pool_size=pool_size, meta=meta, record_ids=ids)
