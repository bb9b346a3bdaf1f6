"""benchmarks/run_all.py: its pure parts (medians, ratios, interleaving, formatting, tables), the page
docs/benchmarks.md as the rendering of its JSON, and a smallest-configuration run whose document, JSON
and figure are checked for structure.

The run uses the suite's ``smoke`` sizes (thousands of rows, one round, no warm-up) on every section
but Spark's, so it takes a few seconds (about 15 s on 2 shared cores); generated data and output go
to tmp_path.
Without DPAUDIT_DATA the Adult rows are skipped (each section notes it); CI sets it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import run_all  # noqa: E402
from _suite import adapters, config, figure, render, timing  # noqa: E402
from _suite.config import PRESETS, REPO, SECTIONS  # noqa: E402
from _suite.sections import SectionResult  # noqa: E402
from _suite.timing import Comparison  # noqa: E402


def test_medians_ratios_and_round_ratios():
    assert timing.median([5.0, 1.0, 3.0]) == 3.0
    assert timing.median([1.0, 2.0, 3.0, 10.0]) == 2.5
    assert timing.ratio([4.0, 2.0, 3.0], [1.0, 2.0, 1.5]) == 2.0
    assert timing.round_ratios([2.0, 3.0], [1.0, 3.0]) == [2.0, 1.0]
    with pytest.raises(ValueError):
        timing.median([])
    c = Comparison("w", "10", "dpaudit", "base", a=[2.0, 4.0, 3.0], b=[1.0, 1.0, 2.0])
    assert c.ok and c.ratio == 3.0 and c.spread == (1.5, 4.0)
    assert Comparison.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    stopped = Comparison("w", "10", "dpaudit", "base", status="unfinished")
    assert not stopped.ok and stopped.ratio is None and stopped.spread is None


def test_interleaving_reverses_every_round_after_a_warmup():
    calls: list[str] = []
    times = timing.interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 4)
    assert "".join(calls) == "ab" + "abbaabba"  # warm-up, then a b | b a | a b | b a
    assert [len(t) for t in times.values()] == [4, 4] and all(x >= 0 for t in times.values() for x in t)
    calls.clear()
    comps = timing.compare_many("w", "n", {"x": lambda: calls.append("x"), "y": lambda: calls.append("y")}, "base",
                                lambda: calls.append("b"), 2, warmup=0)
    assert "".join(calls) == "xyb" + "byx" and [c.a_name for c in comps] == ["x", "y"]
    assert all(len(c.b) == 2 for c in comps)


def test_formatting_and_tables():
    assert render.fmt_ratio(0.5) == "0.5×" and render.fmt_ratio(123.4) == "123×"
    assert render.fmt_seconds(0.002) == "2 ms" and render.fmt_seconds(61.26) == "61.3 s"
    table = render.markdown_table(["a", "b", "c"], [[1, "x|y", 3]], "lrr").splitlines()
    assert table == ["| a | b | c |", "|:--|--:|--:|", "| 1 | x\\|y | 3 |"]
    with pytest.raises(ValueError):
        render.markdown_table(["a"], [[1, 2]])
    comps = [Comparison("census", "1,000", "audit", "DuckDB", [2.0], [1.0]),
             Comparison("census", "9", "audit", "DuckDB", status="not built", extra={"clauses": 12})]
    page = render.Page({"repair": SectionResult("repair", "full", comps, {}, [], 1.0)}, {"env": {}})
    rows = render.comparisons(page, "repair", "+clauses").splitlines()
    assert rows[0] == "| workload | size | dpaudit | median | baseline | median | clauses | ratio | per-round range | rounds |"
    assert "| **2×** | 2–2 | 1 |" in rows[2] and "| not built | 12 | — | — | — |" in rows[3]
    assert render.comparisons(page, "mia").startswith("*Not measured")
    with pytest.raises(ValueError, match="unknown section"):
        render.comparisons(page, "nope")
    assert figure.slope([10, 100, 1000], [1.0, 10.0, 100.0]) == pytest.approx(1.0)
    assert figure.slope([10], [1.0]) is None


def test_the_startup_section_is_judged_on_its_two_targets():
    """Section 8: ``dpaudit --help`` against 0.3 s (seconds, not a ratio), the small audit against 1.5×
    the baseline, in any configuration (the workload does not shrink); the other sides are table rows only."""
    result = {"name": "Start-up, fresh processes", "baseline": "baseline: python -c \"import duckdb, pandas\"",
              "sides": {"baseline: python -c \"import duckdb, pandas\"": {"seconds": [0.4, 0.4, 0.4]},
                        "dpaudit --help": {"seconds": [0.08, 0.09, 0.1]},
                        'dpaudit fairness adult -c "sex ⊥ income" --exact': {"seconds": [0.7, 0.64, 0.6]},
                        'python -c "pass"': {"seconds": [0.03, 0.03, 0.03]}},
              "check": "every side exited 0"}
    comps = adapters.comparisons(result, "fresh process", "bench_startup.run_startup", workload="Start-up")
    page = render.Page({"startup": SectionResult("startup", "quick", comps, {}, [], 1.0)}, {"env": {}})
    rows = render.summary(page).splitlines()[2:]
    assert rows == ["| 8 | Start-up: dpaudit --help, seconds | fresh process | **0.09 s** | ≤ 0.3 s | met |",
                    '| 8 | Start-up: dpaudit fairness adult -c "sex ⊥ income" --exact / python -c "import duckdb, '
                    'pandas" | fresh process | **1.6×** | ≤ 1.5× | **missed** |']
    assert "| Start-up | fresh process | python -c \"pass\" |" in render.comparisons(page, "startup")


def test_the_startup_sides_run_this_tree_from_bytecode_unless_asked(monkeypatch, tmp_path):
    """bench_startup: the tree first on PYTHONPATH; its bytecode written once (as installed) even when
    PYTHONDONTWRITEBYTECODE is set around the script, or, ``--from-source``, never."""
    import bench_startup

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("PYTHONPATH", "elsewhere")
    installed, source = bench_startup._env(tmp_path, True), bench_startup._env(tmp_path, False)
    assert "PYTHONDONTWRITEBYTECODE" not in installed and source["PYTHONDONTWRITEBYTECODE"] == "1"
    assert installed["PYTHONPATH"].split(os.pathsep) == [str(tmp_path), "elsewhere"] == source["PYTHONPATH"].split(os.pathsep)


def test_section_selection():
    assert run_all.section_keys(None) == list(SECTIONS)
    assert run_all.section_keys(["scaling", "1,4"]) == ["fairness", "mia", "scaling"]
    assert run_all.section_keys(["7"]) == ["spark"] and run_all.section_keys(["8"]) == ["startup"]
    with pytest.raises(SystemExit):
        run_all.section_keys(["nope"])


@pytest.mark.parametrize("inside", ["benchmarks/_data", ".", "docs/results/cache"])
def test_generated_data_never_goes_into_the_source_tree(tmp_path, capsys, inside):
    with pytest.raises(SystemExit) as exc:
        run_all.main(["--smoke", "--data-dir", str(REPO / inside), "--out", str(tmp_path / "b.md")])
    assert exc.value.code == 2 and "inside the source tree" in capsys.readouterr().err
    assert not (tmp_path / "b.md").exists()
    for cfg in PRESETS.values():
        assert cfg.data_dir.name == "dpaudit-bench" and not cfg.data_dir.resolve().is_relative_to(REPO)
    assert not config.inside_repo(tmp_path) and config.inside_repo(REPO / "benchmarks")


def test_the_other_scripts_run_functions_are_what_the_suite_calls():
    """The suite times the scripts' own run functions (no second copy of their workloads)."""
    import bench_fairness
    import bench_mia
    import bench_mia_train
    import bench_spark

    for module, name in [(bench_fairness, "run_adult"), (bench_fairness, "run_paper_tc"),
                         (bench_fairness, "run_census"), (bench_fairness, "run_frames"),
                         (bench_fairness, "census_file"), (bench_mia, "run_eval"), (bench_mia_train, "sklearn_loop"),
                         (bench_spark, "run_spark"), (bench_spark, "run_spark_adult")]:
        assert callable(getattr(module, name)), (module.__name__, name)
    assert adapters.tc_pairs() and all(len(pair) == 2 for pair in adapters.tc_pairs())


