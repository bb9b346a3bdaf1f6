"""The README's timing statements, measured: its main job (a DP fairness audit of Adult for four
criteria) and the 1M-row census preset, each with the default measures (U_MI^TVD and U_TC) and with
U_R added, end to end as a user runs them (a fresh ``dpaudit fairness`` process: imports, reading the
data, the audit, the report), interleaved run by run so that machine load hits every variant alike.

Run from the repository root::

    DPAUDIT_DATA=/path/to/datasets python benchmarks/readme_timings.py [--repeat 5] [--no-census-repair]

Prints one line per variant: median, min and max seconds and the load averages before and after.
U_R on the census preset takes minutes (one optimisation per block, 48 blocks), so it runs once.
The numbers in README.md ("Two commands", and the ``--measure`` paragraph) come from this script.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ADULT = ["adult", "-c", "education-num ⊥ income", "-c", "sex ⊥ income", "-c", "race ⊥ income",
         "-c", "sex ⊥ income | hours-per-week", "--epsilon", "1"]
CENSUS = ["census", "--preset", "paper", "--epsilon", "1"]
WITH_UR = ["-m", "tvd", "-m", "tc", "-m", "repair"]


def seconds(args: list[str]) -> float:
    """Wall seconds of one ``dpaudit fairness ARGS`` process (output discarded, failure raised)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dpaudit", "fairness", *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-census-repair", action="store_true", help="skip U_R on the census preset")
    opts = parser.parse_args()
    variants = {"main job, default measures": ADULT, "main job, with U_R": ADULT + WITH_UR,
                "census preset, default measures": CENSUS}
    times: dict[str, list[float]] = {name: [] for name in variants}
    load = os.getloadavg()
    seconds(ADULT)  # warm the file cache: every variant then reads the data from memory
    for _ in range(opts.repeat):
        for name, args in variants.items():
            times[name].append(seconds(args))
    if not opts.no_census_repair:
        times["census preset, with U_R (once)"] = [seconds(CENSUS + WITH_UR)]
    after = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load {load[0]:.1f} before, {after[0]:.1f} after")
    for name, values in times.items():
        print(f"{name:<34} median {statistics.median(values):7.2f} s  (min {min(values):.2f}, max {max(values):.2f}, "
              f"{len(values)} runs)")


if __name__ == "__main__":
    main()
