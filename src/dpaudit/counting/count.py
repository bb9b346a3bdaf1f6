"""Counting: the last step of the pipeline, the only one that reads the rows' values.

A criterion φ = (P, O, A) needs the counts of every cell of A ∪ P ∪ O. All criteria of one call are
counted in **one pass over the data** (issue 14), and the tables of the criteria are then
marginalised from it in numpy:

* An **in-memory frame** (pandas, polars, pyarrow: any eager narwhals DataFrame) is not grouped at
  all. Each needed column is turned into domain codes once — Arrow's hash kernel
  (``pyarrow.compute.index_in``) against the declared values for text, a lookup table over the
  value range for integers, ``searchsorted`` on the bin edges for binned numbers — and one
  ``np.bincount`` over the row-major index of the codes counts every cell.
* A **lazy frame** — a CSV/Parquet file opened with DuckDB (which streams files larger than
  memory), a DuckDB relation, a PySpark or polars LazyFrame, … — is grouped by its own engine,
  through narwhals, **once on the union of the criteria's columns**; the grouped rows (at most one
  per cell of the union's declared domain) are coded like a frame's columns, weighted by their
  counts. When the union's declared cell count exceeds :data:`UNION_MAX_CELLS`, each distinct
  column set is grouped on its own instead (the grouped result of a union that large could hold
  as many rows as the data).

Numeric columns declared :class:`~dpaudit.schema.Binned` are binned before grouping, inside the
engine (:func:`~dpaudit.counting.encode.engine_frame`): an integer column on equally spaced integral
edges by the engine's own integer division (:mod:`dpaudit.counting.keys`, DuckDB and Spark), other
columns by a division where the edges are equally spaced and a chain or binary search of comparisons
elsewhere; the codes always equal ``#{edges <= x} - 1``.
The counts are placed into a dense ``int64`` array of shape ``(n_blocks, n_protected, n_outcome)``
indexed by the schema's domains: blocks are the cells of A (one block when A is empty), rows the
cells of P, columns the cells of O. Measures only ever see these arrays.

The input is opened by :func:`~dpaudit.counting.frames.open_data` (an audit opens it once and
passes the :class:`~dpaudit.counting.frames.Opened` to :func:`infer_schema` and
:func:`count_tables`; given anything else, they open it themselves); the values become domain
codes in :mod:`dpaudit.counting.encode`; this module plans the pass and assembles the tables
(:mod:`dpaudit.counting.infer` reads domains off the data).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit._errors import DataError
from dpaudit.counting.checks import check_counting
from dpaudit.counting.encode import _column_codes, engine_frame
from dpaudit.counting.frames import Opened, open_data
from dpaudit.counting.keys import IntegerKey
from dpaudit.counting.lookup import frame_codes
from dpaudit.criteria import Criterion
from dpaudit.schema import Binned, Domain, Schema

__all__ = ["CountTable", "count_tables", "UNION_MAX_CELLS"]

_COUNT = "__dpaudit_count__"
#: The largest union of columns (product of the declared domain sizes) a lazy engine groups in one
#: query: its grouped result has at most this many rows (about 200 MB for six columns and the
#: count, fetched as 8-byte numbers). Beyond it every distinct column set is grouped on its own,
#: each bounded by its criterion's cells (:func:`~dpaudit.counting.checks.max_cells`). The
#: census-like table's four criteria span 1.8 million union cells, Adult's 31,680.
UNION_MAX_CELLS = 1 << 22


@dataclass(frozen=True, eq=False)
class CountTable:
    """Dense counts of one criterion over its declared domain.

    Attributes
    ----------
    criterion : Criterion
    counts : ndarray of int64, shape (n_blocks, n_protected, n_outcome)
        ``counts[a, p, o]`` is the number of rows in admissible cell ``a``, protected cell ``p`` and
        outcome cell ``o``. Cells of several columns are the row-major product of their domains.
    domains : tuple of Domain
        The domain of every column in ``criterion.columns`` order (A, then P, then O).
    """

    criterion: Criterion
    counts: np.ndarray
    domains: tuple[Domain, ...]
    _sides: dict[str, tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        idx = {c: i for i, c in enumerate(self.criterion.columns)}
        crit = self.criterion
        object.__setattr__(self, "_sides", {  # the labels of each side's columns, for cell_labels
            side: (columns, tuple(self.domains[idx[c]].labels for c in columns))
            for side, columns in (("protected", crit.protected), ("outcome", crit.outcome), ("admissible", crit.admissible))
        })

    @property
    def n(self) -> int:
        """Number of rows counted."""
        return int(self.counts.sum())

    def _labels(self, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
        idx = {c: i for i, c in enumerate(self.criterion.columns)}
        return list(itertools.product(*(self.domains[idx[c]].labels for c in columns)))

    def _side(self, side: str, flat: int) -> dict[str, Any]:
        columns, labels = self._sides[side]
        if len(columns) == 1:
            return {columns[0]: labels[0][flat]}
        out = {}
        for c, names in zip(columns[::-1], labels[::-1]):  # row-major: the last column varies fastest
            flat, code = divmod(int(flat), len(names))
            out[c] = names[code]
        return {c: out[c] for c in columns}

    def cell_labels(self, block: int, protected: int, outcome: int) -> dict[str, dict[str, Any]]:
        """Column values of one cell: ``{"protected": {...}, "outcome": {...}, "admissible": {...}}``."""
        return {
            "protected": self._side("protected", protected),
            "outcome": self._side("outcome", outcome),
            "admissible": self._side("admissible", block),
        }

    @property
    def block_labels(self) -> list[tuple[Any, ...]]:
        """Values of the admissible columns for each block (``[()]`` without A)."""
        return self._labels(self.criterion.admissible)

    @property
    def protected_labels(self) -> list[tuple[Any, ...]]:
        return self._labels(self.criterion.protected)

    @property
    def outcome_labels(self) -> list[tuple[Any, ...]]:
        return self._labels(self.criterion.outcome)


def _series(frame: Any, columns: Sequence[str]) -> dict[str, Any] | None:
    """Each of ``columns`` of an in-memory frame as a narwhals Series, fetched once (a pandas column
    lookup costs more than coding a small column); None for a lazy frame."""
    import narwhals.stable.v2 as nw

    return {c: frame.get_column(c) for c in columns} if isinstance(frame, nw.DataFrame) else None


def _dtypes(frame: Any, columns: Sequence[str], series: dict[str, Any] | None) -> dict[str, Any]:
    """The narwhals dtype of each of ``columns``: of its ``series`` (an in-memory frame's), else from
    the lazy frame's schema."""
    if series is not None:
        return {c: series[c].dtype for c in columns}
    schema = frame.collect_schema()
    return {c: schema[c] for c in columns}


def _check_types(dtypes: dict[str, Any], schema: Schema, columns: Sequence[str]) -> dict[str, Any]:
    """DataError for a nested column or a binned column that holds no numbers; returns ``dtypes``
    (the frame's narwhals dtypes by column name)."""
    for col in columns:
        if dtypes[col].is_nested():
            raise DataError(
                f"column {col!r} holds nested values ({dtypes[col]}); dpaudit counts flat columns: "
                "flatten it or pick one field"
            )
        if isinstance(schema[col], Binned) and not dtypes[col].is_numeric():
            raise DataError(
                f"column {col!r} is declared binned (numeric) but holds {dtypes[col]}; "
                "declare it Categorical or convert it to numbers"
            )
    return dtypes


def count_tables(data: Any, criteria: Sequence[Criterion], schema: Schema) -> list[CountTable]:
    """One dense count table per criterion, all counted in one pass over the data.

    An in-memory frame's columns are coded once and counted by one ``np.bincount``; a lazy frame
    (a CSV/Parquet file, a DuckDB relation, a Spark DataFrame, …) is grouped once by its engine on
    the union of the criteria's columns (per distinct column set when that union spans more than
    :data:`UNION_MAX_CELLS` cells). Each criterion's table is the marginal of that count over its
    columns A ∪ P ∪ O: ``counts[a, p, o] = Σ`` of the union's cells that agree with (a, p, o).

    Parameters
    ----------
    data : Opened, pandas/polars/pyarrow frame, DuckDB relation, Spark DataFrame, or CSV/Parquet path
        Data already opened (:func:`~dpaudit.counting.frames.open_data`) are counted as they are;
        anything else is opened here, a file's declared columns typed as ``schema`` declares them.
    criteria : sequence of Criterion
    schema : Schema
        Declares the domain of every column the criteria use.

    Returns
    -------
    list of CountTable, aligned with ``criteria``.

    Raises
    ------
    DataError
        For values outside the declared domain or missing values the schema does not map, naming the
        column, the values and their row counts.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpaudit import Categorical, Criterion, Schema
    >>> df = pd.DataFrame({"sex": ["F", "M", "M"], "y": [1, 0, 1]})
    >>> s = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1])})
    >>> count_tables(df, [Criterion.parse("sex ⊥ y")], s)[0].counts.tolist()
    [[[0, 1], [1, 1]]]
    """
    needed = list(dict.fromkeys(c for crit in criteria for c in crit.columns))
    opened = data if isinstance(data, Opened) else open_data(data, criteria, schema)
    try:  # files are opened lazily: nothing before _tally reads a row
        check_counting(criteria, opened.frame.columns, schema)
        if not criteria:
            return []
        order, sizes = _order(criteria, schema)
        codes = frame_codes(opened.frame, order, schema)  # a pandas frame of integer codes: no Arrow
        if codes is not None:
            tallies = [_Tally(order, codes, None, sizes)]
        else:
            series = _series(opened.frame, needed)
            dtypes = _check_types(_dtypes(opened.frame, needed, series), schema, needed)
            tallies = _tally(opened, criteria, schema, dtypes, series)
        tables = []
        for crit in criteria:
            tally = next(t for t in tallies if set(crit.columns) <= set(t.columns))
            counts = tally.counts(crit.columns)
            n_a, n_p, n_o = (math.prod(schema[c].size for c in side)
                             for side in (crit.admissible, crit.protected, crit.outcome))
            tables.append(CountTable(crit, counts.reshape(n_a, n_p, n_o), tuple(schema[c] for c in crit.columns)))
        return tables
    finally:
        if opened is not data:  # opened here: closed here
            opened.close()


@dataclass(eq=False)
class _Tally:
    """Domain codes of counted rows, per column, and the number of data rows each row stands for
    (``weights``; None: one each, the rows of an in-memory frame)."""

    columns: tuple[str, ...]
    codes: dict[str, np.ndarray]
    weights: np.ndarray | None
    sizes: dict[str, int]
    _dense: np.ndarray | None = None

    def counts(self, columns: tuple[str, ...]) -> np.ndarray:
        """``int64`` counts of every cell of ``columns`` (some of :attr:`columns`), row-major.

        When the union of :attr:`columns` has no more cells than there are rows (and at most
        :data:`UNION_MAX_CELLS`), all rows are counted once into the dense union table and each
        request sums it over the other columns; otherwise the rows are counted per request.
        """
        rows = len(self.codes[self.columns[0]])
        union = math.prod(self.sizes[c] for c in self.columns)
        if union > min(rows, UNION_MAX_CELLS):
            return self._bincount(columns)
        if self._dense is None:
            self._dense = self._bincount(self.columns).reshape([self.sizes[c] for c in self.columns])
        axes = [self.columns.index(c) for c in columns]
        summed = self._dense.sum(axis=tuple(i for i in range(len(self.columns)) if i not in axes))
        return np.transpose(summed, np.argsort(np.argsort(axes))).reshape(-1)

    def _bincount(self, columns: tuple[str, ...]) -> np.ndarray:
        flat = self.codes[columns[0]].astype(np.int64, copy=True)
        for c in columns[1:]:
            np.multiply(flat, self.sizes[c], out=flat)
            np.add(flat, self.codes[c], out=flat)
        counted = np.bincount(flat, weights=self.weights, minlength=math.prod(self.sizes[c] for c in columns))
        return counted if self.weights is None else np.rint(counted).astype(np.int64)


def _order(criteria: Sequence[Criterion], schema: Schema) -> tuple[tuple[str, ...], dict[str, int]]:
    """The columns the criteria use in the order a DataError names them (criterion by criterion,
    each criterion's columns sorted by name), and the size of each one's domain."""
    order = tuple(dict.fromkeys(c for crit in criteria for c in sorted(crit.columns)))
    return order, {c: schema[c].size for c in order}


def _tally(opened: Opened, criteria: Sequence[Criterion], schema: Schema, dtypes: dict[str, Any],
           series: dict[str, Any] | None) -> list[_Tally]:
    """Read the rows, once: the codes of every column the criteria use (see the module docstring);
    ``series``: an in-memory frame's columns (:func:`_series`), None for a lazy frame, which its
    engine groups (:func:`~dpaudit.counting.encode.engine_frame`: the columns reached by position,
    the binned ones as bin codes).

    Columns are coded in the order a DataError names them: criterion by criterion, each
    criterion's columns sorted by name.
    """
    import narwhals.stable.v2 as nw

    order, sizes = _order(criteria, schema)
    if series is not None and all(dtypes[c] != nw.Object for c in order):
        codes = {c: _column_codes(c, schema[c], series[c], dtypes[c], None, raw_numbers=True)
                 for c in order}
        return [_Tally(order, codes, None, sizes)]
    frame, names, keys = engine_frame(opened, order, schema, dtypes)
    if math.prod(sizes.values()) <= UNION_MAX_CELLS:
        groups = [order]
    else:
        groups = list(dict.fromkeys(tuple(sorted(crit.columns)) for crit in criteria))
    return [_group(frame, columns, schema, dtypes, sizes, names, keys) for columns in groups]


def _group(frame: Any, columns: tuple[str, ...], schema: Schema, dtypes: dict[str, Any],
           sizes: dict[str, int], names: dict[str, str], keys: dict[str, IntegerKey]) -> _Tally:
    """One group-by count over ``columns`` (reached in the frame by ``names``) run by the frame's
    engine, coded."""
    import narwhals.stable.v2 as nw

    try:
        grouped = frame.group_by(*(names[c] for c in columns), drop_null_keys=False).agg(nw.len().alias(_COUNT))
        if hasattr(grouped, "collect"):
            grouped = grouped.collect()
    except TypeError as exc:  # pandas object columns holding lists, dicts, sets
        raise DataError(
            f"cannot count the column(s) {', '.join(map(repr, columns))}: {exc}; every value must be a string, "
            "a number or a boolean (not a list or a dict)"
        ) from None
    weights = grouped.get_column(_COUNT).to_numpy().astype(np.int64)
    codes = {c: _column_codes(c, schema[c], grouped.get_column(names[c]), dtypes[c], weights, raw_numbers=False,
                              key=keys.get(c)) for c in columns}
    return _Tally(columns, codes, weights, {c: sizes[c] for c in columns})
