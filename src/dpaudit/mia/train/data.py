"""Where the records of a membership-inference experiment come from (spec ``mia.md`` §1, §5).

A :class:`TrainingData` is a pandas frame of candidate records with a binary label and the role of
every feature (categorical: one-hot encoded; numeric: standardised). Two sources:

* :func:`registered` — a dataset of :mod:`dpaudit.datasets` that declares a prediction task
  (:func:`dpaudit.datasets.task`: label, positive class, feature columns; Adult without the survey
  weight ``fnlwgt``, credit without ``ID``);
* :func:`from_file` — the user's CSV or Parquet file, a label column and the positive label, with the
  feature roles from a declared :class:`~dpaudit.schema.Schema` (``Categorical`` → categorical,
  ``Binned`` → numeric; only the declared columns are features, and values outside a declared
  categorical domain are refused) or, without one, inferred from the column types (numbers →
  numeric, anything else → categorical; the run records that it was inferred).

The label must have exactly two values. Without ``positive`` the larger one in string order is the
positive class (``1`` of 0/1, ``>50K`` of Adult's, ``yes`` of no/yes); the run records which.
A file source is fingerprinted (SHA-256, rows) so a resumed run refuses changed data.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._errors import DataError, DPAuditError
from dpaudit._io import plain

__all__ = ["TrainingData", "registered", "from_file", "sha256"]

@dataclass(frozen=True, eq=False)
class TrainingData:
    """Candidate records with a binary label and feature roles.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per candidate record (the pool is drawn from these rows).
    label : str
    positive : Any
        The label value of the positive class.
    categorical, numeric : list of str
        Feature columns by role (disjoint; their union is every feature).
    source : dict
        What the run records: ``{"dataset": name}`` or ``{"file", "sha256", "rows", "schema"}``.
    """

    frame: Any
    label: str
    positive: Any
    categorical: list[str]
    numeric: list[str]
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The registered dataset's name, or the file name."""
        return str(self.source.get("dataset") or Path(self.source["file"]).name)

    def labels(self, rows: np.ndarray | None = None) -> np.ndarray:
        """0/1 labels (1 = positive) of all rows, or of ``rows``."""
        col = self.frame[self.label] if rows is None else self.frame[self.label].iloc[rows]
        return _is_positive(col, self.positive).astype(np.int64)

    def features(self, rows: np.ndarray | None = None) -> Any:
        """The feature columns (categorical then numeric) of all rows or of ``rows``, index reset."""
        frame = self.frame if rows is None else self.frame.iloc[rows]
        return frame[self.categorical + self.numeric].reset_index(drop=True)

    def config(self) -> dict[str, Any]:
        """The run-configuration entries describing this source (compared on resume)."""
        return {"dataset": self.source.get("dataset"),
                **({"data": {k: v for k, v in self.source.items() if k != "dataset"}} if "file" in self.source else {}),
                "features": {"categorical": list(self.categorical), "numeric": list(self.numeric)},
                "label": {"column": self.label, "positive": plain(self.positive)}}


def registered(name: str) -> TrainingData:
    """A registered dataset's rows and its declared prediction task (:func:`dpaudit.datasets.task`).

    Raises
    ------
    DatasetError
        For an unknown name, or a dataset that declares no prediction task (the message lists those
        that do).
    """
    from dpaudit import datasets

    task = datasets.task(name)
    frame, _ = datasets.load(name)
    return TrainingData(frame, task.label, task.positive, list(task.categorical), list(task.numeric),
                        {"dataset": name})


