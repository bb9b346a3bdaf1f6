"""The result of a DP-claim audit (:func:`dpaudit.mia.claim.audit.audit_dp`): plain data, rendered elsewhere.

:class:`DPClaimAudit` holds the claim (ε, δ), what was trained (the learner, the data, the m
canaries, M models, the seeds), the ε lower bound of each method (:class:`~dpaudit.mia.dp_audit.DPAuditBound`),
the verdict (:class:`~dpaudit.mia.dp_audit_multi.AuditVerdict`) and, when asked for, the same bounds of
the learner's non-private counterpart. ``str(result)`` is the text report, ``_repr_html_`` the HTML
one, :meth:`DPClaimAudit.to_dict` the JSON document (``docs/schema/dpaudit-dp-claim-1.json``); the
renderers live in :mod:`dpaudit.report` and are found through :mod:`dpaudit._views`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dpaudit._views import register_view, render_view
from dpaudit.mia.dp_audit import DPAuditBound
from dpaudit.mia.dp_audit_multi import AuditVerdict

__all__ = ["DPClaimAudit", "KIND"]

#: The document kind (``docs/schema/dpaudit-dp-claim-<version>.json``).
KIND = "dp-claim"


#: Bounds reported beside the verdict but not in it. The f-DP bound rejects "as private as the Gaussian
#: mechanism that is exactly (ε, δ)-DP", not "(ε, δ)-DP": a correct ε-DP learner that is not Gaussian-shaped
#: (objective perturbation, Laplace) can exceed it legitimately (dpaudit.mia.dp_audit_fdp), and DP-SGD's
#: claim comes from an RDP accountant, not a GDP one. The verdict rests on the bounds valid for every
#: (ε, δ)-DP mechanism: one-run (Steinke et al.) and multi-run.
NOT_IN_VERDICT = ("one-run f-DP",)


@dataclass(frozen=True)
class DPClaimAudit:
    """A DP-claim audit: the ε lower bounds of canaries trained into a learner at a claimed (ε, δ), and the verdict.

    Attributes
    ----------
    claimed_epsilon, delta : float
        The claim audited: the learner is (ε, δ)-DP.
    learner, learner_description : str
        The learner's name (a built-in or ``pkg.mod:factory``) and one line on what it is.
    private : bool
        Whether the learner claims DP (False for a non-private learner audited as if it did).
    data : str
        The data's name (a registered dataset, a file name, or "DataFrame").
    n_records, n_features : int
        Records of the data (canaries' source rows included) and columns of the unit-ball feature space.
    canaries, canary_description : str
        The canaries' kind (``mislabelled``, ``ood``, ``vulnerable``) and how they were made.
    m : int
        Number of canaries, each included in each model's training set with probability ½.
    models : int
        M: models trained, each with its own inclusion draw (1: the one-run audit only).
    level : float
        Confidence of the verdict; each of the k bounds it combines is at 1 − (1 − level)/k.
    seed : int
        The seed every draw and fit derives from (a re-run with it is bit-identical).
    bounds : dict of str to DPAuditBound
        The ε lower bound of each method (``one-run``, ``one-run f-DP``, ``multi-run``).
    verdict : AuditVerdict
        "claim consistent" / "claim violated" from the largest bound.
    included : tuple of int
        Canaries included in each model's training set.
    multi_run_canary : int or None
        The canary whose multi-run bound is reported (chosen on half of the models, bounded on the
        other half), None without a multi-run bound.
    base_rows : int or None
        Records of the data in every training set (the base set).
    contrast_learner : str or None
        The non-private counterpart trained on the same design, if any.
    contrast_bounds : dict of str to DPAuditBound or None
        Its bounds, at the same levels.
    versions : dict of str to str
        Python and library versions of the run.
    """

    claimed_epsilon: float
    delta: float
    learner: str
    learner_description: str
    private: bool
    data: str
    n_records: int
    n_features: int
    canaries: str
    canary_description: str
    m: int
    models: int
    level: float
    seed: int
    bounds: dict[str, DPAuditBound]
    verdict: AuditVerdict
    included: tuple[int, ...]
    multi_run_canary: int | None = None
    base_rows: int | None = None
    contrast_learner: str | None = None
    contrast_bounds: dict[str, DPAuditBound] | None = None
    versions: dict[str, str] = field(default_factory=dict)

    def headline(self) -> str:
        """The answer in one line: "claim consistent: the strongest bound ε ≥ 0.41 (one-run f-DP, 95 %) ≤ claimed ε = 1"
        or "claim violated: ε ≥ 7.9 > claimed ε = 1 (one-run, 95 %)"."""
        v = self.verdict
        where = f"({v.method}, {v.confidence:.0%})"
        if v.violated:
            return f"claim violated: ε ≥ {v.epsilon:.3g} > claimed ε = {v.claimed_epsilon:g} {where}"
        line = f"claim consistent: the strongest bound ε ≥ {v.epsilon:.3g} {where} ≤ claimed ε = {v.claimed_epsilon:g}"
        if self.blind:
            top = max(b.epsilon for n, b in (self.contrast_bounds or {}).items() if n not in NOT_IN_VERDICT)
            line += (f"; but this design cannot tell: the non-private {self.contrast_learner} scores only ε ≥ {top:.3g} "
                     "here too (try --canaries orthogonal, fewer --base-rows or more canaries)")
        return line

    @property
    def blind(self) -> bool:
        """True when a non-private contrast was trained and none of its bounds exceeds the claim: the audit could
        not have caught a violation of this size, so "consistent" is no evidence of privacy."""
        if not self.contrast_bounds:
            return False
        return max(b.epsilon for n, b in self.contrast_bounds.items() if n not in NOT_IN_VERDICT) <= self.claimed_epsilon

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (``docs/schema/dpaudit-dp-claim-1.json``)."""
        out: dict[str, Any] = {}
        for key in self.__dataclass_fields__:
            value = getattr(self, key)
            if key in ("bounds", "contrast_bounds") and value is not None:
                value = {name: b.to_dict() for name, b in value.items()}
            elif key == "verdict":
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, dict):
                value = dict(value)
            out[key] = value
        return out

    def __str__(self) -> str:
        return render_view(self, "text")

    def _repr_html_(self) -> str:
        return render_view(self, "html")


def _renderer(module: str, name: str) -> Any:
    """``module.name``, imported when an audit is first shown (so importing this module loads no renderer)."""

    def render(result: DPClaimAudit) -> str:
        import importlib

        text: str = getattr(importlib.import_module(module), name)(result)
        return text

    render.__name__ = render.__qualname__ = name
    return render


# The views live in dpaudit.report (above this layer): registered by module name, imported on first use.
register_view(DPClaimAudit, "text", _renderer("dpaudit.report.text_claim", "render_claim"))
register_view(DPClaimAudit, "html", _renderer("dpaudit.report.html_claim", "render_claim_fragment"))
