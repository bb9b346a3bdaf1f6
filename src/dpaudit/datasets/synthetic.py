"""Synthetic data with known unfairness: the flip test and a census-like (IPUMS-CPS) generator.

Two generators, both seeded and both returning ``(frame, schema)`` with a declared schema:

* :func:`flip` — the injected-unfairness table of the unfairness spec §5: ``sex`` (Male/Female) and
  ``outcome`` (0/1), 50/50 outcomes per sex, then a fraction ``t`` of (Male, 0) flipped to 1 and of
  (Female, 1) flipped to 0. Every measure has a closed form (see :func:`flip`).
* :func:`census` / :func:`write_census` — a census-like table with the IPUMS-CPS columns the
  unfairness paper audits (HEALTH, INCTOT, EDUC, OCC, MARST, AGE, SEX, RACE), IPUMS codes, and a
  ``dependence`` knob in [0, 1] that sets how strongly HEALTH depends on income, education,
  occupation, age and marital status (0: HEALTH is independent of every other column). The real
  IPUMS-CPS extract is not redistributable; this is a stand-in with the same columns, codes and
  preprocessing (:data:`CENSUS_SCHEMA`), at any size, for tests and benchmarks. Its numbers are
  plausible, not estimates of the US population.

:data:`CENSUS_PRESET` holds the paper's four IPUMS criteria.

Examples
--------
>>> import dpaudit
>>> frame, schema = census(2_000, dependence=0.5, seed=1)
>>> res = dpaudit.audit(frame, CENSUS_PRESET, schema=schema)
>>> res.n, len(res["tvd"].per_criterion)
(2000, 4)
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterator
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit._io import temporary_sibling
from dpaudit.schema import Binned, Categorical, Schema

__all__ = [
    "flip",
    "FLIP_CRITERION",
    "census",
    "write_census",
    "CENSUS_SCHEMA",
    "CENSUS_PRESET",
    "CENSUS_COLUMNS",
    "HEALTH_CODES",
    "EDUC_CODES",
    "OCC_CODES",
    "MARST_CODES",
    "SEX_CODES",
    "RACE_CODES",
    "INCTOT_EDGES",
    "AGE_EDGES",
    "GENERATOR_VERSION",
    "DEFAULT_ROWS",
    "INFO",
]

# ==================================================================================================
# flip test (spec §5)
# ==================================================================================================
#: The criterion the flip table is audited with.
FLIP_CRITERION = "sex ⊥ outcome"

_FLIP_SCHEMA = Schema({"sex": Categorical(("Male", "Female")), "outcome": Categorical((0, 1))})


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_seed(seed: Any, *, allow_none: bool) -> None:
    if seed is None and allow_none:
        return
    if not _is_int(seed) or seed < 0:
        what = "a non-negative integer" + (" or None" if allow_none else "")
        raise DPAuditError(f"seed must be {what}, got {seed!r}")


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
    >>> res = dpaudit.audit(frame, FLIP_CRITERION, schema=schema, measures=("tvd", "tc", "repair"), k=4)
    >>> res["tvd"].value, round(res["tc"].value, 12), round(res["repair"].value, 6)
    (0.125, 0.5, 66.666667)
    """
    import pandas as pd

    if not _is_int(n_per_group) or n_per_group <= 0 or n_per_group % 2:
        raise DPAuditError(
            f"n_per_group must be a positive even integer (rows per sex, half of them with each "
            f"outcome), got {n_per_group!r}"
        )
    if not isinstance(t, numbers.Real) or isinstance(t, bool) or not (0.0 <= float(t) <= 1.0):
        raise DPAuditError(f"t must be a number in [0, 1] (the fraction of outcomes flipped), got {t!r}")
    _check_seed(seed, allow_none=True)
    n = int(n_per_group)
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


# ==================================================================================================
# census-like generator: declared domains (IPUMS-CPS codes)
# ==================================================================================================
#: Bump when the generator's output for a given (n_rows, dependence, seed) changes.
GENERATOR_VERSION = "1"

#: IPUMS-CPS HEALTH: self-reported health.
HEALTH_CODES: dict[int, str] = {1: "Excellent", 2: "Very good", 3: "Good", 4: "Fair", 5: "Poor"}

