"""Argument checks shared by every module: one function per kind of value, one message per kind.

Each check returns the value in its canonical type or raises :class:`~dpaudit.DPAuditError` (or the
subclass passed as ``error``) with a message built from the templates below, which tests import, so
a message is written once. Booleans are never accepted as numbers. In :data:`WHOLE`, :data:`NUMBER`
and :data:`EVERY`, ``{bounds}`` is the allowed range (``" >= 1 and <= 9"``, ``" and even"``) followed
by the caller's ``hint`` (why, e.g. ``" (a sample sd needs 2 scores)"``; empty by default).
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from dpaudit._errors import DPAuditError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["WHOLE", "NUMBER", "EVERY", "CHOICE", "SOME", "UNIT", "POSITIVE", "SEED", "FLAG", "whole_number", "number",
           "number_array", "positive", "unit_interval", "flag", "one_of", "some_of", "seed_value"]

#: ``{name} must be an integer{bounds}, got {value!r}``
WHOLE = "{name} must be an integer{bounds}, got {value!r}"
#: ``{name} must be a finite number{bounds}, got {value!r}``
NUMBER = "{name} must be a finite number{bounds}, got {value!r}"
#: ``every {name} must be {kind}{bounds}, got {value!r}``: an array, ``value`` its first offending element
EVERY = "every {name} must be {kind}{bounds}, got {value!r}"
#: ``{name} must be one of {choices}, got {value!r}``
CHOICE = "{name} must be one of {choices}, got {value!r}"
#: ``{name} must name one or more of {choices}, each once, got {value!r}``
SOME = "{name} must name one or more of {choices}, each once, got {value!r}"
#: ``{name} must be a number strictly between 0 and 1{hint}, got {value!r}``
UNIT = "{name} must be a number strictly between 0 and 1{hint}, got {value!r}"
#: ``{name} must be a non-negative integer or None, got {value!r}``
SEED = "{name} must be a non-negative integer or None, got {value!r}"
#: ``{name} must be a positive finite number, got {value!r}``
POSITIVE = "{name} must be a positive finite number, got {value!r}"
#: ``{name} must be True or False, got {value!r}``
FLAG = "{name} must be True or False, got {value!r}"
#: ``kind`` of :data:`EVERY` for whole numbers and for any finite number
_KINDS = {True: "an integer", False: "a finite number"}


def _bounds(low: float | None, high: float | None, low_open: bool = False, high_open: bool = False, *,
            even: bool = False, hint: str = "") -> str:
    """The ``{bounds}`` of a message: ``" >= 1 and < 5"``, ``" and even"``, then ``hint``."""
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    text = (" " + " and ".join(parts)) if parts else ""
    return text + (" and even" if even else "") + hint


def whole_number(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None,
                 even: bool = False, hint: str = "", error: type[DPAuditError] = DPAuditError) -> int:
    """``value`` as an int (numpy integers included) within [minimum, maximum], and even if asked.

    Examples
    --------
    >>> whole_number("k", 3, minimum=1)
    3
    >>> whole_number("k", 0, minimum=1)
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: k must be an integer >= 1, got 0
    >>> whole_number("n_models", 7, minimum=2, even=True, hint=" (IN in half the models)")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: n_models must be an integer >= 2 and even (IN in half the models), got 7
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        number_ = int(value)
        if ((minimum is None or number_ >= minimum) and (maximum is None or number_ <= maximum)
                and not (even and number_ % 2)):
            return number_
    raise error(WHOLE.format(name=name, bounds=_bounds(minimum, maximum, even=even, hint=hint), value=value))


def number(name: str, value: Any, *, low: float | None = None, high: float | None = None, low_open: bool = False,
           high_open: bool = False, hint: str = "", error: type[DPAuditError] = DPAuditError) -> float:
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
    raise error(NUMBER.format(name=name, bounds=_bounds(low, high, low_open, high_open, hint=hint), value=value))


def number_array(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, integer: bool = False, hint: str = "",
                 error: type[DPAuditError] = DPAuditError) -> np.ndarray:
    """``value`` (a number or an array of any shape) as a float64 array whose every element is a finite
    number within the bounds, and a whole number if ``integer``; the message names the first that is not.

    Examples
    --------
    >>> number_array("alpha", [0.5, 1.0], low=0, high=1).tolist()
    [0.5, 1.0]
    >>> number_array("n_out", [[5, 1]], integer=True, low=2)
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: every n_out must be an integer >= 2, got 1
    """
    import numpy as np  # here, not at the top: the scalar checks serve `dpaudit --help`, which loads no numpy

    bounds = _bounds(low, high, low_open, high_open, hint=hint)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # a ragged nesting
        arr = np.asarray(None)
    if arr.dtype.kind not in "iuf":  # booleans, strings, objects: name the first boolean, else the value
        first = arr.flat[0].item() if arr.dtype.kind == "b" and arr.size else value
        raise error(EVERY.format(name=name, kind=_KINDS[integer], bounds=bounds, value=first))
    x = np.asarray(arr, dtype=np.float64)  # no copy of a float64 array
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(x)
        if low is not None:
            bad |= (x <= low) if low_open else (x < low)
        if high is not None:
            bad |= (x >= high) if high_open else (x > high)
        if integer:
            bad |= np.floor(x) != x
    if bad.any():
        first = arr.flat[int(np.flatnonzero(bad)[0])].item()
        raise error(EVERY.format(name=name, kind=_KINDS[integer], bounds=bounds, value=first))
    return x


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
    numpy = sys.modules.get("numpy")  # a numpy boolean exists only once numpy is imported: import nothing here
    if isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_)):
        return bool(value)
    raise error(FLAG.format(name=name, value=value))


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


def some_of(name: str, value: Any, choices: Sequence[Any], *, error: type[DPAuditError] = DPAuditError) -> tuple[Any, ...]:
    """One choice, or a collection of distinct choices (at least one), as a tuple in the order of ``choices``.

    Examples
    --------
    >>> some_of("over", ["records", "models"], ("models", "records"))
    ('models', 'records')
    >>> some_of("over", (), ("models", "records"))
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: over must name one or more of models, records, each once, got ()
    """
    picked = (value,) if isinstance(value, str) or not isinstance(value, Collection) else tuple(value)
    try:
        ok = bool(picked) and len(set(picked)) == len(picked) and all(p in choices for p in picked)
    except TypeError:  # an unhashable value is in no set
        ok = False
    if not ok:
        raise error(SOME.format(name=name, choices=", ".join(map(str, choices)), value=value))
    return tuple(c for c in choices if c in picked)


def seed_value(name: str, value: Any, *, allow_none: bool = True) -> int | None:
    """A random seed: an integer ≥ 0, or None (fresh entropy) when allowed."""
    if value is None and allow_none:
        return None
    if allow_none and not (isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0):
        raise DPAuditError(SEED.format(name=name, value=value))
    return whole_number(name, value, minimum=0)
