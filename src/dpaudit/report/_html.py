"""Building blocks of the self-contained HTML reports (:mod:`dpaudit.report.html`).

A page is one HTML file with everything inline: the stylesheet (screen and print), the figures as
inline SVG drawn by matplotlib, no script, no font, no image, no link to any other host. It reads
the same without JavaScript, prints on A4 without forced page breaks (``@media print``: a heading
stays with what follows it, a figure with its caption, no section starts a near-empty page) and
stays readable from 1280 px down to a 400 px phone (tables and wide figures scroll inside their own
box; nothing widens the page). Everything here is a pure function from values to strings: the page modules decide
what to show, these helpers only how.

Colours: the Okabe–Ito palette (distinguishable with the common colour-vision deficiencies),
:data:`PALETTE`; signed heat maps use matplotlib's diverging ``PuOr`` (orange over-, purple under-represented,
white at 0), unsigned ones the perceptually uniform ``cividis``.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["PALETTE", "CSS", "esc", "fmt", "page", "section", "keep", "table", "figure_svg", "note", "key_values",
           "new_figure", "fragment", "scoped_css"]

#: Okabe & Ito (2008), "Color Universal Design": black, orange, sky blue, bluish green, yellow, blue,
#: vermillion, reddish purple.
PALETTE = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")

CSS = """
:root { --fg: #1a1a1a; --muted: #555; --line: #d0d0d0; --bg-alt: #f5f5f5; --warn: #8a4b00;
        --warn-bg: #fff4e0; --ok-bg: #eef6ee; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); max-width: 1200px; margin: 0 auto; padding: 24px 32px; overflow-wrap: break-word; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.25em; border-bottom: 2px solid var(--fg); padding-bottom: 4px; margin-top: 36px; }
h3 { font-size: 1.05em; margin: 22px 0 6px; }
p.lead { color: var(--muted); margin-top: 0; }
table { border-collapse: collapse; margin: 8px 0 16px; font-variant-numeric: tabular-nums; max-width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: var(--bg-alt); font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; }
dl.kv { display: grid; grid-template-columns: minmax(0, max-content) minmax(0, 1fr); gap: 2px 16px;
         margin: 8px 0 16px; }
dl.kv dt { font-weight: 600; } dl.kv dd { margin: 0; }
.note { border-left: 4px solid var(--line); background: var(--bg-alt); padding: 8px 12px; margin: 10px 0; }
.note.warn { border-color: var(--warn); background: var(--warn-bg); color: var(--warn); }
.note.ok { border-color: #2e7d32; background: var(--ok-bg); }
figure { margin: 10px 0 18px; page-break-inside: avoid; break-inside: avoid; }
figure svg { max-width: 100%; height: auto; }
figure.wide svg { max-width: none; }
.keep { break-inside: avoid; page-break-inside: avoid; }
.answer { border: 2px solid var(--fg); border-radius: 6px; padding: 4px 16px 8px; margin: 16px 0; }
.answer ul { padding-left: 1.2em; } .answer li { margin: 6px 0; }
.value { font-size: 1.25em; font-weight: 600; font-variant-numeric: tabular-nums; }
.reading { color: var(--muted); }
.note .reading { color: inherit; opacity: 0.85; }
code { overflow-wrap: anywhere; }
figcaption { color: var(--muted); font-size: 0.9em; }
.scroll { overflow-x: auto; }
footer { margin-top: 40px; color: var(--muted); font-size: 0.85em; border-top: 1px solid var(--line); padding-top: 8px; }
@media (max-width: 600px) {
  body { padding: 12px; font-size: 14px; }
  dl.kv { grid-template-columns: minmax(0, 1fr); } dl.kv dd { margin-bottom: 6px; }
  th, td { padding: 3px 6px; }
}
@media print {
  @page { size: A4; margin: 14mm; }
  body { font-size: 10pt; max-width: none; padding: 0; }
  h2 { margin-top: 18px; }
  h2, h3 { break-after: avoid; page-break-after: avoid; }
  .scroll { overflow: visible; }
  figure.wide svg { max-width: 100%; }
  table { page-break-inside: auto; } tr { page-break-inside: avoid; }
  .answer, .note, dl.kv { break-inside: avoid; page-break-inside: avoid; }
}
"""


def esc(value: Any) -> str:
    """HTML-escaped text of ``value`` (quotes included)."""
    return html.escape(str(value), quote=True)


def fmt(value: Any, digits: int = 4) -> str:
    """A number as a report prints it: ``digits`` significant digits, thousands separators for
    integers, ``—`` for None/NaN, ``∞`` for infinities; other values as text. A float of
    ``digits`` or more integer digits (below 10¹⁵) prints rounded to a whole number with
    separators (a repair of 14,732.5 rows reads ``14,733``, not ``1.473e+04``).

    Examples
    --------
    >>> fmt(0.123456), fmt(48842), fmt(None), fmt(float("inf")), fmt(-2.5e-7)
    ('0.1235', '48,842', '—', '∞', '-2.5e-07')
    >>> fmt(14732.508), fmt(9999.7), fmt(-1234.5), fmt(999.94)
    ('14,733', '10,000', '-1,234', '999.9')
    """
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        if 10 ** (digits - 1) <= abs(value) < 1e15:
            return f"{value:,.0f}"
        return f"{value:.{digits}g}"
    return str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, numeric: Sequence[bool] | None = None,
          caption: str | None = None, digits: int = 4) -> str:
    """An HTML table; cells are escaped (numbers formatted by :func:`fmt`); ``numeric[i]`` right-aligns
    column i (default: columns whose cells are all numbers)."""
    body = [list(r) for r in rows]
    if numeric is None:
        numeric = [bool(body) and all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) or r[i] is None
                                      for r in body) for i in range(len(headers))]
    cls = [' class="num"' if n else "" for n in numeric]
    head = "".join(f"<th{c}>{esc(h)}</th>" for h, c in zip(headers, cls))
    lines = ["".join(f"<td{c}>{esc(fmt(v, digits))}</td>" for v, c in zip(r, cls)) for r in body]
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    rows_html = "".join(f"<tr>{line}</tr>" for line in lines)
    return f'<div class="scroll"><table>{cap}<thead><tr>{head}</tr></thead><tbody>{rows_html}</tbody></table></div>'


def key_values(pairs: Iterable[tuple[str, Any]]) -> str:
    """A definition list of ``(label, value)`` pairs (values formatted by :func:`fmt`)."""
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(fmt(v))}</dd>" for k, v in pairs)
    return f'<dl class="kv">{items}</dl>'


def note(text: str, kind: str = "", *, raw: bool = False) -> str:
    """A highlighted paragraph (``kind``: "", "warn" or "ok"); ``text`` is escaped unless ``raw`` (markup
    the caller escaped itself)."""
    return f'<p class="note {esc(kind)}">{text if raw else esc(text)}</p>'


def section(title: str, body: str, *, anchor: str, cls: str = "") -> str:
    """One report section (no forced page break in print: a heading is kept with what follows it)."""
    attrs = f' class="{esc(cls)}"' if cls else ""
    return f'<section{attrs} id="{esc(anchor)}"><h2>{esc(title)}</h2>{body}</section>'


def keep(*parts: str) -> str:
    """``parts`` (a heading, its sentence, its figure) kept together on one printed page."""
    return '<div class="keep">' + "".join(parts) + "</div>"


def new_figure(width: float = 7.0, height: float = 3.6) -> tuple[Any, Any]:
    """A matplotlib figure and axes drawn off-screen (Agg), without touching pyplot's global state."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def figure_svg(fig: Any, *, caption: str, label: str, wide: bool = False) -> str:
    """``fig`` as an inline ``<svg>`` inside a ``<figure>`` with a caption; ``label`` (the figure's
    ``aria-label`` and ``data-figure`` name) lets readers and tests find it.

    Text stays text (``svg.fonttype = none``), so numbers in figures are searchable and small, and
    the SVG carries no date or random id (``svg.hashsalt``, ``Date: None``): the same result renders
    to the same bytes. matplotlib's RDF ``<metadata>`` block (which names web addresses) is dropped,
    and every ``id`` (with the references to it) is prefixed by ``label``, so several figures on one
    page never share an id. A ``wide`` figure keeps its own width (its labels their size) and
    scrolls sideways inside its box on a narrow screen; printed, it shrinks to the page.
    """
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "dpaudit"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]  # drop the XML declaration and doctype: inline SVG in HTML needs neither
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.S)
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", label) + "-"
    svg = re.sub(r'(\sid="|xlink:href="#|url\(#)', lambda m: m.group(1) + prefix, svg)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{esc(caption)}" ', 1)
    if wide:
        return (f'<figure data-figure="{esc(label)}" class="wide"><div class="scroll">{svg}</div>'
                f"<figcaption>{esc(caption)}</figcaption></figure>")
    return f'<figure data-figure="{esc(label)}">{svg}<figcaption>{esc(caption)}</figcaption></figure>'


