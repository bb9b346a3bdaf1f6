"""Every rule's result at every α: bootstrap replicates of its rates, then TPR, FPR, intervals and ε.

From what the evaluation's passes counted (:class:`dpaudit.mia.tally.Tally`),
:func:`bootstrap_replicates` sums every rule's rates in each replicate of the two-axis bootstrap
(:class:`dpaudit.mia.metrics.Bootstrap`; the naive threshold re-chosen in every replicate) and
:func:`alpha_rows` turns counts and replicates into one :class:`~dpaudit.mia.results.RuleResult` per
rule of :data:`RULES` and α: Clopper–Pearson and bootstrap intervals, the ε lower bound from the
rule's realised rates with confidence and the labelled point estimate (:func:`dpaudit.mia.evaluate.evaluate`
describes the rules).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.mia.findings import RULE_LABELS, RULES, VulnerableRecords
from dpaudit.mia.metrics import (
    Bootstrap,
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_lower_bound_ci,
    percentile_interval,
)
from dpaudit.mia.metrics.pooled import PooledScores
from dpaudit.mia.metrics.rechosen import RechosenThreshold
from dpaudit.mia.metrics.replicates import TargetEntries, TargetSets
from dpaudit.mia.results import AlphaResult, FprSpread, RuleResult
from dpaudit.mia.tally import RulePlan, Tally
from dpaudit.mia.verdict import gaussian_check, headline, tail_check, vulnerable_records

__all__ = ["RULES", "RULE_NAMES", "bootstrap_replicates", "alpha_rows", "RowContext"]

#: Labels of the rules in tables and figures.
RULE_NAMES = RULE_LABELS


def _epsilon(tp: float, n_pos: int, fp: float, n_neg: int, *, delta: float, level: float,
             tpr_reps: np.ndarray | None = None, fpr_reps: np.ndarray | None = None) -> tuple[float, float]:
    """ε lower bound from realised rates with confidence, and the labelled point estimate.

    ``ε_lb = ln((TPR_lo − δ)/FPR_hi)`` (0 when not positive) with TPR_lo the smaller of the
    Clopper–Pearson lower bound and, when bootstrap replicates of the rates at the same threshold are
    given, their lower percentile; FPR_hi likewise the larger upper bound. The bootstrap over models
    and records sees what Clopper–Pearson cannot: the pooled targets share models and records.
    Expected counts of a randomised rule are rounded against leakage (TP down, FP up).
    """
    tp_count, fp_count = math.floor(tp + 1e-9), min(math.ceil(fp - 1e-9), n_neg)
    bound = epsilon_lower_bound_ci(tp_count, n_pos, fp_count, n_neg, delta=delta, level=level)
    tpr_lo, fpr_hi = float(bound.tpr_lower), float(bound.fpr_upper)
    tail = 50 * (1 - level)
    if tpr_reps is not None:
        tpr_lo = min(tpr_lo, float(np.nanpercentile(tpr_reps, tail)))
    if fpr_reps is not None:
        fpr_hi = max(fpr_hi, float(np.nanpercentile(fpr_reps, 100 - tail)))
    eps = float(epsilon_lower_bound(max(tpr_lo, 0.0), min(fpr_hi, 1.0), delta=delta))
    return eps, float(bound.point)


def _pooled(tp: float, fp: float, n_pos: int, n_neg: int, reps: tuple[np.ndarray, np.ndarray] | None, *,
            delta: float, level: float, **extra: Any) -> RuleResult:
    """TPR, realised FPR, Clopper–Pearson and bootstrap CIs and ε of one fixed per-target rule.

    ``tp``, ``fp``: the rule's (expected) true and false positives; ``reps``: the bootstrap replicates
    of its TPR and FPR, or None.
    """
    lo, hi = clopper_pearson(math.floor(tp + 1e-9), n_pos, level=level)
    tpr_reps, fpr_reps = (None, None) if reps is None else reps
    eps_lb, eps_point = _epsilon(tp, n_pos, fp, n_neg, delta=delta, level=level, tpr_reps=tpr_reps, fpr_reps=fpr_reps)
    return RuleResult(True, tp / n_pos, fp / n_neg, eps_lb, eps_point,
                      ci=None if tpr_reps is None else (percentile_interval(tpr_reps, level)),
                      cp=(float(lo), float(hi)), **extra)


def _per_record(values: np.ndarray, reps: np.ndarray | None, level: float, **fields: Any) -> RuleResult:
    """A mean of per-record estimates with its records bootstrap interval."""
    ci = None if reps is None else (percentile_interval(reps, level))
    return RuleResult(True, float(values.mean()), ci=ci, **fields)


def bootstrap_replicates(boot: Bootstrap, sets: TargetSets, tally: Tally, plan: RulePlan,
                         parametric: list[np.ndarray | None], pooled: PooledScores, cuts: list[float],
                         shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """Every rule's TPR and FPR (and the per-record means) in each bootstrap replicate, by name.

    ``sets``: the counted target sets; the targets ``tally`` listed are summed one by one (and its
    lists released); ``parametric``: the per-record parametric TPR per α; ``pooled``, ``cuts``: the
    naive rule's sorted scores and cuts, re-chosen in every replicate.
    """
    ranked, index, column, n_alpha = plan.ranked, plan.index, plan.column, len(plan.alphas)
    listed = TargetEntries.stacked(tally.listed)
    tally.listed = []
    # per-record values whose means the bootstrap resamples over records
    records = np.stack([tally.emp_tpr[j] for j in ranked] + [p for p in parametric if p is not None], axis=1)
    rechosen = RechosenThreshold(pooled, plan.alphas, cuts, shape)
    parts: dict[str, list[np.ndarray]] = {}
    for block in boot.blocks():
        counts, sums = boot.column_totals(block, sets, records)
        entries = boot.entry_totals(block, listed)
        tp_pos = counts[:, index["keep"]]
        neg = np.maximum(counts[:, index["out"]] if "out" in index  # only the counted OUT targets
                         else block.w_models.sum(axis=1) * block.w_records.sum(axis=1) - tp_pos, 1e-300)
        pos = np.maximum(tp_pos, 1e-300)
        naive_cut = counts[:, [index[f"naive/{j}"] for j in range(n_alpha)]]
        tpr, fp_anchor = rechosen.tpr(block, naive_cut, tp_pos, neg)
        found = {"naive_rechosen": tpr, "naive_tpr": naive_cut / pos[:, None], "naive_fpr": fp_anchor / neg[:, None],
                 "records": sums / block.w_records.sum(axis=1)[:, None]}
        for rule in ("pp_normal", "pp_t"):
            found[f"{rule}_tpr"] = counts[:, [index[f"{rule}/{j}"] for j in range(n_alpha)]] / pos[:, None]
            found[f"{rule}_fpr"] = entries[:, [column[f"{rule}/{j}"] for j in range(n_alpha)]] / neg[:, None]
        if ranked:
            found["pp_rank_tpr"] = (counts[:, [index[f"pp_rank/{j}"] for j in ranked]]
                                    + entries[:, [column[f"rank_tp/{j}"] for j in ranked]]) / pos[:, None]
            found["pp_rank_fpr"] = entries[:, [column[f"rank_fp/{j}"] for j in ranked]] / neg[:, None]
        for name, arr in found.items():
            parts.setdefault(name, []).append(arr)
    return {name: np.concatenate(arrs) for name, arrs in parts.items()}


def _replicates(reps: dict[str, np.ndarray], ranked: list[int], rule: str,
                j: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The bootstrap replicates of a pooled rule's TPR and FPR at α number j (None without a bootstrap)."""
    if not reps:
        return None
    col = ranked.index(j) if rule == "pp_rank" else j
    return reps[f"{rule}_tpr"][:, col], reps[f"{rule}_fpr"][:, col]


