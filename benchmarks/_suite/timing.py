"""Same-process, interleaved timing; medians and ratios; peak RSS; the machine's state while it ran.
Shared by the suite and every benchmark script.

Every number the suite reports is a ratio ``dpaudit / baseline`` of two medians measured in the same
process, with the calls interleaved (a, b, b, a, a, b, …: the order is reversed every round), so that
drift in the machine's load (other processes on the 2 shared cores, CPU frequency, page cache) hits
both sides alike. Absolute seconds are printed beside each ratio for scale only.

The scripts' run functions return one result dict (:func:`run_sides`)::

    {"name", "rows", "baseline": side name, "sides": {side: {"seconds": [...], "median", "ratio",
     "round_ratios": [min, max]}}, "load": {"before": [1, 5, 15 min], "after": [...]}, "check": text,
     "repeat", ...}
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

#: Distributions whose versions every document records (absent ones are recorded as absent).
VERSIONED = ("dpaudit", "numpy", "pandas", "pyarrow", "duckdb", "narwhals", "scikit-learn", "fairlearn",
             "python-sat", "matplotlib", "polars")


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence (the mean of the middle two for an even count).

    Examples
    --------
    >>> median([3.0, 1.0, 2.0]), median([4.0, 1.0, 2.0, 3.0])
    (2.0, 2.5)
    """
    if not values:
        raise ValueError("median of no values")
    return float(statistics.median(values))


def ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """``median(a) / median(b)``: how many times longer side a took than side b.

    Examples
    --------
    >>> ratio([2.0, 4.0, 3.0], [1.0, 1.0, 2.0])
    3.0
    """
    mb = median(b)
    return median(a) / mb if mb > 0 else float("inf")


def round_ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """Per-round ratios ``a[i] / b[i]`` (the two calls of a round ran next to each other).

    Their spread shows how noisy the run was: a busy machine widens it, while the ratio of the
    medians stays put.

    Examples
    --------
    >>> round_ratios([2.0, 3.0], [1.0, 2.0])
    [2.0, 1.5]
    """
    return [x / y if y > 0 else float("inf") for x, y in zip(a, b)]


def loadavg() -> list[float]:
    """The 1, 5 and 15-minute load averages, rounded to 0.01 (empty where the platform has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return []


def load1() -> float:
    """The 1-minute load average (0 where the platform has none)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0.0


def interleaved(fns: Mapping[str, Callable[[], Any]], repeat: int, *, warmup: int = 1) -> dict[str, list[float]]:
    """Wall times of ``repeat`` calls of each function, after ``warmup`` untimed calls of each.

    Round r calls the functions in their given order when r is even and in reverse order when r is
    odd (a, b | b, a | a, b …), each call after a ``gc.collect()``.

    Examples
    --------
    >>> calls = []
    >>> times = interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3, warmup=0)
    >>> "".join(calls), sorted(times), [len(t) for t in times.values()]
    ('abbaab', ['a', 'b'], [3, 3])
    """
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns)
    for r in range(repeat):
        for name in order if r % 2 == 0 else order[::-1]:
            gc.collect()
            t0 = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def summarize(times: Mapping[str, list[float]], baseline: str) -> dict[str, dict[str, Any]]:
    """Each side's seconds, median, ratio to the baseline's median and range of per-round ratios.

    >>> summarize({"b": [1.0, 2.0], "a": [2.0, 3.0]}, "b")["a"]
    {'seconds': [2.0, 3.0], 'median': 2.5, 'ratio': 1.6666666666666667, 'round_ratios': [1.5, 2.0]}
    """
    base = times[baseline]
    out = {}
    for name, seconds in times.items():
        rounds = round_ratios(seconds, base)
        out[name] = {"seconds": seconds, "median": median(seconds), "ratio": ratio(seconds, base),
                     "round_ratios": [min(rounds), max(rounds)]}
    return out


def run_sides(name: str, rows: int, fns: Mapping[str, Callable[[], Any]], baseline: str, repeat: int, warmup: int,
              verify: Callable[[], str], **extra: Any) -> dict[str, Any]:
    """Time ``fns`` (one of them the ``baseline``) interleaved, then run the untimed check ``verify``:
    the scripts' result dict (module docstring), with ``extra`` added."""
    before = loadavg()
    times = interleaved(fns, repeat, warmup=warmup)
    after = loadavg()
    return {"name": name, "rows": rows, "baseline": baseline, "sides": summarize(times, baseline),
            "load": {"before": before, "after": after}, "check": verify(), "repeat": repeat, **extra}


