"""Where the records of a membership-inference experiment come from (spec ``mia.md`` §1, §5).

A :class:`TrainingData` is a pandas frame of candidate records with a binary label and the role of
every feature (categorical: one-hot encoded; numeric: standardised). Two sources:

* :func:`registered` — a dataset of :mod:`dpaudit.datasets` that declares a prediction task
  (:func:`dpaudit.datasets.task`: label, positive class, feature columns; Adult without the survey
  weight ``fnlwgt``, credit without ``ID``);
* :func:`from_file` — the user's CSV or Parquet file, or :func:`from_frame` — a pandas DataFrame
  (:func:`from_data` takes either), a label column and the positive label, with the feature roles
  from a declared :class:`~dpaudit.schema.Schema` (``Categorical`` → categorical, ``Binned`` →
  numeric; only the declared columns are features, and values outside a declared categorical domain
  are refused) or, without one, inferred from the column types (numbers → numeric, anything else →
  categorical; the run records that it was inferred).

A file is checked as ``dpaudit fairness`` checks its DATA (:mod:`dpaudit.counting.files`): a directory,
a pipe or a device is named as such; a CSV header that names a column twice, a row whose field count
differs from the header's, and bytes that are not UTF-8 are refused. Every source refuses nested
values (Parquet structs and lists, Python lists or dicts in a column), and numeric features that are
missing, infinite or of magnitude above :data:`MAX_ABS_FEATURE`.

The label must have exactly two values. Without ``positive`` the larger one in string order is the
positive class (``1`` of 0/1, ``>50K`` of Adult's, ``yes`` of no/yes); the run records which.
A source is fingerprinted (SHA-256 of the file, or of a frame's column names, dtypes and values;
rows) so a resumed run refuses changed data.
"""

from __future__ import annotations

import hashlib
import json
import os
import reprlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._errors import DataError, DPAuditError
from dpaudit._io import plain

__all__ = ["TrainingData", "registered", "from_data", "from_file", "from_frame", "read_frame", "sha256", "MAX_ABS_FEATURE"]

#: The largest magnitude of a numeric feature: standardising a column sums the squares of its n
#: deviations (each ≤ 2·1e100), which stays below float64's 1.8e308 for any n < 4e107 rows.
MAX_ABS_FEATURE = 1e100
#: Values a column may not hold: containers (a Parquet struct or list column reads as dicts or arrays).
_NESTED = (list, tuple, dict, set, frozenset, np.ndarray)

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
        What the run records: ``{"dataset": name}``, ``{"file", "sha256", "rows", "schema"}`` or
        ``{"frame": "pandas.DataFrame", "sha256", "rows", "schema"}``.
    """

    frame: Any
    label: str
    positive: Any
    categorical: list[str]
    numeric: list[str]
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The registered dataset's name, the file name, or "DataFrame"."""
        if "file" in self.source:
            return Path(self.source["file"]).name
        return str(self.source.get("dataset") or "DataFrame")

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
                **({"data": dict(self.source)} if "dataset" not in self.source else {}),
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


def from_data(data: Any, *, label: Any, positive: Any = None, schema: Any = None) -> TrainingData:
    """The user's records: a CSV/Parquet path (:func:`from_file`) or a pandas DataFrame (:func:`from_frame`).

    Raises
    ------
    DataError
        ``data`` is neither, or (the functions' own errors) cannot be used.
    """
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return from_frame(data, label=label, positive=positive, schema=schema)
    if isinstance(data, (str, os.PathLike)):
        return from_file(data, label=label, positive=positive, schema=schema)
    raise DataError(f"data must be the path of a CSV or Parquet file or a pandas DataFrame, got {type(data).__name__}; "
                    "convert another frame with .to_pandas()")


def from_file(path: str | os.PathLike[str], *, label: Any, positive: Any = None, schema: Any = None) -> TrainingData:
    """The records of a CSV or Parquet file, for training target and shadow models.

    Parameters
    ----------
    path : str or Path
        ``.csv`` (optionally ``.gz``, UTF-8) or ``.parquet`` / ``.pq``.
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
        A path that is not a readable data file (missing, a directory, a pipe or a device, empty,
        malformed CSV, not UTF-8), and every refusal of :func:`from_frame`.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "toy.csv"
    >>> _ = p.write_text("sex,age,y\\nF,30,no\\nM,41,yes\\nF,25,yes\\n")
    >>> t = from_file(p, label="y")
    >>> t.categorical, t.numeric, t.positive, t.labels().tolist()
    (['sex'], ['age'], 'yes', [0, 1, 1])
    """
    path = Path(path)
    schema = _schema(schema)
    frame = _read(path, schema)
    return _training_data(frame, label, positive, schema, str(path),
                          lambda: {"file": str(path.resolve()), "sha256": sha256(path), "rows": int(len(frame))})