#: IPUMS-CPS EDUC: the 16 codes of educational attainment used in recent ASEC samples.
EDUC_CODES: dict[int, str] = {
    2: "None or preschool",
    10: "Grades 1, 2, 3, or 4",
    20: "Grades 5 or 6",
    30: "Grades 7 or 8",
    40: "Grade 9",
    50: "Grade 10",
    60: "Grade 11",
    71: "12th grade, no diploma",
    73: "High school diploma or equivalent",
    81: "Some college but no degree",
    91: "Associate's degree, occupational/vocational program",
    92: "Associate's degree, academic program",
    111: "Bachelor's degree",
    123: "Master's degree",
    124: "Professional school degree",
    125: "Doctorate degree",
}

# OCC: the first 2018 Census occupation code of each of the 23 major occupation groups; every
# worker of a group carries that group's code, and 0 is IPUMS' "NIU" (not employed).
# code: (label, share among workers, skill, log-wage premium, physical hazard)
_OCC_TABLE: dict[int, tuple[str, float, float, float, float]] = {
    0: ("NIU (not employed)", 0.0, 0.0, 0.0, 0.0),
    10: ("Management", 0.110, 1.0, 0.45, 0.0),
    500: ("Business and financial operations", 0.050, 0.9, 0.30, 0.0),
    1005: ("Computer and mathematical", 0.035, 1.2, 0.45, 0.0),
    1305: ("Architecture and engineering", 0.020, 1.1, 0.40, 0.1),
    1600: ("Life, physical, and social science", 0.010, 1.3, 0.30, 0.0),
    2001: ("Community and social service", 0.017, 0.7, 0.00, 0.0),
    2100: ("Legal", 0.012, 1.4, 0.50, 0.0),
    2205: ("Educational instruction and library", 0.060, 1.0, 0.00, 0.0),
    2600: ("Arts, design, entertainment, sports, and media", 0.020, 0.6, 0.00, 0.1),
    3000: ("Healthcare practitioners and technical", 0.060, 1.0, 0.35, 0.1),
    3601: ("Healthcare support", 0.025, -0.3, -0.35, 0.3),
    3700: ("Protective service", 0.020, 0.0, 0.05, 0.5),
    4000: ("Food preparation and serving related", 0.055, -0.9, -0.55, 0.3),
    4200: ("Building and grounds cleaning and maintenance", 0.035, -1.0, -0.45, 0.6),
    4330: ("Personal care and service", 0.025, -0.5, -0.45, 0.2),
    4700: ("Sales and related", 0.095, 0.0, 0.00, 0.1),
    5000: ("Office and administrative support", 0.110, 0.1, -0.15, 0.0),
    6005: ("Farming, fishing, and forestry", 0.007, -1.1, -0.50, 0.8),
    6200: ("Construction and extraction", 0.050, -0.6, 0.00, 0.9),
    7000: ("Installation, maintenance, and repair", 0.030, -0.4, 0.05, 0.7),
    7700: ("Production", 0.055, -0.6, -0.15, 0.6),
    9005: ("Transportation and material moving", 0.070, -0.7, -0.20, 0.7),
    9800: ("Military specific", 0.003, 0.0, 0.00, 0.5),
}
#: OCC codes (2018 Census occupation classification, one code per major group; 0 = NIU).
OCC_CODES: dict[int, str] = {code: row[0] for code, row in _OCC_TABLE.items()}

#: IPUMS-CPS MARST: marital status.
MARST_CODES: dict[int, str] = {
    1: "Married, spouse present",
    2: "Married, spouse absent",
    3: "Separated",
    4: "Divorced",
    5: "Widowed",
    6: "Never married/single",
}

#: IPUMS-CPS SEX.
SEX_CODES: dict[int, str] = {1: "Male", 2: "Female"}

