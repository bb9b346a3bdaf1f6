"""The membership-inference evaluation as one self-contained HTML page (``dpaudit mia evaluate --html``).

Sections, in reading order:

1. **Summary** — the verdict at every α (evidence of leakage / none at this M / not estimable, from
   the rule valid for these scores, :mod:`dpaudit.mia.verdict`) with why a Gaussian rule is not the
   headline, the verdict's TPR (the page's first value) with its interval and a one-line reading
   (chance = the FPR, at most 1; ε ≥ 0 = no evidence), FPC on/off, and the normality and saturation
   diagnostics in one line each;
   **Membership risk by COLUMN** (with ``--by``) — the disparate-vulnerability answer line, then per α
   every group's mean per-record TPR with its interval, the gaps and the permutation tests
   (:mod:`dpaudit.report._html_groups`);
2. **ROC curves** — log–log, "false positive rate" against "true positive rate": the naive
   concatenation, PP normal and PP t, and the mean per-record (parametric) curve, the chance diagonal,
   and every rule's operating point at each α (the numbers of the tables) as markers;
3. **TPR at each α** — one table per α: every rule's TPR, bootstrap and Clopper–Pearson intervals,
   realised FPR, ε lower bound and point estimate, whether its calibration holds for these scores, and
   why a rule is not estimable or not valid;
   **Most vulnerable records** — per α the records with the highest TPR under the verdict's rule, their
   intervals and whether they stand out after the false-discovery-rate correction;
4. **What each rule estimates** — one plain sentence per rule;
5. **Per-record FPR of the naive threshold** — histogram per α and the max / share above α;
6. **Gaussian-model diagnostics** — the Jarque–Bera share and the t thresholds' own FPR;
7. **Configuration** — M, N+, N, design, attack, threshold kind, FPC, bootstrap, seed.

Every number in a table is the ``--json`` document's value printed by :func:`dpaudit.report._html.fmt`
(4 significant digits), so a reader or a test can check the page against the JSON. A report without
curve points (a document saved before they existed) still renders: the ROC figure then shows the
operating points only and says why. :func:`render_mia_fragment` gives the same sections as a
fragment for notebooks (``MiaReport._repr_html_``).
"""

from __future__ import annotations

import math
from typing import Any

from dpaudit._document import renders
from dpaudit.mia.results import MiaReport
from dpaudit.report._html import (
    PALETTE,
    esc,
    figure_svg,
    fmt,
    fragment,
    keep,
    key_values,
    new_figure,
    note,
    page,
    section,
    table,
)
from dpaudit.report._html_groups import disparity_section
from dpaudit.report._html_mia_summary import level_label, rule_label, summary_section, vulnerable_section

__all__ = ["render_mia", "render_mia_fragment", "mia_sections", "RULE_MEANING", "CURVES_MISSING"]

#: One plain sentence per rule: what it estimates.
RULE_MEANING = {
    "naive": "Pools the attack statistic of every model and record into one ROC and reads the single global "
             "threshold with FPR at most α: the usual efficient-LiRA number, whose FPR is α only on average "
             "over records (some records are far above it, see the histogram).",
    "pp_normal": "Standardises every score by its own record's OUT fit (leave-one-out) and calls a member above "
                 "the normal quantile Φ⁻¹(1 − α): FPR α for every record if the fits were exact, but with few "
                 "models it calls too many members (realised FPR above α).",
    "pp_t": "The same standardised scores with the Student-t threshold, which allows for the OUT fit being "
            "estimated from only the OUT models: FPR α for every record under the Gaussian model.",
    "pp_rank": "Ranks each score among its record's OUT scores under the other models (a conformal p-value) "
               "and calls a member at p ≤ α: FPR α for every record whatever the score distribution.",
    "per_record_empirical": "The mean over records of each record's own conformal test on its OUT scores: the "
                            "mean per-record TPR the calibrated rules aim at, measured without a model, but "
                            "only when every record has at least ⌈1/α⌉ − 1 OUT models.",
    "per_record_parametric": "The mean over records of the unbiased TPR of each record's own Student-t test: the "
                             "same mean per-record TPR at any α, trustworthy as far as the scores are Gaussian "
                             "(see the diagnostics).",
}

#: What the page says when the report carries no curve points.
CURVES_MISSING = ("The ROC curves are not in this document: it was saved by a dpaudit version that did not store "
                  "curve points. The figure shows each rule's operating point at every α only; evaluate the "
                  "scores again (dpaudit mia evaluate … --json or --html) to include the curves.")
_HISTOGRAMS_MISSING = ("The per-record FPR histogram is not in this document (saved by a dpaudit version that did "
                       "not store it); the table above gives its maximum and the share of records above α.")