def test_script_results_become_comparisons():
    result = {"name": "census (Parquet file)", "rows": 10, "baseline": "baseline: DuckDB group-by ×4",
              "sides": {"baseline: DuckDB group-by ×4": {"seconds": [1.0, 2.0, 3.0]},
                        "audit tvd": {"seconds": [2.0, 3.0, 4.0]}, "count_tables": {"seconds": [1.0, 1.0, 1.0]}},
              "load": {"before": [1.5, 1.0, 0.5], "after": [2.5, 1.0, 0.5]}, "check": "equal",
              "peak_rss_mib": {"audit": 200.0, "baseline": 150.0}, "sql": ["SELECT 1"],
              "rss": {"audit tvd": {"own_peak_mib": 12.0}}}
    comps = adapters.comparisons(result, "10", "bench_fairness.run_census")
    assert [c.a_name for c in comps] == ["audit, U_MI^TVD", "count_tables only"]
    first = comps[0]
    assert first.b_name == "DuckDB group-by ×4" and first.ratio == 1.5 and first.load == (1.5, 2.5)
    assert first.check == "equal" and first.extra["peak_rss_mib"] == {"audit": 200.0, "baseline": 150.0}
    assert first.extra["own_peak_mib"] == 12.0 and "own_peak_mib" not in comps[1].extra
    assert "sql" not in first.extra and first.extra["source"] == "bench_fairness.run_census"


