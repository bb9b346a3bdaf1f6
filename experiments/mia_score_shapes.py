"""Every MIA rule on the score shapes users bring, and on their nulls (issue: MIA verdicts on real scores).

For each shape of :mod:`dpaudit.mia.simulate.shapes` (Gaussian, Student-t₃, log-normal, tied, constant
records, 5 % saturated at the cap, a 5 %-vulnerable mixture, unequal IN/OUT variances, a random
forest's vote shares) and each M, the null score set (membership permuted within records) is
evaluated with the default options; every rule's TPR, realised FPR, CI and ε bound are saved, and the
headline verdict where the evaluation gives one. With ``--forest`` it also trains two
bring-your-own random-forest runs (``mia train --data FILE --model
sklearn.ensemble:RandomForestClassifier``: UCI credit default and COMPAS) and evaluates them and
their nulls.

The JSON is written by whatever dpaudit is importable, so the same script measures the code before
and after a change (``PYTHONPATH=/old/checkout/src python experiments/mia_score_shapes.py --out old.json``);
``--compare OLD NEW`` prints the before/after table.

Usage::

    python experiments/mia_score_shapes.py --out /tmp/shapes_after.json [--forest]     # ~4 min, 2 cores
    python experiments/mia_score_shapes.py --compare /tmp/shapes_before.json /tmp/shapes_after.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.simulate.shapes import SHAPES, shaped_scores

REPO = Path(__file__).resolve().parents[1]
RULES = ("naive", "pp_normal", "pp_t", "pp_rank", "per_record_empirical", "per_record_parametric")
SHORT = {"naive": "naive", "pp_normal": "PP-N", "pp_t": "PP-t", "pp_rank": "PP-rank",
         "per_record_empirical": "emp.", "per_record_parametric": "param."}
#: (M, N+) of the grid: the issue's M = 64, N+ = 10,000, and M from 16 to 1,024 at N+ = 2,000.
GRID = ((16, 10_000), (64, 10_000), (256, 4_000), (1024, 2_000))
FOREST_DATA = {
    "credit": ("default_credit_card/default_of_credit_card_clients.csv.gz", "default.payment.next.month",
               ["LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE", "PAY_0", "PAY_2", "BILL_AMT1", "PAY_AMT1"]),
    "compas": ("compas/compas-scores-two-years.csv.gz", "two_year_recid",
               ["sex", "age", "race", "juv_fel_count", "juv_misd_count", "priors_count", "c_charge_degree"]),
}


def rule_row(report, alpha_index: int) -> dict:
    """Every rule's numbers at one α, and the verdict if the evaluation gives one."""
    row = report.rows[alpha_index]
    out = {}
    for name in RULES:
        r = row.rules[name]
        out[name] = {"estimable": r.estimable, "tpr": r.tpr, "fpr": r.fpr, "ci": list(r.ci) if r.ci else None,
                     "epsilon_lb": r.epsilon_lb, "valid": getattr(r, "valid", None)}
    verdict = getattr(row, "verdict", None)
    out["verdict"] = None if verdict is None else verdict.text
    return out


def evaluate_one(scores: ScoreSet, alphas: tuple[float, ...], n_boot: int) -> dict:
    t0 = time.perf_counter()
    report = evaluate(scores, fpr=alphas, n_boot=n_boot)
    saturated = float(np.mean(np.abs(scores.score) >= np.abs(scores.score).max() * (1 - 1e-12)))
    return {"seconds": time.perf_counter() - t0, "share_at_max_abs": saturated,
            "alphas": {f"{a:g}": rule_row(report, j) for j, a in enumerate(alphas)}}


def forest_scores(name: str, data_dir: Path, runs: Path, n_models: int, pool: int) -> ScoreSet:
    import pandas as pd

    from dpaudit.mia.train import load_run, train_run

    file, label, columns = FOREST_DATA[name]
    frame = pd.read_csv(data_dir / file)[columns + [label]].dropna()
    csv = runs / f"{name}.csv"
    runs.mkdir(parents=True, exist_ok=True)
    frame.to_csv(csv, index=False)
    run = runs / f"{name}_rf_M{n_models}_N{pool}"
    train_run(run, data=csv, label=label, model="sklearn.ensemble:RandomForestClassifier", n_models=n_models,
              pool_size=pool, seed=0, n_jobs=2, resume=run.exists(), progress=False)
    return load_run(run)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="the JSON to write")
    p.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"), help="print the before/after table")
    p.add_argument("--forest", action="store_true", help="also the two random-forest runs (trains ~2 min)")
    p.add_argument("--fpr", type=float, nargs="+", default=[1e-2, 1e-3])
    p.add_argument("--n-boot", type=int, default=100)
    p.add_argument("--data", type=Path, default=Path(os.environ.get("DPAUDIT_DATA", REPO.parent / "shared" / "datasets")),
                   help="the datasets folder (default $DPAUDIT_DATA, else ../shared/datasets beside the checkout)")
    p.add_argument("--runs", type=Path, default=Path("/tmp/dpaudit_runs/shapes"), help="cache of trained runs")
    args = p.parse_args(argv)
    if args.compare:
        print(compare(*(json.loads(f.read_text()) for f in args.compare)))
        return 0
    alphas = tuple(args.fpr)
    doc: dict = {"alphas": list(alphas), "n_boot": args.n_boot, "cases": {}}
    for shape in SHAPES:
        for m, n in GRID:
            null = shaped_scores(shape, m, n, seed=7).permuted(seed=8)
            doc["cases"][f"{shape} null M={m}"] = evaluate_one(null, alphas, args.n_boot)
            print(f"{shape} M={m}: {doc['cases'][f'{shape} null M={m}']['seconds']:.1f} s", file=sys.stderr)
    if args.forest:
        for name in FOREST_DATA:
            scores = forest_scores(name, args.data, args.runs, 256, 4_000)
            doc["cases"][f"forest {name} M=256"] = evaluate_one(scores, alphas, args.n_boot)
            doc["cases"][f"forest {name} null M=256"] = evaluate_one(scores.permuted(seed=1), alphas, args.n_boot)
    args.out.write_text(json.dumps(doc, indent=1))
    return 0


def _cell(r: dict) -> str:
    if not r["estimable"]:
        return "n.e."
    eps = "" if r["epsilon_lb"] in (None, 0.0) else f" ε≥{r['epsilon_lb']:.2f}"
    flag = "" if r.get("valid") in (None, True) else " ✗"
    return f"{r['tpr']:.4f}/{r['fpr']:.4f}{eps}{flag}"


def compare(before: dict, after: dict) -> str:
    """One Markdown table per α: each case's rules before → after (TPR/realised FPR, ε ≥ when > 0, ✗ not valid)."""
    lines = []
    for a in after["alphas"]:
        key = f"{a:g}"
        lines += [f"\n### α = {key}\n", "| case | " + " | ".join(SHORT[r] for r in RULES) + " | headline after |",
                  "|---|" + "---|" * (len(RULES) + 1)]
        for case, res in after["cases"].items():
            old = before["cases"].get(case, {}).get("alphas", {}).get(key)
            new = res["alphas"][key]
            cells = [f"{_cell(old[r]) if old else '–'} → {_cell(new[r])}" for r in RULES]
            lines.append(f"| {case} | " + " | ".join(cells) + f" | {new['verdict'] or '–'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
