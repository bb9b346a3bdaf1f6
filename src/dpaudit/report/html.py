"""The fairness audit as one self-contained HTML page (``dpaudit fairness --html``, ``dpaudit report``).

:func:`render_audit` reads only the typed result (:class:`~dpaudit.results.AuditResult`), so a page
rendered from a saved ``--json`` document is byte-for-byte the page of the run itself. The page is
made of sections, each answering one question a reader of an audit asks, the answer first:

* **Released values** — first, a box with every measure's value, its 95% noise interval and a one-line
  reading (its scale, 0 = the criterion holds, its maximum: :mod:`dpaudit.report._html_answer`); then
  per measure one sentence on what it means and a figure of the value on the measure's whole range
  (from 0 to its maximum, so a small value looks small; per criterion in exact mode), the table of
  the numbers, and a plain explanation when noise pushed a release below zero.
* **Audit** — what was audited (data, n, criteria, measures) and in which mode: a DP release, or
  exact curator-only values behind a visible warning.
* **Privacy budget** — the ε each release spent and the total, and, when a ledger was used, what the
  ledger has left for later audits of the same data.
* **Per criterion and the MI baseline** (exact mode) — every criterion's exact value beside the
  classic, non-private conditional mutual information.
* **One section per measure's details**, in the registry's order, framed by the measure
  (``Measure.report_section``) and filled by the details themselves (``Details.html``; by default
  their field table): **Top contributing cells** — the cells that drive U_TC (exact: with MD, count,
  expected count, over/under, and a heat map of signed MD(a, p, o) per criterion (orange over-, purple under-represented); DP: only the cells named
  privately, in noisy rank order, because MD values are not released); **Repair** (exact mode) — per
  block, what the cheapest repair adds or deletes; and "<title> details" for any other measure
  that returns details. A new measure therefore needs no change here.
* **Privacy caveats** — the guarantee, its neighbouring relation, where the domains came from, the
  sensitivity and noise scale of every release, and why a release is not DP when it is not.
* **Explain trail** — the audit's stages as recorded in the result.

Every number is printed with :func:`dpaudit.report._html.fmt` from the value the JSON document
holds, so a reader (or a test) can check the page against the JSON. :func:`render_audit_fragment`
returns the same sections without the document around them: what ``AuditResult._repr_html_`` shows
in a notebook. :func:`render_html` is the registered ``html`` format
(:mod:`dpaudit.report._formats`): this page for an audit, :mod:`dpaudit.report.html_mia`'s for an MIA report.
"""

from __future__ import annotations

from typing import Any

from dpaudit._document import renders
from dpaudit._format import epsilon_text, plural
from dpaudit.details import hook, mi_baseline
from dpaudit.measures import MEASURES, ReportSection
from dpaudit.report._html import esc, fmt, fragment, keep, key_values, note, page, section, table
from dpaudit.report._html_answer import answer_box
from dpaudit.report._html_audit_figures import UNITS, MeasureText, _value_figure
from dpaudit.report._html_details import details_html
from dpaudit.results import AuditResult

__all__ = ["render_html", "render_audit", "render_audit_fragment", "audit_sections", "MEANING", "UNITS", "NEGATIVE_NOTE"]

#: One sentence per registered measure on what it means (``Measure.meaning``; spec ``fairness.md`` §2).
MEANING = MeasureText("meaning")

#: What a negative noisy value means, printed in every DP page.
NEGATIVE_NOTE = (
    "Every measure's true value is 0 or more. A DP release adds Laplace noise to it, and the noise can push "
    "the released number below zero; a negative release is not an error but a sign that the true value is "
    "small next to the noise (its 95% interval says how small). Released values are shown as released, not "
    "clipped to 0: clipping would bias them upwards and hide how large the noise is."
)


# -- the page ---------------------------------------------------------------------------------------

