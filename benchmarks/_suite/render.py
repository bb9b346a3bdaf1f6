"""docs/benchmarks.md: the hand-written text of ``benchmarks/page.md`` with each placeholder replaced by a
table rendered from the measured results (the JSON written beside the page).

A placeholder is a line ``{{kind}}`` or ``{{kind section args…}}``; :data:`KINDS` maps each kind to the
function that renders it, and every table goes through :func:`markdown_table`. ``comparisons`` takes
filters on a row's ``extra`` (``axis=rows``) and extra columns (``+clauses``, see :data:`COLUMNS`).

Pure functions of the results (no timing here), so the page is rebuilt from its JSON byte for byte.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import adapters
from .config import EVERY_SIZE, SECONDS_TARGETS, SECTIONS, TARGETS
from .context import SectionResult
from .figure import scaling_series, slope
from .timing import Comparison, median

TEMPLATE = Path(__file__).resolve().parents[1] / "page.md"
PLACEHOLDER = re.compile(r"^\{\{(\w+)((?: [^ {}]+)*)\}\}$", re.M)


# ---------------------------------------------------------------------------------------------------
# numbers as text, and the one table renderer
# ---------------------------------------------------------------------------------------------------
def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def fmt_seconds(s: float | None) -> str:
    """Seconds with three significant digits; milliseconds below 10 ms.

    >>> fmt_seconds(12.345), fmt_seconds(0.0512), fmt_seconds(0.000512), fmt_seconds(None)
    ('12.3 s', '0.0512 s', '0.512 ms', '—')
    """
    if not _finite(s):
        return "—"
    return f"{s * 1e3:.3g} ms" if s < 0.01 else f"{s:.3g} s"  # type: ignore[operator]


def fmt_ratio(r: float | None) -> str:
    """A ratio with three significant digits and a ×.

    >>> fmt_ratio(1.0468), fmt_ratio(95.27), fmt_ratio(0.01234), fmt_ratio(None)
    ('1.05×', '95.3×', '0.0123×', '—')
    """
    return f"{r:.3g}×" if _finite(r) else "—"


def fmt_range(span: tuple[float, float] | None) -> str:
    """``lo–hi`` of the per-round ratios.

    >>> fmt_range((0.91, 1.2)), fmt_range(None)
    ('0.91–1.2', '—')
    """
    return "—" if span is None else f"{span[0]:.3g}–{span[1]:.3g}"


def fmt_load(values: Sequence[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values) if values else "n/a"


def fmt_mib(value: Any) -> str:
    return f"{value:,.0f} MiB" if _finite(value) else "—"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table; ``align`` holds one of ``l``/``r`` per column (default: first left, rest right).

    >>> print(markdown_table(["a", "b"], [["x", 1], ["y|z", 2]]))
    | a | b |
    |:--|--:|
    | x | 1 |
    | y\\|z | 2 |
    """
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header):
        raise ValueError("one alignment per column")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(":--" if a == "l" else "--:" for a in align) + "|"]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"row {row!r} has {len(row)} cells for {len(header)} columns")
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# the kinds of placeholder
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Page:
    """What the placeholders are rendered from: every section's result, the run's record, the figure."""

    results: dict[str, SectionResult]
    run: dict[str, Any]
    figure_rel: str | None = None

    def section(self, key: str) -> SectionResult | None:
        if key not in SECTIONS:
            raise ValueError(f"unknown section {key!r} in a placeholder of {TEMPLATE.name}")
        return self.results.get(key)


def _med(values: Sequence[float]) -> float | None:
    return median(values) if values else None


def _value(c: Comparison) -> str:
    return f"{c.extra['value']:,.0f}" if "value" in c.extra else "—"


def _clauses(c: Comparison) -> str:
    e = c.extra
    return f"{e['clauses']:,}" if "clauses" in e else f"{e['blocks']} blocks" if "blocks" in e else "—"


