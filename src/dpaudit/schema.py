"""Declared attribute domains: the public part of the data.

A differentially private release must not learn its domains from the private data: whether a rare
value occurs at all is itself private (unfairness spec §1, "Domain"). A :class:`Schema` therefore
declares, per column, either a finite list of categorical values (:class:`Categorical`) or bin edges
for a numeric column (:class:`Binned`). Count tables are indexed by these domains, so empty cells of
the declared domain are present (with count 0) and nothing about the domain depends on the data.

:func:`dpaudit.counting.infer_schema` builds a schema from the data for convenience; such a schema
is marked ``data_derived=True`` and every release computed with it says ``"dp": false`` and why.
"""

from __future__ import annotations

import json
import math
import numbers
import reprlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpaudit._errors import SchemaError
from dpaudit._io import load_json, to_jsonable

__all__ = ["Categorical", "Binned", "Domain", "Schema"]


def _plain_value(value: Any) -> bool:
    """True for a value a category can be: hashable and not a container (list, tuple, set, dict)."""
    if isinstance(value, (tuple, frozenset, complex, bytes)):
        return False
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _refuse_unordered(what: str, given: Any, example: str) -> None:
    """SchemaError for a mapping (its keys would silently become the list) or a set (no declared
    order: a category's code would change between runs) given where a list is declared."""
    if isinstance(given, Mapping):
        raise SchemaError(f"{what} must be a list, got a mapping {reprlib.repr(dict(given))}; list them in order, "
                          f"e.g. {example}")
    if isinstance(given, (set, frozenset)):
        raise SchemaError(f"{what} must be a list, got a {type(given).__name__} {reprlib.repr(given)} (a set has no "
                          "order, so the cells would change between runs); list them in order")


