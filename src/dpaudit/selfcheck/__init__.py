"""Empirical privacy audit of every dpaudit release: ``dpaudit selfcheck``.

For each mechanism dpaudit releases — the U_MI^TVD value, the U_TC value (domain and observed
cells), the U_TC top-cell names (report-noisy-max), the U_R value (ci, bag, set) and an audit that
splits ε across two measures — the self-check

1. takes **worst-case replace-one neighbours** D, D′ (same n, one tuple moved from one cell to
   another) from the sensitivity derivations of ``docs/privacy.md``, as close to the proven bound as
   known: each registered measure declares its own (``Measure.worst_cases``), so a new measure is
   audited too (:func:`worst_case_pairs`);
2. computes the exact values on both with the real measures and runs the **real** release — OpenDP's
   ``make_laplace`` / ``make_noisy_top_k``, unseeded, one measurement invoked repeatedly
   (:func:`dpaudit.privacy._mechanisms.laplace_draws`) — ``draws`` times on each;
3. picks the most distinguishing test on a random half of the draws (a threshold on the output, on
   the exact log-likelihood ratio for the joint split release, or a set of named cells ordered by
   their likelihood ratio on that half) and evaluates it on the other half;
4. turns the counts into an ε lower bound with
   :func:`dpaudit.mia.metrics.epsilon_lower_bound_ci` (Clopper–Pearson; Jagielski, Ullman & Oprea
   2020). The evaluation half is independent of the choice of the test, so the bound holds with the
   stated confidence. ``level`` is family-wise: each of the m required bounds is computed at
   ``1 − (1 − level)/m`` (Bonferroni), so a correct dpaudit fails the self-check with probability at
   most ``1 − level``, and in fact far less.

A check **fails** when its bound exceeds the ε the release claims: a privacy bug, whatever the number
of draws (the bound is valid at any count). The audit must also have teeth: the same procedure on a
**deliberately broken** release (noise for half the claimed sensitivity, built only here) must give
a bound above the claim. It is *required* where the broken release really violates the claim by
≥ 1.5× on the pair; elsewhere (the observed-mode value and the names, whose proven bounds are 2× and
3× above anything reachable) it is reported for information. A required broken release that escapes
makes the run **inconclusive** — too few draws to tell a correct release from a broken one — not a
failure: no real release was shown to leak. ``draws`` lies in [:data:`MIN_DRAWS`, :data:`MAX_DRAWS`]
(2,000 to 10⁷: a broken release escaped in 1 of 320 runs at 2,000, 4 % at 1,500, 25 % at 1,000; more take
hours at ~3 ms and ~190 bytes a draw — the measurements are in :mod:`dpaudit.selfcheck._params`).

The noise is OpenDP's and cannot be seeded (that is the point: the release under audit is the real
one); ``seed`` only fixes the random split of the draws into the two halves. Every draw spends ε on
synthetic data only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpaudit._lazy import lazy_package
from dpaudit.selfcheck._params import BROKEN_FACTOR, CI_DRAWS, EPSILON, FULL_DRAWS, MAX_DRAWS, MIN_DRAWS, SPLIT

if TYPE_CHECKING:
    from dpaudit.selfcheck._bound import permute_and_flip_probabilities
    from dpaudit.selfcheck._pairs import NeighbourPair, family_r, worst_case_pairs
    from dpaudit.selfcheck._pairs import split_pair as split_pair
    from dpaudit.selfcheck._results import CheckResult, SelfcheckReport
    from dpaudit.selfcheck._run import selfcheck

#: Where each name lives (the imports above, for type checkers), imported on first use (:mod:`dpaudit._lazy`):
#: ``dpaudit selfcheck --help`` reads the draw limits of :mod:`dpaudit.selfcheck._params` and loads nothing else.
_LAZY = {
    "dpaudit.selfcheck._bound": ("permute_and_flip_probabilities",),
    "dpaudit.selfcheck._pairs": ("NeighbourPair", "family_r", "split_pair", "worst_case_pairs"),
    "dpaudit.selfcheck._results": ("CheckResult", "SelfcheckReport"),
    "dpaudit.selfcheck._run": ("selfcheck",),
}
lazy_package(__name__, _LAZY)

__all__ = ["selfcheck", "family_r", "SelfcheckReport", "CheckResult", "NeighbourPair", "worst_case_pairs",
           "CI_DRAWS", "FULL_DRAWS", "MIN_DRAWS", "MAX_DRAWS", "EPSILON", "SPLIT", "BROKEN_FACTOR",
           "permute_and_flip_probabilities"]