# IPUMS-CPS RACE (2003+ codes without the pre-2003 650 and NIU 999): code: (label, share)
_RACE_TABLE: dict[int, tuple[str, float]] = {
    100: ("White", 0.775),
    200: ("Black", 0.128),
    300: ("American Indian/Aleut/Eskimo", 0.012),
    651: ("Asian only", 0.058),
    652: ("Hawaiian/Pacific Islander only", 0.004),
    700: ("Other (single) race, n.e.c.", 0.001),
    801: ("White-Black", 0.007),
    802: ("White-American Indian", 0.006),
    803: ("White-Asian", 0.004),
    804: ("White-Hawaiian/Pacific Islander", 0.001),
    805: ("Black-American Indian", 0.001),
    806: ("Black-Asian", 0.0004),
    807: ("Black-Hawaiian/Pacific Islander", 0.0002),
    808: ("American Indian-Asian", 0.0002),
    809: ("Asian-Hawaiian/Pacific Islander", 0.0005),
    810: ("White-Black-American Indian", 0.0004),
    811: ("White-Black-Asian", 0.0001),
    812: ("White-American Indian-Asian", 0.0001),
    813: ("White-Asian-Hawaiian/Pacific Islander", 0.0002),
    814: ("White-Black-American Indian-Asian", 0.00005),
    820: ("Two or three races, unspecified", 0.0003),
    830: ("Four or five races, unspecified", 0.00005),
}
#: IPUMS-CPS RACE codes generated.
RACE_CODES: dict[int, str] = {code: row[0] for code, row in _RACE_TABLE.items()}

#: INCTOT bin edges: 10,000-wide bins from 0 to 200,000 (the paper's preprocessing).
INCTOT_EDGES: tuple[int, ...] = tuple(range(0, 200_001, 10_000))
#: AGE bin edges: decades 10–19, ..., 80–89 (ages 15..85 are generated).
AGE_EDGES: tuple[int, ...] = tuple(range(10, 91, 10))

#: Column order of the generated table.
CENSUS_COLUMNS: tuple[str, ...] = ("HEALTH", "INCTOT", "EDUC", "OCC", "MARST", "AGE", "SEX", "RACE")

#: Declared domains of the census-like table: IPUMS codes for the categorical columns, the
#: paper's bins for INCTOT (10,000-wide, [0, 200,000)) and AGE (decades).
CENSUS_SCHEMA = Schema(
    {
        "HEALTH": Categorical(tuple(HEALTH_CODES)),
        "INCTOT": Binned(INCTOT_EDGES),
        "EDUC": Categorical(tuple(EDUC_CODES)),
        "OCC": Categorical(tuple(OCC_CODES)),
        "MARST": Categorical(tuple(MARST_CODES)),
        "AGE": Binned(AGE_EDGES),
        "SEX": Categorical(tuple(SEX_CODES)),
        "RACE": Categorical(tuple(RACE_CODES)),
    }
)

#: The unfairness paper's four IPUMS-CPS criteria (spec §4).
CENSUS_PRESET: tuple[str, ...] = (
    "HEALTH ⊥ INCTOT | EDUC",
    "HEALTH ⊥ OCC | EDUC",
    "HEALTH ⊥ MARST | AGE",
    "HEALTH ⊥ INCTOT | AGE",
)

# ==================================================================================================
# census-like generator: the model
# ==================================================================================================
_BLOCK = 1 << 16  # rows per independently seeded block; row i depends only on (seed, dependence, i)
_MIN_AGE, _MAX_AGE = 15, 85
_INCOME_CAP = 200_000  # incomes are drawn from distributions truncated below this (exclusive)


def _normalised(weights: Any) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    return w / w.sum(axis=-1, keepdims=True)


class _Categorical:
    """Exact categorical draws from one probability table per group, for many rows at once.

    The CDFs of all groups are laid out as one increasing array ``g + cdf_g``; a draw for a row of
    group g with uniform u is the number of entries ``<= g + u``, minus ``g·K``. A guide table
    (Chen & Asau 1974) gives, for each of ``_RES`` buckets per unit, a lower bound on that number,
    so a few vectorised fix-up steps replace a binary search (numpy's searchsorted on unsorted keys
    was the generator's bottleneck).
    """

    _RES = 1 << 12  # a power of two: key · _RES is exact

    def __init__(self, probs: Any) -> None:
        p = np.atleast_2d(_normalised(probs))
        groups, self.width = p.shape
        cdf = np.cumsum(p, axis=1)
        cdf[:, -1] = 1.0  # so that row g ends exactly at g + 1
        self.flat = np.append((np.arange(groups)[:, None] + cdf).ravel(), np.inf)
        self.guide = np.searchsorted(self.flat, np.arange(groups * self._RES) / self._RES, side="right")

    def __call__(self, u: np.ndarray, group: np.ndarray | None = None) -> np.ndarray:
        key = u if group is None else group + u
        idx = self.guide[(key * self._RES).astype(np.intp)]
        while True:
            step = key >= self.flat[idx]
            if not step.any():
                break
            idx += step
        return idx if group is None else idx - group * self.width


