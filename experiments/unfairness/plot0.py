"""plot_0 in the paper's own configuration (Adult, 10K-row samples), set beside ``paper.PLOT0`` (≈, read off
the plot). Part of :mod:`models` (its ``paper_rows``).

Per criterion of the paper's Adult list and per sample (``PAPER_REPS`` seeded 10K-row samples without
replacement; the paper draws 10): diffprivlib's forest (20 trees, max_depth 15, ε = 10) on a 70/30
split and a network with one hidden layer of 32 (SGD lr 0.05, momentum 0.9, batch 100, Opacus DP-SGD
ε = 10, δ = 1e-5, clip 1.0) on an 85/15 split, every column but the outcome as its code scaled to
[0, 1] (the paper's label encoding + min–max scaling). The paper trains the network for 150 epochs;
``PAPER_EPOCHS`` here (cut for time: 150 epochs of DP-SGD are ≈ 10× this experiment's budget).
Gap = max − min P(ŷ = 1 | P = p), conditional: the test-size-weighted mean over a of the within-a
gaps (``dp_gap(min_group=1)``, the paper's formula for a binary outcome). Non-private references
(scikit-learn's forest of the same shape, the same network without DP-SGD) on the same splits. U_MI^TVD
and U_TC (observed cells) are of each sample without noise (the paper's are ε = 10 releases, whose
expected relative error on Adult is ≈ 0.004 and ≈ 0.1); U_R is in the chunked experiment.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import paper
from common import Config, interval, load, measurement

from dpaudit.criteria import parse_criteria
from dpaudit.measures import TVD, TopContribution

PAPER_ROWS, PAPER_REPS, PAPER_EPOCHS = 10_000, 5, 20
QUICK_ROWS, QUICK_REPS, QUICK_EPOCHS = 2_000, 1, 2
#: model key → (paper.PLOT0 key or None, title)
MODELS = {"dp_forest": ("dp_forest_gap", "DP forest (ε = 10)"), "dp_network": ("dp_network_gap", "DP-SGD network (ε = 10)"),
          "forest": (None, "non-private forest"), "network": (None, "non-private network")}
COLUMNS = [("criterion", "criterion"), ("tvd", "U_MI^TVD"), ("paper_tvd", "paper"),
           ("tc", "U_TC (obs.)"), ("paper_tc", "paper"),
           ("dp_forest_gap", "DP forest gap"), ("dp_forest_gap_interval", "95 % range"),
           ("paper_dp_forest_gap", "paper"), ("dp_forest_gap_difference", "difference"),
           ("dp_network_gap", "DP network gap"), ("dp_network_gap_interval", "95 % range"),
           ("paper_dp_network_gap", "paper"), ("dp_network_gap_difference", "difference"),
           ("forest_gap", "non-private forest gap"), ("network_gap", "non-private network gap"),
           ("dp_forest_accuracy", "DP forest acc."), ("dp_network_accuracy", "DP network acc."),
           ("forest_accuracy", "forest acc."), ("network_accuracy", "network acc.")]


def _sizes(schema: Any, columns: tuple[str, ...]) -> int:
    return int(np.prod([schema[c].size for c in columns])) if columns else 1


#: The paper's test shares: 0.3 for the forest, 0.15 for the network.
TEST_SHARE = {"dp_forest": 0.3, "forest": 0.3, "dp_network": 0.15, "network": 0.15}


def fit(key: str, x: np.ndarray, y: np.ndarray, seed: int, epochs: int) -> Any:
    """The paper's plot_0 models (binary outcome): forests of 20 trees, depth 15; one hidden layer of 32."""
    from trainers import DELTA, EPSILON, dp_forest, dp_network, forest

    if key == "dp_forest":
        return dp_forest(x, y, 2, seed, epsilon=EPSILON, trees=20, depth=15)
    if key == "forest":
        return forest(x, y, 2, seed, trees=20, depth=15)
    return dp_network(x, y, 2, seed, hidden=(32,), epochs=epochs, batch=100, lr=0.05, momentum=0.9,
                      epsilon=EPSILON if key == "dp_network" else None, delta=DELTA)


