"""The self-check itself, :func:`selfcheck` (the procedure: :mod:`dpaudit.selfcheck`, whose names are
imported on first use so that ``dpaudit selfcheck --help`` reads the draw limits without loading
numpy, scipy or OpenDP)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit._validation import flag, seed_value, unit_interval, whole_number
from dpaudit.selfcheck._checks import CHECKS, _split_checks
from dpaudit.selfcheck._pairs import unaudited, worst_cases
from dpaudit.selfcheck._params import CI_DRAWS, DRAWS_HINT, FULL_DRAWS, MAX_DRAWS, MIN_DRAWS
from dpaudit.selfcheck._results import CheckResult, SelfcheckReport

__all__ = ["selfcheck"]


def selfcheck(draws: int | None = None, *, seed: int = 0, level: float = 0.95, full: bool = False) -> SelfcheckReport:
    """Audit every dpaudit release empirically on worst-case neighbours (:mod:`dpaudit.selfcheck`).

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

