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
instead of drawing U (:func:`~dpaudit.mia.conformal.hit_probability`):

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
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpaudit._validation import number_array, unit_interval
from dpaudit.mia.calibrate import threshold
from dpaudit.mia.conformal import (
    ConformalRanks,
    block_ranks,
    conformal_ranks,
    hit_probability,
    min_out_models,
    rank_cap,
)
from dpaudit.mia.fits import RecordMoments, check_fpc, column_blocks, record_moments
from dpaudit.mia.moments import column_counts
from dpaudit.mia.scores import check_score_keep

__all__ = [
    "ConformalRanks",
    "conformal_ranks",
    "block_ranks",
    "rank_cap",
    "hit_probability",
    "min_out_models",
    "not_estimable_reason",
    "models_needed",
    "models_for_every_record",
    "empirical_per_record",
    "parametric_per_record",
    "t_test_cut",
    "t_test_calls",
    "t_test_block_calls",
    "PerRecordRates",
]


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


def not_estimable_reason(n_in: np.ndarray, n_out: np.ndarray, alpha: float, *,
                         inclusion: float | None = None) -> str:
    """"" if every record has enough OUT models for the empirical estimator at α, else why not.

    Every record needs ``n_out ≥ k`` = :func:`min_out_models` (α). The message gives the M that would do
    (:func:`models_needed`).

    Examples
    --------
    >>> reason = not_estimable_reason(np.full(5, 50), np.full(5, 50), 0.01)
    >>> reason[reason.index("(M"):]
    '(M ≥ 198 in the efficient design), the fewest here is 50'
    >>> reason = not_estimable_reason(np.array([30, 36, 40]), np.array([34, 28, 24]), 0.01)
    >>> reason[reason.index("q ="):reason.index(" a record")], reason[reason.index("M ≥"):]
    ('q = 0.552', 'M ≥ 234 gives all 3 records that many with probability ≥ 1/2)')
    """
    need = min_out_models(alpha)
    n_in, n_out = np.asarray(n_in, dtype=np.int64), np.asarray(n_out, dtype=np.int64)
    fewest = int(n_out.min())
    if fewest >= need:
        return ""
    n_models = int(n_in[0] + n_out[0])
    enough = models_needed(n_in, n_out, alpha, inclusion=inclusion)

    def count(n: int) -> str:
        return f"{n}" if n < 10**7 else f"{n:.3g}"

    head = f"not estimable at this M: α = {alpha:g} needs ≥ {count(need)} OUT models per record"
    if fewest == int(n_out.max()):  # every record OUT in the same share of the models
        if 2 * fewest == n_models:
            return f"{head} (M ≥ {count(enough)} in the efficient design), the fewest here is {fewest}"
        return (f"{head} (M ≥ {count(enough)} with every record OUT in {fewest} of {n_models} models, as here), "
                f"the fewest here is {fewest}")
    q = float(n_in.mean()) / n_models if inclusion is None else inclusion
    return (f"{head}, the fewest here is {fewest} (at this design's inclusion rate q = {q:.3g} a record is OUT "
            f"in M(1 − q) models on average; M ≥ {count(enough)} gives all {n_out.size:,} records that many "
            "with probability ≥ 1/2)")


def models_needed(n_in: np.ndarray, n_out: np.ndarray, alpha: float, *, inclusion: float | None = None) -> int:
    """The M at which every record has the :func:`min_out_models` (α) OUT models the rank rules need.

    A design that puts every record OUT in the same share ``s`` of the M models (efficient LiRA:
    ``s = 1/2``) needs ``M ≥ ⌈k/s⌉``; under any other (Poisson: a record is OUT in Binomial(M, 1 − q)
    models) it is :func:`models_for_every_record`, the smallest M at which all N+ records reach k with
    probability ≥ 1/2. ``inclusion``: the design's q (:func:`dpaudit.mia.designs.poisson_inclusion`; the
    realised rate overstates it at small M·q); None: the realised rate ``mean(n_in)/M``.

    Examples
    --------
    >>> models_needed(np.full(5, 50), np.full(5, 50), 0.01), models_needed(np.full(5, 50), np.full(5, 50), 0.001)
    (198, 1998)
    """
    need = min_out_models(alpha)
    n_in, n_out = np.asarray(n_in, dtype=np.int64), np.asarray(n_out, dtype=np.int64)
    n_models = int(n_in[0] + n_out[0])
    fewest = int(n_out.min())
    if fewest == int(n_out.max()):
        return 2 * need if 2 * fewest == n_models else math.ceil(need * n_models / fewest)
    q = float(n_in.mean()) / n_models if inclusion is None else inclusion
    return models_for_every_record(need, q, n_out.size)


