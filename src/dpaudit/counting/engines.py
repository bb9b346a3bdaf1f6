"""Counting engines, registered by name: where the rows of an audit are counted.

:data:`ENGINES` maps a name to an :class:`Engine`. ``audit(data, ..., engine=name)`` and ``dpaudit
fairness --engine NAME`` accept any registered name (:func:`check_engine`, before anything is read or
started). The data are then counted by :func:`engine_of`: the engine whose native frame they already
are (a PySpark DataFrame is counted by Spark whatever engine is named), else the engine named. It is
chosen once, when the input is opened (:func:`dpaudit.counting.frames.open_data`), and carried with
the opened frame to every later step. An engine that reads a path itself or copies a frame in
(:meth:`Engine.copies`) receives the data only after the criteria were checked against the data's
columns, so a bad criterion costs no copy.

Encoding and counting (:mod:`dpaudit.counting.encode`, :mod:`dpaudit.counting.count`) are written
once, on narwhals, for every engine; an engine supplies only what narwhals does not: getting the data
onto it (:meth:`Engine.to_frame`), turning its failures into one-line :class:`~dpaudit.DataError`
messages (:meth:`Engine.errors`), and, if its column names are parsed, reaching columns by position
(:meth:`Engine.positional_columns`). The default engine, ``"duckdb"``, takes the data as they are: a
CSV/Parquet path is opened with DuckDB (:func:`dpaudit.counting.files.open_file`), a frame is counted
by its own library.

Adding an engine is one module defining a class that satisfies :class:`Engine` (subclass it for the
defaults; its library imported only inside its methods) plus one entry in the registration below —
``tests/test_engines.py`` adds one from the test file alone. ``docs/engines.md`` describes the
registered engines. The protocol is the only thing the rest of the pipeline knows of an engine.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from dpaudit._errors import DataError
from dpaudit._validation import one_of
from dpaudit.counting.keys import IntegerKey
from dpaudit.counting.spark import SparkEngine

__all__ = ["Engine", "DuckDBEngine", "ENGINES", "DEFAULT_ENGINE", "check_engine", "engine_of", "describe"]


class Engine(Protocol):
    """What counting needs from an engine; the method bodies are the defaults a subclass inherits,
    right for an engine that counts data as they are."""

    #: the name ``audit(engine=...)`` and ``--engine`` take
    name: str
    #: one line for ``--engine``'s help and ``audit``'s docstring: what it reads, what it needs
    summary: str

    def check(self) -> None:
        """Refuse (DataError) when the engine cannot run here, e.g. its library is not installed;
        import nothing heavy and start nothing."""
        return None

    def owns(self, data: Any) -> bool:
        """Whether ``data`` is already a native frame of this engine (then this engine counts it,
        whichever engine was named)."""
        return False

    def copies(self, data: Any) -> bool:
        """Whether :meth:`to_frame` reads or copies ``data`` (the criteria are checked against the
        data's columns first)."""
        return not self.owns(data)

    def to_frame(self, data: Any, kinds: Mapping[str, str]) -> Any:
        """``data`` on this engine, as a frame narwhals wraps: a CSV/Parquet path read by the engine,
        each column in ``kinds`` typed as declared (``"text"``, ``"integer"`` or ``"words"``, as
        :func:`dpaudit.counting.files.open_file` types it), an in-memory frame or another engine's frame
        copied in."""
        return data

    def errors(self, what: str) -> AbstractContextManager[None]:
        """A context in which the engine's failures while counting ``what`` become one-line
        DataErrors (dpaudit's own errors pass through)."""
        return contextlib.nullcontext()

    def positional_columns(self, frame: Any, columns: Sequence[str]) -> tuple[Any, dict[str, str]]:
        """The narwhals ``frame`` reduced to ``columns``, each renamed by position to
        ``__dpaudit_<i>``, and the new name of each column.

        Engines parse the names they are given: DuckDB reads a dot as a field access
        (``default.payment.next.month``, a binned ``s.core``), quotes as quoting. Reaching a column by
        position (``nw.nth``) parses nothing, so every column is counted exactly as named; an engine
        whose ``nth`` still resolves names overrides this.
        """
        import narwhals.stable.v2 as nw

        position = {c: i for i, c in enumerate(frame.columns)}
        names = {c: f"__dpaudit_{position[c]}" for c in columns}
        return frame.select(*[nw.nth(position[c]).alias(names[c]) for c in columns]), names

    def integer_keys(self, frame: Any, keys: Mapping[str, IntegerKey]) -> Any | None:
        """The narwhals ``frame`` (of :meth:`positional_columns`) with each column named in ``keys``
        replaced by its :class:`~dpaudit.counting.keys.IntegerKey`, computed by the engine's own
        truncating integer division; None when the engine has none (then the general binning
        expression of :mod:`dpaudit.counting.encode` is used)."""
        return None


class DuckDBEngine(Engine):
    """The default: a CSV/Parquet path is read by DuckDB when counted (streamed, typed by the
    schema), any frame is counted by its own library (in-memory frames by numpy)."""

    name = "duckdb"
    summary = "a CSV/Parquet path is read by DuckDB, a frame is counted by its own library"

    def copies(self, data: Any) -> bool:
        return False

    def integer_keys(self, frame: Any, keys: Mapping[str, IntegerKey]) -> Any | None:
        """For a DuckDB relation: one projection, DuckDB's integer ``//`` (truncating)."""
        import narwhals.stable.v2 as nw

        if frame.implementation is not nw.Implementation.DUCKDB:
            return None
        native = frame.to_native()
        return nw.from_native(native.project(", ".join(
            f'{keys[c].sql(_quoted(c), div="//")} AS {_quoted(c)}' if c in keys else _quoted(c) for c in native.columns)))


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


#: The registered engines by name; a new engine's instance goes in this tuple.
ENGINES: dict[str, Engine] = {engine.name: engine for engine in (DuckDBEngine(), SparkEngine())}
#: The engine of an audit that names none.
DEFAULT_ENGINE = DuckDBEngine.name


def check_engine(name: Any) -> str:
    """``name`` if it is a registered engine that can run here; DataError otherwise.

    Examples
    --------
    >>> check_engine("duckdb")
    'duckdb'
    >>> check_engine("pandas")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DataError: engine must be one of duckdb, spark, got 'pandas'
    """
    one_of("engine", name, ENGINES, error=DataError)
    ENGINES[name].check()
    return str(name)


def engine_of(data: Any, name: str = DEFAULT_ENGINE) -> Engine:
    """The engine that counts ``data``: the registered engine whose native frame it is, else the
    engine ``name`` (checked by :func:`check_engine`)."""
    owner = next((engine for engine in ENGINES.values() if engine.owns(data)), None)
    return owner if owner is not None else ENGINES[name]


def describe() -> list[str]:
    """Each registered engine as ``name: summary``, the default marked."""
    return [f"{name}{' (default)' if name == DEFAULT_ENGINE else ''}: {engine.summary}"
            for name, engine in ENGINES.items()]
