"""Argument checks shared by the MIA modules."""

from __future__ import annotations

from typing import Any

from dpaudit._errors import DPAuditError


def open_unit(name: str, value: Any, hint: str = "") -> float:
    """``value`` as a float strictly inside (0, 1); DPAuditError naming ``name`` otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DPAuditError(f"{name} must be a number in (0, 1), got {value!r}") from None
    if not 0.0 < number < 1.0:
        raise DPAuditError(f"{name} must be in (0, 1){hint}, got {value!r}")
    return number
