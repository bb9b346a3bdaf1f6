"""Typed results of a fairness audit: every number and detail a report prints (spec ``architecture.md``).

A measure returns its exact details as a :class:`~dpaudit.details.Details` (those of the built-in
measures are importable from here too); :func:`dpaudit.audit` wraps each release in a :class:`MeasureResult` and
the whole run in an :class:`AuditResult`. The renderers of :mod:`dpaudit.report` read only these
types. Every class converts to plain JSON data (``to_dict``) and back (``from_dict``), so a saved
``--json`` document can be rendered later.

As data (:mod:`dpaudit._result_frames`): :meth:`AuditResult.to_frame` is the tidy values table,
:meth:`AuditResult.per_criterion` the exact per-criterion values labelled by criterion, and in exact
mode :meth:`AuditResult.by_group` / :meth:`AuditResult.parity` the per-group rates with statistical
parity difference and disparate-impact ratio. A result iterates over its measure names like a mapping.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from dpaudit._document import Doc, DocumentError, choice, flag, text
from dpaudit._errors import CriterionError, DPAuditError
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

if TYPE_CHECKING:
    import pandas as pd

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
    """Frozen result of :func:`dpaudit.audit`; ``str()`` prints a table, ``repr()`` one line,
    :meth:`to_dict`/:meth:`to_json`/:meth:`save` export it and :meth:`from_dict` reads it back; in a
    notebook it renders as the values table with the report's sections folded (:meth:`_repr_html_`).
    ``result["tvd"]`` is a measure's :class:`MeasureResult`; ``list(result)`` the measure names.

    ``source`` names the data (a file path, or the registered dataset the command line was given);
    ``budget`` is the state of the caller's budget or ledger after this audit (None when the audit
    had its own budget of exactly ``epsilon``). Both appear in the JSON only when set. ``tables`` are
    the exact count tables of an exact audit (None in DP mode), read by :meth:`by_group` and
    :meth:`parity`; they are never written to the JSON document (a result read back has none).
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
    tables: Annotated[tuple[Any, ...] | None, OMIT] = field(default=None, repr=False, compare=False)
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
        if name not in self.measures:
            raise KeyError(f"{name!r}: this audit computed {', '.join(self.measures)}")
        return self.measures[name]

    def __iter__(self) -> Iterator[str]:
        """The measure names, as a mapping iterates (``list(result)``, ``dict(result.items())``)."""
        return iter(self.measures)

    def __len__(self) -> int:
        return len(self.measures)

    def __contains__(self, name: object) -> bool:
        return name in self.measures

    def keys(self) -> Any:
        return self.measures.keys()

    def values(self) -> Any:
        return self.measures.values()

    def items(self) -> Any:
        return self.measures.items()

    def __repr__(self) -> str:
        """One line (at most 300 characters): mode, n, criteria, each measure's value."""
        mode = "exact" if self.exact else f"ε={self.epsilon:g}"
        values = ", ".join(f"{name}={m.value:.4g}" for name, m in self.measures.items())
        crits = "; ".join(str(c) for c in self.criteria)
        crits = crits if len(crits) <= 80 else f"{len(self.criteria)} criteria"
        line = f"<AuditResult {mode}, n={self.n:,}, {values} · {crits}>"
        return line if len(line) <= 300 else line[:296] + "…>"

    def per_criterion(self, measure: str | None = None) -> dict[str, Any]:
        """The exact per-criterion values labelled by criterion text: ``{criterion: value}`` of one
        measure, or ``{measure: {criterion: value}}`` of all. Exact mode only (a DP audit releases the
        sums alone)."""
        if not self.exact:
            raise DPAuditError("per-criterion values are exact, curator-only: a DP audit releases only each "
                               "measure's sum over the criteria (see to_frame())")
        if measure is None:
            return {name: self.per_criterion(name) for name in self.measures}
        m = self[measure]
        return {str(c): v for c, v in zip(self.criteria, m.per_criterion or ())}

    def to_frame(self) -> pd.DataFrame:
        """The values as a tidy pandas DataFrame: columns criterion, measure, value, lower, upper,
        epsilon, dp; one row per (criterion, measure) in exact mode and one summed row per measure
        (criterion ``"(sum)"``, the released value); interval and ε NaN for exact values
        (:func:`dpaudit._result_frames.values_frame`)."""
        from dpaudit._result_frames import values_frame

        return values_frame(self)

    def by_group(self, criterion: int | str = 0) -> pd.DataFrame:
        """Exact mode only: fairlearn-MetricFrame-like per-group outcome rates of one criterion (its
        index or text), a row per (admissible block, protected group) — see
        :func:`dpaudit._result_frames.group_rates`. A DP audit raises DPAuditError: the per-group
        rates are not released privately."""
        from dpaudit._result_frames import group_rates

        return group_rates(self, criterion)

    def parity(self) -> pd.DataFrame:
        """Exact mode only: statistical parity difference (max − min rate) and disparate-impact ratio
        (min / max) per criterion, block and outcome value (:func:`dpaudit._result_frames.parity_frame`);
        a DP audit raises DPAuditError (not released privately)."""
        from dpaudit._result_frames import parity_frame

        return parity_frame(self)

    def save(self, path: str | Path) -> Path:
        """Write the result to ``path`` in the format its suffix names: ``.json`` (the document
        :meth:`from_dict` reads back), ``.html``/``.htm`` (the self-contained report), ``.txt`` (the
        text report) or ``.md`` (the text report in a code block), or any format registered in
        :data:`dpaudit.report.FORMATS`; another suffix raises DPAuditError. Returns the path."""
        import importlib

        from dpaudit._io import atomic_write_text

        path = Path(path)
        # the formats' registry (the one --save uses), looked up by name as the views are: results sit
        # below the renderers
        document = importlib.import_module("dpaudit.report").format_for(path).render(self)
        atomic_write_text(path, document)
        return path

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
        """The notebook view, for Jupyter and VS Code: the values table first, the HTML report's
        sections folded in ``<details>`` (:func:`dpaudit.report.notebook.render_notebook`, through
        :mod:`dpaudit._views`)."""
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
