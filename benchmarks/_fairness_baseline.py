"""The baseline of ``bench_fairness.py``: the DuckDB group-bys a user writes by hand (one per criterion,
binned columns by integer division), and the untimed check that the audit did the same work."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np

import dpaudit
from dpaudit import Binned, Schema
from dpaudit.measures.tvd import u_mi_tvd


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def integer_division(domain: Binned) -> tuple[float, float]:
    """``(first edge, width)`` of equally spaced bin edges; the bin of x is ``(x − first) // width``."""
    edges = domain.edges
    width = edges[1] - edges[0]
    if not all(math.isfinite(e) for e in edges) or any(b - a != width for a, b in zip(edges, edges[1:])):
        raise ValueError(f"edges {edges} are not equally spaced: the hand-written baseline bins by integer division")
    return edges[0], width


def group_by_sql(source: str, columns: Sequence[str], sch: Schema) -> str:
    """``SELECT cols, count(*) AS n FROM source GROUP BY ALL``, binned columns by integer division."""
    select = []
    for c in columns:
        dom = sch[c]
        if isinstance(dom, Binned):
            first, width = integer_division(dom)
            select.append(f"({_q(c)} - {first:g}) // {width:g} AS {_q(c)}")
        else:
            select.append(_q(c))
    return f"SELECT {', '.join(select)}, count(*) AS n FROM {source} GROUP BY ALL"


def criterion_columns(criteria: Sequence[str]) -> list[tuple[str, ...]]:
    """Each criterion's columns in dpaudit's order (A, P, O)."""
    return [c.columns for c in dpaudit.parse_criteria(criteria)]


def duckdb_counts(source: str, sqls: Sequence[str], frame: Any = None) -> list[dict[str, np.ndarray]]:
    """The baseline: a fresh DuckDB connection, one query per criterion, each fetched to numpy."""
    con = duckdb.connect()
    try:
        if frame is not None:
            con.register(source, frame)
        return [con.sql(sql).fetchnumpy() for sql in sqls]
    finally:
        con.close()


def dense(result: dict[str, np.ndarray], cols: Sequence[str], sch: Schema) -> np.ndarray:
    """The baseline's grouped rows as a dense (A, P, O) table, for the untimed check."""
    index, dims = [], []
    for c in cols:
        dom = sch[c]
        if isinstance(dom, Binned):
            codes = np.asarray(result[c], dtype=np.int64)
        else:
            lookup = {v: i for i, v in enumerate(dom.values)}
            codes = np.array([lookup[v.item() if hasattr(v, "item") else v] for v in result[c]], dtype=np.int64)
        index.append(codes)
        dims.append(dom.size)
    flat = np.ravel_multi_index(tuple(index), tuple(dims))
    return np.bincount(flat, weights=np.asarray(result["n"], dtype=np.float64), minlength=math.prod(dims))


def check(result: dpaudit.AuditResult, baseline: list[dict[str, np.ndarray]], criteria: Sequence[str],
          sch: Schema, rows: int) -> str:
    """Untimed: the audit counted ``rows`` rows and its per-criterion U_MI^TVD equals the formula on the
    baseline's counts, so both sides did the same work."""
    assert result.n == rows, (result.n, rows)
    worst = 0.0
    got = result["tvd"].per_criterion
    assert got is not None
    for value, counted, crit in zip(got, baseline, dpaudit.parse_criteria(criteria)):
        sizes = [math.prod(sch[c].size for c in side) for side in (crit.admissible, crit.protected, crit.outcome)]
        expected = u_mi_tvd(np.rint(dense(counted, crit.columns, sch)).astype(np.int64).reshape(sizes))
        worst = max(worst, abs(value - expected) / max(abs(expected), 1e-300))
    assert worst <= 1e-9, worst
    return f"n = {rows:,} and U_MI^TVD of every criterion equal the baseline's counts (rel. diff {worst:.0e})"
