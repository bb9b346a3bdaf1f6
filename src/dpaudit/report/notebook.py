"""The notebook view of an audit (``AuditResult._repr_html_``): the answer first, the rest folded.

A notebook cell shows, in order: a one-line heading (n, criteria, ε or "exact values, not DP"), the
block diagnostic's warnings (never folded), the values table (measure, value, 95% interval, ε, DP; in
exact mode the per-criterion values too), a one-line reading of each measure, then
every section of the HTML report (:func:`dpaudit.report.html.audit_sections`) folded in a
``<details>`` element whose summary is the section's title. Command-line flags are written as the
Python call they stand for (the report's sections are shared with ``dpaudit fairness --html``), so
the view speaks Python only.
"""

from __future__ import annotations

import re

from dpaudit._document import expect
from dpaudit._format import epsilon_text, plural
from dpaudit.report._html import FRAGMENT_CLASS, esc, fmt, note, scoped_css, table
from dpaudit.report._html_answer import reading
from dpaudit.results import AuditResult

__all__ = ["render_notebook", "PYTHON_WORDING"]

#: Command-line wording of the shared report sections and what the notebook view says instead.
PYTHON_WORDING = (
    ("-m tvd -m tc -m repair", "measures=('tvd', 'tc', 'repair')"),
    ("--exact", "exact=True"),
    ("--epsilon", "epsilon="),
    ("--json", "to_json()"),
    ("--html", "save('report.html')"),
    ("--save", "save(path)"),
    ("--infer-schema", "schema='infer'"),
    ("--schema", "schema="),
    ("--ledger", "budget=Budget.open(path)"),
    ("--seed", "seed="),
)
_SECTION = re.compile(r'<section(?: class="[^"]*")? id="([^"]*)"><h2>(.*?)</h2>', re.S)
_FLAG = re.compile(r"(?<![\w-])--(?=[a-z])")


def _python_words(html: str) -> str:
    for flag, python in PYTHON_WORDING:
        html = html.replace(flag, python)
    return _FLAG.sub("", html)  # any other flag: its bare name


def _values_table(result: AuditResult) -> str:
    rows = []
    for m in result.measures.values():
        r = m.release
        interval = "exact" if r.epsilon is None else f"[{fmt(r.interval[0])}, {fmt(r.interval[1])}]"
        rows.append([f"{m.title} (sum)" if m.per_criterion else m.title, r.value, interval,
                     "—" if r.epsilon is None else epsilon_text(r.epsilon), "yes" if r.dp else "no"])
        for crit, value in zip(result.criteria, m.per_criterion or ()):
            rows.append([f"· {crit}", value, "", "", ""])
    return table(["measure", "value", "95% interval", "ε", "DP"], rows, numeric=[False, True, False, True, False])


def render_notebook(result: AuditResult) -> str:
    """The compact notebook view of ``result`` (see the module docstring)."""
    from dpaudit.report.html import audit_sections

    expect(result, AuditResult, "render_notebook")
    crits = plural(len(result.criteria), "criterion", "criteria")
    mode = "exact values, NOT differentially private" if result.exact else f"ε = {epsilon_text(result.epsilon)}" + (
        "" if result.dp else " (not DP: see caveats)")
    head = f"dpaudit fairness audit — n = {fmt(result.n)} rows · {crits} · {mode}"
    folded = []
    for html in audit_sections(result):
        match = _SECTION.match(html)
        title = match.group(2) if match else "Section"
        folded.append(f"<details><summary>{title}</summary>{_python_words(html)}</details>")
    warnings = "".join(note("Degenerate blocks: " + w, "warn") for w in result.warnings)  # never folded
    readings = "".join(f"<li><strong>{esc(m.title)}</strong>: {esc(line)}</li>" for m in result.measures.values()
                       if (line := reading(result, m)))
    return (f'<div class="{FRAGMENT_CLASS}"><style>{scoped_css()}</style><p><strong>{esc(head)}</strong></p>'
            + warnings + _values_table(result) + (f'<ul class="readings">{readings}</ul>' if readings else "")
            + "".join(folded) + "</div>")
