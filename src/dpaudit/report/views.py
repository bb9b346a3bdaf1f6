"""The built-in views of the typed results: ``str(result)`` (``text``) and a notebook's ``_repr_html_``
(``html``) of an :class:`~dpaudit.results.AuditResult` and an :class:`~dpaudit.mia.results.MiaReport`.

Importing this module registers them (:func:`dpaudit._views.register_view`); :func:`dpaudit._views.render_view`
imports it on the first lookup that finds no view (:data:`dpaudit._views.RENDERERS`), so a result shown
for the first time loads its renderers then, and ``import dpaudit.report`` loads none.
"""

from collections.abc import Callable
from importlib import import_module
from typing import Any

from dpaudit._views import register_view
from dpaudit.mia.results import MiaReport
from dpaudit.results import AuditResult


def _on_first_use(module: str, name: str) -> Callable[[Any], str]:
    """``module.name``, imported when a result is first shown that way: ``str(report)`` of an MIA report
    loads its text renderer, not the audit's HTML page with the measures behind it (0.1 s of a
    ``dpaudit mia evaluate`` run)."""

    def render(result: Any) -> str:
        function: Callable[[Any], str] = getattr(import_module(module), name)
        return function(result)

    render.__name__ = render.__qualname__ = name
    return render


register_view(AuditResult, "text", _on_first_use("dpaudit.report.text", "render_audit"))
register_view(AuditResult, "html", _on_first_use("dpaudit.report.notebook", "render_notebook"))
register_view(MiaReport, "text", _on_first_use("dpaudit.report.text", "render_mia"))
register_view(MiaReport, "html", _on_first_use("dpaudit.report.html_mia", "render_mia_fragment"))

__all__: list[str] = []