def print_result(result: Mapping[str, Any]) -> None:
    """A result dict as a console table: each side's median, ratio and per-round range; peak RSS; check."""
    print(f"\n{result['name']}, {result['rows']:,} rows — medians of {result['repeat']} interleaved runs; "
          f"load {result['load']['before']} → {result['load']['after']}")
    for side, s in result["sides"].items():
        rng = "" if side == result["baseline"] else f"  (rounds {s['round_ratios'][0]:.2f}–{s['round_ratios'][1]:.2f}x)"
        print(f"  {side:<50} {s['median'] * 1e3:10.2f} ms   {s['ratio']:6.2f}x{rng}")
    if "peak_rss_mib" in result:
        print("  peak RSS, fresh process: " + ", ".join(f"{k} {v:,.0f} MiB" for k, v in result["peak_rss_mib"].items()))
    if "reference" in result:
        print(f"  reference: {result['reference']}")
    print(f"  check: {result['check']}", flush=True)


# ---------------------------------------------------------------------------------------------------
# memory: the peak RSS of this process (Linux /proc, else getrusage), one side in a fresh process
# ---------------------------------------------------------------------------------------------------
def in_fresh_process(script: str | Path, *args: str) -> dict[str, Any]:
    """Run ``python script args…`` in a new process (a side measured there has its own peak RSS) and
    return the JSON object on the last line it printed."""
    done = subprocess.run([sys.executable, str(Path(script).resolve()), *args], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(script).name} {' '.join(args)} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


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
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far: ``VmHWM`` (the high-water mark of this
    process's own memory, not inherited across exec) where /proc exists, else ``ru_maxrss``."""
    hwm = status_mib("VmHWM")
    return hwm if hwm is not None else ru_maxrss_mib()


# ---------------------------------------------------------------------------------------------------
# the suite's rows
# ---------------------------------------------------------------------------------------------------
@dataclass
class Comparison:
    """One measured ratio: ``dpaudit`` (side a) against its baseline (side b), same process.

    ``a`` and ``b`` are the timed repeats in seconds (empty when the side could not run, e.g. a
    solver past its time limit; ``status`` then says why). ``load`` is the 1-minute load average
    before and after the measurement.
    """

    workload: str
    size: str
    a_name: str
    b_name: str
    a: list[float] = field(default_factory=list)
    b: list[float] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)
    check: str = ""
    status: str = "ok"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.a) and bool(self.b)

    @property
    def ratio(self) -> float | None:
        return ratio(self.a, self.b) if self.ok else None

    @property
    def spread(self) -> tuple[float, float] | None:
        if not self.ok:
            return None
        rr = round_ratios(self.a, self.b)
        return min(rr), max(rr)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["load"] = list(self.load)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        fields = dict(data)
        fields["load"] = tuple(fields.get("load", (0.0, 0.0)))
        return cls(**fields)


def compare(workload: str, size: str, a_name: str, a: Callable[[], Any], b_name: str, b: Callable[[], Any],
            repeat: int, *, warmup: int = 1, check: str = "", extra: dict[str, Any] | None = None) -> Comparison:
    """Time ``a`` against ``b`` interleaved and return the :class:`Comparison`."""
    before = load1()
    times = interleaved({"a": a, "b": b}, repeat, warmup=warmup)
    return Comparison(workload, size, a_name, b_name, times["a"], times["b"], (before, load1()), check,
                      extra=dict(extra or {}))


def compare_many(workload: str, size: str, contenders: Mapping[str, Callable[[], Any]], b_name: str,
                 b: Callable[[], Any], repeat: int, *, warmup: int = 1) -> list[Comparison]:
    """Several dpaudit variants against one baseline, all interleaved in one loop."""
    if "baseline" in contenders:
        raise ValueError("'baseline' is reserved")
    before = load1()
    times = interleaved({**contenders, "baseline": b}, repeat, warmup=warmup)
    after = load1()
    return [Comparison(workload, size, name, b_name, times[name], times["baseline"], (before, after))
            for name in contenders]


def versions() -> dict[str, str]:
    """Installed versions of :data:`VERSIONED` (``"absent"`` when not installed) and Python's."""
    out = {"python": platform.python_version()}
    for dist in VERSIONED:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    try:  # the dpaudit actually imported (this tree's src/), not whatever pip last installed
        import dpaudit

        out["dpaudit"] = dpaudit.__version__
    except ImportError:
        pass
    return out


def git_commit(repo: Path) -> str:
    """``<short hash>`` of HEAD, with ``+dirty`` when the tree has uncommitted changes ('' outside git)."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return head + ("+dirty" if dirty else "")


def machine(repo: Path) -> dict[str, Any]:
    """The state of the machine now: CPU count, load averages, versions, platform, commit, time."""
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "loadavg": loadavg(),
        "platform": platform.platform(terse=True),
        "machine": platform.machine(),
        "executable": sys.executable,
        "commit": git_commit(repo),
        "versions": versions(),
    }
