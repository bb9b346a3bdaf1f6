"""Reading a saved result document back (``--json``), and the renderers' argument check.

Every ``from_dict`` of :mod:`dpaudit.results`, :mod:`dpaudit.details` and :mod:`dpaudit.mia.results`
reads the fields its dataclass declares (:func:`dpaudit._fields.read_fields`, whose checks,
:mod:`dpaudit._checks`, call the functions below) through :class:`Doc`: a JSON object together with its place in the document (``measures.tvd``),
which hands out each field checked for the type and range the reports rely on (an integer n ≥ 0, a
rate in [0, 1], an interval of two numbers, low ≤ high, a mode among the known ones, …). Anything else
raises :class:`DocumentError` (a :class:`~dpaudit.DataError`) that names the field's path and says to
save the result again, so an edited or truncated document never reaches a renderer, where it would
fail with an ``AttributeError`` or, worse, print a claim the run did not make.

:func:`renders` wraps a renderer: it refuses an argument of the wrong type with a
:class:`~dpaudit.DPAuditError` saying what the renderer takes, and turns an exception raised while
rendering a result whose parts contradict each other into a :class:`~dpaudit.DataError`.
"""

from __future__ import annotations

import functools
import math
import numbers
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, NoReturn, TypeVar, overload

from dpaudit import _validation as v
from dpaudit._errors import DataError, DPAuditError

__all__ = ["Doc", "DocumentError", "HINT", "MAX_WHOLE", "whole", "number", "rate", "unit", "flag", "text", "choice", "labels",
           "obj", "items", "expect", "renders"]

#: What every :class:`DocumentError` tells the reader to do.
HINT = "save the result again with --json"
_LONGEST = 300  # characters of a message before the offending value is cut short
#: The largest whole number a document may hold by default (rows, records, models, counts): the
#: largest integer a float64 holds exactly, far above any real count, below what numpy must convert.
MAX_WHOLE = 2**53


class DocumentError(DataError):
    """A saved result that does not hold what a result must: ``saved result: <problem>; <HINT>``."""

    def __init__(self, problem: str) -> None:
        problem = problem if len(problem) <= _LONGEST else problem[:_LONGEST] + " …"
        super().__init__(f"saved result: {problem}; {HINT}")


def _name(path: str) -> str:
    return f"field {path}" if path else "the document"


# -- checks of one value at ``path``: each returns it in its canonical type or raises DocumentError ----

def whole(path: str, value: Any, *, minimum: int | None = 0, maximum: int | None = MAX_WHOLE) -> int:
    """An integer (not a boolean) within [minimum, maximum]."""
    return v.whole_number(_name(path), value, minimum=minimum, maximum=maximum, error=DocumentError)


def number(path: str, value: Any, *, low: float | None = None, high: float | None = None, low_open: bool = False,
           high_open: bool = False, finite: bool = True, nan: bool = False) -> float:
    """A number within the bounds; ±inf only when not ``finite``, NaN only when ``nan`` — as floats or as
    the strings ``"inf"``, ``"-inf"``, ``"nan"`` that JSON documents carry them as (``render_json``)."""
    if not finite and isinstance(value, str) and value in _NON_FINITE:
        value = float(value)
    if not finite and isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isfinite(value):
        x = float(value)
        if (math.isnan(x) and nan) or (math.isinf(x) and (low is None or x > low) and (high is None or x < high)):
            return x
    hint = "" if finite else " (or inf, nan)" if nan else " (or inf)"
    return v.number(_name(path), value, low=low, high=high, low_open=low_open, high_open=high_open,
                    hint=hint, error=DocumentError)


_NON_FINITE = ("inf", "-inf", "nan")


def rate(path: str, value: Any) -> float:
    """A rate or a share: a number in [0, 1]."""
    return number(path, value, low=0.0, high=1.0)


def unit(path: str, value: Any) -> float:
    """A number strictly between 0 and 1 (α, a confidence level)."""
    return v.unit_interval(_name(path), value, error=DocumentError)


def flag(path: str, value: Any) -> bool:
    """true or false."""
    return v.flag(_name(path), value, error=DocumentError)


def text(path: str, value: Any) -> str:
    """A string."""
    if isinstance(value, str):
        return value
    raise DocumentError(f"{_name(path)} must be a string, got {value!r}")


def choice(path: str, value: Any, choices: tuple[Any, ...]) -> Any:
    """One of ``choices``."""
    return v.one_of(_name(path), value, choices, error=DocumentError)


def labels(path: str, value: Any) -> dict[str, Any]:
    """A cell side's labels: an object of column → value (a string, number, boolean or null)."""
    found = Doc(value, path)
    for key, item in found.items():
        if not (item is None or isinstance(item, (str, int, float, bool))):
            raise DocumentError(f"{_name(found.at(key))} must be a value of the data (a string, number, "
                                f"boolean or null), got {item!r}")
    return dict(found.items())


def obj(path: str, value: Any) -> Doc:
    """A nested JSON object, as a :class:`Doc` at ``path``."""
    return Doc(value, path)


