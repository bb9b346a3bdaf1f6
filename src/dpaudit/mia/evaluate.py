"""Evaluate a ScoreSet: TPR at low FPR by every rule, realised FPRs, CIs, ε bounds (spec ``mia.md`` §3–4).

For every α the report gives, side by side (keys of :data:`RULES`):

1. ``naive`` — **naive concatenated** TPR: the online LiRA statistic of every (model, record)
   target pooled into one exact ROC, read at the largest FPR ≤ α (the usual "efficient LiRA" number);
2. ``pp_normal``, ``pp_t`` — **PP concatenated** TPR: every target score standardised by its record's
   leave-one-out OUT fit, ``f = sign(Δ)(t − μ_out)/σ_out``, pooled, thresholded at the analytic
   ``Φ⁻¹(1 − α)`` and at the Student-t predictive ``t_{n_out−1}(1 − α)·√(1 + 1/n_out)``;
3. ``pp_rank`` — **PP concatenated, rank-calibrated** (distribution-free): every target's raw score
   ranked among its record's OUT scores under the other models (a conformal p-value), pooled, called
   a member at p ≤ α (:mod:`dpaudit.mia.per_record`);
4. the **mean per-record TPR** — each record thresholded by its own level-α test, averaged over
   records — by two valid estimators (:mod:`dpaudit.mia.per_record`): ``per_record_empirical``
   (each record's conformal test on its raw OUT scores; only where every record has ≥ ⌈1/α⌉ − 1 OUT
   models, else *not estimable*) and ``per_record_parametric`` (the unbiased TPR of each record's
   Student-t test under the Gaussian model; any α). ``pp_rank`` is the pooled form of
   ``per_record_empirical``: the two coincide when every record is IN in the same number of models
   (the efficient design) and weigh records differently otherwise;
5. the **realised FPR** of every rule, and for the naive global threshold the **spread of per-record
   FPR** (max, share of records above α): the evidence of miscalibration (spec §3a).

Uncertainty: percentile bootstrap over models *and* records for the pooled rules (multinomial
weights, so no matrix is copied; the naive threshold is re-chosen in every replicate) and over
records for the per-record means; Clopper–Pearson on the pooled counts of the fixed-threshold rules
(valid only as far as targets were independent trials: they share models and records).

**ε lower bounds** come only from *realised* rates with confidence: ``ε ≥ ln((TPR_lo − δ)/FPR_hi)``
with the Clopper–Pearson lower bound of the rule's realised TPR and upper bound of its realised FPR
(:func:`dpaudit.mia.roc.epsilon_lower_bound_ci`), 0 when that is no evidence (``epsilon_lb``).
The same formula on the point estimates is reported separately as ``epsilon_point`` and is never
a bound. The parametric per-record estimate has no counts and so no ε bound.

A Gaussian diagnostic gives the share of records whose OUT scores fail a Jarque–Bera normality test
at level 0.01 (the parametric and PP rules rest on that model).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import stats

from dpaudit._errors import DPAuditError
from dpaudit.mia.calibrate import fpc_factor, pp_transform, threshold
from dpaudit.mia.lira import loo_fits, lira_online
from dpaudit.mia.per_record import (
    conformal_ranks,
    empirical_per_record,
    hit_probability,
    not_estimable_reason,
    parametric_per_record,
)
from dpaudit.mia.roc import (
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_lower_bound_ci,
    per_record_rates,
    point_at_fpr,
    roc_curve,
)
from dpaudit.mia.scores import ScoreSet

__all__ = ["evaluate", "MiaReport", "RULES", "RULE_NAMES"]

RULES = ("naive", "pp_normal", "pp_t", "pp_rank", "per_record_empirical", "per_record_parametric")
#: Labels of the rules in tables and figures.
RULE_NAMES = {"naive": "naive concat", "pp_normal": "PP concat N(0,1)", "pp_t": "PP concat t",
              "pp_rank": "PP concat rank", "per_record_empirical": "per-record empirical",
              "per_record_parametric": "per-record param."}


@dataclass(frozen=True)
class MiaReport:
    """Result of :func:`evaluate`; ``str()`` prints a table, :meth:`to_dict` exports JSON.

    ``alphas[i]`` maps to ``rows[i]``: a dict with, per rule in :data:`RULES`, an entry with
    ``estimable`` (False: ``reason`` says why and every number is None), ``tpr``, ``fpr`` (realised;
    for ``per_record_parametric`` α itself, ``fpr_kind`` says so, with ``t_threshold_fpr_loo``, the
    leave-one-out FPR of the records' t thresholds on their own OUT scores: α when the Gaussian
    tails fit), ``ci`` (bootstrap), ``epsilon_lb``
    (confidence bound from realised rates, None where there are no counts) and ``epsilon_point``
    (the same formula on point estimates; not a bound); fixed-threshold rules add ``cp``
    (Clopper–Pearson on TPR). Plus ``naive_per_record_fpr`` (max, share above α).
    """

    n_models: int
    n_records: int
    alphas: tuple[float, ...]
    rows: tuple[dict[str, Any], ...]
    options: dict[str, Any]
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_models": self.n_models,
            "n_records": self.n_records,
            "options": self.options,
            "alphas": list(self.alphas),
            "results": [{"alpha": a, **row} for a, row in zip(self.alphas, self.rows)],
            "diagnostics": self.diagnostics,
        }

    def __str__(self) -> str:
        level = self.options["level"]
        head = (f"LiRA evaluation — M = {self.n_models} models, N+ = {self.n_records:,} records, "
                f"threshold {self.options['threshold']}, FPC {'on' if self.options['fpc'] else 'off'}")
        lines = [head, f"  {'α':>8} {'rule':<21} {'TPR':>9} {f'{level:.0%} CI':>21} {'real. FPR':>10} "
                       f"{f'ε ≥ ({level:.0%})':>9}"]
        for alpha, row in zip(self.alphas, self.rows):
            for rule in RULES:
                r = row[rule]
                if not r["estimable"]:
                    lines.append(f"  {alpha:>8.0e} {RULE_NAMES[rule]:<21} {r['reason']}")
                    continue
                ci = r.get("ci")
                ci_text = f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else ""
                fpr_text = f"{r['fpr']:.3g}" + ("*" if r.get("fpr_kind") == "nominal" else "")
                eps = r["epsilon_lb"]
                eps_text = "–" if eps is None else f"{eps:.3g}"
                tail = (f"  (t threshold's own FPR, leave-one-out: {r['t_threshold_fpr_loo']:.3g})"
                        if "t_threshold_fpr_loo" in r else "")
                lines.append(f"  {alpha:>8.0e} {RULE_NAMES[rule]:<21} {r['tpr']:>9.4g} {ci_text:>21} "
                             f"{fpr_text:>10} {eps_text:>9}{tail}")
            spread = row["naive_per_record_fpr"]
            lines.append(f"  {'':>8} naive threshold: per-record FPR max {spread['max']:.3g}, "
                         f"{spread['share_above_alpha']:.1%} of records above α")
        d = self.diagnostics
        lines.append("  * α by construction under the Gaussian model: trust it where the t threshold's own FPR "
                     "is near α and few records fail the normality test")
        lines.append("  ε ≥: Clopper–Pearson bound from realised rates; 0 = no evidence of leakage")
        lines.append(f"  normality: {d['share_non_normal']:.1%} of records' OUT scores fail Jarque–Bera at 0.01")
        return "\n".join(lines)


def _jarque_bera_share(score: np.ndarray, keep: np.ndarray, level: float = 0.01) -> float:
    out = ~keep
    n = out.sum(axis=0).astype(float)
    mean = np.where(out, score, 0.0).sum(axis=0) / n
    dev = np.where(out, score - mean, 0.0)
    m2 = (dev**2).sum(axis=0) / n
    safe = np.where(m2 > 0, m2, 1.0)
    skew = (dev**3).sum(axis=0) / n / safe**1.5
    kurt = (dev**4).sum(axis=0) / n / safe**2
    jb = n / 6.0 * (skew**2 + (kurt - 3.0) ** 2 / 4.0)
    p = stats.chi2.sf(jb, df=2)
    return float(np.mean(np.where(m2 > 0, p < level, False)))


class _Bootstrap:
    """Two-axis (models × records) bootstrap by multinomial weights; one global sort, reused."""

    def __init__(self, stat: np.ndarray, keep: np.ndarray, n_boot: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        m, n = stat.shape
        self.w_models = rng.multinomial(m, np.full(m, 1.0 / m), size=n_boot).astype(np.float64)
        self.w_records = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64)
        self.keep = keep
        flat = stat.ravel()
        self.order = np.argsort(-flat, kind="stable")
        sorted_stat = flat[self.order]
        self.group_end = np.append(sorted_stat[1:] != sorted_stat[:-1], True)  # cut only between ties
        self.pos_sorted = keep.ravel()[self.order]
        self.rows = self.order // n
        self.cols = self.order % n

    def naive_tpr(self, alphas: Sequence[float]) -> np.ndarray:
        """(n_boot, len(alphas)) TPR with the threshold re-chosen at weighted FPR ≤ α.

        Only the top of the global order can matter at low FPR: each replicate scans a prefix that
        holds 4α + 1% of the negatives (totals come from one matrix product) and falls back to the
        full order in the rare replicate whose cut lies beyond it.
        """
        tot_pos = self._weighted_sum(self.keep)
        tot_neg = self.w_models.sum(axis=1) * self.w_records.sum(axis=1) - tot_pos
        neg_rank = np.cumsum(~self.pos_sorted) / max((~self.pos_sorted).sum(), 1)
        prefix = int(np.searchsorted(neg_rank, min(1.0, 4 * max(alphas) + 0.01), side="right")) + 1
        out = np.empty((len(self.w_models), len(alphas)))
        for b, (wm, wx) in enumerate(zip(self.w_models, self.w_records)):
            for length in (prefix, len(self.order)):
                sl = slice(0, min(length, len(self.order)))
                w = wm[self.rows[sl]] * wx[self.cols[sl]]
                fpr = np.cumsum(np.where(self.pos_sorted[sl], 0.0, w)) / max(tot_neg[b], 1e-300)
                tpr = np.cumsum(np.where(self.pos_sorted[sl], w, 0.0)) / max(tot_pos[b], 1e-300)
                if fpr[-1] > max(alphas) or sl.stop == len(self.order):
                    break
            for j, a in enumerate(alphas):
                ok = self.group_end[sl] & (fpr <= a + 1e-12)
                out[b, j] = tpr[np.flatnonzero(ok)[-1]] if ok.any() else 0.0
        return out

    def _weighted_sum(self, indicator: np.ndarray) -> np.ndarray:
        """(n_boot,) Σ_{m,x} w_m w_x [indicator]: one BLAS product (B × M)·(M × N+), then a row dot."""
        return ((self.w_models @ np.asarray(indicator, dtype=np.float64)) * self.w_records).sum(axis=1)

    def fixed_rate(self, hits: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(n_boot,) weighted share of ``hits`` (bool, or hit probabilities in [0, 1]) among targets in
        ``mask`` (e.g. TPR among IN)."""
        return self._weighted_sum(np.where(mask, hits, 0.0)) / np.maximum(self._weighted_sum(mask), 1e-300)