def from_frame(frame: Any, *, label: Any, positive: Any = None, schema: Any = None) -> TrainingData:
    """The records of a pandas DataFrame, as :func:`from_file` takes them from a file.

    The frame is copied, so later changes to it do not reach the run; the run records a SHA-256 of
    its column names, dtypes and values (:func:`frame_sha256`), so resuming with other data is refused.

    Raises
    ------
    DataError
        A column name that is not a string or that occurs twice, no rows, and the refusals of the
        module docstring: a label without exactly two values, an unknown label or positive label,
        features missing from the frame or outside a declared domain, nested values, numeric
        features missing, infinite or too large.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"from_frame takes a pandas DataFrame, got {type(frame).__name__}")
    named = [c for c in frame.columns if not isinstance(c, str)]
    if named:
        raise DataError(f"every column name must be a string, got {named[0]!r} ({type(named[0]).__name__}); "
                        "rename the columns (frame.columns = frame.columns.astype(str))")
    _refuse_empty_or_repeated(frame, "the DataFrame")
    original = frame
    return _training_data(frame.copy(), label, positive, _schema(schema), "the DataFrame",
                          lambda: {"frame": "pandas.DataFrame", "sha256": frame_sha256(original),
                                   "rows": int(len(original))})


def frame_sha256(frame: Any) -> str:
    """Hex SHA-256 of a DataFrame's column names and dtypes and of pandas' 64-bit hash of every row."""
    import pandas as pd

    digest = hashlib.sha256(json.dumps([[c, str(t)] for c, t in frame.dtypes.items()]).encode())
    digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _schema(schema: Any) -> Any:
    from dpaudit.schema import Schema

    if isinstance(schema, (str, Path)):
        schema = Schema.from_json(Path(schema))
    if schema is not None and not isinstance(schema, Schema):
        raise DPAuditError(f"schema must be a Schema or the path of a schema JSON file, got {type(schema).__name__}")
    return schema


def _training_data(frame: Any, label: Any, positive: Any, schema: Any, where: str,
                   source: Any) -> TrainingData:
    """Check ``frame`` (the module docstring's rules; messages start with ``where``) and assign the
    feature roles; ``source()`` gives the fingerprint the run records."""
    from dpaudit.schema import Binned, Categorical

    if not isinstance(label, str) or label not in frame.columns:
        raise DataError(f"{where}: no label column {label!r}; its columns are {', '.join(map(str, frame.columns))}")
    if schema is None:
        features = [c for c in frame.columns if c != label]
    else:
        features = [c for c in schema.columns if c != label]
        absent = [c for c in features if c not in frame.columns]
        if absent:
            raise DataError(f"{where}: the schema declares {', '.join(map(repr, absent))}, which the data lack")
    if not features:
        raise DataError(f"{where}: no feature columns besides the label {label!r}")
    _refuse_nested(frame, [label, *features], where)
    if frame[label].isna().any():
        raise DataError(f"{where}: the label column {label!r} has {int(frame[label].isna().sum())} missing values; "
                        "drop those rows")
    values = sorted({str(v) for v in frame[label].unique()})
    if len(values) != 2:
        shown = ", ".join(values[:5]) + (", …" if len(values) > 5 else "")
        raise DataError(f"{where}: the label column {label!r} must hold exactly two values (a binary task), "
                        f"it holds {len(values)}: {shown}")
    if positive is None:
        positive = next(v for v in frame[label].unique() if str(v) == values[-1])
    elif not _is_positive(frame[label], positive).any():
        raise DataError(f"{where}: the positive label {positive!r} does not occur in {label!r} (values: "
                        f"{', '.join(values)})")
    else:
        positive = next(v for v in frame[label].unique() if _is_positive(np.array([v], dtype=object), positive)[0])

    if schema is None:
        numeric = [c for c in features if _is_number(frame[c])]
        categorical = [c for c in features if c not in numeric]
        how = "inferred from the column types"
    else:
        categorical = [c for c in features if isinstance(schema[c], Categorical)]
        numeric = [c for c in features if isinstance(schema[c], Binned)]
        for c in categorical:
            dom = schema[c]
            codes = frame[c].map(lambda v, dom=dom: dom.code_of(v))
            bad = codes.isna()
            if bad.any():
                first = frame[c][bad].iloc[0]
                raise DataError(f"{where}: column {c!r} has {int(bad.sum())} value(s) outside its declared domain "
                                f"(first: {first!r}); add them to the schema or fix the data")
            frame[c] = codes.map(lambda i, dom=dom: dom.values[int(i)])  # missing entries → the declared label
        how = "declared"
    for c in numeric:
        _check_numeric(frame[c], c, where)
    for c in categorical:  # one type per column, so the encoder can sort its categories
        frame[c] = frame[c].astype(object).where(frame[c].notna(), None).map(lambda v: v if v is None else str(v))
    return TrainingData(frame, label, positive, categorical, numeric, {**source(), "schema": how})


def _check_numeric(col: Any, name: str, where: str) -> None:
    """DataError for a numeric feature holding non-numbers, missing or infinite values, or values too large
    to standardise (:data:`MAX_ABS_FEATURE`)."""
    if not _is_number(col):
        raise DataError(f"{where}: column {name!r} is declared numeric (Binned) but holds non-numbers; declare it "
                        "Categorical or fix the data")
    if col.isna().any():
        raise DataError(f"{where}: numeric column {name!r} has {int(col.isna().sum())} missing values; impute "
                        "them, or declare the column Categorical with a missing label")
    values = col.to_numpy(dtype=np.float64)
    infinite = np.isinf(values)
    if infinite.any():
        raise DataError(f"{where}: numeric column {name!r} has {int(infinite.sum())} infinite value(s) (first: "
                        f"{values[infinite][0]}); replace them by finite numbers or drop those rows")
    huge = np.abs(values) > MAX_ABS_FEATURE
    if huge.any():
        raise DataError(f"{where}: numeric column {name!r} has {int(huge.sum())} value(s) of magnitude above "
                        f"{MAX_ABS_FEATURE:g} (first: {values[huge][0]:g}); standardising would overflow: rescale it")


def _refuse_nested(frame: Any, columns: list[str], where: str) -> None:
    """DataError for a column holding containers (Parquet structs or lists, Python lists or dicts)."""
    import pandas as pd

    for c in columns:
        dtype = frame[c].dtype
        if isinstance(dtype, pd.ArrowDtype) and dtype.pyarrow_dtype.num_fields:
            raise DataError(f"{where}: column {c!r} holds nested values ({dtype}); mia train uses flat columns: "
                            "flatten it or pick one field")
        if pd.api.types.is_object_dtype(dtype):
            nested = frame[c].map(lambda v: isinstance(v, _NESTED))
            if nested.any():
                raise DataError(f"{where}: column {c!r} holds nested values (first: {reprlib.repr(frame[c][nested].iloc[0])}); "
                                "mia train uses flat columns: flatten it or pick one field")


def _refuse_empty_or_repeated(frame: Any, where: str) -> None:
    if len(frame) == 0:
        raise DataError(f"{where}: holds no rows")
    duplicated = frame.columns[frame.columns.duplicated()].tolist()
    if duplicated:
        raise DataError(f"{where}: duplicate column names {duplicated}; rename them")


def read_frame(path: str | os.PathLike[str], schema: Any = None) -> Any:
    """The rows of a CSV or Parquet file as :func:`from_file` reads them (its refusals), before any check of
    features or label (a declared categorical column read as text)."""
    return _read(Path(path), _schema(schema))


def _read(path: Path, schema: Any) -> Any:
    import pandas as pd

    from dpaudit.counting.files import refuse_ragged_rows, refuse_repeated_header, require_file

    require_file(path, what="data file", hint="pass a CSV or Parquet file (--data FILE)")
    suffixes = [s.lower() for s in path.suffixes]
    parquet = bool(suffixes) and suffixes[-1] in (".parquet", ".pq")
    if not parquet and ".csv" not in suffixes:
        raise DataError(f"{path}: unknown file type; --data takes .csv, .csv.gz or .parquet")
    try:
        if parquet:
            frame = pd.read_parquet(path)
        else:
            # Checked as fairness DATA is: pandas would rename a repeated header name ("a.1") and fill a
            # short row with NaN.
            refuse_repeated_header(path, ",")
            refuse_ragged_rows(path, ",", utf8=True)
            # A declared categorical column is read as text, so "F" stays "F" and "007" stays "007".
            from dpaudit.schema import Categorical

            text = {} if schema is None else {c: str for c in schema.columns
                                              if isinstance(schema[c], Categorical)
                                              and all(isinstance(v, str) for v in schema[c].values)}
            frame = pd.read_csv(path, dtype=text or None, keep_default_na=True)
    except DataError:
        raise
    except Exception as exc:  # pandas/pyarrow raise many types for a malformed file; some messages span lines
        reason = " ".join(str(exc).split())
        raise DataError(f"{path}: cannot be read as {'Parquet' if parquet else 'CSV'} "
                        f"({type(exc).__name__}: {reason})") from None
    _refuse_empty_or_repeated(frame, str(path))
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
