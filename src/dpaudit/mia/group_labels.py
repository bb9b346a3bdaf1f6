"""The group of every record of a score set in a protected column (``evaluate(..., by=...)``, ``--by``).

A run of ``dpaudit mia train`` knows each pool record's row in its data (``ScoreSet.record_ids``, the
run's ``pool_indices``) and the data (a registered dataset's name, or the file's path), so ``by`` may
name a column: its value on those rows is the record's group. A column the dataset's schema declares
is grouped by its domain: a categorical column by value, a binned one by its declared bins
(``[a, b)``). An undeclared column (a user file) is grouped by value when it is text or has at most
:data:`~dpaudit.mia.groups.MAX_GROUPS` distinct numbers, and refused as continuous otherwise. ``by`` may
also be the groups themselves: one label per record (a sequence, array or pandas Series, in the score
set's record order). Every refusal is a :class:`~dpaudit.DataError` saying what to do
(:func:`dpaudit.mia.groups.groups_of` checks the groups' sizes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._errors import DataError
from dpaudit.mia.groups import MAX_GROUPS, Groups, groups_of
from dpaudit.mia.scores import ScoreSet

__all__ = ["record_groups"]


def record_groups(scores: ScoreSet, by: object) -> Groups:
    """The :class:`~dpaudit.mia.groups.Groups` of ``scores``' records by ``by`` (module docstring)."""
    if isinstance(by, str):
        return _column_groups(scores, by)
    if by is None or isinstance(by, (bytes, dict, set)) or not hasattr(by, "__len__"):
        raise DataError(f"by must name a column of the run's data or give one group label per record, got "
                        f"{type(by).__name__}")
    labels = np.asarray(by, dtype=object)
    if labels.ndim != 1 or len(labels) != scores.n_records:
        raise DataError(f"by gives {labels.size:,} group labels; the score set has {scores.n_records:,} records "
                        "(one label per record, in its order)")
    name = getattr(by, "name", None)
    return groups_of(str(name) if name is not None else "group", labels, source="the labels given (by=...)")


def _column_groups(scores: ScoreSet, column: str) -> Groups:
    """The groups from ``column`` of the data the run was trained on, on the pool's rows."""
    rows = scores.record_ids
    dataset, data = scores.meta.get("dataset"), scores.meta.get("data")
    if rows is None or not (isinstance(dataset, str) or (isinstance(data, str) and data != "pandas.DataFrame")):
        raise DataError(f"--by {column}: these scores do not say which rows of which data their records are (a run "
                        "directory of `dpaudit mia train` on a dataset or a file does); in Python pass the group of "
                        "every record: evaluate(scores, by=labels)")
    rows = np.asarray(rows, dtype=np.int64)
    if isinstance(dataset, str):
        from dpaudit import datasets

        frame, schema = datasets.load(dataset)
        where = f"dataset {dataset!r}"
    else:
        from dpaudit.mia.train.data import read_frame

        frame, schema, where = read_frame(Path(str(data)), None), None, f"the run's data file {data}"
    if column not in frame.columns:
        shown = ", ".join(map(str, frame.columns))
        raise DataError(f"--by {column}: no column {column!r} in {where}; its columns are {shown}")
    if len(rows) and (rows.min() < 0 or rows.max() >= len(frame)):
        raise DataError(f"{where} has {len(frame):,} rows, fewer than the run's records reach (row {int(rows.max())}): "
                        "the data changed since the run was trained")
    values = frame[column].to_numpy(dtype=object)[rows]
    domain = schema[column] if schema is not None and column in schema else None
    labels, how = _labels(column, values, domain, where)
    return groups_of(column, labels, source=f"{where}, column {column!r} ({how})")


def _labels(column: str, values: np.ndarray, domain: Any, where: str) -> tuple[np.ndarray, str]:
    """Each value's group label and how the groups were formed: the declared domain, else by value."""
    from dpaudit.schema import Binned

    if isinstance(domain, Binned):
        numbers = np.array([np.nan if v is None else float(v) for v in values])
        bins = np.searchsorted(np.asarray(domain.edges), numbers, side="right") - 1
        labels = np.array(domain.labels, dtype=object)
        inside = (bins >= 0) & (bins < domain.n_bins)
        if domain.missing is not None:
            bins = np.where(np.isnan(numbers), domain.n_bins, bins)
            inside |= np.isnan(numbers)
        if not inside.all():
            raise DataError(f"column {column!r} of {where}: {int((~inside).sum()):,} values lie outside its declared "
                            f"bins {list(domain.edges)}")
        return labels[bins], f"declared bins {', '.join(domain.labels)}"
    if domain is not None:
        return values, "declared categorical"
    numeric = all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values)
    distinct = len({str(v) for v in values})
    if numeric and distinct > MAX_GROUPS:
        raise DataError(f"column {column!r} of {where} is continuous ({distinct:,} distinct numbers) and no schema "
                        "declares its bins; group the records yourself and pass one label per record "
                        "(evaluate(scores, by=labels))")
    return values, "by value"
