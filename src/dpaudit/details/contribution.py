"""U_TC's details: the top cells with their exact evidence and the MD maps (exact mode), or the cells
named by a private selection (DP mode); and how each report shows them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from dpaudit._checks import Rate
from dpaudit._document import Doc, items, number
from dpaudit._fields import REQUIRED, Choice, Key, Num, Whole, read_fields
from dpaudit.details._base import Details, Labels, _plain_fields, _PlainRecord

if TYPE_CHECKING:
    from dpaudit.results import MeasureResult

__all__ = ["TopCell", "NamedCell", "SelectionInfo", "ReliabilityInfo", "CellMDMap", "TopCellsDetails",
           "PrivateTopCellsDetails", "describe_cell", "SIGNS"]

#: How a top cell departs from independence: more rows than it predicts, fewer, or neither.
SIGNS = ("over", "under", "none")


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
        return cls(**read_fields(cls, doc))


@dataclass(frozen=True)
class TopCell(_Cell):
    """A cell that drives the unfairness (exact, curator-only): its MD, count and expected count."""

    md: Annotated[float, Num(low=0), REQUIRED] = 0.0
    count: Annotated[int, Whole(), REQUIRED] = 0
    expected: Annotated[float, Num(low=0), REQUIRED] = 0.0
    sign: Annotated[str, Choice(SIGNS), REQUIRED] = "none"


@dataclass(frozen=True)
class NamedCell(_Cell):
    """A cell named by a private selection: its name and noisy rank, and (from a second, Laplace
    release, :class:`ReliabilityInfo`) its noisy MD and ``reliability``, the chance that it truly is
    among the top cells as many as were named (None in documents written before it existed)."""

    rank: Annotated[int, Whole(minimum=1), REQUIRED] = 0
    noisy_md: Annotated[float, Num()] | None = None
    reliability: Annotated[float, Rate()] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        return {k: v for k, v in out.items() if k not in ("noisy_md", "reliability") or v is not None}


def describe_cell(cell: TopCell | NamedCell) -> str:
    """One line for a top cell: ``sex=Male, income=>50K | hours-per-week=40 (over-represented, MD …)``."""
    parts = ", ".join(f"{k}={v}" for side in (cell.protected, cell.outcome) for k, v in side.items())
    if cell.admissible:
        parts += " | " + ", ".join(f"{k}={v}" for k, v in cell.admissible.items())
    if isinstance(cell, TopCell):
        parts += f" ({cell.sign}-represented, MD {cell.md:.4g}, {cell.count:,} rows vs {cell.expected:.1f} expected)"
    elif cell.reliability is not None:
        parts += f" (reliability {cell.reliability:.2f}, noisy MD {cell.noisy_md:.2g})"
    return parts


@dataclass(frozen=True)
class SelectionInfo(_PlainRecord):
    """How a private selection was made (report-noisy-top-k)."""

    epsilon: Annotated[float, Num(low=0, low_open=True)]
    mechanism: str
    sensitivity_linf: Annotated[float, Num(low=0)]
    scale: Annotated[float, Num(low=0)]
    dp: bool


@dataclass(frozen=True)
class ReliabilityInfo(_PlainRecord):
    """How the named cells' reliability was released (docs/privacy.md, "How reliable the names are").

    One Laplace vector release of the named cells' MD and of ``threshold``, the MD of the (m+1)-th
    largest cell (None when every cell was named: each is then surely among the top m), with L1
    sensitivity (m+1)/n; ``scale`` is the noise of each of these numbers."""

    epsilon: Annotated[float, Num(low=0, low_open=True)]
    mechanism: str
    sensitivity_l1: Annotated[float, Num(low=0)]
    scale: Annotated[float, Num(low=0)]
    threshold: Annotated[float, Num()] | None
    dp: bool


@dataclass(frozen=True)
class CellMDMap:
    """MD(a, p, o) of every cell of one criterion (exact, curator-only): what a heat map draws.

    ``blocks``, ``protected`` and ``outcome`` label the three axes of ``md`` (the values of the
    admissible, protected and outcome columns; ``blocks`` is ``({},)`` without A). ``md`` is None
    when the criterion has more than :data:`~dpaudit.measures.contribution.MAX_MAP_CELLS` cells
    (``cells`` says how many): such a map is too large to store or to read. ``sign`` (same shape) is
    the sign of each cell's deviation ``Pr(p,o|a) − Pr(p|a)·Pr(o|a)``: 1 over-represented (more rows
    than independence predicts), −1 under-represented, 0 neither; None in documents saved before it
    existed (their heat maps are drawn unsigned).
    """

    criterion: str
    blocks: tuple[Labels, ...]
    protected: tuple[Labels, ...]
    outcome: tuple[Labels, ...]
    md: tuple[tuple[tuple[Annotated[float, Num(low=0)], ...], ...], ...] | None
    cells: Annotated[int, Whole()]
    sign: tuple[tuple[tuple[Annotated[int, Whole(minimum=-1, maximum=1)], ...], ...], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        md = None if self.md is None else [[list(row) for row in block] for block in self.md]
        out: dict[str, Any] = {"criterion": self.criterion, "blocks": [dict(b) for b in self.blocks],
                               "protected": [dict(p) for p in self.protected],
                               "outcome": [dict(o) for o in self.outcome], "md": md, "cells": self.cells}
        if self.sign is not None:
            out["sign"] = [[list(row) for row in block] for block in self.sign]
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> CellMDMap:
        """A map of a saved document: the axes' labels, and ``md`` (when there) of their shape."""
        d = Doc.of(doc)
        found = read_fields(cls, d)
        axes = [found[axis] for axis in ("blocks", "protected", "outcome")]
        md = d.many("md", _md_block, optional=True, shape=tuple(map(len, axes[1:])))
        if md is not None and (len(md) != len(axes[0]) or not all(axes)):
            d.fail("md", f"must be one {len(axes[1])} × {len(axes[2])} table of MD values per block ({len(axes[0])}), "
                         "with at least one block, protected and outcome value")
        sign = d.many("sign", _md_block, optional=True, shape=tuple(map(len, axes[1:])), low=-1, high=1)
        if sign is not None and (md is None or len(sign) != len(md)):
            d.fail("sign", "must have the shape of md")
        return cls(**found)


