"""The HTML sections on the measures' details: the built-in details' bodies, and the fallbacks.

A measure's details (:mod:`dpaudit.details`) are plain data; their sections on the HTML page are drawn
here, beside the other renderers, so the details never import the report. :func:`details_html` picks
the body of one section: the details' own ``html(result, m)`` method when their type defines one (a new
measure may, importing what it needs from :mod:`dpaudit.report._html`), else the renderer registered
for their type in :data:`DETAILS_HTML` (the built-in measures' details), else the generic field table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dpaudit._format import epsilon_text, plural
from dpaudit.details import (
    BlockRepairDetail,
    PrivateTopCellsDetails,
    RepairDetails,
    TopCellsDetails,
    TVDDetails,
    field_rows,
)
from dpaudit.report._html import esc, fmt, keep, note, table
from dpaudit.report._html_audit_figures import _heatmap, _labels
from dpaudit.results import AuditResult, MeasureResult

__all__ = ["DETAILS_HTML", "details_html"]

_MAX_BLOCKS = 10  # the largest blocks shown per criterion (all of them are in the JSON)
_MAX_CHANGES = 6  # the largest cell changes shown per block


def details_html(details: Any, result: AuditResult, m: MeasureResult) -> str | None:
    """The body of the page's section on ``details`` (None: no section): their own ``html``, the
    renderer registered for their type (nearest in the MRO), or the field table."""
    own = getattr(type(details), "html", None)
    if callable(own):
        body: str | None = own(details, result, m)
        return body
    render = next((DETAILS_HTML[t] for t in type(details).__mro__ if t in DETAILS_HTML), _field_table)
    return render(details, result, m)


def _field_table(details: Any, result: AuditResult, m: MeasureResult) -> str | None:
    """Any details as a table of their fields (:func:`dpaudit.details.field_rows`)."""
    return table(["field", "value"], field_rows(details, number=fmt), numeric=[False, False])


def _mi_baseline(details: TVDDetails, result: AuditResult, m: MeasureResult) -> str | None:
    """No section: U_MI^TVD's baseline is shown beside the per-criterion values."""
    return None


def _top_cells(details: TopCellsDetails, result: AuditResult, m: MeasureResult) -> str | None:
    """U_TC, exact: the top cells with their evidence, and a heat map of MD(a, p, o) per criterion."""
    body = ("<p>The cells with the largest marginal difference MD(a,p,o), exact, largest first: “over” cells "
            "hold more rows than independence predicts, “under” cells fewer. MD × n is that difference "
            "in rows.</p>")
    if details.top_cells:
        rows = [[c.criterion, _labels(c.protected), _labels(c.outcome), _labels(c.admissible) or "—",
                 f"{c.sign}-represented" if c.sign in ("over", "under") else c.sign, c.count, c.expected, c.md]
                for c in details.top_cells]
        body += table(["criterion", "protected", "outcome", "admissible", "over / under", "rows",
                       "expected rows", "MD"], rows, numeric=[False] * 5 + [True] * 3)
    else:
        body += "<p>No cell departs from independence (or --name-cells 0 was given).</p>"
    head = "<h3>MD(a, p, o) per block</h3>"
    if details.cell_md is None:
        body += head + note("This result holds no MD maps (it was saved by an older dpaudit); re-run the exact "
                            "audit to draw them.")
    elif not details.cell_md:
        body += head + note("No MD maps: the audit was run with --name-cells 0 (the value alone).")
    else:
        maps = [_heatmap(cmap, i, str(m.options.get("cells", "domain"))) for i, cmap in enumerate(details.cell_md, 1)]
        body += keep(head, maps[0]) + "".join(maps[1:])  # the heading printed with its first map
    return body


def _private_top_cells(details: PrivateTopCellsDetails, result: AuditResult, m: MeasureResult) -> str | None:
    """U_TC, private: the cells named by report-noisy-top-k, in noisy rank order, and how they were named."""
    info = details.release
    body = (f"<p>These cells were named privately by {esc(info.mechanism)}, with "
            f"ε = {esc(epsilon_text(info.epsilon))}, scale {esc(fmt(info.scale))}, in noisy rank order: rank 1 is the "
            "cell the noisy selection ranked first, not necessarily the largest. Their row counts and exact "
            "MD values are not released.</p>")
    sure = details.reliability
    if sure is not None:
        body += (f"<p>Reliability: the chance that a named cell truly is among the top {len(details.top_cells)}, "
                 f"from a second release ({esc(sure.mechanism)}, ε = {esc(epsilon_text(sure.epsilon))}, scale "
                 f"{esc(fmt(sure.scale))}) of the named cells' MD and of the next largest MD "
                 f"({esc(fmt(sure.threshold))}, noisy); about 0.5 means it is as large as a cell left out.</p>")
    rows = [[c.rank, c.criterion, _labels(c.protected), _labels(c.outcome), _labels(c.admissible) or "—",
             c.reliability, c.noisy_md] for c in details.top_cells]
    body += table(["noisy rank", "criterion", "protected", "outcome", "admissible", "reliability", "noisy MD"], rows,
                  numeric=[True, False, False, False, False, True, True])
    body += note("No heat map in DP mode: exact MD(a,p,o) values are not released (they are exact statistics of the "
                 "data). The data curator sees them with --exact.")
    return body


