"""plot_0 — models trained with DP: their demographic-parity gap beside the data-level measures.

Paper's claim (plot_0): the data-level measures anticipate the unfairness of models trained on the data
with DP. Two parts:

**The study across criteria.** For every preset criterion P ⊥ O | A, two DP classifiers predict O from
every other declared column (P and A included) but identifiers and columns recorded from the outcome
(``NOT_FEATURES``, ``DERIVED``): a DP random forest (diffprivlib, 20 trees, depth 8) and a DP-SGD
network (Opacus, CPU, one hidden layer of 32), both at the paper's ε = 10 (δ = 1e-5), and a
non-private scikit-learn forest as the reference that separates what DP costs from what the measures
miss. Each is trained on ``SPLITS`` random 70/30 splits (seeds; at most ``TRAIN_ROWS`` training rows);
its demographic-parity gap (:func:`common.dp_gap` of the table (A, P, predicted O) on the hold-out) and
accuracy are the mean over the splits with the 95 % range of the splits as the interval. The gaps are
ranked against U_MI^TVD and the paper's U_TC (observed cells) of the whole table by Spearman's ρ with a
bootstrap interval over criteria (:func:`common.spearman_interval`), **per outcome type** (binary —
two observed classes — and multi-class, 3 to 30 classes: pooling them ranks the number of classes more
than unfairness) and judged on the paper's datasets only (the extras are shown as measurements).

*Control*: the same ρ with each measure taken on the data with the protected columns shuffled
(:func:`common.shuffled_tables`, ``NULL_SEEDS`` shuffles, one ρ each) against the same model gaps; it
passes when at least 5 % of the shuffles reach the rule and the data's ρ (:func:`common.control_meets`:
a permutation test), so the data's ρ must beat 95 % of the shuffles'. Shuffling
keeps every marginal, the block sizes, the number of groups and classes — everything but the P–O
dependence — so a measure that "anticipates" the gaps through table shape or small-group noise (which
also inflates a model's hold-out gap) passes there too; a measure that anticipates them through
unfairness must fail. (The other control, models trained on shuffled data, would remove the gaps'
dependence instead and double the training; the measure-side null is the one that tests the claim's
subject, the measures.)

**The paper's configuration** (Adult, its four criteria, 10K-row samples): diffprivlib forest with 20
trees, max_depth 15, test 0.3; a network with one hidden layer of 32, SGD lr 0.05, momentum 0.9, batch
100, DP-SGD ε = 10, δ = 1e-5, clip 1.0, test 0.15; features every column but the outcome as codes
scaled to [0, 1] (the paper's label encoding + min–max); gap = max − min P(ŷ = 1 | P = p), the
test-size-weighted mean over a of the within-a gaps (``dp_gap`` with ``min_group=1``). The paper
trains the network 150 epochs; here ``PAPER_EPOCHS`` (cut for time) and ``PAPER_REPS`` samples instead
of 10. Set beside ``paper.PLOT0``.

Features are coded from the declared schema alone (a binned column its bin index scaled to [0, 1]; a
categorical column one-hot for the network, its scaled code for the forests), so the models' feature
bounds, which diffprivlib's forest needs, are public, never read off the data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from common import (
    PAPER_DATASETS,
    Config,
    at_least,
    claim,
    control_meets,
    criteria_of,
    dp_gap,
    exact_values,
    figure,
    interval,
    label,
    load,
    measurement,
    paper_only,
    shuffled_tables,
    spearman,
    spearman_interval,
    tables_of,
)
from trainers import DELTA, EPSILON, dp_forest, dp_network, forest

from dpaudit.criteria import parse_criteria
from dpaudit.measures import TVD, TopContribution
from dpaudit.schema import Binned

NAME = "models"
TITLE = "plot_0 — DP models' demographic-parity gap beside the data-level measures"
#: Declared columns that are no features: row identifiers and survey weights.
NOT_FEATURES = frozenset({"ID", "rownames", "Unnamed: 0", "fnlwgt"})
#: Columns recorded from the outcome (or the outcome from them) in the COMPAS files: a model given
#: them copies the outcome (two_year_recid = 1 implies is_recid = 1 and 0 nearly implies 0;
#: score_text bins decile_score). They are dropped when the outcome is one of the keys.
DERIVED = {"is_recid": ("two_year_recid", "is_violent_recid"), "two_year_recid": ("is_recid", "is_violent_recid"),
           "decile_score": ("score_text",), "v_decile_score": ("v_score_text",)}
TRAIN_ROWS, QUICK_TRAIN_ROWS = 8_000, 1_500
SPLITS, QUICK_SPLITS = 5, 2
NULL_SEEDS = 20
RHO_RULE = 0.5
PAPER_ROWS, PAPER_REPS, PAPER_EPOCHS = 10_000, 5, 20
MEASURES = {"tvd": "U_MI^TVD", "tc_observed": "U_TC (paper: observed cells)"}
TC_PAPER = TopContribution(cells="observed")


def feature_columns(schema: Any, crit: Any) -> list[str]:
    """Every declared column but the outcome, identifiers and columns derived from the outcome."""
    drop = set(crit.outcome) | NOT_FEATURES | {c for o in crit.outcome for c in DERIVED.get(o, ())}
    return [c for c in schema.columns if c not in drop]


def group_codes(frame: Any, schema: Any, crit: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every row's block (A cell) and protected (P cell) index, in CountTable's row-major order."""
    return tuple(_flat([codes(frame, schema, c) for c in cols], [schema[c].size for c in cols], len(frame))
                 for cols in (crit.admissible, crit.protected))  # type: ignore[return-value]


