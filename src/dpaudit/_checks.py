"""The constraints of one JSON value of a result document, each readable and writable as JSON Schema.

A :class:`Check` is the :data:`typing.Annotated` metadata of a result dataclass's field
(:mod:`dpaudit._fields`): :meth:`Check.read` checks a value through :mod:`dpaudit._document` (the
message names the field's path), :meth:`Check.schema` says the same in JSON Schema (draft 2020-12).
Numbers that JSON cannot hold are written ``"inf"``, ``"-inf"``, ``"nan"`` (:func:`dpaudit.report.json.render_json`),
so a :class:`Num` that admits them admits those strings in its schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dpaudit import _document as doc
from dpaudit._document import MAX_WHOLE, Doc, DocumentError

__all__ = ["Check", "Whole", "Num", "Rate", "Unit", "Text", "Flag", "Choice", "Coded", "Labels", "LABELS", "Pair",
           "Json", "Items", "Keyed"]


class Check:
    """A constraint on one JSON value: :meth:`read` checks it (raising DocumentError at ``path``),
    :meth:`schema` says the same in JSON Schema."""

    def read(self, path: str, value: Any) -> Any:
        raise NotImplementedError

    def schema(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(eq=False, repr=False)  # cheap to define: compared by identity, never changed
class Whole(Check):
    """An integer (not a boolean) within [minimum, maximum]."""

    minimum: int | None = 0
    maximum: int | None = MAX_WHOLE

    def read(self, path: str, value: Any) -> int:
        return doc.whole(path, value, minimum=self.minimum, maximum=self.maximum)

    def schema(self) -> dict[str, Any]:
        bounds = {"minimum": self.minimum, "maximum": self.maximum}
        return {"type": "integer", **{k: b for k, b in bounds.items() if b is not None}}


@dataclass(eq=False, repr=False)
class Num(Check):
    """A number within the bounds; ±inf (written ``"inf"``/``"-inf"``) only when not ``finite`` and
    outside no bound, NaN (``"nan"``) only when ``nan``."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    finite: bool = True
    nan: bool = False

    def read(self, path: str, value: Any) -> float:
        return doc.number(path, value, low=self.low, high=self.high, low_open=self.low_open, high_open=self.high_open,
                          finite=self.finite, nan=self.nan)

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "number"}
        if self.low is not None:
            out["exclusiveMinimum" if self.low_open else "minimum"] = self.low
        if self.high is not None:
            out["exclusiveMaximum" if self.high_open else "maximum"] = self.high
        special = [s for s, ok in (("inf", self.high is None), ("-inf", self.low is None)) if ok and not self.finite]
        special += ["nan"] if self.nan else []
        return {"anyOf": [out, {"enum": special}]} if special else out


def Rate() -> Num:  # noqa: N802 - reads as a kind of value
    """A rate or a share: a number in [0, 1]."""
    return Num(0.0, 1.0)


@dataclass(eq=False, repr=False)
class Unit(Check):
    """A number strictly between 0 and 1 (α, a confidence level)."""

    def read(self, path: str, value: Any) -> float:
        return doc.unit(path, value)

    def schema(self) -> dict[str, Any]:
        return {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}


@dataclass(eq=False, repr=False)
class Text(Check):
    def read(self, path: str, value: Any) -> str:
        return doc.text(path, value)

    def schema(self) -> dict[str, Any]:
        return {"type": "string"}


@dataclass(eq=False, repr=False)
class Flag(Check):
    def read(self, path: str, value: Any) -> bool:
        return doc.flag(path, value)

    def schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


@dataclass(eq=False, repr=False)
class Choice(Check):
    """One of ``choices``."""

    choices: tuple[Any, ...]

    def read(self, path: str, value: Any) -> Any:
        return doc.choice(path, value, self.choices)

    def schema(self) -> dict[str, Any]:
        return {"enum": list(self.choices)}


@dataclass(eq=False, repr=False)
class Coded(Choice):
    """One of ``choices`` in the document, its index (as a bool for two choices) in the dataclass."""

    def read(self, path: str, value: Any) -> Any:
        found = self.choices.index(super().read(path, value))
        return bool(found) if len(self.choices) == 2 else found


@dataclass(eq=False, repr=False)
class Labels(Check):
    """A cell side's labels: an object of column → value (a string, number, boolean or null); with
    ``count``, also a ``count`` ≥ 0 (a repair's target)."""

    count: bool = False

    def read(self, path: str, value: Any) -> dict[str, Any]:
        found = doc.labels(path, value)
        if self.count:
            Doc(found, path).read("count", doc.number, low=0)
        return found

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object",
                               "additionalProperties": {"type": ["string", "number", "boolean", "null"]}}
        if self.count:
            out |= {"properties": {"count": {"type": "number", "minimum": 0}}, "required": ["count"]}
        return out


@dataclass(eq=False, repr=False)
class Pair(Check):
    """An interval: two numbers (each through ``number``), low ≤ high."""

    number: Num = Num()

    def read(self, path: str, value: Any) -> tuple[float, float]:
        low, high = doc.items(path, value, self.number.read, length=2)
        if not low <= high:
            raise DocumentError(f"field {path} must be an interval, low <= high, got {[low, high]!r}")
        return low, high

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.number.schema(), "minItems": 2, "maxItems": 2}


@dataclass(eq=False, repr=False)
class Json(Check):
    """Any JSON object, kept as it is (``object``), or any JSON value."""

    object: bool = True

    def read(self, path: str, value: Any) -> Any:
        return dict(Doc(value, path)) if self.object else value

    def schema(self) -> dict[str, Any]:
        return {"type": "object"} if self.object else {}


LABELS = Labels()


@dataclass(eq=False, repr=False)
class Items(Check):
    """A list of ``length`` items (any number when None), each through ``item``."""

    item: Check
    length: int | None = None

    def read(self, path: str, value: Any) -> tuple[Any, ...]:
        return doc.items(path, value, self.item.read, length=self.length)

    def schema(self) -> dict[str, Any]:
        size = {} if self.length is None else {"minItems": self.length, "maxItems": self.length}
        return {"type": "array", "items": self.item.schema(), **size}


@dataclass(eq=False, repr=False)
class Keyed(Check):
    """An object whose named keys are checked, others kept as they are: ``fields()`` gives key →
    (check, required, nullable) (a function, so that it may import what the checks need late)."""

    fields: Callable[[], Mapping[str, tuple[Check, bool, bool]]]

    def read(self, path: str, value: Any) -> dict[str, Any]:
        o = Doc(value, path)
        for key, (check, required, null) in self.fields().items():
            if key not in o and required:
                o.fail(key, "is missing")
            if key in o and not (o[key] is None and null):
                check.read(o.at(key), o[key])
        return dict(o)

    def schema(self) -> dict[str, Any]:
        known = self.fields()
        props = {k: {"anyOf": [c.schema(), {"type": "null"}]} if null else c.schema() for k, (c, _, null) in known.items()}
        return {"type": "object", "properties": props, "required": [k for k, (_, req, _) in known.items() if req]}
