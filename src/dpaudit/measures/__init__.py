"""Unfairness measures on count tables, each registered with its properties.

A :class:`Measure` bundles the exact per-criterion value, the replace-one sensitivity of each
criterion's value (the released sum over F has the sum of these), the exact-only explanation a
curator sees, an optional private explanation, and properties that shared tests check for every
registered measure (range, zero under independence, sensitivity on all neighbours). Measures never
read rows; they take the dense tables of :mod:`dpaudit.counts`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit.measures import contribution as _tc
from dpaudit.measures import repair as _repair
from dpaudit.measures.tvd import TVD_SENSITIVITY, mutual_information, u_mi_tvd

__all__ = ["Measure", "Assessment", "MEASURES", "get_measure", "u_mi_tvd", "mutual_information", "DEFAULT_PARAMS"]

#: Defaults of the measure parameters accepted by :func:`dpaudit.audit`.
DEFAULT_PARAMS: dict[str, Any] = {
    "k": 500, "cells": "domain", "name_cells": None, "semantics": "ci", "time_limit": 10.0,
}


@dataclass(frozen=True)
class Measure:
    """A registered unfairness measure.

    Attributes
    ----------
    name : str
        Key used in the API, CLI and JSON (``"tvd"``, ``"tc"``).
    title : str
        Name in the paper (``"U_MI^TVD"``).
    value : callable (counts, **params) -> float
        Exact per-criterion value from a ``(blocks, P, O)`` count table.
    criterion_sensitivity : callable (conditional, n, **params) -> float
        Replace-one sensitivity of one criterion's value; ``conditional`` says whether it has
        admissible attributes. The sum over F has the sum of these (triangle inequality).
    sensitivity_formula : str
        The formula, for the explain trail.
    upper : float
        Upper end of the per-criterion range (the lower end is 0).
    zero_iff_independent : bool
        Positivity: the value is 0 exactly when P ⊥ O | A holds.
    reference : str
        Paper and section.
    params : tuple of str
        Names of :data:`DEFAULT_PARAMS` entries the measure takes.
    explain : callable (tables, **params) -> dict, optional
        Exact, curator-only details (baseline, top cells), merged into the measure's JSON.
    private_explain : callable (tables, epsilon, seed, **params) -> dict, optional
        Details released privately with a share of the measure's ε.
    explain_share : callable (**params) -> float
        Fraction of the measure's ε that ``private_explain`` spends (0: no private details).
    assessor : callable (tables, details, **params) -> Assessment, optional
        Computes values, details and DP caveats in one pass (for measures whose details come out of
        the same expensive computation, like a repair); by default built from ``value``/``explain``.
    degree : callable (**params) -> int
        Homogeneity: scaling every count by λ scales the value by λ**degree (0: proportions only).
    zero_if_independent : callable (**params) -> bool
        Whether the value is 0 on every independent table (with ``zero_iff_independent``: exactly then).
    """

    name: str
    title: str
    value: Callable[..., float]
    criterion_sensitivity: Callable[..., float]
    sensitivity_formula: str
    upper: float
    zero_iff_independent: bool
    reference: str
    params: tuple[str, ...] = ()
    explain: Callable[..., dict[str, Any]] | None = field(default=None)
    private_explain: Callable[..., dict[str, Any]] | None = field(default=None)
    explain_share: Callable[..., float] = field(default=lambda **params: 0.0)
    assessor: Callable[..., Assessment] | None = field(default=None)
    degree: Callable[..., int] = field(default=lambda **params: 0)
    zero_if_independent: Callable[..., bool] = field(default=lambda **params: True)

    def options(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """This measure's parameters: defaults overridden by ``given`` (other keys ignored)."""
        given = given or {}
        return {p: given.get(p, DEFAULT_PARAMS[p]) for p in self.params}

    def sensitivity(self, criteria: Sequence[Any], n: int, **params: Any) -> float:
        """Replace-one sensitivity of the value summed over ``criteria`` on n rows."""
        return math.fsum(self.criterion_sensitivity(bool(c.admissible), n, **params) for c in criteria)

    def per_criterion(self, tables: Sequence[Any], **params: Any) -> list[float]:
        """Exact value of every criterion, from its CountTable (or raw count array)."""
        return [self.value(getattr(t, "counts", t), **params) for t in tables]

    def assess(self, tables: Sequence[Any], *, details: bool, **params: Any) -> Assessment:
        """Per-criterion values, exact-only details (when ``details``) and DP caveats, in one pass."""
        if self.assessor is not None:
            return self.assessor(tables, details=details, **params)
        extra = self.explain(tables, **params) if details and self.explain else {}
        return Assessment(self.per_criterion(tables, **params), extra)


@dataclass(frozen=True)
class Assessment:
    """What a measure computed on the count tables of F.

    ``per_criterion`` are exact values; ``details`` are curator-only explanations; ``caveats`` are
    reasons why a Laplace release of the sum would not be DP (e.g. a solver stopped at its time limit,
    so the value is a bound whose sensitivity is not proven).
    """

    per_criterion: list[float]
    details: dict[str, Any] = field(default_factory=dict)
    caveats: tuple[str, ...] = ()


# -- U_MI^TVD ---------------------------------------------------------------------------------------
def _tvd_value(counts: np.ndarray) -> float:
    return u_mi_tvd(counts)


