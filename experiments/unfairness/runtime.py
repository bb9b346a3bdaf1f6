"""exp1/exp2 — runtime against the number of rows and the number of criteria.

Paper's claim: U_TC (Algorithm 3) is the fastest, then U_MI^TVD (Algorithm 1); U_R (Algorithm 2,
MaxSAT) is 10²–10³× slower. The paper's U_R is the MaxSAT repair summed over 100-row chunks of the
sample (``ProxyRepairMaxSat``'s default ``chunk_size=100``); here it is :func:`chunked.maxsat_repair` —
RC2 (PySAT) on the complete tuple-level WCNF of every (chunk, A) block, each under a work budget of
``config.work_limit`` units (unit propagations, never a clock) — timed end to end from the sample's
rows. dpaudit's exact U_R (``bag``, the paper's semantics, from count tables) is a separate line.

Timing (CPU seconds of the process, :data:`CLOCK`, so that other jobs on the machine do not inflate
them), as the paper does it (exp1: ε = 1, four criteria, ``REPEATS`` fresh random samples per grid
point; min–max bands): dpaudit counts every criterion's table in one pass (``count``) and each measure
works on the tables, so a measure's end-to-end time is count + measure; the figure shows the shared
count and each measure on the tables. The paper's grids, capped at the rows each dataset has
(Stack Overflow 38,090, Healthcare 887 joined rows; census is dpaudit's synthetic IPUMS-CPS stand-in,
generated once at 10⁶ rows). exp2: the first 1…4 criteria at min(100K, rows).

Cuts (a full run must stay near 8 minutes on 2 cores): the chunked MaxSAT only at ``MAXSAT_POINTS``
(its cost grows with the number of chunks: Adult 1K ≈ 12 s, Stack Overflow 5K ≈ 50 s per run, so
Adult 30K would take ≈ 6 min per repeat); dpaudit's exact ``bag`` U_R on ``EXACT_REPEATS`` of the
samples; dpaudit's ``ci`` not timed (its branch and bound takes 8–100 s per run at full size).

Control of the ratio rules: a second, interleaved timing of U_TC (the same computation, so a ratio
≈ 1 by construction; which of the two runs first alternates between repeats).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import paper
from chunked import chunked_tables, maxsat_repair
from common import Config, claim, criteria_of, label, load, measurement

from dpaudit.counting import count_tables
from dpaudit.criteria import parse_criteria
from dpaudit.measures import TVD, Repair, TopContribution

NAME = "runtime"
TITLE = "exp1/exp2 — runtime vs rows and vs number of criteria"
GRIDS = {"adult": (1_000, 5_000, 10_000, 15_000, 30_000),
         "census": (5_000, 10_000, 50_000, 100_000, 300_000, 600_000, 1_000_000),
         "stackoverflow": (5_000, 10_000, 20_000, 40_000, 60_000),
         "compas": (1_000, 1_500, 3_000, 7_000, 10_000), "healthcare": (100, 200, 400, 700, 1_000)}
QUICK_GRIDS = {"healthcare": (100, 400), "compas": (1_000, 3_000)}
#: (rows, repeats) at which the paper's chunked MaxSAT U_R is timed.
MAXSAT_POINTS = {"adult": ((1_000, 3),), "census": ((5_000, 3),), "stackoverflow": ((5_000, 1),),
                 "compas": ((1_000, 3), (10_000, 1)), "healthcare": ((100, 10), (1_000, 3))}
QUICK_MAXSAT_POINTS = {"healthcare": ((100, 2),), "compas": ((1_000, 1),)}
REPEATS, QUICK_REPEATS, EXACT_REPEATS = 10, 3, 3
#: Calls of each fast measure per sample, interleaved; its time is the best of them.
INNER = 5
CENSUS_ROWS, CRITERIA_ROWS, N_CRITERIA = 1_000_000, 100_000, 4
#: "10²–10³× slower": the chunked U_R at least this many times the slower of U_MI^TVD and U_TC.
SLOWER = 100.0
#: "faster": the other's median time at least this many times its own (beyond timing noise), at
#: least ``SHARE`` of the grid points.
FASTER, SHARE = 1.2, 0.8
COLUMNS = [("series", "series"), ("dataset", "dataset"), ("rows", "rows"), ("criteria", "criteria"),
           ("count", "count s"), ("tvd", "U_MI^TVD s"), ("tc", "U_TC s"), ("repair_bag", "U_R bag exact s"),
           ("maxsat", "chunked MaxSAT s (end to end)"), ("maxsat_proven", "proven")]
#: CPU seconds of this process (all its threads): other jobs on a shared machine do not inflate them as
#: they do wall seconds (the paper's are wall seconds of a single run each).
CLOCK = time.process_time
KEYS = ("count", "tvd", "tc", "tc_again", "repair_bag")


def _seconds(fn: Any) -> float:
    start = CLOCK()
    fn()
    return CLOCK() - start


def _frame(name: str, quick: bool) -> tuple[Any, Any]:
    if name == "census":
        from dpaudit.datasets.synthetic import census

        return census(20_000 if quick else CENSUS_ROWS, seed=0)
    return load(name, quick)


def time_point(frame: Any, schema: Any, criteria: tuple[str, ...], n: int, repeats: int, seed: int,
               work_limit: float, maxsat_repeats: int = 0) -> dict[str, Any]:
    """``repeats`` fresh random samples of ``n`` rows (row order random, as the paper's ``df.sample``):
    seconds of the counting pass and of each measure on the tables; the paper's chunked MaxSAT U_R on
    the first ``maxsat_repeats`` samples (end to end from the rows)."""
    crits = parse_criteria(criteria)
    fast = {"tvd": TVD(), "tc": TopContribution()}
    bag = Repair(semantics="bag", work_limit=work_limit)
    got: dict[str, list[float]] = {k: [] for k in (*KEYS, "maxsat")}
    proven = {"repair_bag": True, "maxsat": True}
    for r in range(repeats):
        sample = frame.sample(n=min(n, len(frame)), random_state=seed * 1000 + r)
        got["count"].append(_seconds(lambda s=sample: count_tables(s, crits, schema)))
        tables = count_tables(sample, crits, schema)
        order = ("tc", "tvd", "tc_again") if r % 2 == 0 else ("tc_again", "tvd", "tc")  # interleaved, alternating
        best = dict.fromkeys(order, math.inf)
        for _ in range(INNER):  # sub-millisecond calls: the best of INNER (the first call on new tables pays extra)
            for key in order:
                measure = fast[key.removesuffix("_again")]
                best[key] = min(best[key], _seconds(lambda m=measure, t=tables: m.assess(t, details=False)))
        for key in order:
            got[key].append(best[key])
        if r < EXACT_REPEATS:
            start = CLOCK()
            proven["repair_bag"] &= not bag.assess(tables, details=False).caveats
            got["repair_bag"].append(CLOCK() - start)
        if r < maxsat_repeats:
            start = CLOCK()
            _, ok = maxsat_repair(chunked_tables(sample, schema, list(crits)), work_limit)
            got["maxsat"].append(CLOCK() - start)
            proven["maxsat"] &= ok
    out: dict[str, Any] = {"rows": min(n, len(frame)), "repeats": repeats}
    for key, values in got.items():
        out[key] = float(np.median(values)) if values else None
        out[f"{key}_band"] = [float(min(values)), float(max(values))] if values else None
        out[f"{key}_values"] = values
    out["repair_bag_proven"], out["maxsat_proven"] = proven["repair_bag"], proven["maxsat"] if got["maxsat"] else None
    return out


def run(config: Config) -> dict[str, Any]:
    grids = QUICK_GRIDS if config.quick else GRIDS
    points = QUICK_MAXSAT_POINTS if config.quick else MAXSAT_POINTS
    repeats = QUICK_REPEATS if config.quick else REPEATS
    rows: list[dict[str, Any]] = []
    for name, grid in grids.items():
        frame, schema = _frame(name, config.quick)
        criteria = criteria_of(name)[:N_CRITERIA]
        sat = dict(points.get(name, ()))
        capped = list(dict.fromkeys(min(n, len(frame)) for n in grid))
        for n in capped:
            wanted = [m for m in grid if min(m, len(frame)) == n]
            reps = max((sat.get(m, 0) for m in wanted), default=0)
            t = time_point(frame, schema, criteria, n, repeats, config.seed, config.work_limit, reps)
            rows.append({"series": "rows", "dataset": name, "criteria": len(criteria), "grid_rows": wanted,
                         "capped": n < max(wanted), **t})
        for j in range(1, len(criteria) + 1):
            t = time_point(frame, schema, criteria[:j], min(CRITERIA_ROWS, len(frame)), repeats, config.seed,
                           config.work_limit)
            rows.append({"series": "criteria", "dataset": name, "criteria": j, "grid_rows": [CRITERIA_ROWS],
                         "capped": len(frame) < CRITERIA_ROWS, **t})
    summary = summarise(rows)
    fig = draw(rows, config.out)
    return {"experiment": NAME, "rows": rows, "summary": summary, "figures": [fig]}


def _e2e(r: dict[str, Any], key: str) -> float:
    return r["count"] + r[key]


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The ratio statistics the claims read (from the rows only), the control's beside the data's."""
    sat = [r for r in rows if r["maxsat"] is not None]
    proven = [r for r in sat if r["maxsat_proven"]]

    def point(r: dict[str, Any]) -> str:
        return f"{r['dataset']} {r['series']}={r['rows'] if r['series'] == 'rows' else r['criteria']}"

    slower = {point(r): r["maxsat"] / max(_e2e(r, "tvd"), _e2e(r, "tc")) for r in proven}
    control_slower = {point(r): _e2e(r, "tc_again") / _e2e(r, "tc") for r in proven}
    exact = {point(r): _e2e(r, "repair_bag") / max(_e2e(r, "tvd"), _e2e(r, "tc")) for r in rows}
    faster = {point(r): r["tvd"] / r["tc"] for r in rows}
    control_faster = {point(r): r["tc_again"] / r["tc"] for r in rows}
    return {
        "slower_ratio": slower, "control_slower_ratio": control_slower, "exact_ratio": exact,
        "tvd_over_tc": faster, "control_tc_over_tc": control_faster,
        "tvd_below_maxsat": all(_e2e(r, "tvd") < r["maxsat"] for r in proven),
        "unproven_maxsat": [point(r) for r in sat if not r["maxsat_proven"]],
        "faster_share": _share(faster), "control_faster_share": _share(control_faster),
        "slower_rule": SLOWER, "faster_rule": FASTER, "share_rule": SHARE,
        "paper_maxsat": {f"{d} rows={n}": s for d, pts in paper.EXP1_RUNTIME.items() for n, s in pts},
        "paper_fast_seconds": {k: list(v) for k, v in paper.EXP1_FAST_SECONDS.items()},
    }


def _share(ratios: dict[str, float]) -> float:
    return float(np.mean([v >= FASTER for v in ratios.values()])) if ratios else math.nan


def _span(d: dict[str, float]) -> str:
    v = list(d.values())
    return f"{min(v):.3g}–{max(v):.3g} (median {np.median(v):.3g}, {len(v)} points)" if v else "n/a"


def tables(result: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]], list[tuple[str, str]]]]:
    """The timing rows, and the chunked MaxSAT beside the paper's seconds at the paper's points."""
    s = result["summary"]
    beside = []
    for r in result["rows"]:
        if r["series"] != "rows":
            continue
        for n in r["grid_rows"]:
            key = f"{r['dataset']} rows={n}"
            if key in s["paper_maxsat"]:
                beside.append({"dataset": r["dataset"], "rows": n, "measured_rows": r["rows"],
                               "maxsat": r["maxsat"], "maxsat_band": r["maxsat_band"], "maxsat_proven": r["maxsat_proven"],
                               "paper_maxsat": s["paper_maxsat"][key],
                               "ratio_to_paper": r["maxsat"] / s["paper_maxsat"][key] if r["maxsat"] else None,
                               "tvd_e2e": _e2e(r, "tvd"), "tc_e2e": _e2e(r, "tc"),
                               "paper_fast": f"TVD {s['paper_fast_seconds']['tvd']}, TC {s['paper_fast_seconds']['tc']}"})
    columns = [("dataset", "dataset"), ("rows", "paper's rows"), ("measured_rows", "rows measured"),
               ("maxsat", "chunked MaxSAT s"), ("maxsat_band", "min–max"), ("maxsat_proven", "proven"),
               ("paper_maxsat", "paper chunked U_R s (≈)"), ("ratio_to_paper", "ours / paper"),
               ("tvd_e2e", "U_MI^TVD s (count + measure)"), ("tc_e2e", "U_TC s (count + measure)"),
               ("paper_fast", "paper fast measures s (≈)")]
    return [("The paper's U_R seconds beside ours (different machine and solver: z3 there, RC2 here)", beside, columns),
            ("Every grid point (median of the repeats; bands in the JSON)", result["rows"], COLUMNS)]


