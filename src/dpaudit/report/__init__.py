"""Renderers of the typed results: one module per output format, reading only :mod:`dpaudit.results`.

* :mod:`dpaudit.report.text` — plain text (``str(result)``);
* :mod:`dpaudit.report.rich` — the terminal tables of the ``dpaudit`` command;
* :mod:`dpaudit.report.json` — one JSON document (``--json``), and reading it back.

A new output format is one module here that takes an :class:`~dpaudit.results.AuditResult` (or a
:class:`~dpaudit.mia.evaluate.MiaReport`) and renders it.
"""