def test_spark_rows(monkeypatch, tmp_path):
    """Section 7 turns bench_spark.run_spark's result into rows, passing the suite's sizes."""
    import bench_spark

    seen = {}

    def run_spark(rows, *, repeat, warmup, data_dir, seed):
        seen.update(rows=rows, repeat=repeat, data_dir=data_dir)
        return {"name": "census on Spark", "rows": rows, "baseline": "b",
                "sides": {"b": {"seconds": [1.0]}, "audit spark": {"seconds": [3.0]}}}

    monkeypatch.setattr(bench_spark, "run_spark", run_spark)
    (comp,) = adapters.spark(10, tmp_path, repeat=2, warmup=0)
    assert seen == {"rows": 10, "repeat": 2, "data_dir": tmp_path} and comp.ratio == 3.0 and comp.a_name == "audit spark"


def test_smallest_run_writes_the_document_json_and_figure(tmp_path):
    out = tmp_path / "docs" / "benchmarks.md"
    cfg = PRESETS["smoke"].replace(data_dir=tmp_path / "cache")
    keys = [k for k in SECTIONS if k != "spark"]  # a JVM start alone takes ~10 s: test_spark_hook covers section 7
    results = run_all.run(cfg, keys, out, keep_others=False)
    text = out.read_text(encoding="utf-8")
    json_path, figure = run_all.side_paths(out)

    # header: generated, how to regenerate, how to read; the machine's state
    assert text.startswith("# Benchmarks\n") and "<!-- generated by benchmarks/run_all.py" in text
    assert "{{" not in text  # every placeholder of page.md filled in
    assert "python benchmarks/run_all.py" in text and "--quick" in text and "Generated file" in text
    assert "**ratio**" in text and "interleaved" in text and "## Machine" in text
    assert "## Summary" in text and "| § | comparison | size | measured | target | verdict |" in text
    assert "≤ 15×" in text and "≤ 1.1×" in text  # the targets beside the measured ratios
    for row in ("CPUs", "load average (1 / 5 / 15 min) at the start", "Python", "numpy", "duckdb", "commit"):
        assert f"| {row} |" in text, row

    # one heading per section, in order; one row of the sections table per section run; tables of ratios
    assert re.findall(r"^## (\d)\. ", text, flags=re.M) == [str(i + 1) for i in range(len(SECTIONS))]
    assert re.findall(r"^\| \d \| (\w+) \| \d{4}-", text, flags=re.M) == keys
    assert "*Not measured: the JSON has no `spark` section.*" in text
    assert re.search(r"\| \*\*[0-9.e+-]+×\*\* \|", text)
    for key in keys:
        assert results[key].comparisons or results[key].notes, key
        assert not any(n.startswith("section failed") for n in results[key].notes), results[key].notes
    census = [c for c in results["fairness"].comparisons if c.workload.startswith("census")]
    assert census and all(c.ok and "count table equals the baseline's, cell for cell" in c.check for c in census)
    assert all(c.ok for c in results["mia"].comparisons)

    # the figure is written and linked; the JSON holds every repeat and rebuilds the same document
    assert figure.is_file() and figure.stat().st_size > 10_000 and figure.read_bytes()[:4] == b"\x89PNG"
    assert "](results/benchmarks/scaling.png)" in text
    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert set(data["sections"]) == set(keys) and data["run"]["env"]["cpus"]
    assert run_all.render_only(out) == text  # --render-only: the same document, byte for byte, from the JSON
    out.unlink()
    assert run_all.main(["--render-only", "--out", str(out)]) == 0 and out.read_bytes() == text.encode("utf-8")
    assert {k: SectionResult.from_dict(v).comparisons for k, v in data["sections"].items()} == \
        {k: r.comparisons for k, r in results.items()}

    # --only reruns one section and keeps the others
    again = run_all.run(cfg, ["mia"], out, keep_others=True)
    assert set(again) == set(keys) and again["fairness"].comparisons == results["fairness"].comparisons
    assert again["mia"].env["date"] >= results["mia"].env["date"]