def _md_block(path: str, value: Any, shape: tuple[int, int], low: float = 0,
              high: float | None = None) -> tuple[tuple[float, ...], ...]:
    """One block of an MD map: ``shape`` (protected × outcome) MD values, each ≥ 0 (signs: in [−1, 1])."""
    return items(path, value, _md_row, length=shape[0], n=shape[1], low=low, high=high)


def _md_row(path: str, value: Any, n: int, low: float, high: float | None) -> tuple[float, ...]:
    return items(path, value, number, length=n, low=low, high=high)


class _CellList(Details):
    """What both U_TC details show in text and on the terminal: their cells, one line each."""

    top_cells: tuple[TopCell | NamedCell, ...]
    _how = ""

    def text_lines(self, m: MeasureResult) -> list[str]:
        return [f"      top cell: {describe_cell(cell)}" for cell in self.top_cells]

    def report_lines(self, m: MeasureResult) -> list[str]:
        if not self.top_cells:
            return []
        return [f"{m.title} top cells ({self._how}):"] + [
            f"  {i:>2}. {cell.criterion}: {describe_cell(cell)}" for i, cell in enumerate(self.top_cells, 1)]


@dataclass(frozen=True)
class TopCellsDetails(_CellList):
    """U_TC's curator view: the top cells with their exact evidence, and (``cell_md``, one map per
    criterion) the MD of every cell. ``cell_md`` is None in documents written before it existed."""

    top_cells: tuple[TopCell, ...]
    cell_md: tuple[CellMDMap, ...] | None = None
    _how = "exact"
    released_in: ClassVar[str | None] = "exact"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"top_cells": [c.to_dict() for c in self.top_cells]}
        if self.cell_md is not None:
            out["cell_md"] = [m.to_dict() for m in self.cell_md]
        return out


@dataclass(frozen=True)
class PrivateTopCellsDetails(_CellList):
    """U_TC's private explanation: top cells named by report-noisy-top-k, and how."""

    top_cells: tuple[NamedCell, ...]
    release: Annotated[SelectionInfo, Key("top_cells_release")]
    reliability: Annotated[ReliabilityInfo, Key("top_cells_reliability")] | None = None
    _how = "named privately, noisy rank order; reliability = chance each is truly among the top as many"
    released_in: ClassVar[str | None] = "dp"

    def to_dict(self) -> dict[str, Any]:
        out = {"top_cells": [c.to_dict() for c in self.top_cells], "top_cells_release": self.release.to_dict()}
        if self.reliability is not None:
            out["top_cells_reliability"] = self.reliability.to_dict()
        return out

    @classmethod
    def recognised_keys(cls) -> tuple[str, ...]:
        return ("top_cells_release",)

    def explanation(self) -> tuple[str, float, str] | None:
        """The ε the names spent: the selection's, plus the reliability release's when there is one."""
        if self.reliability is None:
            return "naming the top cells", self.release.epsilon, self.release.mechanism
        return ("naming the top cells and their reliability", self.release.epsilon + self.reliability.epsilon,
                f"{self.release.mechanism}; {self.reliability.mechanism}")
