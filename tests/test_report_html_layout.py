"""Issue 26's fairness page without a browser: the answer first (every value, its interval and its
reading before anything else), the signed heat maps against an independent computation, a document
without signs drawn unsigned, headings kept with their figures and no forced print page breaks.
(The rendered layout — first screen, print pages, 400 px, label size — is tests/test_html_browser.py.)"""

import re

import numpy as np
import pytest

from dpaudit.counting import count_tables
from dpaudit.criteria import parse_criteria
from dpaudit.measures import MEASURES as REGISTRY
from dpaudit.report._html import CSS, fmt
from dpaudit.report.html import render_audit
from dpaudit.results import AuditResult
from tests.test_report_html import (  # noqa: F401  (fixtures)
    ADULT_CRITERIA,
    _doc,
    adult,
    dp_page,
    dp_result,
    exact_page,
    exact_result,
)

READINGS = {
    "tvd": "dimensionless; 0 = the criterion holds exactly; at most 2 per criterion (8 for these 4).",
    "tc": "share of all n rows; 0 = the criterion holds exactly; at most 2 per criterion (8 for these 4).",
    "repair": "rows deleted + inserted; 0 = the criterion holds exactly; at most 48,842 per criterion "
              "(195,368 for these 4).",
}


@pytest.mark.parametrize("which", ["exact", "dp"])
def test_the_page_opens_with_every_value_its_interval_and_its_reading(request, which):
    result, page = request.getfixturevalue(f"{which}_result"), request.getfixturevalue(f"{which}_page")
    body = page[page.index("<body>"):]
    first_section = re.search(r'<section(?: class="[^"]*")? id="([^"]+)"', body).group(1)
    assert first_section == "values"
    answer = body[body.index('<div class="answer">'):body.index("</div>", body.index('<div class="answer">'))]
    assert body.index('<div class="answer">') < body.index('id="audit"') < body.index('id="budget"')
    first = next(iter(result.measures.values()))
    assert f'<span class="value" data-first-value>{fmt(first.value)}</span>' in answer
    assert answer.count("data-first-value") == 1
    for name, m in result.measures.items():
        assert f"<strong>{m.title}</strong> = <span" in answer and f">{fmt(m.value)}</span>" in answer
        assert READINGS[name] in answer
        if which == "dp":
            low, high = m.release.interval
            assert f"95% noise interval [{fmt(low)}, {fmt(high)}]" in answer
        else:
            assert "exact sum over the 4 criteria, no noise" in answer


def test_the_stated_maximum_of_u_r_is_n_and_holds():
    """U_R ≤ n per criterion (keep each block's largest group): on a table whose U_R is the largest
    possible for its shape — a perfect 2 × 2 dependence — and on random tables, under every semantics."""
    rng = np.random.default_rng(3)
    tables = [np.array([[[10, 0], [0, 10]]])] + [rng.integers(0, 9, (2, 3, 3)) for _ in range(20)]
    for semantics in ("ci", "bag", "set"):
        measure = REGISTRY["repair"](semantics=semantics)
        for t in tables:
            assert measure.value(t) <= REGISTRY["repair"].maximum(int(t.sum()))
    assert REGISTRY["repair"].maximum(48_842) == 48_842 and REGISTRY["tvd"].maximum(10) == 2.0
    assert REGISTRY["repair"].zero_means({"semantics": "bag"}).startswith("every kept protected group")


def test_signed_maps_are_the_sign_of_each_cells_deviation(request):
    """sign × MD equals Pr(a)·(Pr(p,o|a) − Pr(p|a)·Pr(o|a)), computed here cell by cell (to 1e-12)."""
    frame, schema = request.getfixturevalue("adult")
    result = request.getfixturevalue("exact_result")
    tables = count_tables(frame, parse_criteria(ADULT_CRITERIA), schema)
    for cmap, t in zip(result["tc"].details.cell_md, tables):
        counts = np.asarray(t.counts, dtype=float).reshape(len(cmap.blocks), len(cmap.protected), len(cmap.outcome))
        n = counts.sum()
        for a, block in enumerate(counts):
            n_a = block.sum()
            for p in range(block.shape[0]):
                for o in range(block.shape[1]):
                    dev = 0.0 if n_a == 0 else (n_a / n) * (block[p, o] / n_a - block[p].sum() / n_a * block[:, o].sum() / n_a)
                    assert abs(cmap.sign[a][p][o] * cmap.md[a][p][o] - dev) <= 1e-12
                    assert cmap.sign[a][p][o] == (0 if cmap.md[a][p][o] == 0 else np.sign(dev))
    sex = result["tc"].details.cell_md[1]  # sex ⊥ income: high-income women are under-represented
    assert sex.protected[0] == {"sex": "Female"} and sex.outcome[1] == {"income": ">50K"} and sex.sign[0][0][1] == -1


def test_a_document_without_signs_draws_unsigned_maps(request):
    page = request.getfixturevalue("exact_page")
    doc = _doc(request.getfixturevalue("exact_result"))
    for cmap in doc["measures"]["tc"]["cell_md"]:
        del cmap["sign"]
    old = render_audit(AuditResult.from_dict(doc))
    assert "MD, signed (+ over, − under)" in page and "centred at 0" in page
    assert "MD (share of n)" in old and "unsigned, as saved by an older dpaudit" in old and "centred at 0" not in old


@pytest.mark.parametrize("which", ["exact", "dp"])
def test_headings_are_printed_with_their_figures_and_nothing_forces_a_page_break(request, which):
    page = request.getfixturevalue(f"{which}_page")
    for match in re.finditer(r"<figure", page):
        before = page[:match.start()]
        h3 = before.rfind("<h3>")
        between = before[h3:]
        if "</figure>" in between or "</section>" in between:  # not the first figure under that heading
            continue
        assert before[:h3].endswith('<div class="keep">'), between[:80]
    print_css = CSS[CSS.index("@media print"):]
    assert "break-before: page" not in print_css and "page-break-before: always" not in print_css
    assert "break-after: avoid" in print_css and 'class="page"' not in page