def _repair(details: RepairDetails, result: AuditResult, m: MeasureResult) -> str | None:
    """U_R: per criterion, the largest blocks' repairs — which cells gain or lose rows."""
    body = f"<p>Semantics <code>{esc(details.semantics)}</code>. "
    body += {"ci": "A repair adds or removes (fractional) rows so that P ⊥ O | A holds exactly; per block, the "
                   "cells below change from their row count to the repaired count.",
             "bag": "A repair deletes whole protected groups and gives every kept group the same outcome counts.",
             "set": "A repair makes each block's distinct (p, o) pairs a product set."}.get(details.semantics, "")
    body += " The total is the sum over the blocks.</p>"
    body += f"<p>Block status: {esc(details.status_line())}.</p>"
    if not details.exact:
        why = {"timed out": "A solver stopped at the wall-clock time limit (a machine-dependent result)",
               "work limit": "A solver used up its work budget (raise work_limit)"}.get(
            details.status, "Some blocks are solved with bounds that do not meet")
        body += note(f"{why}: the value {fmt(m.value)} is a proven lower bound and "
                     f"{fmt(details.upper)} an upper bound.", "warn")
    for i, crit in enumerate(result.criteria):
        blocks = [b for b in details.per_block if b.criterion == str(crit)]
        total = m.per_criterion[i] if m.per_criterion is not None else math.fsum(b.value for b in blocks)
        body += f"<h3>{esc(crit)}: {esc(fmt(total))} rows</h3>"
        nonzero = sorted((b for b in blocks if b.upper > 0), key=lambda b: -b.upper)
        if not nonzero:
            body += "<p>Nothing to repair: the criterion holds.</p>"
            continue
        rows = [[_labels(b.admissible) or "(whole table)", b.value,
                 "exact" if b.exact else f"{b.status}, ≤ {fmt(b.upper)}", _repair_text(b)]
                for b in nonzero[:_MAX_BLOCKS]]
        body += table(["block A = a", "rows changed", "status", "what to change"], rows,
                      numeric=[False, True, False, False])
        rest = nonzero[_MAX_BLOCKS:]
        if rest:
            body += (f"<p>{plural(len(rest), 'smaller block')} with "
                     f"{esc(fmt(math.fsum(b.value for b in rest)))} rows in all are not shown (the JSON lists "
                     "every block).</p>")
    return body


def _repair_text(block: BlockRepairDetail) -> str:
    """One block's repair in words: the cells that gain or lose rows, or the groups deleted and kept."""
    parts = []
    if block.changes:
        changes = sorted(block.changes, key=lambda c: -abs(c.change))
        for c in changes[:_MAX_CHANGES]:
            verb = "add" if c.change > 0 else "delete"
            cell = ", ".join(f"{k}={v}" for side in (c.protected, c.outcome) for k, v in side.items())
            parts.append(f"{verb} {fmt(abs(c.change))} rows ({cell}): {fmt(c.count)} → {fmt(c.repaired)}")
        if len(changes) > _MAX_CHANGES:
            parts.append(f"and {len(changes) - _MAX_CHANGES} smaller changes")
    if block.deleted:
        parts.append("delete the groups " + "; ".join(_labels(g) for g in block.deleted))
    if block.kept and block.target is not None:
        counts = ", ".join(f"{_labels({k: v for k, v in t.items() if k != 'count'})}: {fmt(t.get('count'))}"
                           for t in block.target)
        parts.append(f"each kept group ({'; '.join(_labels(g) for g in block.kept)}) gets the outcome counts {counts}")
    return "; ".join(parts) or block.method


#: The section bodies of the built-in measures' details, by details type.
DETAILS_HTML: dict[type, Callable[[Any, AuditResult, MeasureResult], str | None]] = {
    TVDDetails: _mi_baseline, TopCellsDetails: _top_cells, PrivateTopCellsDetails: _private_top_cells,
    RepairDetails: _repair}