def _age_weights() -> np.ndarray:
    ages = np.arange(_MIN_AGE, _MAX_AGE + 1)
    w = np.where(ages < 60, 1.0, 1.0 - 0.65 * (ages - 60) / 24.0)
    w[-1] = 1.6  # 85 is IPUMS' top code ("85+"): several years of age in one value
    return _normalised(w)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf)(np.asarray(x) / math.sqrt(2.0)))


_AGES = np.arange(_MIN_AGE, _MAX_AGE + 1)
_DRAW_AGE = _Categorical(_age_weights())
_RACE_KEYS = np.array(list(_RACE_TABLE), dtype=np.int16)
_DRAW_RACE = _Categorical([row[1] for row in _RACE_TABLE.values()])

# EDUC: a latent standard-normal attainment, shifted by race group (Black −0.15, American Indian
# −0.2, Asian +0.35), cut at the normal quantiles of the adult shares below; young people are then
# capped at the level their age allows. Drawn directly from the implied table per race group.
_EDUC_KEYS = np.array(list(EDUC_CODES), dtype=np.int16)
_EDUC_SHARE = _normalised([.004, .004, .010, .015, .012, .015, .018, .012, .285, .160, .045, .055, .220,
                           .100, .015, .020])
_EDUC_SCORE = np.array([-3.0, -2.6, -2.2, -1.9, -1.6, -1.4, -1.2, -1.0, -0.5, 0.1, 0.3, 0.4, 0.9, 1.4,
                        1.8, 1.9])  # standardised attainment of each level (used by OCC, INCTOT, HEALTH)
_EDUC_RACE_SHIFT = {200: -0.15, 300: -0.2, 651: 0.35}  # other race codes: 0
_EDUC_GROUP_OF_RACE = np.array([1 + list(_EDUC_RACE_SHIFT).index(c) if c in _EDUC_RACE_SHIFT else 0
                                for c in _RACE_KEYS])
_EDUC_THRESHOLDS = np.array([NormalDist().inv_cdf(q) for q in np.cumsum(_EDUC_SHARE)[:-1]])
_DRAW_EDUC = _Categorical([
    np.diff(np.concatenate([[0.0], _normal_cdf(_EDUC_THRESHOLDS - shift), [1.0]]))
    for shift in (0.0, *_EDUC_RACE_SHIFT.values())
])
_EDUC_CAP_OF_AGE = np.minimum(  # highest EDUC level (index) reachable at each age 15..85
    len(_EDUC_KEYS) - 1,
    np.array([{15: 4, 16: 5, 17: 6, 18: 8, 19: 9, 20: 9, 21: 11, 22: 12, 23: 12, 24: 13, 25: 13}.get(a, 99)
              for a in _AGES]),
)

# MARST by age band: 15–19, 20–24, 25–29, 30s, 40s, 50s, 60s, 70s, 80–85
_BAND_OF_AGE = np.searchsorted(np.array([20, 25, 30, 40, 50, 60, 70, 80]), _AGES, side="right")
_MARST_KEYS = np.array(list(MARST_CODES), dtype=np.int16)
_DRAW_MARST = _Categorical([
    [.010, .003, .002, .001, .000, .984],
    [.150, .015, .010, .010, .001, .814],
    [.400, .020, .015, .030, .002, .533],
    [.550, .020, .020, .070, .003, .337],
    [.600, .020, .020, .120, .010, .230],
    [.600, .020, .020, .150, .030, .180],
    [.580, .015, .015, .160, .080, .150],
    [.500, .010, .010, .130, .230, .120],
    [.330, .010, .005, .080, .520, .055],
])
_EMPLOYED_BY_BAND = np.array([.30, .68, .78, .80, .80, .74, .45, .15, .04])
_EMPLOYED_LOGIT_OF_AGE = np.log(_EMPLOYED_BY_BAND / (1 - _EMPLOYED_BY_BAND))[_BAND_OF_AGE]
# HEALTH's direct dependence on marital status (index = MARST code − 1)
_MARST_HEALTH = np.array([0.35, 0.0, -0.2, -0.2, -0.25, 0.0])

