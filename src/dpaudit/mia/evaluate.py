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

For figures the report also carries (``curves``, ``fpr_histograms``; spec-free, display only): the
naive rule's exact ROC sampled at ≤ :data:`CURVE_POINTS` false-positive counts log-spaced from 1 to
n_neg; the ROC of the PP-normal and PP-t rules as α sweeps, counted on the targets of every k-th model (every
record; then every j-th record only if one model has more than :data:`CURVE_TARGETS` records) so
that at most that many targets are read (k = 1 when the evaluation is that small); the mean
per-record parametric TPR against α on up to 2,048 evenly spaced records; and per α a histogram of the naive
threshold's per-record FPR over all records. None of it changes a number of the tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import flag, one_of, unit_interval, whole_number
from dpaudit.mia.attacks import Attack, attack_from
from dpaudit.mia.calibrate import fitted_sign, fpc_factor, pp_transform, threshold
from dpaudit.mia.fits import LooFitter, RecordMoments, column_blocks, loo_fits, record_moments
from dpaudit.mia.metrics import (
    Bootstrap,
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_lower_bound_ci,
    percentile_interval,
)
from dpaudit.mia.metrics.intervals import RechosenThreshold, TargetEntries, TargetSets
from dpaudit.mia.metrics.roc import PooledScores, mann_whitney_auc
from dpaudit.mia.per_record import (
    block_ranks,
    hit_probability,
    normal_tail_umvue,
    not_estimable_reason,
    parametric_per_record,
    rank_cap,
)
from dpaudit.mia.results import AlphaResult, Curve, FprSpread, Histogram, MiaReport, RuleResult
from dpaudit.mia.scores import ScoreSet

__all__ = ["evaluate", "MiaReport", "RULES", "RULE_NAMES", "MIN_FPR", "MAX_BOOT", "CURVE_POINTS", "CURVE_TARGETS"]

#: The smallest target FPR :func:`evaluate` accepts: measuring α needs ~1/α non-member scores, and
#: beyond 1e-12 the t and normal quantiles lose the precision that separates thresholds.
MIN_FPR = 1e-12
#: The most bootstrap replicates :func:`evaluate` draws (each is a full resampled evaluation; the
#: 95 % interval is stable to ±0.5 % of its width well before this).
MAX_BOOT = 10_000

#: Points per ROC curve of the report's figures (:class:`~dpaudit.mia.results.Curve`).
CURVE_POINTS = 160
#: The most targets the PP curves are counted on (every k-th model, all records): ~10 ms at M = 256,
#: N+ = 50,000 (~1 % of the evaluation; 2 models there, 50,000 non-member targets, so the curves reach
#: FPR 2e-5).
CURVE_TARGETS = 1 << 17

RULES = ("naive", "pp_normal", "pp_t", "pp_rank", "per_record_empirical", "per_record_parametric")
#: Labels of the rules in tables and figures.
RULE_NAMES = {"naive": "naive concat", "pp_normal": "PP concat N(0,1)", "pp_t": "PP concat t",
              "pp_rank": "PP concat rank", "per_record_empirical": "per-record empirical",
              "per_record_parametric": "per-record param."}


#: What a score set's ``meta`` says about how it was made that the report repeats (``options["scores"]``).
_MENTIONED_META = ("dataset", "data", "model", "design", "trainer", "seed", "simulation", "null")


def _jarque_bera_share(moments: RecordMoments, level: float = 0.01) -> float:
    """Share of records whose OUT scores fail Jarque–Bera at ``level``: ``JB = n/6·(S² + (K − 3)²/4)``
    with the sample skewness S and kurtosis K (moments about the mean, divided by n), p = χ²₂ tail."""
    assert moments.m3_out is not None and moments.m4_out is not None
    n = moments.n_out
    m2 = moments.ss_out / n
    safe = np.where(m2 > 0, m2, 1.0)
    skew = moments.m3_out / n / safe**1.5
    kurt = moments.m4_out / n / safe**2
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


