"""U_R's details: every non-empty block's repair (bounds, status, what it changes); and how each report
shows them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from dpaudit._fields import Choice, Num, Whole, read_fields
from dpaudit._fields import Labels as LabelsCheck
from dpaudit._format import plural
from dpaudit.details._base import Details, Labels, _plain_fields

if TYPE_CHECKING:
    from dpaudit.results import MeasureResult

__all__ = ["SEMANTICS", "REPAIR_STATUSES", "CellChange", "BlockRepairDetail", "RepairDetails"]

#: U_R's repair semantics (:class:`dpaudit.measures.Repair`): conditional independence, bag, set.
SEMANTICS = ("ci", "bag", "set")
#: The status of a U_R block's repair: the minimum is known, the method gives bounds that need not
#: meet, the solvers' work budget left a gap (deterministic), or an explicit wall-clock time limit did.
REPAIR_STATUSES = ("exact", "bounds", "work limit", "timed out")
_TERMINAL_BLOCKS, _TERMINAL_CHANGES = 5, 4  # the terminal: the same, shorter


@dataclass(frozen=True)
class CellChange:
    """How a ``ci`` repair changes one cell: from ``count`` rows to ``repaired`` (``change`` = the difference)."""

    protected: Labels
    outcome: Labels
    count: Annotated[int, Whole()]
    repaired: float
    change: float

    def to_dict(self) -> dict[str, Any]:
        return {**_plain_fields(self), "protected": dict(self.protected), "outcome": dict(self.outcome)}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> CellChange:
        return cls(**read_fields(cls, doc))


@dataclass(frozen=True)
class BlockRepairDetail:
    """The repair of one block A = a: bounds, method, and what it changes.

    ``ci`` repairs list ``changes``; ``bag``/``set`` repairs list the protected groups ``kept`` and
    ``deleted`` and the outcome counts ``target`` every kept group is given. ``status`` is one of
    :data:`REPAIR_STATUSES`: ``"exact"`` (the minimum is known), ``"bounds"`` (the method gives
    bounds that need not meet), ``"work limit"`` (the solvers' work budget left a gap: the same on every
    machine) or ``"timed out"`` (an explicit wall-clock time limit left a gap); a document written
    before the field existed gets it from ``exact`` and ``method``.
    """

    criterion: str
    admissible: Labels
    value: float
    lower: float
    upper: Annotated[float, Num(finite=False)]
    exact: bool
    method: str
    changes: tuple[CellChange, ...] | None = None
    kept: tuple[Labels, ...] | None = None
    deleted: tuple[Labels, ...] | None = None
    target: tuple[Annotated[Mapping[str, Any], LabelsCheck(count=True)], ...] | None = None
    status: Annotated[str, Choice(REPAIR_STATUSES)] = ""

    def __post_init__(self) -> None:
        if not self.status:  # older documents: inexact bag/set blocks were always solver time-outs
            status = "exact" if self.exact else "timed out" if "time limit" in self.method else "bounds"
            object.__setattr__(self, "status", status)

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k)
               for k in ("criterion", "admissible", "value", "lower", "upper", "exact", "status", "method")}
        out["admissible"] = dict(self.admissible)
        if self.changes is not None:
            out["changes"] = [c.to_dict() for c in self.changes]
        for key in ("kept", "deleted", "target"):
            value = getattr(self, key)
            if value is not None:
                out[key] = [dict(v) for v in value]
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> BlockRepairDetail:
        """A block of a saved document; ``target`` holds the outcome counts (``count``) kept groups get."""
        return cls(**read_fields(cls, doc))


@dataclass(frozen=True)
class RepairDetails(Details):
    """U_R's curator view: every non-empty block's repair.

    ``status`` sums up the blocks': ``"exact"`` when every block is, else ``"timed out"`` when a
    wall-clock limit left a gap in some block, else ``"work limit"`` when the work budget did, else
    ``"bounds"``; :meth:`status_counts` counts them.
    """

    semantics: Annotated[str, Choice(SEMANTICS)]
    exact: bool
    upper: Annotated[float, Num(finite=False)]
    per_block: tuple[BlockRepairDetail, ...]
    released_in: ClassVar[str | None] = "exact"
    #: What :meth:`to_dict` writes beside the fields: the blocks' summed-up status.
    DERIVED: ClassVar[Mapping[str, tuple[Any, bool]]] = {"status": (Annotated[str, Choice(REPAIR_STATUSES)], False)}

    @property
    def status(self) -> str:
        statuses = {b.status for b in self.per_block}
        if self.exact and statuses <= {"exact"}:
            return "exact"
        return next((s for s in ("timed out", "work limit") if s in statuses), "bounds")

    def status_counts(self) -> dict[str, int]:
        """How many blocks are exact, bounds, work limit, timed out (only the statuses that occur, in that order)."""
        counts = {s: sum(b.status == s for b in self.per_block) for s in REPAIR_STATUSES}
        return {s: n for s, n in counts.items() if n}

    def status_line(self) -> str:
        """E.g. ``"11 blocks: 9 exact, 2 work limit"``."""
        n = len(self.per_block)
        return f"{plural(n, 'block')}: " + ", ".join(f"{v} {k}" for k, v in self.status_counts().items())

    def to_dict(self) -> dict[str, Any]:
        return {"semantics": self.semantics, "exact": self.exact, "status": self.status, "upper": self.upper,
                "per_block": [b.to_dict() for b in self.per_block]}

    # -- reports --------------------------------------------------------------------------------------
    def text_lines(self, m: MeasureResult) -> list[str]:
        return [f"      repair ({self.semantics}): {self.status_line()}"] if self.per_block else []

    def report_lines(self, m: MeasureResult) -> list[str]:
        """What the repair changes: the largest blocks, with their cell changes or kept groups."""
        if not self.per_block:
            return []
        exact = "exact" if self.exact else f"bounds [{m.value:,.6g}, {self.upper:,.6g}]"
        lines = [f"{m.title} ({self.semantics}) repair — {exact} ({self.status_line()}); largest blocks:"]
        for block in sorted(self.per_block, key=lambda b: -b.upper)[:_TERMINAL_BLOCKS]:
            where = ", ".join(f"{k}={v}" for k, v in block.admissible.items())
            bound = "" if block.exact else f" ({block.status}, ≤ {block.upper:,.6g})"
            lines.append(f"  {block.criterion}{' | ' + where if where else ''}: {block.value:,.6g}{bound}")
            for change in (block.changes or ())[:_TERMINAL_CHANGES]:
                cell = ", ".join(f"{k}={v}" for side in (change.protected, change.outcome) for k, v in side.items())
                verb = "add" if change.change > 0 else "remove"
                lines.append(f"      {verb} {abs(change.change):,.1f} rows ({cell}): {change.count:,} → {change.repaired:,.1f}")
            if block.deleted:
                lines.append("      delete groups: "
                             + "; ".join(", ".join(f"{k}={v}" for k, v in g.items()) for g in block.deleted))
            if block.target is not None and block.kept:
                aligned = "; ".join(", ".join(f"{k}={v}" for k, v in t.items() if k != "count") + f": {t['count']:,.0f}"
                                    for t in block.target)
                lines.append(f"      kept groups get the same outcome counts: {aligned}")
        return lines
