"""The census-like generator: seeded blocks of rows with a ``dependence`` knob, in memory or to Parquet."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from dpaudit._io import atomic_open
from dpaudit._validation import number, seed_value, whole_number
from dpaudit.datasets.synthetic._draws import _Categorical, _normalised
from dpaudit.datasets.synthetic.domains import (
    _OCC_TABLE,
    _RACE_TABLE,
    CENSUS_COLUMNS,
    CENSUS_SCHEMA,
    EDUC_CODES,
    GENERATOR_VERSION,
    MARST_CODES,
)
from dpaudit.schema import Schema

__all__ = ["census", "write_census"]

_BLOCK = 1 << 16  # rows per independently seeded block; row i depends only on (seed, dependence, i)
_MIN_AGE, _MAX_AGE = 15, 85
_INCOME_CAP = 200_000  # incomes are drawn from distributions truncated below this (exclusive)


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
              for a in _AGES.tolist()]),
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
    whole_number("n_rows", n_rows, minimum=1)
    seed_value("seed", seed, allow_none=False)
    return number("dependence", dependence, low=0.0, high=1.0)  # 0: HEALTH independent of every column


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
    whole_number("chunk_rows", chunk_rows, minimum=1)
    metadata = {
        b"dpaudit.generator": f"census v{GENERATOR_VERSION}".encode(),
        b"dpaudit.n_rows": str(int(n_rows)).encode(),
        b"dpaudit.dependence": repr(dependence).encode(),
        b"dpaudit.seed": str(int(seed)).encode(),
        b"dpaudit.schema": CENSUS_SCHEMA.to_json().encode(),
    }
    target = Path(path)
    with atomic_open(target, "wb") as handle:  # a temporary sibling, renamed onto path when complete
        writer = None
        try:
            for chunk in _chunks(int(n_rows), dependence, int(seed), int(chunk_rows)):
                table = _arrow_table(chunk, metadata)
                del chunk
                if writer is None:
                    writer = pq.ParquetWriter(handle, table.schema)
                writer.write_table(table, row_group_size=len(table))
                del table
        finally:
            if writer is not None:
                writer.close()
    return target
