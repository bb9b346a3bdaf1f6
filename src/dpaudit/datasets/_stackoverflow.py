"""Stack Overflow Developer Survey 2018, the 20-country subset of CauSumX / FairCap: 38,090 rows.

The file is not published in one piece: the authors' repository holds it as 8 parts
(``data/so_0.csv`` … ``data/so_7.csv``, each with the header, 5,000 body rows each, the last
3,090), so the download fetches the 8 parts, checks each part's sha256, joins them (the header
once, then each part's body verbatim, in order) and checks the joined content against the same
content sha256 as the local copy in ``$DPAUDIT_DATA/stackoverflow/`` (:func:`fetch_parts`). The
result is cached like any other dataset file.

All values are text (read with ``keep_default_na=False``, so ``NA``-like strings stay strings)
except ``ConvertedSalary`` and ``Unnamed: 0``, which become integers so they can be binned.
Categorical domains are the answer options of the 2018 questionnaire, plus ``UNKNOWN`` (the
subset's label for a missing answer) in the columns where the subset uses it.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import math

from dpaudit._errors import DatasetError
from dpaudit.datasets import DatasetInfo
from dpaudit.datasets._files import DataFile, download, fetch_bytes
from dpaudit.schema import Binned, Categorical, Schema

_COMMIT = "4d08fb359e7ce555a3cb84273332fa0e0380b2a3"
_RAW = f"https://raw.githubusercontent.com/brityoungmann/Explanation_Summarization/{_COMMIT}/data/"

# (url, sha256 of the part file as published, body rows); sha256s from the shared MANIFEST, row
# counts checked by cutting the joined file: header + rows [5000 i, 5000 (i + 1)) hashes to part i.
PARTS = (
    (_RAW + "so_0.csv", "952ca829ba69ba844ccabf87c4436fbda44f776929492bf71458356843b482dc", 5_000),
    (_RAW + "so_1.csv", "dc71ca7d5dc76411d9e71903af5ad383de85714d41ec3292e5bab329f706283a", 5_000),
    (_RAW + "so_2.csv", "44772b402a65363e06b5bc255f7eeb08653f67548184b12e938f80651c3b3957", 5_000),
    (_RAW + "so_3.csv", "3abd2b500d135830903a070fb045bd9a4fc4dab17e70a29d466e7e93b45888f2", 5_000),
    (_RAW + "so_4.csv", "251021e3b1eae82d98c25a15e973ea02eb6a749814f4c70fbaaa6c31a149b13a", 5_000),
    (_RAW + "so_5.csv", "7a515bb9bd52cf9565faa3424e605e46f53992b36c42049b0ddf1240f3c14f45", 5_000),
    (_RAW + "so_6.csv", "d9f5b191d2e5a95d17e41d37244d1d98db4413c6cb7277a0487ef75b4f5fd8fb", 5_000),
    (_RAW + "so_7.csv", "80aaf3c769444475eefdc9c81d6f0afdc2e9d4b8e137873d7ddc9f545a8115c1", 3_090),
)

# The joined file; its ``url`` names the first part (the download uses all of PARTS).
FILE = DataFile(
    "stackoverflow", "so_countries_col_new.csv",
    "e5fd540204ac4768cc1b4738efe3d93e76dac0af982812b5c1b11c4e2ffc2878", PARTS[0][0],
)
FILES = (FILE,)


def _split_header(data: bytes, url: str) -> tuple[bytes, bytes]:
    cut = data.find(b"\n")
    if cut < 0:
        raise DatasetError(f"{url}: no header line; the part is not the published file, refusing to load")
    return data[: cut + 1], data[cut + 1:]


def join_parts(parts: list[bytes], urls: list[str] | None = None) -> bytes:
    """The header of the first part once, then every part's body verbatim, in order.

    Every part must start with the same header line; a part that does not is refused.
    """
    urls = urls or [f"part {i}" for i in range(len(parts))]
    header, body = _split_header(parts[0], urls[0])
    out = [header, body]
    for data, url in zip(parts[1:], urls[1:]):
        head, body = _split_header(data, url)
        if head != header:
            raise DatasetError(
                f"{url}: its header differs from the first part's; the parts do not belong together, refusing to load"
            )
        out.append(body)
    return b"".join(out)


def fetch_parts(spec: DataFile = FILE, parts=PARTS) -> bytes:
    """Verified content of a file published in parts (same search order and rules as ``fetch_bytes``).

    ``$DPAUDIT_DATA/<folder>/<name>[.gz]``, then the cache, then the download: each part is fetched,
    checked against its own sha256, the parts are joined (:func:`join_parts`), the result is checked
    against ``spec.sha256`` and written to the cache atomically. Any mismatch refuses to load.
    """

    def download_parts() -> bytes:
        bodies: list[bytes] = []
        for url, sha, _rows in parts:
            data = download(url, spec, part=True)
            digest = hashlib.sha256(data).hexdigest()
            if digest != sha:
                raise DatasetError(
                    f"{url}: sha256 of this part of {spec.folder}/{spec.name} is {digest}, expected {sha}; "
                    "the part is corrupt or not the published one, refusing to load"
                )
            bodies.append(data)
        return join_parts(bodies, [p[0] for p in parts])

    return fetch_bytes(spec, download_parts)


COUNTRIES = (
    "Australia", "Austria", "Belgium", "Brazil", "Canada", "France", "Germany", "India", "Israel",
    "Italy", "Netherlands", "Poland", "Russian Federation", "Spain", "Sweden", "Switzerland", "Turkey",
    "Ukraine", "United Kingdom", "United States",
)
_EDUCATION = (
    "I never completed any formal education",
    "Primary/elementary school",
    "Secondary school (e.g. American high school, German Realschule or Gymnasium, etc.)",
    "Some college/university study without earning a degree",
    "Associate degree",
    "Bachelor’s degree (BA, BS, B.Eng., etc.)",
    "Master’s degree (MA, MS, M.Eng., MBA, etc.)",
    "Professional degree (JD, MD, etc.)",
    "Other doctoral degree (Ph.D, Ed.D., etc.)",
)
# the parents' question words its first option "They never ..." instead of "I never ..."
_EDUCATION_PARENTS = ("They never completed any formal education",) + _EDUCATION[1:] + ("UNKNOWN",)
_GENDER_OPTIONS = ("Female", "Male", "Transgender", "Non-binary, genderqueer, or gender non-conforming")
# several answers are joined by ';' in questionnaire order: every non-empty combination (15) + UNKNOWN
GENDERS = tuple(
    ";".join(combo) for r in range(1, 5) for combo in itertools.combinations(_GENDER_OPTIONS, r)
) + ("UNKNOWN",)
DEV_TYPES = (
    "Back-end developer", "C-suite executive (CEO, CTO, etc.)", "Data or business analyst",
    "Data scientist or machine learning specialist", "Database administrator", "Designer",
    "Desktop or enterprise applications developer", "DevOps specialist", "Educator or academic researcher",
    "Embedded applications or devices developer", "Engineering manager", "Front-end developer",
    "Full-stack developer", "Game or graphics developer", "Marketing or sales professional", "Mobile developer",
    "Product manager", "QA or test developer", "Student", "System administrator",
)
YEARS_CODING = (
    "0-2 years", "3-5 years", "6-8 years", "9-11 years", "12-14 years", "15-17 years", "18-20 years",
    "21-23 years", "24-26 years", "27-29 years", "30 or more years",
)
AGES = (
    "Under 18 years old", "18 - 24 years old", "25 - 34 years old", "35 - 44 years old", "45 - 54 years old",
    "55 - 64 years old", "65 years or older", "UNKNOWN",
)
# ConvertedSalary (annual USD): 0 alone (682 rows answer 0), then [1, 10,000), 10,000-wide bins to
# 200,000 (the paper's INCTOT bins), then [200k, 500k), [500k, 1M), [1M, inf) (the survey caps at 2M)
SALARY_EDGES = (0, 1, *range(10_000, 200_001, 10_000), 500_000, 1_000_000, math.inf)
_LMH = ("Low", "Medium", "High")

SCHEMA = Schema(
    {
        "Unnamed: 0": Binned([0, 47_702]),
        "Hobby": Categorical(["Yes", "No"]),
        "Country": Categorical(COUNTRIES),
        "Student": Categorical(["No", "Yes, full-time", "Yes, part-time"]),
        "FormalEducation": Categorical(_EDUCATION),
        "UndergradMajor": Categorical([
            "Computer science, computer engineering, or software engineering",
            "Another engineering discipline (ex. civil, electrical, mechanical)",
            "Information systems, information technology, or system administration",
            "Web development or web design",
            "Mathematics or statistics",
            "A natural science (ex. biology, chemistry, physics)",
            "A health science (ex. nursing, pharmacy, radiology)",
            "A business discipline (ex. accounting, finance, marketing)",
            "A humanities discipline (ex. literature, history, philosophy)",
            "A social science (ex. anthropology, psychology, political science)",
            "Fine arts or performing arts (ex. graphic design, music, studio art)",
            "I never declared a major",
        ]),
        "DevType": Categorical(DEV_TYPES),
        "YearsCoding": Categorical(YEARS_CODING),
        "HoursComputer": Categorical(["Less than 1 hour", "1 - 4 hours", "5 - 8 hours", "9 - 12 hours",
                                      "Over 12 hours", "UNKNOWN"]),
        "Exercise": Categorical(["I don't typically exercise", "1 - 2 times per week", "3 - 4 times per week",
                                 "Daily or almost every day", "UNKNOWN"]),
        "Gender": Categorical(GENDERS),
        "SexualOrientation": Categorical(["Straight or heterosexual", "Gay or Lesbian", "Bisexual or Queer",
                                          "Asexual"]),
        "EducationParents": Categorical(_EDUCATION_PARENTS),
        "RaceEthnicity": Categorical([
            "Black or of African descent", "East Asian", "Hispanic or Latino/Latina", "Middle Eastern",
            "Native American, Pacific Islander, or Indigenous Australian", "South Asian",
            "White or of European descent",
        ]),
        "Dependents": Categorical(["Yes", "No", "UNKNOWN"]),
        "Continent": Categorical(["EU", "AS", "OC", "SA", "UNKNOWN"]),
        "Age": Categorical(AGES),
        "ConvertedSalary": Binned(SALARY_EDGES),
        "HDI": Categorical(_LMH),
        "GDP": Categorical(_LMH),
        "GINI": Categorical(_LMH),
    }
)
COLUMNS = tuple(SCHEMA.columns)


def load_frame():
    """The 38,090 rows as a pandas DataFrame: text columns, integer ConvertedSalary and row index."""
    import pandas as pd

    frame = pd.read_csv(io.BytesIO(fetch_parts()), dtype=str, keep_default_na=False)
    if tuple(frame.columns) != COLUMNS:
        raise DatasetError(f"stackoverflow: unexpected columns {list(frame.columns)}; expected {list(COLUMNS)}")
    for col in ("Unnamed: 0", "ConvertedSalary"):
        frame[col] = frame[col].astype("int64")
    return frame


INFO = DatasetInfo(
    name="stackoverflow",
    title="Stack Overflow Developer Survey 2018, 20-country subset (CauSumX / FairCap)",
    rows=38_090,
    source=(
        "GitHub brityoungmann/Explanation_Summarization @ " + _COMMIT + ", data/so_0.csv … so_7.csv "
        "joined (header once, then each part's body); from the Stack Overflow Developer Survey 2018"
    ),
    license=(
        "ODbL 1.0 (database) and DbCL 1.0 (cell contents), as Stack Overflow publishes the survey; "
        "the subset's repository states no license of its own"
    ),
    citation=(
        "Stack Overflow Developer Survey 2018 (https://insights.stackoverflow.com/survey/2018); subset of "
        "Youngmann, Cafarella, Gilad, Roy, 'Summarized Causal Explanations for Aggregate Views', SIGMOD 2024"
    ),
    files=FILES,
    schema=SCHEMA,
    loader=load_frame,
    presets={
        "paper": (
            "Country ⊥ HoursComputer | Student",
            "Age ⊥ ConvertedSalary | HDI",
            "Country ⊥ DevType | YearsCoding",
            "Age ⊥ DevType | FormalEducation",
        ),
        "gender": ("Country ⊥ Age | Gender",),
    },
    notes=(
        "Rebuilt from the authors' 8 parts (header once, then each body; each part's sha256 is checked "
        "on download, then the joined file's). Text kept as is (keep_default_na=False); ConvertedSalary "
        "(annual USD; 0 is a real answer in 682 rows) is binned at 0 | 1 | 10,000 | 20,000 | … | 200,000 "
        "(10,000 wide, as the paper's INCTOT) | 500,000 | 1,000,000 | inf; 'Unnamed: 0' (the authors' row "
        "index, 0..47,701) is one bin. Categorical domains are the 2018 questionnaire's options: Gender is "
        "any ';'-joined combination of its 4 options (15) plus UNKNOWN; UNKNOWN (a missing answer) is "
        "declared where the subset uses it (HoursComputer, Exercise, Gender, EducationParents, Dependents, "
        "Age, Continent; in Continent it is North America, the code 'NA' having been read as missing). "
        "Continent, HDI, GDP and GINI (Low/Medium/High) are functions of Country. The paper's Stack "
        "Overflow criteria use 2022+ columns this 2018 subset lacks, so preset 'paper' uses stand-ins with "
        "the same roles: (1) Country ⊥ RemoteWork | Employment -> Country ⊥ HoursComputer | Student "
        "(daily hours at a computer is the closest work-arrangement answer; student status the closest "
        "employment-status answer); (2) Age ⊥ PurchaseInfluence | OrgSize -> Age ⊥ ConvertedSalary | HDI "
        "(salary as the seniority/influence outcome; with no employer attribute, the country's development "
        "level is the workplace context); (3) Country ⊥ MainBranch | YearsCodePro -> Country ⊥ DevType | "
        "YearsCoding (developer role for MainBranch; YearsCoding is the subset's coding-experience column); "
        "(4) Age ⊥ MainBranch | EdLevel -> Age ⊥ DevType | FormalEducation (EdLevel's 2018 name). "
        "Preset 'gender': Country ⊥ Age | Gender."
    ),
)
