"""UCI Adult (Census Income; Becker & Kohavi 1996): 32,561 training + 16,281 test rows.

Test labels lose their trailing period, so ``income`` is ``<=50K`` or ``>50K`` throughout. ``?``
(unknown workclass, occupation, native-country) is kept as an ordinary declared category, as the
unfairness paper's loader does. Domains are declared from ``adult.names`` (categorical values) and
from fixed, data-independent choices for numeric columns (integer ranges or bin edges).
"""

from __future__ import annotations

import io
import math

from dpaudit.datasets import DatasetInfo, PredictionTask
from dpaudit.datasets._files import DataFile, fetch_bytes
from dpaudit.schema import Binned, Categorical, Schema

COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
)

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
FILES = (
    DataFile("adult", "adult.data", "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d", _UCI + "adult.data"),
    DataFile("adult", "adult.test", "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05", _UCI + "adult.test"),
)

_INF = math.inf
SCHEMA = Schema(
    {
        "age": Binned([17, 20, 30, 40, 50, 60, 70, _INF]),
        "workclass": Categorical(["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
                                  "State-gov", "Without-pay", "Never-worked", "?"]),
        "fnlwgt": Binned([0, 100_000, 200_000, 300_000, 500_000, _INF]),
        "education": Categorical(["Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th",
                                  "HS-grad", "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors",
                                  "Masters", "Prof-school", "Doctorate"]),
        "education-num": Categorical(range(1, 17)),
        "marital-status": Categorical(["Married-civ-spouse", "Divorced", "Never-married", "Separated",
                                       "Widowed", "Married-spouse-absent", "Married-AF-spouse"]),
        "occupation": Categorical(["Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
                                   "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
                                   "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
                                   "Armed-Forces", "?"]),
        "relationship": Categorical(["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative",
                                     "Unmarried"]),
        "race": Categorical(["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"]),
        "sex": Categorical(["Female", "Male"]),
        "capital-gain": Binned([0, 1, 5_000, 10_000, _INF]),
        "capital-loss": Binned([0, 1, 1_000, 2_000, _INF]),
        "hours-per-week": Categorical(range(1, 100)),
        "native-country": Categorical(["United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
                                       "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China",
                                       "Cuba", "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica",
                                       "Vietnam", "Mexico", "Portugal", "Ireland", "France", "Dominican-Republic",
                                       "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia", "Hungary", "Guatemala",
                                       "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador",
                                       "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands", "?"]),
        "income": Categorical(["<=50K", ">50K"]),
    }
)


def load_frame():
    """The 48,842 rows of Adult (train then test) as a pandas DataFrame."""
    import pandas as pd

    parts = []
    for spec, skip in zip(FILES, (0, 1)):
        text = fetch_bytes(spec)
        frame = pd.read_csv(io.BytesIO(text), header=None, names=list(COLUMNS), skipinitialspace=True,
                            skiprows=skip, keep_default_na=False)
        parts.append(frame)
    frame = pd.concat(parts, ignore_index=True)
    frame["income"] = frame["income"].str.rstrip(".")
    return frame


INFO = DatasetInfo(
    name="adult",
    title="UCI Adult (Census Income), train + test",
    rows=48_842,
    source="UCI Machine Learning Repository, dataset 2 (https://archive.ics.uci.edu/dataset/2/adult)",
    license="CC BY 4.0",
    citation="Becker, B. & Kohavi, R. (1996). Adult. UCI Machine Learning Repository. doi:10.24432/C5XW20",
    files=FILES,
    schema=SCHEMA,
    loader=load_frame,
    presets={
        "paper": (
            "education-num ⊥ income",
            "sex ⊥ income",
            "race ⊥ income",
            "sex ⊥ income | hours-per-week",
        ),
    },
    task=PredictionTask(
        label="income", positive=">50K",
        categorical=("workclass", "education", "marital-status", "occupation", "relationship", "race", "sex",
                     "native-country"),
        numeric=("age", "education-num", "capital-gain", "capital-loss", "hours-per-week"),
    ),
    notes=(
        "Train and test joined; the test file's first line is skipped and its labels lose their "
        "trailing period. '?' is an ordinary declared category (as the paper's loader treats it). "
        "education-num and hours-per-week are integer categories 1..16 and 1..99; age, fnlwgt, "
        "capital-gain and capital-loss are binned at fixed edges."
    ),
)
