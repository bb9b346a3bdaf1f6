"""Renderers of the typed results: one module per output format, reading only :mod:`dpaudit.results`.

* :mod:`dpaudit.report.text` — plain text (``str(result)``; format ``text``, ``.txt``);
* :mod:`dpaudit.report.rich` — the terminal tables of the ``dpaudit`` command;
* :mod:`dpaudit.report.json` — one JSON document (``--json``; format ``json``, ``.json``), and reading it back;
* :mod:`dpaudit.report.html` and :mod:`dpaudit.report.html_mia` — one self-contained page (``--html``;
  format ``html``, ``.html``/``.htm``).

The files a command writes go through the format registry (:mod:`dpaudit.report._formats`):
:data:`FORMATS` maps a name to a :class:`Format` (name, file suffixes, description, ``render(result)
-> str`` taking an :class:`~dpaudit.results.AuditResult` or a :class:`~dpaudit.mia.results.MiaReport`),
and :func:`format_for` picks one by a file's suffix. ``dpaudit fairness``, ``dpaudit mia evaluate`` and
``dpaudit report`` write any registered format with ``--save FILE``. A new output format is therefore
one module here with its ``render`` and one :func:`register_format` call (the ``_BUILTIN`` table of
``_formats.py``, or the caller's own code); no command changes.

Importing :mod:`dpaudit.report.views` registers the views that ``str(result)`` and a notebook's
``_repr_html_`` use (:mod:`dpaudit._views` imports it on the first lookup): the results never import
their renderers. Importing this package itself loads only the format registry, which names each
renderer by ``module:function``: a command's ``--save`` help lists the formats without loading one.
"""

from dpaudit.report._formats import FORMATS, Format, describe_formats, format_for, register_format

__all__ = ["FORMATS", "Format", "register_format", "format_for", "describe_formats"]
