"""Experiment 3 — relative error |M_ε − M| / |M| against ε ∈ {0.1, 1, 5, 10}, 10 repetitions.

Paper's claims (spec §5.3): the error of every measure falls as ε grows; Algorithm 2 (U_R) is the
most accurate (its values are large next to its sensitivity), Algorithm 3 (U_TC) the least for small
groups. Per dataset and measure, the exact value summed over the preset's criteria is released
``REPS`` times through OpenDP's Laplace mechanism with the measure's documented sensitivity and the
whole ε (the paper's per-algorithm setting; ``audit`` would split ε across measures).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from common import Config, exact_values, figure, relative_errors

NAME = "epsilon"
EPSILONS = (0.1, 1.0, 5.0, 10.0)
REPS = 10


def run(config: Config) -> dict[str, Any]:
    rows = []
    for name in config.datasets:
        for key, exact in exact_values(name, config).items():
            for eps in EPSILONS:
                err = relative_errors(exact["value"], exact["sensitivity"], eps, REPS)
                rows.append({"dataset": name, "measure": key, "epsilon": eps, "value": exact["value"],
                             "sensitivity": exact["sensitivity"], "scale": exact["sensitivity"] / eps,
                             "proven": exact["proven"], "mean_relative_error": float(np.mean(err)),
                             "median_relative_error": float(np.median(err)), "reps": REPS})
    keys = sorted({r["measure"] for r in rows})
    series = {(r["dataset"], r["measure"]): [] for r in rows}
    for r in rows:
        series[(r["dataset"], r["measure"])].append(r["mean_relative_error"])
    decreasing = [s[0] > s[-1] for s in series.values() if np.all(np.isfinite(s))]
    at1 = {k: float(np.median([r["mean_relative_error"] for r in rows if r["measure"] == k and r["epsilon"] == 1.0]))
           for k in keys}
    # the scale-free quantity behind the error: sensitivity / value (expected relative error × ε)
    noise_to_value = {k: float(np.median([r["sensitivity"] / r["value"] for r in rows
                                          if r["measure"] == k and r["epsilon"] == 1.0 and r["value"] > 0]))
                      for k in keys}
    summary = {
        "series": len(series),
        "error_falls_share": float(np.mean(decreasing)) if decreasing else float("nan"),
        "median_error_at_eps1": at1,
        "most_accurate": min(at1, key=at1.get),
        "least_accurate": max(at1, key=at1.get),
        "median_sensitivity_over_value": noise_to_value,
        "unproven": sorted({f"{r['dataset']}:{r['measure']}" for r in rows if not r["proven"]}),
    }

    def draw(axes: Any) -> None:
        for ax, key in zip(axes, keys):
            for name in config.datasets:
                sel = [r for r in rows if r["dataset"] == name and r["measure"] == key]
                ax.plot([r["epsilon"] for r in sel], [r["mean_relative_error"] for r in sel], marker="o", label=name)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(key)
            ax.set_xlabel("ε")
            ax.set_ylabel("mean relative error")
        axes[0].legend(fontsize=6)

    fig = figure(config.out, "epsilon", draw, ncols=len(keys), size=(3.6, 3.4))
    return {"experiment": NAME, "rows": rows, "summary": summary, "figures": [fig]}
