"""Argument checks of the generators (their messages are part of the generators' documented behaviour)."""

from __future__ import annotations

import numbers
from typing import Any

from dpaudit._errors import DPAuditError

__all__ = ["_is_int", "_check_seed"]


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_seed(seed: Any, *, allow_none: bool) -> None:
    if seed is None and allow_none:
        return
    if not _is_int(seed) or seed < 0:
        what = "a non-negative integer" + (" or None" if allow_none else "")
        raise DPAuditError(f"seed must be {what}, got {seed!r}")
