"""LiRA: the likelihood-ratio attack on leave-one-out Gaussian fits (spec ``mia.md`` §2).

For target model ``m`` and record ``x`` the fits of :mod:`dpaudit.mia.fits` describe the record's IN
and OUT scores under the *other* models (Carlini et al., "Membership Inference Attacks From First
Principles", IEEE S&P 2022, called *the LiRA paper*), and the target's own ``t = score[m, x]`` is
scored with one of three statistics (larger = "member"):

* :func:`lira_online` — ``log N(t; μ_in, σ_in) − log N(t; μ_out, σ_out)``, the likelihood ratio
  (LiRA paper, Algorithm 1, online);
* :func:`lira_offline_one_sided` — ``Φ((t − μ_out)/σ_out)``, the one-sided test of the LiRA *paper*
  (its offline attack);
* :func:`lira_offline_two_sided` — ``−log N(t; μ_out, σ_out)``, what the LiRA *reference code*
  computes offline (large on either tail).

:class:`LiRA` registers the online statistic as an attack of the evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import special

from dpaudit.mia._defaults import ATTACK_TITLES
from dpaudit.mia.attacks._base import Attack
from dpaudit.mia.fits import LooFits, floored_sd, target_score
from dpaudit.mia.scores import ScoreSet

__all__ = ["LiRA", "lira_online", "lira_offline_one_sided", "lira_offline_two_sided", "norm_logpdf"]

#: ``log √(2π)``, the same float as scipy's ``_norm_pdf_logC``.
_LOG_SQRT_2PI = float(np.log(np.sqrt(2 * np.pi)))


def norm_logpdf(t: Any, mu: Any, sd: Any) -> np.ndarray:
    """Gaussian log-density ``log N(t; μ, σ) = −((t − μ)/σ)²/2 − log √(2π) − log σ``, elementwise.

    The same operations in the same order as ``scipy.stats.norm.logpdf(t, mu, sd)`` (its
    ``_norm_logpdf(z) − log(scale)`` with ``z = (t − loc)/scale``), so the same floats for σ > 0, without
    scipy's argument checks and extraction of valid entries: about 5× faster on a score matrix, in
    one output array (``sd`` must be positive; callers floor it at :data:`~dpaudit.mia.fits.SD_FLOOR`).

    Examples
    --------
    >>> from scipy import stats
    >>> t, mu, sd = np.array([0.3, -2.0]), np.array([1.0, 0.2]), np.array([0.5, 0.1])
    >>> bool(np.array_equal(norm_logpdf(t, mu, sd), stats.norm.logpdf(t, mu, sd)))
    True
    """
    z = np.subtract(t, mu, dtype=np.float64)
    z /= sd
    return _logpdf_of_z(z, sd, out=z)


def _logpdf_of_z(z: np.ndarray, sd: Any, *, out: np.ndarray | None = None) -> np.ndarray:
    """``−z²/2 − log √(2π) − log σ``: :func:`norm_logpdf` from the standardised ``z = (t − μ)/σ``
    (the same floats as scipy's operations after ``z``), into ``out`` (a new array when None). scipy's
    ``−(z²)/2`` is taken as ``z²·(−0.5)``: both are the correctly rounded value of the same real number
    (negation and halving are exact in it), so the same float, in one pass instead of two."""
    res = np.square(z, out=out)
    res *= -0.5
    res -= _LOG_SQRT_2PI
    res -= np.log(sd)
    return res


def lira_online(score: Any, fits: LooFits, *, z_out: np.ndarray | None = None) -> np.ndarray:
    """Online LiRA: ``log N(t; μ_in, σ_in) − log N(t; μ_out, σ_out)`` for every target (spec §2).

    The log likelihood ratio of IN against OUT (LiRA paper, Algorithm 1); σ floored at :data:`SD_FLOOR`.
    Closed form (:func:`norm_logpdf`), the same floats as scipy's ``norm.logpdf`` difference. A caller
    that holds ``z_out = (t − μ_out)/max(σ_out, SD_FLOOR)`` (the positive-sign PP transform,
    :func:`dpaudit.mia.calibrate.pp_transform`) passes it, and the OUT density is computed from it:
    the same floats, one subtraction and division fewer per target.

    Parameters
    ----------
    score : array_like of float, shape (M, N+)
        The target scores ``t`` (the matrix the fits were made from).
    fits : LooFits

    Returns
    -------
    ndarray of float, shape (M, N+)
        Larger means "more likely a member".

    Examples
    --------
    >>> f = LooFits(*(np.array([[v]]) for v in (1.0, 1.0, 0.0, 1.0, 5, 5)))
    >>> lira_online(np.array([[0.5]]), f).item()  # equal σ: (μ_in − μ_out)(t − (μ_in + μ_out)/2)/σ²
    0.0
    """
    t = target_score(score, fits)
    out = norm_logpdf(t, fits.mu_in, floored_sd(fits.sd_in))
    sd_out = floored_sd(fits.sd_out)
    out -= norm_logpdf(t, fits.mu_out, sd_out) if z_out is None else _logpdf_of_z(z_out, sd_out)
    return out


def lira_offline_one_sided(score: Any, fits: LooFits) -> np.ndarray:
    """Offline LiRA as in the LiRA *paper*: ``Φ((t − μ_out)/σ_out)``, one-sided (spec §2).

    The probability that an OUT score is at most ``t`` (LiRA paper, offline attack: high scores mean
    member); it assumes IN scores lie above OUT scores. σ floored at :data:`SD_FLOOR`.

    Examples
    --------
    >>> f = LooFits(*(np.array([[v]]) for v in (1.0, 1.0, 0.0, 1.0, 5, 5)))
    >>> lira_offline_one_sided(np.array([[0.0]]), f).item()
    0.5
    """
    t = target_score(score, fits)
    return special.ndtr((t - fits.mu_out) / floored_sd(fits.sd_out))  # scipy.stats.norm.cdf's own kernel


def lira_offline_two_sided(score: Any, fits: LooFits) -> np.ndarray:
    """Offline LiRA as in the LiRA *reference code*: ``−log N(t; μ_out, σ_out)``, two-sided (spec §2).

    Large when ``t`` is far from the OUT fit on either side. σ floored at :data:`SD_FLOOR`.

    Examples
    --------
    >>> f = LooFits(*(np.array([[v]]) for v in (1.0, 1.0, 0.0, 1.0, 5, 5)))
    >>> round(lira_offline_two_sided(np.array([[0.0]]), f).item(), 6)  # log √(2π)
    0.918939
    """
    t = target_score(score, fits)
    return np.negative(norm_logpdf(t, fits.mu_out, floored_sd(fits.sd_out)))


@dataclass(frozen=True)
class LiRA(Attack):
    """LiRA (Carlini et al., IEEE S&P 2022) as a registered attack: the online likelihood ratio.

    Signal: the raw score (the logit-scaled confidence). Statistic: :func:`lira_online` on the
    leave-one-out fits of the other models (``location``/``variance`` as in
    :func:`dpaudit.mia.fits.loo_fits`).

    Examples
    --------
    >>> from dpaudit.mia.fits import loo_fits
    >>> from dpaudit.mia.simulate import gaussian_scores
    >>> s = gaussian_scores(8, 5, seed=0).to_scoreset()
    >>> LiRA().statistic(s, loo_fits(s.score, s.keep)).shape
    (8, 5)
    """

    name: ClassVar[str] = "lira"
    title: ClassVar[str] = ATTACK_TITLES["lira"]
    reference: ClassVar[str] = "Carlini et al., IEEE S&P 2022, Alg. 1; spec §2"

    def signal(self, scores: ScoreSet) -> np.ndarray:
        return np.asarray(scores.score)

    def statistic(self, scores: ScoreSet, fits: LooFits) -> np.ndarray:
        return lira_online(scores.score, fits)

    def block_statistic(self, signal: np.ndarray, fits: LooFits, z_out: np.ndarray | None = None) -> np.ndarray:
        return lira_online(signal, fits, z_out=z_out)  # the signal is the raw score