#: The columns of a comparison table: key → (header, alignment, cell).
COLUMNS: dict[str, tuple[str, str, Callable[[Comparison], str]]] = {
    "workload": ("workload", "l", lambda c: c.workload),
    "size": ("size", "r", lambda c: c.size),
    "dpaudit": ("dpaudit", "l", lambda c: c.a_name),
    "a": ("median", "r", lambda c: fmt_seconds(_med(c.a))),
    "baseline": ("baseline", "l", lambda c: c.b_name),
    "b": ("median", "r", lambda c: fmt_seconds(_med(c.b)) if c.ok else c.status),
    "clauses": ("clauses", "r", _clauses),
    "U_R": ("U_R", "r", _value),
    "encode": ("encode", "r", lambda c: fmt_seconds(c.extra.get("encode"))),
    "solve": ("solve", "r", lambda c: fmt_seconds(c.extra.get("solve"))),
    "faster": ("times faster", "r", lambda c: f"{1 / c.ratio:.3g}" if c.ratio and c.ratio < 1 else "—"),
    "ratio": ("ratio", "r", lambda c: f"**{fmt_ratio(c.ratio)}**" if c.ok else "—"),
    "range": ("per-round range", "r", lambda c: fmt_range(c.spread)),
    "rounds": ("rounds", "r", lambda c: str(len(c.a)) if c.ok else "—"),
}
DEFAULT_COLUMNS = ("workload", "size", "dpaudit", "a", "baseline", "b", "ratio", "range", "rounds")


def comparisons(page: Page, key: str, *args: str) -> str:
    """The section's comparisons (those whose ``extra`` matches every ``name=value``), one row each;
    ``+column`` adds a column of :data:`COLUMNS` before the ratio."""
    result = page.section(key)
    if result is None:
        return f"*Not measured: the JSON has no `{key}` section.*"
    filters = [a.split("=", 1) for a in args if "=" in a]
    chosen = [c for c in result.comparisons if all(str(c.extra.get(k)) == v for k, v in filters)]
    extra = [a[1:] for a in args if a.startswith("+")]
    keys = [*DEFAULT_COLUMNS[:6], *extra, *DEFAULT_COLUMNS[6:]]
    cols = [COLUMNS[k] for k in keys]
    if not chosen:
        return ""
    return markdown_table([h for h, _, _ in cols], [[cell(c) for _, _, cell in cols] for c in chosen],
                          "".join(a for _, a, _ in cols))


def rss(page: Page, key: str) -> str:
    """Peak RSS of each side alone in a fresh process, where a workload measured it (once per workload)."""
    result = page.section(key)
    comps = result.comparisons if result else []
    rows, seen = [], set()
    for c in comps:
        peak = c.extra.get("peak_rss_mib")
        if peak is None or (c.workload, c.size) in seen:
            continue
        seen.add((c.workload, c.size))
        own = {o.a_name: o.extra["own_peak_mib"] for o in comps
               if (o.workload, o.size) == (c.workload, c.size) and "own_peak_mib" in o.extra}
        sides = ", ".join(f"{k} {fmt_mib(v)}" + (f" (the side's own: {fmt_mib(own[k])})" if k in own else "")
                          for k, v in peak.items()) if isinstance(peak, dict) else fmt_mib(peak)
        data = c.extra.get("mib", c.extra.get("matrix_mib"))
        what = "file" if "mib" in c.extra else "score matrix"
        rows.append([c.workload, c.size, sides, f"{what} {fmt_mib(data)}" if data is not None else "—"])
    return markdown_table(["workload", "size", "peak RSS (fresh process)", "data"], rows, "lrll") if rows else ""


def checks(page: Page, key: str) -> str:
    """The untimed checks of the section, once each, as a list."""
    result = page.section(key)
    lines = dict.fromkeys(f"- {c.workload}, {c.size}: {c.check}" for c in (result.comparisons if result else [])
                          if c.check)
    return "Checks (untimed, same run):\n\n" + "\n".join(lines) if lines else ""


def notes(page: Page, key: str) -> str:
    """What the section's run noted (data it skipped, a failure)."""
    result = page.section(key)
    return "\n\n".join(f"> Note: {note}" for note in (result.notes if result else []))


def exponents(page: Page, key: str) -> str:
    """The fitted power-law exponent of every line of the scaling section (see ``figure``)."""
    result = page.section(key)
    rows = []
    for axis, unit in (("rows", "rows"), ("models", "M")):
        for name, points in scaling_series(result.comparisons if result else [], axis).items():
            s = slope([p[0] for p in points], [p[1] for p in points])
            if s is not None:
                rows.append([name, unit, f"{s:.2f}"])
    return markdown_table(["line", "size", "time ∝ size^"], rows, "llr") if rows else ""


