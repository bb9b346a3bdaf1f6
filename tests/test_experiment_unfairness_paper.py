"""experiments/unfairness/paper.py re-read from the reference file it was transcribed from: every
number of the paper beside dpaudit's on the results page is the file's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unfairness_study import study_modules

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "papers" / "unfairness-reference-numbers.md"
pytestmark = pytest.mark.skipif(not REFERENCE.is_file(), reason=f"no reference file at {REFERENCE}")
NUMBER = re.compile(r"[−-]?\d[\d,]*\.?\d*(?:e[−-]?\d+)?|[−-]?\.\d+")


@pytest.fixture(scope="module")
def paper():
    with study_modules("paper") as modules:
        yield modules["paper"]


@pytest.fixture(scope="module")
def text() -> str:
    return REFERENCE.read_text(encoding="utf-8")


def numbers(fragment: str) -> list[float]:
    return [float(m.replace(",", "").replace("−", "-")) for m in NUMBER.findall(fragment)]


def line(text: str, start: str) -> str:
    hits = [ln for ln in text.splitlines() if ln.startswith(start)]
    assert len(hits) == 1, (start, hits)
    return hits[0][len(start):]


def after(text: str, key: str, length: int = 400) -> str:
    """The ``length`` characters after ``key``, whitespace (line breaks) collapsed."""
    text = re.sub(r"\s+", " ", text)
    at = text.index(key)
    return text[at + len(key): at + len(key) + length]


def test_nonprivate_values(paper, text):
    for name, label in (("adult", "Adult"), ("stackoverflow", "Stack Overflow"), ("compas", "COMPAS")):
        got = numbers(line(text, f"| {label} |"))
        want = [*paper.NONPRIVATE[name]["mi_bits"], *paper.NONPRIVATE[name]["tvd"], *paper.NONPRIVATE[name]["tc"]]
        assert got == want, name
    assert numbers(after(text, "PrivBayes-style proxy on Adult:", 80)) == [*paper.PRIVBAYES_ADULT,
                                                                          *paper.PRIVBAYES_OFFSET_ADULT]


def test_usecase_tables(paper, text):
    for label, key in (("SEX, INCTOT", "SEX ⊥ INCTOT"), ("RACE, INCTOT", "RACE ⊥ INCTOT"),
                       ("SEX, INCTOT \\| EDUC", "SEX ⊥ INCTOT | EDUC"), ("RACE, INCTOT \\| EDUC", "RACE ⊥ INCTOT | EDUC")):
        assert numbers(line(text, f"| {label} |")) == list(paper.IPUMS_USECASE[key].values())
    for label, key in (("sex, income", "sex ⊥ income"), ("sex, income \\| education-num", "sex ⊥ income | education-num"),
                       ("race, income", "race ⊥ income"),
                       ("race, income \\| education-num", "race ⊥ income | education-num")):
        assert numbers(line(text, f"| {label} |")) == list(paper.ADULT_USECASE[key].values())
    compas = after(text, "(`experiment9_compas_summary.csv`, MI / TVD / Repair / TC):", 400)
    want = [v for row in paper.COMPAS_USECASE.values() for v in row.values()]
    assert [x for x in numbers(compas) if x not in (9,)][:16] == want
    kendall = after(text, "Kendall τ (measure vs query disparity):", 120)
    assert numbers(kendall)[:8] == [*paper.USECASE_KENDALL["adult"].values(), *paper.USECASE_KENDALL["compas"].values()]
    rates = numbers(after(text, "P(income>50K) = ", 90))
    assert rates[:6] == [*paper.ADULT_RATES["all"], *paper.ADULT_RATES["Female"], *paper.ADULT_RATES["Male"]]


def test_read_off_plots(paper, text):
    plot0 = numbers(after(text, "- plot_0 (Adult, ε = 10, 10K rows):", 200))
    plot0[4] *= 1000  # "2.4K"
    assert plot0[:20] == [x for values in paper.PLOT0.values() for x in values]
    flip = after(text, "- Synthetic flip (1,000 rows, no noise), t = 0, 0.1, …, 1:", 200)
    got = numbers(flip)
    assert got[:11] == list(paper.FLIP_TVD)
    # "TC 0, .1, …, .9, then .5 at t = 1": the values t up to 0.9, then 0.5
    assert got[11:16] == [0.0, 0.1, 0.9, 0.5, 1.0]
    assert list(paper.FLIP_TC) == [*(round(0.1 * i, 1) for i in range(10)), 0.5]
    assert got[16:18] == list(paper.FLIP_CHUNKED)
    unchunked = after(text, "Repair at 1K rows, ε = 1, unchunked vs chunked (alphabetical order):", 400)
    for name, label in (("adult", "Adult"), ("census", "IPUMS"), ("compas", "COMPAS"), ("healthcare", "Healthcare")):
        got = numbers(after(unchunked, f"{label} ", 60))
        assert got[:8] == [*paper.CHUNKED_1K_UNCHUNKED[name], *paper.CHUNKED_1K_CHUNKED[name]], name
    assert numbers(after(unchunked, "SO unchunked timed out vs ≈ ", 30))[:4] == list(paper.CHUNKED_1K_CHUNKED["stackoverflow"])
    exp5 = numbers(after(text, "- exp5: TC flat beyond k ≈ 500 (", 120))
    assert exp5[:3] == [paper.EXP5_TC["adult"], paper.EXP5_TC["stackoverflow"], paper.EXP5_TC["compas"]]
    assert exp5[3] == paper.EXP5_TC["census"] and exp5[5:7] == list(paper.EXP5_TC["healthcare"])


def test_exp3_errors(paper, text):
    block = after(text, "- exp3 relative error at ε = 10 / ε = 0.1:", 400)
    labels = {"adult": "Adult", "census": "IPUMS", "stackoverflow": "SO", "compas": "COMPAS", "healthcare": "Healthcare"}
    for measure, head in (("tvd", "TVD"), ("tc", "TC"), ("repair", "Repair")):
        part = after(block, f"{head} ", 200).split(";")[0]
        for name, values in paper.EXP3_ERROR[measure].items():
            got = numbers(after(part, f"{labels[name]} ", 20))[:2]
            assert got == list(values), (measure, name)
