"""One debit of a privacy ledger file (:mod:`dpaudit.privacy._ledger`): what it records and how an
entry is read back, every field checked.

An entry says how much ε was spent (``epsilon``), on which release (``label``), when (``time``, UTC),
by which process (``pid``), under a unique ``id`` — and, since issue 26, on **which data** (``data``:
the file path as given, or for an in-memory frame a fingerprint of its column names and row count,
:func:`data_fingerprint`; never a value of the data) and **which criteria** (``criteria``). Entries
written before those two fields existed read with ``data`` None and no criteria.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["LedgerEntry", "read_entry", "data_fingerprint"]

_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class LedgerEntry:
    """One debit as stored in the ledger file."""

    id: str
    label: str
    epsilon: float
    time: str
    pid: int
    data: str | None = None
    criteria: tuple[str, ...] = ()


def data_fingerprint(columns: Sequence[str], rows: int) -> str:
    """What a ledger records for data that are not a file: the SHA-256 of the column names and the row
    count (public in dpaudit's model: replace-one neighbours, n public), no value of the data.

    Examples
    --------
    >>> data_fingerprint(["sex", "income"], 100)
    'frame sha256:21cf7b65a25e78dc (2 columns, 100 rows)'
    """
    names = [str(c) for c in columns]
    digest = hashlib.sha256("\x1f".join(names + [str(int(rows))]).encode("utf-8")).hexdigest()[:16]
    return f"frame sha256:{digest} ({len(names)} column{'' if len(names) == 1 else 's'}, {int(rows):,} rows)"


def read_entry(index: int, item: Any, seen: set[str], corrupt: Callable[[str], Exception]) -> LedgerEntry:
    """Entry ``index`` of a ledger file, checked (``corrupt(detail)`` is raised for a malformed one);
    ``seen`` collects the ids, which must be unique."""
    if not isinstance(item, dict):
        raise corrupt(f"entry {index} is not an object")
    id_, label, epsilon, time, pid = (item.get(k) for k in ("id", "label", "epsilon", "time", "pid"))
    if not isinstance(id_, str) or not _ID.fullmatch(id_):
        raise corrupt(f"entry {index} has no valid id")
    if id_ in seen:
        raise corrupt(f"entry {index} repeats the id {id_}")
    seen.add(id_)
    if not isinstance(label, str):
        raise corrupt(f"entry {index} has no label")
    if (isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon)
            or epsilon <= 0):
        raise corrupt(f"entry {index} has epsilon {epsilon!r}, not a positive number")
    if not isinstance(time, str):
        raise corrupt(f"entry {index} has no time")
    try:
        datetime.fromisoformat(time)
    except ValueError:
        raise corrupt(f"entry {index} has time {time!r}, not an ISO-8601 date") from None
    if isinstance(pid, bool) or not isinstance(pid, int) or pid < 0:
        raise corrupt(f"entry {index} has no valid pid")
    data, criteria = item.get("data"), item.get("criteria", [])
    if data is not None and not isinstance(data, str):
        raise corrupt(f"entry {index} has data {data!r}, not a string")
    if not isinstance(criteria, list) or not all(isinstance(c, str) for c in criteria):
        raise corrupt(f"entry {index} has criteria {criteria!r}, not a list of strings")
    return LedgerEntry(id_, label, float(epsilon), time, pid, data, tuple(criteria))
