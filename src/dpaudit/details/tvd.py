"""U_MI^TVD's details: the non-private MI baseline of every criterion (shown beside the values)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from dpaudit.details._base import Details, _PlainRecord

if TYPE_CHECKING:
    from dpaudit.results import MeasureResult

__all__ = ["MIBaseline", "TVDDetails"]


@dataclass(frozen=True)
class MIBaseline(_PlainRecord):
    """The non-private baseline of one criterion: I(P; O | A) in nats and bits (U_MI^TVD ≤ I by Pinsker)."""

    mi_nats: float
    mi_bits: float


@dataclass(frozen=True)
class TVDDetails(Details):
    """U_MI^TVD's curator view: the MI baseline of every criterion. The reports show it beside the
    per-criterion values (:meth:`mi_baseline`), so it adds no lines and no section of its own."""

    baseline: tuple[MIBaseline, ...]
    released_in: ClassVar[str | None] = "exact"

    def mi_baseline(self) -> Sequence[MIBaseline]:
        return self.baseline

    def text_lines(self, m: MeasureResult) -> list[str]:
        return []

    def report_lines(self, m: MeasureResult) -> list[str]:
        return []
