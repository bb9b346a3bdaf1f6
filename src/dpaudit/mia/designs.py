"""Membership designs: which pool records each model trains on (spec ``mia.md`` §1).

* :func:`keep_matrix` — efficient LiRA's: every record IN in exactly M/2 models;
* :func:`poisson_keep` — Poisson (Bernoulli) sampling: every ``keep[m, x]`` an independent
  Bernoulli(q) draw, any training-set size, redrawn per record to satisfy the leave-one-out rule;
  :func:`poisson_inclusion` reads q back from a score set drawn that way.
"""

from __future__ import annotations

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit._validation import unit_interval, whole_number
from dpaudit.mia.scores import MIN_FIT_MODELS, ScoreSet

__all__ = ["keep_matrix", "poisson_keep", "poisson_inclusion", "efficient_models", "EVEN_MODELS_HINT", "INCLUSION_HINT"]

#: Why the efficient design needs an even M (the ``hint`` of the message of :func:`efficient_models`).
EVEN_MODELS_HINT = " (every record IN in exactly half the models)"
#: What the inclusion probability q is (the ``hint`` of its message).
INCLUSION_HINT = " (train_size/pool_size)"


def efficient_models(n_models: object, *, minimum: int = 2) -> int:
    """M of the efficient design (:func:`keep_matrix`): an even integer ≥ ``minimum``.

    Examples
    --------
    >>> efficient_models(7)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: n_models must be an integer >= 2 and even (every record IN ...), got 7
    """
    return whole_number("n_models", n_models, minimum=minimum, even=True, hint=EVEN_MODELS_HINT)


def keep_matrix(n_models: int, n_records: int, *, seed: int | np.random.Generator | None) -> np.ndarray:
    """The efficient-LiRA membership design: every record IN in exactly ``M/2`` models.

    Draws uniform noise ``u`` of shape ``(M, N+)``, sorts it along the model axis and marks the first
    ``M/2`` positions of every column IN, as the LiRA reference code does
    (``keep = u.argsort(0) < M // 2``; Carlini et al., IEEE S&P 2022; spec §1). Each column is a
    uniformly random balanced assignment; columns are independent.

    Parameters
    ----------
    n_models : int
        M, even and ≥ 2.
    n_records : int
        N+, the pool size, ≥ 1.
    seed : int, numpy Generator or None
        Randomness (None: fresh entropy).

    Returns
    -------
    keep : ndarray of bool, shape (M, N+)
        ``keep[m, x]`` true iff record ``x`` is in model ``m``'s training set; every column sums to
        ``M/2`` and each model holds about ``N+/2`` records.

    Examples
    --------
    >>> k = keep_matrix(4, 3, seed=1)
    >>> k.shape, k.sum(axis=0).tolist()
    ((4, 3), [2, 2, 2])
    """
    n_models = efficient_models(n_models)
    n_records = whole_number("n_records", n_records, minimum=1)
    noise = np.random.default_rng(seed).uniform(size=(n_models, n_records))
    return noise.argsort(axis=0) < n_models // 2


def poisson_keep(n_models: int, n_records: int, *, inclusion: float, seed: int | np.random.Generator | None) -> np.ndarray:
    """A Poisson (Bernoulli) membership design: record x is in model m's training set with probability q.

    Every ``keep[m, x]`` is an independent Bernoulli(q) draw, so each model trains on about ``q·N+``
    records (N = q·N+ in expectation, any size, unlike the efficient design's N+/2). Leave-one-out fits
    need every record IN in ≥ 3 and OUT in ≥ 3 models (module docstring), so a record (column) that
    misses this is drawn again until it does: the columns are independent draws from the Bernoulli
    design conditioned on that rule. At small ``M·q`` the conditioning raises the realised inclusion
    rate to ``E[B | 3 ≤ B ≤ M − 3]/M`` for ``B ~ Binomial(M, q)`` (M = 12, q = 0.3: 0.356); at
    ``M·q ≥ 20`` the difference is below 10⁻⁴.

    Parameters
    ----------
    n_models : int
        M ≥ 6.
    n_records : int
        N+ ≥ 1.
    inclusion : float
        q in (0, 1), the inclusion probability (N/N+).
    seed : int, numpy Generator or None

    Raises
    ------
    DPAuditError
        When a column meets the rule with probability below 1/2 (too few models for this q): the
        message gives the expected IN count and how many models would do.

    Examples
    --------
    >>> k = poisson_keep(40, 1000, inclusion=0.2, seed=0)
    >>> round(float(k.mean()), 2), int(k.sum(axis=0).min()) >= 3, int((~k).sum(axis=0).min()) >= 3
    (0.2, True, True)
    """
    from scipy import stats

    n_models = whole_number("n_models", n_models, minimum=2 * (MIN_FIT_MODELS + 1))
    n_records = whole_number("n_records", n_records, minimum=1)
    inclusion = unit_interval("inclusion", inclusion, INCLUSION_HINT)
    least = MIN_FIT_MODELS + 1
    accept = stats.binom.cdf(n_models - least, n_models, inclusion) - stats.binom.cdf(least - 1, n_models, inclusion)
    if accept < 0.5:
        enough = next(m for m in range(n_models, 100 * n_models + 1000, 2)
                      if stats.binom.cdf(m - least, m, inclusion) - stats.binom.cdf(least - 1, m, inclusion) >= 0.5)
        raise DPAuditError(
            f"with inclusion {inclusion:g} a record is IN in {n_models * inclusion:.1f} of {n_models} models on "
            f"average, and only {accept:.0%} of records would be IN and OUT in ≥ {least} models; use ≥ {enough} models"
        )
    rng = np.random.default_rng(seed)
    keep = rng.random((n_models, n_records)) < inclusion
    while True:
        n_in = keep.sum(axis=0)
        bad = np.flatnonzero((n_in < least) | (n_in > n_models - least))
        if not bad.size:
            return keep
        keep[:, bad] = rng.random((n_models, bad.size)) < inclusion


def poisson_inclusion(scores: ScoreSet) -> float | None:
    """The requested inclusion probability ``q = N/N+`` of a score set drawn by the Poisson design, else None.

    The design is read from ``meta["design"]`` (``"poisson"``, as ``mia train --design poisson`` and
    :func:`dpaudit.mia.train.load_run` record it). The realised rate ``keep.mean()`` exceeds q at small
    M·q (:func:`poisson_keep` redraws the records IN or OUT in fewer than 3 models); q is what holds at
    larger M.

    Examples
    --------
    >>> keep = poisson_keep(40, 100, inclusion=0.2, seed=0)
    >>> poisson_inclusion(ScoreSet(np.zeros(keep.shape), keep, train_size=20, pool_size=100, meta={"design": "poisson"}))
    0.2
    >>> poisson_inclusion(ScoreSet(np.zeros(keep.shape), keep, train_size=20, pool_size=100)) is None
    True
    """
    return scores.train_size / scores.pool_size if scores.meta.get("design") == "poisson" else None