@dataclass(frozen=True)
class RowContext:
    """What :func:`alpha_rows` needs besides the counts: the pooled sizes, δ and level of the ε bounds and
    intervals, the Gaussian check's inputs, the headline's threshold kind, the M each α's rank rules need
    (None where estimable), every record's counted IN and OUT targets and rank-test p-value, per α the parametric
    estimate without the FPC and the calls of its t test among all IN scores (the tail check) with the
    records' numbers of IN models, and the records' own
    identifiers (or None)."""

    n_pos: int
    n_neg: int
    delta: float
    level: float
    share_non_normal: float
    threshold_kind: str
    needs_models: list[int | None]
    n_in: np.ndarray
    n_out: np.ndarray
    p_value: np.ndarray
    parametric_raw: list[np.ndarray]
    t_calls: list[np.ndarray]
    n_in_all: np.ndarray
    balanced: bool = True
    record_ids: np.ndarray | None = None


def alpha_rows(plan: RulePlan, tally: Tally, parametric: list[np.ndarray | None], reps: dict[str, np.ndarray],
               naive_threshold: list[float], n_out: np.ndarray, ctx: RowContext) -> tuple[AlphaResult, ...]:
    """One :class:`~dpaudit.mia.results.AlphaResult` per α: every rule of :data:`RULES` (the Gaussian ones
    marked valid or not by :func:`~dpaudit.mia.verdict.gaussian_check`), the spread of the naive threshold's
    per-record FPR, the headline verdict and the ranked vulnerable records. ``reps``:
    :func:`bootstrap_replicates` ({} without a bootstrap)."""
    ranked = plan.ranked
    n_pos, n_neg, level = ctx.n_pos, ctx.n_neg, ctx.level
    eps = {"delta": ctx.delta, "level": level}
    rows_out = []
    for j, alpha in enumerate(plan.alphas):
        rules: dict[str, RuleResult] = {}
        naive = _pooled(tally.tp["naive"][j], tally.fp["naive"][j], n_pos, n_neg, _replicates(reps, ranked, "naive", j),
                        **eps)
        # the threshold was chosen on these data: no Clopper–Pearson interval; the bootstrap re-chooses it
        rules["naive"] = RuleResult(True, naive.tpr, naive.fpr, naive.epsilon_lb, naive.epsilon_point,
                                    ci=(percentile_interval(reps["naive_rechosen"][:, j], level) if reps else None),
                                    threshold=naive_threshold[j])
        for kind in ("normal", "t"):
            rule = f"pp_{kind}"
            why = gaussian_check(tally.fp_raw[rule][j] / n_neg, alpha, ctx.share_non_normal)
            rules[rule] = _pooled(tally.tp[rule][j], tally.fp[rule][j], n_pos, n_neg, _replicates(reps, ranked, rule, j),
                                  **eps, valid=not why, warning=why or None)
        if plan.reasons[j]:
            rules["pp_rank"] = rules["per_record_empirical"] = RuleResult.not_estimable(plan.reasons[j])
        else:
            rank = rules["pp_rank"] = _pooled(float(tally.rank_tp[j].sum()), float(tally.rank_fp[j].sum()), n_pos,
                                              n_neg, _replicates(reps, ranked, "pp_rank", j), **eps, valid=True)
            # ε from the same targets' counts as the pooled rank rule (identical under the efficient design)
            rules["per_record_empirical"] = _per_record(
                tally.emp_tpr[j], reps["records"][:, ranked.index(j)] if reps else None, level,
                fpr=float(tally.emp_fpr[j].mean()), epsilon_lb=rank.epsilon_lb, epsilon_point=rank.epsilon_point,
                valid=True)
        par = parametric[j]
        assert par is not None  # the parametric estimator is estimable at any α
        tail_fpr = float((tally.crossed[j] / n_out).mean())
        why = (gaussian_check(float((tally.crossed_raw[j] / n_out).mean()), alpha, ctx.share_non_normal)
               or tail_check(ctx.parametric_raw[j], ctx.t_calls[j], ctx.n_in_all))
        rules["per_record_parametric"] = _per_record(
            par, reps["records"][:, len(ranked) + j] if reps else None, level, fpr=alpha, fpr_kind="nominal",
            t_threshold_fpr_loo=tail_fpr, valid=not why, warning=why or None)
        spread = FprSpread(float(np.nanmax(tally.rec_fpr[j])), float(np.nanmean(tally.rec_fpr[j] > alpha)))
        # the records ranked under the verdict's rule (without one, the PP rule it would have led with)
        lead = "pp_rank" if rules["pp_rank"].estimable else f"pp_{ctx.threshold_kind}"
        records = _vulnerable(lead, j, alpha, tally, n_out, ctx)
        verdict = headline(alpha, rules, threshold_kind=ctx.threshold_kind, needs_models=ctx.needs_models[j],
                           balanced=ctx.balanced, standing_out=records.standing_out)
        rows_out.append(AlphaResult(alpha, {r: rules[r] for r in RULES}, spread, verdict, records))
    return tuple(rows_out)


def _vulnerable(rule: str, j: int, alpha: float, tally: Tally, n_out: np.ndarray, ctx: RowContext) -> VulnerableRecords:
    """The records ranked by their TPR under ``rule`` at α number j."""
    if rule == "pp_rank":
        called, fpr = tally.rank_tp[j], tally.emp_fpr[j]
    else:
        called, called_out = tally.rec_calls[rule][j]
        fpr = called_out / ctx.n_out
    return vulnerable_records(alpha, rule, np.asarray(called, dtype=np.float64), ctx.n_in, fpr, ctx.p_value,
                              level=ctx.level, record_ids=ctx.record_ids)
