"""The HTML reports in a real browser (issue 15): headless Chromium driven by Playwright.

Each page (Adult exact audit, Adult DP audit, an M = 256 membership-inference report) is written to
a file and opened with ``file://``. :func:`inspect_page` lists what is wrong with it: a console
error, any request other than the page's own file, a key number of the result that is not shown
exactly as :func:`dpaudit.report._html.fmt` prints its JSON value, an expected figure that is
missing or drawn with zero size, horizontal overflow at 1280 px, and (print emulation) a section
that disappears. The pages are also read with JavaScript disabled, and the checker is shown to catch
a removed figure, a changed number, an external request and an overflow by tampering with a page.

Issue 26's layout is asserted on every page kind: the first released value (``data-first-value``)
is visible on the first 1280 × 900 screen; printed on A4 (``page.pdf``) a page takes at most
:data:`PRINT_PAGES` sheets (measured, see the table there); at a 400 px viewport nothing widens the
page (``document.documentElement.scrollWidth ≤ 400``); every label of a heat map is drawn at 11 px
or more, at 1280 px and at 400 px (the heat maps scroll inside their box rather than shrink).

Chromium: Debian's ``chromium`` (``shutil.which("chromium")``) with the flags of :data:`CHROMIUM_FLAGS`
and a fresh empty profile (Playwright gives every launch a new temporary ``--user-data-dir``);
never a browser downloaded by Playwright. Locally the tests skip when chromium or playwright is
missing (Playwright is the ``browser`` extra, not in the ``test`` extra: 0.17 GB); in CI (``CI`` set) they fail. ``DPAUDIT_WRITE_SCREENSHOTS=1`` writes the README's
screenshots, ``docs/img/report_fairness.png`` (the README's main job at ε = 1 with the default
measures U_MI^TVD and U_TC) and ``docs/img/report_mia.png``. Render and load times, the print page
counts and the first value's position are printed (``pytest -s``).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dpaudit._format import epsilon_text
from dpaudit.report._html import figure_svg, fmt, new_figure, page, section, table
from dpaudit.report.json import render_json

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = {"fairness": ROOT / "docs" / "img" / "report_fairness.png",
               "mia": ROOT / "docs" / "img" / "report_mia.png"}
#: How the closed network of the test machines needs Chromium started (no Google hosts, no GPU).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}
SCREENSHOT_MAX_HEIGHT = 900  # the first screen: what a reader sees before scrolling
MIA_RECORDS = 1000  # N of the simulated M = 256 run
NARROW = {"width": 400, "height": 800}  # a phone held upright
MIN_LABEL_PX = 11.0  # the smallest heat-map label, in CSS px
#: The most A4 sheets each page kind may print on (Chromium's print to PDF, 14 mm margins). Measured on
#: issue 26's layout: Adult ε = 1 with three measures 4 (before: 7, three nearly empty), exact 6 (9),
#: the README's ε = 1 page with U_MI^TVD and U_TC 3, MIA M = 256 6 (8).
PRINT_PAGES = {"dp": 4, "exact": 6, "readme": 3, "mia": 6}

#: Render and load times, printed at the end of the module (``pytest -s``) for the closing note.
TIMINGS: dict[str, str] = {}


# --- the browser -------------------------------------------------------------------------------


def _unavailable(reason: str) -> None:
    """Skip locally with the reason; in CI the browser tests must run, so fail."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the browser tests (.ci/run installs chromium and the browser extra)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[browser]')")
    exe = shutil.which("chromium")
    if exe is None:
        _unavailable("chromium is not on PATH (apt-get install chromium)")
    t0 = time.perf_counter()
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_FLAGS)
        TIMINGS["chromium launch"] = f"{time.perf_counter() - t0:.2f} s (Chromium {b.version})"
        yield b
        b.close()


@pytest.fixture(scope="module", autouse=True)
def _print_timings() -> Iterator[None]:
    yield
    if TIMINGS:
        print("\n-- HTML report timings (tests/test_html_browser.py) --")
        for what, value in TIMINGS.items():
            print(f"  {what}: {value}")


# --- what a page must show ---------------------------------------------------------------------


@dataclass
class Expected:
    """What a rendered page must show: ``numbers`` (label → text as ``fmt`` prints the JSON value)
    and the ``data-figure`` names of its figures."""

    numbers: dict[str, str]
    figures: tuple[str, ...]


@dataclass
class Inspection:
    problems: list[str] = field(default_factory=list)
    text: str = ""
    load_s: float = 0.0
    height: int = 0