def _ci(samples: np.ndarray, level: float) -> list[float]:
    lo, hi = np.nanpercentile(samples, [50 * (1 - level), 50 * (1 + level)])
    return [float(lo), float(hi)]


def _epsilon(tp: float, n_pos: int, fp: float, n_neg: int, *, delta: float, level: float,
             tpr_reps: np.ndarray | None = None, fpr_reps: np.ndarray | None = None) -> dict[str, Any]:
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
    return {"epsilon_lb": eps, "epsilon_point": float(bound.point)}


def _pooled_entry(hits: np.ndarray, keep: np.ndarray, boot: _Bootstrap | None, *, delta: float,
                  level: float) -> dict[str, Any]:
    """TPR, realised FPR, Clopper–Pearson and bootstrap CIs and ε of one fixed per-target rule.

    ``hits`` holds each target's call (bool) or its probability of being called a member.
    """
    n_pos, n_neg = int(keep.sum()), int(keep.size - keep.sum())
    tp, fp = float(np.where(keep, hits, 0).sum()), float(np.where(keep, 0, hits).sum())
    lo, hi = clopper_pearson(math.floor(tp + 1e-9), n_pos, level=level)
    entry: dict[str, Any] = {"estimable": True, "tpr": tp / n_pos, "fpr": fp / n_neg, "cp": [float(lo), float(hi)]}
    tpr_reps = fpr_reps = None
    if boot is not None:
        tpr_reps, fpr_reps = boot.fixed_rate(hits, keep), boot.fixed_rate(hits, ~keep)
        entry["ci"] = _ci(tpr_reps, level)
    entry.update(_epsilon(tp, n_pos, fp, n_neg, delta=delta, level=level, tpr_reps=tpr_reps, fpr_reps=fpr_reps))
    return entry


