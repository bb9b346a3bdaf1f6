"""The "Healthcare" data: 887 synthetic patients (mlinspect's example pipeline), the paper's file.

``healthcare.csv`` is the inner join on ``ssn`` of mlinspect's ``patients.csv`` (1,000 rows) and
``histories.csv`` (887 rows), exactly as committed to the paper's repository. The data are synthetic:
names and SSNs are fake.

``?`` marks an unknown value (race 95, county 183, smoker 70 rows). The paper's loader treats only
``"NA"``, ``"N/A"`` and ``""`` as missing, so for it ``?`` is an ordinary category; dpaudit does the
same: ``?`` is a declared value of ``race``, ``county`` and ``smoker`` (mlinspect itself reads it as
missing, ``na_values='?'``). ``smoker`` keeps the file's spelling, the strings ``"True"``,
``"False"`` and ``"?"``.

Declared domains (public, data-independent): race ``race1..race3, ?``; county ``county1..county4, ?``;
age_group ``group1..group3``; complications integers 0..10; num_children integers 0..10 (a fixed cap;
the file holds 0..5); income 10,000-wide bins from 0 to 300,000 (30 bins; the file's incomes run
from 10,205 to 299,945). The paper's reference code label-encodes income as it is (every distinct
income its own value, almost one per row); dpaudit bins it, as the paper bins IPUMS INCTOT, so the
values of the two criteria with income differ from the paper's.
"""

from __future__ import annotations

import io

from dpaudit.datasets import DatasetInfo
from dpaudit.datasets._files import DataFile, fetch_bytes
from dpaudit.schema import Binned, Categorical, Schema

__all__ = ["INFO", "SCHEMA", "load_frame"]

COMMIT = "7a2efb44aec0124ec0b287e0ad05ee2bc3c692d7"
FILES = (
    DataFile(
        "healthcare", "healthcare.csv",
        "a6e1b0e292beeb499acffa439249d61c6de52104d70128299699f13b24cd663f",
        "https://raw.githubusercontent.com/makarenko1/Measures-for-estimating-unfairness-in-data-under-DP/"
        f"{COMMIT}/data/healthcare.csv",
    ),
)

# The paper's preprocessing: only these strings are missing (none occur in this file).
NA_VALUES = ("NA", "N/A", "")

SCHEMA = Schema(
    {
        "race": Categorical(["race1", "race2", "race3", "?"]),
        "county": Categorical(["county1", "county2", "county3", "county4", "?"]),
        "num_children": Categorical(range(0, 11)),
        "income": Binned(range(0, 300_001, 10_000)),
        "age_group": Categorical(["group1", "group2", "group3"]),
        "smoker": Categorical(["False", "True", "?"]),
        "complications": Categorical(range(0, 11)),
    }
)

PAPER = (
    "race ⊥ complications | age_group",
    "smoker ⊥ complications | age_group",
    "race ⊥ income | county",
    "smoker ⊥ income | num_children",
)


def load_frame():
    """The 887 rows of ``healthcare.csv`` (11 columns) as a pandas DataFrame."""
    import pandas as pd

    return pd.read_csv(io.BytesIO(fetch_bytes(FILES[0])), keep_default_na=False, na_values=list(NA_VALUES),
                       dtype={"race": str, "county": str, "age_group": str, "smoker": str})


INFO = DatasetInfo(
    name="healthcare",
    title="Healthcare (synthetic patients from mlinspect), the unfairness paper's 887-row file",
    rows=887,
    source=(
        "makarenko1/Measures-for-estimating-unfairness-in-data-under-DP @ 7a2efb44, data/healthcare.csv: the "
        "join of stefan-grafberger/mlinspect example_pipelines/healthcare/patients.csv and histories.csv"
    ),
    license="Apache-2.0 (both repositories); synthetic data, fake names and SSNs",
    citation=(
        "Grafberger, S., Guha, S., Stoyanovich, J. & Schelter, S. (2021). MLINSPECT: A Data Distribution "
        "Debugger for Machine Learning Pipelines. SIGMOD 2021 (demo). Used by Vologdin, Tao & Gilad, "
        "Measuring Database Unfairness via Dependency Quantification Under Differential Privacy, PVLDB 19(9)."
    ),
    files=FILES,
    schema=SCHEMA,
    loader=load_frame,
    presets={"paper": PAPER},
    notes=(
        "'?' (unknown race, county, smoker) is an ordinary declared category, as the paper's loader treats "
        "it (only 'NA', 'N/A', '' are missing; none occur). smoker keeps the file's strings 'True', "
        "'False', '?'. complications and num_children are integer categories 0..10 (num_children's cap is a "
        "fixed choice; the file holds 0..5). income is binned at 10,000-wide edges from 0 to 300,000 (the "
        "paper's reference code uses each distinct income as a value, so criteria with income differ from "
        "its values)."
    ),
)
