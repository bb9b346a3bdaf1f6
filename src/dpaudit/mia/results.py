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
from typing import Any

from dpaudit._document import Doc, choice, flag, number, obj, rate, text, unit, whole
from dpaudit._views import render_view
from dpaudit.mia.findings import RULES, Verdict, VulnerableRecords

__all__ = ["RuleResult", "FprSpread", "AlphaResult", "Curve", "Histogram", "MiaReport"]


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
    tpr: float | None
    fpr: float | None
    epsilon_lb: float | None = None
    epsilon_point: float | None = None
    ci: tuple[float, float] | None = None
    cp: tuple[float, float] | None = None
    threshold: float | None = None
    fpr_kind: str | None = None
    t_threshold_fpr_loo: float | None = None
    reason: str | None = None
    valid: bool | None = None
    warning: str | None = None

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
        """An estimable rule has a TPR and an FPR; one that is not has neither, and a reason."""
        d = Doc.of(doc)
        estimable = d.read("estimable", flag)
        tpr, fpr = (d.read(key, rate, optional=not estimable) for key in ("tpr", "fpr"))
        if not estimable and (tpr, fpr) != (None, None):
            d.fail("tpr", "and fpr must be null for a rule that is not estimable")
        return cls(estimable, tpr, fpr, d.read("epsilon_lb", number, optional=True, low=0, finite=False),
                   d.read("epsilon_point", number, optional=True, finite=False, nan=True),
                   d.pair("ci", optional=True, low=0, high=1), d.pair("cp", optional=True, low=0, high=1),
                   d.read("threshold", number, optional=True, finite=False),
                   d.read("fpr_kind", choice, optional=True, choices=FPR_KINDS),
                   d.read("t_threshold_fpr_loo", rate, optional=True), d.read("reason", text, optional=estimable),
                   d.read("valid", flag, optional=True), d.read("warning", text, optional=True))


@dataclass(frozen=True, eq=True)
class FprSpread(_KeyView):
    """Per-record FPR under the naive global threshold: its maximum and the share of records above α."""

    max: float
    share_above_alpha: float

    def to_dict(self) -> dict[str, Any]:
        return {"max": self.max, "share_above_alpha": self.share_above_alpha}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> FprSpread:
        d = Doc.of(doc)
        return cls(d.read("max", rate), d.read("share_above_alpha", rate))


@dataclass(frozen=True, eq=True)
class AlphaResult(_KeyView):
    """Every rule at one target FPR α, the headline ``verdict`` and the ranked ``vulnerable`` records
    (both None in a document saved before they existed)."""

    alpha: float
    rules: Mapping[str, RuleResult]
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
    def from_dict(cls, alpha: float, doc: Mapping[str, Any]) -> AlphaResult:
        """The rules at ``alpha``: every key but ``alpha`` and the row's own fields names a known rule."""
        d = Doc.of(doc)
        rules = {k: RuleResult.from_dict(d.doc(_rule(d, k))) for k in d if k not in ("alpha", *_ROW_FIELDS)}
        verdict, vulnerable = d.doc("verdict", optional=True), d.doc("vulnerable", optional=True)
        return cls(float(alpha), rules, FprSpread.from_dict(d.doc("naive_per_record_fpr")),
                   None if verdict is None else Verdict.from_dict(verdict),
                   None if vulnerable is None else VulnerableRecords.from_dict(vulnerable))


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

    fpr: tuple[float, ...]
    tpr: tuple[float, ...]
    fpr_kind: str = "realised"
    records: int = 0
    models: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"fpr": list(self.fpr), "tpr": list(self.tpr), "fpr_kind": self.fpr_kind, "records": self.records,
                "models": self.models}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Curve:
        d = Doc.of(doc)
        fpr, tpr = d.many("fpr", rate), d.many("tpr", rate)
        if len(fpr) != len(tpr):
            d.fail("tpr", f"must hold one value per FPR ({len(fpr)})")
        return cls(fpr, tpr, d.read("fpr_kind", choice, optional=True, choices=FPR_KINDS) or "realised",
                   d.read("records", whole, optional=True) or 0, d.read("models", whole, optional=True) or 0)


@dataclass(frozen=True, eq=True)
class Histogram(_KeyView):
    """Counts of values in bins ``[edges[i], edges[i + 1])`` (the last bin closed): here the per-record
    FPR of the naive threshold at one α, over all records."""

    alpha: float
    edges: tuple[float, ...]
    counts: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "edges": list(self.edges), "counts": list(self.counts)}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Histogram:
        """Bins of per-record FPRs: two or more increasing edges in [-1, 2], one count ≥ 0 per bin."""
        d = Doc.of(doc)
        edges = d.many("edges", number, low=-1, high=2)
        if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
            d.fail("edges", "must be two or more increasing numbers")
        return cls(d.read("alpha", unit), edges, d.many("counts", whole, length=len(edges) - 1))