def from_file(path: str | os.PathLike[str], *, label: str, positive: Any = None, schema: Any = None) -> TrainingData:
    """The records of a CSV or Parquet file, for training target and shadow models.

    Parameters
    ----------
    path : str or Path
        ``.csv`` (optionally ``.gz``) or ``.parquet`` / ``.pq``.
    label : str
        The label column; it must hold exactly two distinct values and no missing entries.
    positive : optional
        The positive label; matched against the column's values or their string form (so ``"1"``
        from the command line matches an integer 1). Default: the larger value in string order.
    schema : Schema, path of a schema JSON file, or None
        Declares the features (module docstring); None infers them from the column types.

    Raises
    ------
    DataError
        Missing or unreadable file, unknown label column, a label without exactly two values, a
        positive label that does not occur, features missing from the file, values outside a declared
        domain, missing numeric values.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "toy.csv"
    >>> _ = p.write_text("sex,age,y\\nF,30,no\\nM,41,yes\\nF,25,yes\\n")
    >>> t = from_file(p, label="y")
    >>> t.categorical, t.numeric, t.positive, t.labels().tolist()
    (['sex'], ['age'], 'yes', [0, 1, 1])
    """
    from dpaudit.schema import Binned, Categorical, Schema

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such data file; pass a CSV or Parquet file with --data")
    if isinstance(schema, (str, Path)):
        schema = Schema.from_json(Path(schema))
    if schema is not None and not isinstance(schema, Schema):
        raise DPAuditError(f"schema must be a Schema or the path of a schema JSON file, got {type(schema).__name__}")
    frame = _read(path, schema)
    if not isinstance(label, str) or label not in frame.columns:
        raise DataError(f"{path}: no label column {label!r}; its columns are {', '.join(map(str, frame.columns))}")
    if frame[label].isna().any():
        raise DataError(f"{path}: the label column {label!r} has {int(frame[label].isna().sum())} missing values; "
                        "drop those rows")
    values = sorted({str(v) for v in frame[label].unique()})
    if len(values) != 2:
        shown = ", ".join(values[:5]) + (", …" if len(values) > 5 else "")
        raise DataError(f"{path}: the label column {label!r} must hold exactly two values (a binary task), "
                        f"it holds {len(values)}: {shown}")
    if positive is None:
        positive = next(v for v in frame[label].unique() if str(v) == values[-1])
    elif not _is_positive(frame[label], positive).any():
        raise DataError(f"{path}: the positive label {positive!r} does not occur in {label!r} (values: "
                        f"{', '.join(values)})")
    else:
        positive = next(v for v in frame[label].unique() if _is_positive(np.array([v], dtype=object), positive)[0])

    if schema is None:
        features = [c for c in frame.columns if c != label]
        numeric = [c for c in features if _is_number(frame[c])]
        categorical = [c for c in features if c not in numeric]
        how = "inferred from the column types"
    else:
        features = [c for c in schema.columns if c != label]
        absent = [c for c in features if c not in frame.columns]
        if absent:
            raise DataError(f"{path}: the schema declares {', '.join(map(repr, absent))}, which the file lacks")
        categorical = [c for c in features if isinstance(schema[c], Categorical)]
        numeric = [c for c in features if isinstance(schema[c], Binned)]
        for c in categorical:
            dom = schema[c]
            codes = frame[c].map(lambda v, dom=dom: dom.code_of(v))
            bad = codes.isna()
            if bad.any():
                first = frame[c][bad].iloc[0]
                raise DataError(f"{path}: column {c!r} has {int(bad.sum())} value(s) outside its declared domain "
                                f"(first: {first!r}); add them to the schema or fix the data")
            frame[c] = codes.map(lambda i, dom=dom: dom.values[int(i)])  # missing entries → the declared label
        how = "declared"
    if not features:
        raise DataError(f"{path}: no feature columns besides the label {label!r}")
    for c in numeric:
        if not _is_number(frame[c]):
            raise DataError(f"{path}: column {c!r} is declared numeric (Binned) but holds non-numbers; declare it "
                            "Categorical or fix the data")
        if frame[c].isna().any():
            raise DataError(f"{path}: numeric column {c!r} has {int(frame[c].isna().sum())} missing values; impute "
                            "them, or declare the column Categorical with a missing label")
    for c in categorical:  # one type per column, so the encoder can sort its categories
        frame[c] = frame[c].astype(object).where(frame[c].notna(), None).map(lambda v: v if v is None else str(v))
    source = {"file": str(path.resolve()), "sha256": sha256(path), "rows": int(len(frame)), "schema": how}
    return TrainingData(frame, label, positive, categorical, numeric, source)


def _read(path: Path, schema: Any) -> Any:
    import pandas as pd

    suffixes = [s.lower() for s in path.suffixes]
    try:
        if suffixes and suffixes[-1] in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        elif ".csv" in suffixes:
            # A declared categorical column is read as text, so "F" stays "F" and "007" stays "007".
            from dpaudit.schema import Categorical

            text = {} if schema is None else {c: str for c in schema.columns
                                              if isinstance(schema[c], Categorical)
                                              and all(isinstance(v, str) for v in schema[c].values)}
            frame = pd.read_csv(path, dtype=text or None, keep_default_na=True)
        else:
            raise DataError(f"{path}: unknown file type; --data takes .csv, .csv.gz or .parquet")
    except DataError:
        raise
    except Exception as exc:  # pandas/pyarrow raise many types for a malformed file
        raise DataError(f"{path}: cannot be read as {'Parquet' if 'parquet' in str(suffixes) else 'CSV'} "
                        f"({type(exc).__name__}: {exc})") from None
    if len(frame) == 0:
        raise DataError(f"{path}: holds no rows")
    duplicated = frame.columns[frame.columns.duplicated()].tolist()
    if duplicated:
        raise DataError(f"{path}: duplicate column names {duplicated}; rename them")
    return frame


def _is_number(col: Any) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col))


def _is_positive(col: Any, positive: Any) -> np.ndarray:
    """Rows whose label equals ``positive`` or, failing that, whose string form does."""
    arr = np.asarray(col, dtype=object)
    exact = np.array([v == positive for v in arr], dtype=bool)
    if exact.any():
        return exact
    return np.array([str(v) == str(positive) for v in arr], dtype=bool)


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
