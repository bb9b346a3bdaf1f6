"""The MIA reliability results, rendered from the saved JSON alone: CSV rows, the page, its statements.

``mia_reliability.py`` writes ``mia_reliability.json`` — the run's config and timing, and for every
dataset × M × FPC the report on the scores as trained followed by the report on their null (the
same scores with membership permuted within each record), each ``meta`` naming the configuration —
and then renders ``mia_reliability.csv`` and ``mia_reliability.md`` from that file with
:func:`rows_of_doc`, :func:`csv_text` and :func:`render`; ``--page-only`` does the same from the
saved file. The committed CSV and page are therefore exactly the rendering of the committed JSON
(``tests/test_experiment_mia_reliability.py`` checks it), and every number the page states — the
null-calibration and ε statements included — is computed here from those reports.

Null calibration: on the null a valid rule's TPR equals its realised FPR. A configuration counts
against a rule when the null TPR's 95 % bootstrap interval excludes that FPR (for the parametric
per-record rule: excludes α, the FPR its Gaussian model assigns). ε lower bounds are each rule's
``epsilon_lb`` (Clopper–Pearson/bootstrap bounds of the realised rates, spec ``mia.md`` §4); the
verdict uses the calibrated rules — PP-rank, whose counts the per-record empirical estimate shares,
and PP-t where those are not estimable — never the naive rule, whose threshold is chosen on the
same OUT scores it is then evaluated on (the bound's fixed-threshold assumption does not hold).
"""

from __future__ import annotations

import csv
import io
import math

from dpaudit._errors import DataError
from dpaudit.mia.evaluate import RULE_NAMES, RULES

#: Short rule names of the page's column heads and statements.
SHORT = {"naive": "naive", "pp_normal": "PP-N(0,1)", "pp_t": "PP-t", "pp_rank": "PP-rank",
         "per_record_empirical": "per-record emp.", "per_record_parametric": "per-record param."}
#: Rules with counts, hence an ε lower bound (the parametric per-record estimate has none).
COUNTED = ("naive", "pp_normal", "pp_t", "pp_rank")
#: Per rule and for the scores (``""``) and the null (``"null_"``): the CSV's numbers.
RULE_FIELDS = ("tpr", "ci_lo", "ci_hi", "fpr", "epsilon_lb")
CSV_FIELDS = [
    "dataset", "model", "M", "n_records", "n_dropped", "fpc", "alpha",
    *(f"{rule}_{side}{what}" for rule in RULES for side in ("", "null_") for what in RULE_FIELDS),
    "t_threshold_fpr_loo", "null_t_threshold_fpr_loo",
    "naive_per_record_fpr_max", "naive_per_record_share_above_alpha", "binomial_share_above_alpha",
    "auc_naive", "share_non_normal", "min_n_out", "eval_seconds",
    "verdict", "verdict_rule", "null_verdict", "pp_t_valid", "per_record_parametric_valid",
]


