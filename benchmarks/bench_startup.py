"""Benchmark: start-up, as fresh processes (issue 25, "Sub-second start").

Run from the repository root::

    DPAUDIT_DATA=../shared/datasets python benchmarks/bench_startup.py            # 15 rounds
    DPAUDIT_DATA=../shared/datasets python benchmarks/bench_startup.py --repeat 31

Each side is a new interpreter (``sys.executable``, this tree's ``src/`` first on ``PYTHONPATH``),
timed from spawn to exit, interleaved (a b c … | … c b a, after one untimed warm-up each), medians.
The tree's modules run from bytecode compiled once, by the warm-up, as an installed package's (``pip
install`` compiles them; the baseline's packages have theirs) — also when ``PYTHONDONTWRITEBYTECODE``
is set around the script, which would otherwise have every process compile some 60 modules from
source (about 55 ms of the audit on the reference machine); ``--from-source`` measures that instead.
Sides:

* ``dpaudit --help`` (``python -m dpaudit --help``), target ≤ 0.3 s absolute;
* a small exact audit, ``dpaudit fairness adult -c "sex ⊥ income" --exact`` (needs ``DPAUDIT_DATA``),
  target ≤ 1.5× the baseline;
* ``python -c "import dpaudit"``;
* the **baseline** ``python -c "import duckdb, pandas"``: what any DuckDB + pandas script pays
  before its first line of work;
* ``python -c "pass"``: the interpreter alone, for scale.

The untimed check: every side exits 0, the audit prints U_MI^TVD, the help names the ``fairness`` command.

Importable (``benchmarks/run_all.py``)::

    run_startup(*, repeat=15, warmup=1, bytecode=True) -> dict   # the scripts' result dict (``_suite/timing.run_sides``)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
from _suite.config import REPO
from _suite.timing import print_result, run_sides

TARGET_HELP_S = 0.3     # dpaudit --help, seconds
TARGET_AUDIT = 1.5      # small exact audit / python -c "import duckdb, pandas"
BASELINE = 'baseline: python -c "import duckdb, pandas"'
AUDIT = 'dpaudit fairness adult -c "sex ⊥ income" --exact'
HELP = "dpaudit --help"

COMMANDS: dict[str, list[str]] = {
    BASELINE: ["-c", "import duckdb, pandas"],
    HELP: ["-m", "dpaudit", "--help"],
    AUDIT: ["-m", "dpaudit", "fairness", "adult", "-c", "sex ⊥ income", "--exact"],
    'python -c "import dpaudit"': ["-c", "import dpaudit"],
    'python -c "pass"': ["-c", "pass"],
}


def _env(src: Path, bytecode: bool) -> dict[str, str]:
    """The sides' environment: ``src`` first on ``PYTHONPATH``; with ``bytecode``, the tree's modules
    are compiled once (by the warm-up, into its ``__pycache__``) as ``pip install`` or any first run
    does, the baseline's installed packages having theirs; without, ``PYTHONDONTWRITEBYTECODE`` (a copy
    of the tree without bytecode is compiled from source by every process)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(src), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("COLUMNS", "100")
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _process(args: Sequence[str], env: dict[str, str]) -> Callable[[], subprocess.CompletedProcess[str]]:
    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, check=False)
    return run


def run_startup(*, repeat: int = 15, warmup: int = 1, bytecode: bool = True) -> dict[str, Any]:
    """Every command of :data:`COMMANDS` as a fresh process, interleaved; ratios to :data:`BASELINE`.
    ``bytecode``: this tree's modules compiled once, as installed (default); False: from source in every
    process (a copy of ``src/`` without ``__pycache__``, ``PYTHONDONTWRITEBYTECODE``)."""
    if not os.environ.get("DPAUDIT_DATA"):
        raise SystemExit("bench_startup: set DPAUDIT_DATA (the folder holding adult/) for the audit side")
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as scratch:
        src = REPO / "src"
        if not bytecode:
            src = Path(shutil.copytree(src, Path(scratch) / "src", ignore=shutil.ignore_patterns("__pycache__")))
        return _run(_env(src, bytecode), repeat, warmup, bytecode)


def _run(env: dict[str, str], repeat: int, warmup: int, bytecode: bool) -> dict[str, Any]:
    fns = {name: _process(args, env) for name, args in COMMANDS.items()}

    def verify() -> str:
        done = {name: fn() for name, fn in fns.items()}
        failed = {n: d.stderr[-300:] for n, d in done.items() if d.returncode != 0}
        assert not failed, failed
        assert "U_MI^TVD" in done[AUDIT].stdout or "tvd" in done[AUDIT].stdout.lower(), done[AUDIT].stdout
        assert "fairness" in done[HELP].stdout, done[HELP].stdout
        return "every side exited 0; the audit printed U_MI^TVD, the help lists the fairness command"

    return run_sides("Start-up, fresh processes", 0, fns, BASELINE, repeat, warmup, verify,
                     targets={"help_seconds": TARGET_HELP_S, "audit_ratio": TARGET_AUDIT},
                     bytecode="compiled once, as installed" if bytecode else "compiled from source by every process")


def misses(result: dict[str, Any]) -> list[str]:
    """The start-up targets missed: ``--help`` above 0.3 s, the audit above 1.5× the baseline."""
    sides = result["sides"]
    out = []
    if sides[HELP]["median"] > TARGET_HELP_S:
        out.append(f"{HELP} {sides[HELP]['median']:.3f} s > {TARGET_HELP_S} s")
    if sides[AUDIT]["ratio"] > TARGET_AUDIT:
        out.append(f"{AUDIT} {sides[AUDIT]['ratio']:.2f}x > {TARGET_AUDIT}x the baseline")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15, help="timed rounds per command (default 15)")
    ap.add_argument("--from-source", action="store_true",
                    help="compile this tree's modules from source in every process (PYTHONDONTWRITEBYTECODE, "
                         "no __pycache__) instead of once, as an installed package has them")
    args = ap.parse_args(argv)
    result = run_startup(repeat=args.repeat, bytecode=not args.from_source)
    print_result(result)
    print(f"  dpaudit's bytecode: {result['bytecode']}")
    sides = result["sides"]
    print(f"\n  {HELP}: {sides[HELP]['median']:.3f} s (target <= {TARGET_HELP_S} s)")
    print(f"  audit / baseline: {sides[AUDIT]['ratio']:.2f}x (target <= {TARGET_AUDIT}x)")
    missed = misses(result)
    print("Targets: " + ("met" if not missed else "missed: " + "; ".join(missed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
