"""Opening data files with DuckDB, refusing malformed ones with a message that says what to fix.

CSV (optionally gzipped) and TSV files are read with DuckDB's sniffer, Parquet files natively; both
stream, so files larger than memory are fine. DuckDB is lenient where an audit must not be: it
renames a repeated header name (``a``, ``a_1``), and a file whose rows do not all have the header's
field count can make the sniffer fall back to one column holding whole lines. Both are caught here
(the second by a Python scan that runs only on that suspect path, naming the first bad line).

The path checks (:func:`require_file`, :func:`file_kind`) and the CSV scans
(:func:`refuse_repeated_header`, :func:`refuse_ragged_rows`) also serve readers that do not use
DuckDB (``dpaudit mia train --data`` reads with pandas, score files with numpy), so every reader
names a directory, a pipe or a device for what it is and refuses the same malformed CSV files.
"""

from __future__ import annotations

import csv
import gzip
import os
import re
import stat
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dpaudit._errors import DataError

__all__ = ["open_file", "EVERY_COLUMN", "connection", "FILE_SUFFIXES", "file_kind", "require_file", "refuse_repeated_header", "refuse_ragged_rows"]

FILE_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".parquet", ".pq")
_DELIMITERS = (",", ";", "\t", "|")
#: The key of ``kinds`` (:func:`open_file`) that gives the kind of every column not named.
EVERY_COLUMN = "*"


def open_file(path: Path, kinds: Mapping[str, str] | None = None) -> tuple[Any, Any]:
    """A narwhals LazyFrame over the file at ``path`` and the DuckDB connection to keep open.

    ``kinds`` maps columns to what the schema declares them to hold, ``"text"`` or ``"integer"``:
    a text column is read as text even when it looks numeric (categories ``"01"``, ``"02"`` must
    not become the integers 1, 2), and an integer column that DuckDB would read as booleans (its
    values are true/false or yes/no) is read as text, so those words are reported as outside the
    declared domain instead of silently counting as 1 and 0. A ``"words"`` column (the kind of every
    column under the key :data:`EVERY_COLUMN` when the schema is inferred) that DuckDB would read as
    booleans is read as text too: the categories keep the file's words (``yes``/``no``). Raises DataError for a path that is not
    a readable data file or a file DuckDB cannot parse.
    """
    kinds = dict(kinds or {})
    import duckdb
    import narwhals.stable.v2 as nw

    name = path.name.lower()
    if not path.is_dir() and not name.endswith(FILE_SUFFIXES):
        raise DataError(f"{str(path)!r} is neither a registered dataset nor a .csv/.csv.gz/.tsv/.parquet file")
    require_file(path, what="data file", hint="pass the path of a .csv/.csv.gz/.tsv/.parquet file")
    con = connection()
    try:
        if name.endswith((".parquet", ".pq")):
            rel = con.read_parquet(str(path))
        else:
            rel = con.read_csv(str(path), header=True)  # CSV files must start with a header row
            _refuse_malformed_csv(path, con, rel.columns)
            kind = {c: kinds.get(c, kinds.get(EVERY_COLUMN)) for c in rel.columns}
            retype = {c: "VARCHAR" for c, t in zip(rel.columns, rel.types)
                      if (kind[c] == "text" and str(t) != "VARCHAR") or (kind[c] in ("integer", "words") and str(t) == "BOOLEAN")}
            if retype:
                rel = con.read_csv(str(path), header=True, dtype=retype)
    except duckdb.Error as exc:
        con.close()
        raise DataError(f"cannot read {str(path)!r}: {_reason(str(exc))}") from None
    except DataError:
        con.close()
        raise
    return nw.from_native(rel), con


_DATABASES: dict[int, Any] = {}  # process id → its in-memory database, made on first use
_LOCK = [threading.Lock()]


def _new_lock() -> None:
    _LOCK[0] = threading.Lock()  # a fork while another thread held the lock must not deadlock the child


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock)


def connection() -> Any:
    """A new DuckDB connection (a cursor, one per opened file: each thread reads through its own) to
    one in-memory database kept for the life of the process.

    Opening a DuckDB database and closing it again costs about 14 ms each time (its buffer manager
    and thread pool are built, then torn down), more than counting a small file; a user counting
    file after file keeps one connection too. A forked child opens its own (a database is not
    fork-safe) and leaves its parent's untouched: destroying it would join threads the child lacks."""
    import duckdb

    with _LOCK[0]:
        if os.getpid() not in _DATABASES:
            _DATABASES[os.getpid()] = duckdb.connect()
        return _DATABASES[os.getpid()].cursor()


