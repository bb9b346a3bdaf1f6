"""The privacy accountant: sequential composition, debited before each release.

:class:`Budget` keeps its debits in memory (one process, one run). :meth:`Budget.open` returns a
:class:`~dpaudit.privacy.LedgerBudget` with the same interface whose debits live in a crash-safe
file shared by processes and invocations (``_ledger.py``). The ledger subclasses :class:`Budget`, so
it sits above this module: it names itself as the persistent kind (:attr:`Budget.persistent`) when
imported, which :mod:`dpaudit.privacy` always does, and this module never imports it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from dpaudit._errors import BudgetError, DPAuditError
from dpaudit._validation import positive

if TYPE_CHECKING:
    from dpaudit.privacy._ledger import LedgerBudget

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

    #: The class :meth:`open` returns: :class:`~dpaudit.privacy.LedgerBudget`, set by its module.
    persistent: ClassVar[type[LedgerBudget] | None] = None

    def __init__(self, total_epsilon: float) -> None:
        self.total_epsilon = positive("total_epsilon", total_epsilon)
        self._ledger: list[tuple[str, float]] = []

    @classmethod
    def open(cls, path: str | os.PathLike[str], total_epsilon: float | None = None) -> LedgerBudget:
        """A budget persisted in the ledger file ``path``, shared by processes and invocations.

        ``total_epsilon`` creates the file when it does not exist and must match the total of one
        that does; ``None`` opens an existing ledger with its own total. The result has this class's
        interface (``check``, ``spend``, ``spend_many``, ``spent``, ``remaining``, ``ledger``), and
        every debit is checked and recorded under a file lock. See :class:`~dpaudit.privacy.LedgerBudget`.
        """
        if Budget.persistent is None:  # only when _budget is loaded without its package, which Python never does
            raise DPAuditError("no persistent budget is available: import dpaudit.privacy")
        return Budget.persistent(path, total_epsilon)

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

    def spend_many(self, items: Sequence[tuple[str, float]], *, about: Mapping[str, Any] | None = None) -> None:
        """Debit several releases, given as (label, epsilon), all or none.

        ``about`` says what they were spent on (``data``, ``criteria``): a ledger file records it with
        each entry (:class:`~dpaudit.privacy.LedgerBudget`); an in-memory budget keeps labels only.

        Each is checked against what remains after the ones before it; if one is refused (BudgetError,
        the same message as :meth:`spend`) or malformed, nothing of the batch is debited.

        Examples
        --------
        >>> b = Budget(1.0)
        >>> b.spend_many([("tvd", 0.5), ("tc", 0.75)])
        Traceback (most recent call last):
        ...
        dpaudit._errors.BudgetError: release 'tc' asks for epsilon=0.75 but only 0.5 of the total 1 remains (0.25 short); lower its epsilon or raise the total budget
        >>> b.ledger
        ()
        >>> b.spend_many([("tvd", 0.5), ("tc", 0.5)])
        >>> b.ledger, b.remaining
        ((('tvd', 0.5), ('tc', 0.5)), 0.0)
        """
        self._ledger.extend(plan_debits(self.total_epsilon, [eps for _, eps in self._ledger], items))

    def check(self, epsilon: float, label: str) -> None:
        """Raise BudgetError if ``epsilon`` does not fit in what remains; debit nothing."""
        epsilon = positive("epsilon", epsilon)
        refuse_overspend(self.total_epsilon, self.spent, epsilon, release_label(label))

    def __repr__(self) -> str:
        return f"Budget(total_epsilon={self.total_epsilon:g}, spent={self.spent:g})"


def release_label(label: object) -> str:
    """The name a debit is recorded under: a non-empty string."""
    if not isinstance(label, str) or not label.strip():
        raise DPAuditError(f"a release's label must be a non-empty string (e.g. 'tvd'), got {label!r}")
    return label


def refuse_overspend(total: float, spent: float, epsilon: float, label: str) -> None:
    """Raise BudgetError (the message :meth:`Budget.check` gives) if ``epsilon`` does not fit."""
    remaining = total - spent
    if epsilon > remaining + TOLERANCE * total:
        raise BudgetError(
            f"release {label!r} asks for epsilon={epsilon:g} but only {max(remaining, 0):g} of the "
            f"total {total:g} remains ({epsilon - remaining:g} short); lower its "
            "epsilon or raise the total budget"
        )


def plan_debits(total: float, spent: Sequence[float], items: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """The (label, epsilon) pairs of ``items`` validated, each checked after those before it.

    Raises (debiting nothing — the caller appends only the returned list) DPAuditError for a
    malformed item and BudgetError for the first that does not fit.
    """
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise DPAuditError(f"spend_many takes a list of (label, epsilon) pairs, got {items!r}")
    planned: list[tuple[str, float]] = []
    for index, item in enumerate(items):
        if not (isinstance(item, Sequence) and not isinstance(item, (str, bytes)) and len(item) == 2):
            raise DPAuditError(f"spend_many item {index} must be a (label, epsilon) pair, got {item!r}")
        label, epsilon = item
        planned.append((release_label(label), positive("epsilon", epsilon)))
    running = list(spent)
    for label, epsilon in planned:
        refuse_overspend(total, math.fsum(running), epsilon, label)
        running.append(epsilon)
    return planned