def render_html(result: Any) -> str:
    """The html format's page (``--html FILE``, ``--save FILE.html``): :func:`render_audit` for an
    :class:`~dpaudit.results.AuditResult`, :func:`dpaudit.report.html_mia.render_mia` for an MIA report,
    :func:`dpaudit.report.html_claim.render_claim_html` for a DP-claim audit."""
    if isinstance(result, AuditResult):
        return render_audit(result)
    if type(result).__name__ == "DPClaimAudit":  # a DP-claim audit (dpaudit.mia.claim)
        from dpaudit.report.html_claim import render_claim_html

        return render_claim_html(result)
    from dpaudit.report.html_mia import render_mia

    return render_mia(result)


@renders(AuditResult)
def render_audit(result: AuditResult) -> str:
    """The audit as one self-contained HTML document (inline CSS and SVG figures, no script, no
    external resource; printed on A4 without forced page breaks)."""
    title, subtitle = _headline(result)
    return page(title, subtitle, audit_sections(result), footer=_footer())


@renders(AuditResult)
def render_audit_fragment(result: AuditResult) -> str:
    """The same sections as :func:`render_audit`, as a fragment (no ``<html>``) with a stylesheet
    scoped to it: what a notebook shows inline (``AuditResult._repr_html_``)."""
    title, subtitle = _headline(result)
    return fragment(title, subtitle, audit_sections(result))


def audit_sections(result: AuditResult) -> list[str]:
    """The page's sections, in reading order (see the module docstring for what each shows)."""
    out = [_values(result), _summary(result), _budget(result)]
    if result.exact:
        out.append(_per_criterion(result))
    out += _measure_sections(result) + [_caveats(result), _trail(result)]
    return out


def _headline(result: AuditResult) -> tuple[str, str]:
    title = "dpaudit fairness audit" + (f" — {result.source}" if result.source else "")
    crits = plural(len(result.criteria), "criterion", "criteria")
    if result.exact:
        mode = "exact values for the data curator (NOT differentially private)"
    else:
        mode = f"ε = {epsilon_text(result.epsilon)}" + (" differentially private" if result.dp else " (not DP: see caveats)")
    return title, f"n = {fmt(result.n)} rows · {crits} · {mode}"


def _footer() -> str:
    from dpaudit._version import __version__

    return (f"dpaudit {__version__} · measures of Vologdin, Tao & Gilad, PVLDB 19(9) · every number on this "
            "page is the --json document's value, printed to 4 significant digits (ε to 3)")


# -- sections ---------------------------------------------------------------------------------------

def _summary(result: AuditResult) -> str:
    """What was audited and how: data, n, criteria, measures, mode (with the warning of exact mode)."""
    source = result.source or "an in-memory frame (not named)"
    body = key_values([
        ("data", source),
        ("rows (n, public)", result.n),
        ("measures", ", ".join(m.title for m in result.measures.values())),
        ("mode", "exact (curator-only)" if result.exact else "differential privacy (DP release)"),
        ("domains", "data-derived (not DP)" if result.schema_data_derived else "declared schema"),
    ])
    body += "<h3>Criteria</h3><ol class=\"criteria\">" + "".join(
        f"<li><code>{esc(c)}</code></li>" for c in result.criteria) + "</ol>"
    body += "<p>Each criterion reads “P ⊥ O | A”: the protected attributes P should not depend on the outcome O " \
            "among rows with the same admissible attributes A. Every measure is summed over the criteria.</p>"
    if result.exact:
        body += note("Exact values — curator-only, NOT differentially private. Every number on this page is "
                     "computed from the data without noise and can reveal individual rows; share it only with "
                     "people allowed to see the data. For a shareable report, run with --epsilon.", "warn")
    elif result.dp:
        body += note(f"Differentially private release: the numbers on this page together satisfy "
                     f"ε-differential privacy with ε = {epsilon_text(result.epsilon)} (replace-one neighbours, n public).",
                     "ok")
    else:
        body += note("Released with noise but NOT differentially private: "
                     + "; ".join(_reasons(result)) + ".", "warn")
    return section("Audit", body, anchor="audit")


