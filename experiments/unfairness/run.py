"""Reproduce the unfairness paper's experiments (the authors' ``main.py`` catalogue) and write the results page.

Run from the repository root::

    pip install -e ".[experiments]"                     # + diffprivlib, opacus (CPU torch)
    export DPAUDIT_DATA=/path/to/shared/datasets
    python experiments/unfairness/run.py all            # every experiment → docs/results/unfairness/, page
    python experiments/unfairness/run.py flip epsilon   # some of them (the page keeps the others' results)
    python experiments/unfairness/run.py all --quick --out /tmp/u --page /tmp/u.md   # CI-sized, minutes
    python experiments/unfairness/run.py --page-only    # re-render the page from the saved JSON

Each experiment writes ``<name>.json`` (rows and summary), ``<name>.csv`` (rows) and its figure(s) to
``--out``; the page (``--page``, default ``docs/results/unfairness.md``) is rendered from those files
only, so it is never hand-written. Seeded (``--seed``): the same command gives the same tables except
for timings and the Laplace draws of experiments 3–4 (OpenDP's sampler takes no seed, by design).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
if (ROOT / "src" / "dpaudit").is_dir():  # the working tree this script lives in
    sys.path.insert(0, str(ROOT / "src"))

import chunked  # noqa: E402
import common  # noqa: E402
import complexity  # noqa: E402
import epsilon  # noqa: E402
import fidelity  # noqa: E402
import flip  # noqa: E402
import models  # noqa: E402
import page  # noqa: E402
import runtime  # noqa: E402
import topk  # noqa: E402
import usecase  # noqa: E402

#: In the order of the authors' catalogue: plot_0 (models), plot_1/2 (fidelity), plot_3/4 (chunked), exp1/2
#: (runtime), exp3 (epsilon), exp5/6 (topk), exp7/exp10 (flip), exp8 (complexity), exp9 (usecase).
EXPERIMENTS = {"models": models, "fidelity": fidelity, "chunked": chunked, "runtime": runtime, "epsilon": epsilon,
               "topk": topk, "flip": flip, "complexity": complexity, "usecase": usecase}


#: Packages an experiment needs beyond dpaudit (``pip install -e ".[experiments]"``).
NEEDS = {"models": ("diffprivlib", "opacus", "torch"), "complexity": ("diffprivlib", "opacus", "torch")}


def _missing(names: list[str]) -> list[str]:
    import importlib.util

    wanted = ["matplotlib", "scipy"] + [pkg for name in names for pkg in NEEDS.get(name, ())]
    return [pkg for pkg in dict.fromkeys(wanted) if importlib.util.find_spec(pkg) is None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiments", nargs="*", metavar="EXPERIMENT",
                        help=f"experiments to run: {', '.join(EXPERIMENTS)}, or all")
    parser.add_argument("--quick", action="store_true", help="small grids and datasets (CI; minutes)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "unfairness")
    parser.add_argument("--page", type=Path, default=ROOT / "docs" / "results" / "unfairness.md")
    parser.add_argument("--datasets", nargs="+", default=None, help="override the dataset list")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--page-only", action="store_true", help="only re-render the page from --out")
    args = parser.parse_args(argv)
    if not args.experiments and not args.page_only:
        parser.error("name the experiments to run (or 'all'), or pass --page-only")
    unknown = sorted(set(args.experiments) - {*EXPERIMENTS, "all"})
    if unknown:
        parser.error(f"unknown experiment(s) {', '.join(unknown)}; choose from {', '.join(EXPERIMENTS)}, or all")
    names = list(EXPERIMENTS) if "all" in args.experiments else list(dict.fromkeys(args.experiments))
    if args.datasets:
        unknown = sorted(set(args.datasets) - set(common.FULL_DATASETS))
        if unknown:
            parser.error(f"unknown dataset(s) {', '.join(unknown)}; known: {', '.join(common.FULL_DATASETS)}")
    missing = _missing(names)
    if missing:  # before anything is written
        parser.error(f"missing package(s) {', '.join(missing)}: pip install -e '.[experiments]'")
    config = common.Config(out=args.out, quick=args.quick, seed=args.seed, datasets=tuple(args.datasets or ()))
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        start = time.perf_counter()
        print(f"[{name}] running ({'quick' if args.quick else 'full'})", flush=True)
        result = EXPERIMENTS[name].run(config)
        result["seconds"] = time.perf_counter() - start
        result["doc"] = (EXPERIMENTS[name].__doc__ or "").split("\n\n", 1)[-1].strip()
        result["config"] = {"quick": config.quick, "seed": config.seed, "datasets": list(config.datasets),
                            "work_limit": config.work_limit}
        common.save(result, args.out)
        print(f"[{name}] done in {result['seconds']:.1f} s", flush=True)
    results = {}
    for name in EXPERIMENTS:
        path = args.out / f"{name}.json"
        if path.is_file():
            results[name] = json.loads(path.read_text(encoding="utf-8"))
    page.write(results, args.page, args.out, list(EXPERIMENTS))
    print(f"page: {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