#: What a path that is not a regular file is, by its ``stat`` mode test.
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_kind(path: Path) -> str | None:
    """What ``path`` is when it exists but is not a regular file (``"a directory"``, ``"a named pipe
    (FIFO)"``, ``"a character device"`` for ``/dev/null``, ...); None for a regular file or no file.

    Examples
    --------
    >>> file_kind(Path("/dev/null")), file_kind(Path("/no/such/file"))
    ('a character device', None)
    """
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), None if stat.S_ISREG(mode) else "a special file")


def require_file(path: Path, *, what: str, hint: str) -> None:
    """DataError unless ``path`` is an existing, non-empty regular file; the message names ``what``
    the file should be, what the path is instead (a directory, a FIFO, a device) and, for a
    directory, the ``hint``. Reading a FIFO would block, and a device is no data file."""
    shown = f"{what} {str(path)!r}"
    kind = file_kind(path)
    if kind == "a directory":
        raise DataError(f"{shown} is a directory; {hint}")
    if kind is not None:
        raise DataError(f"{shown} is {kind}, not a regular file; save its content to a regular file first")
    if not path.is_file():
        raise DataError(f"{shown} does not exist; check the path")
    if path.stat().st_size == 0:
        raise DataError(f"{shown} is empty (0 bytes); a data file starts with a header row")


def _reason(message: str) -> str:
    """DuckDB's error in one line: its first line plus the line that names the problem."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    first = lines[0] if lines else "unknown error"
    if "not utf-8" in message.lower() or "invalid unicode" in message.lower():
        return f"{first}: the file is not UTF-8 text; save it as UTF-8"
    detail = next((line for line in lines[1:] if "Expected Number of Columns" in line or "detected" in line), None)
    return f"{first}: {detail}" if detail else first


def _lines(path: Path) -> Any:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    return opener(path, "rt", encoding="utf-8-sig", newline="", errors="replace")


def _refuse_malformed_csv(path: Path, con: Any, columns: Sequence[str]) -> None:
    """DataError for a header that names a column twice, or rows whose field count differs from it."""
    renamed = [c for c in columns if (m := re.fullmatch(r"(.+)_\d+", c)) and m.group(1) in columns]
    if renamed:
        refuse_repeated_header(path, con.execute("SELECT Delimiter FROM sniff_csv(?)", [str(path)]).fetchall()[0][0])
    one_column = len(columns) == 1 and any(d in columns[0] for d in _DELIMITERS)
    quoted = any(len(c) > 1 and c[0] == c[-1] and c[0] in "\"'" for c in columns)
    if one_column or quoted:  # the sniffer gave up on the dialect: find the row that made it
        if one_column:
            delimiter = next(d for d in _DELIMITERS if d in columns[0])
        else:
            delimiter = con.execute("SELECT Delimiter FROM sniff_csv(?)", [str(path)]).fetchall()[0][0] or ","
        refuse_ragged_rows(path, delimiter)


def refuse_repeated_header(path: Path, delimiter: str | None) -> None:
    """DataError when the header row of the CSV file at ``path`` names a column more than once."""
    with _lines(path) as handle:
        header = next(csv.reader(handle, delimiter=delimiter or ","), [])
    seen: set[str] = set()
    twice = sorted({c for c in header if c in seen or seen.add(c)})  # type: ignore[func-returns-value]
    if twice:
        raise DataError(
            f"{str(path)!r}: the header names column(s) {', '.join(map(repr, twice))} more than once; "
            "give every column a distinct name"
        )


def refuse_ragged_rows(path: Path, delimiter: str, *, utf8: bool = False) -> None:
    """DataError naming the first line of the CSV file at ``path`` whose field count differs from the
    header's, or that is not valid CSV (an unclosed quote); with ``utf8``, also the first line that is
    not UTF-8 text. Blank lines are skipped, as every CSV reader here skips them."""
    with _lines(path) if not utf8 else _binary(path) as handle:
        rows = csv.reader(handle if not utf8 else _utf8(path, handle), delimiter=delimiter, strict=True)
        try:
            width = len(next(rows, []))
            for row in rows:
                if len(row) != width and row:
                    raise DataError(
                        f"{str(path)!r}: line {rows.line_num} has {len(row)} field(s) but the header has {width}; "
                        "fix that row (a missing or extra delimiter, or an unclosed quote)"
                    )
        except csv.Error as exc:
            raise DataError(f"{str(path)!r}: line {rows.line_num} is not valid CSV ({exc}); fix that row") from None


def _binary(path: Path) -> Any:
    return (gzip.open if path.name.lower().endswith(".gz") else open)(path, "rb")


def _utf8(path: Path, handle: Any) -> Iterator[str]:
    """The lines of a binary file as text, each decoded on its own, so a byte that is not UTF-8 is named by
    its line."""
    for number, raw in enumerate(handle, 1):
        try:
            yield raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"{str(path)!r}: line {number} is not UTF-8 text (byte {exc.start + 1} of the line is "
                            f"{raw[exc.start]:#04x}); save the file as UTF-8") from None
