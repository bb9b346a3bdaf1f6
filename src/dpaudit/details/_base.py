"""The base of every measure's details: their JSON form, how a document is recognised, and report hooks.

A measure's details (what it explains beside its value: a baseline, top cells, repairs) are a frozen
dataclass subclassing :class:`Details`, which gives it

* ``to_dict`` / ``from_dict``: the fields as plain JSON data and back (tuples travel as lists and
  come back as tuples; nested details and mappings are converted on the way out); ``from_dict`` checks
  every field against its annotation and declared constraints (:func:`dpaudit._fields.read_fields`,
  the definition the JSON Schema of ``docs/schema`` is generated from), so a damaged document is
  refused naming the field;
* ``released_in``: ``"exact"`` for curator-only details, ``"dp"`` for a private release, None when
  either (a saved result holding details of the other mode is refused);
* ``recognises(doc)``: whether a measure's JSON entry holds details of this type (its required
  fields are there), for documents whose measure is not registered;
* the **report hooks**, each with a generic default built on the *field table* (:func:`field_rows`,
  one row per entry of ``to_dict()``): ``text_lines`` (``str(result)``), ``report_lines`` (the
  command's view, plain when piped) and ``rich_lines`` (the same on a terminal, in rich markup), and two that the reports ask of every measure: ``mi_baseline`` (the non-private I(P;O|A) per criterion,
  shown beside the values; only U_MI^TVD has one) and ``explanation`` (an ε the details spent on a
  private release of their own, listed in the budget; only U_TC's named cells).

Renderers reach the hooks through :func:`hook`, so an object that only has ``to_dict`` (the least a
measure may return) is shown with the field table too. The HTML page's section on the details is drawn
by the renderer (:mod:`dpaudit.report._html_details`): the details below stay plain data and never
import the report; a new measure's details may still define ``html(result, m)`` for a section of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, fields
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypeVar, runtime_checkable

from dpaudit._document import Doc
from dpaudit._fields import LABELS, read_fields, typed

if TYPE_CHECKING:
    from dpaudit.results import MeasureResult

__all__ = ["Details", "MeasureDetails", "UnknownDetails", "field_rows", "hook", "mi_baseline", "Labels"]

#: A cell side's labels (column → value), checked as such in a document.
Labels = Annotated[Mapping[str, Any], LABELS]
_D = TypeVar("_D", bound="Details")
_SHOWN = 10  # field table: the items of a sequence printed before "… (N in all)"


def _fields(obj: Any) -> tuple[Field[Any], ...]:
    return fields(obj)


def _required(cls: type) -> list[Field[Any]]:
    """The fields of a details dataclass without a default."""
    return [f for f in _fields(cls) if f.default is MISSING and f.default_factory is MISSING]


def _plain_fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


class _PlainRecord:
    """A dataclass whose JSON form is its fields as they are, read back through its annotations."""

    def to_dict(self) -> dict[str, Any]:
        return _plain_fields(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Any:
        return cls(**read_fields(cls, doc))


@runtime_checkable
class MeasureDetails(Protocol):
    """What a measure may return as details: anything with a JSON form (best: a :class:`Details`)."""

    def to_dict(self) -> dict[str, Any]: ...


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict") and not isinstance(value, type):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


class Details:
    """Base of a measure's details (a frozen dataclass): JSON form and report hooks (module docstring)."""

    #: The mode of the results that hold these details: "exact" (curator-only), "dp" or None (either).
    released_in: ClassVar[str | None] = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain JSON data, merged into the measure's entry of the result's document."""
        return {k: _plain(v) for k, v in _plain_fields(self).items()}

    @classmethod
    def from_dict(cls: type[_D], doc: Mapping[str, Any]) -> _D:
        """The details of a measure's JSON entry, every field checked against its annotation and its
        declared constraints (:mod:`dpaudit._fields`; the inverse of :meth:`to_dict`)."""
        d = Doc.of(doc)
        try:
            return cls(**read_fields(cls, d))
        except (NameError, TypeError):  # an annotation that cannot be resolved here: read as JSON
            pass
        values = {}
        for f in _fields(cls):
            if f.name in d:
                values[f.name] = typed(d.at(f.name), d[f.name], Any)
            elif f in _required(cls):
                d.fail(f.name, "is missing")
        return cls(**values)

    @classmethod
    def recognised_keys(cls) -> tuple[str, ...]:
        """The keys whose presence in a measure's JSON entry says it holds details of this type (by
        default its required fields); the JSON Schema tells the details apart by the same keys."""
        return tuple(f.name for f in _required(cls))

    @classmethod
    def recognises(cls, doc: Mapping[str, Any]) -> bool:
        """Whether ``doc`` (a measure's JSON entry) holds details of this type: :meth:`recognised_keys`."""
        keys = cls.recognised_keys()
        return bool(keys) and all(k in doc for k in keys)

    # -- report hooks: override to show more than the field table ---------------------------------
    def mi_baseline(self) -> Sequence[Any] | None:
        """The non-private baseline I(P;O|A) per criterion (items with ``mi_nats``, ``mi_bits``), or None."""
        return None

    def explanation(self) -> tuple[str, float, str] | None:
        """What the details released privately on their own ε: (what, ε, mechanism), or None."""
        return None

    def text_lines(self, m: MeasureResult) -> list[str]:
        """Lines under the measure's row in ``str(result)``: the field table."""
        return [f"      {key}: {text}" for key, text in field_rows(self)]

    def report_lines(self, m: MeasureResult) -> list[str]:
        """Plain lines printed after the command's table (on a terminal, bold heading; piped, as they are):
        a heading ending in ``:`` and the field table."""
        return [f"{m.title} details:"] + [f"  {k}: {t}" for k, t in field_rows(self)]

    def rich_lines(self, m: MeasureResult) -> list[str]:
        """:meth:`report_lines` in rich markup, for the terminal: the heading bold, every line escaped."""
        from rich.markup import escape

        lines = hook(self, "report_lines")(m)  # an object without the hook: the field table
        if not lines:
            return []
        head, colon = (lines[0][:-1], ":") if lines[0].endswith(":") else (lines[0], "")
        return [f"[bold]{escape(head)}[/bold]{colon}"] + [escape(line) for line in lines[1:]]


def _text(value: Any, number: Callable[[Any], str]) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return str(value)
    if isinstance(value, (int, float)):
        return number(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_text(v, number)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        shown = [_text(v, number) for v in value[:_SHOWN]]
        more = f", … ({len(value)} in all)" if len(value) > _SHOWN else ""
        nested = any(isinstance(v, (Mapping, list, tuple)) for v in value)  # items of several parts
        return ("; " if nested else ", ").join(shown) + more
    return str(value)


def field_rows(details: Any, *, number: Callable[[Any], str] = "{:.6g}".format) -> list[tuple[str, str]]:
    """The generic field table of any details: ``(key, text)`` per entry of ``details.to_dict()``;
    numbers through ``number``, mappings as ``k=v``, sequences joined with ``, `` (``; `` between items
    of several parts), the first 10 items shown.

    Examples
    --------
    >>> field_rows(UnknownDetails({"gap": [0.5, 0.25], "per_block": [[1, 2], [3]], "cell": {"sex": "F"}}))
    [('gap', '0.5, 0.25'), ('per_block', '1, 2; 3'), ('cell', 'sex=F')]
    """
    return [(str(k), _text(v, number)) for k, v in details.to_dict().items()]


def hook(details: Any, name: str) -> Callable[..., Any]:
    """``details``' own report hook ``name`` (a method of :class:`Details`), or, for an object that is
    not a :class:`Details`, the generic one (the field table)."""
    own = getattr(details, name, None)
    return own if callable(own) else partial(getattr(Details, name), details)


def mi_baseline(details: Any) -> Sequence[Any] | None:
    """The MI baseline per criterion that ``details`` (or None) offer to the reports, if any."""
    return None if details is None else hook(details, "mi_baseline")()


@dataclass(frozen=True)
class UnknownDetails(Details):
    """Details in a document whose measure is not registered here and not recognised: kept as they
    are, so that they round-trip and every report shows them as a field table."""

    entries: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.entries)