# OCC given employment and EDUC level: share_g · exp(1.2 · skill_g · educ_score)
_OCC_KEYS = np.array([c for c in _OCC_TABLE if c != 0], dtype=np.int16)
_OCC_ROWS = [row for c, row in _OCC_TABLE.items() if c != 0]
_OCC_WAGE = np.array([row[3] for row in _OCC_ROWS])
_OCC_HAZARD = np.array([row[4] for row in _OCC_ROWS])
_DRAW_OCC = _Categorical(
    np.array([row[1] for row in _OCC_ROWS])[None, :]
    * np.exp(1.2 * np.outer(_EDUC_SCORE, [row[2] for row in _OCC_ROWS]))
)
_LOG_INCOME_CAP = math.log(_INCOME_CAP)

# HEALTH: wellness W = (κ·d·(S − mean S) + ε) / sd, ε ~ Logistic(0, 1), sd chosen so that W has the
# logistic's variance; HEALTH is W cut at the logistic quantiles of the shares below (excellent
# highest), so its marginal stays close to _HEALTH_SHARE at every dependence d.
_HEALTH_SHARE = np.array([0.30, 0.31, 0.25, 0.10, 0.04])  # codes 1..5
_HEALTH_KAPPA = 1.5
_S_MEAN, _S_SD = -0.2, 1.2  # of S in the generated population (measured on 2.6M rows: -0.197, 1.208)
_LOGISTIC_SD = math.pi / math.sqrt(3.0)
_HEALTH_CUM = np.cumsum(_HEALTH_SHARE[::-1])[:-1]  # P(poor), P(fair or worse), ...
_HEALTH_CUTS = np.log(_HEALTH_CUM / (1.0 - _HEALTH_CUM))


def _block(seed: int, index: int, dependence: float) -> dict[str, np.ndarray]:
    """Rows ``index·_BLOCK .. (index+1)·_BLOCK − 1`` of the table for ``seed`` (all columns).

    Every random draw comes from a generator seeded by (seed, index) alone, and ``dependence``
    only enters HEALTH, so changing it changes no other column.
    """
    rng = np.random.default_rng([seed, index, 0xCE5])
    n = _BLOCK
    # demographics
    age_idx = _DRAW_AGE(rng.random(n))
    age = _AGES[age_idx]
    female = rng.random(n) < 0.515
    race_idx = _DRAW_RACE(rng.random(n))
    band = _BAND_OF_AGE[age_idx]
    # education by race group, capped by age; marital status by age band
    level = np.minimum(_DRAW_EDUC(rng.random(n), _EDUC_GROUP_OF_RACE[race_idx]), _EDUC_CAP_OF_AGE[age_idx])
    edu = _EDUC_SCORE[level]
    marst_idx = _DRAW_MARST(rng.random(n), band)
    # employment (by age band, education, sex) and occupation group (by education level)
    employed_logit = _EMPLOYED_LOGIT_OF_AGE[age_idx] + 0.4 * edu - 0.3 * female
    employed = rng.random(n) * (1.0 + np.exp(-employed_logit)) < 1.0
    occ_idx = _DRAW_OCC(rng.random(n), level)
    occ = np.where(employed, _OCC_KEYS[occ_idx], 0).astype(np.int16)
    # total personal income: log-normal, redrawn while at or above the cap (a truncated log-normal)
    retired = ~employed & (age >= 62)
    mu = np.where(
        employed,
        10.55 + 0.30 * edu + _OCC_WAGE[occ_idx] - 0.0008 * (age - 50.0) ** 2 - 0.25 * female,
        9.3 + 0.25 * edu + 0.7 * retired,
    )
    sigma = np.where(employed, 0.75, 1.0)
    log_income = mu + sigma * rng.standard_normal(n)
    over = np.flatnonzero(log_income >= _LOG_INCOME_CAP)
    while over.size:
        log_income[over] = mu[over] + sigma[over] * rng.standard_normal(over.size)
        over = over[log_income[over] >= _LOG_INCOME_CAP]
    income = np.minimum(np.floor(np.exp(log_income)), _INCOME_CAP - 1)
    p_zero = np.where(employed, 0.0, np.where(age < 25, 0.55, np.where(retired, 0.05, 0.25)))
    income = np.where(rng.random(n) < p_zero, 0.0, income).astype(np.int32)
    # self-reported health
    score = (
        -0.9 * (age - 45.0) / 18.0
        + 0.7 * (np.log(income + 5000.0) - 10.3) / 0.9
        + 0.3 * edu
        + _MARST_HEALTH[marst_idx]
        - 0.5 * np.where(employed, _OCC_HAZARD[occ_idx], 0.0)
        - 0.4 * (~employed & (age >= 25) & (age < 62))
    )
    noise = rng.logistic(size=n)
    slope = _HEALTH_KAPPA * float(dependence)
    sd = math.sqrt(1.0 + (slope * _S_SD / _LOGISTIC_SD) ** 2)
    wellness = (slope * (score - _S_MEAN) + noise) / sd
    health = (len(_HEALTH_SHARE) - np.searchsorted(_HEALTH_CUTS, wellness, side="right")).astype(np.int16)
    return {
        "HEALTH": health,
        "INCTOT": income,
        "EDUC": _EDUC_KEYS[level],
        "OCC": occ,
        "MARST": _MARST_KEYS[marst_idx],
        "AGE": age.astype(np.int16),
        "SEX": np.where(female, 2, 1).astype(np.int16),
        "RACE": _RACE_KEYS[race_idx],
    }