def _budget(result: AuditResult) -> str:
    """The ε each release spent, the total, and what a ledger has left."""
    if result.exact:
        body = note("No privacy budget was spent: exact mode releases nothing privately (and protects nothing).",
                    "warn")
        return section("Privacy budget", body, anchor="budget")
    rows: list[list[Any]] = []
    for m in result.measures.values():
        rows.append([f"{m.title}: value", epsilon_text(m.release.epsilon), m.release.mechanism])
        spent = hook(m.details, "explanation")() if m.details is not None else None
        if spent is not None:  # the details' own private release (U_TC's names)
            what, epsilon, mechanism = spent
            rows.append([f"{m.title}: {what}", epsilon_text(epsilon), mechanism])
    rows += [[f"block diagnostic: {d.criterion}", epsilon_text(d.epsilon), "Laplace (OpenDP make_laplace)"]
             for d in result.diagnostics if d.epsilon is not None]
    rows.append(["total of this audit", epsilon_text(result.epsilon), "sequential composition (the ε add up)"])
    body = table(["release", "ε spent", "mechanism"], rows, numeric=[False, True, False])
    b = result.budget
    if b is not None:
        where = f"the ledger file {b.ledger}" if b.ledger else "the caller's budget"
        body += f"<h3>Budget left</h3><p>This audit was debited from {esc(where)}, shared by every audit of the " \
                "same data:</p>"
        body += key_values([("total ε", epsilon_text(b.total_epsilon)),
                            ("spent so far (all audits)", epsilon_text(b.spent)), ("remaining", epsilon_text(b.remaining))])
        if b.remaining <= 0:
            body += note("The budget is used up: a further audit of these data will be refused.", "warn")
    else:
        body += note(f"No ledger was used: this audit had its own budget of ε = {epsilon_text(result.epsilon)}. Every other "
                     "release about the same data adds to the privacy loss; --ledger FILE keeps the account "
                     "across audits.")
    return section("Privacy budget", body, anchor="budget")


def _values(result: AuditResult) -> str:
    """Per measure: what it means, the figure of its value and interval, then the table of numbers."""
    body = "".join(note("Degenerate blocks: " + w, "warn") for w in result.warnings)  # dpaudit.diagnostics
    body += answer_box(result)
    if not result.exact:
        for m in result.measures.values():
            if m.value < 0:
                body += note(f"{m.title} was released below zero, as {fmt(m.value)}: its true value is 0 or more "
                             f"and is small next to the noise (scale {fmt(m.release.scale)}); its 95% interval is "
                             f"[{fmt(m.release.interval[0])}, {fmt(m.release.interval[1])}].", "warn")
    rows = []
    for m in result.measures.values():
        r = m.release
        rows.append([m.title, r.value, r.interval[0], r.interval[1], epsilon_text(r.epsilon), r.sensitivity, r.scale])
    headers = ["measure", "value (sum over criteria)", "95% interval: low", "95% interval: high", "ε",
               "sensitivity", "noise scale"]
    figures = ""
    for m in result.measures.values():
        meaning = MEANING.get(m.name)
        figures += keep(f"<h3>{esc(m.title)}</h3>", f'<p class="meaning">{esc(meaning)}</p>' if meaning else "",
                        _value_figure(result, m))
    body += figures + table(headers, rows, numeric=[False] + [True] * 6)
    if result.exact:
        body += "<p>Exact values carry no noise: the interval is the value itself.</p>"
    else:
        body += ("<p>Only the sum over the criteria is released (one noisy draw per measure); per-criterion "
                 "values are not released in DP mode. The interval holds the true value with probability 0.95 "
                 "over the noise (value ± scale·ln 20).</p>" + f"<p>{esc(NEGATIVE_NOTE)}</p>")
    return section("Exact values" if result.exact else "Released values", body, anchor="values")


