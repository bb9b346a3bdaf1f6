"""CPS1988 (AER): March 1988 Current Population Survey, 28,155 men aged 18–70 with positive wages.

A redistributable stand-in for the unfairness paper's IPUMS-CPS extract, whose terms forbid
redistribution (and which has HEALTH, OCC, MARST that this extract lacks). Wage is weekly, in 1992
dollars; experience is potential experience, age − education − 6, so it can be negative. Numeric
columns are binned at fixed, documented edges (see ``INFO.notes``); the bins for wage mirror the
paper's 10,000-wide INCTOT bins.
"""

from __future__ import annotations

import io
import math

from dpaudit.datasets import DatasetInfo
from dpaudit.datasets._files import DataFile, fetch_bytes
from dpaudit.schema import Binned, Categorical, Schema

_COMMIT = "1dcc2bf5f955cc1224a3e1307256e1fe86b68dae"
RDATASETS = f"https://raw.githubusercontent.com/vincentarelbundock/Rdatasets/{_COMMIT}/csv/AER/"
LICENSE = (
    "GPL-3 (Rdatasets repository); the AER package data is GPL-2 | GPL-3; the underlying CPS "
    "microdata is a work of the US government"
)
FILES = (
    DataFile("cps", "CPS1988.csv", "ef5ee9cbf3674f9cf242549517cf7801bffc5e98c1006055c9fdefebaf386251",
             RDATASETS + "CPS1988.csv"),
)

_INF = math.inf
# years of schooling: <9 (elementary), 9–11 (some high school), 12 (high school), 13–15 (some
# college / associate), 16 (bachelor), 17+ (graduate); shared with CPSSW8
EDUCATION_EDGES = (0, 9, 12, 13, 16, 17, _INF)
# weekly wage: 200-wide bins (×52 ≈ 10,400 a year, the width of the paper's INCTOT bins) up to 4,000
# (≈ 200,000 a year, where the paper drops rows); the rows above are kept in one open bin
WAGE_EDGES = (*range(0, 4_001, 200), _INF)
# potential experience by decades; negative values (age − education − 6 < 0) in their own bin
EXPERIENCE_EDGES = (-_INF, 0, 10, 20, 30, 40, 50, 60, _INF)

SCHEMA = Schema(
    {
        "rownames": Binned([1, 28_156]),
        "wage": Binned(WAGE_EDGES),
        "education": Binned(EDUCATION_EDGES),
        "experience": Binned(EXPERIENCE_EDGES),
        "ethnicity": Categorical(["cauc", "afam"]),
        "smsa": Categorical(["no", "yes"]),
        "region": Categorical(["northeast", "midwest", "south", "west"]),
        "parttime": Categorical(["no", "yes"]),
    }
)


def load_frame():
    """The 28,155 rows of CPS1988 as a pandas DataFrame (columns as in the file)."""
    import pandas as pd

    return pd.read_csv(io.BytesIO(fetch_bytes(FILES[0])), keep_default_na=False)


INFO = DatasetInfo(
    name="cps1988",
    title="CPS1988 (AER): March 1988 Current Population Survey, men",
    rows=28_155,
    source=(
        "R package AER, data CPS1988, as csv/AER/CPS1988.csv in GitHub vincentarelbundock/Rdatasets @ "
        + _COMMIT
    ),
    license=LICENSE,
    citation=(
        "Bierens, H.J. & Ginther, D.K. (2001). Integrated Conditional Moment Testing of Quantile Regression "
        "Models. Empirical Economics 26, 307-324; Kleiber, C. & Zeileis, A. (2008). Applied Econometrics "
        "with R. Springer (package AER)"
    ),
    files=FILES,
    schema=SCHEMA,
    loader=load_frame,
    presets={
        "paper": (
            "ethnicity ⊥ wage | education",
            "ethnicity ⊥ parttime | education",
            "ethnicity ⊥ smsa | experience",
            "ethnicity ⊥ wage | experience",
        ),
    },
    notes=(
        "Men only (ethnicity cauc 25,923 / afam 2,232). Stand-in for the paper's IPUMS-CPS criteria "
        "HEALTH ⊥ INCTOT | EDUC · HEALTH ⊥ OCC | EDUC · HEALTH ⊥ MARST | AGE · HEALTH ⊥ INCTOT | AGE, "
        "which is not redistributable and has no counterpart of HEALTH, OCC or MARST here: ethnicity, the "
        "only protected attribute, replaces HEALTH; wage replaces INCTOT; parttime (the only job attribute) "
        "replaces OCC; smsa (living in a metropolitan area, the only household-situation attribute) "
        "replaces MARST; education replaces EDUC and potential experience (age − education − 6, no age "
        "column) replaces AGE, keeping the paper's two-by-two structure. Bins: wage (weekly, 1992 USD) "
        "0, 200, 400, …, 4,000, inf (200 a week ≈ the paper's 10,000-a-year INCTOT bins; the paper drops "
        "incomes above 200,000, here the 23 wages ≥ 4,000 stay in the last bin); education (years) "
        "0 | 9 | 12 | 13 | 16 | 17 | inf (<9, 9–11, 12, 13–15, 16, 17+); experience -inf | 0 | 10 | 20 | … | "
        "60 | inf (negative values, -4..-1, in the first bin); rownames (R's row index) one bin [1, 28,156)."
    ),
)
