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

from collections.abc import Sequence

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit._validation import flag, number, one_of, whole_number
from dpaudit.mia._defaults import DEFAULT_FPR
from dpaudit.mia._distributions import chi2_sf
from dpaudit.mia.attacks import ATTACKS, DEFAULT_ATTACK, Attack, attack_from
from dpaudit.mia.calibrate import (
    DEFAULT_SIGN,
    DEFAULT_THRESHOLD,
    SIGNS,
    THRESHOLD_KINDS,
    design_fpc,
)
from dpaudit.mia.curves import CURVE_POINTS, CURVE_TARGETS, CurveSample, fpr_histogram, naive_curve, parametric_curve
from dpaudit.mia.designs import poisson_inclusion
from dpaudit.mia.fits import LooFitter, RecordMoments, record_moments
from dpaudit.mia.group_labels import record_groups
from dpaudit.mia.groups import PerRecordTPR, disparity
from dpaudit.mia.metrics import DEFAULT_LEVEL, DEFAULT_N_BOOT, Bootstrap
from dpaudit.mia.metrics._inputs import check_level
from dpaudit.mia.metrics.epsilon import check_delta
from dpaudit.mia.metrics.pooled import mann_whitney_auc
from dpaudit.mia.metrics.replicates import TargetSets
from dpaudit.mia.per_record import models_needed, parametric_per_record
from dpaudit.mia.record_tests import rank_test_pvalues
from dpaudit.mia.references import DEFAULT_REFERENCES, REFERENCES, References, counted_targets
from dpaudit.mia.results import MiaReport
from dpaudit.mia.rule_results import RULE_NAMES, RULES, RowContext, alpha_rows, bootstrap_replicates
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.statistic import Statistic, smallest_above, sorted_positives
from dpaudit.mia.tally import RulePlan, Tally, first_pass, naive_pass

__all__ = ["evaluate", "MiaReport", "RULES", "RULE_NAMES", "MIN_FPR", "MAX_BOOT", "CURVE_POINTS", "CURVE_TARGETS",
           "DEFAULT_FPR", "DEFAULT_N_BOOT", "DEFAULT_LEVEL", "DEFAULT_THRESHOLD", "DEFAULT_SIGN", "DEFAULT_ATTACK",
           "THRESHOLD_KINDS", "SIGNS", "ATTACKS", "FPR_FLOOR_HINT", "DEFAULT_REFERENCES", "REFERENCES", "fpc_choice",
           "saturation"]

# The defaults of :func:`evaluate`, gathered here: DEFAULT_FPR, DEFAULT_ATTACK, DEFAULT_THRESHOLD, DEFAULT_SIGN,
# DEFAULT_N_BOOT and DEFAULT_REFERENCES are defined once in :mod:`dpaudit.mia._defaults` (which the command
# line's help reads without importing this module), DEFAULT_LEVEL in :mod:`dpaudit.mia.metrics`.

#: The smallest target FPR :func:`evaluate` accepts: measuring α needs ~1/α non-member scores, and
#: beyond 1e-12 the t and normal quantiles lose the precision that separates thresholds.
MIN_FPR = 1e-12
#: The most bootstrap replicates :func:`evaluate` draws (each is a full resampled evaluation; the
#: 95 % interval is stable to ±0.5 % of its width well before this).
MAX_BOOT = 10_000

#: Why α has a floor (the ``hint`` of the message of an ``fpr`` below :data:`MIN_FPR`).
FPR_FLOOR_HINT = " (measuring α takes ~1/α non-member scores)"

#: What a score set's ``meta`` says about how it was made that the report repeats (``options["scores"]``).
_MENTIONED_META = ("dataset", "data", "model", "design", "trainer", "seed", "simulation", "null")


def _jarque_bera_share(moments: RecordMoments, level: float = 0.01) -> float:
    """Share of records whose OUT scores fail Jarque–Bera at ``level``: ``JB = n/6·(S² + (K − 3)²/4)``
    with the sample skewness S and kurtosis K (moments about the mean, divided by n), p = χ²₂ tail."""
    assert moments.m3_out is not None and moments.m4_out is not None
    n = moments.n_out
    # a record whose OUT scores are all equal has SS = 0 up to the rounding of its mean (n·(4 eps·mean)²):
    # constant, not a normality failure
    m2 = np.where(moments.ss_out > n * (4 * np.finfo(np.float64).eps * moments.mean_out) ** 2, moments.ss_out / n, 0.0)
    safe = np.where(m2 > 0, m2, 1.0)
    skew = moments.m3_out / n / safe**1.5
    kurt = moments.m4_out / n / safe**2
    jb = n / 6.0 * (skew**2 + (kurt - 3.0) ** 2 / 4.0)
    p = chi2_sf(jb, 2)
    return float(np.mean(np.where(m2 > 0, p < level, False)))


