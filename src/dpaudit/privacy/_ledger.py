"""A crash-safe privacy ledger: one total budget ε shared by processes and invocations.

:meth:`Budget.open(path, total_epsilon) <dpaudit.privacy.Budget.open>` returns a
:class:`LedgerBudget`, a :class:`~dpaudit.privacy.Budget` whose debits live in a JSON file instead
of memory, so several audits of the same data — in one process, in parallel processes, or in runs
days apart — draw on one budget and together never spend more than its total.

File format (version 1), UTF-8 JSON::

    {
      "format": "dpaudit.ledger",
      "version": 1,
      "total_epsilon": 1.0,
      "entries": [
        {"id": "<uuid4 hex>", "label": "tvd", "epsilon": 0.5, "time": "2025-01-31T12:00:00.000000+00:00", "pid": 4242,
         "data": "adult.csv", "criteria": ["sex ⊥ income"]}
      ]
    }

``id`` is a fresh ``uuid4().hex`` per debit, ``time`` is ISO-8601 in UTC, ``pid`` the writing
process; ``data`` and ``criteria`` say what the ε was spent on (optional: :mod:`._ledger_entries`). Spent ε is ``math.fsum`` of the entries' ``epsilon``; a debit fits when it exceeds what
remains by at most :data:`~dpaudit.privacy._budget.TOLERANCE` × total (as for :class:`Budget`).
Unknown keys are kept when the file is rewritten; a file without ``"format": "dpaudit.ledger"``,
with another ``version``, with a malformed field, or whose entries spend more than ``total_epsilon``
(beyond the slack a debit may take, which no writer can produce) is refused, never repaired.

Concurrency. Every check-and-debit holds an exclusive ``fcntl.flock`` on ``<path>.lock`` (created
when missing, never deleted): it re-reads the ledger under the lock — an in-memory copy is never
trusted — checks the whole batch, appends its entries, writes the new file and releases. Reads
(:attr:`~LedgerBudget.spent`, :attr:`~LedgerBudget.remaining`, :attr:`~LedgerBudget.ledger`,
:meth:`~LedgerBudget.check`) re-read, under a shared lock when the lock file exists; they never create
it (the file is only ever replaced atomically, so a lock-free read still sees a complete ledger), and
:meth:`LedgerBudget.view` opens a ledger for reading only: it needs no write permission, creates
nothing and refuses to debit (``dpaudit ledger FILE``). A process that dies holding the lock
releases it (the kernel closes its descriptor), so a killed writer cannot deadlock the others.
``flock`` is POSIX; on network file systems it is only as reliable as the server's locking.

Crash safety. The new file is written to a hidden temporary sibling, fsynced, moved onto ``path``
with ``os.replace`` (:func:`dpaudit._io.atomic_open`), and the folder is fsynced: the file on disk
is always the old or the new complete ledger. A debit is recorded exactly once — its entries are in
the file if and only if :meth:`~LedgerBudget.spend_many` returned (a process killed before the
replace leaves none; one killed after it leaves them all). Temporaries left by killed writers are
ignored by readers and removed by the next writer (under the lock no live writer can own one).

Refusals (:class:`~dpaudit.DataError` for the file, :class:`~dpaudit.BudgetError` for the budget)
happen before anything is changed, with one line naming the path and what to do.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpaudit._errors import BudgetError, DataError, DPAuditError
from dpaudit._io import atomic_open
from dpaudit._validation import flag, positive
from dpaudit.privacy._budget import TOLERANCE, Budget, plan_debits, refuse_overspend, release_label
from dpaudit.privacy._ledger_entries import LedgerEntry, read_entry

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX (Windows)
    fcntl = None  # type: ignore[assignment]

__all__ = ["LedgerBudget", "LedgerEntry", "FORMAT", "VERSION"]

#: The ``"format"`` value that marks a dpaudit ledger file.
FORMAT = "dpaudit.ledger"
#: The one file version this code reads and writes.
VERSION = 1

_CORRUPT_HINT = "restore it from a backup, or start a new ledger file"


def _number(value: float) -> str:
    """A float shown short when that is exact, in full otherwise (1 and 1.0000001 must differ)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def _context(about: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``data`` and ``criteria`` fields of a batch's entries (none when ``about`` is None)."""
    if about is None:
        return {}
    data, criteria = about.get("data"), [str(c) for c in about.get("criteria", ())]
    if data is not None and not isinstance(data, str):
        raise DPAuditError(f"a ledger records the data as a path or a fingerprint (str), got {data!r}")
    return {"data": data, "criteria": criteria}


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable. Best effort: the replace has happened, and raising now
    would tell the caller a recorded debit was not recorded (some file systems refuse the fsync)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    with contextlib.suppress(OSError):
        os.fsync(fd)
    os.close(fd)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class LedgerBudget(Budget):
    """A :class:`Budget` persisted in a ledger file (see the module docstring for the format).

    Create it with :meth:`Budget.open`. ``total_epsilon`` is needed to create a new ledger and must
    match the total of an existing one; ``None`` opens an existing ledger with its own total.
    ``read_only`` (see :meth:`view`) opens an existing ledger without needing to write.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "ledger.json"
    >>> b = Budget.open(path, 1.0)
    >>> b.spend(0.25, "tvd")
    >>> b.spend_many([("tc", 0.25), ("repair", 0.5)])
    >>> again = Budget.open(path)  # another process, another day
    >>> again.ledger, again.remaining
    ((('tvd', 0.25), ('tc', 0.25), ('repair', 0.5)), 0.0)
    >>> again.spend(0.5, "more")
    Traceback (most recent call last):
    ...
    dpaudit._errors.BudgetError: release 'more' asks for epsilon=0.5 but only 0 of the total 1 remains (0.5 short); lower its epsilon or raise the total budget
    """

    def __init__(self, path: str | os.PathLike[str], total_epsilon: float | None = None, *,
                 read_only: bool = False) -> None:
        if fcntl is None:  # pragma: no cover - not POSIX
            raise DataError("a ledger file needs POSIX file locks (fcntl), which this platform lacks; use an "
                            "in-memory Budget")
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise DataError(f"the ledger path must be a non-empty file path, got {path!r}")
        total = None if total_epsilon is None else positive("total_epsilon", total_epsilon)
        self.path = Path(os.path.realpath(os.fspath(path)))
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._swept = False
        self.read_only = flag("read_only", read_only)
        self._check_place()
        if self.path.exists():
            # The file is only ever replaced atomically, so this lock-free read sees a complete
            # ledger; refusing here leaves the folder untouched (not even a lock file).
            file_total = self._load()[0]
        elif total is None or self.read_only:
            raise DataError(f"ledger {str(self.path)!r} does not exist; give total_epsilon to create it "
                            "(Budget.open(path, total_epsilon)) or check the path")
        else:
            with self._locked(exclusive=True):
                if self.path.exists():  # another process created it meanwhile
                    file_total = self._load()[0]
                else:
                    self._write({"format": FORMAT, "version": VERSION, "total_epsilon": total, "entries": []})
                    file_total = total
        if total is not None and abs(total - file_total) > TOLERANCE * max(total, file_total):
            raise BudgetError(
                f"ledger {str(self.path)!r} holds a total budget of epsilon={_number(file_total)}, not the "
                f"{_number(total)} asked for; open it with total_epsilon={_number(file_total)} (or None), or use "
                "another ledger file for a different total")
        self.total_epsilon = file_total

    @classmethod
    def view(cls, path: str | os.PathLike[str]) -> LedgerBudget:
        """An existing ledger opened for reading only: nothing is created (not even the lock file), its
        folder need not be writable, and :meth:`spend_many` refuses."""
        return cls(path, None, read_only=True)

    # -- reading ----------------------------------------------------------------------------------

    @property
    def spent(self) -> float:
        """The ε debited so far, re-read from the file (and so is :attr:`remaining`, computed from it)."""
        return math.fsum(e.epsilon for e in self._snapshot())

    @property
    def ledger(self) -> tuple[tuple[str, float], ...]:
        """Every debit in the file, as (label, epsilon), in order."""
        return tuple((e.label, e.epsilon) for e in self._snapshot())

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """Every debit in the file with its id, time and process id, in order."""
        return self._snapshot()

    def check(self, epsilon: float, label: str) -> None:
        """Raise BudgetError if ``epsilon`` does not fit in what the file says remains; debit nothing."""
        epsilon = positive("epsilon", epsilon)
        refuse_overspend(self.total_epsilon, self.spent, epsilon, release_label(label))

    # -- debiting ---------------------------------------------------------------------------------

    def spend(self, epsilon: float, label: str) -> None:
        """Debit ``epsilon`` for the release ``label`` in the file; BudgetError if it does not fit."""
        self.spend_many([(label, epsilon)])

    def spend_many(self, items: Sequence[tuple[str, float]], *, about: Mapping[str, Any] | None = None) -> None:
        """Debit several releases, (label, epsilon) each, in one locked write: all or none.

        ``about`` (what :func:`dpaudit.audit` passes): ``data`` (a path or a fingerprint) and ``criteria``
        (a list of str), recorded with every entry of the batch.

        Each is checked against what the file says remains after the ones before it. A refusal
        (BudgetError with :meth:`Budget.check`'s message), a malformed item or a failed write leaves
        the file as it was.
        """
        if self.read_only:
            raise DataError(f"ledger {str(self.path)!r} was opened read-only (LedgerBudget.view); open it with "
                            "Budget.open(path) to debit it")
        with self._locked(exclusive=True):
            doc, entries = self._read()
            planned = plan_debits(self.total_epsilon, [e.epsilon for e in entries], items)
            if not planned:
                return
            now = datetime.now(UTC).isoformat(timespec="microseconds")
            pid = os.getpid()
            context = _context(about)
            doc["entries"] = list(doc["entries"]) + [
                {"id": uuid.uuid4().hex, "label": label, "epsilon": epsilon, "time": now, "pid": pid, **context}
                for label, epsilon in planned
            ]
            if not self._swept:
                self._sweep()
            self._write(doc)

    def __repr__(self) -> str:
        return f"LedgerBudget({str(self.path)!r}, total_epsilon={self.total_epsilon:g})"

    # -- the file ---------------------------------------------------------------------------------

    def _check_place(self) -> None:
        """Refuse a path where a ledger cannot live, before anything is created."""
        where = str(self.path)
        folder = self.path.parent
        if not folder.exists():
            raise DataError(f"cannot use ledger {where!r}: its folder {str(folder)!r} does not exist; create it "
                            "first or choose another path")
        if not folder.is_dir():
            raise DataError(f"cannot use ledger {where!r}: {str(folder)!r} is a file, not a folder; choose "
                            "another path")
        if self.path.is_dir():
            raise DataError(f"ledger {where!r} is a folder, not a ledger file; give the path of a file, e.g. "
                            f"{str(self.path / 'ledger.json')!r}")
        if self.path.exists() and not self.path.is_file():
            raise DataError(f"ledger {where!r} is not a regular file; give the path of a ledger file")
        if self.lock_path.exists() and not self.lock_path.is_file():
            raise DataError(f"cannot use ledger {where!r}: its lock file {str(self.lock_path)!r} is not a regular "
                            "file; remove it")
        if not self.read_only and not os.access(folder, os.W_OK | os.X_OK):
            raise DataError(f"cannot use ledger {where!r}: its folder {str(folder)!r} is not writable, so no "
                            "debit could be recorded; fix the folder's permissions or choose another path")

    @contextlib.contextmanager
    def _locked(self, *, exclusive: bool) -> Iterator[None]:
        """Hold ``flock`` on the lock file: exclusive to debit (creating it), shared to read (if it exists)."""
        assert fcntl is not None
        try:
            fd = os.open(self.lock_path, os.O_RDONLY | (os.O_CREAT if exclusive else 0), 0o666)
        except OSError as exc:
            if exclusive or not isinstance(exc, FileNotFoundError):
                raise DataError(f"cannot open the lock file {str(self.lock_path)!r} of ledger {str(self.path)!r} "
                                f"({exc.strerror or exc}); fix the folder's permissions") from None
            fd = -1  # a reader creates no lock file; an atomic replace never shows a partial ledger anyway
        if fd < 0:
            yield
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            except OSError as exc:
                raise DataError(f"cannot lock ledger {str(self.path)!r} ({exc.strerror or exc}); keep ledgers on "
                                "a local file system that supports flock") from None
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _snapshot(self) -> tuple[LedgerEntry, ...]:
        with self._locked(exclusive=False):
            return tuple(self._read()[1])

    def _read(self) -> tuple[dict[str, Any], list[LedgerEntry]]:
        """The parsed file and its entries, refused if its total is not this budget's (call under the lock)."""
        doc, total, entries = self._parse()
        if total != self.total_epsilon:
            raise BudgetError(f"ledger {str(self.path)!r} now holds a total budget of epsilon={_number(total)}, "
                              f"not {_number(self.total_epsilon)}: it was replaced after it was opened; open "
                              "it again to use the new total")
        return doc, entries

    def _load(self) -> tuple[float, list[LedgerEntry]]:
        _, total, entries = self._parse()
        return total, entries

    def _parse(self) -> tuple[dict[str, Any], float, list[LedgerEntry]]:
        where = str(self.path)
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raise DataError(f"ledger {where!r} no longer exists (it was removed after it was opened); restore "
                            "it, or open a new ledger with Budget.open(path, total_epsilon)") from None
        except IsADirectoryError:
            raise DataError(f"ledger {where!r} is a folder, not a ledger file; give the path of a file") from None
        except OSError as exc:
            raise DataError(f"cannot read ledger {where!r} ({exc.strerror or exc}); fix its permissions") from None

        def corrupt(detail: str) -> DataError:
            return DataError(f"ledger {where!r} is corrupt ({detail}); {_CORRUPT_HINT}")

        try:
            doc = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except UnicodeDecodeError:
            raise corrupt("it is not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise corrupt(f"not valid JSON: {exc.msg} at line {exc.lineno}") from None
        except (ValueError, RecursionError) as exc:
            raise corrupt(f"not valid JSON: {exc}") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise DataError(f"{where!r} is not a dpaudit ledger (it has no \"format\": \"{FORMAT}\"); choose "
                            "another path for the ledger, or move that file away")
        version = doc.get("version")
        if type(version) is not int or version != VERSION:
            raise DataError(f"ledger {where!r} has version {version!r}, but this dpaudit reads version {VERSION} "
                            "only; use the dpaudit that wrote it, or start a new ledger file")
        total = doc.get("total_epsilon")
        if isinstance(total, bool) or not isinstance(total, (int, float)) or not math.isfinite(total) or total <= 0:
            raise corrupt(f"total_epsilon is {total!r}, not a positive number")
        raw_entries = doc.get("entries")
        if not isinstance(raw_entries, list):
            raise corrupt("\"entries\" is not a list")
        seen: set[str] = set()
        entries = [read_entry(index, item, seen, corrupt) for index, item in enumerate(raw_entries)]
        spent = math.fsum(e.epsilon for e in entries)
        # each debit fits within total·(1 + TOLERANCE) (refuse_overspend), so no writer gets past twice that
        if spent > total * (1 + 2 * TOLERANCE):
            raise corrupt(f"its entries spend epsilon={_number(spent)}, more than its "
                          f"total_epsilon={_number(total)}; it was edited")
        return doc, float(total), entries

    def _write(self, doc: dict[str, Any]) -> None:
        """Replace the file by ``doc`` atomically and durably (call under the exclusive lock)."""
        head = [f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in doc.items() if key != "entries"]
        rows = ",\n".join("    " + json.dumps(entry) for entry in doc["entries"])
        text = "{\n" + ",\n".join(head) + ',\n  "entries": [' + (f"\n{rows}\n  " if rows else "") + "]\n}\n"
        try:
            with atomic_open(self.path, "w", fsync=True) as handle:
                handle.write(text)
        except (OSError, DPAuditError) as exc:
            reason = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
            reason = reason.removeprefix(f"cannot write {str(self.path)!r}: ")  # atomic_open may name it too
            raise DataError(f"cannot write ledger {str(self.path)!r} ({reason}); nothing was recorded: free "
                            "disk space or fix the folder's permissions and retry") from None
        _fsync_folder(self.path.parent)

    def _sweep(self) -> None:
        """Remove temporaries of killed writers (call under the exclusive lock: no live writer has one)."""
        self._swept = True
        # the names dpaudit._io.temporary_sibling gives: ".<name>.<pid>-<hex>.tmp"
        pattern = re.compile(rf"\.{re.escape(self.path.name)}\.\d+-[0-9a-f]+\.tmp")
        try:
            with os.scandir(self.path.parent) as it:
                stale = [e.path for e in it if pattern.fullmatch(e.name)]
        except OSError:
            return
        for name in stale:
            with contextlib.suppress(OSError):
                os.unlink(name)


Budget.persistent = LedgerBudget  # what Budget.open returns (the accountant cannot import its subclass)
