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
from typing import Annotated, Any, ClassVar

from dpaudit._document import Doc, DocumentError, choice, flag, text
from dpaudit._errors import CriterionError
from dpaudit._fields import (
    BY_NAME,
    FLATTEN,
    NONEMPTY,
    OMIT,
    REQUIRED,
    Check,
    Choice,
    Coded,
    Json,
    Key,
    Num,
    Whole,
    read_fields,
)
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
from dpaudit.diagnostics import BlockDiagnostic
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


class _Criterion(Check):
    """A criterion as its text (``"sex ⊥ income | education"``), parsed."""

    def read(self, path: str, value: Any) -> Criterion:
        try:
            return Criterion.parse(text(path, value))
        except CriterionError as exc:
            raise DocumentError(f"field {path} is not a criterion ({exc})") from None

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "description": "a criterion: P ⊥ O or P ⊥ O | A (column names)"}


_CRITERION = _Criterion()


@dataclass(frozen=True)
class MeasureResult:
    """The release of one measure, summed over the criteria.

    ``per_criterion`` holds exact values and is present only in exact (curator-only) mode.
    ``details`` holds the measure's explanation: in exact mode its exact details (MI baseline, top
    cells with counts, repairs); in DP mode only what was itself released privately (the names of
    the top cells, with that release's ε and mechanism). ``options`` are the measure's options.
    """

    name: Annotated[str, OMIT]  # the entry's key in the document
    title: str
    release: Annotated[Release, FLATTEN]
    per_criterion: tuple[float, ...] | None = None
    details: Annotated[MeasureDetails | None, OMIT] = None  # the entry's other keys, read by measure name
    options: Annotated[Mapping[str, Any], Json()] = field(default_factory=dict)

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
        found = read_fields(cls, d)
        release = found["release"]
        if release.dp and (release.epsilon is None or release.scale == 0):
            d.fail("dp", "is true but the value carries no noise (epsilon null or scale 0): an exact value is not DP")
        if release.epsilon is None and release.scale != 0:
            d.fail("scale", f"is {release.scale:g} but epsilon is null: an exact value has no noise")
        if not release.dp and not release.reasons:
            d.fail("reasons", "is empty but dp is false: a release that is not DP says why")
        if not release.interval[0] <= release.value <= release.interval[1]:
            d.fail("interval", f"{list(release.interval)} does not hold the value {release.value:g}")
        return cls(name, details=details_from_dict(d.without(ENTRY_KEYS), name), **found)


@dataclass(frozen=True)
class BudgetState(_PlainRecord):
    """The privacy budget an audit was debited from, when the caller gave one (a shared accountant or
    a ledger file): its total ε, what had been spent after this audit's debits, and what remains.
    ``ledger`` is the ledger file's path (None for an in-memory :class:`~dpaudit.privacy.Budget`)."""

    total_epsilon: Annotated[float, Num(low=0, low_open=True)]
    spent: Annotated[float, Num(low=0)]
    remaining: float
    ledger: str | None = None


@dataclass(frozen=True)
class AuditResult:
    """Frozen result of :func:`dpaudit.audit`; ``str()`` prints a table, :meth:`to_dict`/:meth:`to_json`
    export it and :meth:`from_dict` reads it back; in a notebook it renders as the HTML report's
    sections (:meth:`_repr_html_`).

    ``source`` names the data (a file path, or the registered dataset the command line was given);
    ``budget`` is the state of the caller's budget or ledger after this audit (None when the audit
    had its own budget of exactly ``epsilon``). Both appear in the JSON only when set.
    ``diagnostics`` holds the block diagnostic of each criterion (:mod:`dpaudit.diagnostics`);
    :attr:`warnings` their warnings.
    """

    n: Annotated[int, Whole()]
    criteria: Annotated[tuple[Annotated[Criterion, _CRITERION], ...], NONEMPTY]
    measures: Annotated[Mapping[str, MeasureResult], NONEMPTY, BY_NAME]
    epsilon: Annotated[float, Num(low=0, low_open=True)] | None
    stages: tuple[str, ...] = field(default=())
    schema_data_derived: Annotated[bool, Key("schema"), Coded(SCHEMAS), REQUIRED] = False
    source: str | None = None
    budget: BudgetState | None = None
    diagnostics: tuple[BlockDiagnostic, ...] = ()
    #: What :meth:`to_dict` writes beside the fields, checked against the measures (:func:`_consistent`).
    DERIVED: ClassVar[Mapping[str, tuple[Any, bool]]] = {
        "mode": (Annotated[str, Choice(MODES)], True), "dp": (bool, True), "neighbouring": (str, False),
        "warnings": (tuple[str, ...], False)}

    @property
    def exact(self) -> bool:
        """True for curator-only exact values (no noise)."""
        return self.epsilon is None

    @property
    def dp(self) -> bool:
        """True when every released number is differentially private."""
        return all(m.release.dp for m in self.measures.values())

    @property
    def warnings(self) -> tuple[str, ...]:
        """The block diagnostic's warnings (degenerate block structure), one per flagged criterion."""
        return tuple(d.warning for d in self.diagnostics if d.warning)

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
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "warnings": list(self.warnings),
            "stages": list(self.stages),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> AuditResult:
        """Rebuild a result from :meth:`to_dict`'s document (e.g. a saved ``dpaudit fairness --json``).

        Every field is checked, and the parts against each other (:func:`_consistent`): anything else
        raises :class:`~dpaudit.DataError` naming the field.
        """
        d = Doc.of(doc)
        result = cls(**read_fields(cls, d))
        _consistent(result, d, d.named("measures"))
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
    spent += [diag.epsilon for diag in result.diagnostics if diag.epsilon is not None]
    if result.epsilon is not None and not math.isclose(math.fsum(spent), result.epsilon, rel_tol=1e-9):
        d.fail("epsilon", f"is {result.epsilon:g} but the measures' releases spent {math.fsum(spent):g}")
