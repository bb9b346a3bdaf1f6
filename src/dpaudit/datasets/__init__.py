"""Registry of real datasets and synthetic generators, each with a declared schema.

>>> from dpaudit import datasets
>>> "adult" in datasets.list()
True
>>> datasets.info("adult").presets["paper"][1]
'sex ⊥ income'

Files are read from ``$DPAUDIT_DATA/<folder>/`` (the layout of the shared datasets folder), else
from the user cache, else downloaded from the public address and verified by sha256 (see
:mod:`dpaudit.datasets._files`). Each dataset module defines ``INFO``, a :class:`DatasetInfo`.
"""

from __future__ import annotations

import builtins
import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpaudit._errors import DatasetError
from dpaudit.datasets._files import DATA_ENV, DataFile, cache_dir, fetch_bytes
from dpaudit.schema import Schema

__all__ = [
    "DatasetInfo", "PredictionTask", "load", "info", "list", "names", "path", "preset", "task",
    "DATA_ENV", "cache_dir", "fetch_bytes", "DataFile",
]


@dataclass(frozen=True)
class PredictionTask:
    """The prediction task a dataset declares, for training target models (``dpaudit mia train``).

    Attributes
    ----------
    label : str
        The column to predict.
    positive : Any
        Its positive class.
    categorical, numeric : tuple of str
        Feature columns, one-hot encoded or standardised; columns in neither are not features
        (e.g. Adult's survey weight ``fnlwgt``, credit's ``ID``).
    """

    label: str
    positive: Any
    categorical: tuple[str, ...]
    numeric: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "positive": self.positive, "categorical": builtins.list(self.categorical),
                "numeric": builtins.list(self.numeric)}


@dataclass(frozen=True)
class DatasetInfo:
    """What dpaudit knows about a registered dataset.

    Attributes
    ----------
    name, title : str
    rows : int
        Rows of the frame ``load`` returns.
    source, license, citation : str
    files : tuple of DataFile
        The files read (folder, name, content sha256, download address).
    schema : Schema
        The declared domains of every column the loader returns.
    loader : callable () -> frame
        Reads and verifies the files; returns a pandas DataFrame.
    presets : mapping of str to tuple of str
        Named lists of criteria (``"paper"``: the unfairness paper's criteria or their closest
        stand-ins on this data; see docs/datasets.md).
    notes : str
        Preprocessing and stand-in choices, in one paragraph.
    task : PredictionTask, optional
        The prediction task for membership-inference experiments, if the dataset declares one.
    """

    name: str
    title: str
    rows: int
    source: str
    license: str
    citation: str
    files: tuple[DataFile, ...]
    schema: Schema
    loader: Callable[[], Any]
    presets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    notes: str = ""
    task: PredictionTask | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "rows": self.rows,
            "source": self.source,
            "license": self.license,
            "citation": self.citation,
            "files": [
                {"folder": f.folder, "name": f.name, "sha256": f.sha256, "url": f.url} for f in self.files
            ],
            "presets": {k: builtins.list(v) for k, v in self.presets.items()},
            "columns": builtins.list(self.schema.columns),
            "notes": self.notes,
            "task": None if self.task is None else self.task.to_dict(),
        }


# name -> module defining INFO (imported on first use, so `import dpaudit` stays light)
_REGISTRY: dict[str, str] = {
    "adult": "dpaudit.datasets._adult",
    "compas": "dpaudit.datasets._compas",
    "compas-two-years": "dpaudit.datasets._compas_two_years",
    "healthcare": "dpaudit.datasets._healthcare",
    "cps1988": "dpaudit.datasets._cps",
    "cpssw8": "dpaudit.datasets._cps_sw8",
    "credit": "dpaudit.datasets._credit",
    "stackoverflow": "dpaudit.datasets._stackoverflow",
    "census": "dpaudit.datasets.synthetic",
}


def names() -> builtins.list[str]:
    """Names of the registered datasets."""
    return sorted(_REGISTRY)


list = names  # the registry's listing, as ``datasets.list()``  # noqa: A001


def info(name: str) -> DatasetInfo:
    """Source, license, rows, citation, checksums, schema and presets of a registered dataset."""
    try:
        module = _REGISTRY[name]
    except (KeyError, TypeError):
        raise DatasetError(f"unknown dataset {name!r}; registered: {', '.join(names())}") from None
    return importlib.import_module(module).INFO


def load(name: str) -> tuple[Any, Schema]:
    """Load a registered dataset: ``(frame, schema)`` with the declared schema.

    Examples
    --------
    ``frame, schema = load("adult")`` gives the 48,842 Adult rows and their declared schema.
    """
    meta = info(name)
    return meta.loader(), meta.schema


def preset(name: str, preset_name: str = "paper") -> tuple[str, ...]:
    """The criteria of a dataset's named preset (e.g. ``preset("compas", "paper")``)."""
    meta = info(name)
    try:
        return tuple(meta.presets[preset_name])
    except KeyError:
        known = ", ".join(meta.presets) or "(none)"
        raise DatasetError(f"dataset {name!r} has no preset {preset_name!r}; presets: {known}") from None


def task(name: str) -> PredictionTask:
    """The prediction task a registered dataset declares (for ``dpaudit mia train``)."""
    meta = info(name)
    if meta.task is None:
        with_task = [n for n in names() if info(n).task is not None]
        raise DatasetError(f"dataset {name!r} declares no prediction task; datasets with one: {', '.join(with_task)} "
                           "(or train on your own file: --data FILE --label COL)")
    return meta.task


def path(name: str) -> Path:
    """The folder a dataset's files are read from now: ``$DPAUDIT_DATA/<folder>`` if set, else the cache."""
    meta = info(name)
    if not meta.files:
        raise DatasetError(f"dataset {name!r} is generated in memory (synthetic): it has no files to locate")
    folder = meta.files[0].folder
    root = os.environ.get(DATA_ENV)
    return (Path(root) if root else cache_dir()) / folder