def _num(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def _rows_of_pair(real: dict, null: dict) -> list[dict]:
    """One row per α: every rule on the scores (``{rule}_tpr`` …) and on their null (``{rule}_null_tpr`` …)."""
    meta, rows = real["meta"], []
    for i, (res, nres) in enumerate(zip(real["results"], null["results"], strict=True)):
        row = {"dataset": meta["dataset"], "model": meta["model"], "M": meta["M"], "n_records": real["n_records"],
               "n_dropped": meta["n_dropped"], "fpc": real["options"]["fpc"], "alpha": res["alpha"]}
        for rule in RULES:
            for side, r in (("", res[rule]), ("null_", nres[rule])):
                ci = r.get("ci") or [None, None]
                row.update({f"{rule}_{side}tpr": _num(r["tpr"]), f"{rule}_{side}ci_lo": _num(ci[0]),
                            f"{rule}_{side}ci_hi": _num(ci[1]), f"{rule}_{side}fpr": _num(r["fpr"]),
                            f"{rule}_{side}epsilon_lb": _num(r["epsilon_lb"])})
        row["t_threshold_fpr_loo"] = _num(res["per_record_parametric"].get("t_threshold_fpr_loo"))
        row["null_t_threshold_fpr_loo"] = _num(nres["per_record_parametric"].get("t_threshold_fpr_loo"))
        row["naive_per_record_fpr_max"] = res["naive_per_record_fpr"]["max"]
        row["naive_per_record_share_above_alpha"] = res["naive_per_record_fpr"]["share_above_alpha"]
        row["binomial_share_above_alpha"] = meta["binomial_share_above_alpha"][i]
        d = real["diagnostics"]
        row.update(auc_naive=d["auc_naive"], share_non_normal=d["share_non_normal"], min_n_out=d["min_n_out"],
                   eval_seconds=meta["eval_seconds"])
        # the report's own verdict (issue 23; absent from runs saved before verdicts existed)
        verdict, null_verdict = res.get("verdict") or {}, nres.get("verdict") or {}
        row.update(verdict=verdict.get("text", ""), verdict_rule=verdict.get("rule") or "",
                   null_verdict=null_verdict.get("text", ""),
                   pp_t_valid=res["pp_t"].get("valid", ""),
                   per_record_parametric_valid=res["per_record_parametric"].get("valid", ""))
        rows.append(row)
    return rows


def rows_of_doc(doc: dict) -> list[dict]:
    """The CSV rows of a saved ``mia_reliability.json``: its reports taken as (scores, null) pairs."""
    reports = doc.get("reports")
    if not isinstance(reports, list) or len(reports) % 2:
        raise DataError("mia_reliability.json: 'reports' must list (scores, null) report pairs")
    rows: list[dict] = []
    for real, null in zip(reports[::2], reports[1::2], strict=True):
        if "null" in real.get("meta", {}) or "null" not in null.get("meta", {}):
            raise DataError("mia_reliability.json: every report on the scores must be followed by its null")
        rows += _rows_of_pair(real, null)
    return rows


def csv_text(rows: list[dict]) -> str:
    buffer = io.StringIO(newline="")
    w = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    return buffer.getvalue()


def _g(x: float) -> str:
    return f"{x:#.3g}"


def _reference(r: dict, rule: str, side: str = "null_") -> float:
    """The FPR a rule's TPR is compared with: its realised FPR (α for the parametric rule's model)."""
    return r["alpha"] if rule == "per_record_parametric" else r[f"{rule}_{side}fpr"]


def _excluded(r: dict, rule: str, side: str = "null_") -> str:
    """'↑' / '↓' when the TPR's 95 % CI lies above / below the rule's reference FPR, else ''."""
    ref = _reference(r, rule, side)
    if r[f"{rule}_{side}ci_lo"] > ref:
        return "↑"
    return "↓" if r[f"{rule}_{side}ci_hi"] < ref else ""


def _tpr_ci(r: dict, rule: str, side: str = "") -> str:
    tpr = r[f"{rule}_{side}tpr"]
    if math.isnan(tpr):
        return "—"
    text = _g(tpr)
    if not math.isnan(r[f"{rule}_{side}ci_lo"]):
        text += f" [{_g(r[f'{rule}_{side}ci_lo'])}, {_g(r[f'{rule}_{side}ci_hi'])}]"
    return text + (f" {_excluded(r, rule, side)}" if side and _excluded(r, rule, side) else "")


def _where(r: dict) -> str:
    return f"{r['dataset']} M={r['M']} FPC {'on' if r['fpc'] else 'off'} α={r['alpha']:g}"


def _key(r: dict) -> str:
    return f"| {r['dataset']} | {r['M']} | {'on' if r['fpc'] else 'off'} | {r['alpha']:g} "


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}" if values else "—"


def _listed(rows: list[dict], rule: str, limit: int = 6) -> str:
    items = [f"{_where(r)} {_g(r[f'{rule}_null_tpr'])} vs {_g(_reference(r, rule))} "
             f"[{_g(r[f'{rule}_null_ci_lo'])}, {_g(r[f'{rule}_null_ci_hi'])}]" for r in rows[:limit]]
    return "; ".join(items) + (f"; and {len(rows) - limit} more" if len(rows) > limit else "")


def null_statements(rows: list[dict]) -> list[str]:
    """Per rule, from the null columns: TPR/FPR range, configurations whose CI excludes the FPR, ε > 0."""
    lines = []
    for rule in RULES:
        sel = [r for r in rows if not math.isnan(r[f"{rule}_null_tpr"])]
        parametric = rule == "per_record_parametric"
        ref_name = "α (the FPR of its Gaussian model)" if parametric else "its realised FPR"
        if not sel:
            lines.append(f"- **{SHORT[rule]}**: not estimable in any configuration.")
            continue
        ratios = [r[f"{rule}_null_tpr"] / _reference(r, rule) for r in sel if _reference(r, rule) > 0]
        above = [r for r in sel if _excluded(r, rule) == "↑"]
        below = [r for r in sel if _excluded(r, rule) == "↓"]
        text = (f"- **{SHORT[rule]}** ({len(sel)} configurations): null TPR / {ref_name} {_span(ratios)}")
        if not parametric:
            text += f" (realised FPR {_span([r[f'{rule}_null_fpr'] / r['alpha'] for r in sel])} α)"
        text += (f"; the null TPR's 95 % CI excludes {'α' if parametric else 'it'} in {len(above) + len(below)} "
                 f"(above: {len(above)}, below: {len(below)}; with FPC off {sum(not r['fpc'] for r in above)} "
                 f"above and {sum(not r['fpc'] for r in below)} below)")
        text += "".join(f"; {name}: {_listed(group, rule)}" for name, group in (("above", above), ("below", below))
                        if group)
        if rule in COUNTED:
            eps = [r[f"{rule}_null_epsilon_lb"] for r in sel]
            text += f"; null ε lower bound > 0 in {sum(e > 0 for e in eps)} (largest {max(eps):.3f})"
        lines.append(text + ".")
    return lines


