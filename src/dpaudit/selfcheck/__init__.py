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

import time
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit._validation import flag, seed_value, unit_interval, whole_number
from dpaudit.selfcheck._bound import permute_and_flip_probabilities
from dpaudit.selfcheck._checks import CHECKS, _split_checks
from dpaudit.selfcheck._pairs import NeighbourPair, family_r, unaudited, worst_case_pairs, worst_cases
from dpaudit.selfcheck._pairs import split_pair as split_pair
from dpaudit.selfcheck._params import (
    BROKEN_FACTOR,
    CI_DRAWS,
    DRAWS_HINT,
    EPSILON,
    FULL_DRAWS,
    MAX_DRAWS,
    MIN_DRAWS,
    SPLIT,
)
from dpaudit.selfcheck._results import CheckResult, SelfcheckReport

__all__ = ["selfcheck", "family_r", "SelfcheckReport", "CheckResult", "NeighbourPair", "worst_case_pairs",
           "CI_DRAWS", "FULL_DRAWS", "MIN_DRAWS", "MAX_DRAWS", "EPSILON", "SPLIT", "BROKEN_FACTOR",
           "permute_and_flip_probabilities"]


def selfcheck(draws: int | None = None, *, seed: int = 0, level: float = 0.95, full: bool = False) -> SelfcheckReport:
    """Audit every dpaudit release empirically on worst-case neighbours (module docstring).

    Parameters
    ----------
    draws : int, optional
        Real OpenDP draws per database (D and D′) and release, 2,000 to 10⁷; default 4,000. Not with
        ``full``.
    seed : int, default 0
        Seeds only the split of the draws into test-choosing and evaluation halves (OpenDP's noise is
        not seedable).
    level : float, default 0.95
        Family-wise confidence of the bounds (Bonferroni over the required checks).
    full : bool, default False
        The large run: 100,000 draws per database (a few minutes).

    Returns
    -------
    SelfcheckReport
        ``ok`` is False when a release's bound exceeds its claimed ε or the split audit's shares do not
        compose to ε (``failures``); ``inconclusive`` lists the required broken releases not caught.

    Raises
    ------
    DPAuditError
        For draws outside [2,000, 10⁷], draws given with ``full``, a ``full`` that is not a bool, a bad
        seed or level.
    """
    start = time.perf_counter()
    if flag("full", full) and draws is not None:
        raise DPAuditError(f"full runs {FULL_DRAWS:,} draws per database, so it takes no draws: give draws "
                           "(--draws N) or full (--full), not both")
    draws = whole_number("draws", (FULL_DRAWS if full else CI_DRAWS) if draws is None else draws,
                         minimum=MIN_DRAWS, maximum=MAX_DRAWS, hint=DRAWS_HINT)
    seed = int(seed_value("seed", seed, allow_none=False))  # type: ignore[arg-type]
    level = unit_interval("level", level)
    cases = worst_cases()
    n_required = len(cases) + 4  # every stand-alone release, and the split's three releases and the joint one
    check_level = 1.0 - (1.0 - level) / n_required
    rng = np.random.default_rng(seed)
    checks: list[CheckResult] = []
    broken: list[CheckResult] = []
    composition: dict[str, Any] = {}
    for is_broken, into in ((False, checks), (True, broken)):
        for case in cases:
            into.append(CHECKS[case.release](case, draws, check_level, rng, is_broken))
        split_results, composition = _split_checks(draws, check_level, rng, is_broken)
        into.extend(split_results)
    notes = (
        "exact loss: the largest privacy loss of the mechanism as run on the pair — no test can show more; "
        "ε lower bound ≤ exact loss ≤ claimed ε for a correct release",
        "U_TC without A reaches n·|ΔU_TC| = 5.96 of 6 on docs/privacy.md's A-empty family (m = 100): also tight",
    ) + tuple(f"{name}: not audited, the measure declares no worst-case pair" for name in unaudited())
    return SelfcheckReport(tuple(checks), tuple(broken), composition, draws, level, check_level, full, seed,
                           time.perf_counter() - start, notes)

