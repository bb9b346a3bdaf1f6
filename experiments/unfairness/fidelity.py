"""Experiment 1 — fidelity: U_MI^TVD against mutual information, U_TC against the demographic-parity gap.

Paper's claim (spec §5.1): the measures track their non-private counterparts — U_MI^TVD closely
follows MI, U_TC grows monotonically with the demographic-parity gap. For every preset criterion of
every dataset, the exact values on the data and on the null (the same criterion with the protected
column permuted, ``PERMUTATIONS`` times: the 95th percentile of the shuffled values is the noise floor a
reader compares a value with, and the permutation p-value is beside it). Summary: Spearman correlation
across criteria, and how many criteria stand above their null.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from common import Config, dp_gap, figure, shuffled_tables, spearman, tables_of

from dpaudit.measures import mutual_information, u_mi_tvd
from dpaudit.measures.contribution import DEFAULT_K, u_tc

NAME = "fidelity"
#: Shuffles of the protected column per criterion; the null reported is their 95th percentile.
PERMUTATIONS, QUICK_PERMUTATIONS = 20, 5


def _values(counts: np.ndarray) -> dict[str, float]:
    return {"tvd": u_mi_tvd(counts), "mi_bits": mutual_information(counts, base=2.0),
            "tc": u_tc(counts, k=DEFAULT_K), "dp_gap": dp_gap(counts)}


def run(config: Config) -> dict[str, Any]:
    rows = []
    for name in config.datasets:
        real = tables_of(name, config.quick)
        shuffles = QUICK_PERMUTATIONS if config.quick else PERMUTATIONS
        nulls = [shuffled_tables(name, config.quick, config.seed * 1000 + i) for i in range(shuffles)]
        for j, table in enumerate(real):
            row: dict[str, Any] = {"dataset": name, "criterion": str(table.criterion), "n": table.n}
            row.update(_values(table.counts))
            draws = [_values(null[j].counts) for null in nulls]
            row.update({f"null_{k}": float(np.percentile([d[k] for d in draws], 95)) for k in draws[0]})
            # permutation p-value of the real value (with the +1 correction)
            row.update({f"p_{k}": (1 + sum(d[k] >= row[k] for d in draws)) / (1 + shuffles) for k in draws[0]})
            row["shuffles"] = shuffles
            rows.append(row)
    col = {k: [r[k] for r in rows] for k in rows[0]}
    above = {m: sum(r[m] > r[f"null_{m}"] for r in rows) for m in ("tvd", "mi_bits", "tc", "dp_gap")}
    summary = {
        "criteria": len(rows),
        "spearman_tvd_mi": spearman(col["tvd"], col["mi_bits"]),
        "spearman_tc_dp_gap": spearman(col["tc"], col["dp_gap"]),
        "spearman_tc_mi": spearman(col["tc"], col["mi_bits"]),
        "above_null": above,
        # how far the null sits below the real value, as a fraction of it (median over criteria)
        "median_null_fraction": {m: float(np.median([r[f"null_{m}"] / r[m] for r in rows if r[m] > 0]))
                                 for m in ("tvd", "mi_bits", "tc", "dp_gap")},
    }

    def draw(axes: Any) -> None:
        for ax, (x, y, xl, yl) in zip(axes, [("mi_bits", "tvd", "mutual information (bits)", "U_MI^TVD"),
                                             ("dp_gap", "tc", "demographic-parity gap (data)", "U_TC (k = 500)")]):
            ax.scatter(col[x], col[y], s=18, label="data")
            ax.scatter(col[f"null_{x}"], col[f"null_{y}"], s=18, marker="x", label="protected column shuffled")
            ax.set_xscale("symlog", linthresh=1e-4)
            ax.set_yscale("symlog", linthresh=1e-4)
            ax.set_xlabel(xl)
            ax.set_ylabel(yl)
            ax.legend(fontsize=8)
        rho = summary["spearman_tvd_mi"], summary["spearman_tc_dp_gap"]
        axes[0].set_title(f"Spearman ρ = {rho[0]:.2f}" if math.isfinite(rho[0]) else "")
        axes[1].set_title(f"Spearman ρ = {rho[1]:.2f}" if math.isfinite(rho[1]) else "")

    fig = figure(config.out, "fidelity", draw, ncols=2, size=(5.0, 4.0))
    return {"experiment": NAME, "rows": rows, "summary": summary, "figures": [fig]}
