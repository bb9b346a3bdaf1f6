"""What each measure explains beside its value: the typed ``*Details`` of U_MI^TVD, U_TC and U_R.

A measure returns its exact details (MI baseline, top cells and MD maps, repairs) or, in DP mode, the
privately named cells as one of these classes; :class:`~dpaudit.results.MeasureResult` carries them.
Every class converts to plain JSON data (``to_dict``) and back (:func:`details_from_dict`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["MIBaseline", "TopCell", "NamedCell", "SelectionInfo", "CellChange", "BlockRepairDetail", "TVDDetails",
           "CellMDMap", "TopCellsDetails", "PrivateTopCellsDetails", "RepairDetails", "REPAIR_STATUSES", "MeasureDetails",
           "details_from_dict"]

Labels = Mapping[str, Any]
#: The status of a U_R block's repair: the minimum is known, the method gives bounds that need not
#: meet, or a solver's time limit left a gap.
REPAIR_STATUSES = ("exact", "bounds", "timed out")


def _plain_fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


class _PlainRecord:
    """A dataclass whose JSON form is its fields as they are."""

    def to_dict(self) -> dict[str, Any]:
        return _plain_fields(self)


@dataclass(frozen=True)
class MIBaseline(_PlainRecord):
    """The non-private baseline of one criterion: I(P; O | A) in nats and bits (U_MI^TVD ≤ I by Pinsker)."""

    mi_nats: float
    mi_bits: float


@dataclass(frozen=True)
class _Cell:
    criterion: str
    protected: Labels
    outcome: Labels
    admissible: Labels

    def to_dict(self) -> dict[str, Any]:
        return {k: dict(v) if isinstance(v, Mapping) else v for k, v in _plain_fields(self).items()}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Any:
        return cls(**{f.name: doc[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class TopCell(_Cell):
    """A cell that drives the unfairness (exact, curator-only): its MD, count and expected count."""

    md: float = 0.0
    count: int = 0
    expected: float = 0.0
    sign: str = "none"


@dataclass(frozen=True)
class NamedCell(_Cell):
    """A cell named by a private selection; only its name and noisy rank are released."""

    rank: int = 0


@dataclass(frozen=True)
class SelectionInfo(_PlainRecord):
    """How a private selection was made (report-noisy-top-k)."""

    epsilon: float
    mechanism: str
    sensitivity_linf: float
    scale: float
    dp: bool


@dataclass(frozen=True)
class CellChange:
    """How a ``ci`` repair changes one cell: from ``count`` rows to ``repaired`` (``change`` = the difference)."""

    protected: Labels
    outcome: Labels
    count: int
    repaired: float
    change: float

    def to_dict(self) -> dict[str, Any]:
        return {**_plain_fields(self), "protected": dict(self.protected), "outcome": dict(self.outcome)}


@dataclass(frozen=True)
class BlockRepairDetail:
    """The repair of one block A = a: bounds, method, and what it changes.

    ``ci`` repairs list ``changes``; ``bag``/``set`` repairs list the protected groups ``kept`` and
    ``deleted`` and the outcome counts ``target`` every kept group is given. ``status`` is one of
    :data:`REPAIR_STATUSES`: ``"exact"`` (the minimum is known), ``"bounds"`` (the method gives
    bounds that need not meet) or ``"timed out"`` (a solver's time limit left a gap); a document
    written before the field existed gets it from ``exact`` and ``method``.
    """

    criterion: str
    admissible: Labels
    value: float
    lower: float
    upper: float
    exact: bool
    method: str
    changes: tuple[CellChange, ...] | None = None
    kept: tuple[Labels, ...] | None = None
    deleted: tuple[Labels, ...] | None = None
    target: tuple[Labels, ...] | None = None
    status: str = ""

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
        def labels(key: str) -> tuple[Labels, ...] | None:
            return None if doc.get(key) is None else tuple(doc[key])

        changes = doc.get("changes")
        return cls(doc["criterion"], doc["admissible"], doc["value"], doc["lower"], doc["upper"], doc["exact"],
                   doc["method"], None if changes is None else tuple(CellChange(**c) for c in changes),
                   labels("kept"), labels("deleted"), labels("target"), doc.get("status") or "")


@dataclass(frozen=True)
class TVDDetails:
    """U_MI^TVD's curator view: the MI baseline of every criterion."""

    baseline: tuple[MIBaseline, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": [b.to_dict() for b in self.baseline]}


@dataclass(frozen=True)
class CellMDMap:
    """MD(a, p, o) of every cell of one criterion (exact, curator-only): what a heat map draws.

    ``blocks``, ``protected`` and ``outcome`` label the three axes of ``md`` (the values of the
    admissible, protected and outcome columns; ``blocks`` is ``({},)`` without A). ``md`` is None
    when the criterion has more than :data:`~dpaudit.measures.contribution.MAX_MAP_CELLS` cells
    (``cells`` says how many): such a map is too large to store or to read.
    """

    criterion: str
    blocks: tuple[Labels, ...]
    protected: tuple[Labels, ...]
    outcome: tuple[Labels, ...]
    md: tuple[tuple[tuple[float, ...], ...], ...] | None
    cells: int

    def to_dict(self) -> dict[str, Any]:
        md = None if self.md is None else [[list(row) for row in block] for block in self.md]
        return {"criterion": self.criterion, "blocks": [dict(b) for b in self.blocks],
                "protected": [dict(p) for p in self.protected], "outcome": [dict(o) for o in self.outcome],
                "md": md, "cells": self.cells}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> CellMDMap:
        md = doc.get("md")
        return cls(doc["criterion"], tuple(doc["blocks"]), tuple(doc["protected"]), tuple(doc["outcome"]),
                   None if md is None else tuple(tuple(tuple(float(v) for v in row) for row in block) for block in md),
                   int(doc["cells"]))


@dataclass(frozen=True)
class TopCellsDetails:
    """U_TC's curator view: the top cells with their exact evidence, and (``cell_md``, one map per
    criterion) the MD of every cell. ``cell_md`` is None in documents written before it existed."""

    top_cells: tuple[TopCell, ...]
    cell_md: tuple[CellMDMap, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"top_cells": [c.to_dict() for c in self.top_cells]}
        if self.cell_md is not None:
            out["cell_md"] = [m.to_dict() for m in self.cell_md]
        return out


@dataclass(frozen=True)
class PrivateTopCellsDetails:
    """U_TC's private explanation: top cells named by report-noisy-top-k, and how."""

    top_cells: tuple[NamedCell, ...]
    release: SelectionInfo

    def to_dict(self) -> dict[str, Any]:
        return {"top_cells": [c.to_dict() for c in self.top_cells], "top_cells_release": self.release.to_dict()}


@dataclass(frozen=True)
class RepairDetails:
    """U_R's curator view: every non-empty block's repair.

    ``status`` sums up the blocks': ``"exact"`` when every block is, else ``"timed out"`` when a
    solver's time limit left a gap in some block, else ``"bounds"``; :meth:`status_counts` counts them.
    """

    semantics: str
    exact: bool
    upper: float
    per_block: tuple[BlockRepairDetail, ...]

    @property
    def status(self) -> str:
        statuses = {b.status for b in self.per_block}
        return ("exact" if self.exact and statuses <= {"exact"} else "timed out" if "timed out" in statuses
                else "bounds")

    def status_counts(self) -> dict[str, int]:
        """How many blocks are exact, bounds, timed out (only the statuses that occur, in that order)."""
        counts = {s: sum(b.status == s for b in self.per_block) for s in REPAIR_STATUSES}
        return {s: n for s, n in counts.items() if n}

    def status_line(self) -> str:
        """E.g. ``"11 blocks: 9 exact, 2 timed out"``."""
        n = len(self.per_block)
        return f"{n} block{'s' if n != 1 else ''}: " + ", ".join(f"{v} {k}" for k, v in self.status_counts().items())

    def to_dict(self) -> dict[str, Any]:
        return {"semantics": self.semantics, "exact": self.exact, "status": self.status, "upper": self.upper,
                "per_block": [b.to_dict() for b in self.per_block]}


MeasureDetails = TVDDetails | TopCellsDetails | PrivateTopCellsDetails | RepairDetails


def details_from_dict(doc: Mapping[str, Any]) -> MeasureDetails | None:
    """The details held in a measure's JSON entry (recognised by their keys), or None."""
    if "baseline" in doc:
        return TVDDetails(tuple(MIBaseline(**b) for b in doc["baseline"]))
    if "top_cells_release" in doc:
        return PrivateTopCellsDetails(tuple(NamedCell.from_dict(c) for c in doc["top_cells"]),
                                      SelectionInfo(**doc["top_cells_release"]))
    if "top_cells" in doc:
        maps = doc.get("cell_md")
        return TopCellsDetails(tuple(TopCell.from_dict(c) for c in doc["top_cells"]),
                               None if maps is None else tuple(CellMDMap.from_dict(m) for m in maps))
    if "per_block" in doc:
        return RepairDetails(doc["semantics"], doc["exact"], doc["upper"],
                             tuple(BlockRepairDetail.from_dict(b) for b in doc["per_block"]))
    return None

