"""Experiment 6 — models trained on the data with DP: their demographic-parity gap vs the data-level measures.

Paper's claim (spec §5.6): the data-level measures anticipate the unfairness of models trained on the
data. For every preset criterion P ⊥ O | A, two DP classifiers predict O from every other declared
column (P and A included) but identifiers and columns recorded from the outcome (``NOT_FEATURES``,
``DERIVED``): a DP random forest (diffprivlib, ε = 1) and a DP-SGD network (Opacus, CPU,
one hidden layer, ε = 1, δ = 1/n²). Their demographic-parity gap (:func:`common.dp_gap` of the table
(A, P, predicted O) on a held-out 30 %) is set beside U_MI^TVD, U_TC, U_R (ci) and the data's own gap;
the summary is the Spearman rank correlation across criteria (also with the data's own gap on the same
hold-out rows, `test_dp_gap`, as groups under 20 rows drop out of both). A non-private scikit-learn forest on the
same features is the reference that separates what DP costs from what the measures miss.

Features are coded from the declared schema alone (a binned column its bin index scaled to [0, 1]; a
categorical column one-hot for the network, its scaled code for the forests), so the models' feature
bounds, which diffprivlib's forest needs, are public, never read off the data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from common import Config, criteria_of, dp_gap, exact_values, figure, load, spearman, tables_of

from dpaudit.criteria import parse_criteria
from dpaudit.schema import Binned

NAME = "models"
#: Declared columns that are no features: row identifiers and survey weights.
NOT_FEATURES = frozenset({"ID", "rownames", "Unnamed: 0", "fnlwgt"})
#: Columns recorded from the outcome (or the outcome from them) in the COMPAS files: a model given
#: them copies the outcome (two_year_recid = 1 implies is_recid = 1 and 0 nearly implies 0;
#: score_text bins decile_score). They are dropped when the outcome is one of the keys.
DERIVED = {"is_recid": ("two_year_recid", "is_violent_recid"), "two_year_recid": ("is_recid", "is_violent_recid"),
           "decile_score": ("score_text",), "v_decile_score": ("v_score_text",)}
EPSILON = 1.0
TRAIN_ROWS, QUICK_TRAIN_ROWS = 20_000, 2_000


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


def dp_forest(x: np.ndarray, y: np.ndarray, classes: int, seed: int, quick: bool, epsilon: float = EPSILON) -> Any:
    from dpaudit.mia.claim.learners import diffprivlib_models  # importable with scikit-learn 1.9

    model = diffprivlib_models().RandomForestClassifier(
        n_estimators=5 if quick else 20, epsilon=epsilon, max_depth=4 if quick else 8,
        bounds=(np.zeros(x.shape[1]), np.ones(x.shape[1])), classes=list(range(classes)), random_state=seed)
    model.fit(x, y)
    return model.predict


def forest(x: np.ndarray, y: np.ndarray, classes: int, seed: int, quick: bool) -> Any:
    """The non-private reference: scikit-learn's random forest on the same features."""
    from sklearn.ensemble import RandomForestClassifier

    model = RandomForestClassifier(n_estimators=10 if quick else 50, max_depth=4 if quick else 8, n_jobs=1,
                                   random_state=seed)
    model.fit(x, y)
    return model.predict


