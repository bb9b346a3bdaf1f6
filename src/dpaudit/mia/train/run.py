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
    then ``os.replace``, after an fsync) once the model is finished. Missing files are unfinished models.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._errors import DataError
from dpaudit._io import atomic_open, atomic_write_text
from dpaudit.mia.scores import ScoreSet

__all__ = ["RUN_FORMAT", "RUN_VERSION", "versions", "prepare", "finished_models", "save_score", "read_score",
           "load_run"]

RUN_FORMAT = "dpaudit.mia.run"
RUN_VERSION = 1


def versions() -> dict[str, str]:
    import sklearn

    from dpaudit import __version__ as dpaudit_version

    return {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__,
            "dpaudit": dpaudit_version}


def _score_path(out: Path, m: int) -> Path:
    return out / "scores" / f"model_{m:05d}.npy"


def _atomic_save(path: Path, array: np.ndarray) -> None:
    with atomic_open(path, "wb", fsync=True) as handle:
        np.save(handle, array, allow_pickle=False)


def save_score(out: Path, m: int, row: np.ndarray) -> None:
    """Write model m's scores of every pool record (atomically, after an fsync)."""
    _atomic_save(_score_path(out, m), row)


def prepare(out: Path, header: dict[str, Any], keep: np.ndarray) -> None:
    """Create the run directory, or check that an existing one holds this very run (config, versions, keep).

    Stale temporary files of a killed run are removed; every finished score file is read once, so a
    corrupt one is refused before anything builds on it.
    """
    config = header["config"]
    if (out / "run.json").exists() or (out / "keep.npy").exists():
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
    else:
        out.mkdir(parents=True, exist_ok=True)
        _atomic_save(out / "keep.npy", keep)
        atomic_write_text(out / "run.json", json.dumps(header, indent=1) + "\n")
    (out / "scores").mkdir(exist_ok=True)
    for stale in (out / "scores").glob("*.tmp"):  # left by a killed run (hidden temporaries and older names)
        stale.unlink()
    for m in finished_models(out, config["n_models"]):
        read_score(out, m, config["pool_size"])


def _read_header(out: Path) -> dict[str, Any]:
    path = out / "run.json"
    if not path.is_file():
        raise DataError(f"{out} is not a dpaudit run directory: {path.name} is missing")
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
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"{path} is corrupt ({exc})") from None
    want = (cfg["n_models"], cfg["pool_size"])
    if keep.dtype != np.bool_ or keep.shape != want:
        raise DataError(f"{path}: expected a bool array of shape {want}, got {keep.dtype} {keep.shape}")
    return keep


def read_score(out: Path, m: int, pool_size: int) -> np.ndarray:
    path = _score_path(out, m)
    try:
        row = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"{path} is corrupt ({exc}); delete it and resume to retrain that model") from None
    if row.dtype != np.float64 or row.shape != (pool_size,) or not np.isfinite(row).all():
        raise DataError(f"{path}: expected {pool_size} finite float64 scores, got {row.dtype} {row.shape}; "
                        "delete it and resume to retrain that model")
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
    out = Path(run_dir)
    if not out.is_dir():
        raise DataError(f"{out} is not a directory (expected a run directory written by dpaudit mia train)")
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
        meta["data"] = cfg["data"].get("file")
    meta["design"] = cfg.get("design", {"name": "efficient"}).get("name", "efficient")
    trainer = cfg.get("trainer")  # absent in runs written before trainers were recorded
    meta["trainer"] = trainer.get("name", "per-model") if isinstance(trainer, dict) else "per-model"
    meta.update(source=RUN_FORMAT, run_dir=str(out), versions=header.get("versions", {}))
    return ScoreSet(score, keep, train_size=cfg["train_size"], pool_size=pool_size, meta=meta)
