"""Simulations with known ground truth for the MIA evaluation (spec ``mia.md`` §3a, §3b, §5).

Two simulators, both vectorised and seeded:

* :func:`gaussian_scores` draws a score matrix ``score[m, x]`` and an efficient-LiRA ``keep``
  matrix from per-record Gaussians whose parameters are known, so every estimate of
  vulnerability (naive concatenation, PP concatenation, mean per-record TPR) can be compared with
  the exact mean per-record TPR of the calibrated test (:meth:`SimulatedScores.true_mean_tpr`).
* :func:`fpc_simulation` is the analytic Gaussian simulation of the finite-population bias of
  efficient LiRA (MIA paper, finite population correction): the "model" is the empirical
  mean of its training set; training sets drawn without replacement from one fixed pool of N+
  points spread less than training sets drawn from the distribution, by the factor
  ``√FPC = √(1 − N/N+)`` (Cochran 1977, Thm. 2.2 and Sec. 2.6).

Both results are frozen dataclasses with a readable ``str()`` and a JSON-ready ``to_dict()``. Both
refuse, before allocating, a simulation of more than :data:`MAX_CELLS` = 5 × 10⁸ cells (one value per
model or repeat and pool record; the bytes per cell, measured, are in :mod:`dpaudit.mia.simulate._limits`),
and :func:`fpc_simulation` more than :data:`MAX_REPEATS` = 10⁴ repeats.

References
----------
.. [1] Jälkö, Pradhan, Räisä, Honkela. "On Reliability of Efficient Membership Inference
   Vulnerability Evaluation", arXiv 2605.25819 (the MIA paper).
.. [2] Carlini, Chien, Nasr, Song, Terzis, Tramèr. "Membership Inference Attacks From First
   Principles", IEEE S&P 2022 (LiRA, efficient keep design).
.. [3] Cochran, W. G. *Sampling Techniques*, 3rd ed., Wiley 1977, Sec. 2.6 (finite population
   correction; Thm. 2.2, variance of the mean of a simple random sample).
"""

from dpaudit.mia.simulate._limits import MAX_CELLS
from dpaudit.mia.simulate.calibration import DEFAULT_ALPHAS, SimulatedScores, gaussian_scores
from dpaudit.mia.simulate.fpc import FPC_DEFAULTS, FPC_DESIGNS, MAX_REPEATS, FpcResult, fpc_simulation

__all__ = ["SimulatedScores", "gaussian_scores", "FpcResult", "fpc_simulation", "DEFAULT_ALPHAS", "FPC_DESIGNS",
           "FPC_DEFAULTS", "MAX_CELLS", "MAX_REPEATS"]
