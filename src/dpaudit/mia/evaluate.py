"""Evaluate a ScoreSet: TPR at low FPR three ways, realised FPRs, CIs, ε bounds (spec ``mia.md`` §3–4).

For every α the report gives, side by side:

1. **naive concatenated** TPR: the online LiRA statistic of every (model, record) target pooled
   into one exact ROC, read at the largest FPR ≤ α (the usual "efficient LiRA" number);
2. **PP concatenated** TPR: every target score standardised by its record's leave-one-out OUT fit,
   ``f = sign(Δ)(t − μ_out)/σ_out``, pooled, thresholded at the analytic ``Φ⁻¹(1 − α)`` (``normal``)
   and at the Student-t predictive ``t_{n_out−1}(1 − α)·√(1 + 1/n_out)`` (``t``);
3. **mean per-record** TPR: each record's own exact ROC over its M targets (IN models positives,
   OUT models negatives), read at that record's largest FPR ≤ α, averaged over records — the quantity
   the two concatenations try to estimate; stable only when M ≥ 10/α (the MIA paper, §3);
4. the **realised FPR** of every rule, and for the naive global threshold the **spread of per-record
   FPR** (max, share of records above α): the evidence of miscalibration (spec §3a).

Uncertainty: percentile bootstrap over models *and* records (pigeonhole resampling, done with
multinomial weights so no matrix is copied; the naive threshold is re-chosen in every replicate),
and Clopper–Pearson on the pooled counts of the fixed-threshold PP rules (valid only as far as
targets were independent trials: they share models and records, so prefer the bootstrap). ε lower
bounds ``ln((TPR − δ)/FPR)`` from every rule's point estimate and, for the PP rules, a
Clopper–Pearson confidence bound. A Gaussian diagnostic gives the share of records whose OUT scores
fail a Jarque–Bera normality test at level 0.01.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import stats

from dpaudit._errors import DPAuditError
from dpaudit.mia.calibrate import fpc_factor, pp_transform, threshold
from dpaudit.mia.lira import loo_fits, lira_online
from dpaudit.mia.roc import (
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_lower_bound_ci,
    per_record_rates,
    point_at_fpr,
    roc_curve,
)
from dpaudit.mia.scores import ScoreSet

__all__ = ["evaluate", "MiaReport", "per_record_tpr"]

RULES = ("naive", "pp_normal", "pp_t", "mean_per_record")


@dataclass(frozen=True)
class MiaReport:
    """Result of :func:`evaluate`; ``str()`` prints a table, :meth:`to_dict` exports JSON.

    ``alphas[i]`` maps to ``rows[i]``: a dict with, per rule in :data:`RULES`, ``tpr``, ``fpr``
    (realised), ``ci`` (bootstrap), ``epsilon`` (point lower bound) and, for fixed-threshold rules,
    ``cp`` (Clopper–Pearson on TPR) and ``epsilon_ci``; plus ``naive_per_record_fpr`` (max, share
    above α).
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
        head = (f"LiRA evaluation — M = {self.n_models} models, N+ = {self.n_records:,} records, "
                f"threshold {self.options['threshold']}, FPC {'on' if self.options['fpc'] else 'off'}")
        lines = [head, f"  {'α':>8} {'rule':<16} {'TPR':>9} {'95% CI':>21} {'real. FPR':>10} {'ε ≥':>7}"]
        names = {"naive": "naive concat", "pp_normal": "PP concat N(0,1)", "pp_t": "PP concat t",
                 "mean_per_record": "mean per-record"}
        for alpha, row in zip(self.alphas, self.rows):
            for rule in RULES:
                r = row[rule]
                ci = r.get("ci")
                ci_text = f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else ""
                lines.append(f"  {alpha:>8.0e} {names[rule]:<16} {r['tpr']:>9.4g} {ci_text:>21} "
                             f"{r['fpr']:>10.3g} {r['epsilon']:>7.3g}")
            spread = row["naive_per_record_fpr"]
            lines.append(f"  {'':>8} naive threshold: per-record FPR max {spread['max']:.3g}, "
                         f"{spread['share_above_alpha']:.1%} of records above α")
        d = self.diagnostics
        lines.append(f"  normality: {d['share_non_normal']:.1%} of records' OUT scores fail Jarque–Bera at 0.01")
        return "\n".join(lines)