def _check_census_args(n_rows: Any, dependence: Any, seed: Any) -> float:
    if not _is_int(n_rows) or n_rows <= 0:
        raise DPAuditError(f"n_rows must be a positive integer, got {n_rows!r}")
    if (not isinstance(dependence, numbers.Real) or isinstance(dependence, bool)
            or not (0.0 <= float(dependence) <= 1.0)):
        raise DPAuditError(
            f"dependence must be a number in [0, 1] (0: HEALTH independent of every column), got {dependence!r}"
        )
    _check_seed(seed, allow_none=False)
    return float(dependence)


def _chunks(n_rows: int, dependence: float, seed: int, chunk_rows: int) -> Iterator[dict[str, np.ndarray]]:
    """The table as consecutive chunks of ``chunk_rows`` rows (the last may be shorter).

    Blocks of ``_BLOCK`` rows are generated in order and re-cut into chunks, so the rows do not
    depend on ``chunk_rows``; at most one chunk plus one block is in memory.
    """
    pending: list[dict[str, np.ndarray]] = []
    have = 0
    block = 0
    done = 0
    while done < n_rows:
        want = min(chunk_rows, n_rows - done)
        while have < want:
            pending.append(_block(seed, block, dependence))
            block += 1
            have += _BLOCK
        if len(pending) == 1:
            merged = pending[0]
        else:
            merged = {c: np.concatenate([p[c] for p in pending]) for c in CENSUS_COLUMNS}
        pending = []
        out = {c: merged[c][:want] for c in CENSUS_COLUMNS}
        if have > want:
            pending = [{c: merged[c][want:] for c in CENSUS_COLUMNS}]
        have -= want
        done += want
        del merged
        yield out


