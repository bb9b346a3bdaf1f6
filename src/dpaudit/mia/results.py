"""Typed results of a membership-inference evaluation (:func:`dpaudit.mia.evaluate.evaluate`).

:class:`MiaReport` holds one :class:`AlphaResult` per target FPR α, which holds one
:class:`RuleResult` per rule (:data:`dpaudit.mia.evaluate.RULES`) and the per-record FPR spread of
the naive threshold. Fields are read as attributes (``row.rules["pp_t"].tpr``) or, like the JSON
document, by key (``row["pp_t"]["tpr"]``). ``to_dict``/``from_dict`` round-trip, so a saved
``--json`` report can be rendered again (:mod:`dpaudit.report`).

For figures (:mod:`dpaudit.report.html_mia`) the report also carries, when :func:`evaluate` made it,
each rule's ROC as a :class:`Curve` (``curves``) and, per α, a :class:`Histogram` of the naive
threshold's per-record FPR (``fpr_histograms``); both are None in a document saved before they existed.

``from_dict`` checks every field the reports use (rates in [0, 1], α in (0, 1), intervals of two
numbers, one result per α, known rules, …) through :class:`dpaudit._document.Doc` and refuses anything
else with a :class:`~dpaudit.DataError` naming the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from dpaudit._document import Doc
from dpaudit._fields import (
    NONEMPTY,
    REQUIRED,
    Check,
    Choice,
    Flag,
    Items,
    Json,
    Key,
    Keyed,
    Keys,
    Num,
    Pair,
    Rate,
    Spread,
    Text,
    Unit,
    When,
    Whole,
    read_fields,
)
from dpaudit._views import render_view
from dpaudit.mia._defaults import SIGNS, THRESHOLD_KINDS
from dpaudit.mia.findings import RULES, Verdict, VulnerableRecords
from dpaudit.mia.group_results import Disparity

__all__ = ["RuleResult", "FprSpread", "AlphaResult", "Curve", "Histogram", "MiaReport"]

#: How a rule's FPR was obtained: measured on the targets, or the α its model promises.
FPR_KINDS = ("realised", "nominal")
_Rate = Annotated[float, Rate()]
_Interval = Annotated[tuple[float, float], Pair(Rate())]
_NULL, _REQ = (False, True), (True, False)  # (required, nullable): may be null / must be there


def _option_fields() -> dict[str, tuple[Check, bool, bool]]:
    """A report's options, checked where the reports read them: the level, FPC and threshold kind always,
    the others when present (null only for the sizes and the seed, which a run may lack)."""
    return {"level": (Unit(), *_REQ), "threshold": (Choice(THRESHOLD_KINDS), *_REQ), "fpc": (Flag(), *_REQ),
            "fpc_train_size": (Num(low=0), *_NULL), "attack": (Text(), False, False),
            "attack_options": (Json(), False, False), "sign": (Choice(SIGNS), False, False),
            "strict": (Flag(), False, False), "location": (Text(), False, False),
            "variance": (Text(), False, False), "n_boot": (Whole(), False, False),
            "seed": (Whole(maximum=None), *_NULL), "delta": (Num(0, 1, high_open=True), False, False),
            "train_size": (Num(low=0), *_NULL), "pool_size": (Num(low=0), *_NULL),
            "fpc_train_size_from": (Text(), False, False), "scores": (Json(), False, False),
            "n_in": (Items(Whole(), 2), *_NULL)}


class _Options(Keyed):
    """The options; the FPC's training-set size is needed when the FPC is on and its source is named."""

    def read(self, path: str, value: Any) -> dict[str, Any]:
        found = super().read(path, value)
        if found["fpc"] is True and "fpc_train_size_from" in found and found.get("fpc_train_size") is None:
            Doc(found, path).read("fpc_train_size", Num(low=0).read)
        return found


_OPTIONS = _Options(_option_fields)
_DIAGNOSTICS = Keyed(lambda: {"share_non_normal": (Rate(), True, False), "min_n_out": (Whole(minimum=None), *_NULL),
                              "auc_naive": (Rate(), *_NULL)})


class _KeyView(Mapping[str, Any]):
    """Read access by key to what :meth:`to_dict` exports (JSON-style access to a typed result)."""

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


