"""exp8 — model complexity against accuracy, training time and demographic-parity gap (Adult, ε = 10).

The paper's catalogue (main.py, exp8): on Adult, a DP random forest with 1–5 trees and a DP-SGD network
with 1–5 hidden layers of 64 units (20 epochs, batch 256, test 0.2), ε = 10; accuracy, training time and
the DP gap against complexity. The catalogue states no criterion, no forest depth and no claim, so this
is a **measurement**: the criterion is sex ⊥ income (the paper's Adult criterion 2, the usual one), the
forest is plot_0's (diffprivlib, max_depth 15), the network's DP-SGD has δ = 1e-5, clip 1.0 and
SGD lr 0.5 (the paper gives no optimiser for exp8); gap = max − min P(ŷ = 1 | sex) on the test rows
(``dp_gap(min_group=1)``). Non-private references of the same complexity (scikit-learn's forest, the same
network without DP-SGD) on the same splits separate what DP costs. Each point is the mean of ``REPS``
seeded 80/20 splits with the 95 % range; the trend is Spearman's ρ(complexity, gap) over every
(complexity, split) point with a bootstrap interval. Training time is CPU seconds (``process_time``).

Cut for time: ``TRAIN_ROWS`` training rows per split (the paper: all of Adult's ≈ 39K) and ``REPS`` = 5
splits (the paper: 10) — 20 epochs of DP-SGD on 39K rows take ≈ 1 min per network on this machine's
CPU, 25 networks per repeat.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from common import Config, figure, interval, load, measurement, spearman, spearman_interval

from dpaudit.criteria import parse_criteria

NAME = "complexity"
TITLE = "exp8 — model complexity vs accuracy, training time and DP gap (Adult, ε = 10)"
CRITERION = "sex ⊥ income"
LEVELS = (1, 2, 3, 4, 5)
TRAIN_ROWS, QUICK_TRAIN_ROWS = 8_000, 1_000
REPS, QUICK_REPS = 5, 2
EPOCHS, QUICK_EPOCHS = 20, 2
WIDTH = 64
FAMILIES = {"dp_forest": "DP forest (trees)", "dp_network": "DP-SGD network (hidden layers of 64)",
            "forest": "non-private forest (trees)", "network": "non-private network (hidden layers of 64)"}
COLUMNS = [("model", "model"), ("complexity", "trees / hidden layers"), ("accuracy", "accuracy"),
           ("accuracy_interval", "95 % range"), ("seconds", "training CPU s"), ("seconds_interval", "95 % range"),
           ("gap", "DP gap"), ("gap_interval", "95 % range"), ("splits", "splits")]


def fit(family: str, level: int, x: np.ndarray, y: np.ndarray, seed: int, epochs: int) -> Any:
    """The model of ``family`` at complexity ``level`` (trees, or hidden layers of 64)."""
    from trainers import DELTA, EPSILON, dp_forest, dp_network, forest

    if family == "dp_forest":
        return dp_forest(x, y, 2, seed, epsilon=EPSILON, trees=level, depth=15)
    if family == "forest":
        return forest(x, y, 2, seed, trees=level, depth=15)
    return dp_network(x, y, 2, seed, hidden=(WIDTH,) * level, epochs=epochs, batch=256, lr=0.5,
                      epsilon=EPSILON if family == "dp_network" else None, delta=DELTA)


def run(config: Config) -> dict[str, Any]:
    from models import codes, encode, feature_columns, gap_of, group_codes, split

    frame, schema = load("adult", False)
    (crit,) = parse_criteria([CRITERION])
    features = feature_columns(schema, crit)
    encoded = {hot: encode(frame, schema, features, one_hot=hot)[0] for hot in (True, False)}
    ok = encode(frame, schema, features)[1]
    y = codes(frame, schema, "income")
    ok &= y >= 0
    a, p = group_codes(frame, schema, crit)
    shape = (1, schema["sex"].size, schema["income"].size)
    reps, rows_cap, epochs = (QUICK_REPS, QUICK_TRAIN_ROWS, QUICK_EPOCHS) if config.quick else (REPS, TRAIN_ROWS,
                                                                                              EPOCHS)
    points: list[dict[str, Any]] = []
    for rep in range(reps):
        seed = 1000 * config.seed + rep
        train, test = split(ok, seed, 0.2, rows_cap)
        for family in FAMILIES:
            x = encoded[family.endswith("network")]
            for level in LEVELS:
                start = time.process_time()  # CPU seconds: a loaded machine does not inflate them
                model = fit(family, level, x[train], y[train], seed, epochs)
                seconds = time.process_time() - start
                pred = np.asarray(model(x[test]), dtype=np.int64)
                points.append({"model": family, "complexity": level, "split": rep, "seconds": seconds,
                               "accuracy": float(np.mean(pred == y[test])),
                               "gap": gap_of(a[test], p[test], pred, shape, min_group=1)})
    rows = []
    for family in FAMILIES:
        for level in LEVELS:
            sel = [q for q in points if q["model"] == family and q["complexity"] == level]
            row: dict[str, Any] = {"model": family, "complexity": level, "splits": len(sel)}
            for k in ("accuracy", "seconds", "gap"):
                row[k] = float(np.mean([q[k] for q in sel]))
                row[f"{k}_interval"] = list(interval([q[k] for q in sel]))
            rows.append(row)
    summary: dict[str, Any] = {"criterion": CRITERION, "train_rows": int(len(train)), "test_rows": int(len(test)),
                               "splits": reps, "epochs": epochs, "paper_splits": 10, "trend": {}}
    for family in FAMILIES:
        sel = [q for q in points if q["model"] == family]
        lv = [q["complexity"] for q in sel]
        summary["trend"][family] = {
            k: {"rho": spearman(lv, [q[k] for q in sel]),
                "interval": list(spearman_interval(lv, [q[k] for q in sel], seed=config.seed))}
            for k in ("accuracy", "seconds", "gap")}
    fig = figure(config.out, "complexity", lambda axes: _draw(axes, rows), ncols=3, size=(4.2, 3.8))
    return {"experiment": NAME, "rows": rows, "points": points, "summary": summary, "figures": [fig]}


def _draw(axes: Any, rows: list[dict[str, Any]]) -> None:
    units = {"accuracy": "test accuracy (share of rows)", "seconds": "training time (CPU s, log scale)",
             "gap": "DP gap max − min P(ŷ=1 | sex)"}
    for ax, key in zip(axes, units):
        for i, family in enumerate(FAMILIES):
            sel = [r for r in rows if r["model"] == family]
            v = np.array([r[key] for r in sel])
            err = np.array([[m - r[f"{key}_interval"][0], r[f"{key}_interval"][1] - m] for m, r in zip(v, sel)]).T
            ax.errorbar(np.array(LEVELS) + 0.06 * (i - 1.5), v, yerr=err, capsize=2, marker="o", ms=4,
                        ls="-" if family.startswith("dp_") else "--", color="C0" if "forest" in family else "C1",
                        label=FAMILIES[family])
        ax.set_xticks(LEVELS)
        ax.set_xlabel("complexity (trees / hidden layers)")
        ax.set_ylabel(units[key])
        if key == "seconds":
            ax.set_yscale("log")
    axes[-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)


def _rho(cell: dict[str, Any]) -> str:
    rho, (lo, hi) = cell["rho"], cell["interval"]
    if rho is None or not math.isfinite(rho):
        return "ρ n/a"
    return f"ρ = {rho:.2f} [{lo:.2f}, {hi:.2f}]"


def claims(result: dict[str, Any]) -> list[dict[str, Any]]:
    s, rows = result["summary"], result["rows"]
    out = []
    for family in ("dp_forest", "dp_network"):
        sel = [r for r in rows if r["model"] == family]
        ref = family.replace("dp_", "")
        trend = s["trend"][family]
        out.append(measurement(
            experiment="exp8", claim=f"{FAMILIES[family]}: accuracy, training time and DP gap at complexity 1 … 5",
            paper="a plot (no values in the reference file)",
            dpaudit=("accuracy " + " / ".join(f"{r['accuracy']:.3f}" for r in sel)
                     + "; seconds " + " / ".join(f"{r['seconds']:.2f}" for r in sel)
                     + "; gap " + " / ".join(f"{r['gap']:.3f}" for r in sel)
                     + f"; trend with complexity: gap {_rho(trend['gap'])}, accuracy {_rho(trend['accuracy'])}"),
            note=(f"{s['criterion']}, {s['splits']} splits (paper {s['paper_splits']}), {s['train_rows']:,} training "
                  f"rows, {s['epochs']} epochs; non-private {ref}: gap {_rho(s['trend'][ref]['gap'])}")))
    return out