def per_record_tpr(stat: np.ndarray, keep: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Each record's TPR and realised FPR at its own largest FPR ≤ α (its exact ROC); shapes (N+,).

    Record x's negatives are its OUT targets. With k = ⌊α·n_out⌋ false positives allowed, a target
    is called a member when its statistic is strictly above the (k+1)-th largest OUT statistic (ties
    with it count as negatives, so the realised FPR never exceeds α).
    """
    n_out = (~keep).sum(axis=0)
    neg = np.where(keep, -np.inf, stat)
    neg_sorted = -np.sort(-neg, axis=0)  # descending per record; IN entries sink as -inf
    k = np.floor(alpha * n_out).astype(np.int64)
    cut = np.where(k < n_out, neg_sorted[np.minimum(k, stat.shape[0] - 1), np.arange(stat.shape[1])], -np.inf)
    called = stat > cut[None, :]
    return (called & keep).sum(axis=0) / keep.sum(axis=0), (called & ~keep).sum(axis=0) / n_out


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
        return ((self.w_models @ indicator.astype(np.float64)) * self.w_records).sum(axis=1)

    def fixed_rate(self, hits: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(n_boot,) weighted share of ``hits`` among targets in ``mask`` (e.g. TPR among IN)."""
        return self._weighted_sum(hits & mask) / np.maximum(self._weighted_sum(mask), 1e-300)


def _ci(samples: np.ndarray, level: float) -> list[float]:
    lo, hi = np.nanpercentile(samples, [50 * (1 - level), 50 * (1 + level)])
    return [float(lo), float(hi)]


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
        Divide the fitted variances by the finite-population correction ``1 − N/N+`` (spec §3b).
    location, variance : str
        Leave-one-out fit options (:func:`dpaudit.mia.lira.loo_fits`).
    strict : bool, default False
        Naive and per-record rules read the largest FPR < α instead of ≤ α (LiRA-code parity).
    n_boot : int, default 200
        Bootstrap replicates over models and records (0: no bootstrap CIs).
    level : float, default 0.95
    delta : float, default 0
        δ of the ε lower bounds.
    seed : int
        Bootstrap seed.
    sign : {"fitted", "positive"}, default "fitted"
        sign(Δ) of the PP transform: from the leave-one-out fits (the MIA paper), or +1 (membership
        raises the score, as for LiRA's confidence). The fitted sign shares μ_out with the
        standardisation, which inflates the t rule's FPR for records with Δ ≈ 0 at small M (measured
        at α = 0.01, M = 16: 0.0124 fitted vs 0.0099 positive; docs/mia.md).

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
    >>> rep = evaluate(ScoreSet(sim.score, sim.keep, train_size=sim.train_size, pool_size=sim.pool_size),
    ...                fpr=(0.1,), n_boot=0)
    >>> sorted(rep.rows[0])[:3]
    ['mean_per_record', 'naive', 'naive_per_record_fpr']
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
    score, keep = np.asarray(scores.score), np.asarray(scores.keep)
    fits = loo_fits(score, keep, location=location, variance=variance,
                    fpc=fpc_factor(scores.train_size, scores.pool_size) if fpc else None)
    online = lira_online(score, fits)
    pooled = roc_curve(online, keep)
    if sign not in ("fitted", "positive"):
        raise DPAuditError(f"sign must be 'fitted' or 'positive', got {sign!r}")
    f = pp_transform(score, fits, sign=sign)
    n_pos, n_neg = int(keep.sum()), int((~keep).sum())
    boot = _Bootstrap(online, keep, n_boot, seed) if n_boot else None
    naive_boot = boot.naive_tpr(alphas) if boot else None

    rows = []
    for j, alpha in enumerate(alphas):
        point = point_at_fpr(pooled, alpha, strict=strict)
        rec_tpr, rec_fpr = per_record_rates(online, keep, point.threshold)
        row: dict[str, Any] = {
            "naive": {"tpr": float(point.tpr), "fpr": float(point.fpr), "threshold": float(point.threshold),
                      "epsilon": float(epsilon_lower_bound(point.tpr, point.fpr, delta=delta))},
            "naive_per_record_fpr": {"max": float(np.nanmax(rec_fpr)),
                                     "share_above_alpha": float(np.nanmean(rec_fpr > alpha))},
        }
        if naive_boot is not None:
            row["naive"]["ci"] = _ci(naive_boot[:, j], level)
        for kind in ("normal", "t"):
            thr = threshold(alpha, kind=kind, n_out=fits.n_out)
            hits = f >= thr
            tp, fp = int((hits & keep).sum()), int((hits & ~keep).sum())
            tpr, fpr_real = tp / n_pos, fp / n_neg
            lo, hi = clopper_pearson(tp, n_pos, level=level)
            entry = {"tpr": tpr, "fpr": fpr_real, "cp": [float(lo), float(hi)],
                     "epsilon": float(epsilon_lower_bound(tpr, fpr_real, delta=delta)),
                     "epsilon_ci": float(epsilon_lower_bound_ci(tp, n_pos, fp, n_neg, delta=delta, level=level).epsilon)}
            if boot:
                entry["ci"] = _ci(boot.fixed_rate(hits, keep), level)
            row[f"pp_{kind}"] = entry
        eff_alpha = np.nextafter(alpha, 0) if strict else alpha
        per_tpr, per_fpr = per_record_tpr(online, keep, eff_alpha)
        mean_tpr = float(per_tpr.mean())
        realised = float(per_fpr.mean())
        entry = {"tpr": mean_tpr, "fpr": realised, "epsilon": float(epsilon_lower_bound(mean_tpr, alpha, delta=delta))}
        if n_boot:
            rng = np.random.default_rng(seed + 1)
            idx = rng.integers(0, len(per_tpr), size=(n_boot, len(per_tpr)))
            entry["ci"] = _ci(per_tpr[idx].mean(axis=1), level)
        row["mean_per_record"] = entry
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
