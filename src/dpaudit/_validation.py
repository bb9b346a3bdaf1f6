"""Argument checks shared by every module: one function per kind of value, one message per kind.

Each check returns the value in its canonical type or raises :class:`~dpaudit.DPAuditError` (or the
subclass passed as ``error``) with a message built from the templates below, which tests import, so
a message is written once. Booleans are never accepted as numbers.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError

__all__ = ["WHOLE", "NUMBER", "CHOICE", "UNIT", "POSITIVE", "SEED", "whole_number", "number", "positive", "unit_interval", "one_of",
           "seed_value"]

#: ``{name} must be an integer{bounds}, got {value!r}``
WHOLE = "{name} must be an integer{bounds}, got {value!r}"
#: ``{name} must be a finite number{bounds}, got {value!r}``
NUMBER = "{name} must be a finite number{bounds}, got {value!r}"
#: ``{name} must be one of {choices}, got {value!r}``
CHOICE = "{name} must be one of {choices}, got {value!r}"
#: ``{name} must be a number strictly between 0 and 1{hint}, got {value!r}``
UNIT = "{name} must be a number strictly between 0 and 1{hint}, got {value!r}"
#: ``{name} must be a non-negative integer or None, got {value!r}``
SEED = "{name} must be a non-negative integer or None, got {value!r}"
#: ``{name} must be a positive finite number, got {value!r}``
POSITIVE = "{name} must be a positive finite number, got {value!r}"


def _bounds(low: float | None, high: float | None, low_open: bool = False, high_open: bool = False) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    return (" " + " and ".join(parts)) if parts else ""


def whole_number(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None,
                 error: type[DPAuditError] = DPAuditError) -> int:
    """``value`` as an int (numpy integers included) within [minimum, maximum].

    Examples
    --------
    >>> whole_number("k", 3, minimum=1)
    3
    >>> whole_number("k", 0, minimum=1)
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: k must be an integer >= 1, got 0
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        number_ = int(value)
        if (minimum is None or number_ >= minimum) and (maximum is None or number_ <= maximum):
            return number_
    raise error(WHOLE.format(name=name, bounds=_bounds(minimum, maximum), value=value))


def number(name: str, value: Any, *, low: float | None = None, high: float | None = None, low_open: bool = False,
           high_open: bool = False, error: type[DPAuditError] = DPAuditError) -> float:
    """``value`` as a finite float within the given bounds (open or closed).

    Examples
    --------
    >>> number("time_limit", 2, low=0, low_open=True)
    2.0
    >>> number("time_limit", float("nan"), low=0, low_open=True)
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: time_limit must be a finite number > 0, got nan
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        x = float(value)
        if (math.isfinite(x) and (low is None or (x > low if low_open else x >= low))
                and (high is None or (x < high if high_open else x <= high))):
            return x
    raise error(NUMBER.format(name=name, bounds=_bounds(low, high, low_open, high_open), value=value))


def positive(name: str, value: Any, *, error: type[DPAuditError] = DPAuditError) -> float:
    """A finite number > 0 (ε, a sensitivity, a total budget)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value)) and float(value) > 0:
        return float(value)
    raise error(POSITIVE.format(name=name, value=value))


def unit_interval(name: str, value: Any, hint: str = "", *, error: type[DPAuditError] = DPAuditError) -> float:
    """A number strictly between 0 and 1 (a false-positive rate, a confidence level, a fraction).

    Examples
    --------
    >>> unit_interval("alpha", 0.01)
    0.01
    >>> unit_interval("level", 1, " (e.g. 0.95)")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: level must be a number strictly between 0 and 1 (e.g. 0.95), got 1
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and 0.0 < float(value) < 1.0:
        return float(value)
    raise error(UNIT.format(name=name, hint=hint, value=value))


def flag(name: str, value: Any, *, error: type[DPAuditError] = DPAuditError) -> bool:
    """A yes/no option: True or False (numpy booleans included), nothing else.

    Examples
    --------
    >>> flag("fpc", "yes")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: fpc must be True or False, got 'yes'
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise error(f"{name} must be True or False, got {value!r}")


def one_of(name: str, value: Any, choices: Collection[Any], *, error: type[DPAuditError] = DPAuditError) -> Any:
    """``value`` if it is one of ``choices`` (compared with ==, so the type counts).

    Examples
    --------
    >>> one_of("cells", "bogus", ("domain", "observed"))
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: cells must be one of domain, observed, got 'bogus'
    """
    try:
        if value in choices and not isinstance(value, bool):
            return value
    except TypeError:  # an unhashable value is in no set
        pass
    raise error(CHOICE.format(name=name, choices=", ".join(map(str, choices)), value=value))


def seed_value(name: str, value: Any, *, allow_none: bool = True) -> int | None:
    """A random seed: an integer ≥ 0, or None (fresh entropy) when allowed."""
    if value is None and allow_none:
        return None
    if allow_none and not (isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0):
        raise DPAuditError(SEED.format(name=name, value=value))
    return whole_number(name, value, minimum=0)
