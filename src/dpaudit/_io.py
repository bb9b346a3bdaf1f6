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

import json
import math
import os
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Literal

__all__ = ["atomic_open", "atomic_write_text", "temporary_sibling", "to_jsonable", "plain", "load_json"]

NonFinite = Literal["string", "null", "error"]


def temporary_sibling(path: str | os.PathLike[str]) -> Path:
    """A hidden, unique name next to ``path`` (same folder, so a rename onto ``path`` is atomic)."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", *, encoding: str | None = None,
                fsync: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing; on success move it onto ``path``.

    Parameters
    ----------
    path : path
        The file to create or replace. Its folder must exist.
    mode : {"w", "wb"}
        Text (UTF-8 unless ``encoding``) or binary.
    fsync : bool
        Flush to disk before the rename (files that must survive a crash, like a run's scores).

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_open(target) as fh:
    ...     _ = fh.write("done")
    >>> target.read_text(), [p.name for p in target.parent.iterdir()]
    ('done', ['out.txt'])
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes with mode 'w' or 'wb', got {mode!r}")
    target = Path(path)
    tmp = temporary_sibling(target)
    try:
        with open(tmp, mode, encoding=(encoding or "utf-8") if mode == "w" else None) as handle:
            yield handle
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, target)
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


def load_json(source: str | os.PathLike[str], *, what: str, hint: str, error: type[Exception]) -> Any:
    """Parsed JSON from a string holding an object (``{...}``) or from the file it names.

    Raises ``error`` with ``"<what> file '<path>' does not exist; <hint>"`` or
    ``"<what> is not valid JSON (<reason> at line <n>)"``.

    Examples
    --------
    >>> load_json('{"a": 1}', what="schema", hint="", error=ValueError)
    {'a': 1}
    """
    text = str(source)
    if isinstance(source, os.PathLike) or not text.lstrip().startswith("{"):
        path = Path(source)
        if not path.is_file():
            raise error(f"{what} file {str(path)!r} does not exist; {hint}")
        text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{what} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
