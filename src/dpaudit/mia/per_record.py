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
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpaudit._errors import DPAuditError
from dpaudit._validation import unit_interval
from dpaudit.mia.calibrate import threshold
from dpaudit.mia.fits import check_fpc
from dpaudit.mia.scores import check_score_keep

__all__ = [
    "ConformalRanks",
    "conformal_ranks",
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


def conformal_ranks(score: object, keep: object) -> ConformalRanks:
    """Rank every target's raw score among its record's OUT scores under the other models.

    One sort of each record's column (O(M log M) per record, vectorised over records); ties are
    grouped so tied scores get the same counts.

    Examples
    --------
    >>> score = np.array([[3.0], [1.0], [2.0], [2.0], [0.0], [5.0]])
    >>> keep = np.array([[True], [False], [False], [False], [True], [True]])
    >>> r = conformal_ranks(score, keep)
    >>> r.greater[:, 0].tolist(), r.equal[:, 0].tolist(), r.n_ref[:, 0].tolist()
    ([0, 2, 0, 0, 3, 0], [0, 0, 1, 1, 0, 0], [3, 2, 2, 2, 3, 3])
    """
    s, k = check_score_keep(score, keep)
    m = s.shape[0]
    # Work on records × models, contiguous along the models, so every sort is a contiguous row sort.
    out_t = np.ascontiguousarray(~k.T)
    order = np.argsort(np.ascontiguousarray(s.T), axis=1)
    s_sorted = np.take_along_axis(s.T, order, axis=1)
    # above[:, i] = number of OUT scores at sorted positions > i
    above = np.zeros(s_sorted.shape, dtype=np.int32)
    np.cumsum(np.take_along_axis(out_t, order, axis=1)[:, :0:-1], axis=1, dtype=np.int32, out=above[:, -2::-1])
    tied = s_sorted[:, 1:] == s_sorted[:, :-1]
    if tied.any():  # move every tie group's counts to its ends: > t counts from the group's last position
        cols = np.arange(m, dtype=np.int32)[None, :]
        last = np.ones(s_sorted.shape, dtype=bool)
        last[:, :-1] = ~tied
        last_pos = np.minimum.accumulate(np.where(last, cols, m - 1)[:, ::-1], axis=1)[:, ::-1]
        first = np.ones(s_sorted.shape, dtype=bool)
        first[:, 1:] = ~tied
        first_pos = np.maximum.accumulate(np.where(first, cols, 0), axis=1)
        at_or_above = above + np.take_along_axis(out_t, order, axis=1)
        ge_sorted = np.take_along_axis(at_or_above, first_pos, axis=1)  # OUT scores ≥ t
        above = np.take_along_axis(above, last_pos, axis=1)
        equal_sorted = ge_sorted - above
    else:
        equal_sorted = np.take_along_axis(out_t, order, axis=1).astype(np.int32)  # the target itself, if OUT
    gt = np.empty_like(above)
    eq = np.empty_like(above)
    np.put_along_axis(gt, order, above, axis=1)
    np.put_along_axis(eq, order, equal_sorted, axis=1)
    n_out = (~k).sum(axis=0)
    out = ~k
    return ConformalRanks(
        greater=np.ascontiguousarray(gt.T),
        equal=np.ascontiguousarray(eq.T) - out,  # an OUT target is among its own tied OUT scores
        n_ref=np.where(k, n_out, n_out - 1).astype(np.int32),
        keep=k,
    )


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
        Precomputed :func:`conformal_ranks` of the same matrices (shared across α).

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
        ranks = conformal_ranks(score, keep)
    reason = not_estimable_reason(ranks.n_out, alpha)
    if reason:
        return PerRecordRates(None, None, False, reason)
    hits = hit_probability(ranks, alpha)
    k = ranks.keep
    tpr = np.where(k, hits, 0.0).sum(axis=0) / k.sum(axis=0)
    fpr = np.where(k, 0.0, hits).sum(axis=0) / (~k).sum(axis=0)
    return PerRecordRates(tpr, fpr, True)


def _record_fit(score: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count, mean and sample sd (ddof = 1) of each record's scores in ``group``; shapes (N+,)."""
    n = group.sum(axis=0)
    mean = np.where(group, score, 0.0).sum(axis=0) / n
    ss = np.where(group, (score - mean) ** 2, 0.0).sum(axis=0)
    return n, mean, np.sqrt(ss / (n - 1))


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


def parametric_per_record(score: object, keep: object, alpha: float, *, fpc: float | None = None) -> PerRecordRates:
    """Parametric mean-per-record estimator: the unbiased TPR of each record's Student-t test.

    Parameters
    ----------
    score, keep : array_like, shape (M, N+)
    alpha : float
    fpc : float in (0, 1], optional
        Finite-population correction: both fitted sds are divided by √fpc.

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
    s, k = check_score_keep(score, keep)
    scale = 1.0 if fpc is None else 1.0 / math.sqrt(check_fpc(fpc))
    n_in, mu_in, sd_in = _record_fit(s, k)
    n_out, mu_out, sd_out = _record_fit(s, ~k)
    cut = mu_out + sd_out * scale * threshold(alpha, kind="t", n_out=n_out)
    return PerRecordRates(normal_tail_umvue(cut, n_in, mu_in, sd_in * scale), None, True)
