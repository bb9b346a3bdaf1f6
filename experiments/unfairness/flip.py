"""Experiment 5 — the flip test: injected unfairness t = 0, 0.1, …, 1, every measure.

Paper's claim (spec §5.5, headline): U_R grows near-linearly with injected unfairness, U_MI^TVD and
U_TC logarithmically. The flip table (:func:`dpaudit.datasets.synthetic.flip`, N rows per sex, a
fraction t of (Male, 0) flipped to 1 and of (Female, 1) to 0) has closed forms for every measure; each
measured value is checked against its closed form, and its growth is summarised by the exponent b of
a log–log fit value ∝ t^b over t ∈ [0.1, 1] (b ≈ 1 linear, b < 1 concave — the shape a logarithm
has —, b > 1 convex). U_TC is computed in both cell modes, U_R in all three semantics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from common import Config, figure

from dpaudit.counting import count_tables
from dpaudit.criteria import parse_criteria
from dpaudit.datasets.synthetic.flip import FLIP_CRITERION, flip
from dpaudit.measures import Repair, mutual_information, u_mi_tvd
from dpaudit.measures.contribution import u_tc

NAME = "flip"
LEVELS = tuple(round(0.1 * i, 1) for i in range(11))
N, QUICK_N = 10_000, 1_000
#: the exponent band called "near-linear"
LINEAR_BAND = (0.8, 1.2)


def closed_forms(t: float, n: int) -> dict[str, float]:
    """Every measure of the flip table at level t with n rows per group (flip's docstring)."""
    q = (1 + t) / 2
    h2 = 0.0 if q >= 1.0 else -(q * math.log2(q) + (1 - q) * math.log2(1 - q))
    return {"tvd": t * t / 2, "tc_domain": t, "tc_observed": t if t < 1 else 0.5, "mi_bits": 1.0 - h2,
            "repair_ci": 2 * n * t / (1 + t), "repair_bag": n * min(2 * t, 1.0), "repair_set": 1.0 if t == 1 else 0.0}


def measured(counts: np.ndarray, work_limit: float) -> dict[str, float]:
    return {"tvd": u_mi_tvd(counts), "tc_domain": u_tc(counts, k=4), "tc_observed": u_tc(counts, k=4, cells="observed"),
            "mi_bits": mutual_information(counts, base=2.0),
            **{f"repair_{s}": Repair(semantics=s, work_limit=work_limit).value(counts) for s in ("ci", "bag", "set")}}


def growth_exponent(ts: list[float], values: list[float]) -> float:
    """Slope b of log(value) on log(t) over the levels t ≥ 0.1 with a positive value (NaN if < 2)."""
    pts = [(math.log(t), math.log(v)) for t, v in zip(ts, values) if t >= 0.1 and v > 0]
    if len(pts) < 2:
        return math.nan
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def shape(b: float) -> str:
    if not math.isfinite(b):
        return "step (0 below t = 1)"
    if LINEAR_BAND[0] <= b <= LINEAR_BAND[1]:
        return "near-linear"
    return "concave (sub-linear)" if b < LINEAR_BAND[0] else "convex (super-linear)"


def run(config: Config) -> dict[str, Any]:
    n = QUICK_N if config.quick else N
    crit = parse_criteria([FLIP_CRITERION])
    rows = []
    for t in LEVELS:
        frame, schema = flip(n, t, seed=config.seed)
        counts = count_tables(frame, crit, schema)[0].counts
        got, want = measured(counts, config.work_limit), closed_forms(t, n)
        rows.append({"t": t, "n_per_group": n, **got, **{f"closed_{k}": v for k, v in want.items()}})
    keys = [k for k in rows[0] if k not in ("t", "n_per_group") and not k.startswith("closed_")]
    ts = [r["t"] for r in rows]
    exponents = {k: growth_exponent(ts, [r[k] for r in rows]) for k in keys}
    summary = {
        "n_per_group": n,
        "max_abs_error_vs_closed_form": {k: max(abs(r[k] - r[f"closed_{k}"]) for r in rows) for k in keys},
        "growth_exponent": exponents,
        "shape": {k: shape(b) for k, b in exponents.items()},
        "linear_band": list(LINEAR_BAND),
    }

    def draw(ax: Any) -> None:
        for k in keys:
            top = max(abs(r[k]) for r in rows) or 1.0
            ax.plot(ts, [r[k] / top for r in rows], marker="o", label=f"{k} (b = {exponents[k]:.2f})")
        ax.set_xlabel("injected unfairness t")
        ax.set_ylabel("value / its maximum")
        ax.legend(fontsize=7)

    fig = figure(config.out, "flip", draw, size=(6.5, 4.5))
    return {"experiment": NAME, "rows": rows, "summary": summary, "figures": [fig]}
