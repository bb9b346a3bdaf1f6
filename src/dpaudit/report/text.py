"""Plain-text rendering of the typed results (what ``str(result)`` prints).

A measure's details add their own lines (:meth:`dpaudit.details.Details.text_lines`; by default their
field table), so a new measure shows up here without a change to this module."""

from __future__ import annotations

from dpaudit._document import expect
from dpaudit._format import epsilon_text
from dpaudit.details import describe_cell, hook, mi_baseline
from dpaudit.mia.results import MiaReport
from dpaudit.results import AuditResult

__all__ = ["render", "render_audit", "render_mia", "describe_cell"]


def render(result: AuditResult | MiaReport) -> str:
    """The text format's document (``--save FILE.txt``): :func:`render_audit` or :func:`render_mia`,
    ending in a newline — for an MIA evaluation, what ``dpaudit mia evaluate`` prints."""
    return (render_audit(result) if isinstance(result, AuditResult) else render_mia(result)) + "\n"


def render_audit(result: AuditResult) -> str:
    """The audit as a text table with the per-criterion values, top cells, caveats and explain trail."""
    expect(result, AuditResult, "render_audit")
    mode = "exact values (curator-only, not DP)" if result.exact else f"ε = {epsilon_text(result.epsilon)}"
    lines = [f"dpaudit fairness audit — n = {result.n:,}, {mode}"]
    lines += [f"  criterion {i + 1}: {c}" for i, c in enumerate(result.criteria)]
    header = f"  {'measure':<10} {'value':>12} {'95% interval':>27} {'ε':>7} {'sensitivity':>12}  DP"
    lines += ["", header]
    for m in result.measures.values():
        r = m.release
        eps = epsilon_text(r.epsilon)
        interval = f"[{r.interval[0]:.6g}, {r.interval[1]:.6g}]"
        lines.append(
            f"  {m.title:<10} {r.value:>12.6g} {interval:>27} {eps:>7} {r.sensitivity:>12.4g}  "
            f"{'yes' if r.dp else 'no'}"
        )
        if m.per_criterion is not None:
            baseline = mi_baseline(m.details) or (None,) * len(result.criteria)
            for c, v, b in zip(result.criteria, m.per_criterion, baseline):
                extra = f"   MI = {b.mi_bits:.4g} bits" if b else ""
                lines.append(f"      {str(c):<40} {v:.6g}{extra}")
        if m.details is not None:  # the details' own lines (top cells, repair status) or their field table
            lines += hook(m.details, "text_lines")(m)
    if result.warnings:  # the block diagnostic (dpaudit.diagnostics)
        lines += ["", "  WARNING, degenerate blocks:"] + [f"    - {w}" for w in result.warnings]
    reasons = sorted({reason for m in result.measures.values() for reason in m.release.reasons})
    if reasons:
        lines += ["", "  not DP because:"] + [f"    - {r}" for r in reasons]
    lines += ["", "  explain trail:"] + [f"    {i + 1}. {s}" for i, s in enumerate(result.stages)]
    return "\n".join(lines)


