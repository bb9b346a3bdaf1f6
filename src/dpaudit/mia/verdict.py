"""Which rule to believe for *these* scores: the Gaussian check, the headline verdict, the vulnerable records.

The Gaussian rules (PP-N(0,1), PP-t, the parametric per-record estimate) read "TPR at FPR α" only
where the per-record Gaussian model holds for the scores; on heavy-tailed, skewed or saturated
scores their realised FPR is several times α (measured on the shapes of
:mod:`dpaudit.mia.simulate.shapes`: PP-t at α = 0.01 realises 0.016–0.031 on Student-t₃,
log-normal, saturated and forest-like scores). The rank rules (PP-rank, the empirical per-record
estimate) are exact for any score distribution but need ⌈1/α⌉ − 1 OUT models per record.

**The Gaussian check** (:func:`gaussian_check`) of a rule at α passes when both

* its realised FPR on the OUT targets, *without* the finite-population correction, lies within a
  factor :data:`GAUSSIAN_FPR_FACTOR` = 1.5 of α (the PP rules: their own calls of OUT targets; the
  parametric rule: its per-record t thresholds crossed by the records' own OUT scores, leave-one-out);
  the correction divides the variances by 1 − N/N+ on purpose (the fitted spread is too small for
  training sets drawn from the data distribution), so it is applied after the check, not judged by it;
* at most :data:`MAX_NON_NORMAL` = 10 % of the records' OUT scores fail the Jarque–Bera normality test
  at level 0.01 (ten times the share expected of Gaussian scores; measured on null Gaussian scores:
  0.0–1.5 % at M = 16 … 1,024).

A rule whose check fails is marked not valid (``RuleResult.valid`` False, with the reason) and is
never the headline; its numbers stay in the report for comparison.

**The headline** (:func:`headline`) at α rests on PP-rank where it is estimable (its realised FPR is
α exactly), else on the PP rule of the report's threshold kind if its check passes, else on nothing:
"not estimable: needs M ≥ …" (the M at which the rank rule becomes estimable) — unless that PP
rule's ε lower bound is above 0 all the same, which is evidence of leakage at its realised FPR (see
:func:`headline`). Its verdict is "evidence of leakage" when the rule's ε lower bound (realised
rates, with confidence) is above 0, else "no evidence of leakage at this M".

**The most vulnerable records** (:func:`vulnerable_records`) are ranked by their TPR under the
headline rule, each with a Clopper–Pearson interval over its IN targets (for reading, not for
claims: among thousands of records some reach a high TPR by chance), and a record *stands out* only
when its rank test survives the Benjamini–Hochberg correction over the pool (:mod:`dpaudit.mia.record_tests`).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dpaudit.mia.findings import RULE_LABELS, Verdict, VulnerableRecords
from dpaudit.mia.record_tests import DEFAULT_FDR, benjamini_hochberg
from dpaudit.mia.results import RuleResult

__all__ = ["GAUSSIAN_FPR_FACTOR", "MAX_NON_NORMAL", "TAIL_Z", "GAUSSIAN_RULES", "gaussian_check", "tail_check",
           "headline", "vulnerable_records", "record_intervals"]

#: The Gaussian model holds for a rule at α when its uncorrected realised FPR is within this factor of α.
GAUSSIAN_FPR_FACTOR = 1.5
#: … and at most this share of the records' OUT scores fail Jarque–Bera at 0.01.
MAX_NON_NORMAL = 0.10
#: The parametric rule's Gaussian tail must agree with the counted calls of its test within this many
#: standard errors (:func:`tail_check`).
TAIL_Z = 3.0
#: The rules whose calibration rests on the per-record Gaussian model.
GAUSSIAN_RULES = ("pp_normal", "pp_t", "per_record_parametric")


def gaussian_check(fpr_uncorrected: float, alpha: float, share_non_normal: float) -> str:
    """"" when the Gaussian model holds for a rule at ``alpha`` (module docstring), else why not.

    Examples
    --------
    >>> gaussian_check(0.012, 0.01, 0.02)
    ''
    >>> gaussian_check(0.027, 0.01, 0.02)
    'its realised FPR without the FPC is 2.7× α (the Gaussian model needs it within 1.5×)'
    >>> gaussian_check(0.011, 0.01, 0.40)
    '40% of the records fail the normality test (Jarque–Bera at 0.01; at most 10%)'
    """
    ratio = fpr_uncorrected / alpha
    if not 1 / GAUSSIAN_FPR_FACTOR <= ratio <= GAUSSIAN_FPR_FACTOR:
        return (f"its realised FPR without the FPC is {ratio:.2g}× α (the Gaussian model needs it within "
                f"{GAUSSIAN_FPR_FACTOR:g}×)")
    if share_non_normal > MAX_NON_NORMAL:
        return (f"{share_non_normal:.0%} of the records fail the normality test (Jarque–Bera at 0.01; at most "
                f"{MAX_NON_NORMAL:.0%})")
    return ""


def tail_check(parametric: np.ndarray, calls: np.ndarray, n_in: np.ndarray) -> str:
    """"" when the parametric rule's Gaussian-tail TPR agrees with the counted TPR of the same per-record t
    test, else why not.

    ``parametric``: each record's estimate (no FPC); ``calls``: its IN scores above its t threshold
    (:func:`~dpaudit.mia.per_record.t_test_calls`) of ``n_in``. Under the Gaussian model both means
    estimate the same mean TPR without bias and the parametric one is the counted one's conditional
    expectation, so their difference has variance at most that of the counted mean,
    ``Σ_x p_x(1 − p_x)/n_in,x / N+²`` (records independent, p_x the parametric estimate); the check
    fails beyond :data:`TAIL_Z` = 3 such standard errors (a 0.3 % false alarm on Gaussian scores).
    The leave-one-out FPR of the thresholds (:func:`gaussian_check`) tests the OUT scores' tail; this
    tests the IN scores' — measured on null Student-t₃ scores at M = 16, α = 0.05: parametric 0.068
    against 0.057 counted, with the thresholds' FPR 1.15 α inside the band.

    Examples
    --------
    >>> n = np.full(1000, 32)
    >>> tail_check(np.full(1000, 0.05), np.full(1000, 1.6), n)
    ''
    >>> tail_check(np.full(1000, 0.068), np.full(1000, 1.6), n)[:59]
    'its Gaussian tail gives TPR 0.068 where its test calls 0.05'
    """
    p = np.clip(parametric, 0.0, 1.0)
    counted = calls / n_in
    se = float(np.sqrt((p * (1 - p) / n_in).sum())) / p.size
    gap = float(p.mean() - counted.mean())
    if abs(gap) <= TAIL_Z * max(se, 1e-12):
        return ""
    return (f"its Gaussian tail gives TPR {p.mean():.3g} where its test calls {counted.mean():.3g} (a gap of "
            f"{abs(gap) / se:.1f} standard errors: the IN scores' tail is not Gaussian)")


def headline(alpha: float, rules: dict[str, RuleResult], *, threshold_kind: str, needs_models: int | None,
             balanced: bool = True, standing_out: int = 0) -> Verdict:
    """The verdict at ``alpha`` from the rule valid for these scores (module docstring).

    ``rules``: every rule's result at α (the Gaussian ones with ``valid`` set); ``threshold_kind``: the PP
    rule the report leads with when the rank rule is not estimable (``"t"`` or ``"normal"``);
    ``needs_models``: the M at which the rank rule becomes estimable (None when it is); ``balanced``:
    whether the fits used balanced references; ``standing_out``: how many records stand out on their
    own (:mod:`dpaudit.mia.record_tests`), said in a note.

    When no rule is valid at α but the Gaussian PP rule's ε lower bound is above 0, the verdict is still
    "evidence of leakage", at that rule's *realised* FPR: the bound comes from realised rates, and with
    balanced references no rule's TPR exceeds its FPR on null data (:mod:`dpaudit.mia.references`), so
    the evidence holds although "TPR at FPR α" does not; the notes say so. With plain leave-one-out
    references a Gaussian rule's decisions depend on the target's own membership (the fitted sign's
    reference groups), so only the rank rule, which fits nothing, can carry the verdict.
    """
    gaussian = f"pp_{threshold_kind}"
    g, rank = rules[gaussian], rules["pp_rank"]
    notes: tuple[str, ...] = ()
    if not rank.estimable and g.valid is False and g.warning:
        notes += (f"{RULE_LABELS[gaussian]} is not calibrated for these scores: {g.warning}",)
    if not rank.estimable and not balanced:
        notes += ("with plain leave-one-out references (references='loo') the Gaussian rules' decisions depend on "
                  "each target's own membership: only the rank rule can carry the verdict",)
    if rank.estimable:
        name = "pp_rank"
    elif balanced and (g.valid or (g.estimable and (g.epsilon_lb or 0.0) > 0)):
        name = gaussian
        if not g.valid:
            notes += (f"its ε bound still shows leakage at its realised FPR; a TPR at FPR α needs a valid rule: "
                      f"M ≥ {needs_models:,} for the rank rule" if needs_models else
                      "its ε bound still shows leakage at its realised FPR",)
    else:
        return Verdict(alpha, "not_estimable", needs_models=needs_models, notes=notes + _record_note(standing_out))
    rule = rules[name]
    assert rule.tpr is not None and rule.fpr is not None and rule.epsilon_lb is not None
    kind = "leakage" if rule.epsilon_lb > 0 else "no_evidence"
    if name == "pp_rank" and rule.ci is not None and rule.ci[1] < rule.fpr:
        notes += (f"its TPR lies below its FPR beyond its interval ({rule.ci[1]:.3g} < {rule.fpr:.3g}): members "
                  "score lower than non-members, a signal this one-sided rule does not count; if membership lowers "
                  "the score (a loss), evaluate the negated scores",)
    return Verdict(alpha, kind, name, rule.tpr, rule.fpr, rule.epsilon_lb,
                   needs_models=None if rule.valid else needs_models, notes=notes + _record_note(standing_out))


def _record_note(standing_out: int) -> tuple[str, ...]:
    """The note that some records leak on their own, whatever the pooled verdict says."""
    if not standing_out:
        return ()
    many = standing_out > 1
    return (f"{standing_out:,} record{'s' if many else ''} stand{'' if many else 's'} out on {'their' if many else 'its'} "
            f"own (rank test of IN against OUT scores, false discovery rate {DEFAULT_FDR:.0%}): evidence of leakage for "
            f"{'them' if many else 'it'}",)


def record_intervals(called: np.ndarray, n: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper–Pearson interval of each record's called share ``called/n`` at ``level``, with fractional
    calls (a randomised rule's expected count) rounded down for the lower end and up for the upper end.
    Each distinct (count, n) is computed once (records share few of them)."""
    tail = (1 - level) / 2
    n = np.asarray(n, dtype=np.float64)
    low_count, high_count = np.floor(called + 1e-9), np.minimum(np.ceil(called - 1e-9), n)

    def bound(count: np.ndarray, upper: bool) -> np.ndarray:
        width = float(n.max()) + 2 if n.size else 1.0
        keys, inverse = np.unique(count * width + n, return_inverse=True)  # one key per (count, n): both whole
        c, m = np.floor(keys / width), keys - np.floor(keys / width) * width
        with np.errstate(invalid="ignore"):  # the ends at 0 and n are set, not computed
            if upper:
                value = np.where(c < m, special.betaincinv(c + 1, np.maximum(m - c, 1), 1 - tail), 1.0)
            else:
                value = np.where(c > 0, special.betaincinv(np.maximum(c, 1), m - c + 1, tail), 0.0)
        return np.nan_to_num(value, nan=1.0 if upper else 0.0)[inverse.reshape(-1)]

    return bound(low_count, False), bound(high_count, True)


