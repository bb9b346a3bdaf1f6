"""The baselines of ``bench_fairness.py``, the strongest a user writes by hand, and the untimed check
that the audit did the same work.

* **DuckDB** (a file or a registered frame): ONE query on a connection kept open (made, and the frame
  registered, outside the timed region): a ``GROUP BY`` over the union of the criteria's columns,
  binned columns by integer division, fetched to numpy, then each criterion's table marginalised in
  numpy (:class:`KeptDuckDB`). A ``GROUPING SETS`` query over the criteria's column sets was measured
  too and is much slower in DuckDB 1.x (2.9 s vs 0.40 s on the census file at 10M rows), so the union
  query is the baseline.
* **In-memory frames**: ``pandas.factorize`` of each raw column (binned columns by integer division)
  and one ``np.bincount`` of the combined codes, then the marginals (:func:`factorize_counts`); where
  the frame already holds pandas Categorical columns, ``np.bincount`` on their codes
  (:func:`category_counts`).

Every baseline returns the dense union table with the codes each column got (:class:`UnionCounts`);
the check reorders it to the declared domains and compares each criterion's marginal with dpaudit's
count table exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

import dpaudit
from dpaudit import Binned, Schema


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def integer_division(domain: Binned) -> tuple[float, float]:
    """``(first edge, width)`` of equally spaced bin edges; the bin of x is ``(x − first) // width``."""
    edges = domain.edges
    width = edges[1] - edges[0]
    if not all(math.isfinite(e) for e in edges) or any(b - a != width for a, b in zip(edges, edges[1:])):
        raise ValueError(f"edges {edges} are not equally spaced: the hand-written baseline bins by integer division")
    return edges[0], width


def criterion_columns(criteria: Sequence[str]) -> list[tuple[str, ...]]:
    """Each criterion's columns in dpaudit's order (A, P, O)."""
    return [c.columns for c in dpaudit.parse_criteria(criteria)]


def union_columns(criteria: Sequence[str]) -> tuple[str, ...]:
    """The union of the criteria's columns, in order of first use."""
    return tuple(dict.fromkeys(c for cols in criterion_columns(criteria) for c in cols))


@dataclass
class UnionCounts:
    """The dense counts of the union of columns: ``counts`` of shape ``[len(labels[c]) for c in
    columns]``, ``labels[c][i]`` the value (or bin index) of code ``i`` of column ``c``; and each
    criterion's table marginalised from it (``tables``, axes in the criterion's column order)."""

    columns: tuple[str, ...]
    labels: dict[str, np.ndarray]
    counts: np.ndarray
    tables: list[np.ndarray]


def _marginals(columns: tuple[str, ...], counts: np.ndarray, crit_cols: Sequence[tuple[str, ...]]) -> list[np.ndarray]:
    out = []
    for cols in crit_cols:
        axes = [columns.index(c) for c in cols]
        summed = counts.sum(axis=tuple(i for i in range(len(columns)) if i not in axes))
        out.append(np.transpose(summed, np.argsort(np.argsort(axes))))
    return out


def dense_union(columns: tuple[str, ...], codes: list[np.ndarray], labels: dict[str, np.ndarray],
           weights: np.ndarray | None, crit_cols: Sequence[tuple[str, ...]]) -> UnionCounts:
    """One ``np.bincount`` of the combined codes, then the marginals."""
    dims = tuple(len(labels[c]) for c in columns)
    flat = np.ravel_multi_index(tuple(codes), dims)
    counts = np.bincount(flat, weights=weights, minlength=math.prod(dims)).reshape(dims)
    return UnionCounts(columns, labels, counts, _marginals(columns, counts, crit_cols))


def union_sql(source: str, columns: Sequence[str], sch: Schema) -> str:
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


class KeptDuckDB:
    """The DuckDB baseline: one connection made here (outside any timing), the frame registered once,
    and :meth:`__call__` running the one union query and marginalising its grouped rows in numpy."""

    def __init__(self, source: str, criteria: Sequence[str], sch: Schema, frame: Any = None) -> None:
        self.con = duckdb.connect()
        self.con.execute("SET enable_progress_bar = false")  # no terminal output on long queries
        if frame is not None:
            self.con.register(source, frame)
        self.columns = union_columns(criteria)
        self.crit_cols = criterion_columns(criteria)
        self.sql = union_sql(source, self.columns, sch)

    def __call__(self) -> UnionCounts:
        import pandas as pd

        rows = self.con.sql(self.sql).fetchnumpy()
        codes, labels = [], {}
        for c in self.columns:  # the grouped rows' values to codes: a hash factorize, no sort
            code, uniq = pd.factorize(np.asarray(rows[c]))
            codes.append(code)
            labels[c] = np.asarray(uniq)
        return dense_union(self.columns, codes, labels, np.asarray(rows["n"], dtype=np.float64), self.crit_cols)

    def close(self) -> None:
        self.con.close()


