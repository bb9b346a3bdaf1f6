"""How every report writes a privacy loss and a counted noun: one function each, reused by the text,
terminal and HTML reports, the audit's stages and the CLI (issue 26, point 8).

Imports nothing but the standard library, so the command's help and the ledger view stay light.
"""

from __future__ import annotations

import math

__all__ = ["epsilon_text", "plural"]


def epsilon_text(epsilon: float | None) -> str:
    """ε with at most 3 significant digits (``0.333``, not ``0.333333``); ``—`` for None (exact).

    Examples
    --------
    >>> epsilon_text(1 / 3), epsilon_text(1.0), epsilon_text(0.0625), epsilon_text(None), epsilon_text(12.5)
    ('0.333', '1', '0.0625', '—', '12.5')
    """
    if epsilon is None or (isinstance(epsilon, float) and math.isnan(epsilon)):
        return "—"
    return f"{float(epsilon):.3g}"


def plural(count: int, singular: str, many: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one (``1 criterion``, ``4 criteria``).

    ``many`` defaults to ``singular + "s"``; pass it for an irregular plural.

    Examples
    --------
    >>> plural(1, "criterion", "criteria"), plural(4, "criterion", "criteria"), plural(2, "block")
    ('1 criterion', '4 criteria', '2 blocks')
    """
    word = singular if count == 1 else (many if many is not None else singular + "s")
    return f"{count:,} {word}"
