"""The sections' text in docs/benchmarks.md: each section's introduction (what is timed against what) and
the sentence that sums up its measured ratios."""

from __future__ import annotations

from .context import SectionResult
from .figure import scaling_series, slope
from .tables import fmt_ratio

INTRO = {
    "fairness": (
        "`dpaudit.audit` on the paper's four criteria of each dataset, exact, against **the bare DuckDB "
        "group-by counts a user would write by hand**: one `SELECT A, P, O, count(*) … GROUP BY ALL` per "
        "criterion, numeric columns binned by integer division, on a fresh connection, each result fetched "
        "to numpy. That is the least work any tool built on DuckDB must do to get the count tables, so the "
        "ideal ratio is about 1×. dpaudit sides: U_MI^TVD, U_TC, both, and `count_tables` alone. Data: the "
        "real Adult table (a pandas frame; the baseline runs DuckDB on that frame), the synthetic census "
        "Parquet file (`dpaudit.datasets.synthetic.write_census`, the paper's IPUMS-CPS criteria, written "
        "once to the cache folder) and the same census rows as in-memory pandas / polars frames. U_TC on "
        "Adult is also timed against the paper's reference implementation (over the cells that occur, its "
        "definition; baseline as the paper's experiments time it, on a label-encoded frame). The workloads "
        "are `benchmarks/bench_fairness.py`'s, imported."
    ),
    "references": (
        "The same columns measured the way users measure them today: fairlearn's "
        "`demographic_parity_difference`, scikit-learn's `mutual_info_score` (conditioned on A by a "
        "weighted sum over the blocks), and the paper's U_MI^TVD and U_TC formulas written in plain pandas "
        "(one `groupby().size()`, an `unstack` to a (A, P) × O grid, the probabilities as frame arithmetic; "
        "`benchmarks/_suite/references.py`). The pandas and scikit-learn values equal dpaudit's exact "
        "values (checked below in the run and in `tests/test_bench_references.py`), so these rows compare "
        "like with like; fairlearn's gap is a different quantity on the same columns. dpaudit runs on the "
        "same in-memory frame, on the same criteria as the baseline of its row."
    ),
    "repair": (
        "The paper computes U_R by weighted MaxSAT on a tuple-level self-join (spec §2.3); dpaudit solves "
        "`bag` and `set` exactly from the count tables. Baseline: the paper's encoding made complete, "
        "written by `dpaudit.repair_wcnf` (DIMACS WCNF), parsed by pysat and solved by RC2, on seeded "
        "samples of Adult of growing size, the paper's four criteria, as long as the formula stays below "
        "the clause cap and RC2 finishes within the time limit (its hard clauses grow with the fourth power "
        "of a block's size under `bag`). The baseline's time includes writing and parsing the formula "
        "(columns *encode* and *solve* split it). Both sides give the same optimum on every row. The last "
        "row compares the solvers alone on all of Adult's count tables: dpaudit's `u_r` against RC2 on "
        "the compressed per-block formulation of `benchmarks/bench_repair_solvers.py`."
    ),
    "mia": (
        "`dpaudit.mia.evaluate.evaluate` (every rule — naive, PP-calibrated with N(0,1), Student-t and "
        "rank thresholds, mean per-record — at α = 10⁻² and 10⁻³) on synthetic per-record Gaussian LiRA "
        "scores, without and with two-axis bootstrap CIs, against **one `np.sort` of the flattened score "
        "matrix**: the least any exact pooled ROC must do."
    ),
    "train": (
        "`dpaudit.mia.train.train_run` (logistic regression on Adult, efficient-LiRA keep matrix, run "
        "directory written) with both trainers on one worker, against **a plain scikit-learn loop** "
        "(`bench_mia_train.sklearn_loop`: fit the same pipeline per model, `predict_proba` on the pool, "
        "nothing written). Below 1: dpaudit is faster."
    ),
    "scaling": (
        "Time against size on log–log axes: the census audit and its bare group-by as rows grow, and MIA "
        "evaluation (no bootstrap) and one sort of the scores as the number of models M grows (N+ fixed). "
        "Sizes measured in section 1 are reused, not rerun. The slope of a line is the exponent of the "
        "power law (1 = linear)."
    ),
    "spark": (
        "`dpaudit.audit(spark_dataframe, …)` and `audit(path, engine=\"spark\")` on a local-mode "
        "SparkSession (the counting pushed down to Spark, only count tables collected) against **the bare "
        "Spark group-by a user would write by hand** (one `df.groupBy(cols).count().collect()` per "
        "criterion, numeric columns binned by `floor`), on Adult (a cached Spark DataFrame) and the census "
        "Parquet file. The DuckDB rows (dpaudit's default path and the bare DuckDB group-by of section 1) "
        "against the same Spark baseline show what local-mode Spark costs on one machine. Measured by "
        "`benchmarks/bench_spark.py`."
    ),
}


def _summary(result: SectionResult) -> str:
    comps = result.comparisons
    ok = [c for c in comps if c.ok]
    if not ok:
        return ""
    key = result.key
    if key in ("fairness", "spark"):
        parts = [f"{c.workload.split(' (')[0]} {c.size} rows {fmt_ratio(c.ratio)}" for c in ok
                 if c.a_name == "audit, U_MI^TVD" or (key == "spark" and c.a_name.startswith("audit("))]
        both = [f"{c.workload.split(' (')[0]} {c.size} rows {fmt_ratio(c.ratio)}" for c in ok
                if c.a_name == "audit, U_MI^TVD + U_TC"]
        text = ("Audit / bare group-by" + (" (Spark)" if key == "spark" else ", U_MI^TVD") + ": "
                + "; ".join(parts) + "." if parts else "")
        if both:
            text += " U_MI^TVD + U_TC: " + "; ".join(both) + "."
        return text
    if key == "references":
        groups: dict[str, list[str]] = {}
        for c in ok:
            groups.setdefault(f"{c.workload.split(',')[0]} ({c.size} rows)", []).append(
                f"{fmt_ratio(c.ratio)} {c.b_name}")
        return "dpaudit's time over theirs — " + "; ".join(
            f"{name}: {', '.join(parts)}" for name, parts in groups.items()) + "."
    if key == "repair":
        out = []
        for sem in ("bag", "set"):
            rows = [c for c in ok if c.workload.endswith(sem)]
            if rows:
                out.append(f"`{sem}`: RC2 finished up to {rows[-1].size} rows ({rows[-1].extra.get('clauses', 0):,} "
                           f"clauses), where dpaudit took {fmt_ratio(rows[-1].ratio)} its time")
        stopped = [c for c in comps if not c.ok]
        text = "; ".join(out) + "."
        if stopped:
            text += " Stopped: " + "; ".join(f"{c.workload} at {c.size} rows ({c.status})" for c in stopped) + "."
        return text
    if key in ("mia", "train"):
        return "; ".join(f"{c.a_name}: {fmt_ratio(c.ratio)}"
                         + (f" (about {1 / c.ratio:.3g} times faster)" if c.ratio and c.ratio < 1 else "")
                         for c in ok) + "."
    if key == "scaling":
        texts = []
        for axis, unit in (("rows", "rows"), ("models", "M")):
            series = scaling_series(comps, axis)
            for name, points in series.items():
                s = slope([p[0] for p in points], [p[1] for p in points])
                if s is not None:
                    texts.append(f"{name}: time ∝ {unit}^{s:.2f}")
        return "Fitted exponents — " + "; ".join(texts) + "." if texts else ""
    return ""
