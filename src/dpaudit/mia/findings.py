"""What an MIA evaluation concludes at one α: the headline verdict and the most vulnerable records.

Plain data (:mod:`dpaudit.mia.verdict` computes them): a :class:`Verdict` says, from one rule valid
for these scores, whether there is evidence of leakage, none at this M, or no valid rule at all;
:class:`VulnerableRecords` lists every record's TPR under that rule with its interval, ranked. Both
are fields of :class:`~dpaudit.mia.results.AlphaResult` and round-trip through ``to_dict`` /
``from_dict`` like the rest of the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from dpaudit._document import Doc
from dpaudit._fields import Choice, Num, Rate, Unit, When, Whole, read_fields

__all__ = ["Verdict", "VulnerableRecords", "VERDICT_KINDS", "RULES", "RULE_LABELS"]

#: The rules every report holds, in the order of its tables (evaluation and rendering both read it).
RULES = ("naive", "pp_normal", "pp_t", "pp_rank", "per_record_empirical", "per_record_parametric")

#: The three verdicts: evidence of leakage, no evidence at this M, no valid rule for these scores.
VERDICT_KINDS = ("leakage", "no_evidence", "not_estimable")
#: Labels of the rules in tables, figures and verdicts.
RULE_LABELS = {"naive": "naive concat", "pp_normal": "PP concat N(0,1)", "pp_t": "PP concat t",
               "pp_rank": "PP concat rank", "per_record_empirical": "per-record empirical",
               "per_record_parametric": "per-record param."}
_RULE = Choice(tuple(RULE_LABELS))
_Rates = tuple[Annotated[float, Rate()], ...]


@dataclass(frozen=True)
class Verdict:
    """The headline at one α.

    Attributes
    ----------
    alpha : float
    kind : {"leakage", "no_evidence", "not_estimable"}
        ``leakage``: the rule's ε lower bound (from realised rates, with confidence) is above 0;
        ``no_evidence``: it is 0; ``not_estimable``: no rule valid for these scores gives a value here.
    rule : str or None
        The rule the verdict rests on (``pp_rank`` where estimable, else a Gaussian PP rule whose
        check passed); None when not estimable.
    tpr, fpr, epsilon_lb : float or None
        That rule's TPR, realised FPR and ε lower bound.
    needs_models : int or None
        Not estimable: the M at which the rank rule becomes estimable.
    notes : tuple of str
        Why the Gaussian rules are not the headline (their check failed), when that is so.
    """

    alpha: Annotated[float, Unit()]
    kind: Annotated[str, Choice(VERDICT_KINDS)]
    rule: Annotated[str, _RULE] | None = None
    tpr: Annotated[float, Rate()] | None = None
    fpr: Annotated[float, Rate()] | None = None
    epsilon_lb: Annotated[float, Num(low=0, finite=False)] | None = None
    needs_models: Annotated[int, Whole()] | None = None
    notes: tuple[str, ...] = ()
    #: A verdict with a value rests on a rule and its rates; ``text`` (written beside the fields) says it.
    WHEN: ClassVar[tuple[When, ...]] = (When("kind", ("leakage", "no_evidence"), require=("rule", "tpr", "fpr", "epsilon_lb")),)
    DERIVED: ClassVar[dict[str, tuple[Any, bool]]] = {"text": (str, False)}

    @property
    def text(self) -> str:
        """The verdict line, e.g. ``evidence of leakage: TPR 0.031 at FPR 0.01, ε ≥ 0.26 (PP concat rank)``."""
        if self.kind == "not_estimable":
            return f"not estimable: needs M ≥ {self.needs_models:,}" if self.needs_models else "not estimable"
        rates = f"TPR {self.tpr:.3g} at FPR {self.fpr:.3g}"
        label = RULE_LABELS.get(self.rule or "", self.rule)
        if self.kind == "leakage":
            return f"evidence of leakage: {rates}, ε ≥ {self.epsilon_lb:.3g} ({label})"
        return f"no evidence of leakage at this M: {rates} ({label})"

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "kind": self.kind, "rule": self.rule, "tpr": self.tpr, "fpr": self.fpr,
                "epsilon_lb": self.epsilon_lb, "needs_models": self.needs_models, "notes": list(self.notes),
                "text": self.text}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Verdict:
        """A verdict: a kind, and a rule with its rates unless it is ``not_estimable`` (:attr:`WHEN`)."""
        return cls(**read_fields(cls, doc))


@dataclass(frozen=True)
class VulnerableRecords:
    """Every record's TPR at one α under the verdict's rule, most vulnerable first.

    Attributes
    ----------
    alpha : float
    rule : str
        The verdict's rule, or without one the PP rule of the report's threshold kind. ``pp_rank``:
        each record's conformal test (its mean call probability over its IN targets); ``pp_t`` /
        ``pp_normal``: the share of its IN targets the PP rule calls.
    level : float
        Level of the per-record intervals.
    record : tuple of int
        Pool index of each record (the score matrix's column), ranked: the records that stand out
        first, each group by TPR, then by the interval's lower end, descending.
    record_id : tuple of int or None
        The records' own identifiers when the score set carries them (a ``mia train`` run: the data
        file's row numbers), in the same order.
    tpr, ci_low, ci_high, fpr : tuple of float
        Per record: TPR, its Clopper–Pearson interval over its IN targets (the called share rounded down
        for the lower end and up for the upper end), and its realised FPR over its OUT targets.
    n_in : tuple of int
        IN targets per record.
    p_value, q_value : tuple of float
        Per record: the one-sided rank test of "its IN scores are larger than its OUT scores" and its
        Benjamini–Hochberg adjustment over the pool (:mod:`dpaudit.mia.record_tests`).
    fdr : float
        A record *stands out* when its q-value is at most ``fdr``.
    """

    alpha: Annotated[float, Unit()]
    rule: Annotated[str, _RULE]
    level: Annotated[float, Unit()]
    record: tuple[Annotated[int, Whole()], ...]
    tpr: _Rates
    ci_low: _Rates
    ci_high: _Rates
    fpr: _Rates
    n_in: tuple[Annotated[int, Whole()], ...]
    p_value: _Rates
    q_value: _Rates
    fdr: Annotated[float, Unit()]
    record_id: tuple[Annotated[int, Whole(minimum=None)], ...] | None = field(default=None)

    @property
    def standing_out(self) -> int:
        """How many records stand out (q-value ≤ ``fdr``)."""
        return sum(q <= self.fdr for q in self.q_value)

    def top(self, k: int = 10) -> list[dict[str, Any]]:
        """The ``k`` most vulnerable records as rows (rank, record, id, TPR, interval, FPR, IN targets,
        p- and q-value, whether it stands out)."""
        rows = []
        for i in range(min(k, len(self.record))):
            rows.append({"rank": i + 1, "record": self.record[i],
                         "record_id": None if self.record_id is None else self.record_id[i], "tpr": self.tpr[i],
                         "ci": (self.ci_low[i], self.ci_high[i]), "fpr": self.fpr[i], "n_in": self.n_in[i],
                         "p_value": self.p_value[i], "q_value": self.q_value[i],
                         "stands_out": self.q_value[i] <= self.fdr})
        return rows

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"alpha": self.alpha, "rule": self.rule, "level": self.level,
                               "record": list(self.record), "tpr": list(self.tpr), "ci_low": list(self.ci_low),
                               "ci_high": list(self.ci_high), "fpr": list(self.fpr), "n_in": list(self.n_in),
                               "p_value": list(self.p_value), "q_value": list(self.q_value), "fdr": self.fdr}
        if self.record_id is not None:
            out["record_id"] = list(self.record_id)
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> VulnerableRecords:
        """Equal-length columns, rates in [0, 1], each interval around its TPR."""
        d = Doc.of(doc)
        found = read_fields(cls, d)
        n = len(found["record"])
        for key in ("tpr", "ci_low", "ci_high", "fpr", "n_in", "p_value", "q_value", "record_id"):
            if found[key] is not None and len(found[key]) != n:
                d.fail(key, f"must be a list of {n} items, got {list(found[key])!r}")
        if any(lo > t or t > hi for lo, t, hi in zip(found["ci_low"], found["tpr"], found["ci_high"])):
            d.fail("ci_low", "and ci_high must enclose each record's tpr")
        return cls(**found)
