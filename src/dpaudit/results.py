"""Typed results of a fairness audit: every number and detail a report prints (spec ``architecture.md``).

A measure returns its exact details as a :class:`~dpaudit.details.Details` (those of the built-in
measures are importable from here too); :func:`dpaudit.audit` wraps each release in a :class:`MeasureResult` and
the whole run in an :class:`AuditResult`. The renderers of :mod:`dpaudit.report` read only these
types. Every class converts to plain JSON data (``to_dict``) and back (``from_dict``), so a saved
``--json`` document can be rendered later.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from dpaudit.criteria import Criterion
from dpaudit.details import (
    REPAIR_STATUSES,
    BlockRepairDetail,
    CellChange,
    CellMDMap,
    Details,
    MeasureDetails,
    MIBaseline,
    NamedCell,
    PrivateTopCellsDetails,
    RepairDetails,
    SelectionInfo,
    TopCell,
    TopCellsDetails,
    TVDDetails,
    _PlainRecord,
    details_from_dict,
)
from dpaudit.privacy import Release

__all__ = ["MIBaseline", "TopCell", "NamedCell", "SelectionInfo", "CellChange", "BlockRepairDetail", "TVDDetails",
           "CellMDMap", "TopCellsDetails", "PrivateTopCellsDetails", "RepairDetails", "REPAIR_STATUSES", "MeasureDetails",
           "Details", "MeasureResult", "BudgetState", "AuditResult", "details_from_dict", "ENTRY_KEYS"]

#: The keys of a measure's JSON entry that are its own (the release, title, options, per-criterion
#: values); every other key belongs to its details, which no details type may therefore use.
ENTRY_KEYS = frozenset({"title", "options", "per_criterion", *(f.name for f in fields(Release))})


@dataclass(frozen=True)
class MeasureResult:
    """The release of one measure, summed over the criteria.

    ``per_criterion`` holds exact values and is present only in exact (curator-only) mode.
    ``details`` holds the measure's explanation: in exact mode its exact details (MI baseline, top
    cells with counts, repairs); in DP mode only what was itself released privately (the names of
    the top cells, with that release's ε and mechanism). ``options`` are the measure's options.
    """

    name: str
    title: str
    release: Release
    per_criterion: tuple[float, ...] | None = None
    details: MeasureDetails | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def value(self) -> float:
        return self.release.value

    @property
    def extras(self) -> dict[str, Any]:
        """The details as the JSON-ready dicts of :meth:`to_dict`."""
        return {} if self.details is None else self.details.to_dict()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, **self.release.to_dict()}
        if self.options:
            out["options"] = dict(self.options)
        if self.per_criterion is not None:
            out["per_criterion"] = list(self.per_criterion)
        out.update(self.extras)
        return out

    @classmethod
    def from_dict(cls, name: str, doc: Mapping[str, Any]) -> MeasureResult:
        per = doc.get("per_criterion")
        details = details_from_dict({k: v for k, v in doc.items() if k not in ENTRY_KEYS}, name)
        return cls(name, doc["title"], Release.from_dict(dict(doc)), None if per is None else tuple(per), details,
                   dict(doc.get("options", {})))


@dataclass(frozen=True)
class BudgetState(_PlainRecord):
    """The privacy budget an audit was debited from, when the caller gave one (a shared accountant or
    a ledger file): its total ε, what had been spent after this audit's debits, and what remains.
    ``ledger`` is the ledger file's path (None for an in-memory :class:`~dpaudit.privacy.Budget`)."""

    total_epsilon: float
    spent: float
    remaining: float
    ledger: str | None = None

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> BudgetState:
        return cls(float(doc["total_epsilon"]), float(doc["spent"]), float(doc["remaining"]), doc.get("ledger"))


@dataclass(frozen=True)
class AuditResult:
    """Frozen result of :func:`dpaudit.audit`; ``str()`` prints a table, :meth:`to_dict`/:meth:`to_json`
    export it and :meth:`from_dict` reads it back; in a notebook it renders as the HTML report's
    sections (:meth:`_repr_html_`).

    ``source`` names the data (a file path, or the registered dataset the command line was given);
    ``budget`` is the state of the caller's budget or ledger after this audit (None when the audit
    had its own budget of exactly ``epsilon``). Both appear in the JSON only when set.
    """

    n: int
    criteria: tuple[Criterion, ...]
    measures: Mapping[str, MeasureResult]
    epsilon: float | None
    stages: tuple[str, ...] = field(default=())
    schema_data_derived: bool = False
    source: str | None = None
    budget: BudgetState | None = None

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
        where = {} if self.source is None else {"source": self.source}
        spent = {} if self.budget is None else {"budget": self.budget.to_dict()}
        return {
            **where,
            "n": self.n,
            "criteria": [str(c) for c in self.criteria],
            "mode": "exact" if self.exact else "dp",
            "epsilon": self.epsilon,
            "dp": self.dp,
            "neighbouring": "replace one tuple; n public",
            "schema": "data-derived (not DP)" if self.schema_data_derived else "declared",
            **spent,
            "measures": {name: m.to_dict() for name, m in self.measures.items()},
            "stages": list(self.stages),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> AuditResult:
        """Rebuild a result from :meth:`to_dict`'s document (e.g. a saved ``dpaudit fairness --json``)."""
        return cls(n=int(doc["n"]), criteria=tuple(Criterion.parse(c) for c in doc["criteria"]),
                   measures={name: MeasureResult.from_dict(name, m) for name, m in doc["measures"].items()},
                   epsilon=None if doc["epsilon"] is None else float(doc["epsilon"]),
                   stages=tuple(doc.get("stages", ())),
                   schema_data_derived=doc.get("schema") == "data-derived (not DP)",
                   source=None if doc.get("source") is None else str(doc["source"]),
                   budget=None if doc.get("budget") is None else BudgetState.from_dict(doc["budget"]))

    def to_json(self, **kwargs: Any) -> str:
        from dpaudit._io import to_jsonable

        return json.dumps(to_jsonable(self.to_dict()), **({"indent": 2} | kwargs))

    def __str__(self) -> str:
        from dpaudit.report.text import render_audit

        return render_audit(self)

    def _repr_html_(self) -> str:
        """The HTML report's sections as a fragment, for Jupyter and VS Code notebooks."""
        from dpaudit.report.html import render_audit_fragment

        return render_audit_fragment(self)