@dataclass(frozen=True)
class MiaReport:
    """Result of :func:`~dpaudit.mia.evaluate.evaluate`; ``str()`` prints a table, :meth:`to_dict` exports
    JSON and :meth:`from_dict` reads it back. ``alphas[i]`` maps to ``rows[i]``; ``curves`` (rule →
    :class:`Curve`) and ``fpr_histograms`` (one per α) feed the figures of the HTML report and are None
    when a saved document predates them. ``_repr_html_`` shows the report in a notebook."""

    n_models: int
    n_records: int
    alphas: tuple[float, ...]
    rows: tuple[AlphaResult, ...]
    options: dict[str, Any]
    diagnostics: dict[str, Any] = field(default_factory=dict)
    curves: Mapping[str, Curve] | None = None
    fpr_histograms: tuple[Histogram, ...] | None = None

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
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> MiaReport:
        """Rebuild a report from :meth:`to_dict`'s document (e.g. a saved ``dpaudit mia evaluate --json``):
        one or more α, one result per α (in their order), known rules, and the options and diagnostics
        the reports print, every field checked."""
        d = Doc.of(doc)
        alphas, results = d.many("alphas", unit), d.docs("results")
        if not alphas or len(results) != len(alphas):
            d.fail("results", f"must hold one entry per α of alphas (one or more; {len(alphas)} here)")
        for a, r in zip(alphas, results):
            if r.read("alpha", unit) != a:
                r.fail("alpha", f"is not the α of alphas, {a:g}")
        curves = d.doc("curves", optional=True)
        diagnostics = d.doc("diagnostics")
        diagnostics.read("share_non_normal", rate)
        diagnostics.read("min_n_out", whole, optional=True, minimum=None)
        diagnostics.read("auc_naive", rate, optional=True)
        return cls(d.read("n_models", whole, minimum=1), d.read("n_records", whole, minimum=1), alphas,
                   tuple(AlphaResult.from_dict(a, r) for a, r in zip(alphas, results)), _options(d.doc("options")),
                   dict(diagnostics),
                   None if curves is None else {k: Curve.from_dict(curves.doc(_rule(curves, k))) for k in curves},
                   d.objects("fpr_histograms", Histogram, optional=True))

    def __str__(self) -> str:
        """The plain-text report (:func:`dpaudit.report.text.render_mia`, through :mod:`dpaudit._views`)."""
        return render_view(self, "text")

    def _repr_html_(self) -> str:
        """The HTML report's sections as a fragment (Jupyter, VS Code):
        :func:`dpaudit.report.html_mia.render_mia_fragment`, through :mod:`dpaudit._views`."""
        return render_view(self, "html")


#: How a rule's FPR was obtained: measured on the targets, or the α its model promises.
FPR_KINDS = ("realised", "nominal")


def _rule(d: Doc, key: str) -> str:
    """``key`` if it names a rule of :data:`dpaudit.mia.findings.RULES`, else refused at ``d``'s path."""
    if key not in RULES:
        d.fail(key, f"is not a rule: the rules are {', '.join(RULES)}")
    return key


_NULLABLE = frozenset({"seed", "train_size", "pool_size", "fpc_train_size"})


def _options(o: Doc) -> dict[str, Any]:
    """A report's options, checked where the reports read them: the level, FPC and threshold kind always,
    the others when present (null only for the sizes and the seed, which a run may lack; the FPC's
    training-set size is needed when the FPC is on and its source is named)."""
    from dpaudit.mia.calibrate import SIGNS, THRESHOLD_KINDS

    o.read("level", unit)
    o.read("threshold", choice, choices=THRESHOLD_KINDS)
    sized = o.read("fpc", flag) and "fpc_train_size_from" in o
    o.read("fpc_train_size", number, optional=not sized, low=0)
    checks: dict[str, tuple[Any, dict[str, Any]]] = {
        "attack": (text, {}), "attack_options": (obj, {}), "sign": (choice, {"choices": SIGNS}), "strict": (flag, {}),
        "location": (text, {}), "variance": (text, {}), "n_boot": (whole, {}), "seed": (whole, {"maximum": None}),
        "delta": (number, {"low": 0, "high": 1, "high_open": True}), "train_size": (number, {"low": 0}),
        "pool_size": (number, {"low": 0}), "fpc_train_size_from": (text, {}), "scores": (obj, {})}
    for key, (check, options) in checks.items():
        if key in o:
            o.read(key, check, optional=key in _NULLABLE, **options)
    o.many("n_in", whole, optional=True, length=2)
    return dict(o)
