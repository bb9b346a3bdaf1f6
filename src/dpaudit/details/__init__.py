"""What each measure explains beside its value: the typed details, their JSON form and their report hooks.

A measure returns its exact details (MI baseline, top cells and MD maps, repairs) or, in DP mode, what
it released privately (the named cells) as a :class:`Details` subclass; :class:`~dpaudit.results.MeasureResult`
carries them. The base (:mod:`dpaudit.details._base`) gives every details type its JSON form and a
generic field table that every report falls back to; the details of the registered measures live
here, one module each (``tvd``, ``contribution``, ``repair``), and a new measure may define its own
in its module. :func:`details_from_dict` reads them back from a document, by measure name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dpaudit._document import Doc, DocumentError
from dpaudit._errors import DPAuditError
from dpaudit.details._base import (
    Details,
    Labels,
    MeasureDetails,
    UnknownDetails,
    _plain_fields,
    _PlainRecord,
    field_rows,
    hook,
    mi_baseline,
)
from dpaudit.details.contribution import (
    CellMDMap,
    NamedCell,
    PrivateTopCellsDetails,
    SelectionInfo,
    TopCell,
    TopCellsDetails,
    describe_cell,
)
from dpaudit.details.repair import REPAIR_STATUSES, BlockRepairDetail, CellChange, RepairDetails
from dpaudit.details.tvd import MIBaseline, TVDDetails

__all__ = ["Details", "MeasureDetails", "UnknownDetails", "field_rows", "hook", "mi_baseline", "describe_cell", "MIBaseline",
           "TopCell", "NamedCell", "SelectionInfo", "CellChange", "BlockRepairDetail", "TVDDetails", "CellMDMap",
           "TopCellsDetails", "PrivateTopCellsDetails", "RepairDetails", "REPAIR_STATUSES", "details_from_dict",
           "Labels", "_PlainRecord", "_plain_fields", "READERS"]

#: The details of the three built-in measures, in the order their keys were always recognised: what a
#: document's entry is read as when its measure is not registered.
BUILTIN_DETAILS: tuple[type[Details], ...] = (TVDDetails, PrivateTopCellsDetails, TopCellsDetails, RepairDetails)
#: How each registered measure reads its own details back, by measure name
#: (:meth:`~dpaudit.measures.Measure.details_from_dict`): filled by :func:`dpaudit.measures.register`,
#: so the details, below the measures, never import them.
READERS: dict[str, Callable[[Mapping[str, Any]], MeasureDetails | None]] = {}


def details_from_dict(doc: Mapping[str, Any], measure: str | None = None) -> MeasureDetails | None:
    """The details held in a measure's JSON entry ``doc`` (without the release's own keys), or None.

    ``measure`` (the entry's name in the document) picks the registered measure, which reads its own
    details (:meth:`~dpaudit.measures.Measure.details_from_dict`). A name that is not registered, or
    none, falls back to the built-in details recognised by their keys; what is still not recognised
    is kept as :class:`UnknownDetails`, so it round-trips and is shown as a field table. A field that
    the details' type cannot read raises :class:`~dpaudit.DataError` naming it (also when a measure's
    own ``from_dict`` fails with another exception).

    Examples
    --------
    >>> details_from_dict({"baseline": [{"mi_nats": 0.1, "mi_bits": 0.144}]}, "tvd")
    TVDDetails(baseline=(MIBaseline(mi_nats=0.1, mi_bits=0.144),))
    >>> details_from_dict({"gap": [1, 2]}, "not-registered")
    UnknownDetails(entries={'gap': [1, 2]})
    """
    if not doc:
        return None
    d = Doc.of(doc, "" if measure is None else f"measures.{measure}")
    reader = READERS.get(measure) if measure is not None else None
    try:
        if reader is not None:
            found = reader(d)
        else:
            found = next((t.from_dict(d) for t in BUILTIN_DETAILS if t.recognises(d)), None)
    except DPAuditError:
        raise
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:  # a measure's own from_dict
        raise DocumentError(f"field {d.path or 'details'} cannot be read as details of {measure!r} "
                            f"({type(exc).__name__}: {exc})") from None
    return found if found is not None else UnknownDetails(dict(d))
