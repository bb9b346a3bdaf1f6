"""Unfairness measures on count tables, each a typed option object registered by name.

``MEASURES`` maps a name to its class; ``audit(..., measures=["tvd", TopContribution(k=10)])`` takes
names (with the class's default options) or configured instances. Adding a measure is one module
defining a :class:`Measure` subclass plus one line here; the shared invariance and sensitivity tests
(``tests/test_measure_properties.py``, ``tests/test_sensitivity.py``) then cover it. Measures never
read rows; they take the dense tables of :mod:`dpaudit.counts`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dpaudit._errors import DPAuditError
from dpaudit.measures._base import Assessment, Measure
from dpaudit.measures.contribution import TopContribution
from dpaudit.measures.repair import Repair
from dpaudit.measures.tvd import TVD, mutual_information, u_mi_tvd

__all__ = ["Measure", "Assessment", "MEASURES", "TVD", "TopContribution", "Repair", "measure_from",
           "u_mi_tvd", "mutual_information"]

#: The registered measures by name.
MEASURES: dict[str, type[Measure]] = {cls.name: cls for cls in (TVD, TopContribution, Repair)}


def measure_from(spec: str | Measure, **options: Any) -> Measure:
    """A measure instance from a registered name (configured by ``options``) or an instance.

    Options that the named measure does not take are ignored, so one set of keyword options can
    configure several names (the command line's flags); an instance is returned as it is and must not
    be combined with options.

    Examples
    --------
    >>> measure_from("tc", k=10, semantics="bag")
    TopContribution(k=10, cells='domain', name_cells=None)
    >>> measure_from("nope")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: unknown measure 'nope'; choose from: tvd, tc, repair
    """
    if isinstance(spec, Measure):
        return spec
    if not isinstance(spec, str) or spec not in MEASURES:
        raise DPAuditError(f"unknown measure {spec!r}; choose from: {', '.join(MEASURES)}")
    cls = MEASURES[spec]
    accepted = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in options.items() if k in accepted and v is not None})