def figure(page: Page) -> str:
    return f"![log–log scaling of the audit and MIA evaluation]({page.figure_rel})" if page.figure_rel else ""


def machine(page: Page) -> str:
    """The run that wrote the JSON last (when, what, how long) and the machine it ran on."""
    run, env = page.run, page.run["env"]
    versions = env.get("versions", {})
    order = [k for k in SECTIONS if k in page.results]
    rows = [
        ["written", env.get("date", "?")],
        ["configuration", ", ".join(sorted({r.mode for r in page.results.values()}))],
        ["sections run last", ", ".join(run.get("sections", order))],
        ["seconds of that run", f"{run.get('seconds', 0):.0f}"],
        ["CPUs", env.get("cpus", "?")],
        ["load average (1 / 5 / 15 min) at the start", fmt_load(env.get("loadavg") or [])],
        ["load average at the end", fmt_load(run.get("load_end") or [])],
        ["platform", f"{env.get('platform', '?')} ({env.get('machine', '?')})"],
        ["Python", versions.get("python", "?")],
        *[[name, versions[name]] for name in ("dpaudit", "numpy", "duckdb", "pandas", "pyarrow", "narwhals",
                                              "scikit-learn", "fairlearn", "python-sat", "matplotlib")
          if name in versions],
        ["commit", f"`{env.get('commit') or 'n/a'}`"],
    ]
    return markdown_table(["", ""], rows, "ll")


def sections(page: Page) -> str:
    """When and how each section was measured."""
    rows = []
    for key in SECTIONS:
        r = page.results.get(key)
        if r is not None:
            rows.append([SECTIONS.index(key) + 1, key, r.env.get("date", "?"), r.mode, f"`{r.env.get('commit') or 'n/a'}`",
                         f"{r.seconds:.0f}", fmt_load(r.env.get("loadavg") or []), fmt_load(r.load_end),
                         r.env.get("cpus", "?")])
    return markdown_table(["§", "section", "measured", "configuration", "commit", "seconds",
                           "load average at the start", "at the end", "CPUs"], rows, "rllllrrrr")


# ---------------------------------------------------------------------------------------------------
# the summary: headline comparisons beside their targets (issues 14 and 25)
# ---------------------------------------------------------------------------------------------------
Headline = tuple[str, Comparison, str | None, str | None, float | None, str]


def _ratio(c: Comparison) -> tuple[float | None, str]:
    return c.ratio, f"**{fmt_ratio(c.ratio)}**" if c.ok else c.status