def vulnerable_records(alpha: float, rule: str, called_in: np.ndarray, n_in: np.ndarray, fpr: np.ndarray,
                       p_value: np.ndarray, *, level: float, record_ids: np.ndarray | None = None,
                       fdr: float = DEFAULT_FDR) -> VulnerableRecords:
    """Every record's TPR under ``rule`` (``called_in``: its IN targets called, possibly fractional, of
    ``n_in``), ranked: the records that stand out first, each group by TPR and then by the interval's
    lower end, descending; ``fpr``: its realised FPR;
    ``p_value``: its rank test (:func:`~dpaudit.mia.record_tests.rank_test_pvalues`), adjusted over the
    pool by Benjamini–Hochberg."""
    tpr = called_in / n_in
    low, high = record_intervals(called_in, n_in, level)
    low, high = np.minimum(low, tpr), np.maximum(high, tpr)  # the interval encloses the estimate
    q_value = benjamini_hochberg(p_value)
    order = np.lexsort((-low, -tpr, q_value > fdr))  # the records that stand out first, then by TPR
    ids = None if record_ids is None else tuple(int(v) for v in np.asarray(record_ids)[order])

    def column(values: np.ndarray) -> tuple[float, ...]:
        return tuple(values[order].tolist())

    return VulnerableRecords(alpha, rule, level, tuple(order.tolist()), column(tpr), column(low), column(high),
                             column(fpr), tuple(np.asarray(n_in)[order].astype(int).tolist()), column(p_value),
                             column(q_value), fdr,
                             ids)
