"""The injected-unfairness ("flip") table of the unfairness spec §5, with closed forms for every measure."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit._validation import number, seed_value, whole_number
from dpaudit.schema import Categorical, Schema

__all__ = ["flip", "FLIP_CRITERION"]

#: The criterion the flip table is audited with.
FLIP_CRITERION = "sex ⊥ outcome"

_FLIP_SCHEMA = Schema({"sex": Categorical(("Male", "Female")), "outcome": Categorical((0, 1))})


def flip(n_per_group: int, t: float, *, seed: int | None = None) -> tuple[Any, Schema]:
    """The injected-unfairness ("flip") table of the unfairness spec §5.

    Start from a fair table: ``n_per_group`` rows with ``sex = "Male"`` and as many with
    ``sex = "Female"``, each group with half of its rows ``outcome = 0`` and half ``outcome = 1``.
    Then flip ``m = round(t · n_per_group / 2)`` rows of (Male, 0) to outcome 1 and ``m`` rows of
    (Female, 1) to outcome 0 (rounding half up). The counts are therefore::

                 outcome 0        outcome 1
        Male     N/2 · (1 − t)    N/2 · (1 + t)
        Female   N/2 · (1 + t)    N/2 · (1 − t)        (N = n_per_group)

    Closed forms, exact when ``t · N / 2`` is an integer (otherwise they hold for the realised
    level ``t' = m / (N/2)``), for the criterion :data:`FLIP_CRITERION` ``"sex ⊥ outcome"``:

    * U_MI^TVD = t² / 2;
    * U_TC over the declared domain cells, any k ≥ 4: t;
    * mutual information I(sex; outcome) = 1 − H₂((1 + t)/2) bits;
    * U_R, ``ci`` semantics: 2Nt / (1 + t); ``bag``: N · min(2t, 1); ``set``: 0 for t < 1 and 1 at
      t = 1.

    Parameters
    ----------
    n_per_group : int
        Rows per sex, N. Must be a positive **even** integer, so that the starting table is exactly
        50/50 in both groups.
    t : float
        Flip level in [0, 1]: 0 is the fair table, 1 makes outcome a function of sex.
    seed : int, optional
        When given, the rows are shuffled with this seed (the counts do not depend on it). Without
        it the rows are in a fixed order: Male then Female, outcome 0 then 1 inside each.

    Returns
    -------
    frame : pandas.DataFrame
        ``2 · n_per_group`` rows, columns ``sex`` (str) and ``outcome`` (int64).
    schema : Schema
        ``sex`` in ("Male", "Female"), ``outcome`` in (0, 1).

    Raises
    ------
    DPAuditError
        When ``n_per_group`` is not a positive even integer, ``t`` is not a number in [0, 1], or
        ``seed`` is not a non-negative integer.

    Examples
    --------
    >>> import dpaudit
    >>> frame, schema = flip(100, 0.5, seed=0)
    >>> frame.groupby(["sex", "outcome"]).size().to_dict()
    {('Female', 0): 75, ('Female', 1): 25, ('Male', 0): 25, ('Male', 1): 75}
    >>> res = dpaudit.audit(frame, FLIP_CRITERION, schema=schema, measures=("tvd", "tc", "repair"), k=4, exact=True)
    >>> res["tvd"].value, round(res["tc"].value, 12), round(res["repair"].value, 6)
    (0.125, 0.5, 66.666667)
    """
    import pandas as pd

    n = whole_number("n_per_group", n_per_group, minimum=2)
    if n % 2:
        raise DPAuditError(f"n_per_group must be even (rows per sex, half of them with each outcome), got {n}")
    t = number("t", t, low=0.0, high=1.0)  # the fraction of outcomes flipped
    seed_value("seed", seed)
    half = n // 2
    moved = min(half, int(math.floor(float(t) * half + 0.5)))
    # counts per (sex, outcome) in the order Male 0, Male 1, Female 0, Female 1
    counts = np.array([half - moved, half + moved, half + moved, half - moved], dtype=np.int64)
    sex = np.repeat(np.array(["Male", "Male", "Female", "Female"], dtype=object), counts)
    outcome = np.repeat(np.array([0, 1, 0, 1], dtype=np.int64), counts)
    if seed is not None:
        order = np.random.default_rng(seed).permutation(2 * n)
        sex, outcome = sex[order], outcome[order]
    return pd.DataFrame({"sex": sex, "outcome": outcome}), _FLIP_SCHEMA
