"""The one declarative definition of a result document: field constraints in the dataclasses' annotations.

A result type is a frozen dataclass whose field annotations say what its document holds, with
:class:`Check` s as :data:`typing.Annotated` metadata (``Annotated[float, Num(low=0)]``, ``Rate()``,
``Choice(SIGNS)``, :data:`LABELS` …) and a few layout markers (:class:`Key`, :data:`OMIT`,
:data:`FLATTEN`, :class:`Spread`, :data:`REQUIRED`, :data:`NONEMPTY`). Two readers of that one
definition exist:

* :func:`read_fields` reads a saved document's fields into the dataclass's arguments, every value
  through the checks of :mod:`dpaudit._document` (so a damaged document is refused naming the field);
* :mod:`dpaudit.report.json_schema` writes the JSON Schema of ``docs/schema/*.json`` from the same
  annotations (each :class:`Check` knows its schema).

A field is required in the document when it has no default (or is marked :data:`REQUIRED`); a field
whose type admits None may be null. Cross-field rules (an interval holds its value, the columns have
one length, ``mode`` against ε …) stay in each type's ``from_dict``; conditional requirements are
declared as :class:`When` s in the class's ``WHEN`` and enforced by both readers.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from typing import Annotated, Any, Union

from dpaudit._checks import (
    LABELS,
    Check,
    Choice,
    Coded,
    Flag,
    Items,
    Json,
    Keyed,
    Labels,
    Num,
    Pair,
    Rate,
    Text,
    Unit,
    Whole,
)
from dpaudit._document import Doc, DocumentError

__all__ = ["Check", "Whole", "Num", "Rate", "Unit", "Text", "Flag", "Choice", "Coded", "Labels", "Pair", "Json",
           "Items", "Keyed", "Key", "Keys", "Spread", "When", "OMIT", "FLATTEN", "REQUIRED", "NONEMPTY", "BY_NAME", "LABELS", "FieldSpec", "specs",
           "read_fields", "typed", "split", "derived"]


# -- layout markers -------------------------------------------------------------------------------

@dataclass(eq=False, repr=False)  # cheap to define: compared by identity, never changed
class Key:
    """The field's key in the document, when it is not the field's name."""

    name: str


@dataclass(eq=False, repr=False)
class Spread:
    """A mapping field whose entries are keys of the object itself, each one of ``keys`` (``what``
    names them in a message); the object then holds no other keys."""

    keys: tuple[str, ...]
    what: str = "rule"


@dataclass(eq=False, repr=False)
class Keys:
    """A mapping whose keys are each one of ``keys`` (``what`` names them in a message)."""

    keys: tuple[str, ...]
    what: str = "rule"


@dataclass(eq=False, repr=False)
class _Marker:
    name: str


#: Not in the document (a measure's name is its key; its details are read by name).
OMIT = _Marker("omit")
#: A nested result's fields are this object's own (a measure's release).
FLATTEN = _Marker("flatten")
#: Required in the document although the dataclass has a default (fields after defaulted ones).
REQUIRED = _Marker("required")
#: A list or object that must hold one or more items.
NONEMPTY = _Marker("nonempty")
#: A mapping whose values are read by ``from_dict(key, value)`` (a measure's entry, by measure name).
BY_NAME = _Marker("by_name")


@dataclass(eq=False, repr=False)
class When:
    """A conditional requirement: when field ``key`` is one of ``values``, the fields ``require`` are
    present and not null, and the fields ``null`` are absent or null (``message`` says why)."""

    key: str
    values: tuple[Any, ...]
    require: tuple[str, ...] = ()
    null: tuple[str, ...] = ()
    message: str = ""


# -- reading --------------------------------------------------------------------------------------

def split(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """An annotation without its :data:`~typing.Annotated` metadata, and the metadata."""
    if typing.get_origin(annotation) is Annotated:
        return annotation.__origin__, tuple(annotation.__metadata__)
    return annotation, ()


def nullable(annotation: Any) -> tuple[Any, bool]:
    """``X`` of ``X | None`` and True; else the annotation and False."""
    if typing.get_origin(annotation) in (Union, types.UnionType) and type(None) in typing.get_args(annotation):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (inner[0] if len(inner) == 1 else Union[tuple(inner)]), True  # noqa: UP007
    return annotation, False


@dataclass(eq=False, repr=False)
class FieldSpec:
    """One field of a result's document: its dataclass field, key, annotation (without None) and markers."""

    name: str
    key: str
    annotation: Any
    meta: tuple[Any, ...]
    required: bool
    nullable: bool
    default: Any

    def has(self, marker: Any) -> bool:
        return marker in self.meta

    @property
    def full(self) -> Any:
        """The annotation with its markers (without None)."""
        return Annotated[self.annotation, *self.meta] if self.meta else self.annotation


