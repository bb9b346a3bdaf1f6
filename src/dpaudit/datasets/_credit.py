"""UCI Default of Credit Card Clients (Yeh & Lien 2009; Taiwan, 2005): 30,000 rows, 25 columns.

Not a dataset of the unfairness paper; it is the "Credit" table of membership-inference work on
tabular models. Values are integer codes as published (header names quoted in the file). Codes the
UCI documentation does not list are declared as ordinary values: EDUCATION 0, 5, 6 and MARRIAGE 0
(see ``INFO.notes``); PAY_* take -2..9. Money columns are binned at fixed edges with open ends.
"""

from __future__ import annotations

import io
import math

from dpaudit.datasets import DatasetInfo, PredictionTask
from dpaudit.datasets._files import DataFile, fetch_bytes
from dpaudit.schema import Binned, Categorical, Schema

_COMMIT = "11fb7b341154178b42fd194e164b454533055008"
FILES = (
    DataFile("default_credit_card", "default_of_credit_card_clients.csv",
             "a0f0ab49d6326671d6cd83be5c88dcf18007025fe9a53ecd699119c871176ca1",
             f"https://raw.githubusercontent.com/fju155447/uci/{_COMMIT}/UCI_Credit_Card.csv"),
)
TARGET = "default.payment.next.month"

_INF = math.inf
LIMIT_EDGES = (-_INF, 50_000, 100_000, 150_000, 200_000, 300_000, 500_000, _INF)
# negative (credit balance) | 0 | 1–9,999 | … | 500,000+
BILL_EDGES = (-_INF, 0, 1, 10_000, 50_000, 100_000, 200_000, 500_000, _INF)
PAY_AMT_EDGES = (-_INF, 0, 1, 1_000, 5_000, 10_000, 50_000, 100_000, _INF)
AGE_EDGES = (20, 30, 40, 50, 60, 70, _INF)
PAY_STATUS = tuple(range(-2, 10))

SCHEMA = Schema(
    {
        "ID": Binned([1, 30_001]),
        "LIMIT_BAL": Binned(LIMIT_EDGES),
        "SEX": Categorical([1, 2]),
        "EDUCATION": Categorical(range(0, 7)),
        "MARRIAGE": Categorical(range(0, 4)),
        "AGE": Binned(AGE_EDGES),
        **{f"PAY_{i}": Categorical(PAY_STATUS) for i in (0, 2, 3, 4, 5, 6)},
        **{f"BILL_AMT{i}": Binned(BILL_EDGES) for i in range(1, 7)},
        **{f"PAY_AMT{i}": Binned(PAY_AMT_EDGES) for i in range(1, 7)},
        TARGET: Categorical([0, 1]),
    }
)


def load_frame():
    """The 30,000 rows as a pandas DataFrame (integer codes, columns as in the file)."""
    import pandas as pd

    return pd.read_csv(io.BytesIO(fetch_bytes(FILES[0])), keep_default_na=False)


INFO = DatasetInfo(
    name="credit",
    title="UCI Default of Credit Card Clients (Taiwan, 2005)",
    rows=30_000,
    source=(
        "UCI Machine Learning Repository, dataset 350 (https://archive.ics.uci.edu/dataset/350); file "
        "UCI_Credit_Card.csv (the common CSV conversion of the UCI xls) from GitHub fju155447/uci @ " + _COMMIT
    ),
    license="CC BY 4.0 (UCI); the GitHub copy states no license",
    citation=(
        "Yeh, I-C. & Lien, C. (2009). The comparisons of data mining techniques for the predictive accuracy "
        "of probability of default of credit card clients. Expert Systems with Applications 36(2), "
        "2473-2480. UCI dataset 350, doi:10.24432/C55S3H"
    ),
    files=FILES,
    schema=SCHEMA,
    loader=load_frame,
    presets={
        "default": (
            f"SEX ⊥ {TARGET}",
            f"SEX ⊥ {TARGET} | EDUCATION",
            f"MARRIAGE ⊥ {TARGET} | AGE",
        ),
    },
    task=PredictionTask(
        label=TARGET, positive=1, categorical=("SEX", "EDUCATION", "MARRIAGE"),
        numeric=("LIMIT_BAL", "AGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6",
                 *(f"BILL_AMT{i}" for i in range(1, 7)), *(f"PAY_AMT{i}" for i in range(1, 7))),
    ),
    notes=(
        "Not a dataset of the unfairness paper (it is used by the membership-inference work), so it has "
        "no 'paper' preset; preset 'default' audits the default label against SEX (1 male 11,888, 2 female "
        "18,112), SEX within EDUCATION, and MARRIAGE within age decades. Codes as published: EDUCATION "
        "1 graduate school, 2 university, 3 high school, 4 others, and the undocumented 0 (14 rows), "
        "5 (280), 6 (51), declared as ordinary values (commonly read as unknown); MARRIAGE 1 married, "
        "2 single, 3 others, and undocumented 0 (54 rows); PAY_0, PAY_2..PAY_6 (no PAY_1) repayment status "
        "-2..9 (-1 paid duly, 1..9 months of delay; -2 and 0 occur undocumented); default.payment.next.month "
        "0/1 (6,636 defaults). Bins: AGE 20 | 30 | 40 | 50 | 60 | 70 | inf; LIMIT_BAL (NT$) -inf | 50k | 100k "
        "| 150k | 200k | 300k | 500k | inf; BILL_AMT1..6 -inf | 0 | 1 | 10k | 50k | 100k | 200k | 500k | inf "
        "(negative bills are credit balances); PAY_AMT1..6 -inf | 0 | 1 | 1k | 5k | 10k | 50k | 100k | inf; "
        "ID one bin [1, 30,001). 35 rows are exact duplicates apart from ID; all are kept."
    ),
)