def factorize_counts(frame: Any, criteria: Sequence[str], sch: Schema) -> UnionCounts:
    """The in-memory baseline: ``pandas.factorize`` of each raw column (a binned column by integer
    division first), one ``np.bincount`` of the combined codes, the marginals."""
    import pandas as pd

    columns = union_columns(criteria)
    codes, labels = [], {}
    for c in columns:
        values = frame[c].to_numpy() if hasattr(frame[c], "to_numpy") else np.asarray(frame[c])
        dom = sch[c]
        if isinstance(dom, Binned):
            first, width = integer_division(dom)
            values = (values - int(first)) // int(width)
        code, uniq = pd.factorize(values)
        codes.append(code)
        labels[c] = np.asarray(uniq)
    return dense_union(columns, codes, labels, None, criterion_columns(criteria))


def category_frame(frame: Any, criteria: Sequence[str], sch: Schema) -> Any:
    """``frame`` with every categorical column of the criteria as a pandas Categorical of its declared
    values (what a frame that already holds categorical codes looks like)."""
    import pandas as pd

    out = frame.copy()
    for c in union_columns(criteria):
        dom = sch[c]
        if not isinstance(dom, Binned):
            out[c] = pd.Categorical(frame[c], categories=list(dom.values))
    return out


def category_counts(frame: Any, criteria: Sequence[str], sch: Schema) -> UnionCounts:
    """The baseline on a frame of pandas Categorical columns: ``np.bincount`` of the combined
    category codes (binned columns, numeric, by integer division), the marginals."""
    columns = union_columns(criteria)
    codes, labels = [], {}
    for c in columns:
        dom = sch[c]
        if isinstance(dom, Binned):
            first, width = integer_division(dom)
            codes.append((frame[c].to_numpy() - int(first)) // int(width))
            labels[c] = np.arange(dom.n_bins)
        else:
            codes.append(frame[c].cat.codes.to_numpy())
            labels[c] = np.asarray(frame[c].cat.categories)
    return dense_union(columns, codes, labels, None, criterion_columns(criteria))


def _declared(union: UnionCounts, sch: Schema) -> np.ndarray:
    """The union table over the declared domains (axes reordered to the declared codes)."""
    import pandas as pd

    out = np.zeros([sch[c].size for c in union.columns], dtype=np.int64)
    index = []
    for c in union.columns:
        dom = sch[c]
        labels = union.labels[c]
        if isinstance(dom, Binned):
            where = np.asarray(labels, dtype=np.int64)
        else:
            where = pd.Index(list(dom.values)).get_indexer([v.item() if hasattr(v, "item") else v for v in labels])
        assert (where >= 0).all() and (where < dom.size).all(), (c, labels)
        index.append(where)
    np.add.at(out, np.ix_(*index), np.rint(union.counts).astype(np.int64))
    return out


def check(tables: list[dpaudit.CountTable], union: UnionCounts, criteria: Sequence[str], sch: Schema,
          rows: int) -> str:
    """Untimed: every criterion's count table equals the baseline's marginal over the declared domains,
    cell for cell, and counts ``rows`` rows, so both sides did the same work."""
    declared = UnionCounts(union.columns, union.labels, _declared(union, sch), [])
    expected = _marginals(union.columns, declared.counts, criterion_columns(criteria))
    for table, want in zip(tables, expected):
        assert table.n == rows, (table.n, rows)
        assert np.array_equal(table.counts.reshape(-1), want.reshape(-1)), table.criterion
    return f"n = {rows:,}; every criterion's count table equals the baseline's, cell for cell"


def check_audit(result: dpaudit.AuditResult, tables: list[dpaudit.CountTable], rows: int) -> str:
    """Untimed: the audit counted ``rows`` rows and its U_MI^TVD equals the formula on ``tables``."""
    from dpaudit.measures.tvd import u_mi_tvd

    assert result.n == rows, (result.n, rows)
    got = result["tvd"].per_criterion
    assert got is not None
    worst = max(abs(v - u_mi_tvd(t.counts)) / max(abs(u_mi_tvd(t.counts)), 1e-300) for v, t in zip(got, tables))
    assert worst <= 1e-9, worst
    return f"the audit's U_MI^TVD equals the formula on those tables (rel. diff {worst:.0e})"
