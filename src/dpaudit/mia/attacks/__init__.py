"""Membership-inference attacks, each registered by name (spec ``mia.md`` §2).

``ATTACKS`` maps a name to its class — ``"lira"`` (:class:`LiRA`, Carlini et al. 2022) and ``"rmia"``
(:class:`RMIA`, Zarifzadeh et al. 2024) — for ``evaluate(scores, attack="rmia")`` or
``evaluate(scores, attack=RMIA(offline=True))``. An attack turns a ScoreSet into per-target statistics
(:class:`~dpaudit.mia.attacks._base.Attack`); every evaluation rule then applies to it unchanged.
Adding an attack is one module plus one line here.
"""

from __future__ import annotations

from dpaudit._validation import one_of
from dpaudit.mia._defaults import DEFAULT_ATTACK
from dpaudit.mia.attacks._base import Attack
from dpaudit.mia.attacks.lira import LiRA
from dpaudit.mia.attacks.rmia import RMIA

__all__ = ["Attack", "LiRA", "RMIA", "ATTACKS", "DEFAULT_ATTACK", "attack_from"]

#: The registered attacks by name.
ATTACKS: dict[str, type[Attack]] = {cls.name: cls for cls in (LiRA, RMIA)}


def attack_from(spec: str | Attack | None) -> Attack:
    """An attack instance from a registered name, an instance, or None (:data:`DEFAULT_ATTACK` with its defaults).

    Examples
    --------
    >>> attack_from("lira")
    LiRA(location='mean', variance='per-record')
    """
    if isinstance(spec, Attack):
        return spec
    return ATTACKS[one_of("attack", DEFAULT_ATTACK if spec is None else spec, ATTACKS)]()