def evaluate(
    scores: ScoreSet,
    *,
    attack: str | Attack | None = DEFAULT_ATTACK,
    fpr: Sequence[float] = DEFAULT_FPR,
    threshold_kind: str = DEFAULT_THRESHOLD,
    fpc: bool | None = None,
    strict: bool = False,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = DEFAULT_LEVEL,
    delta: float = 0.0,
    seed: int = 0,
    sign: str = DEFAULT_SIGN,
    references: str = DEFAULT_REFERENCES,
    by: object = None,
) -> MiaReport:
    """Membership-inference vulnerability of a ScoreSet at low FPR, computed reliably.

    Parameters
    ----------
    scores : ScoreSet
        Scores (M, N+) and membership; every record IN and OUT in ≥ 3 models.
    attack : name, Attack or None, default :data:`~dpaudit.mia.attacks.DEFAULT_ATTACK` (LiRA; None: the same)
        The attack (:data:`dpaudit.mia.attacks.ATTACKS`: ``"lira"``, ``"rmia"``), by name with its
        defaults or configured (``LiRA(variance="global")``).
    fpr : sequence of float, default (1e-2, 1e-3)
        The target false-positive rates α.
    threshold_kind : {"t", "normal"}, default "t"
        Which PP threshold the headline (``options["threshold"]``) refers to; both are reported.
    fpc : bool or None, default None
        Divide the fitted variances by the finite-population correction ``1 − N/N+`` (spec §3b):
        the naive (LiRA), PP-normal, PP-t and parametric rules. The rank-based rules fit no variance.
        N is the declared ``train_size``, or under the Poisson design the realised mean training-set
        size (:func:`dpaudit.mia.calibrate.design_fpc`); ``options["fpc_train_size"]`` and
        ``options["fpc_train_size_from"]`` say which, whether the correction is on or off. None (the
        default): on where the score set records its design (``meta["design"]``, as ``mia train``
        writes it: training sets drawn from the pool), off otherwise (simulated scores, files without
        it); ``options["fpc_why"]`` says which.
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
    references : {"balanced", "loo"}, default "balanced"
        Which other models' scores every fit reads (:mod:`dpaudit.mia.references`): ``"balanced"``
        leaves out, besides the target, one partner of the other group, so that no fitted quantity
        (location, scale, sign, LiRA's ratio) depends on the target's own membership under the null
        and the naive, PP-N(0,1) and PP-t rules report TPR = FPR on data without signal, whatever the
        score distribution; ``"loo"``: plain leave-one-out (the LiRA code; the MIA paper).
    by : str or sequence, optional
        Disparate vulnerability (:mod:`dpaudit.mia.groups`): a protected column of the run's data
        (:mod:`dpaudit.mia.group_labels`) or one group label per record; the report's ``disparity``
        gives every group's mean per-record TPR (the same per-record estimates as the whole run's
        ``per_record_empirical``, else ``per_record_parametric``), the gaps with intervals (``n_boot``
        replicates) and a permutation test of equality (seeded by ``seed``).

    Returns
    -------
    MiaReport

    Notes
    -----
    Computed in two passes over blocks of records (:mod:`dpaudit.mia.tally`;
    :func:`dpaudit.mia.fits.column_blocks`, ~2 MB per
    array), so the only full-size arrays besides the inputs are the attack's statistic, the
    bootstrap's bit-packed target sets (one byte per target and eight sets) and the non-members'
    sorted statistic. Pass 1 fits every block (:class:`~dpaudit.mia.fits.LooFitter`), computes the
    PP score ``z = (t − μ_out)/σ_out``, the statistic (LiRA's OUT density from that z; the
    non-members' values gathered block by block), the conformal ranks (capped:
    :func:`~dpaudit.mia.conformal.rank_cap`) and counts every fixed rule; the naive cuts then come
    from one sort of the non-members' statistic (:class:`~dpaudit.mia.metrics.pooled.PooledScores`:
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
    alphas = _checked_alphas(fpr)
    threshold_kind = one_of("threshold", threshold_kind, THRESHOLD_KINDS)
    n_boot = whole_number("n_boot", n_boot, minimum=0, maximum=MAX_BOOT)
    seed = whole_number("seed", seed, minimum=0)
    fpc, fpc_why = fpc_choice(scores, fpc)
    refs: References = one_of("references", references, REFERENCES)
    strict = flag("strict", strict)
    sign = one_of("sign", sign, SIGNS)
    level = check_level(level)
    delta = check_delta(delta)
    groups = None if by is None else record_groups(scores, by)  # before the work: a bad column costs nothing
    keep = np.asarray(scores.keep)
    n_models, n_records = keep.shape
    design_factor, fpc_n, fpc_source = design_fpc(scores)
    saturated = saturation(scores)  # first, while the evaluation holds no arrays of its own
    fpc_value = design_factor if fpc else None
    signal = np.asarray(attack.signal(scores), dtype=np.float64)
    moments = record_moments(signal, keep, higher=True)
    fitter = LooFitter(signal, keep, location=attack.location, variance=attack.variance, fpc=fpc_value,
                       moments=moments, references=refs)
    n_in, n_out = moments.n_in.astype(np.int64), moments.n_out.astype(np.int64)
    # the targets the rules count: all, unless records differ in their numbers of IN models (then as many
    # IN as OUT targets per record, so pooled TPR and FPR weight the records alike: references.counted_targets)
    counted = counted_targets(keep)
    c_in, c_out = (n_in, n_out) if counted is None else (np.minimum(n_in, n_out),) * 2
    n_pos, n_neg = int(c_in.sum()), int(c_out.sum())
    inclusion = poisson_inclusion(scores)
    balanced = refs == "balanced"
    plan = RulePlan.of(alphas, moments, balanced=balanced, fpc=fpc_value, inclusion=inclusion,
                       all_counted=counted is None)

    boot = Bootstrap(keep.shape, n_boot, seed=seed) if n_boot else None
    sets = TargetSets(keep.shape, len(plan.index), group=boot.group) if boot else None
    tally = Tally.start(plan, n_records)
    curve = CurveSample.of(n_models, n_records)
    statistic = Statistic(scores, attack, signal, keep, fpc_value, n_neg, references=refs)
    first_pass(signal, keep, fitter, plan, tally, statistic, curve, sets, sign=sign, n_in=c_in, n_out=c_out,
               counted=counted)

    # the naive rule: thresholds from one sort of the non-members' statistic, then pass 2 counts it
    pooled = statistic.pooled(counted)
    stat = statistic.stat
    assert stat is not None
    cuts = [pooled.cut(a, strict=strict) for a in alphas]
    naive_pass(stat, keep, cuts, tally, sets, plan, c_out)

    parametric = [parametric_per_record(signal, keep, a, fpc=fpc_value, moments=moments).tpr for a in alphas]
    reps: dict[str, np.ndarray] = {}
    if boot is not None and sets is not None:
        reps = bootstrap_replicates(boot, sets, tally, plan, parametric, pooled, cuts, keep.shape)

    # the statistic is no longer needed as a matrix: its members' values are sorted in its place for
    # the AUC, and each naive threshold (the smallest score the rule calls) is read off both classes
    positives = sorted_positives(stat, keep if counted is None else keep & counted, own_stat=statistic.blockwise)
    naive_threshold = [smallest_above(c, pooled.negatives, positives) for c in cuts]
    auc_naive = mann_whitney_auc(pooled.negatives, positives)
    naive = naive_curve(pooled.negatives, positives, n_models, n_records)
    del pooled, positives, stat  # the statistic's arrays (3/2 of the score matrix) are freed before the tables
    statistic.release()
    share_non_normal = _jarque_bera_share(moments)
    needs = [models_needed(n_in, n_out, a, inclusion=inclusion) if plan.reasons[j] else None
             for j, a in enumerate(alphas)]
    raw = parametric if fpc_value is None else [parametric_per_record(signal, keep, a, moments=moments).tpr
                                                  for a in alphas]
    calls = tally.t_calls  # per_record.t_test_calls, counted in pass 1
    ctx = RowContext(n_pos, n_neg, delta, level, share_non_normal, threshold_kind, needs, c_in, c_out,
                     rank_test_pvalues(signal, keep), [np.asarray(p) for p in raw], calls, n_in, balanced,
                     scores.record_ids)
    rows_out = alpha_rows(plan, tally, parametric, reps, naive_threshold, n_out, ctx)
    options = {"attack": attack.name, "attack_options": attack.options(), "threshold": threshold_kind, "fpc": fpc,
               "fpc_why": fpc_why, "references": refs,
               "sign": sign, "location": attack.location, "variance": attack.variance, "strict": strict,
               "n_boot": n_boot, "level": level, "delta": delta, "train_size": scores.train_size,
               "pool_size": scores.pool_size, "fpc_train_size": fpc_n, "fpc_train_size_from": fpc_source,
               "seed": seed, "n_in": [int(n_in.min()), int(n_in.max())],
               "scores": {k: v for k, v in scores.meta.items() if k in _MENTIONED_META}}
    diagnostics = {"share_non_normal": share_non_normal, "min_n_out": int(n_out.min()) - 1,
                   "auc_naive": auc_naive, "share_counted": (n_pos + n_neg) / keep.size, **saturated}
    curves = {"naive": naive,
              **curve.curves(n_out, balanced=balanced),
              "per_record_parametric": parametric_curve(moments, fpc_value, n_neg)}
    histograms = tuple(fpr_histogram(a, tally.rec_fpr[j], int(c_out.min())) for j, a in enumerate(alphas))
    found = None if groups is None else disparity(
        [PerRecordTPR(a, "per_record_empirical", tally.emp_tpr[j]) if not plan.reasons[j] else
         PerRecordTPR(a, "per_record_parametric", np.asarray(parametric[j]), bool(row.rules["per_record_parametric"].valid),
                      row.rules["per_record_parametric"].warning) for j, (a, row) in enumerate(zip(alphas, rows_out))],
        groups, level=level, n_boot=n_boot, seed=seed)
    return MiaReport(n_models, n_records, alphas, rows_out, options, diagnostics, curves, histograms, found)


def fpc_choice(scores: ScoreSet, fpc: bool | None) -> tuple[bool, str]:
    """Whether the finite-population correction is applied, and why: as asked, or (None) on exactly when
    the score set records its design (``meta["design"]``: training sets drawn without replacement from
    the pool, as ``mia train`` writes it), since then σ²_emp ≈ FPC·σ² (spec §3b)."""
    if fpc is not None:
        return flag("fpc", fpc), "on, as asked" if fpc else "off, as asked"
    design = scores.meta.get("design")
    if design in ("efficient", "poisson"):
        return True, f"on by default: the scores record their design ({design}: training sets drawn from the pool)"
    return False, ("off by default: the scores record no design (meta.design), so nothing says the training sets "
                   "were drawn from this pool; --fpc (fpc=True in Python) applies it")


#: The smallest |φ| read as a saturated output in a score set that records no cap: the logit of a
#: probability within 1e-13 of 0 or 1 (a cap of 2⁻⁵³ scores 36.74, float64's smallest number 708.4).
SATURATED_LOGIT = 30.0


def saturation(scores: ScoreSet) -> dict[str, float]:
    """The share of scores at a cap (``share_saturated``): at ±``meta["score_cap"]`` when the score set
    records the cap its scores were clipped to (``mia train``'s probability-only models), else at the
    matrix's largest or smallest value when that value repeats and lies at |φ| ≥ :data:`SATURATED_LOGIT`
    (an output saturated at 0 or 1; the extremes of discrete scores are not)."""
    score = np.asarray(scores.score)
    cap = scores.meta.get("score_cap")
    if isinstance(cap, (int, float)) and cap > 0:
        return {"share_saturated": float(np.mean(np.abs(score) >= cap)), "score_cap": float(cap)}
    top, bottom = float(score.max()), float(score.min())
    count = 0
    for value in {top, bottom}:  # a repeated extreme at a logit of |φ| ≥ 30 (a probability within 1e-13 of 0 or 1)
        repeats = int(np.count_nonzero(score == value))
        if repeats > 1 and abs(value) >= SATURATED_LOGIT:
            count += repeats
    return {"share_saturated": count / score.size}


def _checked_alphas(fpr: Sequence[float]) -> tuple[float, ...]:
    """The target FPRs α of :func:`evaluate`: one or more, each in (0, 1) and at least :data:`MIN_FPR`."""
    alphas = tuple(fpr) if isinstance(fpr, Sequence) and not isinstance(fpr, str) else (fpr,)
    if not alphas:
        raise DPAuditError("fpr needs at least one target false-positive rate, e.g. (0.01,)")
    return tuple(number("fpr", a, low=MIN_FPR, high=1.0, high_open=True, hint=FPR_FLOOR_HINT) for a in alphas)
