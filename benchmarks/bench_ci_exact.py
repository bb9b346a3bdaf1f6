"""Benchmark: exact ``ci`` (branch and bound) against the bounds it replaced, on the registered presets.

Run from the repository root (needs the shared datasets)::

    DPAUDIT_DATA=/path/to/datasets python benchmarks/bench_ci_exact.py
    python benchmarks/bench_ci_exact.py --dataset compas --work-limit 30 --repeat 3

U_R ``ci`` of a block is the L1 distance of its count table to the nearest non-negative rank-1 table.
Where both sides of a block have three or more values with data, dpaudit used to report two bounds:
an upper bound from alternating weighted-median descent with restarts and a lower bound from the
best fractional pairing of rows (or columns) into exact two-row problems — and released the lower
bound. It now runs a global branch and bound (``dpaudit.measures._ci_exact``) warm-started from them.

For every preset criterion with such blocks this script times, per block and interleaved in the same
process (a, b, b, a, …),

``before``
    the bounds alone (``_ci_upper`` + ``_pairing_lower``, what ``ci_block`` returned before);
``after``
    ``ci_block`` with the branch and bound at ``--work-limit`` work units per block (default: the
    library's, 30),

and prints the criterion's time before and after (sums of per-block medians) with their ratio, and the
gap Σ(upper − lower) before and after, absolute and relative to the upper bound, with the blocks'
statuses after. Blocks with a side of at most two values are closed forms in both and are skipped.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from typing import Any

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
import numpy as np
from _suite.timing import interleaved, median

from dpaudit import Criterion, count_tables, datasets
from dpaudit.measures._block import BlockRepair
from dpaudit.measures._ci import TOLERANCE, _ci_upper, _pairing_lower, ci_block
from dpaudit.measures._limits import DEFAULT_WORK_LIMIT, Limits


def multi_valued_blocks(name: str) -> list[tuple[str, list[np.ndarray]]]:
    """(criterion, its blocks with ≥ 3 values with data on both sides) for every preset criterion."""
    frame, schema = datasets.load(name)
    out = []
    for criteria in datasets.info(name).presets.values():
        parsed = [Criterion.parse(c) for c in criteria]
        for criterion, table in zip(criteria, count_tables(frame, parsed, schema)):
            blocks = []
            for block in table.counts:
                sub = block[block.sum(axis=1) > 0][:, block.sum(axis=0) > 0].astype(np.float64)
                if min(sub.shape) >= 3:
                    blocks.append(sub)
            if blocks:
                out.append((criterion, blocks))
    return out


def bounds_before(sub: np.ndarray) -> tuple[float, float]:
    """What ``ci_block`` returned for a multi-valued block before the branch and bound: (lower, upper)."""
    upper, _ = _ci_upper(sub, 8, 0)
    return max(_pairing_lower(sub), _pairing_lower(sub.T)), upper


def time_block(sub: np.ndarray, work_limit: float, repeat: int) -> tuple[float, float, tuple[float, float], BlockRepair]:
    """Median seconds before and after (interleaved rounds), the bounds before and the block after."""
    results: dict[str, Any] = {}
    times = interleaved({
        "before": lambda: results.__setitem__("before", bounds_before(sub)),
        "after": lambda: results.__setitem__("after", ci_block(sub, limits=Limits(work_limit))),
    }, repeat, warmup=0)
    return median(times["before"]), median(times["after"]), results["before"], results["after"]


def run(name: str, work_limit: float, repeat: int) -> list[dict[str, object]]:
    rows = []
    for criterion, blocks in multi_valued_blocks(name):
        t_before = t_after = gap_before = gap_after = upper_before = upper_after = 0.0
        statuses: dict[str, int] = {}
        for sub in blocks:
            before_s, after_s, (lo, up), block = time_block(sub, work_limit, repeat)
            t_before, t_after = t_before + before_s, t_after + after_s
            gap_before, upper_before = gap_before + up - lo, upper_before + up
            gap_after, upper_after = gap_after + block.upper - block.lower, upper_after + block.upper
            statuses[block.status] = statuses.get(block.status, 0) + 1
        row = {"dataset": name, "criterion": criterion, "blocks": len(blocks), "before_s": t_before,
               "after_s": t_after, "gap_before": gap_before, "gap_after": gap_after,
               "rel_gap_before": gap_before / upper_before, "rel_gap_after": gap_after / upper_after,
               "statuses": statuses}
        rows.append(row)
        status = ", ".join(f"{v} {k}" for k, v in sorted(statuses.items()))
        print(f"{name:<18} {criterion:<42} {len(blocks):>3} {t_before:>9.3f} {t_after:>9.2f} "
              f"{t_after / t_before:>8.0f}x {gap_before:>12,.2f} ({gap_before / upper_before:>6.1%}) "
              f"{gap_after:>10,.3f} ({gap_after / upper_after:>7.3%})  {status}", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", action="append", help="registered dataset (repeatable; default: all)")
    ap.add_argument("--work-limit", type=float, default=DEFAULT_WORK_LIMIT,
                    help=f"branch and bound work units per block (default {DEFAULT_WORK_LIMIT:g}, the library's)")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds per block (medians)")
    args = ap.parse_args()
    if not os.environ.get("DPAUDIT_DATA"):
        print("set DPAUDIT_DATA to the shared datasets folder", file=sys.stderr)
        return 2
    print(f"python {platform.python_version()} | {os.cpu_count()} CPU(s) | load {os.getloadavg()[0]:.2f} | "
          f"work limit {args.work_limit:g} per block | tolerance {TOLERANCE:g} | {args.repeat} round(s)")
    print(f"{'dataset':<18} {'criterion':<42} {'blk':>3} {'before s':>9} {'after s':>9} {'ratio':>9} "
          f"{'gap before (rel)':>22} {'gap after (rel)':>20}  statuses after")
    rows = []
    for name in args.dataset or datasets.names():
        rows += run(name, args.work_limit, args.repeat)
    closed = sum(r["statuses"].get("exact", 0) for r in rows)  # type: ignore[union-attr]
    total = sum(int(r["blocks"]) for r in rows)  # type: ignore[call-overload]
    exact_criteria = sum(r["statuses"].get("exact", 0) == r["blocks"] for r in rows)  # type: ignore[union-attr]
    print(f"\n{closed} of {total} multi-valued blocks exact after (0 before); "
          f"{exact_criteria} of {len(rows)} criteria exact after (0 before); "
          f"time {sum(float(r['after_s']) for r in rows):.1f} s after vs "
          f"{sum(float(r['before_s']) for r in rows):.2f} s before")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
