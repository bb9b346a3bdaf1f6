"""Experiment 2 — runtime against the number of rows and the number of criteria.

Paper's claim (spec §5.2, headline): Algorithm 3 (U_TC) is fastest, then Algorithm 1 (U_MI^TVD);
Algorithm 2 (U_R, MaxSAT) is 10²–10³× slower. dpaudit splits every audit into one counting pass
(DuckDB over the Parquet file, all criteria at once) and per-measure work on the count tables, so both
are timed: ``count_seconds`` once per file, ``seconds`` per measure on the tables (each the best of
``repeats`` runs, measures interleaved). The ratios to U_TC in the summary are end to end (count +
measure), as each of the paper's algorithms reads the data; the measure-only ratios are beside them.

* rows: the census generator (the IPUMS-CPS stand-in, its four paper criteria) written to Parquet at
  10⁴ … 10⁷ rows, and Adult subsamples up to its 48,842 rows;
* criteria: Adult with the first 1 … 4 criteria of its preset.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import Config, criteria_of, figure, load, measures

from dpaudit.counting import count_tables
from dpaudit.criteria import parse_criteria

NAME = "runtime"
CENSUS_SIZES, QUICK_CENSUS_SIZES = (10_000, 100_000, 1_000_000, 10_000_000), (10_000, 30_000)
ADULT_SIZES, QUICK_ADULT_SIZES = (3_000, 10_000, 30_000, 48_842), (1_000, 3_000)


def _time_measures(data: Any, schema: Any, criteria: tuple[str, ...], config: Config, repeats: int) -> dict[str, float]:
    crits = parse_criteria(criteria)
    count = min(_seconds(lambda: count_tables(data, crits, schema)) for _ in range(repeats))
    tables = count_tables(data, crits, schema)
    best = {key: float("inf") for key in measures(config)}
    for _ in range(repeats):
        for key, measure in measures(config).items():  # interleaved
            best[key] = min(best[key], _seconds(lambda m=measure: m.assess(tables, details=False)))
    return {"count": count, **best, "counted_rows": tables[0].n}


def _seconds(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(config: Config) -> dict[str, Any]:
    from dpaudit.datasets.synthetic import write_census
    from dpaudit.datasets.synthetic.census import CENSUS_SCHEMA

    repeats = 1 if config.quick else 2
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="dpaudit-runtime-") as tmp:
        for n in QUICK_CENSUS_SIZES if config.quick else CENSUS_SIZES:
            path = Path(tmp) / f"census_{n}.parquet"
            start = time.perf_counter()
            write_census(path, n, seed=config.seed)
            generated = time.perf_counter() - start
            times = _time_measures(str(path), CENSUS_SCHEMA, criteria_of("census"), config, repeats)
            rows.append({"series": "rows", "dataset": "census", "rows": n, "criteria": 4,
                         "generate_seconds": generated, **_named(times)})
            path.unlink()
    adult, schema = load("adult", False)
    rng = np.random.default_rng(config.seed)
    for n in QUICK_ADULT_SIZES if config.quick else ADULT_SIZES:
        sample = adult.iloc[np.sort(rng.choice(len(adult), size=min(n, len(adult)), replace=False))]
        times = _time_measures(sample, schema, criteria_of("adult"), config, repeats)
        rows.append({"series": "rows", "dataset": "adult", "rows": len(sample), "criteria": 4, **_named(times)})
    for j in range(1, len(criteria_of("adult")) + 1):
        times = _time_measures(adult, schema, criteria_of("adult")[:j], config, repeats)
        rows.append({"series": "criteria", "dataset": "adult", "rows": len(adult), "criteria": j, **_named(times)})

    keys = list(measures(config))
    largest = max((r for r in rows if r["dataset"] == "census"), key=lambda r: r["rows"])
    # end to end (one counting pass + the measure), as each of the paper's algorithms scans the data
    ratios = {key: [(r["count_seconds"] + r[f"{key}_seconds"]) / (r["count_seconds"] + r["tc_seconds"]) for r in rows]
              for key in keys}
    measure_only = {key: [r[f"{key}_seconds"] / r["tc_seconds"] for r in rows] for key in keys}
    summary = {
        "largest_census_rows": largest["rows"],
        "largest_census_seconds": {k: largest[f"{k}_seconds"] for k in ["count", *keys]},
        "order_by_speed": {f"{r['dataset']} {r['series']}={r['rows'] if r['series'] == 'rows' else r['criteria']}":
                           sorted(keys, key=lambda k, r=r: r[f"{k}_seconds"]) for r in rows},
        "median_ratio_to_tc": {k: float(np.median(v)) for k, v in ratios.items()},
        "median_measure_only_ratio_to_tc": {k: float(np.median(v)) for k, v in measure_only.items()},
        "range_ratio_to_tc": {k: [float(min(v)), float(max(v))] for k, v in ratios.items()},
        "tc_fastest_share": float(np.mean([min(keys, key=lambda k, r=r: r[f"{k}_seconds"]) == "tc" for r in rows])),
        "tvd_second_share": float(np.mean([sorted(keys, key=lambda k, r=r: r[f"{k}_seconds"])[1] == "tvd" for r in rows])),
    }

    def draw(axes: Any) -> None:
        for ax, dataset, series, x in ((axes[0], "census", "rows", "rows"), (axes[1], "adult", "rows", "rows"),
                                       (axes[2], "adult", "criteria", "criteria")):
            sel = [r for r in rows if r["dataset"] == dataset and r["series"] == series]
            for key in ["count", *keys]:
                ax.plot([r[x] for r in sel], [r[f"{key}_seconds"] for r in sel], marker="o", label=key)
            ax.set_yscale("log")
            if x == "rows":
                ax.set_xscale("log")
            ax.set_xlabel(f"{x} ({dataset})")
            ax.set_ylabel("seconds")
            ax.legend(fontsize=7)

    fig = figure(config.out, "runtime", draw, ncols=3, size=(4.5, 3.6))
    return {"experiment": NAME, "rows": rows, "summary": summary, "figures": [fig]}


def _named(times: dict[str, float]) -> dict[str, float]:
    return {k if k == "counted_rows" else f"{k}_seconds": v for k, v in times.items()}