def _stored() -> tuple[dict[str, SectionResult], dict]:
    data = json.loads((REPO / "docs" / "results" / "benchmarks" / "benchmarks.json").read_text(encoding="utf-8"))
    return {k: SectionResult.from_dict(v) for k, v in data["sections"].items()}, data["run"]


def test_the_page_is_the_rendering_of_its_json():
    """docs/benchmarks.md is page.md with its tables rendered from the JSON beside it, nothing else."""
    results, run = _stored()
    page = render.render_document(results, run, figure_rel="results/benchmarks/scaling.png")
    assert page == (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8"), \
        "docs/benchmarks.md is stale: python benchmarks/run_all.py --render-only"


def test_a_changed_number_in_the_json_changes_the_page():
    results, run = _stored()
    before = render.render_document(results, run)
    first = results["fairness"].comparisons[0]
    old = f"**{render.fmt_ratio(first.ratio)}**"
    first.a = [2 * x for x in first.a]  # dpaudit twice as slow
    after = render.render_document(results, run)
    assert after != before
    new = f"**{render.fmt_ratio(first.ratio)}**"
    assert new != old
    row = f"| {first.workload} | {first.size} | {first.a_name} |"
    assert [line for line in after.splitlines() if line.startswith(row)][0].count(new) == 1  # its table row
    assert [line for line in after.splitlines() if line.startswith("| 1 |") and first.size in line][0].count(new) == 1


def test_the_template_has_every_section_and_only_known_placeholders():
    template = render.TEMPLATE.read_text(encoding="utf-8")
    for key in SECTIONS:
        assert f"{{{{comparisons {key}" in template, key
    with pytest.raises(ValueError, match="unknown placeholder kind"):
        render.render_document({}, {"env": {}}, template="{{prose fairness}}\n")


@pytest.mark.parametrize("module", [timing, render, figure, run_all], ids=lambda m: m.__name__)
def test_examples_in_docstrings(module):
    import doctest

    assert doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0
