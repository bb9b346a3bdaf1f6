"""Mean per-record TPR at FPR α: two valid estimators and the rank calibration (spec ``mia.md`` §3, item 3).

The quantity both concatenations try to estimate is the *mean per-record TPR*: every record x gets
its own level-α membership test, built from x's OUT scores only, and the TPRs are averaged over
records. Two estimators whose validity is proven (and tested on null data and on mixtures with
known truth, ``tests/test_mia_per_record.py``):

**Empirical (conformal).** Target (m, x) is tested against the record's *reference*: the raw scores
of x under the other models that are OUT on x (``n_ref = n_out`` for an IN target, ``n_out − 1`` for
an OUT target, which leaves itself out). With ``G`` reference scores strictly above the target's
score ``t``, ``E`` equal to it and ``U ~ Uniform(0, 1)``, the smoothed conformal p-value

    p = (G + U·(E + 1)) / (n_ref + 1)

is exactly Uniform(0, 1) when ``t`` is exchangeable with the reference (Vovk, Gammerman & Shafer,
*Algorithmic Learning in a Random World*, 2005, §2.1.3; Lei et al., JASA 2018). The test "member iff
p ≤ α" therefore has FPR exactly α for *every* record and any n_out, and no fitted parameter
touches the target. Its probability of calling the target a member is computed in closed form
instead of drawing U (:func:`hit_probability`):

    P(p ≤ α | G, E) = clip((α(n_ref + 1) − G) / (E + 1), 0, 1).

Without ties this is 1 below the conformal rank ``k = ⌊α(n_ref + 1)⌋``, ``α(n_ref + 1) − k`` at it
and 0 above: the threshold interpolated at rank ``α(n_ref + 1)``, whose realised FPR is α, where the
unrandomised rank ``⌈(1 − α)(n_ref + 1)⌉`` of the spec gives ``k/(n_ref + 1) ≤ α``. The test is only
worth reporting when ``α(n_out + 1) ≥ 1`` (else it can call a member only with probability
``α(n_out + 1) < 1`` even above every OUT score): every record needs ``n_out ≥ ⌈1/α⌉ − 1`` OUT models
(M ≥ 198 at α = 0.01 under the efficient design). Below that the estimator is *not estimable*,
never read at FPR 0. It is one-sided on the raw score: membership must raise the score, as it does
for LiRA's logit-scaled confidence.

**Parametric (Gaussian).** Record x's own Student-t test calls "member" when a score exceeds
``T_x = μ̂_out + σ̂_out·t_{n_out−1}(1 − α)·√(1 + 1/n_out)`` (fits of all its OUT scores, ddof = 1);
under the Gaussian model its FPR is exactly α (:func:`dpaudit.mia.calibrate.threshold`). Its TPR
``P(Y_in > T_x)`` is estimated from the record's IN scores by the minimum-variance unbiased
estimator of a normal tail probability (Lieberman & Resnikoff, JASA 1955; Lehmann & Casella,
*Theory of Point Estimation*, 2nd ed., Example 2.2.2): with ``w = √n_in (T_x − μ̂_in)/((n_in − 1) σ̂_in)``,

    TPR_x = 1 − I_{(1 + w)/2}((n_in − 2)/2, (n_in − 2)/2)      (0 for w ≥ 1, 1 for w ≤ −1),

``I`` the regularised incomplete beta function. ``T_x`` depends on the OUT scores only, which are
independent of the IN scores, so ``E[TPR_x]`` is exactly the TPR of the per-record t test, at any
α and any M; on null data (IN and OUT the same Gaussian) it is exactly α. The plug-in
``1 − Φ((σ_out c_α − |Δ̂_x|)/σ_in)`` is biased upward on null data (|Δ̂| > 0 always; the estimation
noise of μ̂_in pushes a tail probability up by Jensen's inequality): measured on null Gaussian
scores at α = 0.01, 0.0232 at M = 64, 0.0145 at M = 256 and 0.0118 at M = 1,024 (this estimator:
0.0099, 0.0101, 0.0100). It is one-sided like the empirical
estimator. With the finite-population correction (``fpc``) both σ̂ are divided by √FPC before use;
the unbiasedness is then that of the corrected model, not a finite-sample fact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpaudit._errors import DPAuditError
from dpaudit._validation import unit_interval
from dpaudit.mia.calibrate import threshold
from dpaudit.mia.fits import RecordMoments, check_fpc, column_blocks, record_moments
from dpaudit.mia.scores import check_score_keep

__all__ = [
    "ConformalRanks",
    "conformal_ranks",
    "block_ranks",
    "rank_cap",
    "hit_probability",
    "min_out_models",
    "empirical_per_record",
    "parametric_per_record",
    "PerRecordRates",
]

#: Relative slack in ``α(n + 1)`` so that a product that is an integer in decimals (α = 0.29,
#: n + 1 = 100) is not floored below it by binary rounding (0.29 · 100 = 28.999999999999996).
_RANK_EPS = 1e-12


@dataclass(frozen=True, eq=False)
class ConformalRanks:
    """Every target's position among its record's OUT scores under the other models; arrays (M, N+).

    Attributes
    ----------
    greater : ndarray of int
        ``G``: reference scores strictly above the target's score.
    equal : ndarray of int
        ``E``: reference scores equal to it (the target itself excluded).
    n_ref : ndarray of int
        Reference size: ``n_out(x)`` for an IN target, ``n_out(x) − 1`` for an OUT target.
    keep : ndarray of bool
        The membership the ranks were computed for.
    """

    greater: np.ndarray
    equal: np.ndarray
    n_ref: np.ndarray
    keep: np.ndarray

    @property
    def n_out(self) -> np.ndarray:
        """OUT models per record, shape (N+,)."""
        return (~self.keep).sum(axis=0)


def conformal_ranks(score: object, keep: object, *, cap: int | None = None) -> ConformalRanks:
    """Rank every target's raw score among its record's OUT scores under the other models.

    Parameters
    ----------
    score, keep : array_like, shape (M, N+)
        Validated like a ScoreSet.
    cap : int, optional
        Only ranks below ``cap`` are needed (:func:`rank_cap`: a target with ``G ≥ cap`` is never
        called a member at the levels asked for). Then ``greater`` is exact where it is below
        ``cap`` and ``cap`` elsewhere, and ``equal`` is exact where ``greater < cap`` and 0 elsewhere.
        None: every rank exact.

    Notes
    -----
    Per block of records, only the ``k = min(cap, max n_out)`` largest OUT scores of each record are
    found (:func:`block_ranks`: peeled level by level for k ≤ 8, else selected with ``np.partition``
    and sorted); ``G`` and ``G + E`` of a target are its counts of those scores ``>`` and ``≥`` it.
    Both counts are exact while ``G < k``: every OUT score above the target is then among them. An
    OUT target is among its own tied OUT scores, so ``E`` excludes it. No full sort of any column
    when ``cap`` is small (the evaluation's case: 2 at α = 0.01, M = 256).

    Examples
    --------
    >>> score = np.array([[3.0], [1.0], [2.0], [2.0], [0.0], [5.0]])
    >>> keep = np.array([[True], [False], [False], [False], [True], [True]])
    >>> r = conformal_ranks(score, keep)
    >>> r.greater[:, 0].tolist(), r.equal[:, 0].tolist(), r.n_ref[:, 0].tolist()
    ([0, 2, 0, 0, 3, 0], [0, 0, 1, 1, 0, 0], [3, 2, 2, 2, 3, 3])
    >>> conformal_ranks(score, keep, cap=1).greater[:, 0].tolist()
    [0, 1, 0, 0, 1, 0]
    """
    s, k = check_score_keep(score, keep)
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 1):
        raise DPAuditError(f"cap must be a positive integer (or None), got {cap!r}")
    n_out = (~k).sum(axis=0)
    top = int(n_out.max()) if cap is None else min(int(cap), int(n_out.max()))
    greater = np.empty(s.shape, dtype=np.int32)
    equal = np.empty(s.shape, dtype=np.int32)
    n_ref = np.empty(s.shape, dtype=np.int32)
    for cols in column_blocks(s.shape[1], s.shape[0]):
        block = block_ranks(s[:, cols], k[:, cols], n_out[cols], top)
        greater[:, cols], equal[:, cols], n_ref[:, cols] = block.greater, block.equal, block.n_ref
    return ConformalRanks(greater=greater, equal=equal, n_ref=n_ref, keep=k)


def rank_cap(alphas: Sequence[float], n_out_max: int) -> int:
    """The ``cap`` of :func:`conformal_ranks` that :func:`hit_probability` needs at every α in ``alphas``.

    A target with ``G`` reference scores above it is called a member with positive probability only
    if ``G < α(n_ref + 1)(1 + ε)`` (the budget of :func:`hit_probability`), and ``n_ref + 1 ≤ n_out + 1``;
    so ``⌊max_α α(n_out + 1)(1 + ε)⌋ + 1`` ranks suffice.

    Examples
    --------
    >>> rank_cap([0.01, 0.001], 128), rank_cap([0.1], 1000)
    (2, 101)
    """
    return int(math.floor(max(alphas) * (n_out_max + 1) * (1 + _RANK_EPS))) + 1


#: A rank cap up to this many is served by peeling each record's largest OUT scores level by level.
_PEEL_MAX = 8
#: Stands for an IN score among the OUT scores: below every score a ScoreSet accepts (|score| ≤ 1e150).
_BELOW = -1e300


def block_ranks(s: np.ndarray, keep: np.ndarray, n_out: np.ndarray, top: int) -> ConformalRanks:
    """:func:`conformal_ranks` of one block of records, capped at ``top`` (unvalidated inputs, (M, w)).

    The OUT scores of each record are ``s`` with every IN score replaced by −1e300, below any score
    (subtracting ``keep·1e300`` leaves an OUT score exactly as it is). For ``top ≤ 8`` the largest
    distinct values are peeled off one level at a time (column maximum, its multiplicity, then those
    entries pushed down), until every record has ``top`` scores, and each target counts the levels
    above it (``G``) and at or above it (``G + E``); all ties of a level are counted, so both counts
    are exact while ``G < top``. For a larger cap each record's ``top`` largest are selected
    (``np.partition`` along contiguous rows of the transposed block) and sorted, and the counts come
    from a binary search; OUT scores tied with the ``top``-th may lie outside the selection, so
    ``≥`` is counted on the whole column for a target equal to it.
    """
    out = ~keep
    vals = np.multiply(keep, _BELOW)
    vals += s
    if top <= _PEEL_MAX:
        greater = np.zeros(s.shape, dtype=np.int32)
        at_least = np.zeros(s.shape, dtype=np.int32)
        taken = np.zeros(s.shape[1], dtype=np.int64)
        while True:
            level = vals.max(axis=0)
            live = (taken < top) & (level > _BELOW)
            if not live.any():
                break
            hit = vals == level
            count = np.count_nonzero(hit, axis=0) * live  # levels beyond a record's cap count nothing
            taken += count
            greater += (level > s) * count.astype(np.int32)
            at_least += (level >= s) * count.astype(np.int32)
            vals -= hit * 1e300  # the level's entries drop below every score
        np.minimum(greater, top, out=greater)
    else:
        rows = np.ascontiguousarray(vals.T)  # records × models: the selection runs along contiguous rows
        rows.partition(rows.shape[1] - top, axis=1)
        high = np.sort(rows[:, rows.shape[1] - top:], axis=1)[:, ::-1].T.copy()  # (top, w), descending
        greater = _count_above(high, s, strict=True)
        at_least = _count_above(high, s, strict=False)
        tied = s == high[-1]
        if tied.any():  # OUT scores equal to the top-th may lie beyond the selection: count them all
            at_least = np.where(tied, greater + np.count_nonzero(tied & out, axis=0), at_least)
    equal = at_least - greater - out
    equal *= greater < top  # unknown (and irrelevant) where G ≥ cap
    return ConformalRanks(greater=greater.astype(np.int32), equal=equal.astype(np.int32),
                          n_ref=(n_out - out).astype(np.int32), keep=keep)


def _count_above(high: np.ndarray, s: np.ndarray, *, strict: bool) -> np.ndarray:
    """How many of each record's descending ``high[:, x]`` are > (strict) or ≥ each ``s[:, x]``.

    Binary lifting: ``count`` stays the largest c with ``high[c − 1]`` above ``s`` (⌈log₂(top + 1)⌉ steps).
    """
    top, width = high.shape
    above = np.greater if strict else np.greater_equal
    count = np.zeros(s.shape, dtype=np.intp)
    flat, cols = high.ravel(), np.arange(width)
    step = 1 << (top.bit_length() - 1)
    while step:
        cand = count + step
        pos = np.minimum(cand, top) - 1
        pos *= width
        pos += cols
        count += step * ((cand <= top) & above(flat[pos], s))
        step >>= 1
    return count


def hit_probability(ranks: ConformalRanks, alpha: float) -> np.ndarray:
    """Probability that the randomised conformal test at level α calls each target a member; (M, N+).

    ``clip((α(n_ref + 1) − G)/(E + 1), 0, 1)`` (module docstring). Its mean over a record's OUT
    targets (leave-one-out) is exactly α when the record's OUT scores have no ties.

    Examples
    --------
    >>> r = ConformalRanks(np.array([[0, 1, 2]]), np.zeros((1, 3), int), np.full((1, 3), 149),
    ...                    np.ones((1, 3), bool))
    >>> hit_probability(r, 0.01).round(6).tolist()   # α(n + 1) = 1.5
    [[1.0, 0.5, 0.0]]
    """
    alpha = unit_interval("alpha", alpha)
    budget = alpha * (ranks.n_ref + 1) * (1 + _RANK_EPS)
    return np.clip((budget - ranks.greater) / (ranks.equal + 1.0), 0.0, 1.0)


def min_out_models(alpha: float) -> int:
    """Fewest OUT models per record for the empirical estimator: ``α(n_out + 1) ≥ 1``.

    Examples
    --------
    >>> min_out_models(0.01), min_out_models(0.001), min_out_models(0.3)
    (99, 999, 3)
    """
    alpha = unit_interval("alpha", alpha)
    return max(1, math.ceil((1 - _RANK_EPS) / alpha) - 1)


@dataclass(frozen=True, eq=False)
class PerRecordRates:
    """Per-record TPR (and realised FPR where it is measured) of one estimator at one α.

    Attributes
    ----------
    tpr : ndarray of float, shape (N+,) or None
        None when not estimable.
    fpr : ndarray of float, shape (N+,) or None
        Empirical: leave-one-out over each record's OUT targets. Parametric: None (α by
        construction under the Gaussian model).
    estimable : bool
    reason : str
        Why not estimable ("" when it is).
    """

    tpr: np.ndarray | None
    fpr: np.ndarray | None
    estimable: bool
    reason: str = ""


def not_estimable_reason(n_out: np.ndarray, alpha: float) -> str:
    """"" if every record has enough OUT models for the empirical estimator at α, else why not."""
    need = min_out_models(alpha)
    fewest = int(np.min(n_out))
    if fewest >= need:
        return ""
    def count(n: int) -> str:
        return f"{n}" if n < 10**7 else f"{n:.3g}"

    return (f"not estimable at this M: α = {alpha:g} needs ≥ {count(need)} OUT models per record "
            f"(M ≥ {count(2 * need)} in the efficient design), the fewest here is {fewest}")


def empirical_per_record(
    score: object, keep: object, alpha: float, *, ranks: ConformalRanks | None = None
) -> PerRecordRates:
    """Empirical mean-per-record estimator: each record's conformal test on its raw OUT scores.

    Parameters
    ----------
    score, keep : array_like, shape (M, N+)
        Raw attack scores (higher = member) and membership, validated like a ScoreSet.
    alpha : float
        Target FPR in (0, 1).
    ranks : ConformalRanks, optional
        Precomputed :func:`conformal_ranks` of the same matrices (shared across α; capped at
        :func:`rank_cap` of α or more). Without it, the ranks are computed capped at that.

    Returns
    -------
    PerRecordRates
        ``tpr[x]`` = mean hit probability over x's IN targets, ``fpr[x]`` over its OUT targets
        (leave-one-out; α exactly without ties). Not estimable when some record has fewer than
        :func:`min_out_models` OUT models.

    Examples
    --------
    >>> from dpaudit.mia.simulate import gaussian_scores
    >>> sim = gaussian_scores(64, 300, seed=0, effect=0.0)
    >>> est = empirical_per_record(sim.score, sim.keep, 0.05)
    >>> round(float(est.fpr.mean()), 6)
    0.05
    >>> empirical_per_record(sim.score, sim.keep, 0.01).reason[:30]
    'not estimable at this M: α = 0'
    """
    alpha = unit_interval("alpha", alpha)
    if ranks is None:
        s, k = check_score_keep(score, keep)
        n_out = (~k).sum(axis=0)
        if not_estimable_reason(n_out, alpha):
            return PerRecordRates(None, None, False, not_estimable_reason(n_out, alpha))
        ranks = conformal_ranks(s, k, cap=rank_cap([alpha], int(n_out.max())))
    reason = not_estimable_reason(ranks.n_out, alpha)
    if reason:
        return PerRecordRates(None, None, False, reason)
    hits = hit_probability(ranks, alpha)
    k = ranks.keep
    tpr = np.where(k, hits, 0.0).sum(axis=0) / k.sum(axis=0)
    fpr = np.where(k, 0.0, hits).sum(axis=0) / (~k).sum(axis=0)
    return PerRecordRates(tpr, fpr, True)


def normal_tail_umvue(threshold_value: np.ndarray, n: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """Minimum-variance unbiased estimate of ``P(Y > T)`` for ``Y ~ N(μ, σ²)`` from n ≥ 3 draws.

    ``1 − I_{(1+w)/2}((n − 2)/2, (n − 2)/2)`` with ``w = √n (T − ȳ)/((n − 1) s)`` (module
    docstring). A sample with s = 0 is a point mass: 1 if ȳ > T else 0.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=(100000, 8))
    >>> est = normal_tail_umvue(np.full(100000, 1.5), np.full(100000, 8), y.mean(1), y.std(1, ddof=1))
    >>> round(float(est.mean()), 3), round(float(1 - special.ndtr(1.5)), 3)
    (0.067, 0.067)
    """
    n = np.asarray(n, dtype=np.float64)
    if np.any(n < 3):
        raise DPAuditError("the unbiased normal tail estimate needs at least 3 scores per record")
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.sqrt(n) * (threshold_value - mean) / ((n - 1) * sd)
    half = (n - 2) / 2
    inside = special.betainc(half, half, np.clip((1 + np.nan_to_num(w)) / 2, 0.0, 1.0))
    tail = np.where(w >= 1, 0.0, np.where(w <= -1, 1.0, 1.0 - inside))
    return np.where(sd > 0, tail, (mean > threshold_value).astype(np.float64))


def parametric_per_record(score: object, keep: object, alpha: float, *, fpc: float | None = None,
                          moments: RecordMoments | None = None) -> PerRecordRates:
    """Parametric mean-per-record estimator: the unbiased TPR of each record's Student-t test.

    Parameters
    ----------
    score, keep : array_like, shape (M, N+)
    alpha : float
    fpc : float in (0, 1], optional
        Finite-population correction: both fitted sds are divided by √fpc.
    moments : RecordMoments, optional
        Precomputed :func:`dpaudit.mia.fits.record_moments` of the same (validated) matrices: the
        per-record counts, means and sums of squares both fits read (then ``score``, ``keep`` are
        not read again).

    Returns
    -------
    PerRecordRates
        ``tpr[x]`` (module docstring); ``fpr`` None (α by construction under the Gaussian model).
        Estimable at any α.

    Examples
    --------
    >>> from dpaudit.mia.simulate import gaussian_scores
    >>> sim = gaussian_scores(32, 4000, seed=0, effect=0.0, heterogeneity=0.0, location_spread=0.0)
    >>> round(float(parametric_per_record(sim.score, sim.keep, 0.01).tpr.mean()), 3)
    0.01
    """
    alpha = unit_interval("alpha", alpha)
    if moments is None:
        moments = record_moments(*check_score_keep(score, keep))
    scale = 1.0 if fpc is None else 1.0 / math.sqrt(check_fpc(fpc))
    # each record's fits of all its IN and all its OUT scores (sample sd, ddof = 1)
    n_in, mu_in, sd_in = moments.n_in, moments.mean_in, np.sqrt(moments.ss_in / (moments.n_in - 1))
    n_out, mu_out, sd_out = moments.n_out, moments.mean_out, np.sqrt(moments.ss_out / (moments.n_out - 1))
    cut = mu_out + sd_out * scale * threshold(alpha, kind="t", n_out=n_out)
    return PerRecordRates(normal_tail_umvue(cut, n_in, mu_in, sd_in * scale), None, True)
