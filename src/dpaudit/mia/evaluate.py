"""Evaluate a ScoreSet: TPR at low FPR by every rule, realised FPRs, CIs, ε bounds (spec ``mia.md`` §3–4).

For every α the report gives, side by side (keys of :data:`RULES`):

The attack (:mod:`dpaudit.mia.attacks`; LiRA by default) gives every target a decision statistic
and a membership-agnostic *signal* (LiRA: the raw score).

1. ``naive`` — **naive concatenated** TPR: the attack's statistic of every (model, record) target
   pooled into one exact ROC, read at the largest FPR ≤ α (the usual "efficient LiRA" number);
2. ``pp_normal``, ``pp_t`` — **PP concatenated** TPR: every target's signal standardised by its
   record's leave-one-out OUT fit, ``f = sign(Δ)(t − μ_out)/σ_out``, pooled, thresholded at the
   analytic ``Φ⁻¹(1 − α)`` and at the Student-t predictive ``t_{n_out−1}(1 − α)·√(1 + 1/n_out)``;
3. ``pp_rank`` — **PP concatenated, rank-calibrated** (distribution-free): every target's signal
   ranked among its record's OUT signals under the other models (a conformal p-value), pooled, called
   a member at p ≤ α (:mod:`dpaudit.mia.per_record`);
4. the **mean per-record TPR** — each record thresholded by its own level-α test, averaged over
   records — by two valid estimators (:mod:`dpaudit.mia.per_record`): ``per_record_empirical``
   (each record's conformal test on its OUT signals; only where every record has ≥ ⌈1/α⌉ − 1 OUT
   models, else *not estimable*) and ``per_record_parametric`` (the unbiased TPR of each record's
   Student-t test under the Gaussian model; any α). ``pp_rank`` is the pooled form of
   ``per_record_empirical``: the two coincide when every record is IN in the same number of models
   (the efficient design) and weigh records differently otherwise;
5. the **realised FPR** of every rule, and for the naive global threshold the **spread of per-record
   FPR** (max, share of records above α): the evidence of miscalibration (spec §3a).

Uncertainty: the one two-axis bootstrap (:class:`dpaudit.mia.metrics.Bootstrap`) — over models
*and* records for the pooled rules (the naive threshold re-chosen in every replicate), over records
for the per-record means; Clopper–Pearson on the pooled counts of the fixed-threshold rules (valid
only as far as targets were independent trials: they share models and records).

**ε lower bounds** come only from *realised* rates with confidence: ``ε ≥ ln((TPR_lo − δ)/FPR_hi)``
with the more conservative of the Clopper–Pearson and the bootstrap bounds of the rule's realised
TPR (lower) and FPR (upper)
(:func:`dpaudit.mia.metrics.epsilon_lower_bound_ci`), 0 when that is no evidence (``epsilon_lb``).
The same formula on the point estimates is reported separately as ``epsilon_point`` and is never
a bound. The parametric per-record estimate has no counts and so no ε bound.

A Gaussian diagnostic gives the share of records whose OUT scores fail a Jarque–Bera normality test
at level 0.01 (the parametric and PP rules rest on that model).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from dpaudit._errors import DPAuditError
from dpaudit._validation import flag, one_of, unit_interval, whole_number
from dpaudit.mia.attacks import Attack, attack_from
from dpaudit.mia.calibrate import fpc_factor, pp_transform, threshold
from dpaudit.mia.fits import loo_fits
from dpaudit.mia.metrics import (
    Bootstrap,
    auc,
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_lower_bound_ci,
    per_record_rates,
    percentile_interval,
    point_at_fpr,
    roc_curve,
)
from dpaudit.mia.per_record import (
    conformal_ranks,
    empirical_per_record,
    hit_probability,
    not_estimable_reason,
    parametric_per_record,
)
from dpaudit.mia.results import AlphaResult, FprSpread, MiaReport, RuleResult
from dpaudit.mia.scores import ScoreSet

__all__ = ["evaluate", "MiaReport", "RULES", "RULE_NAMES", "MIN_FPR", "MAX_BOOT"]

#: The smallest target FPR :func:`evaluate` accepts: measuring α needs ~1/α non-member scores, and
#: beyond 1e-12 the t and normal quantiles lose the precision that separates thresholds.
MIN_FPR = 1e-12
#: The most bootstrap replicates :func:`evaluate` draws (each is a full resampled evaluation; the
#: 95 % interval is stable to ±0.5 % of its width well before this).
MAX_BOOT = 10_000

RULES = ("naive", "pp_normal", "pp_t", "pp_rank", "per_record_empirical", "per_record_parametric")
#: Labels of the rules in tables and figures.
RULE_NAMES = {"naive": "naive concat", "pp_normal": "PP concat N(0,1)", "pp_t": "PP concat t",
              "pp_rank": "PP concat rank", "per_record_empirical": "per-record empirical",
              "per_record_parametric": "per-record param."}


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


def _pooled(hits: np.ndarray, keep: np.ndarray, boot: Bootstrap | None, *, delta: float, level: float,
            **extra: Any) -> RuleResult:
    """TPR, realised FPR, Clopper–Pearson and bootstrap CIs and ε of one fixed per-target rule.

    ``hits`` holds each target's call (bool) or its probability of being called a member.
    """
    n_pos, n_neg = int(keep.sum()), int(keep.size - keep.sum())
    tp, fp = float(np.where(keep, hits, 0).sum()), float(np.where(keep, 0, hits).sum())
    lo, hi = clopper_pearson(math.floor(tp + 1e-9), n_pos, level=level)
    tpr_reps = fpr_reps = None
    if boot is not None:
        tpr_reps, fpr_reps = boot.rate(hits, keep), boot.rate(hits, ~keep)
    eps_lb, eps_point = _epsilon(tp, n_pos, fp, n_neg, delta=delta, level=level, tpr_reps=tpr_reps, fpr_reps=fpr_reps)
    return RuleResult(True, tp / n_pos, fp / n_neg, eps_lb, eps_point,
                      ci=None if tpr_reps is None else (percentile_interval(tpr_reps, level)),
                      cp=(float(lo), float(hi)), **extra)


def _per_record(values: np.ndarray, boot: Bootstrap | None, level: float, **fields: Any) -> RuleResult:
    """A mean of per-record estimates with its records bootstrap interval."""
    ci = None if boot is None else (percentile_interval(boot.record_mean(values), level))
    return RuleResult(True, float(values.mean()), ci=ci, **fields)


def evaluate(
    scores: ScoreSet,
    *,
    attack: str | Attack | None = None,
    fpr: Sequence[float] = (1e-2, 1e-3),
    threshold_kind: str = "t",
    fpc: bool = False,
    strict: bool = False,
    n_boot: int = 200,
    level: float = 0.95,
    delta: float = 0.0,
    seed: int = 0,
    sign: str = "fitted",
) -> MiaReport:
    """Membership-inference vulnerability of a ScoreSet at low FPR, computed reliably.

    Parameters
    ----------
    scores : ScoreSet
        Scores (M, N+) and membership; every record IN and OUT in ≥ 3 models.
    attack : name, Attack or None, default None (LiRA)
        The attack (:data:`dpaudit.mia.attacks.ATTACKS`: ``"lira"``, ``"rmia"``), by name with its
        defaults or configured (``LiRA(variance="global")``).
    fpr : sequence of float, default (1e-2, 1e-3)
        The target false-positive rates α.
    threshold_kind : {"t", "normal"}, default "t"
        Which PP threshold the headline (``options["threshold"]``) refers to; both are reported.
    fpc : bool, default False
        Divide the fitted variances by the finite-population correction ``1 − N/N+`` (spec §3b):
        the naive (LiRA), PP-normal, PP-t and parametric rules. The rank-based rules fit no variance.
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
        +1 (membership raises the signal, as for LiRA's confidence). The fitted sign shares μ_out with
        the standardisation, which inflates the t rule's FPR for records with Δ ≈ 0 at small M
        (measured at α = 0.01, M = 16: 0.0124 fitted vs 0.0099 positive; docs/mia.md). The rank and
        per-record rules are one-sided on the signal (membership raises it).

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
    >>> rep.rows[1].rules["per_record_empirical"].reason[:24]
    'not estimable at this M:'
    """
    if not isinstance(scores, ScoreSet):
        raise DPAuditError(f"evaluate() takes a ScoreSet, got {type(scores).__name__}; build one with ScoreSet(...)")
    attack = attack_from(attack)
    alphas = tuple(fpr) if isinstance(fpr, Sequence) and not isinstance(fpr, str) else (fpr,)
    if not alphas:
        raise DPAuditError("fpr needs at least one target false-positive rate, e.g. (0.01,)")
    alphas = tuple(unit_interval("fpr", a) for a in alphas)
    if min(alphas) < MIN_FPR:
        raise DPAuditError(f"fpr {min(alphas):g} is below {MIN_FPR:g}: no evaluation holds the ~1/fpr non-member "
                           "scores needed to measure it; ask for a larger false-positive rate")
    threshold_kind = one_of("threshold", threshold_kind, ("t", "normal"))
    n_boot = whole_number("n_boot", n_boot, minimum=0, maximum=MAX_BOOT)
    seed = whole_number("seed", seed, minimum=0)
    fpc = flag("fpc", fpc)
    strict = flag("strict", strict)
    sign = one_of("sign", sign, ("fitted", "positive"))
    level = unit_interval("level", level, " (e.g. 0.95)")
    keep = np.asarray(scores.keep)
    fpc_value = fpc_factor(scores.train_size, scores.pool_size) if fpc else None
    signal = attack.signal(scores)
    fits = loo_fits(signal, keep, location=attack.location, variance=attack.variance, fpc=fpc_value)
    stat = attack.statistic(scores, fits)
    pooled = roc_curve(stat, keep)
    f = pp_transform(signal, fits, sign="positive" if sign == "positive" else "fitted")
    z_positive = f if sign == "positive" else pp_transform(signal, fits, sign="positive")
    ranks = conformal_ranks(signal, keep)
    boot = Bootstrap(keep.shape, n_boot, seed=seed) if n_boot else None
    naive_boot = boot.tpr_at_fpr(stat, keep, alphas) if boot else None
    eps = {"delta": delta, "level": level}

    rows = []
    for j, alpha in enumerate(alphas):
        rules: dict[str, RuleResult] = {}
        point = point_at_fpr(pooled, alpha, strict=strict)
        _, rec_fpr = per_record_rates(stat, keep, point.threshold)
        naive = _pooled(stat >= point.threshold, keep, boot, threshold=float(point.threshold), **eps)
        # the threshold was chosen on these data: no Clopper–Pearson interval; the bootstrap re-chooses it
        rules["naive"] = RuleResult(True, naive.tpr, naive.fpr, naive.epsilon_lb, naive.epsilon_point,
                                    ci=None if naive_boot is None else (percentile_interval(naive_boot[:, j], level)),
                                    threshold=naive.threshold)
        for kind in ("normal", "t"):
            rules[f"pp_{kind}"] = _pooled(f >= threshold(alpha, kind=kind, n_out=fits.n_out), keep, boot, **eps)
        reason = not_estimable_reason(ranks.n_out, alpha)
        if reason:
            rules["pp_rank"] = rules["per_record_empirical"] = RuleResult.not_estimable(reason)
        else:
            rank = rules["pp_rank"] = _pooled(hit_probability(ranks, alpha), keep, boot, **eps)
            emp = empirical_per_record(signal, keep, alpha, ranks=ranks)
            assert emp.tpr is not None and emp.fpr is not None  # estimable: checked above
            # ε from the same targets' counts as the pooled rank rule (identical under the efficient design)
            rules["per_record_empirical"] = _per_record(emp.tpr, boot, level, fpr=float(emp.fpr.mean()),
                                                        epsilon_lb=rank.epsilon_lb, epsilon_point=rank.epsilon_point)
        par = parametric_per_record(signal, keep, alpha, fpc=fpc_value)
        assert par.tpr is not None  # the parametric estimator is estimable at any α
        # the Gaussian model's check: how often each record's t threshold is crossed by its own OUT
        # signals, leave-one-out (α when the tails are Gaussian)
        crossed = z_positive >= threshold(alpha, kind="t", n_out=fits.n_out)
        tail_fpr = float((np.where(keep, False, crossed).sum(axis=0) / (~keep).sum(axis=0)).mean())
        rules["per_record_parametric"] = _per_record(par.tpr, boot, level, fpr=alpha, fpr_kind="nominal",
                                                     t_threshold_fpr_loo=tail_fpr)
        spread = FprSpread(float(np.nanmax(rec_fpr)), float(np.nanmean(rec_fpr > alpha)))
        rows.append(AlphaResult(alpha, {r: rules[r] for r in RULES}, spread))
    options = {"attack": attack.name, "attack_options": attack.options(), "threshold": threshold_kind, "fpc": fpc,
               "sign": sign, "location": attack.location, "variance": attack.variance, "strict": strict,
               "n_boot": n_boot, "level": level, "delta": delta, "train_size": scores.train_size,
               "pool_size": scores.pool_size}
    diagnostics = {"share_non_normal": _jarque_bera_share(signal, keep), "min_n_out": int(fits.n_out.min()),
                   "auc_naive": float(auc(pooled))}
    return MiaReport(scores.n_models, scores.n_records, alphas, tuple(rows), options, diagnostics)
