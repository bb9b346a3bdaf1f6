"""Benchmark: full MIA evaluation (all rules, two α, bootstrap CIs) vs one np.sort of the scores.

M = 256 models, N+ = 50,000 records of synthetic per-record Gaussian LiRA scores
(``dpaudit.mia.simulate.gaussian_scores``). The baseline is one ``np.sort`` of the flattened (M × N+)
score matrix — the least any exact pooled ROC must do. Targets (issue 14): ``evaluate(scores,
fpr=(1e-2, 1e-3))`` ≤ 15× the sort with ``n_boot=0``, ≤ 40× with ``n_boot=200`` (the CLI default),
peak RSS from loading the scores ≤ 4× the score matrix (M·N+·8 bytes).

Run: ``python benchmarks/bench_mia.py [--models 256] [--records 50000] [--n-boot 200] [--repeat 5]
[--cores 1] [--no-rss] [--oracle] [--json FILE]``.

Timing: every side (the sort, ``evaluate`` at each ``n_boot``) in this one process, interleaved
(a b c, c b a, …) after one untimed warm-up each, with medians, the ratio of the medians and the
range of the per-round ratios, and ``os.getloadavg()`` before and after (``_suite.timing``). Same
cores on both sides: the sort uses one, so by default (``--cores 1``) the process is pinned to one
CPU and BLAS's thread pools to one thread (:func:`same_cores`) — the bootstrap's background draw of
its record weights then shares that core instead of running on a second one; ``--cores 0`` leaves
every CPU to both. Memory: each side alone in a fresh process (``--_child``), on the same cores,
counted from loading the scores: the child writes the simulated scores to a score file and drops
them, resets its resident high-water mark (``/proc/self/clear_refs``, Linux), then runs the side from
the file — ``ScoreSet.load`` + ``evaluate`` (reading, validating, building the ScoreSet), or
``np.load`` + ``np.sort`` — and reports the mark (``VmHWM``; ``ru_maxrss`` where /proc is missing: see
:func:`child`), the RSS just before loading, the side's own peak (the difference: the loaded
matrices, every copy made while loading, the side's working memory) and the RSS the loaded inputs
hold. The RSS target is judged on that own peak, as a multiple of the score matrix (M·N+·8 bytes).

Importable (``benchmarks/run_all.py``)::

    run_eval(models=256, records=50_000, boots=(0, 200), *, repeat=5, warmup=1, seed=0, rss=True, oracle=False,
             cores=1) -> dict

returns ``{"name", "rows", "baseline", "sides": {side: {"seconds": [...], "median": s, "ratio":
median / baseline median, "round_ratios": [min, max]}}, "load": {"before", "after"}, "check": text,
"peak_rss_mib": {side: MiB}, "matrix_mib": float, ...}`` (the shape of ``bench_fairness.py``'s
``run_*``; ``peak_rss_mib`` and ``"rss"``, each child's details — peak while the side ran, RSS before
it, the side's own peak, the loaded inputs — only with ``rss``), ``"cpus"`` the CPUs both sides ran on
and ``"targets"`` the verdicts.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
import numpy as np
from _suite.timing import in_fresh_process, loadavg, reset_high_water_mark, ru_maxrss_mib, run_sides, status_mib
from _suite.timing import print_result as print_timing

from dpaudit._io import atomic_write_text, to_jsonable
from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.simulate import gaussian_scores

REPO = Path(__file__).resolve().parents[1]

FPR = (1e-2, 1e-3)
#: Targets of issue 14: evaluate / sort by n_boot (200 stands for any n_boot > 0), and RSS / matrix.
TARGET_RATIO = {0: 15.0, 200: 40.0}
TARGET_RSS_MULTIPLE = 4.0
BASELINE = "np.sort of the M×N+ scores"


def side_name(n_boot: int) -> str:
    return f"evaluate n_boot={n_boot}"


def target_ratio(n_boot: int) -> float:
    return TARGET_RATIO[0] if n_boot == 0 else TARGET_RATIO[200]


def workload(models: int, records: int, seed: int) -> tuple[Any, np.ndarray]:
    """The ScoreSet and the flattened score matrix (a view: the sort copies it, as ``np.sort`` does)."""
    sim = gaussian_scores(models, records, seed=seed)
    return sim.to_scoreset(), sim.score.reshape(-1)


# --------------------------------------------------------------------------------------------------
# memory: one side alone in a fresh process
# --------------------------------------------------------------------------------------------------
def child(side: str, models: int, records: int, seed: int, cores: int | None) -> int:
    """Run one side once in this fresh process, from loading the scores; print its wall time and memory.

    The simulated scores are written to a score file (``ScoreSet.save``) and dropped; then the
    resident high-water mark is reset (``/proc/self/clear_refs``) and the side runs from the file:
    ``ScoreSet.load`` + ``evaluate`` (reading the archive, validating it, building the ScoreSet, the
    evaluation), or ``np.load`` of the score member + ``np.sort``. ``peak_rss_mib``: the process's mark
    while the side ran (``VmHWM``); ``own_peak_mib``: that minus the RSS just before the side, so the
    loaded matrix, every copy made while loading and the side's working memory all count;
    ``loaded_mib``: the RSS the loaded inputs hold (the arrays the side was handed). Without /proc,
    ``ru_maxrss`` stands in for both marks. The reset lowers ``ru_maxrss`` too; without it the mark
    would not serve anyway: on Linux a child started by fork/vfork + exec inherits in ``ru_maxrss`` its
    parent's peak at the fork (the kernel records the old address space's mark at exec), here the
    timing process's.
    """
    with same_cores(cores), tempfile.TemporaryDirectory(prefix="bench_mia_") as folder:
        path = gaussian_scores(models, records, seed=seed).to_scoreset().save(Path(folder) / "scores.npz")
        gc.collect()
        before = status_mib("VmRSS")
        setup_peak = status_mib("VmHWM")
        reset = reset_high_water_mark()
        t0 = time.perf_counter()
        if side == "sort":
            with np.load(path) as archive:
                flat = archive["score"].reshape(-1)
            loaded = status_mib("VmRSS")
            np.sort(flat)
        else:
            scores = ScoreSet.load(path)
            loaded = status_mib("VmRSS")
            evaluate(scores, fpr=FPR, n_boot=int(side))
        seconds = time.perf_counter() - t0
    hwm = status_mib("VmHWM") if reset else None
    peak = hwm if hwm is not None else ru_maxrss_mib()
    own = peak - before if hwm is not None and before is not None else None
    held = loaded - before if loaded is not None and before is not None else None
    print(json.dumps({"side": side, "seconds": seconds, "peak_rss_mib": peak, "ru_maxrss_mib": ru_maxrss_mib(),
                      "setup_peak_mib": setup_peak, "before_mib": before, "own_peak_mib": own, "loaded_mib": held}))
    return 0


@contextlib.contextmanager
def same_cores(cores: int | None) -> Iterator[list[int]]:
    """Both sides on the same ``cores`` CPUs while the block runs: this process (and the children it
    starts) pinned to the first ``cores`` it may use, BLAS's thread pools limited to as many threads
    (threadpoolctl, where installed), and so the bootstrap's background draw on those CPUs too; ``None``
    leaves every CPU. Yields the CPUs used; restores the affinity and the pools on exit."""
    if not hasattr(os, "sched_getaffinity"):
        yield []
        return
    before = os.sched_getaffinity(0)
    allowed = sorted(before) if cores is None else sorted(before)[:max(1, cores)]
    with contextlib.ExitStack() as stack:
        if cores is not None:
            os.sched_setaffinity(0, allowed)
            stack.callback(os.sched_setaffinity, 0, before)
            try:
                from threadpoolctl import threadpool_limits

                stack.enter_context(threadpool_limits(limits=len(allowed)))
            except ImportError:  # the pinning alone still keeps every thread on those CPUs
                pass
        yield allowed


def fresh_process(side: str, models: int, records: int, seed: int, cores: int | None) -> dict[str, Any]:
    return in_fresh_process(__file__, "--_child", side, "--models", str(models), "--records", str(records),
                            "--seed", str(seed), *(() if cores is None else ("--cores", str(cores))))


# --------------------------------------------------------------------------------------------------
# the comparison
# --------------------------------------------------------------------------------------------------
def _check(scores: Any, flat: np.ndarray, boots: Sequence[int], oracle: bool) -> str:
    """Untimed: the sort sorted; the reports of every n_boot share their point estimates; with
    ``oracle``, the n_boot = 0 report equals the pre-change evaluation (tests/test_mia_fast_paths.py)."""
    done = np.sort(flat)
    if not (done.size == flat.size and bool(np.all(done[1:] >= done[:-1]))):
        raise RuntimeError("np.sort did not sort")
    reports = {b: evaluate(scores, fpr=FPR, n_boot=b) for b in boots}
    points = {b: [(rule.tpr, rule.fpr) for row in rep.rows for rule in row.rules.values()] for b, rep in reports.items()}
    first = points[boots[0]]
    if any(p != first for p in points.values()):
        raise RuntimeError("evaluate's point estimates differ between n_boot values")
    text = (f"sorted {flat.size:,} values; the point estimates of n_boot = {', '.join(map(str, boots))} are "
            f"identical (naive TPR at 1e-3: {reports[boots[0]].rows[-1].rules['naive'].tpr:.6g})")
    if oracle:
        sys.path.insert(0, str(REPO / "tests"))
        from test_mia_fast_paths import assert_reports_match, old_evaluate

        b = min(boots)
        assert_reports_match(reports[b], old_evaluate(scores, fpr=FPR, n_boot=b))
        text += f"; the n_boot = {b} report equals the pre-change evaluation (exact / ≤ 1e-12 relative)"
    return text


def run_eval(models: int = 256, records: int = 50_000, boots: Sequence[int] = (0, 200), *, repeat: int = 5,
             warmup: int = 1, seed: int = 0, rss: bool = True, oracle: bool = False,
             cores: int | None = 1) -> dict[str, Any]:
    """Time ``evaluate`` at each ``n_boot`` against one ``np.sort`` of the flattened score matrix,
    interleaved in this process, both on the same ``cores`` CPUs (default 1: the sort's one; None: all);
    with ``rss``, each side's peak RSS in a fresh process (module docstring). ``oracle`` also checks
    the report against the pre-change code (slow: ~40× the sort)."""
    boots = tuple(int(b) for b in boots)
    scores, flat = workload(models, records, seed)

    def evaluation(n_boot: int) -> Callable[[], Any]:
        return lambda: evaluate(scores, fpr=FPR, n_boot=n_boot)

    fns: dict[str, Callable[[], Any]] = {BASELINE: lambda: np.sort(flat)}
    fns.update({side_name(b): evaluation(b) for b in boots})
    with same_cores(cores) as cpus:
        result = run_sides(f"MIA evaluation, M = {models} models × N+ records", records, fns, BASELINE, repeat,
                           warmup, lambda: _check(scores, flat, boots, oracle), models=models,
                           matrix_mib=flat.size * 8 / 2**20, fpr=list(FPR), cpus=cpus)
    if rss:
        children = {BASELINE: fresh_process("sort", models, records, seed, cores)}
        children.update({side_name(b): fresh_process(str(b), models, records, seed, cores) for b in boots})
        result["rss"] = children
        result["peak_rss_mib"] = {side: c["peak_rss_mib"] for side, c in children.items()}
    result["targets"] = verdicts(result, boots)
    return result


def verdicts(result: dict[str, Any], boots: Sequence[int]) -> dict[str, dict[str, Any]]:
    """Each target of issue 14 with the measured value and whether it is met."""
    out: dict[str, dict[str, Any]] = {}
    for b in boots:
        side = side_name(b)
        ratio = result["sides"][side]["ratio"]
        out[f"{side} time"] = {"value": ratio, "target": target_ratio(b), "unit": "× sort",
                               "met": ratio <= target_ratio(b)}
        child_result = result.get("rss", {}).get(side)
        if child_result and child_result.get("own_peak_mib") is not None:
            multiple = child_result["own_peak_mib"] / result["matrix_mib"]
            out[f"{side} memory"] = {"value": multiple, "target": TARGET_RSS_MULTIPLE, "unit": "× matrix",
                                     "met": multiple <= TARGET_RSS_MULTIPLE}
    return out


def print_result(result: dict[str, Any]) -> None:
    """The timing table (``_suite.timing.print_result``), then each side's memory and the verdicts."""
    print_timing(result)
    mat = result["matrix_mib"]
    if "rss" in result:
        print(f"  memory, each side alone in a fresh process from loading the scores (score matrix {mat:.1f} MiB): "
              "peak while it ran; RSS before loading; its own peak; the loaded inputs")
        for side, c in result["rss"].items():
            own = "n/a" if c["own_peak_mib"] is None else f"{c['own_peak_mib']:.0f} MiB = {c['own_peak_mib'] / mat:.2f}x"
            before = "n/a" if c["before_mib"] is None else f"{c['before_mib']:.0f} MiB"
            held = "n/a" if c.get("loaded_mib") is None else f"{c['loaded_mib']:.0f} MiB"
            print(f"  {side:<42} {c['peak_rss_mib']:6.0f} MiB; {before}; {own}; {held}")
    print(f"  CPUs both sides ran on: {result.get('cpus')}")
    size = "" if at_target_size(result) else " (the targets are set for M = 256, N+ = 50,000: for reference)"
    for name, t in result["targets"].items():
        print(f"  target {name}: {t['value']:.2f}{t['unit']} ≤ {t['target']:g}: {'met' if t['met'] else 'MISSED'}{size}")


def at_target_size(result: dict[str, Any]) -> bool:
    return bool(result["models"] == 256 and result["rows"] == 50_000)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--models", type=int, default=256)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--n-boot", type=int, default=200, help="bootstrap replicates of the second side (default 200)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per side (default 5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-rss", action="store_true", help="skip the fresh-process peak RSS runs")
    ap.add_argument("--oracle", action="store_true", help="also check the report against the pre-change code")
    ap.add_argument("--json", type=Path, default=None, help="write the result (all repeats) to this file")
    ap.add_argument("--cores", type=int, default=1, help="CPUs both sides run on (default 1, the sort's; 0: all)")
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cores = args.cores or None
    if args._child:
        return child(args._child, args.models, args.records, args.seed, cores)
    print(f"numpy {np.__version__} | Python {sys.version.split()[0]} | {os.cpu_count()} CPU(s) | load {loadavg()}")
    boots = (0, args.n_boot) if args.n_boot else (0,)
    result = run_eval(args.models, args.records, boots, repeat=args.repeat, seed=args.seed, rss=not args.no_rss,
                      oracle=args.oracle, cores=cores)
    print_result(result)
    if args.json:
        atomic_write_text(args.json, json.dumps(to_jsonable(result), indent=1, allow_nan=False))
    missed = at_target_size(result) and not all(t["met"] for t in result["targets"].values())
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