def shows(text: str, number: str) -> bool:
    """Whether ``number`` appears in ``text`` as a whole number: not inside a longer number, not after
    a minus sign it lacks (``0.5`` is not shown by ``-0.5``, ``10.5`` or ``0.55``)."""
    pattern = r"(?<![\d.,\-−])" + re.escape(number) + r"(?!\d|e[-+]?\d)"
    return re.search(pattern, text) is not None


_OVERFLOW_JS = """() => {
  const de = document.documentElement, body = document.body;
  const right = body.getBoundingClientRect().right + 0.5;
  const culprits = [];
  for (const el of body.querySelectorAll('*')) {
    if (culprits.length >= 5) break;
    let p = el.parentElement, clipped = false;
    while (p && p !== body) {
      if (getComputedStyle(p).overflowX !== 'visible') { clipped = true; break; }  // inside a scroll box
      p = p.parentElement;
    }
    if (!clipped && el.getBoundingClientRect().right > right) {
      culprits.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
                    (el.className && el.className.baseVal === undefined && el.className ? '.' + el.className : '') +
                    ' right=' + Math.round(el.getBoundingClientRect().right));
    }
  }
  return {doc: de.scrollWidth, view: de.clientWidth, body: body.scrollWidth, bodyClient: body.clientWidth,
          height: de.scrollHeight, culprits};
}"""


def inspect_page(browser: Any, path: Path, expected: Expected, *, javascript: bool = True) -> Inspection:
    """Open ``path`` (``file://``) at 1280 px and list every problem; the page is then emulated for print."""
    url = path.as_uri()
    out = Inspection()
    ctx = browser.new_context(java_script_enabled=javascript, viewport=VIEWPORT)
    try:
        pg = ctx.new_page()
        ctx.on("request", lambda r: r.url != url and out.problems.append(f"request to {r.url}"))
        pg.on("console", lambda m: m.type == "error" and out.problems.append(f"console error: {m.text}"))
        pg.on("pageerror", lambda e: out.problems.append(f"page error: {e}"))
        t0 = time.perf_counter()
        pg.goto(url, wait_until="load")
        out.load_s = time.perf_counter() - t0
        out.text = pg.inner_text("body")
        for label, number in expected.numbers.items():
            if not shows(out.text, number):
                out.problems.append(f"number not shown: {label} = {number}")
        out.problems += _figure_problems(pg, expected.figures, "")
        box = pg.evaluate(_OVERFLOW_JS)
        out.height = box["height"]
        if box["doc"] > box["view"] or box["body"] > box["bodyClient"]:
            out.problems.append(f"horizontal overflow at {VIEWPORT['width']} px: document {box['doc']} > "
                                f"{box['view']} or body {box['body']} > {box['bodyClient']} "
                                f"({', '.join(box['culprits']) or 'no single element'})")
        sections = pg.locator("section")
        n_sections = sections.count()
        if n_sections == 0:
            out.problems.append("no <section> in the page")
        pg.emulate_media(media="print")
        for i in range(n_sections):
            sec = sections.nth(i)
            bb = sec.bounding_box()
            if not sec.is_visible() or bb is None or bb["height"] <= 0:
                out.problems.append(f"print: section {sec.get_attribute('id') or i} is not shown")
        out.problems += _figure_problems(pg, expected.figures, "print: ")
    finally:
        ctx.close()
    return out


def _figure_problems(pg: Any, names: tuple[str, ...], prefix: str) -> list[str]:
    problems = []
    for name in names:
        svgs = pg.locator(f'figure[data-figure="{name}"] svg')
        if svgs.count() == 0:
            problems.append(f"{prefix}figure missing: {name}")
        for i in range(svgs.count()):
            bb = svgs.nth(i).bounding_box()
            if bb is None or bb["width"] <= 0 or bb["height"] <= 0:
                problems.append(f"{prefix}figure {name} drawn with zero size ({bb})")
    return problems


def _figures_in(html: str) -> list[str]:
    return re.findall(r'<figure data-figure="([^"]+)"', html)


# --- the pages ---------------------------------------------------------------------------------


