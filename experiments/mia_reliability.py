"""Paper comparison: reliability of efficient LiRA as the number of models M grows.

Reproduces, with the built-in stand-in target model (logistic regression; spec ``mia.md`` §5), the
comparisons of Jälkö, Pradhan, Räisä, Honkela, *On Reliability of Efficient Membership Inference
Vulnerability Evaluation* (arXiv 2605.25819):

* naive concatenated TPR vs post-processed (PP) concatenated TPR vs mean per-record TPR, as M grows;
* N(0, 1) vs Student-t PP thresholds (their realised FPR at small M);
* the finite-population correction (FPC) off and on.

For each dataset, M_max models are trained ONCE into a cache directory outside the repository
(resumable: rerunning continues an interrupted run bit-identically), and every M in the grid uses the
first M of them. In a sub-matrix of the first M models a record can be IN (or OUT) in fewer than 3
models; such records are dropped (counted in the output), because the leave-one-out fits need ≥ 2.

Every configuration is evaluated on the scores as trained and on their null (membership permuted
within each record), where a valid rule reports TPR = its realised FPR and no ε > 0.

Outputs (``--out``, default ``docs/results``; ``--quick`` defaults to ``docs/results/quick``):
``mia_reliability.json`` (config, timing, every report on the scores and on the null), and rendered
from it alone by ``mia_reliability_page.py``: ``mia_reliability.csv`` and ``mia_reliability.md``
(``--page-only`` re-renders these two from the saved JSON); ``mia_tpr_vs_M_<dataset>.png`` and
``mia_fpr_vs_M_<dataset>.png`` (``--replot`` redraws them from the CSV).

Usage::

    DPAUDIT_DATA=/path/to/datasets python experiments/mia_reliability.py            # full (~3 min, 2 cores, models cached)
    python experiments/mia_reliability.py --quick --out /tmp/mia_quick              # smoke run (<1 min)
    python experiments/mia_reliability.py --page-only --out docs/results/hgb        # re-render CSV and page
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

from dpaudit._errors import DataError
from dpaudit._io import atomic_write_text
from dpaudit.mia.evaluate import RULE_NAMES, evaluate
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.train import load_run, train_run

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the page module beside this script
import mia_reliability_page as page

RULE_LABEL = dict(RULE_NAMES)
RULE_COLOR = {"naive": "tab:red", "pp_normal": "tab:orange", "pp_t": "tab:blue", "pp_rank": "tab:cyan",
              "per_record_empirical": "tab:green", "per_record_parametric": "tab:purple"}
RULE_MARKER = {"naive": "o", "pp_normal": "s", "pp_t": "^", "pp_rank": "v", "per_record_empirical": "D",
               "per_record_parametric": "P"}
#: Rules drawn in the figures: PP-rank equals the empirical per-record estimate under the efficient design.
PLOTTED = ("naive", "pp_normal", "pp_t", "per_record_empirical", "per_record_parametric")

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: pool 2,000, M_max 32, M in {16, 32}, n_boot 5, adult only")
    p.add_argument("--datasets", nargs="+", default=None, help="default: adult credit (quick: adult)")
    p.add_argument("--model", default="logreg", choices=("logreg", "mlp", "hgb", "tabpfn"))
    p.add_argument("--trainer", default="auto", choices=("auto", "batched", "per-model"),
                   help="how models are fitted (auto: batched for logreg); see dpaudit mia train")
    p.add_argument("--pool", type=int, default=None, help="N+ (N = N+/2); default 20000 (quick: 2000)")
    p.add_argument("--models", type=int, nargs="+", default=None,
                   help="the M grid; default 16 32 ... 1024 (quick: 16 32); M_max = max")
    p.add_argument("--fpr", type=float, nargs="+", default=[1e-2, 1e-3], help="the α values")
    p.add_argument("--n-boot", type=int, default=None, help="bootstrap replicates (default 50; quick: 5)")
    p.add_argument("--attack", default="lira", help="the attack evaluated (dpaudit.mia.attacks: lira, rmia)")
    p.add_argument("--sign", default="fitted", choices=("fitted", "positive"),
                   help="sign(Δ) of the PP transform (fitted: as in the MIA paper)")
    p.add_argument("--seed", type=int, default=0, help="training seed; the null run permutes keep with seed + 1")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--runs", default="/tmp/dpaudit_runs", help="cache of trained runs (outside the repo)")
    p.add_argument("--out", default=None, help="output folder (default docs/results; quick: docs/results/quick)")
    p.add_argument("--replot", action="store_true",
                   help="only redraw the figures from the mia_reliability.csv already in --out (no training or evaluation)")
    p.add_argument("--page-only", action="store_true",
                   help="only re-render mia_reliability.csv and .md from the mia_reliability.json already in --out")
    a = p.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    if a.quick:
        a.datasets = a.datasets or ["adult"]
        a.pool = a.pool or 2000
        a.models = a.models or [16, 32]
        a.n_boot = 5 if a.n_boot is None else a.n_boot
        a.out = a.out or str(repo / "docs" / "results" / "quick")
    else:
        a.datasets = a.datasets or ["adult", "credit"]
        a.pool = a.pool or 20000
        a.models = a.models or [16, 32, 64, 128, 256, 512, 1024]
        a.n_boot = 50 if a.n_boot is None else a.n_boot
        a.out = a.out or str(repo / "docs" / "results")
    a.models = sorted(set(a.models))
    if a.trainer == "auto":  # resolved here so the run cache and the table name the trainer actually used
        a.trainer = "batched" if a.model == "logreg" else "per-model"
    return a


def binomial_share_above(keep: np.ndarray, alpha: float) -> float:
    """Share of records whose per-record FPR would exceed α by chance alone if every record's true FPR
    were exactly α: mean over records of P(Binomial(n_out,x, α) > α·n_out,x). The reference level for
    ``naive_per_record_share_above_alpha`` (with n_out = M/2 OUT targets, discreteness alone puts many
    records above α)."""
    from scipy import stats

    n_out = (~np.asarray(keep)).sum(axis=0)
    return float(np.mean(stats.binom.sf(np.floor(alpha * n_out), n_out, alpha)))


def subset(full: ScoreSet, m: int) -> tuple[ScoreSet, int]:
    """ScoreSet of the first ``m`` models, without records IN or OUT in fewer than 3 of them.

    The pool keeps its design ratio: ``train_size = n_kept // 2`` so the FPC factor stays
    ``1 − N/N+ ≈ 0.5`` (every record was IN in exactly half of all M_max models).
    """
    score, keep = np.asarray(full.score)[:m], np.asarray(full.keep)[:m]
    n_in = keep.sum(axis=0)
    ok = (n_in >= 3) & (m - n_in >= 3)
    kept = int(ok.sum())
    return (ScoreSet(score[:, ok], keep[:, ok], train_size=kept // 2, pool_size=kept,
                     meta={**full.meta, "n_models_used": m}), int((~ok).sum()))


def run_dir(args: argparse.Namespace, dataset: str) -> Path:
    return Path(args.runs) / f"{dataset}_{args.model}_{args.trainer}_m{max(args.models)}_p{args.pool}_s{args.seed}"


def train(args: argparse.Namespace, dataset: str) -> tuple[ScoreSet, float]:
    out = run_dir(args, dataset)
    t0 = time.perf_counter()
    train_run(out, dataset=dataset, model=args.model, n_models=max(args.models), pool_size=args.pool,
              seed=args.seed, n_jobs=args.n_jobs, resume=out.is_dir(), progress=False, trainer=args.trainer)
    return load_run(out), time.perf_counter() - t0


def plot(rows: list[dict], dataset: str, alphas: list[float], out: Path, what: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(alphas), figsize=(5.6 * len(alphas), 4.4), squeeze=False)
    for ax, alpha in zip(axes[0], alphas):
        for rule in PLOTTED:
            # the parametric rule's FPR is α by its model: draw its t thresholds' own (leave-one-out) FPR
            column = "t_threshold_fpr_loo" if (what, rule) == ("fpr", "per_record_parametric") else f"{rule}_{what}"
            for fpc, ls in ((False, "-"), (True, "--")):
                sel = sorted((r for r in rows if r["dataset"] == dataset and r["alpha"] == alpha and r["fpc"] == fpc
                              and not np.isnan(r[column])), key=lambda r: r["M"])
                if not sel:
                    continue
                ms = [r["M"] for r in sel]
                ys = [max(r[column], 1e-6) for r in sel]
                name = RULE_LABEL[rule] + (" t thresholds" if column == "t_threshold_fpr_loo" else "")
                ax.plot(ms, ys, ls=ls, color=RULE_COLOR[rule], marker=RULE_MARKER[rule], ms=4,
                        label=f"{name}{' (FPC)' if fpc else ''}")
                if what == "tpr" and rule in ("naive", "pp_t", "per_record_empirical"):
                    lo = [max(r[f"{rule}_ci_lo"], 1e-6) for r in sel]
                    hi = [max(r[f"{rule}_ci_hi"], 1e-6) for r in sel]
                    if not any(np.isnan(lo)):
                        ax.fill_between(ms, lo, hi, color=RULE_COLOR[rule], alpha=0.08 if fpc else 0.15, lw=0)
        ax.axhline(alpha, color="grey", ls=":", lw=1, label="target FPR α")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sorted({r["M"] for r in rows}))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("number of models M")
        ax.set_ylabel("TPR at FPR α" if what == "tpr" else "realised FPR")
        ax.set_title(f"{dataset}, α = {alpha:g}")
        ax.grid(True, which="both", alpha=0.3)
    legend: dict[str, object] = {}  # every rule drawn in any panel (the empirical one is absent at small α)
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    axes[0][-1].legend(list(legend.values()), list(legend), fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle(f"{dataset}: TPR at FPR α vs M (solid: FPC off, dashed: FPC on; bands: bootstrap 95% CI;\n"
                 "per-record empirical drawn only where estimable: every record OUT in ≥ ⌈1/α⌉ − 1 models)"
                 if what == "tpr" else
                 f"{dataset}: realised FPR of each rule vs M (solid: FPC off, dashed: FPC on; per-record "
                 "parametric: how often the records' t thresholds are crossed by their own OUT scores)", fontsize=10)
    fig.tight_layout()
    path = out / f"mia_{what}_vs_M_{dataset}.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def read_csv(path: Path) -> list[dict]:
    """Rows of a mia_reliability.csv with numbers and booleans restored (for --replot)."""
    if not path.is_file():
        raise DataError(f"{path}: no results to replot; run the experiment first")
    text = {"dataset", "model", "verdict", "verdict_rule", "null_verdict", "pp_t_valid", "per_record_parametric_valid"}
    with path.open(newline="") as fh:
        return [{k: (v if k in text else v == "True" if k == "fpc" else int(v) if k in ("M", "n_records", "n_dropped",
                                                                                    "min_n_out") else float(v))
                 for k, v in row.items()} for row in csv.DictReader(fh)]


def replot(out: Path, alphas: list[float]) -> int:
    rows = read_csv(out / "mia_reliability.csv")
    alphas = sorted({r["alpha"] for r in rows}, reverse=True) if rows else alphas
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        for what in ("tpr", "fpr"):
            print("wrote", plot(rows, dataset, alphas, out, what))
    return 0


def write_results(doc: dict, out: Path) -> list[dict]:
    """``mia_reliability.csv`` and ``.md`` rendered from the saved run ``doc``; returns the rows."""
    rows = page.rows_of_doc(doc)
    atomic_write_text(out / "mia_reliability.csv", page.csv_text(rows))
    atomic_write_text(out / "mia_reliability.md", page.render(doc, rows))
    return rows


def page_only(out: Path) -> int:
    """Re-render the CSV and the page from ``out/mia_reliability.json`` (no training or evaluation)."""
    path = out / "mia_reliability.json"
    if not path.is_file():
        raise DataError(f"{path}: no saved run to render; run the experiment first")
    write_results(json.loads(path.read_text(encoding="utf-8")), out)
    print(f"wrote {out}/mia_reliability.csv, .md from {path}")
    return 0


def evaluate_pair(sub: ScoreSet, null_set: ScoreSet, meta: dict, options: dict) -> list[dict]:
    """The reports on the scores and on their null, as saved: ``meta`` added (with the Binomial reference
    share per α, which needs the keep matrix), and without the display-only curves and per-record IN
    counts (they would make the file ~40× larger and no table reads them), and with only the ten most
    vulnerable records of each α."""
    t0 = time.perf_counter()
    pair = [evaluate(sub, **options).to_dict(), evaluate(null_set, **options).to_dict()]
    meta = {**meta, "eval_seconds": round(time.perf_counter() - t0, 2),
            "binomial_share_above_alpha": [binomial_share_above(sub.keep, a) for a in options["fpr"]]}
    for d, extra in zip(pair, ({}, {"null": "membership permuted within each record"}), strict=True):
        d.pop("curves", None)
        d["options"].pop("n_in", None)
        for result in d["results"]:  # the ten most vulnerable records, not all 20,000 (no table reads them)
            vulnerable = result.get("vulnerable")
            if vulnerable:
                for key in ("record", "record_id", "tpr", "ci_low", "ci_high", "fpr", "n_in", "p_value", "q_value"):
                    if key in vulnerable:
                        vulnerable[key] = vulnerable[key][:10]
        d["meta"] = {**meta, **extra}
    return pair


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replot:
        return replot(Path(args.out), args.fpr)
    out = Path(args.out)
    if args.page_only:
        return page_only(out)
    reports: list[dict] = []
    timing: dict[str, float] = {}
    t_all = time.perf_counter()
    for dataset in args.datasets:
        full, secs = train(args, dataset)
        timing[f"{dataset} train/load"] = secs
        print(f"[{dataset}] {full.n_models} models × {full.n_records} records ready in {secs:.1f} s", flush=True)
        t_eval = time.perf_counter()
        for m in args.models:
            sub, dropped = subset(full, m)
            null_set = sub.permuted(seed=args.seed + 1)
            for fpc in (False, True):
                options = {"attack": args.attack, "fpr": tuple(args.fpr), "n_boot": args.n_boot, "fpc": fpc,
                           "sign": args.sign, "seed": args.seed}
                pair = evaluate_pair(sub, null_set, {"dataset": dataset, "model": args.model, "M": m,
                                                     "n_dropped": dropped}, options)
                reports += pair
                for r in page.rows_of_doc({"reports": pair}):
                    emp = r["per_record_empirical_tpr"]
                    print(f"[{dataset}] M={m:4d} drop={dropped:4d} FPC={'on ' if fpc else 'off'} α={r['alpha']:g}: "
                          f"naive {r['naive_tpr']:.4f}  PP-t {r['pp_t_tpr']:.4f} (FPR {r['pp_t_fpr']:.2g})  "
                          f"per-rec emp {'—' if np.isnan(emp) else f'{emp:.4f}'}  "
                          f"param {r['per_record_parametric_tpr']:.4f}  | null PP-t {r['pp_t_null_tpr']:.4f}/"
                          f"{r['pp_t_null_fpr']:.4f}  [{r['eval_seconds']:.1f} s]", flush=True)
        timing[f"{dataset} evaluate"] = time.perf_counter() - t_eval
    timing["total"] = time.perf_counter() - t_all
    out.mkdir(parents=True, exist_ok=True)
    config = {k: v for k, v in vars(args).items() if k not in ("replot", "page_only")}
    atomic_write_text(out / "mia_reliability.json",
                      json.dumps({"config": config, "timing_s": timing, "reports": reports}, indent=1))
    rows = write_results(json.loads((out / "mia_reliability.json").read_text(encoding="utf-8")), out)
    for dataset in args.datasets:
        for what in ("tpr", "fpr"):
            print("wrote", plot(rows, dataset, args.fpr, out, what))
    print(f"wrote {out}/mia_reliability.csv, .md, .json; total {timing['total']:.0f} s")
    return 0


if __name__ == "__main__":
    from dpaudit._errors import DPAuditError

    try:
        sys.exit(main())
    except DPAuditError as exc:  # e.g. --model tabpfn without the package or weights: say why, no traceback
        print(f"mia_reliability: error: {exc}", file=sys.stderr)
        sys.exit(2)
