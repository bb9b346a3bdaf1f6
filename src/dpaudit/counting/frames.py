"""Opening the input, once: any supported input becomes an :class:`Opened` — a narwhals frame, the
engine that counts it, and what to keep alive while it is read — that every later step takes as it is.

:func:`open_data` is the one place the input is opened or wrapped: a CSV/Parquet path through DuckDB
(:func:`~dpaudit.counting.files.open_file`, each declared text or integer column typed as declared,
:func:`declared_kinds`), a pandas, polars or pyarrow table, a DuckDB relation or a Spark DataFrame
wrapped by narwhals. The engine is chosen once (:func:`~dpaudit.counting.engines.engine_of`: the
engine whose native frame the data are, else the engine named). An engine that reads a path itself
or copies a frame in (:meth:`~dpaudit.counting.engines.Engine.copies`) receives the data only after
the criteria were checked against the data's columns (:func:`~dpaudit.counting.checks.check_counting`
on the header), so a bad criterion costs no copy. Reading domains off the data
(:func:`~dpaudit.counting.count.infer_schema`) and counting
(:func:`~dpaudit.counting.count.count_tables`) take the :class:`Opened` as it is and reach its
columns by position through the engine chosen here.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from dpaudit._errors import DataError
from dpaudit.counting.checks import check_counting
from dpaudit.counting.engines import DEFAULT_ENGINE, Engine, engine_of
from dpaudit.counting.files import EVERY_COLUMN, open_file
from dpaudit.criteria import Criterion
from dpaudit.schema import Categorical, Schema

__all__ = ["Opened", "open_data", "declared_kinds", "check_labels"]


@dataclass(eq=False)
class Opened:
    """The input, opened: read and counted through :attr:`frame`, by :attr:`engine`.

    Attributes
    ----------
    frame : narwhals DataFrame (in memory) or LazyFrame (counted by its engine)
    engine : Engine
        The engine that counts the frame: the later steps reach its columns by position through it
        (:meth:`~dpaudit.counting.Engine.positional_columns`).
    keep_alive : object or None
        What the frame needs open while it is read (the DuckDB connection behind a file); closed
        by :meth:`close` or at the end of a ``with`` block.
    """

    frame: Any
    engine: Engine
    keep_alive: Any = None

    def close(self) -> None:
        if self.keep_alive is not None:
            self.keep_alive.close()
            self.keep_alive = None

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def open_data(data: Any, criteria: Sequence[Criterion] = (), schema: Schema | str | None = None,
              engine: Engine | str = DEFAULT_ENGINE) -> Opened:
    """``data`` opened once for reading the columns of ``criteria``; an :class:`Opened` is returned
    as it is.

    A file's declared categorical columns among the criteria's are read as ``schema`` declares them
    (a :class:`~dpaudit.schema.Schema`; None: as DuckDB reads them; ``"infer"``: as DuckDB reads
    them, except that columns it would read as booleans, ``yes``/``no`` or ``true``/``false``, stay
    text, the words of the file). ``engine`` is the
    counting engine or the name of one (:data:`dpaudit.counting.ENGINES`); the engine whose native
    frame ``data`` is counts it whatever the name. An engine that copies the data gets them after
    :func:`~dpaudit.counting.checks.check_counting` accepted the criteria on the data's columns.
    Raises DataError for data that cannot be read.
    """
    if isinstance(data, Opened):
        return data
    counter = engine_of(data, engine) if isinstance(engine, str) else engine
    declared = schema if isinstance(schema, Schema) else None
    if not counter.copies(data):  # a frame is wrapped as it is: only a file's columns are typed
        kinds = _file_kinds(schema, declared, criteria) if _is_path(data) else {}
        frame, connection = _frame(data, kinds)
        return Opened(frame, counter, connection)
    kinds = _file_kinds(schema, declared, criteria)
    header, connection = _frame(data, {})  # lazy: a file's header only
    try:
        check_counting(criteria, header.columns, declared)
    finally:
        if connection is not None:
            connection.close()
    frame, connection = _frame(counter.to_frame(data, kinds), kinds)
    return Opened(frame, counter, connection)


def _file_kinds(schema: Any, declared: Schema | None, criteria: Sequence[Criterion]) -> dict[str, str]:
    """How a file's columns are typed: as ``declared`` declares the criteria's columns
    (:func:`declared_kinds`), or, under ``schema="infer"``, every column keeping the file's words
    (yes/no stay text)."""
    if isinstance(schema, str) and schema == "infer":
        return {EVERY_COLUMN: "words"}
    return declared_kinds(declared, [c for crit in criteria for c in crit.columns])


def _is_path(data: Any) -> bool:
    return isinstance(data, (str, Path))


def _frame(data: Any, kinds: dict[str, str]) -> tuple[Any, Any]:
    """``data`` as a narwhals frame (a path opened with DuckDB, typed by ``kinds``) and the DuckDB
    connection behind a file (None for a frame)."""
    import narwhals.stable.v2 as nw

    if _is_path(data):
        return open_file(Path(data), kinds)
    check_labels(_native_labels(data))  # before narwhals: it refuses a pandas frame's repeats itself
    try:
        frame = nw.from_native(data)
    except TypeError:
        raise DataError(
            f"cannot read data of type {type(data).__module__}.{type(data).__name__}; pass a pandas, "
            "polars or pyarrow table, a DuckDB relation, or the path of a CSV or Parquet file"
        ) from None
    if frame.implementation is not nw.Implementation.POLARS:  # polars names are unique strings
        check_labels(list(frame.columns))  # a DuckDB relation or a Spark DataFrame can repeat a name
    return frame, None


def _native_labels(data: Any) -> Any:
    """The column labels of a pandas-like frame (its ``columns`` Index) or a pyarrow table (its
    ``column_names``), else None (the labels are read off the narwhals frame)."""
    library = type(data).__module__.partition(".")[0]  # first: a polars LazyFrame's .columns resolves its schema
    if library in ("pandas", "modin", "cudf"):
        return getattr(data, "columns", None)
    if library == "pyarrow" and isinstance(getattr(data, "column_names", None), list):
        return data.column_names
    return None


def check_labels(labels: Any) -> None:
    """Refuse (DataError) column labels that are not unique strings: integers, tuples of a pandas
    MultiIndex, None, or a name that occurs twice, naming the offending labels and the fix.

    Columns are reached by name everywhere (criteria, schema, counting), so a label must be a string
    and name exactly one column.
    """
    if labels is None:
        return
    if getattr(labels, "nlevels", 1) > 1:
        shown = _show([tuple(label) for label in labels])
        raise DataError(f"the data's columns have a MultiIndex of {labels.nlevels} levels ({shown}); flatten it to "
                        "one string per column first, e.g. frame.columns = ['_'.join(map(str, c)) for c in "
                        "frame.columns]")
    labels = list(labels)
    wrong = [label for label in labels if not isinstance(label, str)]
    if wrong:
        kinds = ", ".join(sorted({type(label).__name__ for label in wrong}))
        raise DataError(f"column labels must be strings, but the data's {_show(wrong)} ({kinds}) "
                        f"{'is' if len(wrong) == 1 else 'are'} not; name the columns with strings first, e.g. "
                        "frame.columns = frame.columns.astype(str)")
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    repeated = [f"{label!r} ({n} times)" for label, n in seen.items() if n > 1]
    if repeated:
        raise DataError(f"the data repeat column names: {_show(repeated, quote=False)}; give every column a distinct "
                        "name first (rename or drop the duplicates)")


def _show(items: Sequence[Any], *, quote: bool = True, limit: int = 5) -> str:
    """The first ``limit`` of ``items`` (repr'd when ``quote``), with how many more."""
    shown = ", ".join(repr(i) if quote else str(i) for i in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def declared_kinds(schema: Schema | None, columns: Iterable[str] | None = None) -> dict[str, str]:
    """``"text"`` or ``"integer"`` for each categorical column of ``schema`` (among ``columns`` when
    given) whose declared values are all strings or all integers (booleans excluded): how
    :func:`~dpaudit.counting.files.open_file` and an engine's ``to_frame`` type a file's columns."""
    wanted = None if columns is None else set(columns)
    kinds: dict[str, str] = {}
    for name, dom in (schema.columns.items() if schema is not None else ()):
        if not isinstance(dom, Categorical) or (wanted is not None and name not in wanted):
            continue
        if all(isinstance(v, str) for v in dom.values):
            kinds[name] = "text"
        elif all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in dom.values):
            kinds[name] = "integer"
    return kinds