def paper_configuration(config: Config) -> list[dict[str, Any]]:
    """One row per Adult criterion of the paper: our gaps and accuracies (mean, 95 % range of the samples)
    beside paper.PLOT0."""
    from models import codes, encode, gap_of, group_codes, split

    frame, schema = load("adult", False)
    n_rows, reps, epochs = (QUICK_ROWS, QUICK_REPS, QUICK_EPOCHS) if config.quick else (PAPER_ROWS, PAPER_REPS,
                                                                                         PAPER_EPOCHS)
    rows = []
    for i, crit in enumerate(parse_criteria(paper.CRITERIA["adult"])):
        (outcome,) = crit.outcome
        x, ok = encode(frame, schema, [c for c in schema.columns if c != outcome], one_hot=False)
        y = codes(frame, schema, outcome)
        a, p = group_codes(frame, schema, crit)
        ok &= y >= 0
        shape = (_sizes(schema, crit.admissible), _sizes(schema, crit.protected), schema[outcome].size)
        per: dict[str, list[float]] = {}
        for rep in range(reps):
            seed = 1000 * config.seed + rep
            mask = np.zeros(len(frame), dtype=bool)
            mask[np.random.default_rng(seed).choice(np.flatnonzero(ok), min(n_rows, int(ok.sum())), replace=False)] = True
            counts = np.zeros(shape)
            np.add.at(counts, (a[mask], p[mask], y[mask]), 1.0)
            per.setdefault("tvd", []).append(TVD().value(counts))
            per.setdefault("tc", []).append(TopContribution(cells="observed").value(counts))
            for key, test_share in TEST_SHARE.items():
                train, test = split(mask, seed, test_share)
                pred = np.asarray(fit(key, x[train], y[train], seed, epochs)(x[test]), dtype=np.int64)
                per.setdefault(f"{key}_gap", []).append(gap_of(a[test], p[test], pred, shape, min_group=1))
                per.setdefault(f"{key}_accuracy", []).append(float(np.mean(pred == y[test])))
        row: dict[str, Any] = {"criterion": str(crit), "samples": reps, "rows": n_rows, "epochs": epochs,
                               "paper_tvd": paper.PLOT0["tvd"][i], "paper_tc": paper.PLOT0["tc"][i],
                               "paper_repair": paper.PLOT0["repair"][i]}
        for k, values in per.items():
            row[k] = float(np.mean(values))
            row[f"{k}_interval"] = list(interval(values))
        for key, (paper_key, _) in MODELS.items():
            if paper_key:
                row[f"paper_{key}_gap"] = paper.PLOT0[paper_key][i]
                row[f"{key}_gap_difference"] = row[f"{key}_gap"] - row[f"paper_{key}_gap"]
        rows.append(row)
    return rows


def config_summary(config: Config, ran: bool) -> dict[str, Any]:
    if not ran:
        return {"ran": False, "why": "Adult is not among the datasets of this run"}
    return {"ran": True, "rows": QUICK_ROWS if config.quick else PAPER_ROWS,
            "samples": QUICK_REPS if config.quick else PAPER_REPS, "paper_samples": 10,
            "epochs": QUICK_EPOCHS if config.quick else PAPER_EPOCHS, "paper_epochs": 150}


def draw(axes: Any, rows: list[dict[str, Any]]) -> None:
    """Bars per criterion: our DP gap (95 % range of the samples), the paper's, our non-private reference."""
    x = np.arange(len(rows))
    top = max([r[f"{k}_gap_interval"][1] for r in rows for k in MODELS] + [r[f"paper_{k}_gap"] for r in rows
                                                                           for k in ("dp_forest", "dp_network")])
    for ax, (dp, ref) in zip(axes, (("dp_forest", "forest"), ("dp_network", "network"))):
        ours = np.array([r[f"{dp}_gap"] for r in rows])
        err = np.array([[g - r[f"{dp}_gap_interval"][0], r[f"{dp}_gap_interval"][1] - g] for g, r in zip(ours, rows)]).T
        ax.bar(x - 0.27, ours, 0.27, yerr=err, capsize=3, label="dpaudit, DP", color="tab:blue")
        ax.bar(x, [r[f"paper_{dp}_gap"] for r in rows], 0.27, label="paper (≈, read off its plot)", color="tab:gray")
        ref_v = np.array([r[f"{ref}_gap"] for r in rows])
        ref_e = np.array([[g - r[f"{ref}_gap_interval"][0], r[f"{ref}_gap_interval"][1] - g]
                          for g, r in zip(ref_v, rows)]).T
        ax.bar(x + 0.27, ref_v, 0.27, yerr=ref_e, capsize=3, label="dpaudit, non-private", color="tab:orange")
        ax.set_xticks(x, [str(i + 1) for i in x])
        ax.set_xlabel("Adult criterion (paper's list order)")
        ax.set_ylabel("demographic-parity gap (max − min P(ŷ=1 | p))")
        ax.set_ylim(0, 1.15 * top)
        ax.set_title(MODELS[dp][1], fontsize=9)
        ax.legend(fontsize=7, loc="upper right")


def _spearman(a: list[float], b: list[float]) -> float:
    from common import spearman

    return spearman(a, b)


def claims(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = result.get("paper_rows") or []
    if not rows:
        return [measurement(experiment="plot_0", claim="the paper's configuration on Adult (10K rows, ε = 10)",
                            paper="see paper.PLOT0", dpaudit="not run (Adult not in this run's datasets)")]
    s = result["summary"]["paper_configuration"]
    out = []
    for key in ("dp_forest", "dp_network"):
        ours = [r[f"{key}_gap"] for r in rows]
        theirs = [r[f"paper_{key}_gap"] for r in rows]
        rho = _spearman(ours, theirs)
        out.append(measurement(
            experiment="plot_0", claim=f"the paper's configuration on Adult: {MODELS[key][1]} gap per criterion",
            paper=" / ".join(f"{v:g}" for v in theirs),
            dpaudit=" / ".join(f"{v:.3f} [{r[f'{key}_gap_interval'][0]:.3f}, {r[f'{key}_gap_interval'][1]:.3f}]"
                               for v, r in zip(ours, rows))
            + (f"; rank agreement with the paper's ρ = {rho:.2f}" if math.isfinite(rho) else ""),
            note=f"{s['samples']} samples of {s['rows']:,} rows (paper {s['paper_samples']}); network "
                 f"{s['epochs']} epochs (paper {s['paper_epochs']}, cut for time); non-private reference "
                 + " / ".join(f"{r[key.replace('dp_', '') + '_gap']:.3f}" for r in rows)))
    return out
