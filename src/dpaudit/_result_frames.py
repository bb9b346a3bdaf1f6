"""An audit's results as pandas data: the tidy values table and, in exact mode, the per-group rates.

:meth:`dpaudit.AuditResult.to_frame` is :func:`values_frame`; :meth:`~dpaudit.AuditResult.by_group`
and :meth:`~dpaudit.AuditResult.parity` are :func:`group_rates` and :func:`parity_frame`, read off the
exact count tables the audit kept (``counts[a, p, o]``: rows in admissible block ``a``, protected group
``p``, outcome ``o``). pandas is imported when a frame is asked for, not with dpaudit.

Familiar group-fairness metrics (fairlearn's ``MetricFrame`` and ``demographic_parity_difference`` /
``demographic_parity_ratio``; Feldman et al., "Certifying and removing disparate impact", KDD 2015)
beside the dependence measures: within a block, the rate of outcome ``o`` in group ``p`` is
``counts[a, p, o] / Σ_o' counts[a, p, o']``; the statistical parity difference is
``max_p rate − min_p rate`` and the disparate-impact ratio ``min_p rate / max_p rate``, both over the
groups with rows in the block (a criterion without admissible attributes has one block: all rows).
They are exact values for the data curator: no DP audit releases them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dpaudit._errors import DPAuditError

if TYPE_CHECKING:
    import pandas as pd

    from dpaudit.counting import CountTable
    from dpaudit.results import AuditResult

__all__ = ["SUM", "FRAME_COLUMNS", "values_frame", "group_rates", "parity_frame", "label"]

#: The ``criterion`` of a measure's summed row in :func:`values_frame` (the released value).
SUM = "(sum)"
#: The columns of :func:`values_frame`, in order.
FRAME_COLUMNS = ("criterion", "measure", "value", "lower", "upper", "epsilon", "dp")
#: The ``block`` of a criterion without admissible attributes in :func:`parity_frame`.
ALL_ROWS = "(all rows)"


def values_frame(result: AuditResult) -> pd.DataFrame:
    """One row per (criterion, measure) — exact mode only, a DP audit releases no per-criterion value —
    and one summed row per measure (criterion :data:`SUM`, the released value), in :data:`FRAME_COLUMNS`.

    ``lower``/``upper`` are the release's 95% interval and ``epsilon`` the measure's ε: NaN for an
    exact value (no noise), and on a per-criterion row. ``dp`` is the release's own guarantee.
    """
    import pandas as pd

    rows = []
    for name, m in result.measures.items():
        r = m.release
        for crit, value in zip(result.criteria, m.per_criterion or ()):
            rows.append((str(crit), name, float(value), math.nan, math.nan, math.nan, r.dp))
        low, high, eps = (math.nan,) * 3 if r.epsilon is None else (*map(float, r.interval), float(r.epsilon))
        rows.append((SUM, name, float(r.value), low, high, eps, r.dp))
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS)).astype({"dp": bool})


def label(columns: tuple[str, ...], values: tuple[Any, ...]) -> str:
    """``"sex=Female"``, ``"sex=Female, race=White"``: one cell of a side, as text."""
    return ", ".join(f"{c}={v}" for c, v in zip(columns, values))


def exact_tables(result: AuditResult, what: str) -> tuple[CountTable, ...]:
    """The count tables an exact audit kept, or a DPAuditError saying why there are none."""
    if not result.exact:
        raise DPAuditError(
            f"{what} holds exact per-group rates, which a DP audit does not release (only its measures' noisy sums "
            "are private); run audit(..., exact=True) as the data curator to see them")
    if result.tables is None:
        raise DPAuditError(f"{what} reads the count tables of the audit that made this result; a result read back "
                           "from JSON does not hold them: run the exact audit again")
    return result.tables


def _table(result: AuditResult, criterion: int | str, what: str) -> CountTable:
    tables = exact_tables(result, what)
    texts = [str(t.criterion) for t in tables]
    if isinstance(criterion, int) and not isinstance(criterion, bool) and 0 <= criterion < len(tables):
        return tables[criterion]
    if isinstance(criterion, str):
        from dpaudit.criteria import Criterion

        try:
            wanted = str(Criterion.parse(criterion))
        except DPAuditError:
            wanted = criterion
        if wanted in texts:
            return tables[texts.index(wanted)]
    raise DPAuditError(f"{what}: no criterion {criterion!r}; give its index (0 … {len(tables) - 1}) or its text, "
                       f"one of {texts}")


def group_rates(result: AuditResult, criterion: int | str = 0) -> pd.DataFrame:
    """MetricFrame-like ``by_group`` of one criterion: a row per (block, protected group) with rows,
    indexed by the admissible then the protected columns' values; a column ``rows`` and one column per
    outcome value (``"income=>50K"``) holding the rate ``counts[a, p, o] / rows``. Groups without rows
    are left out."""
    import numpy as np
    import pandas as pd

    t = _table(result, criterion, "by_group")
    crit = t.criterion
    counts = np.asarray(t.counts, dtype=np.int64)
    sizes = counts.sum(axis=2)
    blocks, groups = np.nonzero(sizes)
    block_labels, group_labels = t.block_labels, t.protected_labels
    names = list(crit.admissible) + list(crit.protected)
    keys = [tuple(block_labels[a]) + tuple(group_labels[p]) for a, p in zip(blocks, groups)]
    index = (pd.MultiIndex.from_tuples(keys, names=names) if len(names) > 1
             else pd.Index([k[0] for k in keys], name=names[0]))
    frame = pd.DataFrame({"rows": sizes[blocks, groups]}, index=index)
    rates = counts[blocks, groups, :] / sizes[blocks, groups][:, None]
    for o, values in enumerate(t.outcome_labels):
        frame[label(crit.outcome, values)] = rates[:, o]
    return frame


def parity_frame(result: AuditResult) -> pd.DataFrame:
    """Statistical parity difference and disparate-impact ratio of every criterion: a row per
    (criterion, block with rows, outcome value) with ``difference`` = max − min and ``ratio`` = min / max
    of that outcome's rate over the block's groups with rows (NaN ratio when every rate is 0), and
    ``groups``, their number. ``block`` is :data:`ALL_ROWS` for a criterion without admissible attributes."""
    import numpy as np
    import pandas as pd

    rows = []
    for t in exact_tables(result, "parity"):
        crit = t.criterion
        counts = np.asarray(t.counts, dtype=np.int64)
        sizes = counts.sum(axis=2)
        block_labels, outcome_labels = t.block_labels, t.outcome_labels
        for a in np.nonzero(sizes.sum(axis=1))[0]:
            present = sizes[a] > 0
            rates = counts[a][present] / sizes[a][present][:, None]
            block = label(crit.admissible, block_labels[a]) if crit.admissible else ALL_ROWS
            for o, values in enumerate(outcome_labels):
                high, low = float(rates[:, o].max()), float(rates[:, o].min())
                rows.append((str(crit), block, label(crit.outcome, values), high - low,
                             low / high if high > 0 else math.nan, int(present.sum())))
    return pd.DataFrame(rows, columns=["criterion", "block", "outcome", "difference", "ratio", "groups"])
