"""Files and JSON: the one place that writes atomically and turns values into JSON.

Every file dpaudit writes (score sets, run directories, JSON reports, WCNF formulas, downloads,
generated Parquet) goes through :func:`atomic_open`: the content is written to a hidden temporary
file in the target's folder and moved into place with ``os.replace``, so a reader never sees half a
file and a failure leaves nothing behind.

:func:`to_jsonable` converts numpy scalars and arrays, tuples and mappings to plain JSON values, with
one policy for non-finite floats (JSON has none): ``"string"`` writes ``"inf"``, ``"-inf"``,
``"nan"``; ``"null"`` writes ``null``; ``"error"`` refuses.
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Literal

__all__ = ["atomic_open", "atomic_write_text", "temporary_sibling", "check_writable", "to_jsonable", "plain",
           "load_json"]

NonFinite = Literal["string", "null", "error"]


def temporary_sibling(path: str | os.PathLike[str]) -> Path:
    """A hidden, unique name next to ``path`` (same folder, so a rename onto ``path`` is atomic)."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def check_writable(path: str | os.PathLike[str], *, parents: bool = False) -> Path:
    """``path`` as a Path if a file can be created or replaced there, else one clear :class:`DataError`.

    Called before any work whose result will be written, so a bad output path costs nothing. With
    ``parents=True`` missing folders are fine as long as they can be created (the nearest existing
    ancestor is a writable folder).

    Examples
    --------
    >>> check_writable("/no/such/folder/out.json")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DataError: cannot write '/no/such/folder/out.json': the folder '/no/such/folder' does not exist; create it or choose another path
    """
    from dpaudit._errors import DataError

    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise DataError(f"cannot write {str(target)!r}: it is a directory; give a file name")
    if not folder.exists():
        blocker = next((p for p in folder.parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            raise DataError(f"cannot write {str(target)!r}: {str(blocker)!r} is a file, not a folder")
        if parents:
            ancestor = next(p for p in folder.absolute().parents if p.exists())
            if not os.access(ancestor, os.W_OK | os.X_OK):
                raise DataError(f"cannot write {str(target)!r}: the folder {str(ancestor)!r} is not writable")
            return target
        raise DataError(f"cannot write {str(target)!r}: the folder {str(folder)!r} does not exist; create it or "
                        "choose another path")
    if not folder.is_dir():
        raise DataError(f"cannot write {str(target)!r}: {str(folder)!r} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DataError(f"cannot write {str(target)!r}: the folder {str(folder)!r} is not writable")
    if target.exists() and not target.is_file():
        raise DataError(f"cannot write {str(target)!r}: it exists and is not a regular file")
    return target


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", *, encoding: str | None = None,
                fsync: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing; on success move it onto ``path``.

    Parameters
    ----------
    path : path
        The file to create or replace (checked by :func:`check_writable` first).
    mode : {"w", "wb"}
        Text (UTF-8 unless ``encoding``) or binary.
    fsync : bool
        Flush to disk before the rename (files that must survive a crash, like a run's scores).

    Raises
    ------
    DataError
        When the path cannot be written (missing or read-only folder, a directory in the way, a
        full disk); the temporary file is removed and the target is left as it was.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_open(target) as fh:
    ...     _ = fh.write("done")
    >>> target.read_text(), [p.name for p in target.parent.iterdir()]
    ('done', ['out.txt'])
    """
    from dpaudit._errors import DataError

    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes with mode 'w' or 'wb', got {mode!r}")
    target = check_writable(path)
    tmp = temporary_sibling(target)
    try:
        try:
            handle = open(tmp, mode, encoding=(encoding or "utf-8") if mode == "w" else None)
        except OSError as exc:
            raise DataError(f"cannot write {str(target)!r}: {exc.strerror or exc}") from None
        with handle:
            yield handle
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise DataError(f"cannot write {str(target)!r}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; return the path."""
    with atomic_open(path, "w") as handle:
        handle.write(text)
    return Path(path)


def plain(value: Any) -> Any:
    """A numpy scalar as the Python scalar it holds; anything else unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> plain(np.int64(3)), plain("a")
    (3, 'a')
    """
    item = getattr(value, "item", None)
    return item() if callable(item) and getattr(value, "ndim", None) == 0 else value


def to_jsonable(value: Any, *, nonfinite: NonFinite = "string") -> Any:
    """``value`` as plain JSON data: dicts with str keys, lists, str, int, float, bool, None.

    Examples
    --------
    >>> import numpy as np
    >>> to_jsonable({"a": np.float64(1.5), "b": (np.inf, -np.inf), "c": np.arange(2)})
    {'a': 1.5, 'b': ['inf', '-inf'], 'c': [0, 1]}
    >>> to_jsonable([float("nan")], nonfinite="null")
    [None]
    """
    value = plain(value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, nonfinite=nonfinite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, nonfinite=nonfinite) for v in value]
    if hasattr(value, "tolist") and hasattr(value, "ndim"):  # a numpy array
        return to_jsonable(value.tolist(), nonfinite=nonfinite)
    if isinstance(value, float) and not math.isfinite(value):
        if nonfinite == "null":
            return None
        if nonfinite == "error":
            raise ValueError(f"JSON has no {value!r}; replace it by a finite number or null")
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise TypeError(f"cannot write {value!r} to JSON: a {type(value).__name__} is not JSON data")


#: The largest JSON document :func:`load_json` reads (a schema or a result is a few kilobytes).
MAX_JSON_BYTES = 64 * 2**20


def load_json(source: str | os.PathLike[str], *, what: str, hint: str, error: type[Exception]) -> Any:
    """Parsed JSON from a string holding an object (``{...}``) or from the file it names.

    Raises ``error`` with ``"<what> file '<path>' does not exist; <hint>"``, ``"… is a directory"``,
    ``"… is a named pipe (FIFO), not a regular file"`` (or a character device, such as ``/dev/null``,
    …), or ``"<what> is not valid JSON (<reason> at line <n>)"``.

    Examples
    --------
    >>> load_json('{"a": 1}', what="schema", hint="", error=ValueError)
    {'a': 1}
    >>> load_json("/dev/null", what="schema", hint="give a schema file", error=ValueError)
    Traceback (most recent call last):
    ...
    ValueError: schema file '/dev/null' is a character device, not a regular file; give a schema file
    """
    if not isinstance(source, (str, os.PathLike)):
        raise error(f"{what} must be a JSON text or the path of a JSON file, got {type(source).__name__}")
    text = str(source)
    if isinstance(source, os.PathLike) or not text.lstrip().startswith(("{", "[")):
        path = Path(source)
        shown = _shown_path(text)
        if not text.strip():  # Path("") is the current directory
            raise error(f"{what} is an empty text, neither a JSON object nor the path of a file; {hint}")
        try:
            path.stat()
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # e.g. a text too long to be a file name
                raise error(f"{what} is neither a JSON object nor the path of a readable file "
                            f"({exc.strerror or exc}: {shown}); {hint}") from None
        except ValueError:  # a NUL byte: no file name holds one
            raise error(f"{what} is neither a JSON object nor the path of a file (it holds a NUL byte: {shown}); "
                        f"{hint}") from None
        if path.is_dir():
            raise error(f"{what} file {shown} is a directory; {hint}")
        if path.exists() and not path.is_file():
            raise error(f"{what} file {shown} is {_special_kind(path)}, not a regular file; {hint}")
        if not path.is_file() and "\n" in text:  # no one names a file like that
            raise error(f"{what} is neither a JSON object nor the path of an existing file ({shown}); {hint}")
        if not path.is_file():
            raise error(f"{what} file {shown} does not exist; {hint}")
        if path.stat().st_size > MAX_JSON_BYTES:
            raise error(f"{what} file {shown} is larger than {MAX_JSON_BYTES // 2**20} MiB; is it the right file?")
        try:
            text = path.read_bytes().decode("utf-8-sig")  # a byte-order mark (Windows editors) is fine
        except UnicodeDecodeError as exc:
            raise error(f"{what} file {shown} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
        except OSError as exc:
            raise error(f"cannot read {what} file {shown}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise error(f"{what} JSON is nested too deeply to be a {what}") from None
    except json.JSONDecodeError as exc:
        raise error(f"{what} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise error(f"{what} is not valid JSON ({exc})") from None


def _shown_path(text: str, limit: int = 120) -> str:
    """``text`` quoted for a one-line message (newlines escaped), its middle cut when it is long (the
    text of a document passed where a path was expected)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit // 2]!r}…{text[-limit // 4:]!r} ({len(text):,} characters)"


def _special_kind(path: Path) -> str:
    """What a path that exists but is neither a file nor a directory is: a named pipe, a device, a socket."""
    mode = path.stat().st_mode
    kinds = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "a special file")
