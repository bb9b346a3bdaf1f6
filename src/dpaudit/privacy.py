"""Private release: the Laplace mechanism from OpenDP and a budget accountant (spec §3).

Neighbouring relation: **replace one tuple; n is public** (the relation the paper's sensitivities
assume). A release of a value with replace-one sensitivity Δ at privacy loss ε adds Laplace noise of
scale ``b = Δ/ε``; that is ε-DP (Dwork et al. 2006). Noise comes from OpenDP's vetted sampler
(``make_laplace``), never from ``numpy.random.laplace``, which floating-point attacks break (Mironov,
CCS 2012).

Every release reports the interval ``value ± b·ln 20``, which holds the exact value with probability
0.95 because ``P(|Lap(b)| > t) = exp(−t/b)``.

Seeding (``seed=...``) exists **only for tests and reproducible examples**: noise from a known seed
can be subtracted, so a seeded release is **not** differentially private; it is marked
``dp=False`` with that reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpaudit._errors import BudgetError, DPAuditError

__all__ = ["Release", "Budget", "laplace_release", "exact_release", "INTERVAL_Z"]

#: Half-width of the 95% noise interval in units of the Laplace scale: ln 20.
INTERVAL_Z = math.log(20.0)
_TOLERANCE = 1e-9  # relative slack for budgets split into float parts that sum to the total


@dataclass(frozen=True)
class Release:
    """One released number and everything needed to interpret it.

    Attributes
    ----------
    value : float
        The released value: noisy in a DP release, exact in curator mode.
    epsilon : float or None
        Privacy loss spent (None: exact, nothing released privately).
    sensitivity : float
        Replace-one sensitivity of the exact value.
    scale : float
        Laplace scale ``sensitivity / epsilon`` (0 for exact values).
    interval : (float, float)
        Holds the exact value with probability 0.95 given the noise.
    dp : bool
        True only for an unseeded OpenDP release with a declared schema.
    mechanism : str
    reasons : tuple of str
        Why the release is not DP, when it is not.
    """

    value: float
    epsilon: float | None
    sensitivity: float
    scale: float
    interval: tuple[float, float]
    dp: bool
    mechanism: str
    reasons: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {
            "value": self.value,
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "scale": self.scale,
            "interval": list(self.interval),
            "dp": self.dp,
            "mechanism": self.mechanism,
            "reasons": list(self.reasons),
        }


def _check_positive(name: str, value: float) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise DPAuditError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise DPAuditError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _opendp_laplace(scale: float):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=scale)


def laplace_release(
    value: float,
    *,
    sensitivity: float,
    epsilon: float,
    seed: int | None = None,
    reasons: tuple[str, ...] = (),
) -> Release:
    """Release ``value`` with Laplace noise of scale ``sensitivity / epsilon``.

    Parameters
    ----------
    value : float
        Exact value (never returned).
    sensitivity : float
        Replace-one sensitivity of ``value``.
    epsilon : float
        Privacy loss of this release; debit it from a :class:`Budget` first.
    seed : int, optional
        Reproducible noise for tests. **Voids the DP guarantee**: the release says ``dp=False``.
    reasons : tuple of str
        Extra reasons the release is not DP (e.g. a data-derived schema).

    Examples
    --------
    >>> r = laplace_release(0.3, sensitivity=0.01, epsilon=1.0, seed=0)
    >>> r.scale, r.dp
    (0.01, False)
    """
    epsilon = _check_positive("epsilon", epsilon)
    sensitivity = _check_positive("sensitivity", sensitivity)
    scale = sensitivity / epsilon
    if seed is None:
        meas = _opendp_laplace(scale)
        if meas.map(sensitivity) > epsilon * (1 + _TOLERANCE):  # pragma: no cover - OpenDP invariant
            raise DPAuditError("OpenDP's privacy map exceeds the requested epsilon; refusing to release")
        noisy = float(meas(float(value)))
        mechanism = "Laplace (OpenDP make_laplace)"
    else:
        noisy = float(value + np.random.default_rng(seed).laplace(0.0, scale))
        mechanism = "Laplace (seeded numpy, NOT private)"
        reasons = reasons + ("seeded noise is reproducible and can be subtracted: not differentially private",)
    half = scale * INTERVAL_Z
    return Release(
        value=noisy,
        epsilon=epsilon,
        sensitivity=sensitivity,
        scale=scale,
        interval=(noisy - half, noisy + half),
        dp=not reasons,
        mechanism=mechanism,
        reasons=tuple(reasons),
    )


def exact_release(value: float, *, sensitivity: float) -> Release:
    """The exact value for the data curator: no noise, nothing private about it."""
    return Release(
        value=float(value),
        epsilon=None,
        sensitivity=float(sensitivity),
        scale=0.0,
        interval=(float(value), float(value)),
        dp=False,
        mechanism="none (exact value, curator-only)",
        reasons=("exact value without noise (--exact / epsilon=None): for the data curator only",),
    )


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
        self.total_epsilon = _check_positive("total_epsilon", total_epsilon)
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
        epsilon = _check_positive("epsilon", epsilon)
        remaining = self.total_epsilon - self.spent
        if epsilon > remaining + _TOLERANCE * self.total_epsilon:
            raise BudgetError(
                f"release {label!r} asks for epsilon={epsilon:g} but only {max(remaining, 0):g} of the "
                f"total {self.total_epsilon:g} remains ({epsilon - remaining:g} short); lower its "
                "epsilon or raise the total budget"
            )

    def __repr__(self) -> str:
        return f"Budget(total_epsilon={self.total_epsilon:g}, spent={self.spent:g})"