def _per_criterion(result: AuditResult) -> str:
    """Exact mode: every criterion's value for every measure, and the MI baseline beside U_MI^TVD."""
    baseline = next((b for m in result.measures.values() if (b := mi_baseline(m.details))), None)
    headers = ["criterion"] + [m.title for m in result.measures.values()]
    if baseline:
        headers += ["MI (nats)", "MI (bits)"]
    rows = []
    for i, crit in enumerate(result.criteria):
        row: list[Any] = [str(crit)]
        row += [m.per_criterion[i] if m.per_criterion is not None else None for m in result.measures.values()]
        if baseline:
            row += [baseline[i].mi_nats, baseline[i].mi_bits]
        rows.append(row)
    body = table(headers, rows, numeric=[False] + [True] * (len(headers) - 1))
    if baseline:
        body += ("<p>The MI baseline is the conditional mutual information I(P; O | A), the classic non-private "
                 "measure of dependence; by Pinsker's inequality U_MI^TVD ≤ I in nats, criterion by criterion.</p>")
    else:
        body += "<p>The MI baseline is reported with U_MI^TVD (--measure tvd), which was not requested.</p>"
    return section("Per criterion and the MI baseline", body, anchor="per-criterion")


def _measure_sections(result: AuditResult) -> list[str]:
    """A section per measure's details, for the registered measures (in order) and any other the result
    holds: the measure's :class:`~dpaudit.measures.ReportSection` frames it (a section even when it was
    not requested or released no details, if the measure says so), :func:`details_html` fills it."""
    out = []
    for name in [*MEASURES, *(n for n in result.measures if n not in MEASURES)]:
        m = result.measures.get(name)
        frame = MEASURES[name].report_section if name in MEASURES else None
        if frame is None:
            frame = ReportSection(f"{m.title if m is not None else name} details", f"details-{name}")
        if m is None:
            body = frame.absent
        elif m.details is None:
            body = None if frame.undisclosed is None else frame.undisclosed.format(value=esc(fmt(m.value)))
        else:
            body = details_html(m.details, result, m)
        if body is not None:
            out.append(section(frame.heading, body, anchor=frame.anchor))
    return out


def _caveats(result: AuditResult) -> str:
    """What the guarantee is and is not: neighbours, composition, domains, sensitivity, not-DP reasons."""
    items = []
    if result.exact:
        items.append("Exact mode protects nothing: every number is an exact statistic of the data, for the data "
                     "curator only.")
    else:
        items.append(f"ε-differential privacy with ε = {epsilon_text(result.epsilon)} in total, for neighbouring databases "
                     f"that differ by replacing one row; the number of rows (n = {fmt(result.n)}) is public. The "
                     "measures' releases (and the naming of top cells) add up by sequential composition; any other "
                     "release about the same data adds to the loss.")
        items.append("The 95% interval describes the privacy noise only (value ± scale·ln 20): it is not a sampling "
                     "confidence interval, the audit is of these rows.")
    if result.schema_data_derived:
        items.append("Domains were read off the data (--infer-schema): which values occur is itself revealed, so "
                     "nothing on this page is DP. Declare the domains (--schema FILE) for a DP release.")
    else:
        items.append("Domains come from a declared schema, public by assumption: which cells exist reveals nothing "
                     "about the rows.")
    reasons = _reasons(result)
    body = "<ul>" + "".join(f"<li>{esc(t)}</li>" for t in items) + "</ul>"
    if reasons and not result.exact:
        body += note("Not differentially private: " + "; ".join(reasons) + ".", "warn")
    body += "<h3>Sensitivity used</h3>"
    rows = [[m.title, m.release.sensitivity, m.release.scale, m.release.mechanism] for m in result.measures.values()]
    body += table(["measure", "replace-one sensitivity (sum over criteria)", "noise scale", "mechanism"], rows,
                  numeric=[False, True, True, False])
    body += "<p>The sensitivity bounds how much one replaced row can move a value; the Laplace scale is " \
            "sensitivity / ε. Proofs: docs/privacy.md.</p>"
    return section("Privacy caveats", body, anchor="caveats")


def _trail(result: AuditResult) -> str:
    """The stages the audit recorded: what was counted, with which mechanism, ε and sensitivity."""
    body = "<ol>" + "".join(f"<li>{esc(s)}</li>" for s in result.stages) + "</ol>"
    return section("Explain trail", body, anchor="trail")


def _reasons(result: AuditResult) -> list[str]:
    return sorted({r for m in result.measures.values() for r in m.release.reasons})