@functools.cache
def specs(cls: type) -> tuple[FieldSpec, ...]:
    """The document fields of dataclass ``cls``, in declaration order."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        base, meta = split(hints[f.name])
        base, null = nullable(base)
        inner, more = split(base)
        meta += more
        key = next((m.name for m in meta if isinstance(m, Key)), f.name)
        default = f.default if f.default is not MISSING else (
            f.default_factory() if f.default_factory is not MISSING else MISSING)
        required = (default is MISSING or REQUIRED in meta) and not any(isinstance(m, Spread) for m in meta)
        out.append(FieldSpec(f.name, key, inner, meta, required, null, default))
    return tuple(out)


def derived(cls: type) -> Mapping[str, tuple[Any, bool]]:
    """What ``to_dict`` writes beside the fields (``DERIVED``: key → (annotation, required)): read for
    its type when present, never given to the dataclass."""
    return getattr(cls, "DERIVED", {})


def typed(path: str, value: Any, annotation: Any) -> Any:
    """``value`` read as a field annotated ``annotation``: a :class:`Check` in its metadata, else int,
    float, str, bool, ``X | None``, ``tuple[X, ...]``, ``tuple[X, Y]``, ``Mapping[str, X]``, a class
    with ``from_dict``; anything else is taken as the JSON it is (lists as tuples)."""
    try:
        read = reader(annotation)
    except TypeError:  # an annotation that cannot be hashed: not cached
        read = reader.__wrapped__(annotation)
    return read(path, value)


@functools.cache
def reader(annotation: Any) -> Callable[[str, Any], Any]:
    """The function that reads a value annotated ``annotation`` (:func:`typed`), made once per
    annotation, so that a column of thousands of numbers costs one check call per number."""
    annotation, meta = split(annotation)
    annotation, null = nullable(annotation)
    check = next((m for m in meta if isinstance(m, Check)), None)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    read: Callable[[str, Any], Any]
    if check is not None:
        read = check.read
    elif annotation in _BY_TYPE:
        read = _BY_TYPE[annotation].read
    elif origin is tuple and args:
        read = (functools.partial(_items, reader(args[0])) if args[-1] is Ellipsis
                else functools.partial(_fixed, [reader(a) for a in args]))
    elif origin in (dict, Mapping) and len(args) == 2:
        keys = next((m for m in meta if isinstance(m, Keys)), None)
        read = functools.partial(_mapping, args[1], keys, BY_NAME in meta)
    elif isinstance(annotation, type) and hasattr(annotation, "from_dict"):
        def read(path: str, value: Any) -> Any:
            return annotation.from_dict(Doc(value, path))
    else:
        def read(path: str, value: Any) -> Any:
            return _json(value)
    nonempty = NONEMPTY in meta

    def checked(path: str, value: Any) -> Any:
        if value is None and null:
            return None
        found = read(path, value)
        if nonempty and not found:
            raise DocumentError(f"field {path} is empty")
        return found

    return checked if null or nonempty else read


def _items(item: Callable[[str, Any], Any], path: str, value: Any) -> tuple[Any, ...]:
    return tuple([item(f"{path}[{i}]", x) for i, x in enumerate(_list(path, value))])


def _fixed(kinds: list[Callable[[str, Any], Any]], path: str, value: Any) -> tuple[Any, ...]:
    items = _list(path, value)
    if len(kinds) != len(items):
        raise DocumentError(f"field {path} must be a list of {len(kinds)} items, got {value!r}")
    return tuple(k(f"{path}[{i}]", x) for i, (x, k) in enumerate(zip(items, kinds)))


def _mapping(kind: Any, keys: Keys | None, by_name: bool, path: str, value: Any) -> dict[str, Any]:
    mapping = Doc(value, path)
    for k in mapping:
        if keys is not None and k not in keys.keys:
            mapping.fail(k, f"is not a {keys.what}: the {keys.what}s are {', '.join(keys.keys)}")
    if by_name:
        return {k: kind.from_dict(k, Doc(x, mapping.at(k))) for k, x in mapping.items()}
    read = reader(kind)
    return {k: read(mapping.at(k), x) for k, x in mapping.items()}


def _list(path: str, value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    raise DocumentError(f"field {path} must be a list, got {value!r}")


def _json(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_json(x) for x in value)
    if isinstance(value, Mapping):
        return {k: _json(x) for k, x in value.items()}
    return value


#: The checks a plain annotation stands for.
_BY_TYPE: dict[Any, Check] = {int: Whole(minimum=None), float: Num(), str: Text(), bool: Flag()}


def read_fields(cls: type, document: Any, *, path: str = "") -> dict[str, Any]:
    """The arguments of dataclass ``cls`` read from its document (every field checked, :data:`OMIT`
    fields left out), the :class:`When` s of ``cls.WHEN`` and the ``DERIVED`` keys checked too."""
    d = Doc.of(document, path)
    out: dict[str, Any] = {}
    for s in specs(cls):
        if s.has(OMIT):
            continue
        if s.has(FLATTEN):
            out[s.name] = s.annotation(**read_fields(s.annotation, d))
            continue
        spread = next((m for m in s.meta if isinstance(m, Spread)), None)
        if spread is not None:
            own = {t.key for t in specs(cls) if t is not s} | set(derived(cls))
            for k in d:
                if k not in own and k not in spread.keys:
                    d.fail(k, f"is not a {spread.what}: the {spread.what}s are {', '.join(spread.keys)}")
            value_type = typing.get_args(s.annotation)[1]
            out[s.name] = {k: typed(d.at(k), d[k], value_type) for k in d if k not in own}
            continue
        value = d.get(s.key)
        if s.key not in d or (value is None and not s.nullable):
            if s.required and s.key not in d:
                d.fail(s.key, "is missing")
            if not s.required:
                if s.default is not MISSING:
                    out[s.name] = s.default
                continue
        out[s.name] = None if value is None and s.nullable else typed(d.at(s.key), value, s.full)
    for key, (annotation, required) in derived(cls).items():
        if key in d or required:
            d.read(key, typed, annotation=annotation)
    for when in getattr(cls, "WHEN", ()):
        if _matches(d.get(when.key), when.values):
            for key in when.require:
                if key not in d:
                    d.fail(key, "is missing")
                if d[key] is None:  # the field's own check refuses the null
                    typed(d.at(key), None, next(s.full for s in specs(cls) if s.key == key))
            if any(d.get(key) is not None for key in when.null):
                d.fail(when.null[0], when.message)
    return out


def _matches(value: Any, values: tuple[Any, ...]) -> bool:
    """Whether ``value`` is one of ``values`` (a boolean only ever matching a boolean)."""
    return any(v is value if isinstance(v, bool) or isinstance(value, bool) else v == value for v in values)
