"""Plain-text rendering of the typed results: what ``str(result)`` prints, and the ``dpaudit fairness``
command's view when its output is not a terminal.

* :func:`render_audit` / :func:`render_mia` — ``str(result)`` and the ``text`` format (``--save FILE.txt``);
  a measure's details add their own lines (:meth:`dpaudit.details.Details.text_lines`; by default their
  field table), so a new measure shows up here without a change to this module.
* :func:`command_view` — the command's view as plain data (title, table, notes, caveats, trail), drawn
  by :func:`render_command` as plain text (a pipe or a file: no box drawing, no wrapping at any width, so
  a cell name is never split across lines) and by :func:`dpaudit.report.rich.print_audit` as rich tables
  on a terminal; the details' lines are :meth:`~dpaudit.details.Details.report_lines` (their rich markup
  version, :meth:`~dpaudit.details.Details.rich_lines`, on the terminal).

Nothing here imports rich or the membership-inference modules (an audit's report loads neither).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dpaudit._document import expect
from dpaudit._format import epsilon_text
from dpaudit.details import describe_cell, hook, mi_baseline
from dpaudit.results import AuditResult

if TYPE_CHECKING:
    from dpaudit.mia.results import MiaReport

__all__ = ["render", "render_audit", "render_mia", "describe_cell", "CommandView", "command_view", "render_command"]


def render(result: AuditResult | MiaReport) -> str:
    """The text format's document (``--save FILE.txt``): :func:`render_audit`, :func:`render_mia` or (a
    DP-claim audit) :func:`dpaudit.report.text_claim.render_claim`,
    ending in a newline — for an MIA evaluation, what ``dpaudit mia evaluate`` prints."""
    if isinstance(result, AuditResult):
        return render_audit(result) + "\n"
    if type(result).__name__ == "DPClaimAudit":  # a DP-claim audit (dpaudit.mia.claim), not imported here
        from dpaudit.report.text_claim import render_claim

        return render_claim(result) + "\n"  # type: ignore[arg-type]
    return render_mia(result) + "\n"


def render_markdown(result: AuditResult | MiaReport) -> str:
    """The Markdown format's document (``--save FILE.md``, ``result.save("x.md")``): the text report
    (:func:`render`) in a fenced code block, so its aligned columns survive a Markdown viewer."""
    return "```text\n" + render(result) + "```\n"


def render_audit(result: AuditResult) -> str:
    """The audit as a text table with the per-criterion values, top cells, caveats and explain trail."""
    expect(result, AuditResult, "render_audit")
    mode = "exact values (curator-only, not DP)" if result.exact else f"ε = {epsilon_text(result.epsilon)}"
    lines = [f"dpaudit fairness audit — n = {result.n:,}, {mode}"]
    if result.warnings:  # the block diagnostic (dpaudit.diagnostics): before anything is read
        lines += ["", "  WARNING, degenerate blocks:"] + [f"    - {w}" for w in result.warnings]
    lines += [f"  criterion {i + 1}: {c}" for i, c in enumerate(result.criteria)]
    header = f"  {'measure':<10} {'value':>12} {'95% interval':>27} {'ε':>7} {'sensitivity':>12}  DP"
    lines += ["", header]
    for m in result.measures.values():
        r = m.release
        eps = epsilon_text(r.epsilon)
        interval = "exact" if r.epsilon is None else f"[{r.interval[0]:.6g}, {r.interval[1]:.6g}]"
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
    lines += ["", "  how to read:"] + [f"    {line}" for line in _readings(result)]
    reasons = sorted({reason for m in result.measures.values() for reason in m.release.reasons})
    if reasons:
        lines += ["", "  not DP because:"] + [f"    - {r}" for r in reasons]
    lines += ["", "  explain trail:"] + [f"    {i + 1}. {s}" for i, s in enumerate(result.stages)]
    return "\n".join(lines)


@dataclass(frozen=True)
class CommandView:
    """What ``dpaudit fairness`` shows, renderer-neutral: a title line (its parts, joined by `` · ``), a table (its first column
    left-aligned, the others right-aligned; ``rows`` are ``(is a measure's own row, cells)``), notes
    under it (first, how to read each value), the not-DP reasons, the explain trail and the block
    diagnostic's warnings. The details' lines are asked of each renderer's
    hook (``report_lines`` or ``rich_lines``)."""

    title: tuple[str, ...]
    columns: tuple[str, ...]
    rows: tuple[tuple[bool, tuple[str, ...]], ...]
    notes: tuple[str, ...]
    reasons: tuple[str, ...]
    stages: tuple[str, ...]
    warnings: tuple[str, ...] = ()


def _readings(result: AuditResult) -> list[str]:
    """``title: scale; 0 = …; at most …`` of each measure (:func:`dpaudit.report._html_answer.reading`)."""
    from dpaudit.report._html_answer import reading

    return [f"{m.title}: {line}" for m in result.measures.values() if (line := reading(result, m))]


def command_view(result: AuditResult) -> CommandView:
    """The command's view of an audit: exact values per criterion beside the MI baseline (curator
    view), or each measure's release with its 95% interval, ε, sensitivity and DP flag."""
    expect(result, AuditResult, "command_view")
    mode = "exact values: curator-only, NOT differentially private" if result.exact else f"ε = {epsilon_text(result.epsilon)}"
    rows: list[tuple[bool, tuple[str, ...]]] = []
    if result.exact:
        columns: tuple[str, ...] = ("measure / criterion", "value", "MI (bits)", "sensitivity")
        for m in result.measures.values():
            rows.append((True, (f"{m.title} (sum)", f"{m.value:.6g}", "", f"{m.release.sensitivity:.4g}")))
            baseline = mi_baseline(m.details)
            for i, (crit, value) in enumerate(zip(result.criteria, m.per_criterion or ())):
                mi = f"{baseline[i].mi_bits:.6g}" if baseline else ""
                rows.append((False, (f"  {crit}", f"{value:.6g}", mi, "")))
        notes: tuple[str, ...] = ()
    else:
        columns = ("measure", "value", "95% interval", "ε", "sensitivity", "DP")
        for m in result.measures.values():
            r = m.release
            rows.append((True, (m.title, f"{r.value:.6g}", f"[{r.interval[0]:.4g}, {r.interval[1]:.4g}]",
                                epsilon_text(r.epsilon), f"{r.sensitivity:.4g}", "yes" if r.dp else "no")))
        notes = ("sum over: " + "; ".join(str(c) for c in result.criteria),)
    readings = tuple(f"how to read {line}" for line in _readings(result))
    reasons = tuple(sorted({reason for m in result.measures.values() for reason in m.release.reasons}))
    return CommandView(("dpaudit fairness", f"n = {result.n:,}", mode), columns, tuple(rows), readings + notes, reasons,
                       tuple(result.stages), tuple(result.warnings))


def plain_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A table as lines of text: columns two spaces apart, as wide as their widest cell (never wrapped),
    the first left-aligned and the others right-aligned, a rule of ``-`` under the header."""
    widths = [max(len(text) for text in column) for column in zip(columns, *rows)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(columns), "  ".join("-" * w for w in widths)] + [line(cells) for cells in rows]


def render_command(result: AuditResult) -> str:
    """The command's view (:func:`command_view`) as plain text: what ``dpaudit fairness`` prints to a
    pipe or a file, the same content as its terminal tables."""
    view = command_view(result)
    lines = [" · ".join(view.title), *plain_table(view.columns, [cells for _, cells in view.rows]), *view.notes]
    for m in result.measures.values():
        if m.details is not None:
            lines += hook(m.details, "report_lines")(m)
    lines += [f"warning, degenerate blocks: {w}" for w in view.warnings]
    lines += [f"not DP: {reason}" for reason in view.reasons]
    lines += [f"{i}. {stage}" for i, stage in enumerate(view.stages, 1)]
    return "\n".join(lines)


def render_mia(report: MiaReport) -> str:
    """A membership-inference evaluation as text: the verdict per α first, then every rule at every α with
    its CI, realised FPR, ε bound and validity, the most vulnerable records, and the diagnostics."""
    from dpaudit.mia.findings import RULE_LABELS as RULE_NAMES
    from dpaudit.mia.results import MiaReport

    expect(report, MiaReport, "render_mia")

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
    if report.disparity is not None:
        from dpaudit.report.text_groups import disparity_lines

        lines += ["", *disparity_lines(report.disparity)]
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