def census(n_rows: int, *, dependence: float = 0.5, seed: int = 0) -> tuple[Any, Schema]:
    """A census-like table with IPUMS-CPS columns and codes, in memory.

    The rows are a seeded stand-in for the IPUMS-CPS extract of the unfairness paper (which is not
    redistributable), with the same columns, IPUMS codes and the paper's preprocessing declared in
    :data:`CENSUS_SCHEMA`. The model, in generation order:

    * ``AGE`` 15..85 (85 is the top code "85+"), ``SEX`` 1/2, ``RACE`` (22 IPUMS codes,
      :data:`RACE_CODES`): independent draws from fixed shares.
    * ``EDUC`` (16 IPUMS codes, :data:`EDUC_CODES`): a latent attainment shifted by race group and
      capped by age (a 15-year-old has at most Grade 9).
    * ``MARST`` (IPUMS 1..6, :data:`MARST_CODES`): drawn from a table by age band.
    * ``OCC``: employed or not (by age band, education, sex); a worker's major occupation group
      depends on education. OCC holds the first 2018 Census occupation code of the group
      (:data:`OCC_CODES`: 23 groups, e.g. 10 = Management, 6200 = Construction and extraction) and
      0 (IPUMS "NIU") for people not employed.
    * ``INCTOT`` (dollars, integer): log-normal in education, occupation, age and sex for workers,
      lower (and often 0) for others, **truncated below 200,000**: the paper drops rows above
      200,000 and the schema's top bin is [190,000, 200,000), so such incomes are never generated
      (no row is dropped; n_rows rows are returned). No negative incomes are generated.
    * ``HEALTH`` (IPUMS 1..5, excellent..poor): an ordinal draw from a latent wellness
      ``κ·dependence·S + ε`` with ε logistic noise and S a score falling with age and rising with
      log income, education and being married, lower for hazardous occupations and for people of
      working age who are not employed; rescaled so that HEALTH's marginal stays near
      (0.30, 0.31, 0.25, 0.10, 0.04) at every ``dependence``.

    With ``dependence = 0`` HEALTH is independent of every other column (the audit then measures
    only finite-sample noise); the dependence on income, occupation and marital status *given*
    education or age, i.e. U_MI^TVD summed over :data:`CENSUS_PRESET`, grows with ``dependence``.

    Parameters
    ----------
    n_rows : int
        Number of rows, positive.
    dependence : float in [0, 1], default 0.5
        Strength of HEALTH's dependence on the other columns: 0 none, 1 strong.
    seed : int, default 0
        Non-negative seed. Row i depends only on (seed, dependence, i): ``census(n)`` is the first
        n rows of ``census(m)`` for m > n, equals what :func:`write_census` writes, and changing
        ``dependence`` with the same seed changes the HEALTH column only.

    Returns
    -------
    frame : pandas.DataFrame
        Columns :data:`CENSUS_COLUMNS`; INCTOT int32, the others int16.
    schema : Schema
        :data:`CENSUS_SCHEMA`.

    Examples
    --------
    >>> frame, schema = census(1_000, seed=0)
    >>> frame.shape, list(frame.columns) == list(CENSUS_COLUMNS)
    ((1000, 8), True)
    >>> bool(frame["INCTOT"].between(0, 199_999).all()), bool(frame["AGE"].between(15, 85).all())
    (True, True)
    >>> census(10, seed=3)[0].equals(census(20, seed=3)[0].head(10))
    True
    """
    import pandas as pd

    dependence = _check_census_args(n_rows, dependence, seed)
    (chunk,) = _chunks(int(n_rows), dependence, int(seed), int(n_rows))
    return pd.DataFrame(chunk, columns=list(CENSUS_COLUMNS)), CENSUS_SCHEMA


def _arrow_table(chunk: dict[str, np.ndarray], metadata: dict[bytes, bytes]) -> Any:
    import pyarrow as pa

    return pa.table({c: pa.array(chunk[c]) for c in CENSUS_COLUMNS}).replace_schema_metadata(metadata)


