"""The attack protocol: what an attack gives the evaluation rules (spec ``mia.md`` §2–3).

An attack is a frozen dataclass of its own options with two methods:

* :meth:`Attack.signal` — each target's **membership-agnostic** signal, computed without looking at
  anyone's membership (LiRA: the raw score; online RMIA: its score). The calibrated rules (PP-normal,
  PP-t, PP-rank and the per-record estimators) standardise or rank it among the record's OUT targets,
  which is valid only because it does not depend on the labels it is tested against;
* :meth:`Attack.statistic` — the attack's own per-target decision statistic (larger = member), which
  the naive rule pools into one ROC. It may use leave-one-out reference fits of the other models.
  An attack whose statistic is a function of each target's signal and fits alone (LiRA) also
  overrides :meth:`Attack.block_statistic`, which lets the evaluation compute it block by block of
  records from the fits of that block, never holding the fits of the whole matrix.

``location``/``variance`` configure the leave-one-out Gaussian fits of the signal
(:func:`dpaudit.mia.fits.loo_fits`) that PP and the parametric rule use and that LiRA's
statistic reads. Adding an attack is one module defining a subclass plus one line in
:data:`dpaudit.mia.attacks.ATTACKS`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpaudit.mia.fits import DEFAULT_LOCATION, DEFAULT_VARIANCE, Location, LooFits, Variance, fit_options
from dpaudit.mia.scores import ScoreSet

__all__ = ["Attack"]


@dataclass(frozen=True)
class Attack:
    """Base class of the registered attacks; a subclass is a frozen dataclass of its options.

    Parameters
    ----------
    location : {"mean", "median"}, default :data:`~dpaudit.mia.fits.DEFAULT_LOCATION`
        Location of the leave-one-out Gaussian fits of the signal.
    variance : {"per-record", "global"}, default :data:`~dpaudit.mia.fits.DEFAULT_VARIANCE`
        Per-record variances, or the LiRA paper's pooled "fixed variance".
    """

    location: Location = DEFAULT_LOCATION
    variance: Variance = DEFAULT_VARIANCE

    name: ClassVar[str]
    title: ClassVar[str]
    reference: ClassVar[str]

    def __post_init__(self) -> None:
        location, variance = fit_options(self.location, self.variance)
        object.__setattr__(self, "location", location)
        object.__setattr__(self, "variance", variance)

    def signal(self, scores: ScoreSet) -> np.ndarray:
        """(M, N+) membership-agnostic signal of every target (higher = more likely member)."""
        raise NotImplementedError

    def statistic(self, scores: ScoreSet, fits: LooFits) -> np.ndarray:
        """(M, N+) the attack's decision statistic of every target (higher = more likely member)."""
        raise NotImplementedError

    def block_statistic(self, signal: np.ndarray, fits: LooFits, z_out: np.ndarray | None = None) -> np.ndarray | None:
        """The statistic of a block of records from their signal and leave-one-out fits alone, or None.

        None (the default) when the statistic needs the whole ScoreSet (RMIA's population); then the
        evaluation calls :meth:`statistic` once. An override must agree with :meth:`statistic` on
        every block. ``z_out``, when given, is the block's OUT-standardised signal
        ``(t − μ_out)/max(σ_out, SD_FLOOR)``, which an override may reuse instead of recomputing it.
        """
        return None

    def options(self) -> dict[str, Any]:
        """The options as a plain dict (recorded in the report)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
