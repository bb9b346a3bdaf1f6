"""The registry of output formats: a name, the file suffixes that choose it, and one ``render`` function.

``dpaudit fairness --save FILE``, ``dpaudit mia evaluate --save FILE`` and ``dpaudit report RESULT.json
--save FILE`` pick the format by FILE's suffix (:func:`format_for`) and call its ``render`` with the typed
result: an :class:`~dpaudit.results.AuditResult` or a :class:`~dpaudit.mia.results.MiaReport`. A format
that renders the two differently dispatches inside its own module (as :func:`dpaudit.report.text.render`
and :func:`dpaudit.report.html.render_html` do).

A new format is one module with a ``render(result) -> str`` and one :func:`register_format` call,
here in :data:`_BUILTIN` or from anywhere before the command runs::

    register_format(Format("markdown", (".md",), "Markdown report", render_markdown))
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpaudit._errors import DataError, DPAuditError

__all__ = ["Format", "FORMATS", "register_format", "format_for", "describe_formats"]


@dataclass(frozen=True)
class Format:
    """An output format: its ``name``, the lower-case file ``suffixes`` that choose it (``".html"``),
    a ``description`` (what the command's ``wrote FILE (…)`` line and its help call the file) and
    ``render(result) -> str``, the whole document of an audit or of an MIA evaluation."""

    name: str
    suffixes: tuple[str, ...]
    description: str
    render: Callable[[Any], str]


#: The registered formats by name, in registration order (the order the help texts list them in).
FORMATS: dict[str, Format] = {}


def register_format(fmt: Format) -> Format:
    """Add ``fmt`` to :data:`FORMATS`; refused (:class:`DPAuditError`) when its name or one of its
    suffixes is taken, or a suffix is not a lower-case ``.something``."""
    if fmt.name in FORMATS:
        raise DPAuditError(f"a format named {fmt.name!r} is already registered")
    if not fmt.suffixes:
        raise DPAuditError(f"format {fmt.name!r} needs at least one file suffix")
    taken = {s: f.name for f in FORMATS.values() for s in f.suffixes}
    for suffix in fmt.suffixes:
        if not (suffix.startswith(".") and len(suffix) > 1 and suffix == suffix.lower()):
            raise DPAuditError(f"format {fmt.name!r}: a suffix is a lower-case '.name', not {suffix!r}")
        if suffix in taken:
            raise DPAuditError(f"format {fmt.name!r}: the suffix {suffix} already selects format {taken[suffix]!r}")
    FORMATS[fmt.name] = fmt
    return fmt


def format_for(path: str | Path) -> Format:
    """The registered format whose suffix ``path``'s name ends with (case-insensitive; the longest
    such suffix wins), else one :class:`DataError` naming the known suffixes."""
    name = Path(path).name.lower()
    matches = [(len(s), f) for f in FORMATS.values() for s in f.suffixes if name.endswith(s) and len(name) > len(s)]
    if not matches:
        raise DataError(f"cannot tell the format of {str(path)!r} from its name; end it in one of the known suffixes: "
                        f"{describe_formats()}")
    return max(matches, key=lambda m: m[0])[1]


def describe_formats() -> str:
    """The registered suffixes with their formats, e.g. ``.txt (text report), .json (JSON document), …``."""
    return ", ".join(f"{'/'.join(f.suffixes)} ({f.description})" for f in FORMATS.values())


def _lazy(target: str) -> Callable[[Any], str]:
    """``module:function`` imported when first called: listing the formats imports no renderer."""
    module, _, attr = target.partition(":")

    def render(result: Any) -> str:
        fn: Callable[[Any], str] = getattr(importlib.import_module(module), attr)
        return fn(result)

    render.__qualname__ = render.__name__ = attr
    return render


#: The formats dpaudit ships: (name, suffixes, description, renderer).
_BUILTIN = (
    ("text", (".txt",), "text report", "dpaudit.report.text:render"),
    ("markdown", (".md",), "text report in a Markdown code block", "dpaudit.report.text:render_markdown"),
    ("json", (".json",), "JSON document", "dpaudit.report.json:render_json"),
    ("html", (".html", ".htm"), "HTML report", "dpaudit.report.html:render_html"),
)

for _name, _suffixes, _description, _target in _BUILTIN:
    register_format(Format(_name, _suffixes, _description, _lazy(_target)))
