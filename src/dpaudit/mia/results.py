"""Typed results of a membership-inference evaluation (:func:`dpaudit.mia.evaluate.evaluate`).

:class:`MiaReport` holds one :class:`AlphaResult` per target FPR α, which holds one
:class:`RuleResult` per rule (:data:`dpaudit.mia.evaluate.RULES`) and the per-record FPR spread of
the naive threshold. Fields are read as attributes (``row.rules["pp_t"].tpr``) or, like the JSON
document, by key (``row["pp_t"]["tpr"]``). ``to_dict``/``from_dict`` round-trip, so a saved
``--json`` report can be rendered again (:mod:`dpaudit.report`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RuleResult", "FprSpread", "AlphaResult", "MiaReport"]


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
        for key in ("threshold", "fpr_kind", "t_threshold_fpr_loo", "reason"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> RuleResult:
        def pair(value: Any) -> tuple[float, float] | None:
            return None if value is None else (float(value[0]), float(value[1]))

        return cls(bool(doc["estimable"]), doc.get("tpr"), doc.get("fpr"), doc.get("epsilon_lb"),
                   doc.get("epsilon_point"), pair(doc.get("ci")), pair(doc.get("cp")), doc.get("threshold"),
                   doc.get("fpr_kind"), doc.get("t_threshold_fpr_loo"), doc.get("reason"))


@dataclass(frozen=True, eq=True)
class FprSpread(_KeyView):
    """Per-record FPR under the naive global threshold: its maximum and the share of records above α."""

    max: float
    share_above_alpha: float

    def to_dict(self) -> dict[str, Any]:
        return {"max": self.max, "share_above_alpha": self.share_above_alpha}


@dataclass(frozen=True, eq=True)
class AlphaResult(_KeyView):
    """Every rule at one target FPR α."""

    alpha: float
    rules: Mapping[str, RuleResult]
    naive_per_record_fpr: FprSpread

    def __getitem__(self, key: str) -> Any:
        if key == "naive_per_record_fpr":
            return self.naive_per_record_fpr
        return self.rules[key]

    def to_dict(self) -> dict[str, Any]:
        return {**{name: r.to_dict() for name, r in self.rules.items()},
                "naive_per_record_fpr": self.naive_per_record_fpr.to_dict()}

    @classmethod
    def from_dict(cls, alpha: float, doc: Mapping[str, Any]) -> AlphaResult:
        rules = {k: RuleResult.from_dict(v) for k, v in doc.items() if k not in ("alpha", "naive_per_record_fpr")}
        return cls(float(alpha), rules, FprSpread(**doc["naive_per_record_fpr"]))


@dataclass(frozen=True)
class MiaReport:
    """Result of :func:`~dpaudit.mia.evaluate.evaluate`; ``str()`` prints a table, :meth:`to_dict` exports
    JSON and :meth:`from_dict` reads it back. ``alphas[i]`` maps to ``rows[i]``."""

    n_models: int
    n_records: int
    alphas: tuple[float, ...]
    rows: tuple[AlphaResult, ...]
    options: dict[str, Any]
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_models": self.n_models,
            "n_records": self.n_records,
            "options": self.options,
            "alphas": list(self.alphas),
            "results": [{"alpha": a, **row.to_dict()} for a, row in zip(self.alphas, self.rows)],
            "diagnostics": self.diagnostics,
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> MiaReport:
        """Rebuild a report from :meth:`to_dict`'s document (e.g. a saved ``dpaudit mia evaluate --json``)."""
        rows = tuple(AlphaResult.from_dict(r["alpha"], r) for r in doc["results"])
        return cls(int(doc["n_models"]), int(doc["n_records"]), tuple(float(a) for a in doc["alphas"]), rows,
                   dict(doc["options"]), dict(doc.get("diagnostics", {})))

    def __str__(self) -> str:
        from dpaudit.report.text import render_mia

        return render_mia(self)