def models_for_every_record(need: int, inclusion: float, n_records: int) -> int:
    """Smallest M at which ``n_records`` records, each OUT in Binomial(M, 1 − q) models independently,
    are all OUT in ≥ ``need`` models with probability ≥ 1/2: ``P(Bin(M, 1 − q) ≥ need)^{N+} ≥ 1/2``.

    Bisection on M from ``⌈need/(1 − q)⌉`` (half the records short) upward; the probability grows with M.

    Examples
    --------
    >>> models_for_every_record(99, 0.5, 1), models_for_every_record(99, 0.5, 20_000)
    (198, 261)
    """
    from scipy import stats

    p_out = 1.0 - inclusion

    def enough(m: int) -> bool:
        return bool(n_records * stats.binom.logsf(need - 1, m, p_out) >= math.log(0.5))

    low = math.ceil(need / p_out) - 1  # not enough (at most half of one record's draws reach it)
    high = max(low + 1, 2 * low)
    while not enough(high):
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


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
        reason = not_estimable_reason(k.sum(axis=0), n_out, alpha)
        if reason:
            return PerRecordRates(None, None, False, reason)
        ranks = conformal_ranks(s, k, cap=rank_cap([alpha], int(n_out.max())))
    reason = not_estimable_reason(ranks.keep.sum(axis=0), ranks.n_out, alpha)
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
    n = number_array("n", n, low=3.0, hint=" (the unbiased tail estimate needs 3 scores per record)")
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
    cut = t_test_cut(moments, alpha, scale)
    return PerRecordRates(normal_tail_umvue(cut, n_in, mu_in, sd_in * scale), None, True)


def t_test_cut(moments: RecordMoments, alpha: float, scale: float = 1.0) -> np.ndarray:
    """Each record's Student-t threshold ``T_x = μ̂_out + σ̂_out·scale·t_{n_out−1}(1 − α)√(1 + 1/n_out)`` from
    all its OUT scores (``scale``: 1/√FPC with the finite-population correction, else 1)."""
    n_out, mu_out, sd_out = moments.n_out, moments.mean_out, np.sqrt(moments.ss_out / (moments.n_out - 1))
    return mu_out + sd_out * scale * threshold(alpha, kind="t", n_out=n_out)


def t_test_calls(score: np.ndarray, keep: np.ndarray, alpha: float, moments: RecordMoments) -> np.ndarray:
    """How many of each record's IN scores exceed its own t threshold :func:`t_test_cut` (no FPC), shape (N+,).

    The counted TPR ``calls/n_in`` of the test whose TPR :func:`parametric_per_record` estimates from the
    Gaussian model: both are unbiased for it when the IN scores are Gaussian (the parametric estimate is
    the counted one's Rao–Blackwellisation), so a gap beyond sampling error says the IN scores' tail is
    not the Gaussian one (:func:`dpaudit.mia.verdict.tail_check`). ``score``, ``keep``: validated arrays.

    Examples
    --------
    >>> from dpaudit.mia.simulate import gaussian_scores
    >>> sim = gaussian_scores(64, 3000, seed=0, effect=0.0)
    >>> mom = record_moments(sim.score, sim.keep)
    >>> round(float((t_test_calls(sim.score, sim.keep, 0.05, mom) / mom.n_in).mean()), 2)
    0.05
    """
    cut = t_test_cut(moments, alpha)
    calls = np.empty(score.shape[1], dtype=np.int64)
    for cols in column_blocks(score.shape[1], score.shape[0]):
        calls[cols] = t_test_block_calls(score[:, cols], keep[:, cols], cut[cols])
    return calls


def t_test_block_calls(score: np.ndarray, keep: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """:func:`t_test_calls` of a block of records: per record, its IN scores above its threshold ``cut``."""
    return column_counts((score > cut) & keep)
