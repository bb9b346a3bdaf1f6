"""Registry of real datasets, each with a declared schema.

>>> from dpaudit import datasets
>>> "adult" in datasets.names()
True

Files are read from ``$DPAUDIT_DATA/<folder>/`` (the layout of the shared datasets folder), else
from the user cache, else downloaded from the public address and verified by sha256.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpaudit._errors import DatasetError
from dpaudit.datasets._files import DATA_ENV, DataFile, cache_dir, fetch_bytes
from dpaudit.schema import Schema

__all__ = ["DatasetInfo", "load", "info", "names", "DATA_ENV", "cache_dir", "fetch_bytes", "DataFile"]


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    title: str
    rows: int
    source: str
    license: str
    citation: str
    files: tuple[DataFile, ...]
    loader: Callable[[], tuple[Any, Schema]]


def _adult_info() -> DatasetInfo:
    from dpaudit.datasets import _adult

    return DatasetInfo(
        name="adult",
        title="UCI Adult (Census Income), train + test",
        rows=48_842,
        source="UCI Machine Learning Repository, dataset 2 (https://archive.ics.uci.edu/dataset/2/adult)",
        license="CC BY 4.0",
        citation="Becker, B. & Kohavi, R. (1996). Adult. UCI ML Repository. doi:10.24432/C5XW20",
        files=_adult.FILES,
        loader=_adult.load,
    )


_REGISTRY: dict[str, Callable[[], DatasetInfo]] = {"adult": _adult_info}


def names() -> list[str]:
    """Names of the registered datasets."""
    return sorted(_REGISTRY)


def info(name: str) -> DatasetInfo:
    """Source, license, rows, citation and checksums of a registered dataset."""
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise DatasetError(f"unknown dataset {name!r}; registered: {', '.join(names())}") from None


def load(name: str) -> tuple[Any, Schema]:
    """Load a registered dataset: ``(frame, schema)`` with the declared schema.

    Examples
    --------
    ``frame, schema = load("adult")`` gives the 48,842 Adult rows and their declared schema.
    """
    return info(name).loader()
