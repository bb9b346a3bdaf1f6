"""The census-like generator's declared domains: IPUMS-CPS columns, codes and bins (the public part)."""

from __future__ import annotations

from dpaudit.schema import Binned, Categorical, Schema

__all__ = ["CENSUS_SCHEMA", "CENSUS_PRESET", "CENSUS_COLUMNS", "HEALTH_CODES", "EDUC_CODES", "OCC_CODES",
           "MARST_CODES", "SEX_CODES", "RACE_CODES", "INCTOT_EDGES", "AGE_EDGES", "GENERATOR_VERSION"]

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