def fairness_numbers(doc: dict[str, Any]) -> dict[str, str]:
    """Every measure's released value; DP mode: its ε and 95% noise interval, and the audit's ε;
    exact mode: its value per criterion and the MI baseline per criterion (where the JSON has them)."""
    nums = {"n": fmt(doc["n"])}
    if doc["epsilon"] is not None:
        nums["ε"] = epsilon_text(doc["epsilon"])
    for name, m in doc["measures"].items():
        nums[f"{name} value"] = fmt(m["value"])
        if m["epsilon"] is not None:
            nums[f"{name} ε"] = epsilon_text(m["epsilon"])
            nums[f"{name} interval low"], nums[f"{name} interval high"] = (fmt(x) for x in m["interval"])
        for crit, v in zip(doc["criteria"], m.get("per_criterion") or ()):
            nums[f"{name} on {crit}"] = fmt(v)
        for crit, b in zip(doc["criteria"], m.get("baseline") or ()):
            nums[f"MI baseline (nats) on {crit}"] = fmt(b["mi_nats"])
    return nums


def mia_numbers(doc: dict[str, Any]) -> dict[str, str]:
    """Every estimable rule's TPR at each α with its CI, realised FPR and ε lower bound; the verdict line
    at each α; M; the normality diagnostic and the naive AUC."""
    nums = {"M (models)": fmt(doc["n_models"])}
    for row in doc["results"]:
        if row.get("verdict"):
            nums[f"verdict at α={row['alpha']}"] = row["verdict"]["text"]
        for rule, r in row.items():
            if rule in ("verdict", "vulnerable"):
                continue
            if not (isinstance(r, dict) and "tpr" in r and r.get("estimable", True) and r["tpr"] is not None):
                continue
            at = f"{rule} at α={row['alpha']}"
            nums[f"TPR {at}"] = fmt(r["tpr"])
            nums[f"FPR {at}"] = fmt(r["fpr"])
            if r.get("epsilon_lb") is not None:
                nums[f"ε lower bound {at}"] = fmt(r["epsilon_lb"])
            for end, x in zip(("low", "high"), r.get("ci") or ()):
                nums[f"TPR CI {end} {at}"] = fmt(x)
    for key in ("share_non_normal", "auc_naive"):
        if doc["diagnostics"].get(key) is not None:
            nums[key] = fmt(doc["diagnostics"][key])
    return nums


@dataclass
class Page:
    """A rendered page, the file it was written to, its result's JSON document and what it must show."""

    kind: str
    path: Path
    html: str
    doc: dict[str, Any]
    expected: Expected


def _write(tmp: Path, name: str, html: str) -> Path:
    path = tmp / f"{name}.html"
    path.write_text(html, encoding="utf-8")
    return path


def _timed_render(label: str, render: Callable[[], str]) -> str:
    t0 = time.perf_counter()
    html = render()
    TIMINGS[label] = f"{time.perf_counter() - t0:.2f} s, {len(html.encode()) / 1024:.0f} KiB"
    return html


@pytest.fixture(scope="module")
def html_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the pages are written. Imports matplotlib first, so that the render times below are the
    renders' own (a process pays the import once)."""
    t0 = time.perf_counter()
    import matplotlib.figure  # noqa: F401

    TIMINGS["import matplotlib (once per process)"] = f"{time.perf_counter() - t0:.2f} s"
    return tmp_path_factory.mktemp("html")


@pytest.fixture(scope="module")
def adult(data_root: Path) -> tuple[Any, Any, tuple[str, ...]]:
    import dpaudit

    frame, schema = dpaudit.datasets.load("adult")
    return frame, schema, tuple(dpaudit.datasets.preset("adult"))


def _fairness_page(kind: str, adult: tuple[Any, Any, tuple[str, ...]], html_dir: Path) -> Page:
    import dpaudit
    from dpaudit.report.html import render_audit

    frame, schema, criteria = adult
    # "readme": the README's main job (ε = 1, fresh noise, the default measures U_MI^TVD and U_TC), for the
    # screenshot; "dp" (seeded, to be reproducible) and "exact" add U_R
    measures = ("tvd", "tc") if kind == "readme" else ("tvd", "tc", "repair")
    if kind == "exact":
        res = dpaudit.audit(frame, criteria, measures=measures, exact=True, schema=schema)
    else:
        res = dpaudit.audit(frame, criteria, measures=measures, epsilon=1.0, schema=schema,
                            seed=7 if kind == "dp" else None)
    label = f"render_audit() {kind} (Adult, {len(criteria)} criteria × {len(measures)} measures)"
    html = _timed_render(label, lambda: render_audit(res))
    doc = json.loads(render_json(res))
    return Page(kind, _write(html_dir, kind, html), html, doc, Expected(fairness_numbers(doc), fairness_figures(doc)))