def codes(frame: Any, schema: Any, column: str) -> np.ndarray:
    """Domain code of every row of ``column`` (−1 outside the declared domain)."""
    domain = schema[column]
    values = frame[column]
    if isinstance(domain, Binned):
        x = np.asarray(values.to_numpy(dtype=np.float64, na_value=np.nan))
        out = np.searchsorted(np.asarray(domain.edges, dtype=np.float64), x, side="right") - 1
        out = np.where((out < 0) | (out >= domain.n_bins), -1, out)
        return np.where(np.isnan(x), domain.n_bins if domain.missing is not None else -1, out)
    import pandas as pd

    inverse, uniques = pd.factorize(values, use_na_sentinel=False)
    lut = np.array([-1 if (c := domain.code_of(u)) is None else c for u in uniques], dtype=np.int64)
    return lut[inverse]


def encode(frame: Any, schema: Any, columns: list[str], *, one_hot: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Feature matrix in [0, 1] and a mask of rows inside every domain: a categorical column one-hot
    (``one_hot``) or, like a binned column, its code scaled to [0, 1]."""
    parts, ok = [], np.ones(len(frame), dtype=bool)
    for column in columns:
        code = codes(frame, schema, column)
        ok &= code >= 0
        size = schema[column].size
        if isinstance(schema[column], Binned) or not one_hot:
            parts.append((np.maximum(code, 0) / max(size - 1, 1))[:, None])
        else:
            parts.append(np.eye(size)[np.maximum(code, 0)])
    return np.hstack(parts), ok


def _dp_sgd(x: np.ndarray, y: np.ndarray, classes: int, seed: int, quick: bool) -> Any:
    return dp_network(x, y, classes, seed, epochs=2 if quick else 5)


def _dp_forest(x: np.ndarray, y: np.ndarray, classes: int, seed: int, quick: bool) -> Any:
    return dp_forest(x, y, classes, seed, trees=5 if quick else 20, depth=4 if quick else 8)


def _forest(x: np.ndarray, y: np.ndarray, classes: int, seed: int, quick: bool) -> Any:
    return forest(x, y, classes, seed, trees=10 if quick else 50, depth=4 if quick else 8)


#: model → (trainer, categorical columns one-hot?). The forests split on a random threshold of a
#: random feature (diffprivlib: Fletcher & Islam), so they get one [0, 1] code per column: with one-hot
#: columns almost every random split falls on a rare category and the DP forest predicts one class.
TRAINERS = {"dp_forest": (_dp_forest, False), "dp_sgd": (_dp_sgd, True), "forest": (_forest, False)}
MODEL_TITLES = {"dp_forest": "DP forest (diffprivlib)", "dp_sgd": "DP-SGD network (Opacus)",
                "forest": "non-private forest (reference)"}


def split(ok: np.ndarray, seed: int, test_share: float, train_rows: int | None = None) -> tuple[np.ndarray, ...]:
    """A seeded random split of the usable rows: (train, test), the training part capped at ``train_rows``."""
    idx = np.random.default_rng(seed).permutation(np.flatnonzero(ok))
    cut = int(round((1 - test_share) * len(idx)))
    return idx[:cut][:train_rows], idx[cut:]


def gap_of(a: np.ndarray, p: np.ndarray, labels: np.ndarray, shape: tuple[int, int, int], min_group: int = 20) -> float:
    """:func:`common.dp_gap` of the (A, P, label) table of some rows."""
    counts = np.zeros(shape)
    np.add.at(counts, (a, p, labels), 1.0)
    return dp_gap(counts, min_group=min_group)


def _spread(values: list[float]) -> dict[str, Any]:
    return {"mean": float(np.mean(values)), "interval": list(interval(values)), "splits": [float(v) for v in values]}


def criterion_row(name: str, i: int, crit: Any, config: Config, nulls: dict[str, list[float]]) -> dict[str, Any]:
    """Every model trained on ``SPLITS`` splits of one criterion's rows, beside the data-level values."""
    frame, schema = load(name, config.quick)
    table = tables_of(name, config.quick)[i]
    (outcome,) = crit.outcome
    encoded = {hot: encode(frame, schema, feature_columns(schema, crit), one_hot=hot) for hot in (True, False)}
    y = codes(frame, schema, outcome)
    group = [codes(frame, schema, c) for c in (*crit.admissible, *crit.protected)]
    ok = encoded[True][1] & (y >= 0) & np.all([g >= 0 for g in group], axis=0)
    classes = schema[outcome].size
    shape = (table.counts.shape[0], table.counts.shape[1], classes)
    a_code, p_code = group_codes(frame, schema, crit)
    per: dict[str, list[float]] = {}
    for s in range(QUICK_SPLITS if config.quick else SPLITS):
        seed = 1000 * config.seed + s
        train, test = split(ok, seed, 0.3, QUICK_TRAIN_ROWS if config.quick else TRAIN_ROWS)
        per.setdefault("test_dp_gap", []).append(gap_of(a_code[test], p_code[test], y[test], shape))
        for key, (trainer, hot) in TRAINERS.items():
            x = encoded[hot][0]
            pred = np.asarray(trainer(x[train], y[train], classes, seed, config.quick)(x[test]), dtype=np.int64)
            per.setdefault(f"{key}_accuracy", []).append(float(np.mean(pred == y[test])))
            per.setdefault(f"{key}_dp_gap", []).append(gap_of(a_code[test], p_code[test], pred, shape))
            per.setdefault(f"{key}_predicted_classes", []).append(float(np.unique(pred).size))
        if s == 0:  # diffprivlib's forest with almost no noise (ε = 10⁶): what its random splits alone achieve
            x = encoded[False][0]
            pred = dp_forest(x[train], y[train], classes, seed, epsilon=1e6)(x[test])
            per["dp_forest_eps1e6_accuracy"] = [float(np.mean(np.asarray(pred) == y[test]))]
    observed = int(np.unique(y[ok]).size)
    row: dict[str, Any] = {"dataset": name, "criterion": str(crit), "outcome_type": kind(observed),
                           "classes": classes, "observed_classes": observed, "train_rows": len(train),
                           "test_rows": len(test), "splits": len(per["test_dp_gap"]),
                           "majority_share": float(np.bincount(y[ok]).max() / ok.sum()),
                           "data_dp_gap": dp_gap(table.counts),
                           "data_tvd_value": TVD().value(table.counts),
                           "data_tc_observed_value": TC_PAPER.value(table.counts)}
    for k, values in nulls.items():  # per shuffle; their mean beside
        row[f"null_{k}_seeds"] = values[i]
        row[f"null_{k}"] = float(np.mean(values[i]))
    for k, values in per.items():
        spread = _spread(values)
        row[k] = spread["mean"]
        if len(values) > 1:
            row[f"{k}_interval"], row[f"{k}_splits"] = spread["interval"], spread["splits"]
    return row


def kind(observed_classes: int) -> str:
    """The outcome type the ρ are broken down by."""
    return "binary" if observed_classes == 2 else "multi-class"


def null_measures(name: str, config: Config) -> dict[str, list[float]]:
    """Per measure, per criterion: U_MI^TVD and the paper's U_TC on each of ``NULL_SEEDS`` protected-shuffled tables."""
    draws = [shuffled_tables(name, config.quick, seed=1000 * config.seed + j) for j in range(NULL_SEEDS)]
    measures = {"tvd": TVD(), "tc_observed": TC_PAPER}
    return {k: [[float(m.value(d[i].counts)) for d in draws] for i in range(len(draws[0]))] for k, m in measures.items()}


def correlations(rows: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """ρ(measure, model gap) with its bootstrap interval, and the control's, per scope × outcome type × model."""
    out: dict[str, Any] = {}
    for scope in ("paper", "all"):
        for kind_ in ("binary", "multi-class", "pooled"):
            sel = [r for r in rows if (scope == "all" or r["dataset"] in PAPER_DATASETS)
                   and kind_ in ("pooled", r["outcome_type"])]
            block: dict[str, Any] = {"n": len(sel)}
            for model in TRAINERS:
                gaps = [r[f"{model}_dp_gap"] for r in sel]
                cell = {}
                for m in (*MEASURES, "repair_ci", "test_dp_gap"):
                    xs = [r[f"data_{m}" if m == "repair_ci" else (m if m == "test_dp_gap" else f"data_{m}_value")]
                          for r in sel]
                    cell[m] = {"rho": spearman(xs, gaps), "interval": list(spearman_interval(xs, gaps, seed=seed))}
                    if m in MEASURES:
                        rhos = [spearman([r[f"null_{m}_seeds"][j] for r in sel], gaps) for j in range(NULL_SEEDS)]
                        cell[m]["control_rhos"] = rhos if sel else []
                        cell[m]["control_rho"] = float(np.nanmedian(rhos)) if sel and np.isfinite(rhos).any() else math.nan
                        cell[m]["control_range"] = ([float(np.nanmin(rhos)), float(np.nanmax(rhos))]
                                                    if sel and np.isfinite(rhos).any() else [math.nan, math.nan])
                block[model] = cell
            out[f"{scope}/{kind_}"] = block
    return out


def run(config: Config) -> dict[str, Any]:
    import plot0

    rows = []
    for name in config.datasets:
        data_level = exact_values(name, config)
        nulls = null_measures(name, config)
        for i, crit in enumerate(parse_criteria(criteria_of(name))):
            row = criterion_row(name, i, crit, config, nulls)
            row.update({f"data_{k}": v["per_criterion"][i] for k, v in data_level.items()})
            rows.append(row)
    summary = {
        "criteria": len(rows), "judged_on": paper_only(dict.fromkeys(r["dataset"] for r in rows)),
        "spearman": correlations(rows, config.seed),
        "median_accuracy": {m: float(np.median([r[f"{m}_accuracy"] for r in rows])) for m in TRAINERS},
        "median_accuracy_dp_forest_eps1e6": float(np.median([r["dp_forest_eps1e6_accuracy"] for r in rows])),
        # a model predicting a single class has gap 0 whatever the data: how often that happened
        "single_class_models": {m: sum(r[f"{m}_predicted_classes"] == 1 for r in rows) for m in TRAINERS},
        "median_majority_share": float(np.median([r["majority_share"] for r in rows])),
        "epsilon": EPSILON, "delta": DELTA, "splits": QUICK_SPLITS if config.quick else SPLITS,
    }
    paper_rows = plot0.paper_configuration(config) if "adult" in config.datasets else []
    summary["paper_configuration"] = plot0.config_summary(config, bool(paper_rows))
    figures = [figure(config.out, "models", lambda axes: _draw(axes, rows), ncols=len(TRAINERS), size=(4.4, 4.0))]
    if paper_rows:
        figures.append(figure(config.out, "models_paper", lambda axes: plot0.draw(axes, paper_rows), ncols=2,
                              size=(4.6, 3.8)))
    return {"experiment": NAME, "rows": rows, "paper_rows": paper_rows, "summary": summary, "figures": figures}


def _draw(axes: Any, rows: list[dict[str, Any]]) -> None:
    """Gap (mean of the splits, 95 % range) against U_MI^TVD, log x; one panel per model, shared y."""
    colors = dict(zip(dict.fromkeys(r["dataset"] for r in rows), [f"C{i}" for i in range(10)]))
    top = max([r.get(f"{m}_dp_gap_interval", [r[f"{m}_dp_gap"]] * 2)[1] for r in rows for m in TRAINERS] + [0.05])
    for ax, model in zip(axes, TRAINERS):
        for r in rows:
            lo, hi = r.get(f"{model}_dp_gap_interval", [r[f"{model}_dp_gap"]] * 2)
            g = r[f"{model}_dp_gap"]
            ax.errorbar(max(r["data_tvd_value"], 1e-6), g, yerr=[[g - lo], [hi - g]], fmt="o" if
                        r["outcome_type"] == "binary" else "s", mfc=colors[r["dataset"]] if r["outcome_type"] ==
                        "binary" else "none", color=colors[r["dataset"]], ms=5, capsize=2, lw=0.8)
        ax.set_xscale("log")
        ax.set_ylim(0, 1.05 * top)
        ax.set_xlabel("U_MI^TVD of the whole table (log scale, unitless)")
        ax.set_ylabel("hold-out demographic-parity gap (TVD, 0–1)")
        ax.set_title(MODEL_TITLES[model], fontsize=9)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, marker="o", ls="", label=label(n)) for n, c in colors.items()]
    handles += [Line2D([], [], color="k", marker="o", ls="", label="binary outcome"),
                Line2D([], [], color="k", marker="s", mfc="none", ls="", label="multi-class outcome")]
    axes[-1].legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)