def _not_estimable(reason: str) -> dict[str, Any]:
    return {"estimable": False, "reason": reason, "tpr": None, "fpr": None, "epsilon_lb": None, "epsilon_point": None}


def _record_ci(values: np.ndarray, n_boot: int, level: float, rng: np.random.Generator) -> list[float]:
    """Percentile bootstrap CI of a mean over records (records resampled with replacement)."""
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    return _ci(values[idx].mean(axis=1), level)


def evaluate(
    scores: ScoreSet,
    *,
    fpr: Sequence[float] = (1e-2, 1e-3),
    threshold_kind: Literal["t", "normal"] = "t",
    fpc: bool = False,
    location: Literal["mean", "median"] = "mean",
    variance: Literal["per-record", "global"] = "per-record",
    strict: bool = False,
    n_boot: int = 200,
    level: float = 0.95,
    delta: float = 0.0,
    seed: int = 0,
    sign: Literal["fitted", "positive"] = "fitted",
) -> MiaReport:
    """Membership-inference vulnerability of a ScoreSet at low FPR, computed reliably.

    Parameters
    ----------
    scores : ScoreSet
        Scores (M, N+) and membership; every record IN and OUT in ≥ 3 models.
    fpr : sequence of float, default (1e-2, 1e-3)
        The target false-positive rates α.
    threshold_kind : {"t", "normal"}, default "t"
        Which PP threshold the headline (``options["threshold"]``) refers to; both are reported.
    fpc : bool, default False
        Divide the fitted variances by the finite-population correction ``1 − N/N+`` (spec §3b):
        the naive, PP-normal, PP-t and parametric rules. The rank-based rules fit no variance.
    location, variance : str
        Leave-one-out fit options (:func:`dpaudit.mia.lira.loo_fits`).
    strict : bool, default False
        The naive rule reads the largest FPR < α instead of ≤ α (LiRA-code parity).
    n_boot : int, default 200
        Bootstrap replicates (0: no bootstrap CIs).
    level : float, default 0.95
        Level of every interval and of the ε bounds.
    delta : float, default 0
        δ of the ε lower bounds.
    seed : int
        Bootstrap seed.
    sign : {"fitted", "positive"}, default "fitted"
        sign(Δ) of the PP-normal and PP-t transforms: from the leave-one-out fits (the MIA paper), or
        +1 (membership raises the score, as for LiRA's confidence). The fitted sign shares μ_out with
        the standardisation, which inflates the t rule's FPR for records with Δ ≈ 0 at small M
        (measured at α = 0.01, M = 16: 0.0124 fitted vs 0.0099 positive; docs/mia.md). The rank and
        per-record rules are one-sided on the raw score (membership raises it).

    Returns
    -------
    MiaReport

    References
    ----------
    Jälkö, Pradhan, Räisä, Honkela, "On Reliability of Efficient Membership Inference Vulnerability
    Evaluation", arXiv 2605.25819; Carlini et al., IEEE S&P 2022.

    Examples
    --------
    >>> from dpaudit.mia.simulate import gaussian_scores
    >>> sim = gaussian_scores(64, 400, seed=1)
    >>> rep = evaluate(sim.to_scoreset(), fpr=(0.1, 0.01), n_boot=0)
    >>> rep.rows[0]["per_record_empirical"]["estimable"], rep.rows[1]["per_record_empirical"]["estimable"]
    (True, False)
    >>> rep.rows[1]["per_record_empirical"]["reason"][:24]
    'not estimable at this M:'
    """
    if not isinstance(scores, ScoreSet):
        raise DPAuditError(f"evaluate() takes a ScoreSet, got {type(scores).__name__}; build one with ScoreSet(...)")
    alphas = tuple(float(a) for a in (fpr if isinstance(fpr, Sequence) else [fpr]))
    if not alphas or any(not (0.0 < a < 1.0) for a in alphas):
        raise DPAuditError(f"fpr values must lie in (0, 1), got {list(alphas)}")
    if threshold_kind not in ("t", "normal"):
        raise DPAuditError(f"threshold must be 't' or 'normal', got {threshold_kind!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise DPAuditError(f"n_boot must be a whole number ≥ 0, got {n_boot!r}")
    if sign not in ("fitted", "positive"):
        raise DPAuditError(f"sign must be 'fitted' or 'positive', got {sign!r}")
    score, keep = np.asarray(scores.score), np.asarray(scores.keep)
    fpc_value = fpc_factor(scores.train_size, scores.pool_size) if fpc else None
    fits = loo_fits(score, keep, location=location, variance=variance, fpc=fpc_value)
    online = lira_online(score, fits)
    pooled = roc_curve(online, keep)
    f = pp_transform(score, fits, sign=sign)
    z_positive = f if sign == "positive" else pp_transform(score, fits, sign="positive")
    ranks = conformal_ranks(score, keep)
    boot = _Bootstrap(online, keep, n_boot, seed) if n_boot else None
    naive_boot = boot.naive_tpr(alphas) if boot else None
    record_rng = np.random.default_rng(seed + 1)
    eps = {"delta": delta, "level": level}

    rows = []
    for j, alpha in enumerate(alphas):
        point = point_at_fpr(pooled, alpha, strict=strict)
        rec_tpr, rec_fpr = per_record_rates(online, keep, point.threshold)
        naive = _pooled_entry(online >= point.threshold, keep, boot, **eps)
        naive.pop("cp")  # the threshold was chosen on these data: Clopper–Pearson does not apply
        naive["threshold"] = float(point.threshold)
        if naive_boot is not None:
            naive["ci"] = _ci(naive_boot[:, j], level)  # the threshold re-chosen in every replicate
        row: dict[str, Any] = {
            "naive": naive,
            "naive_per_record_fpr": {"max": float(np.nanmax(rec_fpr)),
                                     "share_above_alpha": float(np.nanmean(rec_fpr > alpha))},
        }
        for kind in ("normal", "t"):
            row[f"pp_{kind}"] = _pooled_entry(f >= threshold(alpha, kind=kind, n_out=fits.n_out), keep, boot, **eps)

        reason = not_estimable_reason(ranks.n_out, alpha)
        if reason:
            row["pp_rank"] = _not_estimable(reason)
            row["per_record_empirical"] = _not_estimable(reason)
        else:
            row["pp_rank"] = rank = _pooled_entry(hit_probability(ranks, alpha), keep, boot, **eps)
            emp = empirical_per_record(score, keep, alpha, ranks=ranks)
            entry = {"estimable": True, "tpr": float(emp.tpr.mean()), "fpr": float(emp.fpr.mean())}
            if n_boot:
                entry["ci"] = _record_ci(emp.tpr, n_boot, level, record_rng)
            # the same targets' counts as the pooled rank rule (identical under the efficient design)
            entry.update({k: rank[k] for k in ("epsilon_lb", "epsilon_point")})
            row["per_record_empirical"] = entry
        par = parametric_per_record(score, keep, alpha, fpc=fpc_value)
        # the Gaussian model's check: how often each record's t threshold is crossed by its own OUT
        # scores, leave-one-out (α when the tails are Gaussian)
        crossed = z_positive >= threshold(alpha, kind="t", n_out=fits.n_out)
        tail_fpr = float((np.where(keep, False, crossed).sum(axis=0) / (~keep).sum(axis=0)).mean())
        entry = {"estimable": True, "tpr": float(par.tpr.mean()), "fpr": alpha, "fpr_kind": "nominal",
                 "t_threshold_fpr_loo": tail_fpr, "epsilon_lb": None, "epsilon_point": None}
        if n_boot:
            entry["ci"] = _record_ci(par.tpr, n_boot, level, record_rng)
        row["per_record_parametric"] = entry
        rows.append(row)
    options = {"threshold": threshold_kind, "fpc": fpc, "sign": sign, "location": location, "variance": variance,
               "strict": strict, "n_boot": n_boot, "level": level, "delta": delta,
               "train_size": scores.train_size, "pool_size": scores.pool_size}
    diagnostics = {"share_non_normal": _jarque_bera_share(score, keep),
                   "min_n_out": int(fits.n_out.min()), "auc_naive": _auc(pooled)}
    return MiaReport(scores.n_models, scores.n_records, alphas, tuple(rows), options, diagnostics)


def _auc(roc: Any) -> float:
    from dpaudit.mia.roc import auc

    return float(auc(roc))
