"""Score sets of the shapes users bring, for validating every rule off the Gaussian (spec ``mia.md`` §4).

The calibrated rules are derived under a per-record Gaussian model; the scores of real models are
heavy-tailed, skewed, tied, constant for some records, or saturated at the score cap (a
probability-only model outputs exact 0/1, whose logit is capped). :func:`shaped_scores` draws a
seeded efficient-design :class:`~dpaudit.mia.scores.ScoreSet` of one such shape, with or without a
membership signal; its :meth:`~dpaudit.mia.scores.ScoreSet.permuted` version is the null on which a
valid rule reports TPR within sampling error of its own realised FPR and no ε > 0.

Every shape starts from per-record locations ``μ_x ~ N(0, 1)`` and scales ``σ_x = exp(0.3·U_x)``
(records differ, as real ones do) and a standard noise ``e[m, x]``; ``effect`` shifts the IN scores
by ``effect·σ_x`` (0: no signal). The shapes (:data:`SHAPES`):

=================== =====================================================================================
``gaussian``        ``e ~ N(0, 1)``
``student_t3``      ``e ~ t₃`` (heavy tails: finite variance, infinite fourth moment)
``lognormal``       ``e = exp(Z) − e^{1/2}``, ``Z ~ N(0, 1)`` (right skew)
``tied``            ``round(2·N(0, 1))/2``: a handful of distinct values per record (ties)
``constant``        Gaussian, but 10 % of records score the same under every model (σ = 0)
``saturated``       Gaussian, with a share ``saturation`` (5 %) of all scores replaced by ``cap``,
                    independently of membership (sporadic 0/1 probabilities)
``mixture``         Gaussian; 5 % of records are vulnerable: their IN scores sit ``4σ`` higher (in the
                    null, once membership is permuted, their scores are bimodal)
``unequal_variance`` Gaussian with the IN scores' spread 3× the OUT scores'
``forest``          a random forest's vote share: ``p = Binomial(100, π_x)/100`` with ``π_x`` close to 1
                    for most records, ``φ = logit(p)`` capped at ``±cap``: discrete, tied, and saturated
                    wherever all 100 trees agree (Beta(8, 1) draws of π: E[π¹⁰⁰] = 7.4 % of scores)
=================== =====================================================================================

``cap`` defaults to 708.4, the cap of a probability clipped to float64's smallest positive number
(the score dpaudit gave probability-only models before they were capped at their resolution): the
farthest a saturated score can sit from the others.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpaudit._validation import number, one_of, seed_value
from dpaudit.mia.designs import efficient_models, keep_matrix
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.simulate._limits import within_cells

__all__ = ["SHAPES", "shaped_scores", "FLOAT_TINY_CAP"]

SHAPES = ("gaussian", "student_t3", "lognormal", "tied", "constant", "saturated", "mixture", "unequal_variance",
          "forest")
#: log(1/tiny) for float64's smallest positive normal number: the old cap of a clipped probability's logit.
FLOAT_TINY_CAP = float(-np.log(np.finfo(np.float64).tiny))


def shaped_scores(shape: str, n_models: int, n_records: int, *, seed: int, effect: float = 0.0,
                  saturation: float = 0.05, cap: float = FLOAT_TINY_CAP) -> ScoreSet:
    """A seeded score set of one of :data:`SHAPES` (module docstring), efficient design (N = N+/2).

    Parameters
    ----------
    shape : str
        One of :data:`SHAPES`.
    n_models, n_records : int
        M (even, ≥ 6) and N+ (≥ 2), at most 5 × 10⁸ cells.
    seed : int
    effect : float, default 0
        IN scores shifted by ``effect·σ_x`` (before saturation and capping); 0: no membership signal.
    saturation : float in [0, 1), default 0.05
        ``saturated`` only: the share of scores replaced by ``cap``.
    cap : float > 0
        The score cap of ``saturated`` and ``forest``.

    Returns
    -------
    ScoreSet
        ``meta``: ``{"simulation": "shaped_scores", "shape": …, "seed": …, "effect": …}`` (no
        ``design``: simulated scores have no finite pool, so the finite-population correction is off
        by default).

    Examples
    --------
    >>> s = shaped_scores("forest", 16, 200, seed=0)
    >>> s.n_models, s.n_records, bool((np.abs(s.score) == FLOAT_TINY_CAP).mean() > 0.05)
    (16, 200, True)
    >>> null = s.permuted(seed=1)
    """
    shape = one_of("shape", shape, SHAPES)
    n_models = within_cells("n_models", efficient_models(n_models, minimum=6), per=2, what="at least 2 records",
                            minimum=6)
    n_records = within_cells("n_records", n_records, per=n_models, what=f"n_models = {n_models}", minimum=2)
    seed = int(seed_value("seed", seed, allow_none=False))  # type: ignore[arg-type]
    effect = number("effect", effect, low=0.0)
    saturation = number("saturation", saturation, low=0.0, high=1.0, high_open=True)
    cap = number("cap", cap, low=0.0, low_open=True)
    rng = np.random.default_rng(seed)
    keep = keep_matrix(n_models, n_records, seed=rng)
    size = (n_models, n_records)
    mu = rng.standard_normal(n_records)
    sd = np.exp(0.3 * rng.standard_normal(n_records))
    shift = effect * np.asarray(keep, dtype=np.float64)
    if shape == "forest":
        score = _forest(rng, size, shift, cap)
    else:
        noise = _noise(shape, rng, size)
        if shape == "unequal_variance":
            noise = np.where(keep, 3.0 * noise, noise)
        if shape == "mixture":
            shift = shift + 4.0 * np.asarray(keep, dtype=np.float64) * (rng.random(n_records) < 0.05)
        score = mu + sd * (noise + shift)
        if shape == "constant":
            score[:, rng.random(n_records) < 0.10] = mu[0]
        if shape == "saturated":
            score[rng.random(size) < saturation] = cap
    meta: dict[str, Any] = {"simulation": "shaped_scores", "shape": shape, "seed": seed, "effect": effect}
    return ScoreSet(score, keep, train_size=n_records // 2, pool_size=n_records, meta=meta)


def _noise(shape: str, rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
    if shape == "student_t3":
        return rng.standard_t(3, size)
    if shape == "lognormal":
        return np.exp(rng.standard_normal(size)) - np.exp(0.5)
    if shape == "tied":
        return np.round(2.0 * rng.standard_normal(size)) / 2.0
    return rng.standard_normal(size)


def _forest(rng: np.random.Generator, size: tuple[int, int], shift: np.ndarray, cap: float) -> np.ndarray:
    """The logit of a 100-tree vote share whose per-record probability π ~ Beta(8, 1) (IN: π raised
    towards 1 by ``shift``), capped at ±cap."""
    pi = rng.beta(8.0, 1.0, size[1])
    p_true = 1.0 - (1.0 - pi) * np.exp(-shift)  # membership makes the true label likelier
    votes = rng.binomial(100, p_true) / 100.0
    with np.errstate(divide="ignore"):
        phi = np.log(votes) - np.log1p(-votes)
    return np.clip(phi, -cap, cap)
