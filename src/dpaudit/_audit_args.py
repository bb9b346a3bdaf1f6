"""The arguments of :func:`dpaudit.audit` that name measures and share ε: the measure list and its
options (:func:`resolve_measures`), the budget split (:func:`split_budget`), the refusal of an audit that
names no privacy choice and the note of a defaulted measure set (:func:`left_out_note`).

Re-exported by :mod:`dpaudit.audit`, where they always were.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dpaudit._defaults import LEFT_OUT, MEASURE_TITLES
from dpaudit._errors import DPAuditError
from dpaudit.measures import Measure, measure_from, option_fields
from dpaudit.privacy._mechanisms import MIN_RELEASE_EPSILON

__all__ = ["NO_PRIVACY_CHOICE", "PYTHON_HINT", "left_out_note", "split_budget", "resolve_measures"]

#: The refusal of an audit that says neither how private it is nor that it is exact.
NO_PRIVACY_CHOICE = ("say how private the audit is: epsilon=<float> for a DP release (e.g. epsilon=1.0), or "
                     "exact=True for exact values for the data curator (not DP)")
#: How to add the measures a defaulted audit left out, in Python (``dpaudit fairness`` words it as flags).
PYTHON_HINT = "measures=(" + ", ".join(f"'{m}'" for m in MEASURE_TITLES) + ")"


def left_out_note(how: str) -> str:
    """The explain-trail line of an audit whose measures were the default: which were left out and how
    to add them (``how``: :data:`PYTHON_HINT`, or the command line's flags)."""
    titles = ", ".join(f"{MEASURE_TITLES[m]} ({m})" for m in LEFT_OUT)
    return (f"{titles} left out by default (it solves one optimisation per block and can take minutes on large "
            f"data); add it with {how}")


def split_budget(epsilon: float, measures: Sequence[str], split: Mapping[str, float] | None = None) -> dict[str, float]:
    """Share a total ε across measures: equally by default, or by the fractions in ``split``.

    Examples
    --------
    >>> split_budget(1.0, ["tvd", "tc"])
    {'tvd': 0.5, 'tc': 0.5}
    >>> split_budget(1.0, ["tvd", "tc"], {"tvd": 0.25, "tc": 0.75})
    {'tvd': 0.25, 'tc': 0.75}
    """
    if split is None:
        shares = {m: epsilon / len(measures) for m in measures}
    else:
        if not isinstance(split, Mapping):
            raise DPAuditError(f"budget split must map each measure to a fraction (e.g. {{'tvd': 0.5, 'tc': 0.5}}), "
                               f"got {split!r}")
        if set(split) != set(measures):
            raise DPAuditError(
                f"budget split names {sorted(map(str, split))} but the measures are {sorted(measures)}; give one "
                "fraction per measure"
            )
        if any(not (isinstance(f, numbers.Real) and not isinstance(f, bool) and math.isfinite(f) and f > 0)
               for f in split.values()):
            raise DPAuditError(f"budget split fractions must be positive numbers, got {dict(split)}")
        total = math.fsum(split.values())
        if abs(total - 1.0) > 1e-9:
            raise DPAuditError(f"budget split fractions must sum to 1, they sum to {total:g}")
        shares = {m: epsilon * split[m] for m in measures}
    for m, share in shares.items():
        if share < MIN_RELEASE_EPSILON:
            raise DPAuditError(
                f"measure {m} would be released with epsilon={share:g}, below the smallest dpaudit releases "
                f"with ({MIN_RELEASE_EPSILON:g}): its noise would drown any value; raise epsilon or its split fraction"
            )
    return shares


def resolve_measures(measures: str | Measure | Sequence[str | Measure], **options: Any) -> list[Measure]:
    """Configured measure objects from names and/or instances, each option validated.

    ``options`` (``k=...``, ``semantics=...``) configure the measures named by string, routed by the
    name of the measure's dataclass field; a value given is checked by the measure, None included (it
    is the default only of an option whose default is None, ``name_cells``: ``semantics=None`` is
    refused, not read as "not given"). An option that no registered measure takes, or no named one,
    is refused rather than ignored, and so is a measure requested twice.

    Examples
    --------
    >>> resolve_measures(["tvd", "tc"], k=10)
    [TVD(), TopContribution(k=10, cells='domain', name_cells=None)]
    >>> resolve_measures(["tvd"], semantics="bag")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: option semantics configures repair, which is not among the measures (tvd); add it or drop the option
    """
    if isinstance(measures, (str, Measure)):
        items = [measures]
    elif isinstance(measures, Iterable) and not isinstance(measures, (bytes, Mapping)):
        items = list(measures)
    else:
        raise DPAuditError(f"measures must be a measure name, a Measure, or a list of them (e.g. ('tvd', 'tc')), "
                           f"got {measures!r}")
    odd = [m for m in items if not isinstance(m, (str, Measure))]
    if odd:
        raise DPAuditError(f"measures must be names or Measure objects, got {odd[0]!r}; e.g. ('tvd', TopContribution(k=5))")
    if not items:
        raise DPAuditError("no measures requested; pass e.g. measures=('tvd',)")
    named = {m for m in items if isinstance(m, str)}
    known = option_fields()
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise DPAuditError(f"unknown option {unknown[0]!r}: no registered measure takes it; the measures' options are "
                           f"{', '.join(known)}")
    for option in options:
        takers = [cls.name for cls, _ in known[option]]
        if not any(name in named for name in takers):
            raise DPAuditError(
                f"option {option} configures {', '.join(takers) or 'no measure'}, which is not among the measures "
                f"({', '.join(m if isinstance(m, str) else m.name for m in items)}); add it or drop the option"
            )
    out = [measure_from(m, **options) for m in items]
    names = [m.name for m in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DPAuditError(f"measure {', '.join(twice)} is requested twice; request each measure once")
    return out
