"""Typed results of disparate vulnerability: membership risk by group of a protected column.

:class:`Disparity` (``MiaReport.disparity``, the ``"disparity"`` key of the JSON document) holds one
:class:`GroupAlpha` per target FPR α: the mean per-record TPR of every group (:class:`GroupRate`), the
gap between the largest and the smallest group and, for a few groups, between each pair
(:class:`GroupGap`), each with a bootstrap interval and a permutation p-value. :attr:`Disparity.answer`
is the report's one line. The computation is :mod:`dpaudit.mia.groups` (formulas and sources there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from dpaudit._fields import NONEMPTY, Choice, Num, Pair, Rate, Unit, Whole, read_fields

__all__ = ["GROUP_RULES", "GroupRate", "GroupGap", "GroupAlpha", "Disparity"]

#: The per-record estimators a group's TPR can rest on (:mod:`dpaudit.mia.per_record`).
GROUP_RULES = ("per_record_empirical", "per_record_parametric")
_Rate = Annotated[float, Rate()]
_Interval = Annotated[tuple[float, float], Pair(Rate())]
_Gap = Annotated[float, Num(-1.0, 1.0)]


def _pp(value: float) -> str:
    """A rate in percent, e.g. ``3.1 %``."""
    return f"{100 * value:.3g} %"


@dataclass(frozen=True, eq=True)
class GroupRate:
    """One group's mean per-record TPR at one α, over its ``n_records`` records, with the records bootstrap
    interval (None without one)."""

    group: str
    n_records: Annotated[int, Whole(minimum=1)]
    tpr: _Rate
    ci: _Interval | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "n_records": self.n_records, "tpr": self.tpr,
                "ci": None if self.ci is None else list(self.ci)}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> GroupRate:
        return cls(**read_fields(cls, doc))


@dataclass(frozen=True, eq=True)
class GroupGap:
    """TPR(``high``) − TPR(``low``) at one α, its bootstrap interval and the permutation p-value of
    "the two groups' records are exchangeable" (:func:`dpaudit.mia.groups.permutation_pvalue`)."""

    high: str
    low: str
    gap: _Gap
    ci: Annotated[tuple[float, float], Pair(Num(-1.0, 1.0))] | None
    p_value: _Rate

    def to_dict(self) -> dict[str, Any]:
        return {"high": self.high, "low": self.low, "gap": self.gap,
                "ci": None if self.ci is None else list(self.ci), "p_value": self.p_value}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> GroupGap:
        return cls(**read_fields(cls, doc))


@dataclass(frozen=True, eq=True)
class GroupAlpha:
    """Every group at one α: the estimator (``rule``) and whether it is valid for these scores (the
    whole run's check, with its ``warning``), the whole run's mean (``overall``), the groups largest
    TPR first, the gap between the first and the last, the test of equality of all groups
    (``p_value``) and, for at most :data:`dpaudit.mia.groups.MAX_PAIR_GROUPS` groups, every pair."""

    alpha: Annotated[float, Unit()]
    rule: Annotated[str, Choice(GROUP_RULES)]
    valid: bool
    overall: _Rate
    groups: Annotated[tuple[GroupRate, ...], NONEMPTY]
    gap: GroupGap
    p_value: _Rate
    pairs: tuple[GroupGap, ...] = ()
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "rule": self.rule, "valid": self.valid, "warning": self.warning,
                "overall": self.overall, "groups": [g.to_dict() for g in self.groups], "gap": self.gap.to_dict(),
                "p_value": self.p_value, "pairs": [p.to_dict() for p in self.pairs]}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> GroupAlpha:
        return cls(**read_fields(cls, doc))


@dataclass(frozen=True, eq=True)
class Disparity:
    """Membership risk by group of ``column`` (:func:`dpaudit.mia.groups.disparity`).

    Attributes
    ----------
    column : str
        The protected column; ``source`` says where its values came from.
    level : float
        Level of the intervals; a difference is claimed when the smallest p-value over the α's, times
        their number (Bonferroni), is at most ``1 − level``.
    n_permutations, n_boot, seed : int
        Permutations of the test, bootstrap replicates of the intervals, their seed.
    rows : tuple of GroupAlpha
        One per α.
    """

    column: str
    source: str
    level: Annotated[float, Unit()]
    n_permutations: Annotated[int, Whole(minimum=1)]
    n_boot: Annotated[int, Whole()]
    seed: Annotated[int, Whole()]
    rows: Annotated[tuple[GroupAlpha, ...], NONEMPTY]
    DERIVED: ClassVar[dict[str, tuple[Any, bool]]] = {"claimed": (bool, False), "answer": (str, False)}

    @property
    def adjusted_p(self) -> float:
        """The smallest p-value over the α's times their number, at most 1 (Bonferroni)."""
        return min(1.0, min(r.p_value for r in self.rows) * len(self.rows))

    @property
    def claimed(self) -> bool:
        """Whether the report claims that membership risk differs between the groups."""
        return self.adjusted_p <= 1 - self.level

    @property
    def lead(self) -> GroupAlpha:
        """The α of the answer line: the one with the smallest p-value (the first on a tie)."""
        return min(self.rows, key=lambda r: r.p_value)

    @property
    def answer(self) -> str:
        """The one line, e.g. ``membership risk differs by sex: TPR@0.1% 3.1 % (Female) vs 1.2 % (Male), gap
        1.9 pp [0.8, 3.0], p = 0.002``."""
        row = self.lead
        high, low = row.groups[0], row.groups[-1]
        gap = row.gap
        interval = "" if gap.ci is None else f" [{100 * gap.ci[0]:.2g}, {100 * gap.ci[1]:.2g}]"
        many = f" (Bonferroni over {len(self.rows)} α)" if len(self.rows) > 1 else ""
        numbers = (f"TPR@{100 * row.alpha:g}% {_pp(high.tpr)} ({high.group}) vs {_pp(low.tpr)} ({low.group}), "
                   f"gap {100 * gap.gap:.2g} pp{interval}, p = {self.adjusted_p:.2g}{many}")
        caveat = "" if row.valid else f" ({row.rule} is not valid for these scores: {row.warning})"
        if self.claimed:
            return f"membership risk differs by {self.column}: {numbers}{caveat}"
        return f"no difference in membership risk by {self.column} found at this M: {numbers}{caveat}"

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "source": self.source, "level": self.level,
                "n_permutations": self.n_permutations, "n_boot": self.n_boot, "seed": self.seed,
                "rows": [r.to_dict() for r in self.rows], "claimed": self.claimed, "answer": self.answer}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Disparity:
        return cls(**read_fields(cls, doc))
