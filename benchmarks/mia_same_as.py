"""Check: this tree's ``evaluate`` gives bit-identical reports to another tree's (e.g. main before a speed-up).

Every case's score set is built once, here, and saved (``ScoreSet.save``); each tree then evaluates
every case in a fresh process (``PYTHONPATH=<tree>/src``) and writes ``MiaReport.to_dict()`` of each
(all rules, intervals, ε, curves, histograms, diagnostics); the two are compared exactly (floats
bit for bit, NaN = NaN). Cases: Gaussian LiRA scores at small and large M, Poisson designs (unequal
IN counts: the counted-target path), tied, saturated and constant-column shapes, n_boot = 0 and > 0
with fixed seeds, plain and balanced references, FPC, strict, the positive sign, LiRA with median /
global variance, RMIA (the whole-matrix statistic), and blocks of a few records.

Each child checks that it imported the dpaudit of the tree it was given (``benchmarks/_suite`` is not
imported: it would put this tree first). Run: ``python benchmarks/mia_same_as.py --reference
/work/main/src [--big]`` (exit 1 on a difference;
``--big`` adds M = 256, N+ = 50,000 at n_boot = 0 and 200, the benchmark's size).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve()
SRC = HERE.parents[1] / "src"

#: name → (how the scores are made, evaluate's keyword arguments); "blocks" also shrinks the record blocks.
CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "gauss M=256 n_boot=0": (dict(kind="gauss", m=256, n=3000), dict(fpr=(1e-2, 1e-3), n_boot=0)),
    "gauss M=256 n_boot=40": (dict(kind="gauss", m=256, n=3000), dict(fpr=(1e-2, 1e-3), n_boot=40, seed=3)),
    "gauss M=16 n_boot=30 loo": (dict(kind="gauss", m=16, n=2000), dict(fpr=(0.1, 0.01), n_boot=30, seed=1,
                                                                       references="loo")),
    "gauss M=1100 ranks by selection": (dict(kind="gauss", m=1100, n=60), dict(fpr=(1e-2, 1e-3), n_boot=20)),
    "poisson ties M=40 fpc": (dict(kind="poisson", m=40, n=1500, ties=True),
                              dict(fpr=(0.05, 1e-3), n_boot=25, seed=7, fpc=True)),
    "poisson M=64 loo positive": (dict(kind="poisson", m=64, n=1200),
                                  dict(fpr=(0.05, 0.01), n_boot=25, references="loo", sign="positive")),
    "tied shape M=64 strict": (dict(kind="shape", shape="tied", m=64, n=1500),
                               dict(fpr=(0.1, 0.02), n_boot=20, strict=True)),
    "saturated shape M=128": (dict(kind="shape", shape="saturated", m=128, n=1500),
                              dict(fpr=(1e-2, 1e-3), n_boot=20, seed=2)),
    "constant shape M=32": (dict(kind="shape", shape="constant", m=32, n=800), dict(fpr=(0.05,), n_boot=10)),
    "forest shape M=16": (dict(kind="shape", shape="forest", m=16, n=1000), dict(fpr=(0.1, 0.01), n_boot=10)),
    "tiny M=6 edges": (dict(kind="gauss", m=6, n=400), dict(fpr=(0.5, 1e-12, 0.999999), n_boot=12)),
    "median global fpc": (dict(kind="poisson", m=30, n=600),
                          dict(fpr=(0.2, 0.01), n_boot=12, fpc=True, attack="lira-median-global")),
    "rmia": (dict(kind="gauss", m=32, n=600), dict(fpr=(0.05, 0.01), n_boot=15, attack="rmia")),
    "signed zeros M=48": (dict(kind="poisson", m=48, n=900, ties=True, zeros=True),
                          dict(fpr=(0.05, 0.01), n_boot=10, seed=4)),
    "signed zeros M=48 loo fpc": (dict(kind="poisson", m=48, n=900, zeros=True),
                                  dict(fpr=(0.1,), n_boot=10, references="loo", fpc=True)),
    "small blocks ties": (dict(kind="poisson", m=50, n=700, ties=True, blocks=100),
                          dict(fpr=(0.05, 0.01), n_boot=15, seed=1)),
}
BIG = {
    "gauss M=256 N+=50,000 n_boot=0": (dict(kind="gauss", m=256, n=50_000), dict(fpr=(1e-2, 1e-3), n_boot=0)),
    "gauss M=256 N+=50,000 n_boot=200": (dict(kind="gauss", m=256, n=50_000), dict(fpr=(1e-2, 1e-3), n_boot=200)),
}


def make_scores(spec: dict[str, Any], seed: int) -> Any:
    """The score set of a case (built with this tree's simulators: both trees read the same file)."""
    from dpaudit.mia.designs import keep_matrix, poisson_keep
    from dpaudit.mia.scores import ScoreSet
    from dpaudit.mia.simulate import gaussian_scores
    from dpaudit.mia.simulate.shapes import shaped_scores

    m, n = spec["m"], spec["n"]
    if spec["kind"] == "gauss":
        return gaussian_scores(m, n, seed=seed).to_scoreset()
    if spec["kind"] == "shape":
        return shaped_scores(spec["shape"], m, n, seed=seed, effect=0.5)
    rng = np.random.default_rng(seed)
    keep = poisson_keep(m, n, inclusion=0.5, seed=rng)
    bad = (keep.sum(axis=0) < 3) | (m - keep.sum(axis=0) < 3)
    if bad.any():
        keep[:, bad] = keep_matrix(m, int(bad.sum()), seed=rng)
    sd = np.exp(0.5 * rng.normal(size=n))
    score = rng.normal(size=n) + sd * rng.normal(size=(m, n)) + keep * rng.normal(size=n) ** 2 * sd
    if spec.get("ties"):
        score = np.round(score * 2) / 2
    if spec.get("zeros"):  # signed zeros: a third of the scores ±0.0, whole groups of some records
        score[rng.random(score.shape) < 1 / 3] = 0.0
        score[:, : n // 10] = 0.0
        score = np.where(rng.random(score.shape) < 0.5, -1.0, 1.0) * score
    return ScoreSet(score, keep, train_size=n // 2, pool_size=n)


def run_cases(src: Path, folder: Path, names: list[str]) -> int:
    """(In the child.) Evaluate every case's saved scores with the dpaudit of ``src``; pickle the reports."""
    sys.path.insert(0, str(src))
    import dpaudit

    if Path(dpaudit.__file__).resolve().parents[1] != src.resolve():
        raise RuntimeError(f"imported {dpaudit.__file__}, not the dpaudit of {src}")
    from dpaudit.mia import fits
    from dpaudit.mia.attacks import LiRA
    from dpaudit.mia.evaluate import evaluate
    from dpaudit.mia.scores import ScoreSet

    out = {}
    for name in names:
        spec, kw = {**CASES, **BIG}[name]
        kw = dict(kw)
        if kw.get("attack") == "lira-median-global":
            kw["attack"] = LiRA(location="median", variance="global")
        defaults = fits.column_blocks.__defaults__
        if "blocks" in spec:
            fits.column_blocks.__defaults__ = (spec["blocks"],)
        try:
            out[name] = evaluate(ScoreSet.load(folder / f"{list({**CASES, **BIG}).index(name)}.npz"), **kw).to_dict()
        finally:
            fits.column_blocks.__defaults__ = defaults
    (folder / f"reports-{os.getpid()}.pkl").write_bytes(pickle.dumps(out))
    print(dpaudit.__file__, os.getpid())
    return 0


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Every place where two reports' dicts differ (floats compared bit for bit, NaN equal to NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        same = x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
        return [] if same else [f"{path}: arrays differ"]
    if isinstance(a, float) and isinstance(b, float):
        same = (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
        return [] if same else [f"{path}: {a!r} vs {b!r}"]
    return [] if type(a) is type(b) and a == b else [f"{path}: {a!r} vs {b!r}"]


def reports_of(src: Path, folder: Path, names: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, str(HERE), "--_child", str(src), str(folder), *names], env=env,
                          check=True, capture_output=True, text=True)
    pid = done.stdout.split()[-1]
    return pickle.loads((folder / f"reports-{pid}.pkl").read_bytes())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--reference", type=Path, default=Path("/work/main/src"), help="the other tree's src/")
    ap.add_argument("--big", action="store_true", help="also the benchmark's size (M = 256, N+ = 50,000)")
    ap.add_argument("--_child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        return run_cases(Path(args._child[0]), Path(args._child[1]), args._child[2:])
    sys.path.insert(0, str(SRC))  # the score sets are made with this tree's simulators
    names = list(CASES) + (list(BIG) if args.big else [])
    with tempfile.TemporaryDirectory(prefix="mia_same_as_") as tmp:
        folder = Path(tmp)
        every = list({**CASES, **BIG})
        for name in names:
            spec = {**CASES, **BIG}[name][0]
            make_scores(spec, every.index(name) % 7).save(folder / f"{every.index(name)}.npz")
        ours, theirs = reports_of(SRC, folder, names), reports_of(args.reference, folder, names)
    failed = 0
    for name in names:
        diff = differences(ours[name], theirs[name])
        failed += bool(diff)
        print(f"{'SAME' if not diff else 'DIFFERENT'}  {name}" + ("".join(f"\n    {d}" for d in diff[:8])))
    print(json.dumps({"cases": len(names), "different": failed, "reference": str(args.reference)}))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
