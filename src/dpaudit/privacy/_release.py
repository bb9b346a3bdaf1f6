"""What a released number carries: :class:`Release`, and the curator's :func:`exact_release`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from dpaudit._fields import Num, Pair, read_fields

__all__ = ["Release", "exact_release"]


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
    epsilon: Annotated[float, Num(low=0, low_open=True)] | None
    sensitivity: Annotated[float, Num(low=0)]
    scale: Annotated[float, Num(low=0)]
    interval: Annotated[tuple[float, float], Pair()]
    dp: bool
    mechanism: str
    reasons: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
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

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Release:
        """The inverse of :meth:`to_dict`, every field checked (:func:`dpaudit._fields.read_fields`)."""
        return cls(**read_fields(cls, doc))


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
        reasons=("exact value without noise (--exact / exact=True): for the data curator only",),
    )