def claims(result: dict[str, Any]) -> list[dict[str, Any]]:
    s = result["summary"]
    slower, control = s["slower_ratio"], s["control_slower_ratio"]
    paper_ratio = (f"the paper's own plot: chunked U_R ≈ {min(s['paper_maxsat'].values()):g}–"
                   f"{max(s['paper_maxsat'].values()):g} s against ≈ {s['paper_fast_seconds']['tvd'][0]:g}–"
                   f"{s['paper_fast_seconds']['tvd'][1]:g} s (TVD): 10³–10⁴×")
    unproven = f"; unproven (not in the rule): {', '.join(s['unproven_maxsat'])}" if s["unproven_maxsat"] else ""
    return [
        claim(experiment="exp1", claim="U_R (the paper's 100-row chunked MaxSAT) is 10²–10³× slower than U_MI^TVD "
                                       "and U_TC",
              rule=f"median over the timed points of chunked MaxSAT seconds / the slower fast measure's (count + "
                   f"measure) ≥ {s['slower_rule']:g}",
              paper=paper_ratio,
              dpaudit=f"ratio {_span(slower)}{unproven}",
              control=f"U_TC timed twice (the same computation; ratio ≈ 1 by construction): {_span(control)}",
              passes=bool(np.median(list(slower.values())) >= s["slower_rule"]) if slower else None,
              control_passes=bool(control) and bool(np.median(list(control.values())) >= s["slower_rule"])),
        measurement(experiment="exp1", claim="dpaudit's exact U_R (bag, from count tables) against the fast measures",
                    paper="—", dpaudit=f"ratio (count + measure) {_span(s['exact_ratio'])}",
                    note="dpaudit's ci is not timed (8–100 s per run at full size)"),
        claim(experiment="exp1/exp2", claim="U_TC is the fastest, then U_MI^TVD",
              rule=f"U_MI^TVD's median ≥ {s['faster_rule']:g} × U_TC's (on the count tables) at ≥ "
                   f"{s['share_rule']:.0%} of the grid points, and U_MI^TVD below the chunked U_R wherever timed",
              paper=f"≈ U_TC {s['paper_fast_seconds']['tc']} s, U_MI^TVD {s['paper_fast_seconds']['tvd']} s",
              dpaudit=(f"U_MI^TVD / U_TC {_span(s['tvd_over_tc'])}; share ≥ {s['faster_rule']:g}: "
                       f"{s['faster_share']:.0%}; U_MI^TVD below chunked U_R: {s['tvd_below_maxsat']}"),
              control=(f"U_TC timed twice: {_span(s['control_tc_over_tc'])}; share ≥ {s['faster_rule']:g}: "
                       f"{s['control_faster_share']:.0%}"),
              passes=s["faster_share"] >= s["share_rule"] and s["tvd_below_maxsat"],
              control_passes=s["control_faster_share"] >= s["share_rule"]),
    ]


