"""Unfairness measures on count tables, each a typed option object registered by name.

``MEASURES`` maps a name to its class; ``audit(..., measures=["tvd", TopContribution(k=10)])`` takes
names (with the class's default options) or configured instances. Adding a measure is one module
defining a :class:`Measure` subclass — its options, exact values, sensitivity, details (a
:class:`~dpaudit.details.Details` subclass), report texts and worst-case neighbours — plus one
registration: its class in the tuple below, or :func:`register` (``with registered(cls):`` for a
while). Options, the command line's ``--option``, the JSON round trip, the reports and the
self-check then take it from the registry, and the shared invariance and sensitivity tests
(``tests/test_measure_properties.py``, ``tests/test_sensitivity.py``) cover it. Measures never read
rows; they take the dense tables of :mod:`dpaudit.counting`.
"""

from __future__ import annotations

from dpaudit.measures._base import Assessment, Measure, ReportSection
from dpaudit.measures._neighbours import NeighbourPair, WorstCase
from dpaudit.measures._registry import (
    MEASURES,
    measure_from,
    option_fields,
    option_value,
    options_doc,
    register,
    registered,
    unregister,
)
from dpaudit.measures.contribution import TopContribution
from dpaudit.measures.repair import Repair
from dpaudit.measures.tvd import TVD, mutual_information, u_mi_tvd

__all__ = ["Measure", "Assessment", "ReportSection", "NeighbourPair", "WorstCase", "MEASURES", "TVD",
           "TopContribution", "Repair", "measure_from", "register", "unregister", "registered", "option_fields",
           "option_value", "options_doc", "u_mi_tvd", "mutual_information"]

for _measure in (TVD, TopContribution, Repair):  # the registry: a new measure's class goes here
    register(_measure)
