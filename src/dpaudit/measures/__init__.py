"""Unfairness measures on count tables, each registered with its properties.

A :class:`Measure` bundles the exact per-criterion value, the replace-one sensitivity of the sum
over criteria, and properties shared tests check for every registered measure (range, zero under
independence). Measures never read rows; they take the dense tables of :mod:`dpaudit.counts`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit.measures.tvd import TVD_SENSITIVITY, mutual_information, u_mi_tvd

__all__ = ["Measure", "MEASURES", "get_measure", "u_mi_tvd", "mutual_information"]


@dataclass(frozen=True)
class Measure:
    """A registered unfairness measure.

    Attributes
    ----------
    name : str
        Key used in the API, CLI and JSON (``"tvd"``).
    title : str
        Name in the paper (``"U_MI^TVD"``).
    value : callable (counts) -> float
        Exact per-criterion value from a ``(blocks, P, O)`` count table.
    sensitivity_factor : float
        Replace-one sensitivity per criterion times n: the sum over F has sensitivity
        ``sensitivity_factor · |F| / n``.
    upper : float
        Upper end of the per-criterion range (the lower end is 0).
    zero_iff_independent : bool
        Positivity: the value is 0 exactly when P ⊥ O | A holds.
    baseline : callable (counts) -> dict, optional
        Non-private counterpart reported beside exact values (curator-only).
    reference : str
        Paper and section.
    """

    name: str
    title: str
    value: Callable[[np.ndarray], float]
    sensitivity_factor: float
    upper: float
    zero_iff_independent: bool
    reference: str
    baseline: Callable[[np.ndarray], dict[str, float]] | None = field(default=None)

    def sensitivity(self, n: int, n_criteria: int) -> float:
        """Replace-one sensitivity of the value summed over ``n_criteria`` criteria on n rows."""
        return self.sensitivity_factor * n_criteria / n

    def per_criterion(self, tables: Sequence[Any]) -> list[float]:
        """Exact value of every criterion, from its CountTable (or raw count array)."""
        return [self.value(getattr(t, "counts", t)) for t in tables]


def _mi_baseline(counts: np.ndarray) -> dict[str, float]:
    nats = mutual_information(counts)
    return {"mi_nats": nats, "mi_bits": nats / float(np.log(2))}


MEASURES: dict[str, Measure] = {
    "tvd": Measure(
        name="tvd",
        title="U_MI^TVD",
        value=u_mi_tvd,
        sensitivity_factor=TVD_SENSITIVITY,
        upper=2.0,
        zero_iff_independent=True,
        reference="Vologdin, Tao, Gilad, PVLDB 19(9), Alg. 1; spec §2.1",
        baseline=_mi_baseline,
    ),
}


def get_measure(name: str) -> Measure:
    """The registered measure called ``name``; DPAuditError listing the known names otherwise."""
    try:
        return MEASURES[name]
    except KeyError:
        raise DPAuditError(
            f"unknown measure {name!r}; choose from: {', '.join(MEASURES)}"
        ) from None