def write_census(
    path: str | os.PathLike[str],
    n_rows: int,
    *,
    dependence: float = 0.5,
    seed: int = 0,
    chunk_rows: int = 1_000_000,
) -> Path:
    """Write the :func:`census` table to a Parquet file, chunk by chunk.

    Bounded memory: one chunk of ``chunk_rows`` rows (plus one 65,536-row generation block) is in
    memory at a time; each chunk is one Parquet row group. Atomic: the rows go to a temporary file
    in the target's folder, renamed to ``path`` only when complete; on any error the temporary
    file is removed and an existing ``path`` is left untouched. Deterministic: the rows depend
    only on (n_rows, dependence, seed) — not on ``chunk_rows`` — and equal ``census(n_rows,
    dependence=dependence, seed=seed)``.

    The file's key-value metadata records the generator (``dpaudit.generator`` =
    ``census v<GENERATOR_VERSION>``), ``dpaudit.n_rows``, ``dpaudit.dependence``, ``dpaudit.seed``
    and the declared schema as JSON (``dpaudit.schema``).

    Parameters
    ----------
    path : str or path-like
        The Parquet file to write; its folder must exist.
    n_rows : int
        Number of rows, positive.
    dependence : float in [0, 1], default 0.5
    seed : int, default 0
        As in :func:`census`.
    chunk_rows : int, default 1,000,000
        Rows generated and written per step (positive).

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     out = write_census(Path(folder) / "census.parquet", 2_500, seed=7, chunk_rows=1_000)
    ...     pd.read_parquet(out).equals(census(2_500, seed=7)[0])
    True
    """
    import pyarrow.parquet as pq

    dependence = _check_census_args(n_rows, dependence, seed)
    if not _is_int(chunk_rows) or chunk_rows <= 0:
        raise DPAuditError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    target = Path(path)
    if not target.parent.is_dir():
        raise DPAuditError(f"cannot write {str(target)!r}: folder {str(target.parent)!r} does not exist")
    metadata = {
        b"dpaudit.generator": f"census v{GENERATOR_VERSION}".encode(),
        b"dpaudit.n_rows": str(int(n_rows)).encode(),
        b"dpaudit.dependence": repr(dependence).encode(),
        b"dpaudit.seed": str(int(seed)).encode(),
        b"dpaudit.schema": CENSUS_SCHEMA.to_json().encode(),
    }
    # a hidden name next to the target (same file system, so the rename is atomic); created by the
    # Parquet writer itself, so the file gets the usual permissions
    tmp = temporary_sibling(target)
    writer = None
    try:
        for chunk in _chunks(int(n_rows), dependence, int(seed), int(chunk_rows)):
            table = _arrow_table(chunk, metadata)
            del chunk
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table, row_group_size=len(table))
            del table
        assert writer is not None  # n_rows > 0
        writer.close()
        writer = None
        os.replace(tmp, target)
    finally:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)
    return target


# ==================================================================================================
# registry entry (``dpaudit.datasets``): a default-size sample of the census-like table
# ==================================================================================================
#: Rows of the registry's ``census`` sample (the paper's IPUMS-CPS extract has about 1M rows).
DEFAULT_ROWS = 1_000_000


def _load_default() -> Any:
    return census(DEFAULT_ROWS, dependence=0.5, seed=0)[0]


def _info() -> Any:
    from dpaudit.datasets import DatasetInfo

    return DatasetInfo(
        name="census",
        title="Synthetic census-like table (IPUMS-CPS columns and codes)",
        rows=DEFAULT_ROWS,
        source="generated by dpaudit.datasets.synthetic.census(1_000_000, dependence=0.5, seed=0)",
        license="generated data, no restrictions",
        citation=(
            "Stand-in for the IPUMS-CPS extract of Vologdin, Tao, Gilad, \"Measuring Database Unfairness "
            "via Dependency Quantification Under Differential Privacy\", PVLDB 19(9); IPUMS codes from "
            "IPUMS CPS (Flood et al., IPUMS Current Population Survey)."
        ),
        files=(),
        schema=CENSUS_SCHEMA,
        loader=_load_default,
        presets={"paper": CENSUS_PRESET},
        notes=(
            "Seeded synthetic rows, not survey data: HEALTH, INCTOT, EDUC, OCC, MARST, AGE, SEX, RACE with "
            "IPUMS-CPS codes (OCC: one 2018 Census occupation code per major group, 0 = NIU). INCTOT is "
            "generated in [0, 200,000) (the paper drops rows above 200,000) and binned 10,000 wide; AGE is "
            "15..85, binned by decade. HEALTH depends on income, education, occupation, age and marital "
            "status with strength dependence = 0.5; other sizes and strengths: census() / write_census()."
        ),
    )


#: The registry entry, ready for ``dpaudit.datasets._REGISTRY["census"] = "dpaudit.datasets.synthetic"``.
INFO = _info()