@dataclass
class _Tally:
    """Everything one pass over the blocks of records gathers for the rules (per α: index j)."""

    n_alpha: int
    tp: dict[str, list[float]] = field(default_factory=dict)  # pooled rule → per α
    fp: dict[str, list[float]] = field(default_factory=dict)
    positions: list[np.ndarray] = field(default_factory=list)  # targets the bootstrap sums one by one
    values: list[np.ndarray] = field(default_factory=list)  # … and their values, one column per sum

    def count(self, rule: str, j: int, hits: np.ndarray, members: np.ndarray) -> None:
        """Add a block's calls of a 0/1 rule: ``hits`` (all targets) and ``members`` (hits among IN targets)."""
        tp = int(np.count_nonzero(members))
        self.tp.setdefault(rule, [0.0] * self.n_alpha)[j] += tp
        self.fp.setdefault(rule, [0.0] * self.n_alpha)[j] += int(np.count_nonzero(hits)) - tp


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

    Notes
    -----
    Computed in two passes over blocks of records (:func:`dpaudit.mia.fits.column_blocks`, ~2 MB per
    array), so the only full-size arrays besides the inputs are the attack's statistic, the
    bootstrap's bit-packed target sets (one byte per target and four sets) and the non-members'
    sorted statistic. Pass 1 fits every block (:class:`~dpaudit.mia.fits.LooFitter`), computes the
    PP score ``z = (t − μ_out)/σ_out``, the statistic (LiRA's OUT density from that z; the
    non-members' values gathered block by block), the conformal ranks (capped:
    :func:`~dpaudit.mia.per_record.rank_cap`) and counts every fixed rule; the naive cuts then come
    from one sort of the non-members' statistic (:class:`~dpaudit.mia.metrics.roc.PooledScores`:
    "score > c" is the ROC point at FPR ≤ α), and pass 2 counts the naive rule and its per-record
    FPR. The bootstrap (its record weights drawn in the background meanwhile) reuses that sort and
    the counted sets (:class:`~dpaudit.mia.metrics.Bootstrap`). Last, the members' statistic is
    sorted in place of the spent matrix: the AUC is the Mann–Whitney count of the two sorted classes
    and each naive threshold the smallest called score of either. Every number is the one the direct
    computation gives (``tests/test_mia_fast_paths.py`` keeps it as the oracle); sums of fractional
    call probabilities (``pp_rank``), bootstrap means of per-record values and the global variance
    are summed in another order (≤ 1e-12 relative). A non-finite statistic is a
    :class:`~dpaudit.DataError`.

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
    n_models, n_records = keep.shape
    n_alpha = len(alphas)
    fpc_value = fpc_factor(scores.train_size, scores.pool_size) if fpc else None
    signal = np.asarray(attack.signal(scores), dtype=np.float64)
    moments = record_moments(signal, keep, higher=True)
    fitter = LooFitter(signal, keep, location=attack.location, variance=attack.variance, fpc=fpc_value,
                       moments=moments)
    n_in, n_out = moments.n_in.astype(np.int64), moments.n_out.astype(np.int64)
    n_pos, n_neg = int(n_in.sum()), int(n_out.sum())
    # Student-t thresholds per record: a target's leave-one-out OUT count is n_out (IN target) or
    # n_out − 1 (OUT target), so two values per record, from the distinct counts
    t_cut = [(threshold(a, kind="t", n_out=moments.n_out), threshold(a, kind="t", n_out=moments.n_out - 1))
             for a in alphas]
    z_cut = [threshold(a, kind="normal") for a in alphas]
    reasons = [not_estimable_reason(moments.n_out, a) for a in alphas]
    ranked = [j for j in range(n_alpha) if not reasons[j]]
    cap = rank_cap([alphas[j] for j in ranked], int(n_out.max())) if ranked else 0

    boot = Bootstrap(keep.shape, n_boot, seed=seed) if n_boot else None
    # the bootstrap's target sets: the IN targets, then per α the IN targets each rule calls members
    set_names = ["keep"] + [f"{rule}/{j}" for j in range(n_alpha) for rule in ("naive", "pp_normal", "pp_t")]
    set_names += [f"pp_rank/{j}" for j in ranked]
    index = {name: i for i, name in enumerate(set_names)}
    sets = TargetSets(keep.shape, len(set_names), group=boot.group) if boot else None
    # …and the targets summed one by one: per α, OUT targets called by a PP rule or ranked, and IN
    # targets with a fractional conformal call
    value_names = [f"{rule}/{j}" for j in range(n_alpha) for rule in ("pp_normal", "pp_t")]
    value_names += [f"{part}/{j}" for j in ranked for part in ("rank_fp", "rank_tp")]
    column = {name: i for i, name in enumerate(value_names)}

    tally = _Tally(n_alpha)
    # the figures' PP curves read every model_step-th model (then every record_step-th record): all records,
    # so the heterogeneity of records does not move the curve off the table's numbers
    model_step = -(-n_models // max(1, min(n_models, CURVE_TARGETS // n_records)))
    record_step = -(-len(range(0, n_models, model_step)) * n_records // CURVE_TARGETS)
    curve_f: list[np.ndarray] = []
    curve_k: list[np.ndarray] = []
    crossed = [np.zeros(n_records, dtype=np.int64) for _ in alphas]
    emp_tpr = {j: np.empty(n_records) for j in ranked}
    emp_fpr = {j: np.empty(n_records) for j in ranked}
    rank_tp = {j: np.empty(n_records) for j in ranked}
    rank_fp = {j: np.empty(n_records) for j in ranked}

    stat: np.ndarray | None = None  # the attack's statistic, (M, N+)
    blockwise = True
    negatives, filled = np.empty(n_neg), 0  # the non-members' statistic (blockwise attacks)
    for cols in column_blocks(n_records, n_models):
        s, k = signal[:, cols], keep[:, cols]
        out = ~k
        fits = fitter.fits(cols)
        z = pp_transform(s, fits, sign="positive")  # (t − μ_out)/σ_out: PP's score and LiRA's OUT density
        own = attack.block_statistic(s, fits, z) if blockwise else None
        if stat is None:  # the first block decides: statistic by blocks, or of the whole ScoreSet
            blockwise = own is not None
            stat = np.empty(keep.shape) if blockwise else np.asarray(
                attack.statistic(scores, loo_fits(signal, keep, location=attack.location, variance=attack.variance,
                                                  fpc=fpc_value)), dtype=np.float64)
        if own is not None:
            if not np.isfinite(own).all():
                raise DataError(f"the {attack.name} statistic is not finite for some targets of records "
                                f"{cols.start}–{cols.stop - 1}; check the scores for extreme values")
            stat[:, cols] = own
            part = own[out]  # the non-members' statistic, gathered while the block is in cache
            negatives[filled:filled + part.size] = part
            filled += part.size
        f = z if sign == "positive" else fitted_sign(z.copy(), fits)
        first = -cols.start % record_step
        if first < k.shape[1]:
            curve_f.append(f[::model_step, first::record_step].copy())
            curve_k.append(k[::model_step, first::record_step].copy())
        called_out = np.zeros(k.shape, dtype=bool)  # OUT targets that some rule calls a member
        rows: dict[str, np.ndarray] = {}
        for j in range(n_alpha):
            # Student-t threshold of a target: its record's, at n_out (IN target) or n_out − 1 (OUT)
            t_in, t_out = t_cut[j][0][cols], t_cut[j][1][cols]
            for rule, hits in (("pp_normal", f >= z_cut[j]), ("pp_t", ((f >= t_in) & k) | ((f >= t_out) & out))):
                members = hits & k
                tally.count(rule, j, hits, members)
                if sets is not None:
                    sets.add(index[f"{rule}/{j}"], cols, members)
                    rows[f"{rule}/{j}"] = hits & out
                    called_out |= rows[f"{rule}/{j}"]
            # the Gaussian model's check: each record's t threshold crossed by its own OUT signals
            crossed[j][cols] = np.count_nonzero((z >= t_out) & out, axis=0)
        if ranked:
            ranks = block_ranks(s, k, n_out[cols], cap)
            for j in ranked:
                hits = hit_probability(ranks, alphas[j])
                in_hits, out_hits = hits * k, hits * out  # hits ≥ 0: the same floats as where(k, hits, 0)
                rank_tp[j][cols], rank_fp[j][cols] = in_hits.sum(axis=0), out_hits.sum(axis=0)
                emp_tpr[j][cols], emp_fpr[j][cols] = rank_tp[j][cols] / n_in[cols], rank_fp[j][cols] / n_out[cols]
                if sets is not None:
                    whole = in_hits == 1.0
                    sets.add(index[f"pp_rank/{j}"], cols, whole)
                    fraction = in_hits * ~whole  # IN targets called with a probability strictly below 1
                    called_out |= (out_hits > 0) | (fraction > 0)
                    rows[f"rank_fp/{j}"], rows[f"rank_tp/{j}"] = out_hits, fraction
        if sets is not None:
            sets.add(index["keep"], cols, k)
            picked = np.flatnonzero(called_out)
            width = k.shape[1]
            tally.positions.append((picked // width) * n_records + cols.start + picked % width)
            vals = np.zeros((picked.size, len(value_names)))
            for name, arr in rows.items():
                vals[:, column[name]] = arr.reshape(-1)[picked]
            tally.values.append(vals)
    assert stat is not None

    # the naive rule: thresholds from one sort of the non-members' statistic, then pass 2 counts it
    if blockwise:
        negatives.sort()
        pooled = PooledScores.with_sorted_negatives(stat, keep, negatives)
    else:
        del negatives
        pooled = PooledScores(stat, keep)
    cuts = [pooled.cut(a, strict=strict) for a in alphas]
    rec_fpr = [np.empty(n_records) for _ in alphas]
    for cols in column_blocks(n_records, n_models):
        st, k = stat[:, cols], keep[:, cols]
        for j, c in enumerate(cuts):
            above = st > c
            members = above & k
            tally.count("naive", j, above, members)
            rec_fpr[j][cols] = np.count_nonzero(above & ~k, axis=0) / n_out[cols]
            if sets is not None:
                sets.add(index[f"naive/{j}"], cols, members)

    parametric = [parametric_per_record(signal, keep, a, fpc=fpc_value, moments=moments).tpr for a in alphas]
    reps: dict[str, np.ndarray] = {}
    if boot is not None and sets is not None:
        listed = TargetEntries(keep.shape, np.concatenate(tally.positions), np.concatenate(tally.values))
        tally.positions, tally.values = [], []
        # per-record values whose means the bootstrap resamples over records
        records = np.stack([emp_tpr[j] for j in ranked] + [p for p in parametric if p is not None], axis=1)
        rechosen = RechosenThreshold(pooled, alphas, cuts, keep.shape)
        parts: dict[str, list[np.ndarray]] = {}
        for block in boot.blocks():
            counts, sums = boot.column_totals(block, sets, records)
            entries = boot.entry_totals(block, listed)
            tp_pos = counts[:, index["keep"]]
            neg = np.maximum(block.w_models.sum(axis=1) * block.w_records.sum(axis=1) - tp_pos, 1e-300)
            pos = np.maximum(tp_pos, 1e-300)
            naive_cut = counts[:, [index[f"naive/{j}"] for j in range(n_alpha)]]
            tpr, fp_anchor = rechosen.tpr(block, naive_cut, tp_pos)
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
        reps = {name: np.concatenate(arrs) for name, arrs in parts.items()}

    # the statistic is no longer needed as a matrix: its members' values are sorted in its place for
    # the AUC, and each naive threshold (the smallest score the rule calls) is read off both classes
    positives = _sorted_positives(stat, keep, own_stat=blockwise)
    naive_threshold = [_smallest_above(c, pooled.negatives, positives) for c in cuts]
    auc_naive = mann_whitney_auc(pooled.negatives, positives)
    eps = {"delta": delta, "level": level}

    def replicates(rule: str, j: int) -> tuple[np.ndarray, np.ndarray] | None:
        if not reps:
            return None
        col = ranked.index(j) if rule == "pp_rank" else j
        return reps[f"{rule}_tpr"][:, col], reps[f"{rule}_fpr"][:, col]

    rows_out = []
    for j, alpha in enumerate(alphas):
        rules: dict[str, RuleResult] = {}
        naive = _pooled(tally.tp["naive"][j], tally.fp["naive"][j], n_pos, n_neg, replicates("naive", j), **eps)
        # the threshold was chosen on these data: no Clopper–Pearson interval; the bootstrap re-chooses it
        rules["naive"] = RuleResult(True, naive.tpr, naive.fpr, naive.epsilon_lb, naive.epsilon_point,
                                    ci=(percentile_interval(reps["naive_rechosen"][:, j], level) if reps else None),
                                    threshold=naive_threshold[j])
        for kind in ("normal", "t"):
            rule = f"pp_{kind}"
            rules[rule] = _pooled(tally.tp[rule][j], tally.fp[rule][j], n_pos, n_neg, replicates(rule, j), **eps)
        if reasons[j]:
            rules["pp_rank"] = rules["per_record_empirical"] = RuleResult.not_estimable(reasons[j])
        else:
            rank = rules["pp_rank"] = _pooled(float(rank_tp[j].sum()), float(rank_fp[j].sum()), n_pos, n_neg,
                                              replicates("pp_rank", j), **eps)
            # ε from the same targets' counts as the pooled rank rule (identical under the efficient design)
            rules["per_record_empirical"] = _per_record(
                emp_tpr[j], reps["records"][:, ranked.index(j)] if reps else None, level,
                fpr=float(emp_fpr[j].mean()), epsilon_lb=rank.epsilon_lb, epsilon_point=rank.epsilon_point)
        par = parametric[j]
        assert par is not None  # the parametric estimator is estimable at any α
        tail_fpr = float((crossed[j] / n_out).mean())
        rules["per_record_parametric"] = _per_record(
            par, reps["records"][:, len(ranked) + j] if reps else None, level, fpr=alpha, fpr_kind="nominal",
            t_threshold_fpr_loo=tail_fpr)
        spread = FprSpread(float(np.nanmax(rec_fpr[j])), float(np.nanmean(rec_fpr[j] > alpha)))
        rows_out.append(AlphaResult(alpha, {r: rules[r] for r in RULES}, spread))
    options = {"attack": attack.name, "attack_options": attack.options(), "threshold": threshold_kind, "fpc": fpc,
               "sign": sign, "location": attack.location, "variance": attack.variance, "strict": strict,
               "n_boot": n_boot, "level": level, "delta": delta, "train_size": scores.train_size,
               "pool_size": scores.pool_size, "seed": seed, "n_in": [int(n_in.min()), int(n_in.max())],
               "scores": {k: v for k, v in scores.meta.items() if k in _MENTIONED_META}}
    diagnostics = {"share_non_normal": _jarque_bera_share(moments), "min_n_out": int(n_out.min()) - 1,
                   "auc_naive": auc_naive}
    sampled = np.arange(0, n_records, record_step)
    curves = {"naive": _naive_curve(pooled.negatives, positives, n_models, n_records),
              **_pp_curves(np.concatenate(curve_f, axis=1), np.concatenate(curve_k, axis=1), n_out[sampled]),
              "per_record_parametric": _parametric_curve(moments, fpc_value, n_neg)}
    histograms = tuple(_fpr_histogram(a, rec_fpr[j], int(n_out.min())) for j, a in enumerate(alphas))
    return MiaReport(n_models, n_records, alphas, tuple(rows_out), options, diagnostics, curves, histograms)


def _curve_alphas(n_neg: int, points: int = CURVE_POINTS) -> np.ndarray:
    """``points`` target FPRs log-spaced from 1 down to 1/n_neg (so the thresholds ascend)."""
    return np.geomspace(1.0, 1.0 / max(n_neg, 1), points)


def _naive_curve(negatives: np.ndarray, positives: np.ndarray, n_models: int, n_records: int) -> Curve:
    """The naive rule's exact ROC at ≤ :data:`CURVE_POINTS` false-positive counts log-spaced from 1 to
    n_neg: each point is "score > c" with c the cut of :meth:`PooledScores.cut` (both classes sorted)."""
    n_neg, n_pos = negatives.size, positives.size
    allowed = np.unique(np.geomspace(1, n_neg, CURVE_POINTS).round().astype(np.int64))
    where = n_neg - 1 - allowed
    cut = np.where(where >= 0, negatives[np.maximum(where, 0)], -np.inf)
    fp = n_neg - np.searchsorted(negatives, cut, side="right")
    tp = n_pos - np.searchsorted(positives, cut, side="right")
    return Curve(tuple((fp / n_neg).tolist()), tuple((tp / n_pos).tolist()), "realised", n_records, n_models)


def _suffix_counts(index: np.ndarray, members: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """Targets called at each of ``points`` ascending thresholds, given ``index`` = how many thresholds
    each target reaches: (false positives, true positives) per threshold."""
    counts = np.bincount((index + (points + 1) * members).ravel(), minlength=2 * (points + 1))
    out, inside = counts[:points + 1], counts[points + 1:]
    # called at threshold i iff index > i: the sum over bins i + 1 … points
    return np.cumsum(out[::-1])[::-1][1:], np.cumsum(inside[::-1])[::-1][1:]


def _counted_curve(fp: np.ndarray, tp: np.ndarray, n_neg: int, n_pos: int, shape: tuple[int, int]) -> Curve:
    """The curve of counts at ascending thresholds (FPR descending), FPR ascending, repeated points once."""
    fp, tp = fp[::-1], tp[::-1]
    new = np.ones(fp.size, dtype=bool)
    new[1:] = (fp[1:] != fp[:-1]) | (tp[1:] != tp[:-1])
    return Curve(tuple((fp[new] / n_neg).tolist()), tuple((tp[new] / n_pos).tolist()), "realised", shape[1],
                 shape[0])


def _pp_curves(f: np.ndarray, members: np.ndarray, n_out: np.ndarray) -> dict[str, Curve]:
    """ROC of the PP-normal and PP-t rules as α sweeps :func:`_curve_alphas`, on sampled targets.

    ``f``, ``members``: the PP scores and membership of the sampled targets (models × records); ``n_out``
    their records' OUT counts. A target is called at α when ``f`` reaches the rule's threshold
    (PP-t: its record's, at n_out for an IN target and n_out − 1 for an OUT one, as in :func:`evaluate`).
    """
    n_pos = int(np.count_nonzero(members))
    n_neg = members.size - n_pos
    alphas = _curve_alphas(n_neg)
    points = alphas.size
    out: dict[str, Curve] = {}
    index = np.searchsorted(stats.norm.isf(alphas), f, side="right")
    out["pp_normal"] = _counted_curve(*_suffix_counts(index, members, points), n_neg, n_pos, f.shape)
    n_ref = n_out[None, :] - ~members  # the leave-one-out OUT count of each target's fit
    low, high = int(n_out.min()) - 1, int(n_out.max())
    for d in range(low, high + 1):  # few values: n_out − 1 and n_out under the efficient design
        chosen = n_ref == d
        if chosen.any():
            cut = stats.t.isf(alphas, d - 1) * math.sqrt(1 + 1 / d)
            index[chosen] = np.searchsorted(cut, f[chosen], side="right")
    out["pp_t"] = _counted_curve(*_suffix_counts(index, members, points), n_neg, n_pos, f.shape)
    return out


#: Points of the per-record parametric curve (a smooth function of α), and the most records it reads
#: (evenly spaced; each point is a beta function per record, ~0.2 µs): its mean over records moves
#: with their heterogeneity, sd ~5 % at TPR 0.1 on 2,048 records of the Gaussian simulation (sd of
#: per-record TPR 0.23); ~8 ms.
_PARAMETRIC_POINTS = 20
_PARAMETRIC_RECORDS = 2048


def _parametric_curve(moments: RecordMoments, fpc: float | None, n_neg: int) -> Curve:
    """Mean per-record parametric TPR at α log-spaced from 1/n_neg to 1 (nominal FPR), on evenly spaced
    records: :func:`~dpaudit.mia.per_record.parametric_per_record` for every α at once (the same formula)."""
    n_records = moments.n_in.size
    sampled = np.arange(0, n_records, -(-n_records // _PARAMETRIC_RECORDS))
    alphas = _curve_alphas(n_neg, _PARAMETRIC_POINTS)[::-1][:-1]  # α = 1 (every target called) is added last
    scale = 1.0 if fpc is None else 1.0 / math.sqrt(fpc)
    n_in, n_out = moments.n_in[sampled], moments.n_out[sampled]
    sd_in, sd_out = np.sqrt(moments.ss_in[sampled] / (n_in - 1)), np.sqrt(moments.ss_out[sampled] / (n_out - 1))
    distinct, inverse = np.unique(n_out, return_inverse=True)
    t_cut = (stats.t.isf(alphas[:, None], distinct - 1) * np.sqrt(1 + 1 / distinct))[:, inverse]
    cut = moments.mean_out[sampled] + sd_out * scale * t_cut
    tpr = normal_tail_umvue(cut, n_in, moments.mean_in[sampled], sd_in * scale).mean(axis=1)
    return Curve((*alphas.tolist(), 1.0), (*tpr.tolist(), 1.0), "nominal", int(sampled.size))


def _fpr_histogram(alpha: float, fpr: np.ndarray, n_out: int) -> Histogram:
    """Histogram of per-record FPRs: ≤ ~40 bins, each a whole number of steps 1/n_out wide and centred
    on the lattice k/n_out the FPRs of records with n_out OUT models lie on; the range covers 2α."""
    step = 1.0 / n_out
    high = max(float(np.nanmax(fpr)), 2 * alpha)
    width = max(1, math.ceil(high / step / 40)) * step
    bins = int((high + step / 2) // width) + 1
    edges = np.arange(bins + 1) * width - step / 2
    counts = np.histogram(fpr[np.isfinite(fpr)], edges)[0]
    return Histogram(alpha, tuple(edges.tolist()), tuple(int(c) for c in counts))


def _sorted_positives(stat: np.ndarray, keep: np.ndarray, *, own_stat: bool) -> np.ndarray:
    """The members' statistic, ascending, for :func:`mann_whitney_auc` (the AUC from the sorted classes).

    The members' values are gathered in place at the front of ``stat`` when it is the evaluation's
    own array (a copy otherwise), so this adds no full-size array; ``stat`` is spent afterwards.
    """
    flat, labels = stat.reshape(-1), keep.reshape(-1)
    if own_stat:
        filled = 0
        for lo in range(0, flat.size, 1 << 20):  # write position ≤ read position: a safe in-place compaction
            chunk = flat[lo:lo + (1 << 20)][labels[lo:lo + (1 << 20)]]
            flat[filled:filled + chunk.size] = chunk
            filled += chunk.size
        positives = flat[:filled]
    else:
        positives = flat[labels]
    positives.sort()
    return positives


def _smallest_above(cut: float, *ascending: np.ndarray) -> float:
    """The smallest value above ``cut`` in any of the ascending arrays (inf if none): the threshold
    of the rule "score > cut", as the smallest score it calls a member."""
    found = [a[i] for a in ascending if (i := int(np.searchsorted(a, cut, side="right"))) < a.size]
    return float(min(found)) if found else math.inf
