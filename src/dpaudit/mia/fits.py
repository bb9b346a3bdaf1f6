"""Leave-one-out Gaussian fits of every (target model, record) at once (spec ``mia.md`` §2).

For target model ``m`` and record ``x``, two Gaussians are fitted to the scores of the *other* models
(efficient LiRA reuses every model as target and shadow; Carlini et al., IEEE S&P 2022):

    IN  ~ N(μ_in,  σ²_in)   from {score[m', x] : m' ≠ m, keep[m', x]}
    OUT ~ N(μ_out, σ²_out)  from {score[m', x] : m' ≠ m, not keep[m', x]}

LiRA's statistics (:mod:`dpaudit.mia.attacks.lira`), the PP calibration
(:mod:`dpaudit.mia.calibrate`) and the evaluation read them. One pass of per-record sums gives all
``M × N+`` fits. Standard deviations of 0 (all other scores equal) are floored at :data:`SD_FLOOR` =
1e-30 wherever they divide (the LiRA reference code adds 1e-30), so a perfectly separated record
yields a huge but finite statistic instead of NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpaudit._errors import DataError, DPAuditError
from dpaudit.mia.scores import check_score_keep

__all__ = ["LooFits", "loo_fits", "check_fpc", "SD_FLOOR", "floored_sd", "target_score"]


#: Floor applied to fitted standard deviations inside the statistics and the PP transform.
SD_FLOOR = 1e-30


@dataclass(frozen=True, eq=False, repr=False)
class LooFits:
    """Leave-one-out Gaussian fits for every target ``(m, x)``; every array has shape (M, N+).

    Attributes
    ----------
    mu_in, sd_in : ndarray of float, shape (M, N+)
        Location and standard deviation of the IN scores of record ``x`` from models ``m' ≠ m``.
    mu_out, sd_out : ndarray of float, shape (M, N+)
        The same from the OUT scores.
    n_in, n_out : ndarray of int, shape (M, N+)
        Number of models in each fit (``n_in + n_out = M − 1``).
    location, variance : str
        The options the fits were made with (see :func:`loo_fits`).
    ddof : int
    fpc : float or None
        Finite-population correction the variances were divided by (None: none).
    """

    mu_in: np.ndarray
    sd_in: np.ndarray
    mu_out: np.ndarray
    sd_out: np.ndarray
    n_in: np.ndarray
    n_out: np.ndarray
    location: str = "mean"
    variance: str = "per-record"
    ddof: int = 1
    fpc: float | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """(M, N+)."""
        m, n = self.mu_in.shape
        return int(m), int(n)

    def __repr__(self) -> str:
        m, n = self.shape
        return (
            f"LooFits(n_models={m}, n_records={n}, location={self.location!r}, variance={self.variance!r}, "
            f"ddof={self.ddof}, fpc={self.fpc!r})"
        )


def loo_fits(
    score: Any,
    keep: Any,
    *,
    location: Literal["mean", "median"] = "mean",
    variance: Literal["per-record", "global"] = "per-record",
    ddof: int = 1,
    fpc: float | None = None,
) -> LooFits:
    """Leave-one-out IN and OUT Gaussian fits for every target model and record.

    Parameters
    ----------
    score : array_like of float, shape (M, N+)
    keep : array_like of bool, shape (M, N+)
        Validated like :class:`~dpaudit.mia.scores.ScoreSet` (every record IN in ≥ 3 and OUT in ≥ 3
        models, so every fit has ≥ 2 models).
    location : {"mean", "median"}
        ``"mean"`` (default) or the median of the other models' scores (LiRA reference-code parity).
        The standard deviation is always the sample sd around the mean.
    variance : {"per-record", "global"}
        ``"per-record"``: σ² of each record's other IN (OUT) scores. ``"global"``: the LiRA paper's
        "fixed variance" (advised below ~64 shadow models): one pooled within-record variance
        for IN and one for OUT, over all records, from the models other than the target model ``m``:

            σ²_in[m] = Σ_x SS_in[m, x] / Σ_x (n_in[m, x] − ddof)

        where ``SS_in[m, x]`` is the sum of squared deviations of record ``x``'s other IN scores from
        their mean. So it depends on ``m`` only, and excludes model ``m`` everywhere.
    ddof : int
        Delta degrees of freedom of the variance (default 1: the unbiased sample variance).
    fpc : float in (0, 1], optional
        Finite-population correction ``1 − N/N+`` (:func:`dpaudit.mia.calibrate.fpc_factor`); the
        variances are divided by it: ``σ² = σ²_emp / FPC`` (spec §3b, the MIA paper; Cochran 1977). It corrects the
        data-sampling part of the variance only: if training adds its own randomness (seeds, dropout),
        rescaling everything over-corrects.

    Returns
    -------
    LooFits

    Notes
    -----
    *Mean and variance* come from per-record group sums minus the target's row. Scores are first
    centred by their record's full group mean ``μ`` (so the sums of squares do not cancel); a target
    in the group with deviation ``d = t − μ`` is removed by the exact downdate

        μ' = μ − d/(n − 1),   SS' = SS − d²·n/(n − 1),

    and targets outside the group see the full-group ``μ``, ``SS``. A downdated ``SS'`` below the
    subtraction's rounding error, ``4·n·eps·SS``, is set to 0 (so equal scores give σ = 0 exactly).

    *Median*: each record's group scores are sorted once (stable, other models' entries sent to +∞).
    The leave-one-out median of ``n' = n − [target in group]`` values averages the order statistics
    ``j₁ = ⌊(n' − 1)/2⌋`` and ``j₂ = ⌊n'/2⌋`` of the remaining values; when the target is in the group
    at sorted rank ``r``, the remaining ``j``-th value is the full group's ``(j + [j ≥ r])``-th (the
    target's own score is skipped whether it lies below or above the median).

    Examples
    --------
    >>> from dpaudit.mia.designs import keep_matrix
    >>> keep = keep_matrix(8, 3, seed=0)
    >>> score = np.where(keep, 1.0, 0.0) + np.arange(8)[:, None] / 100
    >>> f = loo_fits(score, keep)
    >>> f.shape, int(f.n_in[0, 0] + f.n_out[0, 0])
    ((8, 3), 7)
    >>> bool(np.all(f.mu_in > f.mu_out))
    True
    """
    score, keep = check_score_keep(score, keep)
    if location not in ("mean", "median"):
        raise DPAuditError(f"location must be 'mean' or 'median', got {location!r}")
    if variance not in ("per-record", "global"):
        raise DPAuditError(f"variance must be 'per-record' or 'global', got {variance!r}")
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise DPAuditError(f"ddof must be a non-negative integer, got {ddof!r}")
    ddof = int(ddof)
    if fpc is not None:
        fpc = check_fpc(fpc)

    fits = {}
    for label, group in (("in", keep), ("out", ~keep)):
        n, mean, ss = _loo_moments(score, group)
        if np.any(n <= ddof):
            raise DPAuditError(f"ddof = {ddof} needs more than {ddof} models in every leave-one-out fit")
        if variance == "per-record":
            var = ss / (n - ddof)
        else:
            var = np.broadcast_to((ss.sum(axis=1) / (n - ddof).sum(axis=1))[:, None], ss.shape).copy()
        if fpc is not None:
            var /= fpc
        mu = mean if location == "mean" else _loo_median(score, group)
        fits[label] = (mu, np.sqrt(var), n)
    return LooFits(
        mu_in=fits["in"][0],
        sd_in=fits["in"][1],
        mu_out=fits["out"][0],
        sd_out=fits["out"][1],
        n_in=fits["in"][2],
        n_out=fits["out"][2],
        location=location,
        variance=variance,
        ddof=ddof,
        fpc=fpc,
    )


def check_fpc(fpc: Any) -> float:
    """``fpc`` as a float in (0, 1] (the finite-population correction ``1 − N/N+``), else DPAuditError."""
    if isinstance(fpc, bool) or not isinstance(fpc, (int, float, np.floating)) or not 0 < fpc <= 1:
        raise DPAuditError(f"fpc must be a number in (0, 1] (1 − train_size/pool_size), got {fpc!r}")
    return float(fpc)


def _loo_moments(score: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leave-one-out count, mean and sum of squared deviations of each record's ``group`` scores."""
    g = group.astype(np.float64)
    n_full = g.sum(axis=0)
    mean_full = (score * g).sum(axis=0) / n_full
    dev = (score - mean_full) * g
    ss_full = (dev**2).sum(axis=0)
    n = n_full - g  # the target leaves its own group
    mean = mean_full - dev / n
    ss = ss_full - dev**2 * n_full / n
    # The downdate's rounding error is at most a few n·eps·SS; anything below is noise (or exactly 0,
    # as when all other scores are equal), so it is set to 0 rather than left as ±1e-16.
    ss[ss <= 4 * n_full * np.finfo(np.float64).eps * ss_full] = 0.0
    return n.astype(np.int64), mean, ss


def _loo_median(score: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Median of each record's ``group`` scores from the models other than the target (Notes above)."""
    n_models = score.shape[0]
    vals = np.where(group, score, np.inf)
    order = np.argsort(vals, axis=0, kind="stable")
    ordered = np.take_along_axis(vals, order, axis=0)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(n_models)[:, None], order.shape), axis=0)
    n = group.sum(axis=0)[None, :] - group
    j1 = (n - 1) // 2
    j2 = n // 2
    i1 = j1 + (group & (j1 >= rank))
    i2 = j2 + (group & (j2 >= rank))
    return 0.5 * (np.take_along_axis(ordered, i1, axis=0) + np.take_along_axis(ordered, i2, axis=0))


def target_score(score: Any, fits: LooFits) -> np.ndarray:
    t = np.asarray(score, dtype=np.float64)
    if t.shape != fits.shape:
        raise DataError(f"score has shape {t.shape} but the fits have shape {fits.shape}; pass the fitted score matrix")
    return t


def floored_sd(sd: np.ndarray) -> np.ndarray:
    return np.maximum(sd, SD_FLOOR)