def _rho_text(cell: dict[str, Any]) -> str:
    rho, (lo, hi) = cell["rho"], cell["interval"]
    return "n/a" if rho is None or not math.isfinite(rho) else f"ρ = {rho:.2f} [{_f(lo)}, {_f(hi)}]"


def _f(x: Any) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.2f}"


def claims(result: dict[str, Any]) -> list[dict[str, Any]]:
    import plot0

    s = result["summary"]["spearman"]
    out = []
    for model in ("dp_forest", "dp_sgd"):
        for kind_ in ("binary", "multi-class"):
            block = s[f"paper/{kind_}"]
            for m, title in MEASURES.items():
                cell = block[model][m]
                rho, null = cell["rho"], cell["control_rho"]
                ok = rho is not None and math.isfinite(rho)
                # ρ undefined with ≥ 3 criteria: the gaps are constant (a model predicting one class)
                fails = not ok and block["n"] >= 3
                constant = " (undefined: the gaps are constant)" if fails else ""
                others = "; ".join(f"{k}: {_rho_text(block[model][k])}" for k in ("repair_ci", "test_dp_gap"))
                out.append(claim(
                    experiment="plot_0",
                    claim=f"{title} anticipates the {MODEL_TITLES[model]}'s gap ({kind_} outcomes, paper datasets)",
                    rule=f"Spearman ρ(measure, mean gap over splits) ≥ {RHO_RULE} across criteria",
                    paper="bars on Adult's 4 binary criteria (no ρ printed); see the paper-configuration table",
                    dpaudit=f"{_rho_text(cell)}{constant} over {block['n']} criteria",
                    control=(f"{title} on protected-shuffled data against the same gaps: median ρ = {_f(null)} "
                             f"(range {_f(cell['control_range'][0])}–{_f(cell['control_range'][1])}; "
                             f"{sum(at_least(v, max(RHO_RULE, rho if ok else RHO_RULE)) for v in cell['control_rhos'])} "
                             f"of {len(cell['control_rhos'])} shuffles reach the rule and the data's ρ; the control "
                             "passes from 5 %)"),
                    passes=at_least(rho, RHO_RULE) if ok else (False if fails else None),
                    control_passes=control_meets(cell["control_rhos"], RHO_RULE, rho) if ok else None,
                    note=f"other rankings on the same criteria — {others}; non-private forest: "
                         f"{_rho_text(block['forest'][m])}"))
    all_ = {k: s[f"all/{k}"] for k in ("binary", "multi-class", "pooled")}
    out.append(measurement(
        experiment="plot_0", claim="the same ρ on every dataset (extras and stand-ins included), U_MI^TVD",
        paper="—", dpaudit="; ".join(f"{k} (n = {b['n']}): forest {_rho_text(b['dp_forest']['tvd'])}, network "
                                     f"{_rho_text(b['dp_sgd']['tvd'])}" for k, b in all_.items()),
        note="pooled mixes 2- to 30-class outcomes; shown for comparison with the earlier pooled verdict"))
    out += plot0.claims(result)
    return out