def page(title: str, subtitle: str, sections: Sequence[str], *, footer: str) -> str:
    """A complete, self-contained HTML document: inline CSS, no script, no external resource."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; '
        'img-src data:">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><p class=\"lead\">{esc(subtitle)}</p></header>"
        + "".join(sections)
        + f"<footer>{esc(footer)}</footer></body></html>\n"
    )


#: The class of the element that wraps a :func:`fragment`; its stylesheet applies only inside it.
FRAGMENT_CLASS = "dpaudit-report"


def scoped_css(css: str = CSS, scope: str = f".{FRAGMENT_CLASS}") -> str:
    r"""The screen rules of ``css`` restricted to the elements inside ``scope`` (``:root`` and ``body``
    become the scope itself; ``@media`` blocks are left out), so a fragment's style never leaks into
    the notebook around it.

    Examples
    --------
    >>> scoped_css("body { margin: 0; } h2, th { color: red; }", ".r")
    '.r { margin: 0; }\n.r h2, .r th { color: red; }'
    """
    screen = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", css)
    rules = []
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", screen):
        scoped = []
        for sel in (x.strip() for x in selectors.split(",")):
            if sel in (":root", "body"):
                scoped.append(scope)
            else:
                scoped.append(f"{scope} {sel}")
        rules.append(f"{', '.join(scoped)} {{{body}}}")
    return "\n".join(rules)


def fragment(title: str, subtitle: str, sections: Sequence[str]) -> str:
    """The body of a page as an HTML fragment (no ``<html>``, ``<head>`` or ``<body>``) with its
    stylesheet scoped to it (:func:`scoped_css`): what a notebook's ``_repr_html_`` returns."""
    return (
        f'<div class="{FRAGMENT_CLASS}"><style>{scoped_css()}</style>'
        f"<header><h1>{esc(title)}</h1><p class=\"lead\">{esc(subtitle)}</p></header>"
        + "".join(sections)
        + "</div>"
    )
