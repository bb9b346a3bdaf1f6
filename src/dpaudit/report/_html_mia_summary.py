"""The first sections of the membership-inference HTML page: the summary (the verdict per α first) and the
most vulnerable records (:mod:`dpaudit.report.html_mia` assembles the page)."""

from __future__ import annotations

from typing import Any

from dpaudit.mia.findings import RULE_LABELS
from dpaudit.mia.results import MiaReport
from dpaudit.report._html import esc, fmt, note, section, table
from dpaudit.report.text import TOP_RECORDS

__all__ = ["summary_section", "vulnerable_section", "rule_label", "level_label"]


def rule_label(rule: str) -> str:
    """The rule's label in tables and figures (:data:`dpaudit.mia.findings.RULE_LABELS`)."""
    return RULE_LABELS.get(rule, rule)


def level_label(report: MiaReport) -> str:
    """The report's interval level as a percentage ("95%")."""
    return f"{float(report.options.get('level', 0.95)):.0%}"


#: The CSS class of a verdict's note: leakage is a warning, none is fine, not estimable is neutral.
_VERDICT_TONE = {"leakage": "warn", "no_evidence": "ok", "not_estimable": ""}


def summary_section(report: MiaReport) -> str:
    o = report.options
    body = ("<p>How often an attacker who sees a trained model's output can tell that a record was in its "
            "training set, at a small false-positive rate α. Each verdict rests on the one rule valid for these "
            "scores: the rank rule where estimable (exact for any score distribution), else the Gaussian PP rule "
            "if its check passes.</p>")
    body_has_value = False
    for alpha, row in zip(report.alphas, report.rows):
        v = row.verdict
        if v is None:  # a document saved before verdicts existed: the headline rule's numbers
            body += _old_summary_line(report, alpha, row)
            continue
        text = f"<strong>α = {fmt(alpha)}</strong>: {esc(v.text)}" + _reading(report, alpha, row, first=not body_has_value)
        body_has_value = body_has_value or v.tpr is not None
        if v.notes:
            text += "<br>" + "<br>".join(esc(n) for n in v.notes)
        body += note(text, _VERDICT_TONE.get(v.kind, ""), raw=True)
    body += note(_fpc_sentence(report), "" if o.get("fpc") else "warn")
    share = report.diagnostics.get("share_non_normal")
    if share is not None:
        body += note(f"Normality: {fmt(100 * float(share))} % of records' OUT scores fail a Jarque–Bera test at "
                     "0.01 (the PP and parametric rules assume Gaussian scores; about 1 % fail by chance).",
                     "warn" if share > 0.05 else "ok")
    saturated = report.diagnostics.get("share_saturated")
    if isinstance(saturated, (int, float)) and saturated > 0:
        body += note(f"Saturation: {fmt(100 * float(saturated))} % of the scores sit at the score cap (a model's "
                     "exact 0/1 outputs): the Gaussian rules misjudge such scores; the rank rules do not.", "warn")
    counted = report.diagnostics.get("share_counted")
    if isinstance(counted, (int, float)) and counted < 1:
        body += note(f"Counted targets: {fmt(100 * float(counted))} %. Records are IN in different numbers of models, so "
                     "the pooled rules count as many IN as OUT targets per record (the others serve as references "
                     "only): otherwise pooled TPR and FPR would weight the records differently.")
    body += note("ε ≥ is a lower bound on the privacy loss from the realised rates with confidence; 0 means "
                 "this evaluation found no evidence of leakage, not that there is none.")
    return section("Summary", body, anchor="summary")