ROW_COLUMNS = [("dataset", "dataset"), ("criterion", "criterion"), ("outcome_type", "outcome"),
               ("observed_classes", "classes"), ("data_tvd_value", "U_MI^TVD"), ("null_tvd", "U_MI^TVD shuffled"),
               ("data_tc_observed_value", "U_TC (obs.)"), ("test_dp_gap", "data gap (hold-out)"),
               ("dp_forest_dp_gap", "DP forest gap"), ("dp_forest_dp_gap_interval", "95 % range"),
               ("dp_sgd_dp_gap", "DP-SGD gap"), ("dp_sgd_dp_gap_interval", "95 % range"),
               ("forest_dp_gap", "forest gap"), ("forest_dp_gap_interval", "95 % range"),
               ("dp_forest_accuracy", "DP forest acc."), ("dp_sgd_accuracy", "DP-SGD acc."),
               ("forest_accuracy", "forest acc."), ("majority_share", "majority share")]
COLUMNS = ROW_COLUMNS


def tables(result: dict[str, Any]) -> list[tuple[str | None, list[dict[str, Any]], list[tuple[str, str]]]]:
    import plot0

    rho_rows = []
    for key, block in result["summary"]["spearman"].items():
        for model in TRAINERS:
            for m in (*MEASURES, "repair_ci", "test_dp_gap"):
                cell = block[model][m]
                rho_rows.append({"scope": key, "n": block["n"], "model": MODEL_TITLES[model], "measure": m,
                                 "rho": cell["rho"], "interval": cell["interval"],
                                 "control_rho": cell.get("control_rho"), "control_range": cell.get("control_range")})
    rho_columns = [("scope", "datasets / outcome type"), ("n", "criteria"), ("model", "model"), ("measure", "measure"),
                   ("rho", "Spearman ρ"), ("interval", "95 % bootstrap"), ("control_rho", "ρ on shuffled data (median)"),
                   ("control_range", "range over the shuffles")]
    out = [(None, result["rows"], ROW_COLUMNS), ("Rank correlations (per outcome type)", rho_rows, rho_columns)]
    if result.get("paper_rows"):
        out.append(("The paper's configuration on Adult, beside paper.PLOT0 (≈)", result["paper_rows"], plot0.COLUMNS))
    return out


def _flat(parts: list[np.ndarray], sizes: list[int], n: int) -> np.ndarray:
    """Row-major cell index of several coded columns (0 for none): CountTable's block/side order."""
    out = np.zeros(n, dtype=np.int64)
    for code, size in zip(parts, sizes):
        out = out * size + code
    return out

