"""Typed results of a fairness audit: every number and detail a report prints (spec ``architecture.md``).

A measure returns its exact details as a :class:`~dpaudit.details.Details` (those of the built-in
measures are importable from here too); :func:`dpaudit.audit` wraps each release in a :class:`MeasureResult` and
the whole run in an :class:`AuditResult`. The renderers of :mod:`dpaudit.report` read only these
types. Every class converts to plain JSON data (``to_dict``) and back (``from_dict``), so a saved
``--json`` document can be rendered later.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from dpaudit._document import Doc, DocumentError, choice, flag, number, text, whole
from dpaudit._errors import CriterionError
from dpaudit._views import render_view
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
    hook,
    mi_baseline,
)
from dpaudit.privacy import Release

__all__ = ["MIBaseline", "TopCell", "NamedCell", "SelectionInfo", "CellChange", "BlockRepairDetail", "TVDDetails",
           "CellMDMap", "TopCellsDetails", "PrivateTopCellsDetails", "RepairDetails", "REPAIR_STATUSES", "MeasureDetails",
           "Details", "MeasureResult", "BudgetState", "AuditResult", "details_from_dict", "ENTRY_KEYS"]

#: The keys of a measure's JSON entry that are its own (the release, title, options, per-criterion
#: values); every other key belongs to its details, which no details type may therefore use.
ENTRY_KEYS = frozenset({"title", "options", "per_criterion", *(f.name for f in fields(Release))})
#: The ``mode`` of a result's document (exact values, or a DP release) and its ``schema`` (declared, or
#: read off the data).
MODES = ("exact", "dp")
SCHEMAS = ("declared", "data-derived (not DP)")


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
        """The measure ``name``'s entry of a saved document, every field checked (a release that claims
        DP has noise; a release that is not DP says why; the interval holds the value)."""
        d = Doc.of(doc, f"measures.{name}")
        release = Release(value=d.read("value", number), epsilon=d.read("epsilon", number, optional=True, low=0,
                                                                        low_open=True),
                          sensitivity=d.read("sensitivity", number, low=0), scale=d.read("scale", number, low=0),
                          interval=d.pair("interval"), dp=d.read("dp", flag), mechanism=d.read("mechanism", text),
                          reasons=d.many("reasons", text, optional=True) or ())
        if release.dp and (release.epsilon is None or release.scale == 0):
            d.fail("dp", "is true but the value carries no noise (epsilon null or scale 0): an exact value is not DP")
        if release.epsilon is None and release.scale != 0:
            d.fail("scale", f"is {release.scale:g} but epsilon is null: an exact value has no noise")
        if not release.dp and not release.reasons:
            d.fail("reasons", "is empty but dp is false: a release that is not DP says why")
        if not release.interval[0] <= release.value <= release.interval[1]:
            d.fail("interval", f"{list(release.interval)} does not hold the value {release.value:g}")
        options = d.doc("options", optional=True)
        return cls(name, d.read("title", text), release, d.many("per_criterion", number, optional=True),
                   details_from_dict(d.without(ENTRY_KEYS), name), dict(options or {}))


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
        d = Doc.of(doc, "budget")
        return cls(d.read("total_epsilon", number, low=0, low_open=True), d.read("spent", number, low=0),
                   d.read("remaining", number), d.read("ledger", text, optional=True))


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
            "mode": MODES[not self.exact],
            "epsilon": self.epsilon,
            "dp": self.dp,
            "neighbouring": "replace one tuple; n public",
            "schema": SCHEMAS[self.schema_data_derived],
            **spent,
            "measures": {name: m.to_dict() for name, m in self.measures.items()},
            "stages": list(self.stages),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> AuditResult:
        """Rebuild a result from :meth:`to_dict`'s document (e.g. a saved ``dpaudit fairness --json``).

        Every field is checked, and the parts against each other (:func:`_consistent`): anything else
        raises :class:`~dpaudit.DataError` naming the field.
        """
        d = Doc.of(doc)
        criteria = d.many("criteria", _criterion)
        if not criteria:
            d.fail("criteria", "is empty")
        entries = d.named("measures", nonempty=True)
        budget = d.doc("budget", optional=True)
        result = cls(n=d.read("n", whole), criteria=criteria,
                     measures={name: MeasureResult.from_dict(name, m) for name, m in entries.items()},
                     epsilon=d.read("epsilon", number, optional=True, low=0, low_open=True),
                     stages=d.many("stages", text, optional=True) or (),
                     schema_data_derived=SCHEMAS.index(d.read("schema", choice, choices=SCHEMAS)) == 1,
                     source=d.read("source", text, optional=True),
                     budget=None if budget is None else BudgetState.from_dict(budget))
        _consistent(result, d, entries)
        return result

    def to_json(self, **kwargs: Any) -> str:
        from dpaudit._io import to_jsonable

        return json.dumps(to_jsonable(self.to_dict()), **({"indent": 2} | kwargs))

    def __str__(self) -> str:
        """The plain-text report (:func:`dpaudit.report.text.render_audit`, through :mod:`dpaudit._views`)."""
        return render_view(self, "text")

    def _repr_html_(self) -> str:
        """The HTML report's sections as a fragment, for Jupyter and VS Code notebooks
        (:func:`dpaudit.report.html.render_audit_fragment`, through :mod:`dpaudit._views`)."""
        return render_view(self, "html")


def _criterion(path: str, value: Any) -> Criterion:
    try:
        return Criterion.parse(text(path, value))
    except CriterionError as exc:
        raise DocumentError(f"field {path} is not a criterion ({exc})") from None


def _consistent(result: AuditResult, d: Doc, entries: Mapping[str, Doc]) -> None:
    """Refuse a document whose parts contradict each other: ``mode`` and ``dp`` against ε and the
    releases (an exact result releases nothing privately and cannot claim DP; a DP result holds no
    per-criterion values or curator-only details, and its measures spend exactly its ε), and every
    per-criterion list against the criteria."""
    mode = MODES[not result.exact]
    if d.read("mode", choice, choices=MODES) != mode:
        d.fail("mode", f"is {d['mode']!r} but epsilon is {result.epsilon}: an audit with epsilon null is exact, "
                       "one with an epsilon a DP release")
    if d.read("dp", flag) != result.dp:
        d.fail("dp", f"is {d['dp']} but the measures' releases say {result.dp}")
    if result.dp and result.schema_data_derived:
        d.fail("dp", "is true but the domains were read off the data, which no DP release can do")
    spent = []
    for name, m in result.measures.items():
        entry, r = entries[name], m.release
        if (r.epsilon is None) != result.exact:
            entry.fail("epsilon", f"is {r.epsilon} in a {mode} result")
        if len(m.per_criterion or ()) != (len(result.criteria) if result.exact else 0):
            entry.fail("per_criterion", f"must hold one value per criterion ({len(result.criteria)}) in an exact "
                                        "result, and be absent in a DP one")
        baseline = mi_baseline(m.details)
        if baseline is not None and len(baseline) != len(result.criteria):
            entry.fail("baseline", f"must hold one entry per criterion ({len(result.criteria)})")
        kind = getattr(m.details, "released_in", None)
        if m.details is not None and kind not in (None, mode):
            entry.fail(next(iter(m.details.to_dict()), "details"), f"holds {kind}-mode details in a {mode} result")
        extra = hook(m.details, "explanation")() if m.details is not None else None
        spent += [r.epsilon or 0.0] + ([extra[1]] if extra else [])
    if result.epsilon is not None and not math.isclose(math.fsum(spent), result.epsilon, rel_tol=1e-9):
        d.fail("epsilon", f"is {result.epsilon:g} but the measures' releases spent {math.fsum(spent):g}")
