"""The measure protocol: what every unfairness measure provides to :func:`dpaudit.audit`.

A measure is a frozen dataclass of **its own options** (``TopContribution(k=500)``), validated in
``__post_init__`` — so an invalid measure cannot exist and every option is checked before any row is
read. It computes exact values on count tables (never rows), states the replace-one sensitivity of
its per-criterion value, and says what it releases: the value (through Laplace noise, drawn by
:mod:`dpaudit.privacy`), curator-only details, and optionally a private explanation paid from a share
of its ε. Registered measures (:data:`dpaudit.measures.MEASURES`) get the shared invariance and
sensitivity tests automatically (range, zero under independence, homogeneity, all neighbours).

The class also carries what the rest of the package needs to know about the measure, so that a new
measure is one module: the texts of the reports (``title``, ``meaning``, ``unit``, ``report_section``),
the types of its details (read back from a document by :meth:`Measure.details_from_dict`; how they are
shown is the details' own hooks, :mod:`dpaudit.details`) and its worst-case neighbours for the
self-check (:meth:`Measure.worst_cases`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpaudit.details import Details, MeasureDetails
from dpaudit.measures._neighbours import WorstCase

__all__ = ["Measure", "Assessment", "ReportSection"]


@dataclass(frozen=True)
class ReportSection:
    """The HTML page's section on a measure's details: its heading and anchor, and the paragraph shown
    when the measure was not requested (``absent``) or its result holds no details (``undisclosed``,
    where ``{value}`` is the released value); None leaves the section out in that case."""

    heading: str
    anchor: str
    absent: str | None = None
    undisclosed: str | None = None


@dataclass(frozen=True)
class Assessment:
    """What a measure computed on the count tables of F.

    ``per_criterion`` are exact values; ``details`` are curator-only explanations; ``caveats`` are
    reasons why a Laplace release of the sum would not be DP (e.g. a solver stopped at its work limit,
    so the value is a bound whose sensitivity is not proven).
    """

    per_criterion: list[float]
    details: MeasureDetails | None = None
    caveats: tuple[str, ...] = ()


@dataclass(frozen=True)
class Measure:
    """Base class of the registered measures; a subclass is a frozen dataclass of its options.

    Class attributes (set by every subclass): ``name`` (API/CLI/JSON key), ``title`` (the paper's
    name), ``reference`` (paper and section), ``sensitivity_formula`` (for the explain trail),
    ``upper`` (upper end of the per-criterion range; the lower end is 0) and
    ``zero_iff_independent`` (positivity: 0 exactly when P ⊥ O | A holds); optionally ``meaning``
    (one sentence for the HTML report), ``unit`` (its figure's axis label), ``details_types`` (the
    :class:`~dpaudit.details.Details` classes :meth:`details` may return) and ``report_section``.

    Subclasses implement :meth:`value` and :meth:`criterion_sensitivity`, and may override
    :meth:`details`, :meth:`assess`, :attr:`explain_share` with :meth:`private_details`,
    :attr:`degree`, :attr:`zero_if_independent` and :meth:`worst_cases`.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    reference: ClassVar[str]
    sensitivity_formula: ClassVar[str]
    upper: ClassVar[float]
    zero_iff_independent: ClassVar[bool]
    #: One sentence on what the value means, shown by the HTML report ("": none).
    meaning: ClassVar[str] = ""
    #: The axis label of the value's figure, with the unit ("": the title).
    unit: ClassVar[str] = ""
    #: The details classes :meth:`details` and :meth:`private_details` return, tried in this order
    #: when a saved document is read.
    details_types: ClassVar[tuple[type[Details], ...]] = ()
    #: The HTML page's section on the details; None: "<title> details", only when there are details.
    report_section: ClassVar[ReportSection | None] = None

    # -- what every measure computes ---------------------------------------------------------------
    def value(self, counts: np.ndarray) -> float:
        """Exact value of one criterion from its ``(blocks, P, O)`` count table."""
        raise NotImplementedError

    def criterion_sensitivity(self, conditional: bool, n: int) -> float:
        """Replace-one sensitivity of one criterion's value on n rows (``conditional``: it has A)."""
        raise NotImplementedError

    def sensitivity(self, criteria: Sequence[Any], n: int) -> float:
        """Replace-one sensitivity of the value summed over ``criteria`` (triangle inequality)."""
        return math.fsum(self.criterion_sensitivity(bool(c.admissible), n) for c in criteria)

    def per_criterion(self, tables: Sequence[Any]) -> list[float]:
        """Exact value of every criterion, from its CountTable (or raw count array)."""
        return [self.value(getattr(t, "counts", t)) for t in tables]

    def details(self, tables: Sequence[Any]) -> MeasureDetails | None:
        """Exact, curator-only explanation (baseline, top cells, repairs); None by default."""
        return None

    def assess(self, tables: Sequence[Any], *, details: bool,
               progress: Callable[[str], None] | None = None) -> Assessment:
        """Per-criterion values, the curator-only details (when ``details``) and DP caveats.

        ``progress``, when given, may be called with a short line as parts of a long computation
        finish (U_R: every block); :func:`dpaudit.audit` passes its own callback.
        """
        return Assessment(self.per_criterion(tables), self.details(tables) if details else None)

    # -- a private explanation, paid from a share of the measure's ε --------------------------------
    @property
    def explain_share(self) -> float:
        """Fraction of the measure's ε that :meth:`private_details` spends (0: none)."""
        return 0.0

    def private_details(self, tables: Sequence[Any], epsilon: float, seed: int | None) -> MeasureDetails:
        """Details released privately with ``epsilon`` (only called when ``explain_share > 0``)."""
        raise NotImplementedError(f"{type(self).__name__} releases no private explanation")

    # -- properties the shared tests check ---------------------------------------------------------
    @property
    def degree(self) -> int:
        """Homogeneity: scaling every count by λ scales the value by λ**degree (0: proportions only)."""
        return 0

    @property
    def zero_if_independent(self) -> bool:
        """Whether the value is 0 on every independent table."""
        return True

    # -- the reports' one-line reading of a value ------------------------------------------------------
    @classmethod
    def maximum(cls, n: int) -> float:
        """The largest value of one criterion on n rows, as the reports state the range: ``upper``
        (a measure whose ``upper`` is infinite bounds it by n instead)."""
        return cls.upper

    @classmethod
    def zero_means(cls, options: Mapping[str, Any]) -> str:
        """What a value of 0 says, for a result computed with ``options`` ("": nothing to say)."""
        return "the criterion holds exactly" if cls.zero_iff_independent else ""

    # -- reading saved results, and the self-check ----------------------------------------------------
    @classmethod
    def details_from_dict(cls, doc: Mapping[str, Any]) -> MeasureDetails | None:
        """The details in this measure's JSON entry (without the release's keys): the first of
        :attr:`details_types` that recognises them, or None."""
        return next((t.from_dict(doc) for t in cls.details_types if t.recognises(doc)), None)

    @classmethod
    def worst_cases(cls) -> tuple[WorstCase, ...]:
        """Worst-case replace-one neighbours of this measure's releases, for ``dpaudit selfcheck``: the
        pair(s) on which the release comes closest to the sensitivity proven in ``docs/privacy.md``.
        None declared (the default): the self-check lists the measure as not audited."""
        return ()

    def options(self) -> dict[str, Any]:
        """The options as a plain dict (what the JSON records)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

