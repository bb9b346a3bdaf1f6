"""Views of the typed results: how ``str(result)`` and a notebook's ``_repr_html_`` reach a renderer.

The results (:mod:`dpaudit.results`, :mod:`dpaudit.mia.results`) are plain data at the bottom of the
package; the renderers (:mod:`dpaudit.report`) sit above them and read them. So a result does not
import its renderer: it asks this registry, owned by the bottom layer, for the function registered
for its type and a view name (``"text"``, ``"html"``). :mod:`dpaudit.report.views` registers the
built-in renderers when it is imported; a lookup that finds nothing imports :data:`RENDERERS` (that
module, by name) once and looks again — the way pandas finds its plotting backend. A user may
register a view of their own for any type (``register_view(AuditResult, "text", my_render)``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["RENDERERS", "register_view", "render_view"]

#: The module whose import registers the built-in views.
RENDERERS = "dpaudit.report.views"

_VIEWS: dict[tuple[type, str], Callable[[Any], str]] = {}


def register_view(cls: type, view: str, render: Callable[[Any], str]) -> None:
    """Show instances of ``cls`` (and its subclasses) with ``render`` for ``view``; replaces an earlier one."""
    _VIEWS[(cls, view)] = render


def _find(obj: Any, view: str) -> Callable[[Any], str] | None:
    return next((_VIEWS[(c, view)] for c in type(obj).__mro__ if (c, view) in _VIEWS), None)


def render_view(obj: Any, view: str) -> str:
    """``obj`` rendered by the function registered for its type (nearest in its MRO) and ``view``.

    Examples
    --------
    >>> class Note:
    ...     text = "hello"
    >>> register_view(Note, "text", lambda n: n.text.upper())
    >>> render_view(Note(), "text")
    'HELLO'
    """
    render = _find(obj, view)
    if render is None:
        importlib.import_module(RENDERERS)
        render = _find(obj, view)
    if render is None:
        raise TypeError(f"no {view!r} view is registered for {type(obj).__name__}")
    return render(obj)