def _reading(report: MiaReport, alpha: float, row: Any, *, first: bool) -> str:
    """The verdict's TPR with its interval and a one-line reading of its scale (chance = α, at most 1) and
    of its ε bound (0 = no evidence); "" when the verdict has no value. ``first``: the page's first value
    (``data-first-value``)."""
    v = row.verdict
    if v.tpr is None:
        return ""
    r = row.rules.get(v.rule) if v.rule else None
    ci = f", {level_label(report)} CI [{fmt(r.ci[0])}, {fmt(r.ci[1])}]" if r is not None and r.ci else ""
    mark = " data-first-value" if first else ""
    return (f'<br><span class="value"{mark}>TPR = {esc(fmt(v.tpr))}</span>{esc(ci)} at a realised FPR of '
            f'{esc(fmt(v.fpr))}<br><span class="reading">TPR: the share of training records the attacker finds; '
            f"chance = the FPR (α = {esc(fmt(alpha))}), at most 1. ε ≥ {esc(fmt(v.epsilon_lb))}: 0 = no evidence "
            "of leakage; the larger, the more a model reveals.</span>")


def _old_summary_line(report: MiaReport, alpha: float, row: Any) -> str:
    headline = "pp_t" if report.options.get("threshold", "t") == "t" else "pp_normal"
    r = row.rules.get(headline)
    if r is None or not r.estimable:
        return ""
    ci = f" ({level_label(report)} CI {fmt(r.ci[0])} – {fmt(r.ci[1])})" if r.ci else ""
    eps = "" if r.epsilon_lb is None else f"; ε ≥ {fmt(r.epsilon_lb)}"
    return (f"<p>At α = {fmt(alpha)}: TPR {fmt(r.tpr)}{ci} at a realised FPR of {fmt(r.fpr)} ({rule_label(headline)}){eps} "
            "(saved before verdicts existed: not checked against the scores' shape).</p>")


def vulnerable_section(report: MiaReport) -> str:
    parts = []
    for alpha, row in zip(report.alphas, report.rows):
        v = row.vulnerable
        if v is None:
            continue
        rows = [[r["rank"], r["record"], "—" if r["record_id"] is None else r["record_id"], r["tpr"], r["ci"][0],
                 r["ci"][1], r["fpr"], r["q_value"], "yes" if r["stands_out"] else "no"] for r in v.top(TOP_RECORDS)]
        parts.append(f"<h3>α = {fmt(alpha)} ({esc(rule_label(v.rule))}): {fmt(v.standing_out)} of {fmt(len(v.record))} "
                     f"records stand out</h3>"
                     + table(["rank", "record", "data row (from 0)", "TPR", "CI low", "CI high", "FPR", "q-value",
                              "stands out"], rows, numeric=[True] * 8 + [False]))
    if not parts:
        return ""
    body = (f"<p>Each record's TPR under the verdict's rule, with a {level_label(report)} Clopper–Pearson "
            "interval over its IN models. Among thousands of records some reach a high TPR by chance: a record "
            "<em>stands out</em> only when a rank test of its IN against its OUT scores survives the "
            "Benjamini–Hochberg correction over the pool (q-value at most the FDR); those are listed first, then the "
            "highest TPRs. The JSON document lists every record.</p>" + "".join(parts))
    return section("Most vulnerable records", body, anchor="records")


def _fpc_sentence(report: MiaReport) -> str:
    o = report.options
    n, pool = o.get("fpc_train_size", o.get("train_size")), o.get("pool_size")
    factor = (1 - n / pool) if isinstance(n, (int, float)) and isinstance(pool, (int, float)) and pool else None
    which = f" (N = {fmt(n)}, the {o['fpc_train_size_from']})" if "fpc_train_size_from" in o else ""
    if o.get("fpc"):
        return (f"FPC on: the fitted variances were divided by the finite-population correction 1 − N/N+ = "
                f"{fmt(factor)}{which}, which removes efficient LiRA's upward bias from drawing every training "
                "set from one pool.")
    return ("FPC off: the variances are as fitted; training sets drawn from one finite pool make them too small, "
            "so per-record vulnerability is biased upward" + (f" (1 − N/N+ = {fmt(factor)}{which}; rerun with --fpc "
                                                              "to correct it)." if factor is not None else "."))