@pytest.fixture(scope="module")
def exact_page(adult: tuple[Any, Any, tuple[str, ...]], html_dir: Path) -> Page:
    return _fairness_page("exact", adult, html_dir)


@pytest.fixture(scope="module")
def dp_page(adult: tuple[Any, Any, tuple[str, ...]], html_dir: Path) -> Page:
    return _fairness_page("dp", adult, html_dir)


@pytest.fixture(scope="module")
def readme_page(adult: tuple[Any, Any, tuple[str, ...]], html_dir: Path) -> Page:
    return _fairness_page("readme", adult, html_dir)


@pytest.fixture(scope="module")
def mia_page(html_dir: Path) -> Page:
    from dpaudit.mia.evaluate import evaluate
    from dpaudit.mia.simulate import gaussian_scores
    from dpaudit.report.html_mia import render_mia

    rep = evaluate(gaussian_scores(256, MIA_RECORDS, seed=0).to_scoreset())
    html = _timed_render(f"render_mia() (M = 256, N = {MIA_RECORDS:,})", lambda: render_mia(rep))
    doc = json.loads(render_json(rep))
    return Page("mia", _write(html_dir, "mia", html), html, doc, Expected(mia_numbers(doc), MIA_FIGURES))


def fairness_figures(doc: dict[str, Any]) -> tuple[str, ...]:
    """One figure of the released values per measure; exact mode adds a heat map of MD(a,p,o) per criterion."""
    names = [f"values-{m}" for m in doc["measures"]]
    if doc["mode"] == "exact" and "tc" in doc["measures"]:
        names += [f"md-map-{i}" for i in range(1, len(doc["criteria"]) + 1)]
    return tuple(names)


#: The figures of the membership-inference page (their ``data-figure`` names): the log–log ROC curves
#: of the rules and the histogram of the naive threshold's per-record FPR.
MIA_FIGURES: tuple[str, ...] = ("roc", "fpr-histogram")

KINDS = ["exact", "dp", "mia"]


@pytest.fixture
def page_of(request: pytest.FixtureRequest) -> Callable[[str], Page]:
    """The rendered page of a kind ("exact", "dp", "readme", "mia"); each is rendered once per module."""
    return lambda kind: request.getfixturevalue(f"{kind}_page")


# --- the tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_page_in_chromium(browser: Any, page_of: Callable[[str], Page], kind: str) -> None:
    """No console error, no request but the page's own file, every key number exactly as in the JSON,
    every figure drawn, no horizontal overflow at 1280 px, every section printed."""
    p = page_of(kind)
    assert p.expected.numbers, "the result has no key numbers to look for"
    # the expected figures must be there; any other figure the page has is checked for size as well
    others = tuple(name for name in dict.fromkeys(_figures_in(p.html)) if name not in p.expected.figures)
    got = inspect_page(browser, p.path, Expected(p.expected.numbers, p.expected.figures + others))
    TIMINGS[f"load {kind} (JavaScript on)"] = f"{got.load_s * 1000:.0f} ms, page height {got.height} px"
    assert got.problems == []


@pytest.mark.parametrize("kind", KINDS)
def test_page_reads_the_same_without_javascript(browser: Any, page_of: Callable[[str], Page], kind: str) -> None:
    p = page_of(kind)
    with_js = inspect_page(browser, p.path, p.expected)
    without = inspect_page(browser, p.path, p.expected, javascript=False)
    TIMINGS[f"load {kind} (JavaScript off)"] = f"{without.load_s * 1000:.0f} ms"
    assert without.problems == []
    assert without.text == with_js.text


@pytest.mark.parametrize("kind", ["fairness", "mia"])
def test_screenshot(browser: Any, page_of: Callable[[str], Page], kind: str) -> None:
    """A PNG of the first screen (1280 × 900) that is not blank; written for the README when
    ``DPAUDIT_WRITE_SCREENSHOTS=1``. The fairness page is the README's main job: Adult, its four
    criteria, ε = 1, the default measures U_MI^TVD and U_TC."""
    from PIL import Image

    p = page_of("readme" if kind == "fairness" else "mia")
    with opened(browser, p.path, VIEWPORT) as pg:
        height = min(pg.evaluate("document.documentElement.scrollHeight"), SCREENSHOT_MAX_HEIGHT)
        png = pg.screenshot(full_page=True, clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height})
    img = Image.open(io.BytesIO(png)).convert("L")
    assert img.size == (VIEWPORT["width"], height)
    hist = img.histogram()
    ink = sum(hist[:200]) / (img.size[0] * img.size[1])  # share of pixels clearly darker than the background
    assert ink > 0.01, f"the screenshot is (nearly) blank: {ink:.4f} of its pixels are dark"
    assert sum(1 for c in hist if c) > 32, "the screenshot has almost no shades: not a rendered page"
    if os.environ.get("DPAUDIT_WRITE_SCREENSHOTS") == "1":
        out = SCREENSHOTS[kind]
        out.parent.mkdir(parents=True, exist_ok=True)
        # 256 colours: text and flat figures lose nothing visible, the file shrinks three- to fourfold
        Image.open(io.BytesIO(png)).convert("RGB").quantize(256).save(out, optimize=True)
        TIMINGS[f"screenshot {kind}"] = f"{out.relative_to(ROOT)}, {out.stat().st_size / 1024:.0f} KiB"


