"""Domains read off the data (``schema="infer"``, ``--infer-schema``): never DP, and never silent.

:func:`infer_schema` turns every distinct value of a column into a category, **as the data write
it**: a CSV column of ``yes``/``no`` stays ``"yes"``/``"no"`` (DuckDB's sniffer would read it as
booleans; :func:`~dpaudit.counting.frames.open_data` reads such columns as text when the schema is
inferred). A numeric column with more than :data:`MAX_INFERRED_CATEGORIES` distinct values is
continuous: one category per value would give as many blocks as rows when it is admissible (a
criterion measuring the block structure, not the dependence: :mod:`dpaudit.diagnostics`). Such a
column is binned instead, into equal-width bins of a round width (:func:`equal_width_edges`: about
:data:`INFERRED_BINS` bins of width 1, 2 or 5 × 10^k covering the observed range), and the schema's
``source`` says which columns were binned and how; the values reported are then the bins.
``bins=None`` refuses continuous columns instead (declare the bins in a schema).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

from dpaudit._errors import DataError, SchemaError
from dpaudit._io import plain
from dpaudit.counting.frames import Opened, open_data
from dpaudit.schema import Binned, Categorical, Domain, Schema, _is_missing

__all__ = ["distinct_values", "infer_schema", "equal_width_edges", "MAX_INFERRED_CATEGORIES", "INFERRED_BINS"]

#: A numeric column with more distinct values than this is binned by :func:`infer_schema`.
MAX_INFERRED_CATEGORIES = 20
#: About how many equal-width bins :func:`infer_schema` proposes for a continuous column.
INFERRED_BINS = 10


def distinct_values(data: Any, columns: Sequence[str] | None = None) -> dict[str, list[Any]]:
    """Distinct values of each column (including missing ones), computed by the data's engine;
    ``data`` opened (:func:`~dpaudit.counting.frames.open_data`) or anything it opens (a file's
    columns as the file writes them: ``yes``/``no`` stay text)."""
    opened = data if isinstance(data, Opened) else open_data(data, schema="infer")
    try:
        available = list(opened.frame.collect_schema().names())
        columns = available if columns is None else list(columns)
        absent = [c for c in columns if c not in available]
        if absent:
            raise DataError(f"unknown column(s) {', '.join(map(repr, absent))}; the data have: {', '.join(available)}")
        frame, names = opened.engine.positional_columns(opened.frame, columns)
        out: dict[str, list[Any]] = {}
        for col in columns:
            uniq = frame.select(names[col]).unique()
            uniq = uniq.collect() if hasattr(uniq, "collect") else uniq
            out[col] = uniq.get_column(names[col]).to_list()
        return out
    finally:
        if opened is not data:
            opened.close()


def _round_step(span: float, bins: int) -> float:
    """The smallest width 1, 2 or 5 × 10^k that cuts ``span`` into at most about ``bins`` bins."""
    raw = span / bins
    exp = math.floor(math.log10(raw))
    return next(f * 10.0 ** exp for f in (1, 2, 5, 10) if f * 10.0 ** exp >= raw * (1 - 1e-12))


def equal_width_edges(low: float, high: float, bins: int = INFERRED_BINS) -> list[float]:
    """Equal-width bin edges of a round width covering ``[low, high]``: the first edge at or below
    ``low``, the last above ``high`` (bins are half-open, ``[a, b)``).

    Examples
    --------
    >>> equal_width_edges(17, 90)
    [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0]
    >>> equal_width_edges(0.12, 0.87, 4)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    """
    step = _round_step(high - low, bins) if high > low else 1.0
    first = math.floor(low / step)
    count = math.floor(high / step) - first + 1
    edges = [float(f"{(first + k) * step:.12g}") for k in range(count + 1)]
    return edges


def _binned(name: str, values: list[Any], has_missing: bool, missing_label: str, bins: int | None) -> tuple[Domain, str]:
    """A continuous column's inferred bins and the note that says so (SchemaError when ``bins`` is None)."""
    if bins is None:
        raise SchemaError(
            f"column {name!r} is numeric with {len(values):,} distinct values: one category per value would make "
            f"a block per value; declare its bins in a schema (Binned edges) or infer with bins=<number>")
    finite = [float(v) for v in values if math.isfinite(v)]
    cuts = equal_width_edges(min(finite), max(finite), bins) if finite else [0.0, 1.0]
    edges = ([-math.inf] if any(v == -math.inf for v in values) else []) + cuts
    edges += [math.inf] if any(v == math.inf for v in values) else []
    domain = Binned(edges, missing=missing_label if has_missing else None)
    return domain, (f"{name}: {len(values):,} distinct numbers → {domain.n_bins} equal-width bins of width "
                    f"{cuts[1] - cuts[0]:g} from {cuts[0]:g}")


def infer_schema(data: Any, columns: Iterable[str] | None = None, *, missing_label: str = "Missing",
                 bins: int | None = INFERRED_BINS) -> Schema:
    """Read domains off the data: every distinct value becomes a category, as written in the data; a
    numeric column with more than :data:`MAX_INFERRED_CATEGORIES` distinct values is binned into about
    ``bins`` equal-width bins (None: refused, SchemaError), which the schema's ``source`` names.

    The result has ``data_derived=True``: it leaks which values occur, so releases computed with it
    are **not** differentially private and say so. Missing entries become ``missing_label``.

    Examples
    --------
    >>> import pandas as pd
    >>> infer_schema(pd.DataFrame({"a": ["y", "x", None]}))["a"]
    Categorical(values=('x', 'y', 'Missing'), missing='Missing')
    >>> s = infer_schema(pd.DataFrame({"age": range(17, 91)}))
    >>> s["age"].n_bins, s.source
    (9, 'inferred from the data; binned: age: 74 distinct numbers → 9 equal-width bins of width 10 from 10')
    """
    found = distinct_values(data, None if columns is None else list(columns))
    doms: dict[str, Domain] = {}
    notes = []
    for name, values in found.items():
        present = [v for v in values if not _is_missing(v)]
        has_missing = len(present) != len(values)
        numeric = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in present)
        if numeric and len(present) > MAX_INFERRED_CATEGORIES:
            doms[name], note = _binned(name, present, has_missing, missing_label, bins)
            notes.append(note)
            continue
        try:
            present.sort()
        except TypeError:
            present.sort(key=repr)
        if has_missing and missing_label not in present:
            present.append(missing_label)
        doms[name] = Categorical(tuple(plain(v) for v in present), missing=missing_label if has_missing else None)
    source = "inferred from the data" + (f"; binned: {'; '.join(notes)}" if notes else "")
    return Schema(doms, data_derived=True, source=source)