def dp_sgd(x: np.ndarray, y: np.ndarray, classes: int, seed: int, quick: bool) -> Any:
    import warnings

    import torch
    from opacus import PrivacyEngine

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 32), torch.nn.ReLU(), torch.nn.Linear(32, classes))
    data = torch.utils.data.TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.long))
    loader = torch.utils.data.DataLoader(data, batch_size=256, shuffle=True)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.5)
    epochs = 2 if quick else 5
    with warnings.catch_warnings():  # Opacus warns about its secure-RNG default and the accountant's sampling
        warnings.simplefilter("ignore")
        engine = PrivacyEngine()
        net, optimizer, loader = engine.make_private_with_epsilon(
            module=net, optimizer=optimizer, data_loader=loader, target_epsilon=EPSILON,
            target_delta=1.0 / len(x) ** 2, epochs=epochs, max_grad_norm=1.0)
        loss = torch.nn.CrossEntropyLoss()
        for _ in range(epochs):
            for xb, yb in loader:
                if len(xb) == 0:
                    continue
                optimizer.zero_grad()
                loss(net(xb), yb).backward()
                optimizer.step()

    def predict(features: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return net(torch.tensor(features, dtype=torch.float32)).argmax(dim=1).numpy()

    return predict


#: model → (trainer, categorical columns one-hot?). The forests split on a random threshold of a
#: random feature (diffprivlib: Fletcher & Islam), so they get one [0, 1] code per column: with one-hot
#: columns almost every random split falls on a rare category and the DP forest predicts one class.
TRAINERS = {"dp_forest": (dp_forest, False), "dp_sgd": (dp_sgd, True), "forest": (forest, False)}


def run(config: Config) -> dict[str, Any]:
    rows = []
    rng = np.random.default_rng(config.seed)
    for name in config.datasets:
        frame, schema = load(name, config.quick)
        tables = tables_of(name, config.quick)
        data_level = exact_values(name, config)
        for i, crit in enumerate(parse_criteria(criteria_of(name))):
            (outcome,) = crit.outcome
            features = feature_columns(schema, crit)
            encoded = {hot: encode(frame, schema, features, one_hot=hot) for hot in (True, False)}
            ok_x = encoded[True][1]
            y = codes(frame, schema, outcome)
            group = [codes(frame, schema, c) for c in (*crit.admissible, *crit.protected)]
            ok = ok_x & (y >= 0) & np.all([g >= 0 for g in group], axis=0)
            idx = rng.permutation(np.flatnonzero(ok))
            cut = int(0.7 * len(idx))
            train = idx[:cut][: QUICK_TRAIN_ROWS if config.quick else TRAIN_ROWS]
            test = idx[cut:]
            classes = schema[outcome].size
            table = tables[i]
            a_size, p_size = table.counts.shape[0], table.counts.shape[1]
            a_code, p_code = group_codes(frame, schema, crit)

            def gap(labels: np.ndarray, cells: tuple = (a_code[test], p_code[test]),
                    shape: tuple = (a_size, p_size, classes)) -> float:
                counts = np.zeros(shape)
                np.add.at(counts, (*cells, labels), 1.0)
                return dp_gap(counts)
            row: dict[str, Any] = {"dataset": name, "criterion": str(crit), "train_rows": len(train),
                                   "test_rows": len(test), "classes": classes,
                                   "majority_share": float(np.bincount(y[test]).max() / len(test)),
                                   "data_dp_gap": dp_gap(table.counts),
                                   # the data's gap on the models' hold-out rows: what their gaps compare with
                                   "test_dp_gap": gap(y[test]),
                                   **{f"data_{k}": v["per_criterion"][i] for k, v in data_level.items()}}
            for key, (trainer, hot) in TRAINERS.items():
                x = encoded[hot][0]
                predict = trainer(x[train], y[train], classes, config.seed, config.quick)
                pred = np.asarray(predict(x[test]), dtype=np.int64)
                row[f"{key}_predicted_classes"] = int(np.unique(pred).size)
                row[f"{key}_accuracy"] = float(np.mean(pred == y[test]))
                row[f"{key}_dp_gap"] = gap(pred)
            # diffprivlib's forest with almost no noise (ε = 10⁶): what its random splits alone achieve
            predict = dp_forest(encoded[False][0][train], y[train], classes, config.seed, config.quick, epsilon=1e6)
            row["dp_forest_eps1e6_accuracy"] = float(np.mean(np.asarray(predict(encoded[False][0][test])) == y[test]))
            rows.append(row)
    data_keys = ["test_dp_gap", "data_dp_gap", "data_tvd", "data_tc", "data_repair_ci"]
    summary = {
        "criteria": len(rows),
        "spearman": {model: {k: spearman([r[k] for r in rows], [r[f"{model}_dp_gap"] for r in rows])
                             for k in data_keys} for model in TRAINERS},
        "median_accuracy": {model: float(np.median([r[f"{model}_accuracy"] for r in rows])) for model in TRAINERS},
        "median_accuracy_dp_forest_eps1e6": float(np.median([r["dp_forest_eps1e6_accuracy"] for r in rows])),
        # a model predicting a single class has gap 0 whatever the data: how often that happened
        "single_class_models": {model: sum(r[f"{model}_predicted_classes"] == 1 for r in rows) for model in TRAINERS},
        "median_majority_share": float(np.median([r["majority_share"] for r in rows])),
    }

    def draw(axes: Any) -> None:
        for ax, model in zip(axes, ("dp_forest", "dp_sgd")):
            for k in ("test_dp_gap", "data_tvd", "data_tc"):
                xs = np.array([r[k] for r in rows])
                ax.scatter(xs / (xs.max() or 1.0), [r[f"{model}_dp_gap"] for r in rows], s=16,
                           label=f"{k.split('_', 1)[1]} (ρ = {summary['spearman'][model][k]:.2f})")
            ax.set_xlabel("data-level measure / its maximum")
            ax.set_ylabel(f"{model} demographic-parity gap")
            ax.legend(fontsize=7)

    fig = figure(config.out, "models", draw, ncols=2, size=(4.8, 3.8))
    return {"experiment": NAME, "rows": rows, "summary": summary, "figures": [fig]}


def _flat(parts: list[np.ndarray], sizes: list[int], n: int) -> np.ndarray:
    """Row-major cell index of several coded columns (0 for none): CountTable's block/side order."""
    out = np.zeros(n, dtype=np.int64)
    for code, size in zip(parts, sizes):
        out = out * size + code
    return out
