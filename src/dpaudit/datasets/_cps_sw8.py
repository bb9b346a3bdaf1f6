"""CPSSW8 (AER, Stock & Watson): March CPS 1992–2008 full-time workers aged 21–64, 61,395 rows.

A redistributable stand-in for the unfairness paper's IPUMS-CPS extract (see :mod:`._cps`).
``earnings`` is average hourly earnings; there is no year column. Numeric columns are binned at fixed,
documented edges (see ``INFO.notes``).
"""

from __future__ import annotations

import io
import math

from dpaudit.datasets import DatasetInfo
from dpaudit.datasets._cps import _COMMIT, EDUCATION_EDGES, LICENSE, RDATASETS
from dpaudit.datasets._files import DataFile, fetch_bytes
from dpaudit.schema import Binned, Categorical, Schema

FILES = (
    DataFile("cps", "CPSSW8.csv", "908a60fa4fb5f12d6dad1e5beb2181e5da606346b75046f41f0316572bcfaf27",
             RDATASETS + "CPSSW8.csv"),
)

# hourly earnings: 5-wide bins (×2,080 hours ≈ 10,400 a year, the width of the paper's INCTOT bins)
# up to 100 (≈ 208,000 a year), then one open bin
EARNINGS_EDGES = (*range(0, 101, 5), math.inf)
# age by decades (the extract covers ages 21–64)
AGE_EDGES = (20, 30, 40, 50, 60, 70)

SCHEMA = Schema(
    {
        "rownames": Binned([1, 61_396]),
        "earnings": Binned(EARNINGS_EDGES),
        "gender": Categorical(["male", "female"]),
        "age": Binned(AGE_EDGES),
        "region": Categorical(["Northeast", "Midwest", "South", "West"]),
        "education": Binned(EDUCATION_EDGES),
    }
)


def load_frame():
    """The 61,395 rows of CPSSW8 as a pandas DataFrame (columns as in the file)."""
    import pandas as pd

    return pd.read_csv(io.BytesIO(fetch_bytes(FILES[0])), keep_default_na=False)


INFO = DatasetInfo(
    name="cpssw8",
    title="CPSSW8 (AER, Stock & Watson): March CPS 1992-2008, full-time workers",
    rows=61_395,
    source=(
        "R package AER, data CPSSW8, as csv/AER/CPSSW8.csv in GitHub vincentarelbundock/Rdatasets @ " + _COMMIT
    ),
    license=LICENSE,
    citation=(
        "Stock, J.H. & Watson, M.W. (2007). Introduction to Econometrics, 2nd ed. Addison Wesley; "
        "Kleiber, C. & Zeileis, A. (2008). Applied Econometrics with R. Springer (package AER)"
    ),
    files=FILES,
    schema=SCHEMA,
    loader=load_frame,
    presets={
        "paper": (
            "gender ⊥ earnings | education",
            "gender ⊥ education | age",
            "gender ⊥ region | age",
            "gender ⊥ earnings | age",
        ),
    },
    notes=(
        "gender male 34,348 / female 27,047. Stand-in for the paper's IPUMS-CPS criteria HEALTH ⊥ INCTOT "
        "| EDUC · HEALTH ⊥ OCC | EDUC · HEALTH ⊥ MARST | AGE · HEALTH ⊥ INCTOT | AGE (not redistributable; "
        "no HEALTH, OCC or MARST here): gender, the only protected attribute, replaces HEALTH; earnings "
        "replaces INCTOT; education and age replace EDUC and AGE. With no occupation column, OCC | EDUC "
        "becomes education | age (attainment as the non-income outcome; it cannot be conditioned on "
        "itself), and MARST becomes region (the only remaining household attribute). Bins: earnings "
        "(hourly USD) 0, 5, 10, …, 100, inf (5 an hour ≈ the paper's 10,000-a-year INCTOT bins at 2,080 "
        "hours; the top value is 72.12, so no row reaches the open bin); age by decades 20 | 30 | 40 | 50 | "
        "60 | 70; education (years) 0 | 9 | 12 | 13 | 16 | 17 | inf (<9, 9–11, 12, 13–15, 16, 17+; the "
        "file codes 6, 8, 9, 10, 11, 12, 13, 14, 16, 18, 19, 20); rownames (R's row index) one bin [1, 61,396)."
    ),
)