#: Colour and marker of each rule in the figures (Okabe–Ito).
_STYLE = {
    "naive": (PALETTE[6], "o"),
    "pp_normal": (PALETTE[2], "s"),
    "pp_t": (PALETTE[5], "D"),
    "pp_rank": (PALETTE[3], "^"),
    "per_record_empirical": (PALETTE[1], "v"),
    "per_record_parametric": (PALETTE[7], "P"),
}


@renders(MiaReport)
def render_mia(report: MiaReport) -> str:
    """The evaluation as one self-contained HTML document (inline CSS and SVG figures, no script, no
    external resource; printed on A4 without forced page breaks)."""
    title, subtitle = _headline(report)
    return page(title, subtitle, mia_sections(report), footer=_footer())


@renders(MiaReport)
def render_mia_fragment(report: MiaReport) -> str:
    """The same sections as :func:`render_mia`, as a fragment (no ``<html>``) with a stylesheet scoped
    to it: what a notebook shows inline (``MiaReport._repr_html_``)."""
    title, subtitle = _headline(report)
    return fragment(title, subtitle, mia_sections(report))


def mia_sections(report: MiaReport) -> list[str]:
    """The page's sections, in reading order (module docstring)."""
    groups = [] if report.disparity is None else [disparity_section(report.disparity)]
    return [summary_section(report), *groups, _roc(report), _tables(report), vulnerable_section(report),
            _meanings(report), _spread(report), _diagnostics(report), _configuration(report)]


def _headline(report: MiaReport) -> tuple[str, str]:
    o = report.options
    attack = str(o.get("attack", "lira")).upper()
    fpc = "FPC on" if o.get("fpc") else "FPC off"
    return (f"dpaudit membership-inference evaluation — {attack}",
            f"M = {fmt(report.n_models)} models · N+ = {fmt(report.n_records)} records · "
            f"threshold {o.get('threshold', 't')} · {fpc} · α = {', '.join(fmt(a) for a in report.alphas)}")


def _footer() -> str:
    from dpaudit._version import __version__

    return (f"dpaudit {__version__} · method of Jälkö, Pradhan, Räisä & Honkela, arXiv 2605.25819; LiRA of Carlini "
            "et al., IEEE S&P 2022 · every number in a table is the --json document's value, printed to 4 "
            "significant digits")


