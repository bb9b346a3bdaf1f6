"""Per-record calibration of LiRA scores: the PP transform, analytic thresholds and the FPC (spec §3).

Pooling LiRA statistics over records and applying one global threshold gives every record its own
false-positive rate; only the pooled FPR equals α (the MIA paper: Jälkö, Pradhan, Räisä, Honkela,
"On Reliability of Efficient Membership Inference Vulnerability Evaluation", arXiv 2605.25819).
The post-processing ("PP") fix standardises each score by its record's OUT fit,

    f_x(t) = sign(Δ_x) · (t − μ_out,x) / σ_out,x,     Δ_x = μ_in,x − μ_out,x,

so under the Gaussian model every record's OUT scores follow N(0, 1) and one threshold has FPR α for
every record: ``Φ⁻¹(1 − α)`` when the fits are exact, or the Student-t predictive threshold
``t_{n_out−1}(1 − α) · √(1 + 1/n_out)``, exact when μ_out and σ_out (ddof = 1) come from n_out
Gaussian OUT scores. With σ_in ≠ σ_out the test stays calibrated but is no longer the most powerful
one, so its TPR is a lower bound on the mean per-record vulnerability.

Efficient LiRA draws all training sets without replacement from one pool of N+ records, which shrinks
the spread of the fitted scores by the finite-population correction ``FPC = 1 − N/N+`` (Cochran 1977);
pass :func:`fpc_factor` to :func:`dpaudit.mia.fits.loo_fits` to divide the variances by it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit._validation import number_array, one_of, unit_interval, whole_number
from dpaudit.mia._defaults import DEFAULT_SIGN, DEFAULT_THRESHOLD, SIGNS, THRESHOLD_KINDS, Sign, ThresholdKind
from dpaudit.mia._distributions import norm_isf, t_isf
from dpaudit.mia.designs import poisson_inclusion
from dpaudit.mia.fits import LooFits, floored_sd, target_score
from dpaudit.mia.scores import ScoreSet, check_train_size

__all__ = ["pp_transform", "fitted_sign", "threshold", "fpc_factor", "design_fpc", "Sign", "SIGNS", "DEFAULT_SIGN",
           "ThresholdKind", "THRESHOLD_KINDS", "DEFAULT_THRESHOLD", "N_OUT_HINT"]

#: Why the Student-t threshold needs n_out ≥ 2 (the ``hint`` of its message).
N_OUT_HINT = " (the Student-t threshold needs a sample sd: 2 OUT scores)"


def pp_transform(score: Any, fits: LooFits, *, sign: Sign = DEFAULT_SIGN) -> np.ndarray:
    """The PP transform ``f = sign(Δ) · (t − μ_out)/σ_out`` of every target score (spec §3a).

    Parameters
    ----------
    score : array_like of float, shape (M, N+)
        The target scores ``t`` (the matrix the fits were made from).
    fits : LooFits
        Leave-one-out fits of the same shape; ``Δ = μ_in − μ_out`` per target.
    sign : {"fitted", "positive"}
        ``"fitted"`` (default, the MIA paper): ``sign(Δ)`` from the target's leave-one-out fits.
        ``"positive"``: +1 everywhere, i.e. assume membership raises the score (true for LiRA's
        logit-scaled confidence); then ``f`` is the one-sided offline statistic's z-score.

    Returns
    -------
    ndarray of float, shape (M, N+)
        Under the Gaussian model each record's OUT values are N(0, 1) (approximately: the fits are
        estimated, see :func:`threshold` with ``kind="t"``); larger means "more likely a member".
        ``sign(0)`` is taken as +1 and σ_out is floored at :data:`dpaudit.mia.fits.SD_FLOOR`.

    Notes
    -----
    The fitted sign and ``(t − μ_out)`` share the estimate ``μ_out``: a low ``μ_out`` makes both
    ``Δ > 0`` and a large ``t − μ_out`` more likely. For records whose true ``Δ`` is near 0 relative
    to the estimation noise this inflates the per-record FPR above α even with the exact t threshold
    (simulated, Δ = 0: about 1.4α at M = 18, 1.27α at M = 64, 1.14α at M = 256 for α = 0.01).
    Records with a clear ``Δ`` are unaffected. ``sign="positive"`` is exactly calibrated with the
    t threshold whatever ``Δ`` is, at the price of no power on records where membership lowers the
    score.

    Examples
    --------
    >>> f = LooFits(*(np.array([[v]]) for v in (0.0, 1.0, 1.0, 2.0, 5, 5)))  # μ_in < μ_out
    >>> pp_transform(np.array([[-3.0]]), f).item()
    2.0
    """
    sign = one_of("sign", sign, SIGNS)
    t = target_score(score, fits)
    z = np.subtract(t, fits.mu_out)
    z /= floored_sd(fits.sd_out)
    return z if sign == "positive" else fitted_sign(z, fits)


def fitted_sign(z: np.ndarray, fits: LooFits) -> np.ndarray:
    """``sign(Δ)·z`` with ``Δ = μ_in − μ_out`` per target and sign(0) = +1, in place of ``z``.

    A multiplication by ±1 (exact, the same floats as ``where(Δ ≥ 0, z, −z)``), branch-free: on a
    matrix of mixed signs ``np.where`` costs ~20 times as much (mispredicted branches).
    """
    factor = np.less(fits.mu_in, fits.mu_out).astype(np.float64)
    factor *= -2.0
    factor += 1.0
    z *= factor
    return z


def threshold(
    alpha: float,
    *,
    kind: ThresholdKind = DEFAULT_THRESHOLD,
    n_out: Any = None,
) -> Any:
    """Threshold on PP-transformed scores with false-positive rate α for every record (spec §3a).

    * ``kind="normal"``: ``Φ⁻¹(1 − α)``, exact when μ_out and σ_out are known. ``n_out`` is ignored.
    * ``kind="t"`` (default): ``t_{n_out−1}(1 − α) · √(1 + 1/n_out)``, the Student-t predictive
      quantile: if ``y₁ … y_n, y`` are i.i.d. Gaussian and ``ȳ, s`` (ddof = 1) come from the first n,
      then ``(y − ȳ)/(s·√(1 + 1/n)) ~ t_{n−1}``, so ``P((y − ȳ)/s > threshold) = α`` exactly.
      Use the leave-one-out OUT counts ``fits.n_out`` (ddof = 1, no FPC).

    Parameters
    ----------
    alpha : float
        Target false-positive rate, in (0, 1).
    kind : {"t", "normal"}
    n_out : int or array_like of int, each ≥ 2
        Number of OUT scores each fit used (required for ``kind="t"``).

    Returns
    -------
    float or ndarray
        A float for ``kind="normal"`` or a scalar ``n_out``; for an array ``n_out`` an array of its
        shape (elementwise, like a NumPy ufunc).

    Examples
    --------
    >>> round(threshold(0.05, kind="normal"), 4)
    1.6449
    >>> [round(v, 4) for v in threshold(0.05, n_out=np.array([2, 1000])).tolist()]
    [7.7327, 1.6472]
    """
    alpha = unit_interval("alpha", alpha)
    if one_of("kind", kind, THRESHOLD_KINDS) == "normal":
        return float(norm_isf(alpha))
    if n_out is None:
        raise DPAuditError("kind='t' needs n_out, the number of OUT scores per fit (e.g. fits.n_out)")
    n = number_array("n_out", n_out, integer=True, low=2, hint=N_OUT_HINT)
    # n_out takes few distinct values (M/2 − 1 and M/2 under efficient LiRA): evaluate each once. They
    # are integers in a short range (at most M), so a table over that range and one lookup replace
    # sorting every target's count (np.unique); each value is the same float either way.
    low, high = (int(n.min()), int(n.max())) if n.size else (2, 2)
    if high - low < max(n.size, 64):
        distinct = np.arange(low, high + 1, dtype=np.float64)
        inverse = (n - low).astype(np.intp)
    else:
        distinct, inverse = np.unique(n.astype(np.float64), return_inverse=True)
    value = (t_isf(alpha, distinct - 1) * np.sqrt(1 + 1 / distinct))[inverse].reshape(n.shape)
    return float(value) if value.ndim == 0 else value


def fpc_factor(train_size: int, pool_size: int) -> float:
    """Finite-population correction ``FPC = 1 − N/N+`` of efficient LiRA (spec §3b; Cochran 1977).

    Training sets of size N drawn without replacement from a pool of N+ records spread the fitted
    scores less than fresh training sets from the data distribution: ``σ²_emp ≈ FPC · σ²``. Divide
    the empirical variances by it (``loo_fits(..., fpc=fpc_factor(N, N+))``). If training adds its own
    randomness (seeds, dropout), only the data part of the variance should be rescaled.

    Parameters
    ----------
    train_size : int
        N, each model's training-set size.
    pool_size : int
        N+, the pool size; ``0 < N < N+``.

    Returns
    -------
    float in (0, 1)

    Examples
    --------
    >>> fpc_factor(500, 1000)
    0.5
    """
    pool_size = whole_number("pool_size", pool_size, minimum=2)
    return 1.0 - check_train_size(train_size, pool_size) / pool_size


def design_fpc(scores: ScoreSet) -> tuple[float, float, str]:
    """The finite-population correction of a score set's design: ``(1 − N/N+, N, where N comes from)``.

    A design that trains every model on exactly N pool records (efficient LiRA: N = N+/2) has
    ``FPC = 1 − N/N+`` with the declared ``train_size`` (:func:`fpc_factor`). Under the Poisson
    design (``meta["design"] == "poisson"``, as ``mia train --design poisson`` records it) each record
    is in a training set with probability q independently, and the mean of such a set has variance
    ``≈ (1 − q)·S²/(q·N+)``, the same ``1 − N/N+`` with ``N = q·N+`` (Bernoulli sampling; Särndal,
    Swensson & Wretman, *Model Assisted Survey Sampling*, 1992, Ch. 3, and the sample mean as a ratio
    of two π-estimators, Ch. 5), so N is the *realised* mean training-set size
    (:attr:`~dpaudit.mia.scores.ScoreSet.mean_in_per_model`, q = N/N+): redrawing the records that
    would be IN or OUT in fewer than 3 models raises it above the requested size at small M·q
    (:func:`dpaudit.mia.designs.poisson_keep`).

    Examples
    --------
    >>> from dpaudit.mia.designs import keep_matrix, poisson_keep
    >>> keep = keep_matrix(8, 10, seed=0)
    >>> design_fpc(ScoreSet(np.zeros((8, 10)), keep, train_size=5, pool_size=10))
    (0.5, 5.0, 'declared training-set size')
    >>> keep = poisson_keep(12, 300, inclusion=0.3, seed=1)
    >>> fpc, n, source = design_fpc(ScoreSet(np.zeros((12, 300)), keep, train_size=90, pool_size=300,
    ...                                      meta={"design": "poisson"}))
    >>> round(fpc, 4), round(n, 2), source
    (0.6472, 105.83, 'realised mean training-set size (Poisson design)')
    """
    if poisson_inclusion(scores) is not None:
        n = scores.mean_in_per_model
        return 1.0 - n / scores.pool_size, n, "realised mean training-set size (Poisson design)"
    return fpc_factor(scores.train_size, scores.pool_size), float(scores.train_size), "declared training-set size"