def draw(rows: list[dict[str, Any]], out: Path) -> str:
    """Two rows of panels (exp1: seconds vs rows; exp2: vs criteria), shared log y, one legend below."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    names = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(2, len(names), figsize=(max(3.3 * len(names), 9.0), 6.8), sharey=True, squeeze=False)
    styles = {"count": ("counting pass (shared)", "s", ":", "grey"), "tvd": ("U_MI^TVD (on counts)", "o", "-", "C0"),
              "tc": ("U_TC (on counts; open markers)", "^", "--", "C1"), "repair_bag": ("U_R bag exact, dpaudit", "D", "-.", "C2"),
              "maxsat": ("U_R chunked MaxSAT, paper's method (end to end)", "*", "-", "C3")}

    def rows_fmt(x: float, _: Any) -> str:
        return f"{x / 1e6:g}M" if x >= 1e6 else f"{x / 1e3:g}K" if x >= 1e3 else f"{x:g}"

    for col, name in enumerate(names):
        for row, series, x in ((0, "rows", "rows"), (1, "criteria", "criteria")):
            ax = axes[row][col]
            sel = [r for r in rows if r["dataset"] == name and r["series"] == series]
            for key, (text, marker, ls, color) in styles.items():
                pts = [r for r in sel if r[key] is not None]
                if not pts:
                    continue
                xs = [r[x] for r in pts]
                ax.plot(xs, [r[key] for r in pts], marker=marker, ls=ls, color=color, ms=9 if key == "maxsat" else 5,
                        mfc="none" if key == "tc" else color, label=text)
                ax.fill_between(xs, [r[f"{key}_band"][0] for r in pts], [r[f"{key}_band"][1] for r in pts],
                                color=color, alpha=0.2, lw=0)
                bad = [r for r in pts if key in ("maxsat", "repair_bag") and r[f"{key}_proven"] is False]
                if bad:
                    ax.scatter([r[x] for r in bad], [r[key] for r in bad], s=90, facecolors="none",
                               edgecolors="k", label="unproven (work limit)")
            if series == "rows":
                ref = paper.EXP1_RUNTIME.get(name, ())
                ax.plot([n for n, _ in ref], [v for _, v in ref], "kx", ms=8, mew=2, label="paper's chunked U_R (≈)")
                ax.set_xscale("log")
                ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 3.0)))
                ax.xaxis.set_major_formatter(FuncFormatter(rows_fmt))
                ax.xaxis.set_minor_formatter(NullFormatter())
                ax.set_title(label(name), fontsize=10)
                ax.set_xlabel("rows (log)")
            else:
                ax.set_xticks([1, 2, 3, 4])
                ax.set_xlabel(f"criteria (≤ {CRITERIA_ROWS // 1000}K rows)")
            ax.set_yscale("log")
            ax.grid(True, which="major", ls="--", alpha=0.4)
    for ax in axes[:, 0]:
        ax.set_ylabel("CPU seconds (log)")
    handles, labels = {}, {}
    for ax in axes.ravel():
        for h, t in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(t, h)
            labels[t] = t
    fig.legend(list(handles.values()), list(labels), loc="lower center", ncol=2 if len(names) < 4 else 4, fontsize=8, frameon=False)
    fig.suptitle("exp1 (top): seconds vs rows, median and min–max of the repeats; exp2 (bottom): vs criteria",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 0.96))
    fig.savefig(out / "runtime.png", dpi=110)
    plt.close(fig)
    return "runtime.png"