@dataclass(frozen=True, eq=True)
class RuleResult(_KeyView):
    """One rule's estimate at one α.

    Attributes
    ----------
    estimable : bool
        False when the rule cannot give a value here (``reason`` says why; numbers are None).
    tpr, fpr : float or None
        TPR and the rule's realised FPR (``fpr_kind = "nominal"``: α by the rule's model).
    epsilon_lb : float or None
        ε lower bound from realised rates with confidence (None: the rule has no counts).
    epsilon_point : float or None
        The same formula on the point estimates — not a bound.
    ci, cp : (float, float) or None
        Bootstrap interval; Clopper–Pearson interval (fixed-threshold rules).
    threshold : float or None
        The naive rule's global threshold.
    t_threshold_fpr_loo : float or None
        Parametric rule: how often the records' t thresholds are crossed by their own OUT scores.
    valid : bool or None
        Whether the rule's calibration holds for these scores: True for the rank rules, the Gaussian
        check (:func:`dpaudit.mia.verdict.gaussian_check`) for PP-N(0,1), PP-t and the parametric rule,
        None for the naive rule (its threshold is chosen on the same data: a comparison, never a headline).
    warning : str or None
        Why the rule is not valid here.
    """

    estimable: bool
    tpr: _Rate | None
    fpr: _Rate | None
    epsilon_lb: Annotated[float, Num(low=0, finite=False)] | None = None
    epsilon_point: Annotated[float, Num(finite=False, nan=True)] | None = None
    ci: _Interval | None = None
    cp: _Interval | None = None
    threshold: Annotated[float, Num(finite=False)] | None = None
    fpr_kind: Annotated[str, Choice(FPR_KINDS)] | None = None
    t_threshold_fpr_loo: _Rate | None = None
    reason: str | None = None
    valid: bool | None = None
    warning: str | None = None
    #: An estimable rule has a TPR and an FPR; one that is not has neither, and a reason.
    WHEN: ClassVar[tuple[When, ...]] = (
        When("estimable", (True,), require=("tpr", "fpr")),
        When("estimable", (False,), require=("reason",), null=("tpr", "fpr"),
             message="and fpr must be null for a rule that is not estimable"))

    @classmethod
    def not_estimable(cls, reason: str) -> RuleResult:
        return cls(False, None, None, reason=reason)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"estimable": self.estimable, "tpr": self.tpr, "fpr": self.fpr,
                               "epsilon_lb": self.epsilon_lb, "epsilon_point": self.epsilon_point}
        for key in ("ci", "cp"):
            value = getattr(self, key)
            if value is not None:
                out[key] = [float(v) for v in value]
        for key in ("threshold", "fpr_kind", "t_threshold_fpr_loo", "reason", "valid", "warning"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> RuleResult:
        """An estimable rule has a TPR and an FPR; one that is not has neither, and a reason (:attr:`WHEN`)."""
        return cls(**read_fields(cls, doc))


@dataclass(frozen=True, eq=True)
class FprSpread(_KeyView):
    """Per-record FPR under the naive global threshold: its maximum and the share of records above α."""

    max: _Rate
    share_above_alpha: _Rate

    def to_dict(self) -> dict[str, Any]:
        return {"max": self.max, "share_above_alpha": self.share_above_alpha}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> FprSpread:
        return cls(**read_fields(cls, doc))


@dataclass(frozen=True, eq=True)
class AlphaResult(_KeyView):
    """Every rule at one target FPR α, the headline ``verdict`` and the ranked ``vulnerable`` records
    (both None in a document saved before they existed)."""

    alpha: Annotated[float, Unit()]
    rules: Annotated[Mapping[str, RuleResult], Spread(RULES)]  # each rule's result is a key of the row
    naive_per_record_fpr: FprSpread
    verdict: Verdict | None = None
    vulnerable: VulnerableRecords | None = None

    def __getitem__(self, key: str) -> Any:
        if key in _ROW_FIELDS:
            return getattr(self, key)
        return self.rules[key]

    def to_dict(self) -> dict[str, Any]:
        out = {**{name: r.to_dict() for name, r in self.rules.items()},
               "naive_per_record_fpr": self.naive_per_record_fpr.to_dict()}
        for key in ("verdict", "vulnerable"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value.to_dict()
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> AlphaResult:
        """An α's row of a report's ``results``: every key but ``alpha`` and the row's own fields names a
        known rule."""
        return cls(**read_fields(cls, doc))


#: The fields of an α's result that are not rules.
_ROW_FIELDS = ("naive_per_record_fpr", "verdict", "vulnerable")


@dataclass(frozen=True, eq=True)
class Curve(_KeyView):
    """A sample of one rule's ROC for a figure: (FPR, TPR) points, FPR ascending, the first at the
    smallest FPR the targets can show (1/n_neg), the last at (1, 1).

    Attributes
    ----------
    fpr, tpr : tuple of float
        The points. ``fpr_kind = "realised"``: the rule's measured FPR at each threshold;
        ``"nominal"``: the α the rule was asked for (the parametric per-record estimate).
    records, models : int
        How many records and models the curve was computed from (all of them, or evenly spaced subsets:
        a figure's resolution, not an estimate the tables use); ``models`` 0: per-record values.
    """

    fpr: tuple[_Rate, ...]
    tpr: tuple[_Rate, ...]
    fpr_kind: Annotated[str, Choice(FPR_KINDS)] = "realised"
    records: Annotated[int, Whole()] = 0
    models: Annotated[int, Whole()] = 0

    def to_dict(self) -> dict[str, Any]:
        return {"fpr": list(self.fpr), "tpr": list(self.tpr), "fpr_kind": self.fpr_kind, "records": self.records,
                "models": self.models}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Curve:
        d = Doc.of(doc)
        found = read_fields(cls, d)
        if len(found["fpr"]) != len(found["tpr"]):
            d.fail("tpr", f"must hold one value per FPR ({len(found['fpr'])})")
        return cls(**found)


@dataclass(frozen=True, eq=True)
class Histogram(_KeyView):
    """Counts of values in bins ``[edges[i], edges[i + 1])`` (the last bin closed): here the per-record
    FPR of the naive threshold at one α, over all records."""

    alpha: Annotated[float, Unit()]
    edges: tuple[Annotated[float, Num(-1, 2)], ...]
    counts: tuple[Annotated[int, Whole()], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "edges": list(self.edges), "counts": list(self.counts)}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Histogram:
        """Bins of per-record FPRs: two or more increasing edges in [-1, 2], one count ≥ 0 per bin."""
        d = Doc.of(doc)
        found = read_fields(cls, d)
        edges, counts = found["edges"], found["counts"]
        if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
            d.fail("edges", "must be two or more increasing numbers")
        if len(counts) != len(edges) - 1:
            d.fail("counts", f"must be a list of {len(edges) - 1} items, got {list(counts)!r}")
        return cls(**found)


@dataclass(frozen=True)
class MiaReport:
    """Result of :func:`~dpaudit.mia.evaluate.evaluate`; ``str()`` prints a table, :meth:`to_dict` exports
    JSON and :meth:`from_dict` reads it back. ``alphas[i]`` maps to ``rows[i]``; ``curves`` (rule →
    :class:`Curve`) and ``fpr_histograms`` (one per α) feed the figures of the HTML report and are None
    when a saved document predates them; ``disparity`` (:class:`~dpaudit.mia.group_results.Disparity`) the
    membership risk by group of a protected column when asked (``evaluate(..., by=...)``), else None.
    ``_repr_html_`` shows the report in a notebook."""

    n_models: Annotated[int, Whole(minimum=1)]
    n_records: Annotated[int, Whole(minimum=1)]
    alphas: Annotated[tuple[Annotated[float, Unit()], ...], NONEMPTY]
    rows: Annotated[tuple[AlphaResult, ...], Key("results")]  # each row holds its α, that of alphas
    options: Annotated[dict[str, Any], _OPTIONS]
    diagnostics: Annotated[dict[str, Any], _DIAGNOSTICS, REQUIRED] = field(default_factory=dict)
    curves: Annotated[Mapping[str, Curve], Keys(RULES)] | None = None
    fpr_histograms: tuple[Histogram, ...] | None = None
    disparity: Disparity | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_models": self.n_models,
            "n_records": self.n_records,
            "options": self.options,
            "alphas": list(self.alphas),
            "results": [{"alpha": a, **row.to_dict()} for a, row in zip(self.alphas, self.rows)],
            "diagnostics": self.diagnostics,
            **({} if self.curves is None else {"curves": {k: c.to_dict() for k, c in self.curves.items()}}),
            **({} if self.fpr_histograms is None else {"fpr_histograms": [h.to_dict() for h in self.fpr_histograms]}),
            **({} if self.disparity is None else {"disparity": self.disparity.to_dict()}),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> MiaReport:
        """Rebuild a report from :meth:`to_dict`'s document (e.g. a saved ``dpaudit mia evaluate --json``):
        one or more α, one result per α (in their order), known rules, and the options and diagnostics
        the reports print, every field checked."""
        d = Doc.of(doc)
        alphas, results = d.many("alphas", Unit().read), d.docs("results")
        if not alphas or len(results) != len(alphas):
            d.fail("results", f"must hold one entry per α of alphas (one or more; {len(alphas)} here)")
        for a, r in zip(alphas, results):
            if r.read("alpha", Unit().read) != a:
                r.fail("alpha", f"is not the α of alphas, {a:g}")
        return cls(**read_fields(cls, d))

    def __str__(self) -> str:
        """The plain-text report (:func:`dpaudit.report.text.render_mia`, through :mod:`dpaudit._views`)."""
        return render_view(self, "text")

    def _repr_html_(self) -> str:
        """The HTML report's sections as a fragment (Jupyter, VS Code):
        :func:`dpaudit.report.html_mia.render_mia_fragment`, through :mod:`dpaudit._views`."""
        return render_view(self, "html")


