"""Audit a dataset: count once per criterion, compute measures on the tables, release them.

``audit(data, criteria, measures=("tvd",), epsilon=1.0, schema=...)`` follows the data flow of the
architecture sketch: counts (one group-by per criterion) → exact measures on count tables → release
(OpenDP Laplace noise, debited from a budget) → a frozen :class:`AuditResult` that keeps the explain
trail (what was counted, which mechanism, ε, sensitivity) and prints a readable table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpaudit._errors import DPAuditError, SchemaError
from dpaudit.counts import count_tables
from dpaudit.criteria import Criterion, CriterionLike, parse_criteria
from dpaudit.measures import get_measure
from dpaudit._validation import positive
from dpaudit.privacy import Budget, Release, exact_release, laplace_release
from dpaudit.schema import Schema

__all__ = ["audit", "AuditResult", "MeasureResult", "split_budget", "repair_wcnf", "describe_cell"]


@dataclass(frozen=True)
class MeasureResult:
    """The release of one measure, summed over the criteria.

    ``per_criterion`` holds exact values and is present only in exact (curator-only) mode.
    ``extras`` holds the measure's explanation: in exact mode its exact details (MI baseline, top
    cells with counts); in DP mode only what was itself released privately (e.g. the names of the
    top cells, with that release's ε and mechanism).
    """

    name: str
    title: str
    release: Release
    per_criterion: tuple[float, ...] | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def value(self) -> float:
        return self.release.value

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, **self.release.to_dict()}
        if self.options:
            out["options"] = dict(self.options)
        if self.per_criterion is not None:
            out["per_criterion"] = list(self.per_criterion)
        out.update(self.extras)
        return out


@dataclass(frozen=True)
class AuditResult:
    """Frozen result of :func:`audit`; ``str()`` prints a table, :meth:`to_dict`/:meth:`to_json` export it."""

    n: int
    criteria: tuple[Criterion, ...]
    measures: Mapping[str, MeasureResult]
    epsilon: float | None
    stages: tuple[str, ...] = field(default=())
    schema_data_derived: bool = False

    @property
    def exact(self) -> bool:
        """True for curator-only exact values (no noise)."""
        return self.epsilon is None

    @property
    def dp(self) -> bool:
        """True when every released number is differentially private."""
        return all(m.release.dp for m in self.measures.values())

    def __getitem__(self, name: str) -> MeasureResult:
        return self.measures[name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "criteria": [str(c) for c in self.criteria],
            "mode": "exact" if self.exact else "dp",
            "epsilon": self.epsilon,
            "dp": self.dp,
            "neighbouring": "replace one tuple; n public",
            "schema": "data-derived (not DP)" if self.schema_data_derived else "declared",
            "measures": {name: m.to_dict() for name, m in self.measures.items()},
            "stages": list(self.stages),
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **({"indent": 2} | kwargs))

    def __str__(self) -> str:
        mode = "exact values (curator-only, not DP)" if self.exact else f"ε = {self.epsilon:g}"
        lines = [f"dpaudit fairness audit — n = {self.n:,}, {mode}"]
        lines += [f"  criterion {i + 1}: {c}" for i, c in enumerate(self.criteria)]
        header = f"  {'measure':<10} {'value':>12} {'95% interval':>27} {'ε':>7} {'sensitivity':>12}  DP"
        lines += ["", header]
        for m in self.measures.values():
            r = m.release
            eps = "—" if r.epsilon is None else f"{r.epsilon:g}"
            interval = f"[{r.interval[0]:.6g}, {r.interval[1]:.6g}]"
            lines.append(
                f"  {m.title:<10} {r.value:>12.6g} {interval:>27} {eps:>7} {r.sensitivity:>12.4g}  "
                f"{'yes' if r.dp else 'no'}"
            )
            if m.per_criterion is not None:
                baseline = m.extras.get("baseline") or [None] * len(self.criteria)
                for c, v, b in zip(self.criteria, m.per_criterion, baseline):
                    extra = f"   MI = {b['mi_bits']:.4g} bits" if b else ""
                    lines.append(f"      {str(c):<40} {v:.6g}{extra}")
            for cell in m.extras.get("top_cells", ()):
                lines.append(f"      top cell: {describe_cell(cell)}")
        reasons = sorted({reason for m in self.measures.values() for reason in m.release.reasons})
        if reasons:
            lines += ["", "  not DP because:"] + [f"    - {r}" for r in reasons]
        lines += ["", "  explain trail:"] + [f"    {i + 1}. {s}" for i, s in enumerate(self.stages)]
        return "\n".join(lines)


def describe_cell(cell: Mapping[str, Any]) -> str:
    """One line for a top cell: ``sex=Male, income=>50K | hours-per-week=40 (over, MD 0.0123, 980 rows)``."""
    parts = ", ".join(f"{k}={v}" for side in ("protected", "outcome") for k, v in cell[side].items())
    if cell["admissible"]:
        parts += " | " + ", ".join(f"{k}={v}" for k, v in cell["admissible"].items())
    if "md" in cell:
        parts += f" ({cell['sign']}-represented, MD {cell['md']:.4g}, {cell['count']:,} rows vs {cell['expected']:.1f} expected)"
    return parts


def split_budget(epsilon: float, measures: Sequence[str], split: Mapping[str, float] | None = None) -> dict[str, float]:
    """Share a total ε across measures: equally by default, or by the fractions in ``split``.

    Examples
    --------
    >>> split_budget(1.0, ["tvd", "tc"])
    {'tvd': 0.5, 'tc': 0.5}
    >>> split_budget(1.0, ["tvd", "tc"], {"tvd": 0.25, "tc": 0.75})
    {'tvd': 0.25, 'tc': 0.75}
    """
    if split is None:
        return {m: epsilon / len(measures) for m in measures}
    if set(split) != set(measures):
        raise DPAuditError(
            f"budget split names {sorted(split)} but the measures are {sorted(measures)}; give one "
            "fraction per measure"
        )
    if any(not (isinstance(f, (int, float)) and f > 0) for f in split.values()):
        raise DPAuditError(f"budget split fractions must be positive numbers, got {dict(split)}")
    total = math.fsum(split.values())
    if abs(total - 1.0) > 1e-9:
        raise DPAuditError(f"budget split fractions must sum to 1, they sum to {total:g}")
    return {m: epsilon * split[m] for m in measures}


def _resolve_schema(data: Any, schema: Schema | str | None) -> Schema:
    if isinstance(schema, Schema):
        return schema
    if schema == "infer":
        return Schema.infer(data)
    if schema is None:
        raise SchemaError(
            "no schema given: declare the domains (schema=Schema({...}) or a JSON file), or pass "
            "schema='infer' to read them off the data (the result is then not DP)"
        )
    raise SchemaError(f"schema must be a Schema, 'infer' or None, got {schema!r}")


def audit(
    data: Any,
    criteria: CriterionLike | Iterable[CriterionLike],
    *,
    measures: Sequence[str] = ("tvd",),
    epsilon: float | None = None,
    schema: Schema | str | None = None,
    budget: Budget | None = None,
    split: Mapping[str, float] | None = None,
    seed: int | None = None,
    k: int = 500,
    cells: str = "domain",
    name_cells: int | None = None,
    semantics: str = "ci",
    time_limit: float = 10.0,
) -> AuditResult:
    """Measure how far the data are from satisfying fairness criteria, privately.

    Parameters
    ----------
    data : pandas/polars/pyarrow frame, DuckDB relation, or CSV/Parquet path
    criteria : str, Criterion, or a list of them
        E.g. ``"sex ⊥ income | education-num"``; each measure is summed over the criteria.
    measures : sequence of str, default ("tvd",)
        Registered measure names (:data:`dpaudit.measures.MEASURES`).
    epsilon : float or None, default None
        Total privacy loss of this audit, shared by ``split`` across the measures. ``None`` returns
        exact values for the data curator: no noise, not DP, and per-criterion values and
        non-private baselines are included.
    schema : Schema, 'infer' or None
        Declared domains. ``'infer'`` reads them off the data; the result then says it is not DP.
    budget : Budget, optional
        An accountant to debit (for several audits of the same data); by default a fresh
        ``Budget(epsilon)``. Each measure's ε is debited before its value is released.
    split : mapping of measure name to fraction, optional
        How ``epsilon`` is shared; equal shares by default.
    seed : int, optional
        Reproducible noise for tests only; voids the DP guarantee (the result says so).
    k : int, default 500
        U_TC: how many of the largest cell contributions are summed per criterion.
    cells : {"domain", "observed"}, default "domain"
        U_TC: rank every declared cell, or only cells with rows (the paper's reference code).
    name_cells : int, optional
        U_TC: how many top cells to name. Exact mode lists them with counts (default 10). DP mode
        names them with report-noisy-top-k on half of U_TC's ε (default 10 in domain mode; 0 turns
        it off; observed mode cannot name cells privately).
    semantics : {"ci", "bag", "set"}, default "ci"
        U_R: what "repaired" means (see :mod:`dpaudit.measures.repair`).
    time_limit : float, default 10
        U_R: seconds per block for the solver on blocks too large to enumerate (bag/set).

    Returns
    -------
    AuditResult

    References
    ----------
    Vologdin, Tao, Gilad, "Measuring Database Unfairness via Dependency Quantification Under
    Differential Privacy", PVLDB 19(9), Algorithms 1–3; dpaudit spec ``fairness.md`` §2–3.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpaudit import Categorical, Schema, audit
    >>> df = pd.DataFrame({"sex": ["F"] * 50 + ["M"] * 50, "y": [1] * 25 + [0] * 25 + [1] * 40 + [0] * 10})
    >>> s = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1])})
    >>> res = audit(df, "sex ⊥ y", schema=s)
    >>> round(res["tvd"].value, 4), res.dp
    (0.045, False)
    >>> audit(df, "sex ⊥ y", schema=s, epsilon=1.0)["tvd"].release.scale
    0.16
    """
    crits = parse_criteria(criteria)
    names = list(dict.fromkeys([measures] if isinstance(measures, str) else measures))
    if not names:
        raise DPAuditError("no measures requested; pass e.g. measures=('tvd',)")
    specs = [get_measure(m) for m in names]
    given = {"k": k, "cells": cells, "name_cells": name_cells, "semantics": semantics, "time_limit": time_limit}
    options = {spec.name: spec.options(given) for spec in specs}
    shares_explained = {spec.name: spec.explain_share(**options[spec.name]) if epsilon is not None else 0.0
                        for spec in specs}  # validates the options before anything is counted
    if epsilon is not None:
        epsilon = positive("epsilon", epsilon)
        budget = budget if budget is not None else Budget(epsilon)
        shares = split_budget(float(epsilon), names, split)
        budget.check(float(epsilon), "audit of " + ", ".join(names))  # refuse before any release
    resolved = _resolve_schema(data, schema)
    not_dp = ("domains were inferred from the data (Schema.infer), which leaks which values occur",) if resolved.data_derived else ()

    tables = count_tables(data, crits, resolved)
    n = tables[0].n
    if n == 0:
        raise DPAuditError("the data have no rows; nothing to audit")
    stages = [
        f"counted {n:,} rows: one group-by per criterion over A ∪ P ∪ O, domains from a "
        f"{'data-derived' if resolved.data_derived else 'declared'} schema "
        f"({'; '.join(f'{t.criterion}: {t.counts.shape[0]} block(s) × {t.counts.shape[1]} × {t.counts.shape[2]} cells' for t in tables)})"
    ]
    results: dict[str, MeasureResult] = {}
    for spec in specs:
        opts = options[spec.name]
        assessment = spec.assess(tables, details=epsilon is None, **opts)
        per = assessment.per_criterion
        exact_value = math.fsum(per)
        sensitivity = spec.sensitivity(crits, n, **opts)
        formula = f"sensitivity {spec.sensitivity_formula} = {sensitivity:.4g}"
        if epsilon is None:
            release = exact_release(exact_value, sensitivity=sensitivity)
            extras = assessment.details
            results[spec.name] = MeasureResult(spec.name, spec.title, release, tuple(per), extras, opts)
            stages.append(f"{spec.title}: exact sum over {len(crits)} criteria (no noise, curator-only; {formula})")
            continue
        eps = shares[spec.name]
        eps_explain = eps * shares_explained[spec.name]
        eps_value = eps - eps_explain
        budget.spend(eps_value, spec.name)
        release = laplace_release(exact_value, sensitivity=sensitivity, epsilon=eps_value, seed=seed,
                                  reasons=not_dp + assessment.caveats)
        stages.append(
            f"{spec.title}: sum over {len(crits)} criteria + {release.mechanism}, ε = {eps_value:g}, "
            f"{formula}, scale {release.scale:.4g}"
        )
        extras = {}
        if eps_explain > 0:
            budget.spend(eps_explain, f"{spec.name}: explanation")
            extras = spec.private_explain(tables, eps_explain, seed, **opts)
            info = next((v for v in extras.values() if isinstance(v, dict) and "mechanism" in v), {})
            stages.append(f"{spec.title} explanation: {info.get('mechanism', 'private selection')}, ε = {eps_explain:g}")
        results[spec.name] = MeasureResult(spec.name, spec.title, release, None, extras, opts)
    return AuditResult(
        n=n,
        criteria=crits,
        measures=results,
        epsilon=None if epsilon is None else float(epsilon),
        stages=tuple(stages),
        schema_data_derived=resolved.data_derived,
    )


def repair_wcnf(
    data: Any,
    criteria: CriterionLike | Iterable[CriterionLike],
    *,
    schema: Schema | str | None = None,
    semantics: str = "bag",
    path: str | None = None,
    max_clauses: int = 50_000_000,
) -> str:
    """The paper's tuple-level weighted MaxSAT encoding of U_R, complete, as DIMACS WCNF text.

    Lets anyone check dpaudit's exact ``bag``/``set`` values with an external MaxSAT solver: the
    optimum of the formula equals ``audit(data, criteria, measures=("repair",), semantics=...)``'s
    exact value. Written to ``path`` too when given (atomically: a temporary file, then a rename).
    See :mod:`dpaudit.measures._wcnf` for the encoding; spec §2.3.
    """
    from dpaudit._io import atomic_write_text
    from dpaudit.measures._wcnf import repair_wcnf as _encode

    crits = parse_criteria(criteria)
    tables = count_tables(data, crits, _resolve_schema(data, schema))
    text = _encode(tables, semantics, max_clauses=max_clauses)
    if path is not None:
        atomic_write_text(path, text)
    return text