def _headlines(results: dict[str, SectionResult]) -> Iterator[Headline]:
    """(section, comparison, what it compares or None for "a / b", key of its target in ``TARGETS`` or None,
    the measured value, its text) of every row of the summary."""
    def comps(key: str) -> list[Comparison]:
        return results[key].comparisons if key in results else []

    pairs = adapters.tc_pairs() if "fairness" in results else ()  # U_TC: the like-for-like pairs
    codes = adapters.label(adapters.codes_side()) if "fairness" in results else None
    for c in comps("fairness"):
        if c.a_name in ("audit, U_MI^TVD", "audit, U_MI^TVD + U_TC") and c.workload.startswith(("Adult (", "census (P")):
            yield "fairness", c, None, "frame" if c.workload.startswith("Adult (") else "census", *_ratio(c)
        elif c.b_name == codes:
            yield "fairness", c, None, "codes", *_ratio(c)
        elif (c.a_name, c.b_name) in pairs:
            yield "fairness", c, None, "paper_tc", *_ratio(c)
    census = [c for c in comps("fairness") if c.workload.startswith("census (P") and "peak_rss_mib" in c.extra]
    if census:
        big = max(census, key=lambda c: int(c.size.replace(",", "")))
        peak = big.extra["peak_rss_mib"]
        value = float(peak["audit"] if isinstance(peak, dict) else peak)
        yield "fairness", big, "peak RSS of the audit (fresh process)", "rss_mib", value, fmt_mib(value)
    yield from (("references", c, None, None, *_ratio(c)) for c in comps("references")
                if c.ok and c.workload.startswith("Adult"))
    samples = [c for c in comps("repair") if c.ok and c.workload.startswith("Adult sample")]
    for workload in dict.fromkeys(c.workload for c in samples):
        last = [c for c in samples if c.workload == workload][-1]
        yield "repair", last, f"{last.a_name} / {last.b_name}, largest sample RC2 finished", None, *_ratio(last)
    yield from (("repair", c, None, None, *_ratio(c)) for c in comps("repair")
                if c.workload.startswith("Adult, bag, count tables"))
    for c in comps("mia"):
        found = re.search(r"n_boot\s*=\s*(\d+)", c.a_name)
        yield "mia", c, None, {"0": "mia", "200": "mia_boot"}.get(found.group(1) if found else ""), *_ratio(c)
    for c in comps("mia"):
        if "own_peak_mib" in c.extra and c.extra.get("matrix_mib"):
            own, matrix = float(c.extra["own_peak_mib"]), float(c.extra["matrix_mib"])
            yield ("mia", c, f"peak RSS {c.a_name} adds / the score matrix", "mia_rss", own / matrix,
                   f"**{fmt_ratio(own / matrix)}** ({fmt_mib(own)} over {fmt_mib(matrix)})")
    yield from (("train", c, None, None, *_ratio(c)) for c in comps("train"))
    yield from (("spark", c, None, "spark", *_ratio(c)) for c in comps("spark")
                if c.a_name.startswith("audit(") and "DuckDB" not in c.a_name)
    for c in comps("startup"):  # bench_startup.py's sides: the help judged in seconds, the audit as a ratio
        if c.a_name.endswith("--help") and c.ok:
            seconds = median(c.a)
            yield "startup", c, f"{c.a_name}, seconds", "help_s", seconds, f"**{fmt_seconds(seconds)}**"
        elif c.a_name.startswith("dpaudit fairness"):
            yield "startup", c, None, "startup", *_ratio(c)


def summary(page: Page) -> str:
    rows = []
    for key, c, what, target, value, text in _headlines(page.results):
        limit = "" if target is None else f"≤ {TARGETS[target]:,.0f} MiB" if target == "rss_mib" else \
            f"≤ {TARGETS[target]:g} s" if target in SECONDS_TARGETS else f"≤ {TARGETS[target]:g}×"
        verdict = ""
        if target is not None and value is not None:  # judged on the full configuration's sizes only
            full = target in EVERY_SIZE or (page.results[key].mode == "full"
                                            and (target != "rss_mib" or c.size == "100,000,000"))
            verdict = "n/a (smaller sizes than the target's)" if not full else \
                "met" if value <= TARGETS[target] else "**missed**"
        rows.append([SECTIONS.index(key) + 1, f"{c.workload.split(' (')[0]}: {what or f'{c.a_name} / {c.b_name}'}",
                     c.size, text, limit, verdict])
    if not rows:
        return "*No section measured yet.*"
    return markdown_table(["§", "comparison", "size", "measured", "target", "verdict"], rows, "rlrrrl")


# ---------------------------------------------------------------------------------------------------
# the page
# ---------------------------------------------------------------------------------------------------
KINDS: dict[str, Callable[..., str]] = {
    "summary": summary, "machine": machine, "sections": sections, "comparisons": comparisons, "rss": rss,
    "checks": checks, "notes": notes, "exponents": exponents, "figure": figure,
}


def render_document(results: dict[str, SectionResult], run: dict[str, Any], *, figure_rel: str | None = None,
                    template: str | None = None) -> str:
    """``benchmarks/page.md`` (or ``template``) with every placeholder replaced by its rendering; a
    placeholder that renders nothing is dropped with its blank line."""
    page = Page(results, run, figure_rel)
    text = TEMPLATE.read_text(encoding="utf-8") if template is None else template

    def fill(match: re.Match[str]) -> str:
        kind, args = match.group(1), match.group(2).split()
        if kind not in KINDS:
            raise ValueError(f"unknown placeholder kind {kind!r}; known: {', '.join(KINDS)}")
        return KINDS[kind](page, *args)

    text = PLACEHOLDER.sub(fill, text)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"