def _roc(report: MiaReport) -> str:
    fig, ax = new_figure(7.2, 5.2)
    n_neg_floor: list[float] = []
    curves = report.curves or {}
    for rule, curve in curves.items():
        points = [(x, y) for x, y in zip(curve.fpr, curve.tpr) if x > 0 and y > 0]
        if not points:
            continue
        n_neg_floor.append(points[0][0])
        colour, _ = _STYLE.get(rule, (PALETTE[0], "o"))
        label = rule_label(rule) + (" (x: nominal α)" if curve.fpr_kind == "nominal" else "")
        label += _sample(curve, report)
        ax.plot([p[0] for p in points], [p[1] for p in points], color=colour, lw=1.6, label=label,
                linestyle="--" if curve.fpr_kind == "nominal" else "-", drawstyle="default")
    markers = []
    for row in report.rows:
        for rule, r in row.rules.items():
            if r.estimable and r.fpr is not None and r.tpr is not None and r.fpr > 0 and r.tpr > 0:
                markers.append((rule, float(r.fpr), float(r.tpr)))
    seen: set[str] = set()
    for rule, x, y in markers:
        colour, marker = _STYLE.get(rule, (PALETTE[0], "o"))
        ax.plot([x], [y], marker=marker, color=colour, markeredgecolor="white", markersize=7, linestyle="none",
                label=None if rule in seen or rule in curves else f"{rule_label(rule)} (at α)")
        seen.add(rule)
    for alpha in report.alphas:
        ax.axvline(alpha, color="#999999", lw=0.8, linestyle=":")
        ax.annotate(f"α = {fmt(alpha)}", (alpha, 1.0), xytext=(2, -10), textcoords="offset points", fontsize=8,
                    color="#555555")
    low_x = 10 ** math.floor(math.log10(min([*n_neg_floor, *(m[1] for m in markers), min(report.alphas), 1e-3])))
    tprs = [y for c in curves.values() for x, y in zip(c.fpr, c.tpr) if x > 0 and y > 0] + [m[2] for m in markers]
    low_y = 10 ** math.floor(math.log10(max(min(tprs, default=low_x), low_x)))
    ax.plot([low_x, 1], [low_x, 1], color="#777777", lw=1, linestyle="--", label="chance (TPR = FPR)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low_x, 1.05)
    ax.set_ylim(low_y, 1.05)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.grid(True, which="major", color="#e0e0e0", lw=0.6)
    ax.legend(loc="lower right", fontsize=8, frameon=True)
    if report.curves is None:
        caption = ("Operating points of every rule at each α (realised FPR, TPR; log–log), the chance diagonal; "
                   "the curves are not in this document.")
        head = note(CURVES_MISSING, "warn")
    else:
        sub = (" Curves labelled with a number of models or records are counted on evenly spaced models or "
               "records (a figure's resolution); the markers use every target." if any(_sample(c, report)
                                                                                       for c in curves.values()) else "")
        caption = ("ROC curves, log–log: TPR against realised FPR as the threshold sweeps (per-record parametric: "
                   "against the nominal α); markers are each rule's operating point at every α, the numbers of "
                   "the tables; dashed grey: chance." + sub)
        head = ""
    body = head + keep("<p>Read the left part: membership inference matters at small false-positive rates, where "
                       "an attacker's claims are trustworthy. A curve far above the diagonal there means leakage.</p>",
                       figure_svg(fig, caption=caption, label="roc"))
    return section("ROC curves", body, anchor="roc")


def _sample(curve: Any, report: MiaReport) -> str:
    """", 2 of 256 models" when a curve was counted on part of the targets, else ""."""
    parts = []
    if 0 < curve.models < report.n_models:
        parts.append(f"{fmt(curve.models)} of {fmt(report.n_models)} models")
    if 0 < curve.records < report.n_records:
        parts.append(f"{fmt(curve.records)} of {fmt(report.n_records)} records")
    return "".join(f", {p}" for p in parts)


def _tables(report: MiaReport) -> str:
    level = level_label(report)
    headers = ["rule", "TPR", "CI low", "CI high", "CP low", "CP high", "realised FPR", "ε ≥", "ε point",
               "valid here"]
    numeric = [False] + [True] * 8 + [False]
    parts = []
    for alpha, row in zip(report.alphas, report.rows):
        rows, notes = [], []
        for rule, r in row.rules.items():
            ci = r.ci or (None, None)
            cp = r.cp or (None, None)
            valid = {True: "yes", False: "no", None: "—"}[r.valid] if r.estimable else "—"
            rows.append([rule_label(rule), r.tpr, ci[0], ci[1], cp[0], cp[1], r.fpr, r.epsilon_lb, r.epsilon_point, valid])
            text = _rule_note(rule, r)
            if text:
                notes.append(f"<li><strong>{esc(rule_label(rule))}</strong>: {esc(text)}</li>")
        parts.append(f"<h3>α = {fmt(alpha)}</h3>" + table(headers, rows, numeric=numeric)
                     + (f"<ul>{''.join(notes)}</ul>" if notes else ""))
    body = (f"<p>Every rule at every target FPR α. CI: {level} bootstrap interval over models and records (the "
            "naive threshold re-chosen in every replicate; over records for the per-record means). CP: "
            f"{level} Clopper–Pearson interval on the pooled counts of the fixed-threshold rules (they share "
            "models and records, which only the bootstrap sees). ε ≥: lower bound on ε at the same level from "
            "the realised rates, the more conservative of the two intervals; ε point: the same formula on the "
            "point estimates, not a bound. —: not applicable.</p>" + "".join(parts))
    return section("TPR at each α", body, anchor="tables")


def _rule_note(rule: str, r: Any) -> str:
    if not r.estimable:
        return str(r.reason or "not estimable")
    bits = [f"not valid for these scores: {r.warning}"] if r.valid is False and r.warning else []
    if r.fpr_kind == "nominal":
        bits.append("FPR is the nominal α (Gaussian model)")
    if r.t_threshold_fpr_loo is not None:
        bits.append(f"t thresholds' own FPR (leave-one-out): {fmt(r.t_threshold_fpr_loo)}")
    if rule == "naive":
        bits.append("threshold chosen on these data: no Clopper–Pearson")
        if r.threshold is not None:
            bits.append(f"global threshold {fmt(r.threshold)}")
    if r.epsilon_lb is None and r.estimable:
        bits.append("no counts: no ε bound")
    return "; ".join(bits)


def _meanings(report: MiaReport) -> str:
    rules = list(report.rows[0].rules) if report.rows else list(RULE_MEANING)
    items = "".join(f"<dt>{esc(rule_label(r))}</dt><dd>{esc(RULE_MEANING.get(r, ''))}</dd>" for r in rules)
    body = (f'<dl class="kv">{items}</dl>'
            "<p>As M grows the calibrated concatenations (PP) converge to the mean per-record TPR; the naive "
            "concatenation does not, because its single threshold gives every record its own FPR.</p>")
    return section("What each rule estimates", body, anchor="rules")


def _spread(report: MiaReport) -> str:
    rows = [[alpha, row.naive_per_record_fpr.max, row.naive_per_record_fpr.share_above_alpha]
            for alpha, row in zip(report.alphas, report.rows)]
    body = ("<p>The naive rule's one global threshold gives each record its own false-positive rate; only their "
            "average is α. The spread is the evidence of miscalibration: records far above α are the ones the "
            "naive number misjudges.</p>"
            + table(["α", "max per-record FPR", "share of records above α"], rows))
    hists = report.fpr_histograms
    if not hists:
        body += note(_HISTOGRAMS_MISSING, "warn")
    else:
        fig, _ = new_figure(7.2, 2.8 if len(hists) <= 3 else 5.2)
        fig.clear()
        cols = min(len(hists), 3)
        rows_n = -(-len(hists) // cols)
        axes = fig.subplots(rows_n, cols, squeeze=False).ravel()
        for ax, h in zip(axes, hists):
            widths = [b - a for a, b in zip(h.edges[:-1], h.edges[1:])]
            ax.bar(h.edges[:-1], h.counts, width=widths, align="edge", color=PALETTE[6], edgecolor="white", lw=0.4)
            ax.axvline(h.alpha, color=PALETTE[0], lw=1.2, linestyle="--", label=f"α = {fmt(h.alpha)}")
            ax.set_yscale("symlog", linthresh=1)
            ax.set_xlim(min(0.0, h.edges[0]), h.edges[-1])
            ax.set_xlabel("per-record FPR")
            ax.set_ylabel("records")
            ax.set_title(f"α = {fmt(h.alpha)}", fontsize=10)
            ax.legend(fontsize=8, loc="upper right")
        for ax in axes[len(hists):]:
            ax.set_visible(False)
        body += figure_svg(fig, caption="Histogram of the per-record FPR of the naive global threshold, one panel "
                           "per α (records on a symmetric-log scale; dashed: α). Under calibration every record "
                           "would sit near α.", label="fpr-histogram")
    return section("Per-record FPR of the naive threshold", body, anchor="spread")


def _diagnostics(report: MiaReport) -> str:
    d = report.diagnostics
    pairs: list[tuple[str, Any]] = [
        ("share of records whose OUT scores fail Jarque–Bera at 0.01", d.get("share_non_normal")),
        ("fewest OUT scores in a leave-one-out fit", d.get("min_n_out")),
        ("AUC of the naive statistic", d.get("auc_naive")),
    ]
    for alpha, row in zip(report.alphas, report.rows):
        par = row.rules.get("per_record_parametric")
        if par is not None and par.t_threshold_fpr_loo is not None:
            pairs.append((f"α = {fmt(alpha)}: t thresholds crossed by the records' own OUT scores",
                          par.t_threshold_fpr_loo))
    body = ("<p>The PP-normal, PP-t and parametric rules rest on Gaussian scores per record. Two checks: the "
            "share of records whose OUT scores fail a Jarque–Bera normality test (about 1 % by chance at level "
            "0.01), and how often each record's t threshold is crossed by its own OUT scores, leave-one-out "
            "(α when the tails are Gaussian). Where they are off, prefer the rank-based rules (PP rank, "
            "per-record empirical).</p>" + key_values(pairs))
    other = {k: v for k, v in d.items() if k not in ("share_non_normal", "min_n_out", "auc_naive")}
    if other:
        body += key_values(sorted(other.items()))
    return section("Gaussian-model diagnostics", body, anchor="diagnostics")


def _configuration(report: MiaReport) -> str:
    o = dict(report.options)
    found = o.get("scores")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    n_in = o.get("n_in")
    design = meta.get("design")
    if design is None and isinstance(n_in, (list, tuple)) and len(n_in) == 2:
        if n_in[0] == n_in[1] and 2 * n_in[0] == report.n_models:
            design = "efficient (every record IN in exactly M/2 models)"
        else:
            design = f"records IN in {fmt(n_in[0])}–{fmt(n_in[1])} of the models"
    attack_options = o.get("attack_options") or {}
    pairs: list[tuple[str, Any]] = [
        ("models M", report.n_models),
        ("pool records N+", report.n_records),
        ("training-set size N", o.get("train_size")),
        ("design", design if design is not None else "not recorded"),
        ("attack", str(o.get("attack", "lira")) + (" (" + ", ".join(f"{k} = {v}" for k, v in attack_options.items())
                                                    + ")" if attack_options else "")),
        ("PP threshold of the headline", o.get("threshold")),
        ("sign of the PP transform", o.get("sign")),
        ("finite-population correction", "on" if o.get("fpc") else "off"),
        ("strict (FPR < α, LiRA-code parity)", o.get("strict")),
        ("bootstrap replicates", o.get("n_boot")),
        ("bootstrap seed", o.get("seed", "not recorded")),
        ("interval level", o.get("level")),
        ("δ of the ε bounds", o.get("delta")),
        ("target FPRs α", ", ".join(fmt(a) for a in report.alphas)),
    ]
    pairs += [(f"scores: {k}", v) for k, v in meta.items()]
    return section("Configuration", key_values(pairs), anchor="configuration")
