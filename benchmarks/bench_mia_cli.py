"""Benchmark: ``dpaudit mia evaluate FILE`` as a process against loading and evaluating the same file in a
warm Python process.

The score file is written by the project itself (``dpaudit.mia.simulate.gaussian_scores(M, N+,
seed).to_scoreset().save(FILE)``: the uncompressed ``.npz`` of ``dpaudit.mia.scores`` that ``dpaudit
mia simulate calibration --out`` and ``mia train`` write). Sides, timed interleaved in this process
(``_suite.timing``: one untimed warm-up each, order reversed every round, medians, ratio of the medians,
per-round ratio range, ``os.getloadavg()`` before and after):

* ``in-process`` (the baseline): ``evaluate(ScoreSet.load(FILE), fpr=(1e-2, 1e-3), n_boot=B)`` in
  this process, where numpy, scipy and dpaudit are already imported — what a user pays in a notebook;
* ``process``: ``python -m dpaudit mia evaluate FILE --n-boot B`` (the text report, as a user runs
  it), started and waited for: interpreter start, imports, reading the file, the evaluation, the output;
* ``np.sort``: one sort of the flattened score matrix, for scale (the floor of issue 14's targets).

Both dpaudit sides run the same code on the same cores: ``--cores N`` (default: all this process may
use) pins this process, and so the children it starts, to the first N of them. Target (issue 25,
"Sub-second start"): the process ≤ 2× the in-process side at M = 256, N+ = 50,000, judged at each
``--n-boot`` given (default 0 and 200, the CLI's default). Untimed check: the process's ``--json``
report equals the in-process report's JSON document.

Run: ``python benchmarks/bench_mia_cli.py [--models 256] [--records 50000] [--n-boot 0 --n-boot 200]
[--repeat 5] [--cores N] [--json FILE]``. Exit status 1 when the target is missed at its size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
import numpy as np
from _suite.timing import loadavg, run_sides
from _suite.timing import print_result as print_timing

from dpaudit._io import atomic_write_text, to_jsonable
from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.simulate import gaussian_scores
from dpaudit.report.json import render_json

FPR = (1e-2, 1e-3)
TARGET = 2.0
BASELINE = "in-process: ScoreSet.load + evaluate"
SORT = "np.sort of the M×N+ scores"


def process_side(n_boot: int) -> str:
    return f"process: dpaudit mia evaluate FILE --n-boot {n_boot}"


def in_process_side(n_boot: int) -> str:
    return BASELINE if n_boot == 0 else f"{BASELINE} (n_boot={n_boot})"


def pin_cores(cores: int | None) -> list[int]:
    """Restrict this process (and every child it starts) to its first ``cores`` allowed CPUs; the CPUs used."""
    if not hasattr(os, "sched_getaffinity"):
        return []
    allowed = sorted(os.sched_getaffinity(0))
    if cores is not None:
        allowed = allowed[:max(1, cores)]
        os.sched_setaffinity(0, allowed)
    return allowed


def _command(path: Path, n_boot: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "dpaudit", "mia", "evaluate", str(path), "--n-boot", str(n_boot), *extra]


def _env() -> dict[str, str]:
    """This environment with this tree's src/ first on PYTHONPATH (the child runs the code measured here)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(_suite.SRC), *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_process(path: Path, n_boot: int, *extra: str) -> str:
    done = subprocess.run(_command(path, n_boot, *extra), capture_output=True, text=True, env=_env(), check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dpaudit mia evaluate failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def _check(path: Path, flat: np.ndarray, boots: Sequence[int]) -> str:
    """Untimed: each process's JSON report is the in-process report's JSON document; the sort sorted."""
    for b in boots:
        mine = json.loads(render_json(evaluate(ScoreSet.load(path), fpr=FPR, n_boot=b)))
        theirs = json.loads(run_process(path, b, "--json"))
        if mine != theirs:
            raise RuntimeError(f"n_boot={b}: the process's report differs from the in-process report")
    done = np.sort(flat)
    if not bool(np.all(done[1:] >= done[:-1])):
        raise RuntimeError("np.sort did not sort")
    return (f"the process's --json report equals the in-process report at n_boot = {', '.join(map(str, boots))}; "
            f"sorted {flat.size:,} values")


def run_cli(models: int = 256, records: int = 50_000, boots: Sequence[int] = (0, 200), *, repeat: int = 5,
            warmup: int = 1, seed: int = 0, cores: int | None = None) -> dict[str, Any]:
    """Time the process against the in-process evaluation of one score file (module docstring)."""
    used = pin_cores(cores)
    boots = tuple(int(b) for b in boots)
    with tempfile.TemporaryDirectory(prefix="bench_mia_cli_") as folder:
        path = gaussian_scores(models, records, seed=seed).to_scoreset().save(Path(folder) / "scores.npz")
        flat = ScoreSet.load(path).score.reshape(-1)

        def in_process(n_boot: int) -> Callable[[], Any]:
            return lambda: evaluate(ScoreSet.load(path), fpr=FPR, n_boot=n_boot)

        def process(n_boot: int) -> Callable[[], Any]:
            return lambda: run_process(path, n_boot)

        fns: dict[str, Callable[[], Any]] = {}
        for b in boots:
            fns[in_process_side(b)] = in_process(b)
            fns[process_side(b)] = process(b)
        fns[SORT] = lambda: np.sort(flat)
        if BASELINE not in fns:
            raise ValueError("boots must include 0 (the baseline is the in-process evaluation with n_boot = 0)")
        result = run_sides(f"dpaudit mia evaluate FILE, M = {models} models × N+ records", records, fns, BASELINE,
                           repeat, warmup, lambda: _check(path, flat, boots), models=models, cpus=used,
                           file_mib=path.stat().st_size / 2**20, matrix_mib=flat.size * 8 / 2**20)
    result["targets"] = {}
    sides = result["sides"]
    for b in boots:
        value = sides[process_side(b)]["median"] / sides[in_process_side(b)]["median"]
        result["targets"][f"process / in-process, n_boot={b}"] = {"value": value, "target": TARGET,
                                                                  "met": value <= TARGET}
        result["targets"][f"process / sort, n_boot={b}"] = {"value": sides[process_side(b)]["median"]
                                                            / sides[SORT]["median"], "target": None, "met": True}
    return result


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--models", type=int, default=256)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--n-boot", type=int, action="append", default=None,
                    help="bootstrap replicates; repeatable (default 0 and 200; 0 is always run: the baseline)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per side (default 5)")
    ap.add_argument("--cores", type=int, default=None, help="pin this process and its children to N CPUs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="write the result (all repeats) to this file")
    args = ap.parse_args(argv)
    boots = sorted({0, *(args.n_boot or [200])})
    print(f"numpy {np.__version__} | Python {sys.version.split()[0]} | {os.cpu_count()} CPU(s) | load {loadavg()}")
    result = run_cli(args.models, args.records, boots, repeat=args.repeat, seed=args.seed, cores=args.cores)
    print_timing(result)
    print(f"  CPUs used by both sides: {result['cpus']}; score file {result['file_mib']:.1f} MiB")
    at_size = args.models == 256 and args.records == 50_000
    for name, t in result["targets"].items():
        verdict = "" if t["target"] is None else f" ≤ {t['target']:g}: {'met' if t['met'] else 'MISSED'}"
        print(f"  {name}: {t['value']:.2f}x{verdict}{'' if at_size else ' (target set for M = 256, N+ = 50,000)'}")
    if args.json:
        atomic_write_text(args.json, json.dumps(to_jsonable(result), indent=1, allow_nan=False))
    return 1 if at_size and not all(t["met"] for t in result["targets"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