def _tvd_explain(tables: Sequence[Any]) -> dict[str, Any]:
    baseline = []
    for t in tables:
        nats = mutual_information(t.counts)
        baseline.append({"mi_nats": nats, "mi_bits": nats / math.log(2)})
    return {"baseline": baseline}


# -- U_TC -------------------------------------------------------------------------------------------
def _tc_value(counts: np.ndarray, *, k: int, cells: str, name_cells: int | None = None) -> float:
    return _tc.u_tc(counts, k=k, cells=cells)


def _tc_sensitivity(conditional: bool, n: int, *, k: int, cells: str, name_cells: int | None = None) -> float:
    return _tc.tc_sensitivity(n=n, k=k, conditional=conditional, cells=cells)


def _tc_explain(tables: Sequence[Any], *, k: int, cells: str, name_cells: int | None = None) -> dict[str, Any]:
    m = 10 if name_cells is None else name_cells
    return {"top_cells": _tc.top_cells_of_tables(list(tables), m, cells=cells)}


def _tc_names(cells: str, name_cells: int | None) -> int:
    """How many top cells a DP release names: 10 by default in domain mode, never in observed mode."""
    if name_cells is None:
        return 10 if cells == "domain" else 0
    if isinstance(name_cells, bool) or not isinstance(name_cells, (int, np.integer)) or name_cells < 0:
        raise DPAuditError(f"name_cells must be a whole number ≥ 0, got {name_cells!r}")
    if name_cells and cells != "domain":
        raise DPAuditError(
            "naming top cells privately needs cells='domain': in observed mode the candidate cells "
            "depend on the data; pass name_cells=0 or cells='domain'"
        )
    return int(name_cells)


def _tc_explain_share(*, k: int, cells: str, name_cells: int | None = None) -> float:
    return 0.5 if _tc_names(cells, name_cells) else 0.0


def _tc_private_explain(tables: Sequence[Any], epsilon: float, seed: int | None, *, k: int, cells: str,
                        name_cells: int | None = None) -> dict[str, Any]:
    return _tc.private_top_cells(list(tables), _tc_names(cells, name_cells), epsilon=epsilon, seed=seed)


# -- U_R --------------------------------------------------------------------------------------------
def _repair_value(counts: np.ndarray, *, semantics: str, time_limit: float) -> float:
    return _repair.u_r(counts, semantics=semantics, time_limit=time_limit)


def _repair_assess(tables: Sequence[Any], *, details: bool, semantics: str, time_limit: float) -> Assessment:
    _repair.check_options(semantics, time_limit)
    per, blocks, caveats = [], [], []
    for t in tables:
        results = _repair.repair_blocks(t.counts, semantics, time_limit=time_limit)
        per.append(math.fsum(r.lower for r in results))
        inexact = [i for i, r in enumerate(results) if not r.exact]
        if inexact and semantics != "ci":
            caveats.append(
                f"U_R ({semantics}) of '{t.criterion}': {len(inexact)} block(s) hit the {time_limit:g} s "
                "solver limit, so the value is a lower bound whose sensitivity is not proven; raise time_limit"
            )
        if details:
            blocks += [_repair.describe_block(t, i, r) for i, r in enumerate(results) if t.counts[i].sum() > 0]
    extra: dict[str, Any] = {}
    if details:
        extra = {
            "semantics": semantics,
            "exact": all(b["exact"] for b in blocks),
            "upper": math.fsum(b["upper"] for b in blocks),
            "per_block": blocks,
        }
    return Assessment(per, extra, tuple(caveats))


MEASURES: dict[str, Measure] = {
    "tvd": Measure(
        name="tvd",
        title="U_MI^TVD",
        value=_tvd_value,
        criterion_sensitivity=lambda conditional, n: TVD_SENSITIVITY / n,
        sensitivity_formula="16·|F|/n",
        upper=2.0,
        zero_iff_independent=True,
        reference="Vologdin, Tao, Gilad, PVLDB 19(9), Alg. 1; spec §2.1",
        explain=_tvd_explain,
    ),
    "tc": Measure(
        name="tc",
        title="U_TC",
        value=_tc_value,
        criterion_sensitivity=_tc_sensitivity,
        sensitivity_formula="Σ_F min(3k, 6 [8 with A])/n (+2·max(¼, 1/n) each if observed)",
        upper=2.0,
        zero_iff_independent=True,
        reference="Vologdin, Tao, Gilad, PVLDB 19(9), Alg. 3; spec §2.2",
        params=("k", "cells", "name_cells"),
        explain=_tc_explain,
        private_explain=_tc_private_explain,
        explain_share=_tc_explain_share,
    ),
    "repair": Measure(
        name="repair",
        title="U_R",
        value=_repair_value,
        criterion_sensitivity=lambda conditional, n, **params: 2.0,
        sensitivity_formula="2·|F|",
        upper=math.inf,
        zero_iff_independent=False,
        reference="Vologdin, Tao, Gilad, PVLDB 19(9), Alg. 2; spec §2.3",
        params=("semantics", "time_limit"),
        assessor=_repair_assess,
        degree=lambda *, semantics, time_limit=None: 0 if semantics == "set" else 1,
        zero_if_independent=lambda *, semantics, time_limit=None: semantics != "bag",
    ),
}


def get_measure(name: str) -> Measure:
    """The registered measure called ``name``; DPAuditError listing the known names otherwise."""
    try:
        return MEASURES[name]
    except KeyError:
        raise DPAuditError(f"unknown measure {name!r}; choose from: {', '.join(MEASURES)}") from None