def _list(path: str, value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    raise DocumentError(f"{_name(path)} must be a list, got {value!r}")


def items(path: str, value: Any, check: Callable[..., Any], *, length: int | None = None,
          **options: Any) -> tuple[Any, ...]:
    """A list (of ``length`` items, when given) whose every item passes ``check(path[i], item, **options)``."""
    found = _list(path, value)
    if length is not None and len(found) != length:
        raise DocumentError(f"{_name(path)} must be a list of {length} items, got {value!r}")
    return tuple(check(f"{path}[{i}]", x, **options) for i, x in enumerate(found))


_T = TypeVar("_T")
_MISSING = object()


class Doc(Mapping[str, Any]):
    """A JSON object of a saved result and its ``path`` in the document; read its fields checked.

    Each reader takes the key, a check (above) and its options; ``optional=True`` turns a missing key
    or a null into None. Reading a nested object or list of objects gives :class:`Doc` s whose path
    extends this one's, so every message names the field, e.g. ``measures.repair.per_block[3].upper``.

    Examples
    --------
    >>> d = Doc({"n": 5, "interval": [0.1]})
    >>> d.read("n", whole)
    5
    >>> d.many("interval", number, length=2)
    Traceback (most recent call last):
    ...
    dpaudit._document.DocumentError: saved result: field interval must be a list of 2 items, got [0.1]; save the result again with --json
    """

    __slots__ = ("_data", "path")

    def __init__(self, data: Any, path: str = "") -> None:
        if isinstance(data, Doc):
            data, path = data._data, path or data.path
        if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
            raise DocumentError(f"{_name(path)} must be a JSON object, got {data!r}")
        self._data: Mapping[str, Any] = data
        self.path = path

    @classmethod
    def of(cls, doc: Any, path: str = "") -> Doc:
        """``doc`` itself when it is a :class:`Doc` (keeping its path), else ``doc`` at ``path`` (the
        document's root by default)."""
        return doc if isinstance(doc, Doc) else cls(doc, path)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def at(self, key: str | int) -> str:
        """The path of field ``key`` (a name, or an index of a list)."""
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, problem: str) -> NoReturn:
        """Refuse field ``key``: ``field <path> <problem>`` (fields that contradict each other)."""
        raise DocumentError(f"{_name(self.at(key))} {problem}")

    def without(self, keys: frozenset[str]) -> Doc:
        """This object without ``keys``, at the same path."""
        return Doc({k: x for k, x in self._data.items() if k not in keys}, self.path)

    def _value(self, key: str, optional: bool) -> Any:
        found = self._data.get(key, _MISSING)
        if found is _MISSING and not optional:
            raise DocumentError(f"{_name(self.at(key))} is missing")
        return None if found is _MISSING else found

    def read(self, key: str, check: Callable[..., _T], *, optional: bool = False, **options: Any) -> Any:
        """Field ``key`` through ``check(path, value, **options)``; None when optional and missing or null."""
        value = self._value(key, optional)
        return None if value is None and optional else check(self.at(key), value, **options)

    @overload
    def many(self, key: str, check: Callable[..., Any], *, optional: Literal[False] = False,
             length: int | None = None, **options: Any) -> tuple[Any, ...]: ...

    @overload
    def many(self, key: str, check: Callable[..., Any], *, optional: bool, length: int | None = None,
             **options: Any) -> tuple[Any, ...] | None: ...

    def many(self, key: str, check: Callable[..., Any], *, optional: bool = False, length: int | None = None,
             **options: Any) -> tuple[Any, ...] | None:
        """Field ``key``: a list (of ``length`` items, when given), every item through ``check``."""
        value = self._value(key, optional)
        return None if value is None and optional else items(self.at(key), value, check, length=length, **options)

    @overload
    def doc(self, key: str) -> Doc: ...

    @overload
    def doc(self, key: str, *, optional: bool) -> Doc | None: ...

    def doc(self, key: str, *, optional: bool = False) -> Doc | None:
        """Field ``key``: a nested object."""
        value = self._value(key, optional)
        return None if value is None and optional else Doc(value, self.at(key))

    def docs(self, key: str) -> tuple[Doc, ...]:
        """Field ``key``: a list of objects."""
        return self.many(key, obj)

    def named(self, key: str, *, nonempty: bool = False) -> dict[str, Doc]:
        """Field ``key``: an object whose every value is an object (by name)."""
        found = self.doc(key)
        if nonempty and not found:
            self.fail(key, "is empty")
        return {name: Doc(x, found.at(name)) for name, x in found.items()}


# -- renderers --------------------------------------------------------------------------------------

_F = TypeVar("_F", bound=Callable[..., str])
#: What a renderer given a result whose parts contradict each other raises from inside.
_INCONSISTENT = (ArithmeticError, AttributeError, IndexError, KeyError, TypeError, ValueError)


def expect(value: Any, kind: type, function: str, takes: str = "") -> None:
    """Refuse an argument of ``function`` that is not a ``kind``: ``<function> takes <takes>, got <type>``
    (``takes`` by default: ``a``/``an`` and the class's name).

    Examples
    --------
    >>> expect(None, dict, "render")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: render takes a dict, got NoneType
    """
    if not isinstance(value, kind):
        name = kind.__name__
        takes = takes or ("an " if name[0] in "AEIOU" else "a ") + name
        raise DPAuditError(f"{function} takes {takes}, got {type(value).__name__}")


def renders(kind: type) -> Callable[[_F], _F]:
    """Decorate a renderer of one argument: :func:`expect` it to be a ``kind``; an exception from inside
    (a result built by hand or read from an edited file whose parts contradict each other) becomes one
    :class:`~dpaudit.DataError` naming it."""

    def decorate(render: _F) -> _F:
        @functools.wraps(render)
        def guarded(result: Any, *args: Any, **kwargs: Any) -> str:
            expect(result, kind, render.__name__)
            try:
                return render(result, *args, **kwargs)
            except DPAuditError:
                raise
            except _INCONSISTENT as exc:
                raise DataError(f"{render.__name__}: the result's parts do not fit together ({type(exc).__name__}: "
                                f"{exc}); if it was read from a file, {HINT}") from None

        return typing.cast(_F, guarded)

    return decorate
