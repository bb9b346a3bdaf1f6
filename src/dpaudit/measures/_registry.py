"""The measure registry: names → measure classes, and the options they take by field name.

:func:`register` adds a :class:`~dpaudit.measures.Measure` subclass (``dpaudit.measures`` registers
the built-in ones); from then on ``audit(..., measures=["name"], option=...)``, ``dpaudit fairness -m
name --option option=VALUE``, the JSON round trip, every report and ``dpaudit selfcheck`` know it.
A measure's options are its dataclass fields: :func:`option_fields` routes a keyword to every
measure that takes it, :func:`option_value` types a command-line value by the field's annotation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Iterator
from typing import Any, Literal, Union

from dpaudit._errors import DPAuditError
from dpaudit.details import READERS, Details
from dpaudit.measures._base import Measure
from dpaudit.results import ENTRY_KEYS

__all__ = ["MEASURES", "RESERVED", "register", "unregister", "registered", "measure_from", "option_fields",
           "option_value", "options_doc"]

#: The registered measures by name, in registration order (the order of the reports).
MEASURES: dict[str, type[Measure]] = {}
#: The keywords of :func:`dpaudit.audit` itself: no measure option may take one of these names.
RESERVED = frozenset({"data", "criteria", "measures", "epsilon", "schema", "budget", "split", "seed", "engine",
                      "progress"})


def register(cls: type[Measure]) -> type[Measure]:
    """Register a measure class under its ``name`` (usable as a class decorator); returns the class.

    Refused: a class that is not a frozen dataclass subclass of :class:`Measure` with the class
    attributes every measure states, a name already taken, an option named like one of
    :func:`dpaudit.audit`'s own keywords, and details whose fields would collide with the keys of the
    measure's JSON entry.
    """
    if not (isinstance(cls, type) and issubclass(cls, Measure) and dataclasses.is_dataclass(cls)):
        raise DPAuditError(f"a measure must be a dataclass subclass of dpaudit.measures.Measure, got {cls!r}")
    missing = [a for a in ("name", "title", "reference", "sensitivity_formula", "upper", "zero_iff_independent")
               if not hasattr(cls, a)]
    if missing:
        raise DPAuditError(f"measure {cls.__name__} does not state {', '.join(missing)}")
    if not isinstance(cls.name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", cls.name):
        raise DPAuditError(f"measure name must be lower-case letters, digits and _, got {cls.name!r}")
    if cls.name in MEASURES:
        raise DPAuditError(f"measure {cls.name!r} is already registered ({MEASURES[cls.name].__name__})")
    clash = sorted({f.name for f in dataclasses.fields(cls)} & RESERVED)
    if clash:
        raise DPAuditError(f"measure {cls.name}: option {', '.join(clash)} is a keyword of audit() itself; rename it")
    for details in cls.details_types:
        if not (issubclass(details, Details) and dataclasses.is_dataclass(details)):
            raise DPAuditError(f"measure {cls.name}: details type {details!r} is not a dataclass subclass of "
                               "dpaudit.details.Details")
        taken = sorted({f.name for f in dataclasses.fields(details)} & ENTRY_KEYS)
        if taken:
            raise DPAuditError(f"measure {cls.name}: details field {', '.join(taken)} collides with the keys of the "
                               "measure's JSON entry; rename it")
    MEASURES[cls.name] = cls
    READERS[cls.name] = cls.details_from_dict
    return cls


def unregister(name: str) -> type[Measure]:
    """Remove a registered measure; returns its class."""
    if name not in MEASURES:
        raise DPAuditError(f"no measure {name!r} is registered")
    READERS.pop(name, None)
    return MEASURES.pop(name)


@contextlib.contextmanager
def registered(cls: type[Measure]) -> Iterator[type[Measure]]:
    """``with registered(MyMeasure): ...`` — the measure is registered inside the block only."""
    register(cls)
    try:
        yield cls
    finally:
        unregister(cls.name)


def measure_from(spec: str | Measure, **options: Any) -> Measure:
    """A measure instance from a registered name (configured by ``options``) or an instance.

    Options that the named measure does not take are ignored, so one set of keyword options can
    configure several names (the command line's flags); an instance is returned as it is and must not
    be combined with options.

    Examples
    --------
    >>> measure_from("tc", k=10, semantics="bag")
    TopContribution(k=10, cells='domain', name_cells=None)
    >>> measure_from("nope")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: unknown measure 'nope'; choose from: tvd, tc, repair
    """
    if isinstance(spec, Measure):
        return spec
    if not isinstance(spec, str) or spec not in MEASURES:
        raise DPAuditError(f"unknown measure {spec!r}; choose from: {', '.join(MEASURES)}")
    cls = MEASURES[spec]
    accepted = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in options.items() if k in accepted})  # None too: the measure checks it


def option_fields() -> dict[str, list[tuple[type[Measure], dataclasses.Field[Any]]]]:
    """Every option of the registered measures by name: the measures that take it, with the field.

    Examples
    --------
    >>> sorted(option_fields())
    ['cells', 'k', 'name_cells', 'semantics', 'time_limit', 'work_limit']
    >>> [cls.name for cls, _ in option_fields()["k"]]
    ['tc']
    """
    out: dict[str, list[tuple[type[Measure], dataclasses.Field[Any]]]] = {}
    for cls in MEASURES.values():
        for f in dataclasses.fields(cls):
            out.setdefault(f.name, []).append((cls, f))
    return out


def _field_type(cls: type[Measure], name: str) -> Any:
    try:
        return typing.get_type_hints(cls)[name]
    except Exception as exc:  # an annotation that cannot be evaluated here
        raise DPAuditError(f"option {name} of measure {cls.name}: cannot read its type ({exc})") from None


def _convert(name: str, kind: Any, text: str) -> Any:
    """``text`` as a value of type ``kind`` (int, float, str, bool, Literal[...], or X | None)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (Union, types.UnionType) and type(None) in args:
        if text.strip().lower() == "none":
            return None
        rest = [a for a in args if a is not type(None)]
        return _convert(name, rest[0] if len(rest) == 1 else Union[tuple(rest)], text)  # noqa: UP007
    if origin is Literal:
        for choice in args:  # typed as the choice it spells; the measure checks which are allowed
            if str(choice) == text:
                return choice
        return text
    if kind is bool:
        words = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
        if text.strip().lower() in words:
            return words[text.strip().lower()]
        raise DPAuditError(f"option {name} takes true or false, got {text!r}")
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            raise DPAuditError(f"option {name} takes {'an integer' if kind is int else 'a number'}, "
                               f"got {text!r}") from None
    if kind is str:
        return text
    raise DPAuditError(f"option {name} has type {kind}, which cannot be given as text; pass a configured measure")


def option_value(name: str, text: str) -> Any:
    """A measure option given as text (``dpaudit fairness --option NAME=VALUE``), typed by the field's
    annotation in the first registered measure that takes it (int, float, str, bool, a Literal of
    choices, or any of these or None); the measure itself then checks its range.

    Examples
    --------
    >>> option_value("k", "10"), option_value("work_limit", "2.5"), option_value("name_cells", "none")
    (10, 2.5, None)
    >>> option_value("k", "ten")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: option k takes an integer, got 'ten'
    """
    takers = option_fields().get(name)
    if not takers:
        raise DPAuditError(f"unknown option {name!r}; the registered measures take: {', '.join(sorted(option_fields()))}")
    cls = takers[0][0]
    return _convert(name, _field_type(cls, name), text)


def _parameter_docs(cls: type) -> dict[str, str]:
    """The first sentence of each entry of a numpydoc ``Parameters`` section of the class docstring."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    match = re.search(r"^Parameters\n-+\n(.*?)(?:\n\n(?=\S[^\n]*\n-+\n)|\Z)", doc, re.S | re.M)
    out: dict[str, str] = {}
    if match:
        for name, body in re.findall(r"^(\w+) : [^\n]*\n((?:[ \t]+[^\n]*\n?)*)", match.group(1), re.M):
            text = " ".join(body.split())
            out[name] = text.split(". ")[0].rstrip(".") + "." if text else ""
    return out


def options_doc(indent: str = "        ") -> str:
    """One line per option of the registered measures: name, measures, type, default and what it does
    (from the class docstrings) — the part of :func:`dpaudit.audit`'s docstring written from the registry."""
    lines = []
    for name, takers in option_fields().items():
        parts = []
        for cls, f in takers:
            default = f.default if f.default is not dataclasses.MISSING else None
            what = _parameter_docs(cls).get(name, "")
            parts.append(f":class:`~dpaudit.measures.{cls.__name__}` ({cls.title}), default {default!r}"
                         + (f": {what}" if what else ""))
        lines.append(f"{indent}- ``{name}`` — " + "; ".join(parts))
    return "\n".join(lines)
