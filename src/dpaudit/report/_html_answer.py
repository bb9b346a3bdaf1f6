"""The answer first: the box that opens every fairness page with each released value, its interval and a
one-line reading of it (:mod:`dpaudit.report.html` places it at the top of "Released values").

The reading says what the scale is, what 0 means and the largest value the measure can take, from the
measure itself (:meth:`dpaudit.measures.Measure.zero_means`, :meth:`~dpaudit.measures.Measure.maximum`,
the scale in its ``unit``; spec ``fairness.md`` §2: U_MI^TVD and U_TC in [0, 2] per criterion, U_R at
most n rows), so a reader can tell whether 0.05 is large without the rest of the page. A measure the
registry does not know (a document of another dpaudit) gets the value and interval only.
"""

from __future__ import annotations

import math
import re

from dpaudit._format import epsilon_text
from dpaudit.report._html import esc, fmt
from dpaudit.results import AuditResult, MeasureResult

__all__ = ["answer_box", "reading", "maximum"]


def maximum(result: AuditResult, m: MeasureResult) -> float:
    """The largest value ``m`` can take on one criterion of ``result`` (``math.inf``: not known)."""
    from dpaudit.measures import MEASURES

    cls = MEASURES.get(m.name)
    return math.inf if cls is None else float(cls.maximum(result.n))


def reading(result: AuditResult, m: MeasureResult) -> str:
    """One line on how to read ``m``'s value: its scale, what 0 means, its maximum per criterion and for
    the audit's criteria together (every measure is a sum over the criteria).

    e.g. ``dimensionless; 0 = the criterion holds exactly; at most 2 per criterion (8 for these 4)``.
    """
    from dpaudit.measures import MEASURES

    cls = MEASURES.get(m.name)
    if cls is None:
        return ""
    parts = []
    scale = re.match(r"[^(]*\(([^;)]+)", cls.unit or "")
    if scale:
        parts.append(scale.group(1).strip())
    zero = cls.zero_means(m.options)
    if zero:
        parts.append(f"0 = {zero}")
    top = maximum(result, m)
    if math.isfinite(top):
        n_crit = len(result.criteria)
        parts.append(f"at most {fmt(top)} per criterion" + (f" ({fmt(top * n_crit)} for these {n_crit})"
                                                                  if n_crit > 1 else ""))
    return "; ".join(parts)


def answer_box(result: AuditResult) -> str:
    """Every measure's value (the first carries ``data-first-value``), its 95% interval and its reading."""
    n_crit = len(result.criteria)
    over = "the criterion" if n_crit == 1 else f"the {n_crit} criteria"
    items = []
    for i, m in enumerate(result.measures.values()):
        mark = " data-first-value" if i == 0 else ""
        value = f'<span class="value"{mark}>{esc(fmt(m.value))}</span>'
        if result.exact:
            where = f"exact sum over {over}, no noise"
        else:
            low, high = m.release.interval
            where = f"95% noise interval [{esc(fmt(low))}, {esc(fmt(high))}], sum over {over}, ε = {esc(epsilon_text(m.release.epsilon))}"
        line = reading(result, m)
        read = f'<br><span class="reading">{esc(line)}.</span>' if line else ""
        items.append(f"<li><strong>{esc(m.title)}</strong> = {value} <span>({where})</span>{read}</li>")
    return '<div class="answer"><ul>' + "".join(items) + "</ul></div>"