# --- issue 26: the answer first, print, a narrow screen, readable heat maps ----------------------

LAYOUT_KINDS = ["exact", "dp", "readme", "mia"]

_LABELS_JS = """() => [...document.querySelectorAll('figure[data-figure^="md-map"] svg text')].map(t => {
  const m = t.getScreenCTM();
  return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
})"""


@contextmanager
def opened(browser: Any, path: Path, viewport: dict[str, int]) -> Iterator[Any]:
    """The page at ``path`` loaded in a fresh context of ``viewport``; the context closed after."""
    ctx = browser.new_context(viewport=viewport)
    try:
        pg = ctx.new_page()
        pg.goto(path.as_uri(), wait_until="load")
        yield pg
    finally:
        ctx.close()


def _first_value(doc: dict[str, Any]) -> str:
    """The page's first value as the JSON holds it: the first measure's, or the first verdict's TPR."""
    if "measures" in doc:
        return fmt(next(iter(doc["measures"].values()))["value"])
    return fmt(next(row["verdict"]["tpr"] for row in doc["results"] if row["verdict"]["tpr"] is not None))


@pytest.mark.parametrize("kind", LAYOUT_KINDS)
def test_the_first_value_is_on_the_first_screen(browser: Any, page_of: Callable[[str], Page], kind: str) -> None:
    """The first released value (``data-first-value``) is visible within the first 1280 × 900 screen."""
    p = page_of(kind)
    with opened(browser, p.path, VIEWPORT) as pg:
        first = pg.locator("[data-first-value]")
        assert first.count() == 1 and first.is_visible()
        box = first.bounding_box()
        assert box is not None and box["y"] + box["height"] <= VIEWPORT["height"], box
        assert shows(first.inner_text(), _first_value(p.doc)), first.inner_text()
    TIMINGS[f"first value of {kind}"] = f"{box['y']:.0f}–{box['y'] + box['height']:.0f} px from the top"


@pytest.mark.parametrize("kind", LAYOUT_KINDS)
def test_print_fits_its_page_count(browser: Any, page_of: Callable[[str], Page], kind: str) -> None:
    """Printed on A4 (Chromium's PDF), at most :data:`PRINT_PAGES` sheets: no section forces a page break."""
    with opened(browser, page_of(kind).path, VIEWPORT) as pg:
        pdf = pg.pdf(format="A4")
    pages = len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))
    TIMINGS[f"print {kind}"] = f"{pages} A4 pages"
    assert 1 <= pages <= PRINT_PAGES[kind]


@pytest.mark.parametrize("kind", LAYOUT_KINDS)
def test_no_horizontal_overflow_at_400_px(browser: Any, page_of: Callable[[str], Page], kind: str) -> None:
    """At a 400 px viewport nothing widens the page: wide tables and heat maps scroll in their own box."""
    with opened(browser, page_of(kind).path, NARROW) as pg:
        box = pg.evaluate(_OVERFLOW_JS)
    assert box["doc"] <= NARROW["width"], box["culprits"]
    assert box["body"] <= box["bodyClient"], box["culprits"]


@pytest.mark.parametrize("viewport", [VIEWPORT, NARROW], ids=["1280px", "400px"])
def test_heat_map_labels_are_readable(browser: Any, exact_page: Page, viewport: dict[str, int]) -> None:
    """Every text of every heat map (ticks, cell values, colour bar) is drawn at 11 CSS px or more."""
    with opened(browser, exact_page.path, viewport) as pg:
        sizes = pg.evaluate(_LABELS_JS)
    assert sizes, "no heat-map text found"
    TIMINGS[f"heat-map labels at {viewport['width']} px"] = f"{min(sizes):.1f}–{max(sizes):.1f} px"
    assert min(sizes) >= MIN_LABEL_PX


