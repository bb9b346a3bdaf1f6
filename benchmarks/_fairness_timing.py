"""Timing and memory helpers of the benchmark scripts (``bench_fairness.py``, ``bench_mia.py``,
``bench_spark.py``): interleaved runs summarized as medians and ratios, the load, the peak RSS, and the
printed table of one result."""

from __future__ import annotations

import os
import resource
import statistics
import sys
from collections.abc import Callable
from typing import Any

from _suite.timing import interleaved


def summarize(times: dict[str, list[float]], baseline: str) -> dict[str, dict[str, Any]]:
    """Median of each side, its ratio to the baseline's median, and the range of per-round ratios."""
    base = statistics.median(times[baseline])
    out = {}
    for name, seconds in times.items():
        rounds = [a / b for a, b in zip(seconds, times[baseline])]
        out[name] = {"seconds": seconds, "median": statistics.median(seconds),
                     "ratio": statistics.median(seconds) / base, "round_ratios": [min(rounds), max(rounds)]}
    return out


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def status_mib(field: str) -> float | None:
    """``VmRSS`` / ``VmHWM`` of this process from /proc (Linux), MiB; None elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def reset_high_water_mark() -> bool:
    """Reset this process's peak RSS (``echo 5 > /proc/self/clear_refs``, Linux ≥ 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def ru_maxrss_mib() -> float:
    """``ru_maxrss`` of this process (KiB on Linux, bytes on macOS). On Linux a process started by
    fork + exec inherits its parent's peak here, so it overstates a fresh child's own peak."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far: ``VmHWM`` (the high-water mark of this
    process's own memory, not inherited across exec) where /proc exists, else ``ru_maxrss``."""
    hwm = status_mib("VmHWM")
    return hwm if hwm is not None else ru_maxrss_mib()


def _run(name: str, rows: int, fns: dict[str, Callable[[], Any]], baseline: str, repeat: int, warmup: int,
         verify: Callable[[], str], **extra: Any) -> dict[str, Any]:
    before = load()
    times = interleaved(fns, repeat, warmup=warmup)
    after = load()
    return {"name": name, "rows": rows, "baseline": baseline, "sides": summarize(times, baseline),
            "load": {"before": before, "after": after}, "check": verify(), "repeat": repeat, **extra}


def print_result(result: dict[str, Any]) -> None:
    print(f"\n{result['name']}, {result['rows']:,} rows — medians of {result['repeat']} interleaved runs; "
          f"load {result['load']['before']} → {result['load']['after']}")
    for side, s in result["sides"].items():
        rng = "" if side == result["baseline"] else f"  (rounds {s['round_ratios'][0]:.2f}–{s['round_ratios'][1]:.2f}x)"
        print(f"  {side:<50} {s['median'] * 1e3:10.2f} ms   {s['ratio']:6.2f}x{rng}")
    if "peak_rss_mib" in result:
        print("  peak RSS, fresh process: " + ", ".join(f"{k} {v:,.0f} MiB" for k, v in result["peak_rss_mib"].items()))
    if "reference" in result:
        print(f"  reference: {result['reference']}")
    print(f"  check: {result['check']}")
