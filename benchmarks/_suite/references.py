"""What users run today, written plainly: the baselines of section 2 of docs/benchmarks.md.

* :func:`tvd` and :func:`tc` — the unfairness paper's U_MI^TVD and U_TC formulas (spec §2.1–2.2),
  written in plain pandas the way a user would: one ``groupby(...).size()`` over the criterion's
  columns, the counts laid out as a (blocks × protected) × outcome grid with ``unstack``, then the
  paper's probabilities Pr(a), Pr(p,o|a), Pr(p|a), Pr(o|a) as frame arithmetic:

      TVD_a  = ½ Σ_{p,o} | Pr(p,o|a) − Pr(p|a)·Pr(o|a) |
      U_TVD  = Σ_a Pr(a) · 2 · TVD_a²                       (no A: one block, Pr(a) = 1)
      MD     = Pr(a) · | Pr(p,o|a) − Pr(p|a)·Pr(o|a) |      (no A: | Pr(p,o) − Pr(p)·Pr(o) |)
      U_TC   = sum of the k largest MD                      (k = 500 by default)

  The grid holds every (a, p) pair that occurs and every outcome value that occurs; a cell of the
  declared domain outside it has Pr(p|a) = 0 or Pr(o|a) = 0 and Pr(p,o|a) = 0, so MD = 0 there and
  these values equal dpaudit's exact (``cells="domain"``) values.
  ``tests/test_bench_references.py`` checks that they do, on several datasets, so the comparison
  is like for like. Numeric columns are binned by integer division (``x // width``), as by hand.
* :func:`mutual_information` — scikit-learn's ``mutual_info_score`` (nats), conditioned on A by a
  weighted sum over ``groupby(A)`` blocks: I(P;O|A) = Σ_a Pr(a)·I(P;O | A=a).
* :func:`demographic_parity` — fairlearn's ``demographic_parity_difference`` of a binary outcome
  across the protected groups (no conditioning: fairlearn has none).

Every function takes the criterion as column lists (protected, outcome, admissible), so several
columns per side work: their values are combined into one key per side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["binned", "count_grid", "tvd", "tc", "tvd_from_counts", "tc_from_counts", "mutual_information",
           "demographic_parity", "criterion_columns", "integer_bins"]

DEFAULT_K = 500  # the paper's (and dpaudit's) default k of U_TC


def criterion_columns(criterion: Any) -> tuple[list[str], list[str], list[str]]:
    """(protected, outcome, admissible) column lists of a criterion string or dpaudit Criterion."""
    if isinstance(criterion, str):
        import dpaudit

        criterion = dpaudit.parse_criteria([criterion])[0]
    return list(criterion.protected), list(criterion.outcome), list(criterion.admissible)


def integer_bins(schema: Any, columns: Sequence[str]) -> dict[str, int | tuple[float, ...]]:
    """How to bin the schema's ``Binned`` columns by hand: a width for integer division, else the edges.

    ``x // w`` puts the same rows together as the declared bins ``[e_i, e_i + w)`` whenever the
    edges are multiples of one integer width w (for values inside the edges), as the census table's
    INCTOT (10,000) and AGE (10). Other binned columns (Adult's age: 17, 20, 30, …, ∞) get their
    edges, cut with ``pd.cut(..., right=False)``.
    """
    from dpaudit import Binned

    out: dict[str, int | tuple[float, ...]] = {}
    for col in columns:
        dom = schema[col]
        if not isinstance(dom, Binned):
            continue
        edges = np.asarray(dom.edges, dtype=float)
        steps = np.diff(edges)
        width = steps[0]
        if (np.all(np.isfinite(edges)) and np.all(steps == width) and width == int(width)
                and edges[0] % width == 0):
            out[col] = int(width)
        else:
            out[col] = tuple(float(e) for e in edges)
    return out


def binned(frame: pd.DataFrame, columns: Sequence[str],
           bins: Mapping[str, int | Sequence[float]] | None = None) -> pd.DataFrame:
    """The columns of ``frame``, binned ones (``bins``: a width, or edges) replaced by their bin."""
    bins = bins or {}
    out = {}
    for c in dict.fromkeys(columns):
        how = bins.get(c)
        if how is None:
            out[c] = frame[c]
        elif isinstance(how, (int, np.integer)):
            out[c] = frame[c] // how
        else:
            out[c] = pd.cut(frame[c], list(how), right=False, labels=False)
    return pd.DataFrame(out)


def _key(frame: pd.DataFrame, cols: Sequence[str]) -> pd.Series:
    """One label per row for a side of several columns (the side's value is the tuple of its columns)."""
    if len(cols) == 1:
        return frame[cols[0]]
    return frame.groupby(list(cols), sort=False, observed=True, dropna=False).ngroup()


def count_grid(frame: pd.DataFrame, protected: Sequence[str], outcome: Sequence[str],
               admissible: Sequence[str] = (), *, bins: Mapping[str, int | Sequence[float]] | None = None,
               weights: str | None = None) -> pd.DataFrame:
    """Counts of the criterion's columns as a grid: rows (a…, p…) that occur, columns the outcome values.

    ``weights`` names a column of counts (a frame of already grouped counts) summed instead of
    counting rows.
    """
    cols = [*admissible, *protected, *outcome]
    data = binned(frame, cols + ([weights] if weights else []), bins)
    grouped = data.groupby(cols, sort=False, observed=True, dropna=False)
    counts = grouped[weights].sum() if weights else grouped.size()
    return counts.unstack(list(range(len(admissible) + len(protected), len(cols))), fill_value=0).astype(float)


def _deviation(grid: pd.DataFrame, n_adm: int) -> tuple[pd.Series, pd.DataFrame]:
    """Pr(a) per row of the grid and |Pr(p,o|a) − Pr(p|a)·Pr(o|a)| per cell (the paper's formulas)."""
    n = grid.to_numpy().sum()
    if n_adm:
        levels = list(range(n_adm))
        col_totals = grid.groupby(level=levels, sort=False).transform("sum")  # count(a, o), per row
        n_a = col_totals.sum(axis=1)                                          # count(a), per row
    else:
        col_totals = pd.DataFrame(np.broadcast_to(grid.sum(axis=0).to_numpy(), grid.shape),
                                  index=grid.index, columns=grid.columns)
        n_a = pd.Series(n, index=grid.index)
    pr_po_a = grid.div(n_a, axis=0)                 # Pr(p, o | a)
    pr_p_a = grid.sum(axis=1) / n_a                 # Pr(p | a)
    pr_o_a = col_totals.div(n_a, axis=0)            # Pr(o | a)
    dev = (pr_po_a - pr_o_a.mul(pr_p_a, axis=0)).abs()
    return n_a / n, dev


def tvd_from_counts(grid: pd.DataFrame, n_adm: int) -> float:
    """U_MI^TVD of one criterion from its :func:`count_grid` (``n_adm`` admissible columns)."""
    if grid.to_numpy().sum() == 0:
        return 0.0
    pr_a, dev = _deviation(grid, n_adm)
    if not n_adm:
        tvd_0 = 0.5 * dev.to_numpy().sum()
        return float(2.0 * tvd_0**2)
    levels = list(range(n_adm))
    tvd_a = 0.5 * dev.sum(axis=1).groupby(level=levels, sort=False).sum()   # TVD_a
    pr = pr_a.groupby(level=levels, sort=False).first()                     # Pr(a)
    return float((pr * 2.0 * tvd_a**2).sum())


def tc_from_counts(grid: pd.DataFrame, n_adm: int, k: int = DEFAULT_K) -> float:
    """U_TC of one criterion from its :func:`count_grid`: the sum of the k largest MD values."""
    if grid.to_numpy().sum() == 0:
        return 0.0
    pr_a, dev = _deviation(grid, n_adm)
    md = dev.mul(pr_a, axis=0).stack(list(range(dev.columns.nlevels)))      # MD(a, p, o)
    return float(md.nlargest(k).sum())


def tvd(frame: pd.DataFrame, protected: Sequence[str], outcome: Sequence[str], admissible: Sequence[str] = (),
        *, bins: Mapping[str, int | Sequence[float]] | None = None) -> float:
    """U_MI^TVD of the criterion ``protected ⊥ outcome | admissible`` on the rows of ``frame``."""
    return tvd_from_counts(count_grid(frame, protected, outcome, admissible, bins=bins), len(admissible))


def tc(frame: pd.DataFrame, protected: Sequence[str], outcome: Sequence[str], admissible: Sequence[str] = (),
       *, k: int = DEFAULT_K, bins: Mapping[str, int | Sequence[float]] | None = None) -> float:
    """U_TC (top-k contribution, domain cells) of the criterion on the rows of ``frame``."""
    return tc_from_counts(count_grid(frame, protected, outcome, admissible, bins=bins), len(admissible), k)


def mutual_information(frame: pd.DataFrame, protected: Sequence[str], outcome: Sequence[str],
                       admissible: Sequence[str] = (), *, bins: Mapping[str, int | Sequence[float]] | None = None) -> float:
    """I(P;O|A) in nats with scikit-learn's ``mutual_info_score``, weighted over the blocks of A."""
    from sklearn.metrics import mutual_info_score

    data = binned(frame, [*admissible, *protected, *outcome], bins)
    if not admissible:
        return float(mutual_info_score(_key(data, protected), _key(data, outcome)))
    n = len(data)
    total = 0.0
    for _, block in data.groupby(list(admissible), sort=False, observed=True):
        total += len(block) / n * mutual_info_score(_key(block, protected), _key(block, outcome))
    return float(total)


def demographic_parity(frame: pd.DataFrame, protected: Sequence[str], outcome: str, positive: Any) -> float:
    """fairlearn's demographic parity difference of ``outcome == positive`` across the protected groups."""
    from fairlearn.metrics import demographic_parity_difference

    y = (frame[outcome] == positive).to_numpy(dtype=int)
    sensitive = frame[protected[0]] if len(protected) == 1 else frame[list(protected)]
    return float(demographic_parity_difference(y, y, sensitive_features=sensitive))
