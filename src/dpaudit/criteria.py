"""Fairness criteria φ = (P, O, A): "P ⊥ O | A" (unfairness spec §1).

A database satisfies φ when the protected attributes P are independent of the outcome attributes O
given the admissible attributes A, in its empirical distribution. Each side may hold several columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dpaudit._errors import CriterionError

__all__ = ["Criterion", "parse_criteria"]

_INDEPENDENT = ("⊥", "_|_", "⫫")


def _names(side: str, what: str, text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in side.split(","))
    if not side.strip():
        raise CriterionError(f"criterion {text!r} has no {what} attribute; write e.g. 'sex ⊥ income'")
    if any(not n for n in names):
        raise CriterionError(f"criterion {text!r}: empty column name in the {what} attributes")
    return names


@dataclass(frozen=True)
class Criterion:
    """One fairness criterion ``protected ⊥ outcome | admissible``.

    Parameters
    ----------
    protected, outcome : tuple of str
        Column names; non-empty.
    admissible : tuple of str, default ()
        Column names to condition on; may be empty.

    Examples
    --------
    >>> c = Criterion.parse("sex ⊥ income | education-num")
    >>> c.protected, c.outcome, c.admissible
    (('sex',), ('income',), ('education-num',))
    >>> str(Criterion.parse("sex,race _|_ income"))
    'sex, race ⊥ income'
    """

    protected: tuple[str, ...]
    outcome: tuple[str, ...]
    admissible: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for attr in ("protected", "outcome", "admissible"):
            value = getattr(self, attr)
            if isinstance(value, str):
                value = (value,)
            value = tuple(value)
            if any(not isinstance(v, str) or not v.strip() for v in value):
                raise CriterionError(f"{attr} attributes must be non-empty column names, got {value!r}")
            if len(set(value)) != len(value):
                raise CriterionError(f"{attr} attributes repeat a column: {value!r}")
            object.__setattr__(self, attr, value)
        if not self.protected:
            raise CriterionError("a criterion needs at least one protected attribute")
        if not self.outcome:
            raise CriterionError("a criterion needs at least one outcome attribute")
        sides = {"protected": self.protected, "outcome": self.outcome, "admissible": self.admissible}
        names = list(sides)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                shared = set(sides[a]) & set(sides[b])
                if shared:
                    raise CriterionError(
                        f"criterion {self}: column(s) {', '.join(sorted(map(repr, shared)))} appear in "
                        f"both the {a} and the {b} attributes; each column may be on one side only"
                    )

    @classmethod
    def parse(cls, text: str) -> Criterion:
        """Parse ``"P ⊥ O"`` or ``"P ⊥ O | A"``; ``_|_`` is accepted for ⊥, commas separate columns."""
        if not isinstance(text, str):
            raise CriterionError(f"a criterion must be a string like 'sex ⊥ income', got {text!r}")
        normal = text
        for symbol in _INDEPENDENT:
            normal = normal.replace(symbol, "\0")
        if normal.count("\0") != 1:
            raise CriterionError(
                f"criterion {text!r} must contain exactly one '⊥' (or '_|_'), "
                "as in 'sex ⊥ income | education-num'"
            )
        left, right = normal.split("\0")
        if "|" in left:
            raise CriterionError(
                f"criterion {text!r} has '|' before '⊥'; admissible columns come last: 'P ⊥ O | A'"
            )
        outcome_part, _, admissible_part = right.partition("|")
        if "|" in admissible_part:
            raise CriterionError(f"criterion {text!r} has more than one '|'; list admissible columns with commas")
        protected = _names(left, "protected", text)
        outcome = _names(outcome_part, "outcome", text)
        admissible = _names(admissible_part, "admissible", text) if "|" in right else ()
        return cls(protected, outcome, admissible)

    @property
    def columns(self) -> tuple[str, ...]:
        """All columns, in the order admissible, protected, outcome (the count-table axes)."""
        return self.admissible + self.protected + self.outcome

    def __str__(self) -> str:
        text = f"{', '.join(self.protected)} ⊥ {', '.join(self.outcome)}"
        return f"{text} | {', '.join(self.admissible)}" if self.admissible else text


CriterionLike = Criterion | str


def parse_criteria(criteria: CriterionLike | Iterable[CriterionLike]) -> tuple[Criterion, ...]:
    """Normalise one criterion or a list of criteria (objects or strings) to a tuple of Criterion.

    Examples
    --------
    >>> [str(c) for c in parse_criteria(["sex ⊥ income", "race ⊥ income | age"])]
    ['sex ⊥ income', 'race ⊥ income | age']

    A criterion given twice (the same columns on each side, in any order) is refused: its value would
    be summed twice into every measure.

    >>> parse_criteria(["sex ⊥ income", "race ⊥ income", "sex ⊥ income"])
    Traceback (most recent call last):
    ...
    dpaudit._errors.CriterionError: criterion 'sex ⊥ income' is given twice (criteria 1 and 3): each would be summed into the measures once more; give it once
    """
    if isinstance(criteria, (str, Criterion)):
        criteria = [criteria]
    elif not isinstance(criteria, Iterable):
        raise CriterionError(f"expected criteria as a string, a Criterion or a list of them, got {criteria!r}")
    out = []
    for item in criteria:
        if isinstance(item, Criterion):
            out.append(item)
        elif isinstance(item, str):
            out.append(Criterion.parse(item))
        else:
            raise CriterionError(f"expected a Criterion or a string like 'sex ⊥ income', got {item!r}")
    if not out:
        raise CriterionError("no criteria given; pass at least one, e.g. 'sex ⊥ income'")
    first: dict[tuple[frozenset[str], ...], int] = {}
    for i, crit in enumerate(out, 1):
        key = (frozenset(crit.protected), frozenset(crit.outcome), frozenset(crit.admissible))
        if key in first:
            again = "" if str(out[first[key] - 1]) == str(crit) else f" (as {str(out[first[key] - 1])!r})"
            raise CriterionError(f"criterion {str(crit)!r} is given twice{again} (criteria {first[key]} and {i}): each "
                                 "would be summed into the measures once more; give it once")
        first[key] = i
    return tuple(out)


def check_columns(criteria: Sequence[Criterion], available: Iterable[str]) -> None:
    """Raise CriterionError naming every column a criterion uses that the data do not have."""
    have = set(available)
    for crit in criteria:
        absent = [c for c in crit.columns if c not in have]
        if absent:
            raise CriterionError(
                f"criterion '{crit}' uses unknown column(s) {', '.join(map(repr, absent))}; "
                f"the data have: {', '.join(sorted(have))}"
            )