# --- the checker catches what it must -----------------------------------------------------------


def _tampered(tmp_path: Path, p: Page, html: str) -> Path:
    assert html != p.html, "the tampering changed nothing"
    return _write(tmp_path, f"{p.kind}-tampered", html)


def test_checker_reports_a_missing_figure(browser: Any, page_of: Callable[[str], Page], tmp_path: Path) -> None:
    p = page_of("mia")
    name = p.expected.figures[0]
    html = re.sub(rf'<figure data-figure="{re.escape(name)}">.*?</figure>', "", p.html, count=1, flags=re.S)
    got = inspect_page(browser, _tampered(tmp_path, p, html), p.expected)
    assert f"figure missing: {name}" in got.problems


def test_checker_reports_a_figure_drawn_with_zero_size(browser: Any, page_of: Callable[[str], Page],
                                                       tmp_path: Path) -> None:
    p = page_of("mia")
    name = p.expected.figures[-1]
    html = p.html.replace(f'<figure data-figure="{name}">', f'<figure data-figure="{name}" hidden>', 1)
    got = inspect_page(browser, _tampered(tmp_path, p, html), p.expected)
    assert any(f"figure {name} drawn with zero size" in x for x in got.problems), got.problems


def test_checker_reports_a_number_that_differs_from_the_json(browser: Any, page_of: Callable[[str], Page],
                                                             tmp_path: Path) -> None:
    """Every place the page prints U_MI^TVD (exact) is changed in its last digit."""
    p = page_of("exact")
    number = p.expected.numbers["tvd value"]
    wrong = number[:-1] + str((int(number[-1]) + 1) % 10)
    html = re.sub(r"(?<![\d.,\-−])" + re.escape(number) + r"(?!\d)", wrong, p.html)
    got = inspect_page(browser, _tampered(tmp_path, p, html), p.expected)
    assert f"number not shown: tvd value = {number}" in got.problems


def test_checker_reports_requests_and_console_errors(browser: Any, page_of: Callable[[str], Page],
                                                     tmp_path: Path) -> None:
    """An external image is a request (once the page's Content-Security-Policy is removed) and, with
    the policy in place, a console error (the blocked load)."""
    p = page_of("mia")
    img = '<img src="https://example.invalid/pixel.png" alt="">'
    without_csp = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", p.html)
    without_csp = without_csp.replace("</footer>", img + "</footer>")
    got = inspect_page(browser, _tampered(tmp_path, p, without_csp), p.expected)
    assert any(x.startswith("request to https://example.invalid/") for x in got.problems), got.problems
    with_csp = p.html.replace("</footer>", img + "</footer>")
    got = inspect_page(browser, _tampered(tmp_path, p, with_csp), p.expected)
    assert any(x.startswith("console error:") for x in got.problems), got.problems


def test_checker_reports_horizontal_overflow(browser: Any, page_of: Callable[[str], Page], tmp_path: Path) -> None:
    p = page_of("mia")
    html = p.html.replace("</footer>", '<div id="wide" style="width: 3000px">wide</div></footer>')
    got = inspect_page(browser, _tampered(tmp_path, p, html), p.expected)
    assert any(x.startswith("horizontal overflow") and "div#wide" in x for x in got.problems), got.problems


def test_checker_on_a_small_page(browser: Any, tmp_path: Path) -> None:
    """The checker on a page built from the report's own building blocks (no dataset needed)."""
    fig, ax = new_figure(4, 2)
    ax.plot([0, 1], [0, 1])
    body = table(["measure", "value"], [["tvd", 0.0542895]]) + figure_svg(fig, caption="a line", label="line")
    html = page("Small", "a test page", [section("One", body, anchor="one"), section("Two", "<p>x</p>", anchor="two")],
                footer="dpaudit")
    path = _write(tmp_path, "small", html)
    ok = inspect_page(browser, path, Expected({"tvd": fmt(0.0542895)}, ("line",)))
    assert ok.problems == []
    # 0.0542 is a prefix of the shown 0.05429, and 5429 a suffix of it: neither counts as shown
    bad = inspect_page(browser, path, Expected({"a": "0.0542", "b": "5429"}, ("line", "roc")))
    assert bad.problems == ["number not shown: a = 0.0542", "number not shown: b = 5429",
                            "figure missing: roc", "print: figure missing: roc"]
