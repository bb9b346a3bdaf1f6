"""Experiment 7 — exact U_R against the paper's 100-row chunked computation.

The paper's reference code solves U_R on chunks of 100 rows (in file order) separately and sums the
chunks' optima; spec §2.3 notes the sum is neither a lower nor an upper bound. It is implemented here
only as a named baseline: adding a column ``_chunk = row index // 100`` to the admissible attributes
makes every (chunk, A) cell a block, so ``Repair`` on ``P ⊥ O | _chunk, A`` *is* the chunked sum, with
each chunk solved exactly (the paper's MaxSAT heuristic is not reproduced; this isolates the error of
chunking itself). For every preset criterion, both values and both solve times, under the paper's
``bag`` semantics and dpaudit's ``ci``, on the first ``MAX_ROWS`` rows of each dataset (the paper's
Adult size). Chunks hold at most 100 tuples, so their blocks get a 1 s solver limit; ``ci`` on chunks is
skipped for criteria with more than ``MAX_CI_CELLS`` cells per block (Stack Overflow's 20 × 20, the
census tables with 20–24 income or occupation values): hundreds of sparse multi-valued chunk blocks, each a branch and bound, would take
longer than the whole study.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from common import Config, criteria_of, figure, load, timed

from dpaudit.counting import count_tables
from dpaudit.criteria import Criterion, parse_criteria
from dpaudit.measures import Repair
from dpaudit.schema import Categorical, Schema

NAME = "chunked"
CHUNK_ROWS = 100
CHUNK = "_chunk"
SEMANTICS = ("bag", "ci")
MAX_ROWS, QUICK_MAX_ROWS = 30_000, 3_000
MAX_CI_CELLS = 70
CHUNK_WORK_LIMIT = 1.0


def chunked_tables(frame: Any, schema: Schema, criteria: list[Criterion], rows: int = CHUNK_ROWS) -> list[Any]:
    """Count tables of each criterion with the row's chunk (file order, ``rows`` per chunk) added to A."""
    chunks = np.arange(len(frame)) // rows
    data = frame.assign(**{CHUNK: chunks})
    extended = Schema({**schema.columns, CHUNK: Categorical(list(range(int(chunks.max()) + 1)))})
    crits = [Criterion(c.protected, c.outcome, (CHUNK, *c.admissible)) for c in criteria]
    return count_tables(data, crits, extended)


def run(config: Config) -> dict[str, Any]:
    rows = []
    for name in config.datasets:
        frame, schema = load(name, config.quick)
        frame = frame.iloc[:QUICK_MAX_ROWS if config.quick else MAX_ROWS]
        crits = list(parse_criteria(criteria_of(name)))
        exact_tables = count_tables(frame, crits, schema)
        split_tables = chunked_tables(frame, schema, crits)
        for exact_t, split_t in zip(exact_tables, split_tables):
            for semantics in SEMANTICS:
                if semantics == "ci" and exact_t.counts[0].size > MAX_CI_CELLS:
                    continue
                measure = Repair(semantics=semantics, work_limit=config.work_limit)
                per_chunk = Repair(semantics=semantics, work_limit=min(config.work_limit, CHUNK_WORK_LIMIT))
                exact, t_exact = timed(lambda m=measure, t=exact_t: m.assess([t], details=False))
                chunked, t_chunked = timed(lambda m=per_chunk, t=split_t: m.assess([t], details=False))
                value, approx = exact.per_criterion[0], chunked.per_criterion[0]
                rows.append({"dataset": name, "criterion": str(exact_t.criterion), "semantics": semantics,
                             "rows": exact_t.n, "chunks": split_t.counts.shape[0] // max(exact_t.counts.shape[0], 1),
                             "exact": value, "exact_proven": not exact.caveats, "exact_seconds": t_exact,
                             "chunked": approx, "chunked_proven": not chunked.caveats, "chunked_seconds": t_chunked,
                             "relative_error": (approx - value) / value if value else float("nan")})
    summary = {}
    for semantics in SEMANTICS:
        sel = [r for r in rows if r["semantics"] == semantics]
        err = np.array([r["relative_error"] for r in sel if np.isfinite(r["relative_error"])])
        summary[semantics] = {
            "criteria": len(sel),
            "median_abs_relative_error": float(np.median(np.abs(err))) if err.size else float("nan"),
            "max_abs_relative_error": float(np.max(np.abs(err))) if err.size else float("nan"),
            "chunked_above_exact": int(sum(r["chunked"] > r["exact"] + 1e-9 for r in sel)),
            "chunked_below_exact": int(sum(r["chunked"] < r["exact"] - 1e-9 for r in sel)),
            "median_time_ratio_chunked_over_exact": float(np.median([r["chunked_seconds"] / max(r["exact_seconds"], 1e-9)
                                                                     for r in sel])),
        }

    def draw(axes: Any) -> None:
        for ax, semantics in zip(axes, SEMANTICS):
            sel = [r for r in rows if r["semantics"] == semantics]
            ax.scatter([r["exact"] for r in sel], [r["chunked"] for r in sel], s=18)
            top = max([r["exact"] for r in sel] + [r["chunked"] for r in sel] + [1.0])
            ax.plot([0, top], [0, top], color="grey", lw=0.8)
            ax.set_xscale("symlog")
            ax.set_yscale("symlog")
            ax.set_xlabel(f"exact U_R ({semantics})")
            ax.set_ylabel(f"sum over {CHUNK_ROWS}-row chunks")

    fig = figure(config.out, "chunked", draw, ncols=2, size=(4.2, 3.8))
    return {"experiment": NAME, "rows": rows, "summary": summary, "figures": [fig]}