def verdict_rule(r: dict) -> str:
    """The rule an ε verdict rests on: the report's own verdict's (PP-rank where estimable, else PP-t if its
    Gaussian check passed), for a run saved before verdicts existed PP-rank where estimable, else PP-t."""
    if r.get("verdict_rule"):
        return str(r["verdict_rule"])
    return "pp_rank" if not math.isnan(r["pp_rank_epsilon_lb"]) else "pp_t"


def epsilon_statements(rows: list[dict]) -> list[str]:
    """ε lower bounds at each dataset's largest M, FPC off, per α: the calibrated rule's and the naive one's."""
    lines = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        m_max = max(r["M"] for r in rows if r["dataset"] == dataset)
        parts = []
        for r in (r for r in rows if r["dataset"] == dataset and r["M"] == m_max and not r["fpc"]):
            if r.get("verdict") and not r.get("verdict_rule"):  # no valid rule: the report's verdict says why
                parts.append(f"α = {r['alpha']:g}: {r['verdict']}")
                continue
            rule = verdict_rule(r)
            tpr_ci = _tpr_ci(r, rule)
            parts.append(f"α = {r['alpha']:g}: ε ≥ {r[f'{rule}_epsilon_lb']:.3f} by {SHORT[rule]} (TPR {tpr_ci} at "
                         f"realised FPR {_g(r[f'{rule}_fpr'])}; null {_g(r[f'{rule}_null_tpr'])} at "
                         f"{_g(r[f'{rule}_null_fpr'])}), naive {r['naive_epsilon_lb']:.3f}*")
        lines.append(f"- {dataset}, M = {m_max}, FPC off — " + "; ".join(parts) + ".")
    return lines


def verdict_lines(rows: list[dict]) -> list[str]:
    """The report's verdict per configuration (FPC off and on), on the scores and on their null."""
    lines = ["| dataset | M | FPC | α | verdict | on the null |", "|---|---:|---|---:|---|---|"]
    for r in rows:
        if r.get("verdict"):
            lines.append(f"{_key(r)}| {r['verdict']} | {r['null_verdict']} |")
    return lines if len(lines) > 2 else []


def _overview(rows: list[dict]) -> list[str]:
    lines = [
        "| dataset | M | dropped | FPC | α | " + " | ".join(SHORT[rule] for rule in RULES)
        + " | ε ≥ " + " / ".join(SHORT[rule] for rule in COUNTED) + " | naive pr-FPR max / >α (binom) |",
        "|---|---:|---:|---|---:|" + "---:|" * len(RULES) + "---|---|",
    ]
    for r in rows:
        cells = ["—" if math.isnan(r[f"{rule}_tpr"]) else f"{_g(r[f'{rule}_tpr'])} ({_g(r[f'{rule}_null_tpr'])})"
                 for rule in RULES]
        eps = " / ".join("—" if math.isnan(r[f"{rule}_epsilon_lb"]) else
                         f"{r[f'{rule}_epsilon_lb']:.3f}" + ("*" if rule == "naive" else "") for rule in COUNTED)
        lines.append(f"| {r['dataset']} | {r['M']} | {r['n_dropped']} | {'on' if r['fpc'] else 'off'} | "
                     f"{r['alpha']:g} | " + " | ".join(cells) + f" | {eps} | {r['naive_per_record_fpr_max']:.3f} / "
                     f"{r['naive_per_record_share_above_alpha']:.1%} ({r['binomial_share_above_alpha']:.1%}) |")
    return lines