def _is_missing(value: Any) -> bool:
    """True for None, NaN, pandas.NA/NaT: the values a schema may map to a declared missing category."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    try:  # pandas.NA / NaT and numpy floating NaN without importing pandas
        return bool(value != value)
    except (TypeError, ValueError):
        return type(value).__name__ in {"NAType", "NaTType"}


@dataclass(frozen=True)
class Categorical:
    """A finite, declared set of values; codes follow the declared order.

    Parameters
    ----------
    values : sequence
        The declared values (strings, integers, booleans). Must be non-empty and unique.
    missing : value, optional
        One of ``values`` to which missing entries (None, NaN, pandas NA) are mapped. Without it,
        missing entries are an error.

    Examples
    --------
    >>> Categorical(["Male", "Female"]).size
    2
    >>> Categorical(["a", "Missing"], missing="Missing").code_of(None)
    1
    """

    values: Sequence[Any]
    missing: Any = None

    def __post_init__(self) -> None:
        if isinstance(self.values, (str, bytes)) or not isinstance(self.values, Iterable):
            raise SchemaError(f"categorical values must be a list of values, got {self.values!r}")
        _refuse_unordered("categorical values", self.values, '["F", "M"]')
        values = tuple(self.values)
        object.__setattr__(self, "values", values)
        if not values:
            raise SchemaError("a categorical domain needs at least one value; declare the values")
        if any(_is_missing(v) for v in values):
            raise SchemaError(
                "a categorical domain cannot list a missing value (None/NaN) as a value; "
                "declare a label such as 'Missing' and pass missing='Missing'"
            )
        odd = next((v for v in values if not _plain_value(v)), None)
        if odd is not None:
            raise SchemaError(
                f"categorical values must be single values (strings, numbers, booleans), got {odd!r} "
                f"({type(odd).__name__}); declare each category as one plain value"
            )
        if len(set(values)) != len(values):
            seen: set[Any] = set()
            dup = next(v for v in values if v in seen or seen.add(v))  # type: ignore[func-returns-value]
            raise SchemaError(f"categorical domain lists {dup!r} twice; each value must appear once")
        if self.missing is not None and self.missing not in values:
            raise SchemaError(
                f"missing={self.missing!r} is not one of the declared values; add it to values"
            )

    @property
    def size(self) -> int:
        """Number of cells of this domain."""
        return len(self.values)

    @property
    def labels(self) -> tuple[Any, ...]:
        """The value of each cell, in code order."""
        return tuple(self.values)

    def code_of(self, value: Any) -> int | None:
        """Code of a raw value, or None when it is outside the domain (and not mappable as missing)."""
        if _is_missing(value):
            return None if self.missing is None else self.values.index(self.missing)
        try:
            return self._index[value]
        except (KeyError, TypeError):
            return None

    @property
    def _index(self) -> dict[Any, int]:
        cache = self.__dict__.get("_index_cache")
        if cache is None:
            cache = {v: i for i, v in enumerate(self.values)}
            object.__setattr__(self, "_index_cache", cache)
        return cache

    def to_dict(self) -> dict[str, Any]:
        return {"type": "categorical", "values": list(self.values), "missing": self.missing}


@dataclass(frozen=True)
class Binned:
    """A numeric column cut into declared half-open bins ``[edges[i], edges[i+1])``.

    Parameters
    ----------
    edges : sequence of float
        Strictly increasing, at least two; ``-inf``/``inf`` are allowed for open-ended bins.
    missing : str, optional
        Label of an extra last bin that receives missing entries (None/NaN). Without it, missing
        entries are an error.

    Examples
    --------
    >>> b = Binned([0, 10, 20])
    >>> b.labels
    ('[0, 10)', '[10, 20)')
    >>> Binned([0, 10], missing="Missing").labels
    ('[0, 10)', 'Missing')
    """

    edges: Sequence[float]
    missing: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.edges, (str, bytes)) or not isinstance(self.edges, Iterable):
            raise SchemaError(f"bin edges must be numbers in a list, got {self.edges!r}")
        _refuse_unordered("bin edges", self.edges, "[0, 18, 65, float('inf')]")
        try:
            edges = tuple(_edge(e) for e in self.edges)
        except (TypeError, ValueError, OverflowError):
            raise SchemaError(f"bin edges must be numbers (or '-inf'/'inf'), got {reprlib.repr(list(self.edges))}") from None
        object.__setattr__(self, "edges", edges)
        if len(edges) < 2:
            raise SchemaError("a binned domain needs at least two edges (one bin)")
        if len(edges) > MAX_EDGES:
            raise SchemaError(
                f"a binned domain has at most {MAX_EDGES:,} edges, got {len(edges):,}; use coarser bins"
            )
        if self.missing is not None and not isinstance(self.missing, str):
            raise SchemaError(f"the missing bin's label must be a string (e.g. 'Missing'), got {self.missing!r}")
        if any(math.isnan(e) for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
            raise SchemaError(f"bin edges must be strictly increasing numbers, got {list(edges)!r}")

    @property
    def n_bins(self) -> int:
        """Number of numeric bins (without the missing bin)."""
        return len(self.edges) - 1

    @property
    def size(self) -> int:
        return self.n_bins + (self.missing is not None)

    @property
    def labels(self) -> tuple[str, ...]:
        def fmt(x: float) -> str:
            return str(int(x)) if x.is_integer() else repr(x)

        bins = tuple(f"[{fmt(a)}, {fmt(b)})" for a, b in zip(self.edges, self.edges[1:]))
        return bins + ((self.missing,) if self.missing is not None else ())

    def to_dict(self) -> dict[str, Any]:
        edges = [e if math.isfinite(e) else ("inf" if e > 0 else "-inf") for e in self.edges]
        return {"type": "binned", "edges": edges, "missing": self.missing}


Domain = Categorical | Binned

#: The most edges a :class:`Binned` domain may have: each edge is one comparison in the counting
#: query, and a count table's cells multiply across its columns.
MAX_EDGES = 10_001


def _edge(value: Any) -> float:
    """One bin edge: a real number or its text ('2.5'; '-inf'/'inf', since JSON has no infinities)."""
    if isinstance(value, str):
        return float(value)  # '2.5', '-inf', 'inf'
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(value)
    return float(value)


def _domain_from_dict(column: str, spec: Any) -> Domain:
    if not isinstance(spec, Mapping) or "type" not in spec:
        raise SchemaError(
            f"column {column!r}: expected an object with a 'type' of 'categorical' or 'binned', got {spec!r}"
        )
    kind = spec["type"]
    if kind == "categorical":
        if "values" not in spec:
            raise SchemaError(f"column {column!r}: a categorical domain needs 'values'")
        _json_list(column, "values", spec["values"], "the categories in order, e.g. [\"F\", \"M\"]")
        try:
            return Categorical(spec["values"], missing=spec.get("missing"))
        except SchemaError as exc:
            raise SchemaError(f"column {column!r}: {exc}") from None
    if kind == "binned":
        if "edges" not in spec:
            raise SchemaError(f"column {column!r}: a binned domain needs 'edges'")
        _json_list(column, "edges", spec["edges"], "increasing numbers, e.g. [0, 18, 65, \"inf\"]")
        try:
            return Binned(spec["edges"], missing=spec.get("missing"))
        except SchemaError as exc:
            raise SchemaError(f"column {column!r}: {exc}") from None
    if not isinstance(kind, str):
        raise SchemaError(f"column {column!r}: 'type' must be the string 'categorical' or 'binned', got {kind!r}")
    raise SchemaError(f"column {column!r}: unknown domain type {kind!r}; use 'categorical' or 'binned'")


def _json_list(column: str, key: str, given: Any, what: str) -> None:
    """SchemaError when a column's ``key`` in a schema JSON is a JSON object where a list is declared
    (its keys would silently become the list); other wrong types are refused by the domain itself."""
    if isinstance(given, Mapping):
        raise SchemaError(f"column {column!r}: {key!r} must be a JSON list of {what}, got an object "
                          f"{reprlib.repr(dict(given))}")


@dataclass(frozen=True, eq=False)
class Schema:
    """Declared domains per column.

    Parameters
    ----------
    columns : mapping of str to Categorical or Binned
    data_derived : bool, default False
        True when the domains were read off the data (:func:`dpaudit.counting.infer_schema`): releases computed with such a
        schema are not differentially private and say so.

    Examples
    --------
    >>> s = Schema({"sex": Categorical(["Male", "Female"]), "hours": Binned([0, 40, 100])})
    >>> s["hours"].labels
    ('[0, 40)', '[40, 100)')
    >>> Schema.from_json(s.to_json()) == s
    True
    """

    columns: Mapping[str, Domain]
    data_derived: bool = False
    source: str = field(default="declared")

    def __post_init__(self) -> None:
        if not isinstance(self.columns, Mapping):
            raise SchemaError("Schema(columns) must be a mapping from column name to domain")
        for name, dom in self.columns.items():
            if not isinstance(name, str):
                raise SchemaError(f"column names must be strings, got {name!r} ({type(name).__name__}); name the "
                                  "column as the data do, e.g. str(name)")
            if not isinstance(dom, (Categorical, Binned)):
                raise SchemaError(
                    f"column {name!r}: domain must be Categorical or Binned, got {type(dom).__name__}"
                )
        object.__setattr__(self, "columns", dict(self.columns))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Schema)
            and dict(self.columns) == dict(other.columns)
            and self.data_derived == other.data_derived
        )

    def __contains__(self, column: object) -> bool:
        return column in self.columns

    def __getitem__(self, column: str) -> Domain:
        try:
            return self.columns[column]
        except KeyError:
            known = ", ".join(sorted(self.columns)) or "(none)"
            raise SchemaError(
                f"column {column!r} is not declared in the schema (declared: {known}); add its domain"
            ) from None

    # -- JSON ---------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": {name: dom.to_dict() for name, dom in self.columns.items()},
            "data_derived": self.data_derived,
        }

    def to_json(self, path: str | Path | None = None) -> str:
        """Serialise to JSON; also write it to ``path`` when given."""
        text = json.dumps(to_jsonable(self.to_dict(), nonfinite="error"), indent=2)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    @classmethod
    def from_json(cls, source: str | Path) -> Schema:
        """Read a schema from a JSON string or a path to a JSON file."""
        raw = load_json(source, what="schema", hint='pass a JSON object {"columns": {...}} or the path of a schema JSON file',
                        error=SchemaError)
        if not isinstance(raw, Mapping) or not isinstance(raw.get("columns"), Mapping):
            raise SchemaError('schema JSON must be an object with a "columns" object')
        columns = {name: _domain_from_dict(name, spec) for name, spec in raw["columns"].items()}
        derived = raw.get("data_derived", False)
        if not isinstance(derived, bool):
            raise SchemaError(f'schema "data_derived" must be true or false, got {derived!r}')
        return cls(columns, data_derived=derived)

    def require(self, columns: Sequence[str]) -> None:
        """Raise SchemaError naming every column in ``columns`` that the schema does not declare."""
        absent = [c for c in columns if c not in self.columns]
        if absent:
            known = ", ".join(sorted(self.columns)) or "(none)"
            raise SchemaError(
                f"columns not declared in the schema: {', '.join(map(repr, absent))} "
                f"(declared: {known}); add their domains"
            )
