"""The privacy accountant: sequential composition, debited before each release."""

from __future__ import annotations

import math

from dpaudit._errors import BudgetError
from dpaudit._validation import positive

__all__ = ["Budget", "TOLERANCE"]

#: Relative slack for budgets split into float parts that sum to the total.
TOLERANCE = 1e-9


class Budget:
    """A total privacy budget ε that debits each release before it happens.

    Sequential composition: the losses of releases on the same data add up. :meth:`spend` raises
    :class:`BudgetError` (saying requested, remaining and the difference) instead of overspending.

    Examples
    --------
    >>> b = Budget(1.0)
    >>> b.spend(0.6, "tvd")
    >>> b.remaining
    0.4
    >>> b.spend(0.5, "tc")
    Traceback (most recent call last):
    ...
    dpaudit._errors.BudgetError: release 'tc' asks for epsilon=0.5 but only 0.4 of the total 1 remains (0.1 short); lower its epsilon or raise the total budget
    """

    def __init__(self, total_epsilon: float) -> None:
        self.total_epsilon = positive("total_epsilon", total_epsilon)
        self._ledger: list[tuple[str, float]] = []

    @property
    def spent(self) -> float:
        return math.fsum(eps for _, eps in self._ledger)

    @property
    def remaining(self) -> float:
        return round(max(self.total_epsilon - self.spent, 0.0), 12)

    @property
    def ledger(self) -> tuple[tuple[str, float], ...]:
        """Every debit so far, as (label, epsilon), in order."""
        return tuple(self._ledger)

    def spend(self, epsilon: float, label: str) -> None:
        """Debit ``epsilon`` for the release called ``label``; BudgetError if it does not fit."""
        self.check(epsilon, label)
        self._ledger.append((label, float(epsilon)))

    def check(self, epsilon: float, label: str) -> None:
        """Raise BudgetError if ``epsilon`` does not fit in what remains; debit nothing."""
        epsilon = positive("epsilon", epsilon)
        remaining = self.total_epsilon - self.spent
        if epsilon > remaining + TOLERANCE * self.total_epsilon:
            raise BudgetError(
                f"release {label!r} asks for epsilon={epsilon:g} but only {max(remaining, 0):g} of the "
                f"total {self.total_epsilon:g} remains ({epsilon - remaining:g} short); lower its "
                "epsilon or raise the total budget"
            )

    def __repr__(self) -> str:
        return f"Budget(total_epsilon={self.total_epsilon:g}, spent={self.spent:g})"