def render_mia(report: MiaReport) -> str:
    """A membership-inference evaluation as text: the verdict per α first, then every rule at every α with
    its CI, realised FPR, ε bound and validity, the most vulnerable records, and the diagnostics."""
    expect(report, MiaReport, "render_mia")
    from dpaudit.mia.findings import RULE_LABELS as RULE_NAMES

    o = report.options
    level = o["level"]
    fpc = "on" if o["fpc"] else "off"
    if o["fpc"] and "fpc_train_size_from" in o:
        fpc += f" (1 − N/N+ with N = {o['fpc_train_size']:.6g}, the {o['fpc_train_size_from']})"
    head = (f"{o.get('attack', 'lira').upper()} evaluation — M = {report.n_models} models, N+ = {report.n_records:,} "
            f"records, threshold {o['threshold']}, FPC {fpc}")
    lines = [head]
    for alpha, row in zip(report.alphas, report.rows):
        if row.verdict is not None:
            lines.append(f"  verdict at α = {alpha:g}: {row.verdict.text}")
            lines += [f"      {n}" for n in row.verdict.notes]
    lines += ["", f"  {'α':>8} {'rule':<21} {'TPR':>9} {f'{level:.0%} CI':>21} {'real. FPR':>10} "
                  f"{f'ε ≥ ({level:.0%})':>9}"]
    invalid = False
    for alpha, row in zip(report.alphas, report.rows):
        for name, r in row.rules.items():
            if not r.estimable:
                lines.append(f"  {alpha:>8.0e} {RULE_NAMES[name]:<21} {r.reason}")
                continue
            ci = f"[{r.ci[0]:.4g}, {r.ci[1]:.4g}]" if r.ci else ""
            fpr = f"{r.fpr:.3g}" + ("*" if r.fpr_kind == "nominal" else "")
            eps = "–" if r.epsilon_lb is None else f"{r.epsilon_lb:.3g}"
            tail = ("" if r.t_threshold_fpr_loo is None
                    else f"  (t threshold's own FPR, leave-one-out: {r.t_threshold_fpr_loo:.3g})")
            mark = " ✗" if r.valid is False else ""
            invalid |= r.valid is False
            lines.append(f"  {alpha:>8.0e} {RULE_NAMES[name] + mark:<21} {r.tpr:>9.4g} {ci:>21} {fpr:>10} "
                         f"{eps:>9}{tail}")
        spread = row.naive_per_record_fpr
        lines.append(f"  {'':>8} naive threshold: per-record FPR max {spread.max:.3g}, "
                     f"{spread.share_above_alpha:.1%} of records above α")
    if invalid:
        lines.append("  ✗ not valid for these scores: the Gaussian model fails its check (realised FPR without the "
                     "FPC within 1.5× α, ≤ 10% of records non-normal); shown for comparison, never the verdict")
    lines.append("  * α by construction under the Gaussian model: trust it where the t threshold's own FPR "
                 "is near α and few records fail the normality test")
    lines.append("  ε ≥: Clopper–Pearson/bootstrap bound from realised rates; 0 = no evidence of leakage")
    lines += _vulnerable_lines(report)
    lines.append(f"  normality: {report.diagnostics['share_non_normal']:.1%} of records' OUT signals fail "
                 "Jarque–Bera at 0.01")
    saturated = report.diagnostics.get("share_saturated")
    if isinstance(saturated, (int, float)) and saturated > 0:
        cap = report.diagnostics.get("score_cap")
        where = f"at the score cap ±{cap:.4g}" if isinstance(cap, (int, float)) else "at the largest or smallest value"
        lines.append(f"  saturation: {100 * saturated:.3g}% of the scores sit {where} (a model's exact 0/1 outputs)")
    counted = report.diagnostics.get("share_counted")
    if isinstance(counted, (int, float)) and counted < 1:
        lines.append(f"  counted targets: {100 * counted:.3g}% — records are IN in different numbers of models, so the "
                     "pooled rules count as many IN as OUT targets per record (the others serve as references only)")
    if "fpc_why" in o:
        lines.append(f"  FPC {o['fpc_why']}")
    return "\n".join(lines)


#: Records listed per α in the text and HTML reports (the JSON holds all of them).
TOP_RECORDS = 10


def _vulnerable_lines(report: MiaReport) -> list[str]:
    """The most vulnerable records per α under the verdict's rule, with how many stand out."""
    lines: list[str] = []
    for alpha, row in zip(report.alphas, report.rows):
        v = row.vulnerable
        if v is None:
            continue
        lines.append(f"  most vulnerable records at α = {alpha:g} ({v.rule}; {v.standing_out:,} of {len(v.record):,} "
                     f"stand out at FDR {v.fdr:g}):")
        for r in v.top(TOP_RECORDS):
            ident = "" if r["record_id"] is None else f" (data row {r['record_id']}, from 0)"
            star = "  stands out" if r["stands_out"] else ""
            lines.append(f"    {r['rank']:>3}. record {r['record']}{ident}: TPR {r['tpr']:.3g} "
                         f"[{r['ci'][0]:.3g}, {r['ci'][1]:.3g}], FPR {r['fpr']:.3g}, q = {r['q_value']:.3g}{star}")
    return lines
