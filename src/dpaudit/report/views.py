"""The built-in views of the typed results: ``str(result)`` (``text``) and a notebook's ``_repr_html_``
(``html``) of an :class:`~dpaudit.results.AuditResult` and an :class:`~dpaudit.mia.results.MiaReport`.

Importing this module registers them (:func:`dpaudit._views.register_view`); :func:`dpaudit._views.render_view`
imports it on the first lookup that finds no view (:data:`dpaudit._views.RENDERERS`), so a result shown
for the first time loads its renderers then, and ``import dpaudit.report`` loads none.
"""

from dpaudit._views import register_view
from dpaudit.mia.results import MiaReport
from dpaudit.report.html import render_audit_fragment
from dpaudit.report.html_mia import render_mia_fragment
from dpaudit.report.text import render_audit, render_mia
from dpaudit.results import AuditResult

register_view(AuditResult, "text", render_audit)
register_view(AuditResult, "html", render_audit_fragment)
register_view(MiaReport, "text", render_mia)
register_view(MiaReport, "html", render_mia_fragment)

__all__: list[str] = []