def _rule_table(rows: list[dict], rule: str) -> list[str]:
    parametric = rule == "per_record_parametric"
    fpr_head = "FPR: α by model (t thr. FPR)" if parametric else "real. FPR"
    lines = [f"### {RULE_NAMES[rule]}", "",
             f"| dataset | M | FPC | α | TPR [95% CI] | {fpr_head} | ε ≥ | null TPR [95% CI] | null {fpr_head} "
             "| null ε ≥ |", "|---|---:|---|---:|---|---:|---:|---|---:|---:|"]
    sel = [r for r in rows if not math.isnan(r[f"{rule}_tpr"])]
    for r in sel:
        cells = []
        for side in ("", "null_"):
            fpr = (f"{r['alpha']:g} ({_g(r[f'{side}t_threshold_fpr_loo'])})" if parametric
                   else _g(r[f"{rule}_{side}fpr"]))
            eps = "n/a" if math.isnan(r[f"{rule}_{side}epsilon_lb"]) else f"{r[f'{rule}_{side}epsilon_lb']:.3f}"
            cells += [_tpr_ci(r, rule, side), fpr, eps]
        lines.append(_key(r) + "| " + " | ".join(cells) + " |")
    if len(sel) < len(rows):
        lines += ["", f"Not estimable in the other {len(rows) - len(sel)} configurations (too few OUT models)."]
    return lines + [""]


def render(doc: dict, rows: list[dict]) -> str:
    """The page ``mia_reliability.md`` of a saved run (its config, timing and rows)."""
    c = doc["config"]
    lines = [
        "# MIA reliability vs number of models M (generated by `experiments/mia_reliability.py`)",
        "",
        f"Target model: {c['model']} (trainer {c['trainer']}); pool N+ = {c['pool']:,}, N = N+/2; M_max = "
        f"{max(c['models'])} models trained once per dataset, M = first M of them; bootstrap n_boot = {c['n_boot']} "
        f"(models × records for the pooled rules, records for the per-record means); attack = {c['attack']}; "
        f"PP sign = {c['sign']}; seed {c['seed']}. Every configuration is evaluated on the scores as trained and "
        "on their **null** (membership permuted within each record: no signal), where a valid rule reports TPR = "
        "its realised FPR and no ε > 0. TPR at FPR α; `real. FPR` = the rule's realised FPR over the OUT targets "
        "(per-record parametric: α by its Gaussian model, in brackets its t thresholds' own leave-one-out FPR). "
        "PP-rank and per-record empirical need every record OUT in ≥ ⌈1/α⌉ − 1 models: `—` = not estimable at "
        "this M. `ε ≥` = the rule's Clopper–Pearson/bootstrap ε lower bound from its realised rates (the "
        "per-record empirical estimate shares PP-rank's counts and bound). * naive: its threshold is chosen on "
        "the same OUT scores to reach FPR ≤ α, so the bound's fixed-threshold assumption does not hold — shown, "
        "not used for a verdict. `naive pr-FPR max / >α` = per-record FPR under the naive global threshold: "
        "maximum and share of records above α, with `(binom …)` the share expected above α from "
        "Binomial(n_out, α) noise alone. `dropped` = records with < 3 IN or < 3 OUT models among the first M.",
        "",
        "Timing (s): " + ", ".join(f"{k} {v:.0f}" for k, v in doc["timing_s"].items()),
        "",
        "## Calibration on the null (computed from the tables below)",
        "",
        *null_statements(rows),
        "",
        "## ε lower bounds for the verdict (PP-rank where estimable, else PP-t where its Gaussian check passes)",
        "",
        *epsilon_statements(rows),
        "",
        *(["## The report's verdict per configuration", "",
           "Each report leads with one verdict per α from the rule valid for its scores (docs/mia.md, \"Verdicts "
           "on the scores users bring\"); beside it, the verdict on the null.", "", *verdict_lines(rows), ""]
          if verdict_lines(rows) else []),
        "## Every rule: TPR on the scores (null TPR in brackets)",
        "",
        *_overview(rows),
        "",
        "## Each rule on the scores and on their null",
        "",
        "`↑` / `↓`: the null TPR's 95 % CI lies above / below the rule's realised FPR (α for per-record param.).",
        "",
    ]
    for rule in RULES:
        lines += _rule_table(rows, rule)
    diag: dict[str, dict[int, tuple[float, float]]] = {}
    for r in rows:
        if not r["fpc"]:
            diag.setdefault(r["dataset"], {})[r["M"]] = (r["auc_naive"], r["share_non_normal"])
    lines += ["Diagnostics (FPC off): naive AUC; share of records whose OUT scores fail Jarque–Bera at 0.01.", ""]
    for ds, by_m in diag.items():
        lines.append(f"- {ds}: " + "; ".join(f"M={m}: AUC {auc:.4f}, non-normal {nn:.1%}" for m, (auc, nn) in by_m.items()))
    lines.append("")
    return "\n".join(lines)
