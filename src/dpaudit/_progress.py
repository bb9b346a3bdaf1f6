"""Step lines on stderr for ``audit(..., progress=True)``: cost you can see outside a terminal too.

A notebook, a script piped to a file or a CI log shows stderr, where a terminal spinner draws nothing;
so ``progress=True`` writes one plain line per step (``dpaudit [0.4 s] counting rows for 3 criteria``),
with the seconds since the audit started. Lines about single blocks of a long measure (U_R reports
after every block) are thinned to one every :data:`EVERY` seconds, plus the last one, so a census-like
table's thousands of blocks do not flood the output. The clock decides only which lines are shown;
no result depends on it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from dpaudit._errors import DPAuditError

__all__ = ["EVERY", "progress_callback"]

#: Seconds between two shown block lines of one measure.
EVERY = 2.0


class StderrLines:
    """A progress callback writing each step as a line to ``sys.stderr`` (looked up at each call, so a
    notebook's or pytest's captured stream gets it)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.last_block = -EVERY

    def __call__(self, text: str) -> None:
        now = time.perf_counter() - self.start
        is_block = ": block " in text
        if is_block:
            done, _, total = text.rpartition(": block ")[2].partition(" ")[0].partition("/")
            if now - self.last_block < EVERY and done != total:
                return
            self.last_block = now
        print(f"dpaudit [{now:.1f} s] {text}", file=sys.stderr, flush=True)


def progress_callback(progress: Any) -> Callable[[str], None] | None:
    """The callback ``audit`` calls: None for ``False``/``None``, :class:`StderrLines` for ``True``,
    a callable as given; anything else is refused."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return StderrLines()
    if callable(progress):
        return progress
    raise DPAuditError(f"progress must be a callable taking one str, or True (step lines on stderr) or False, "
                       f"got {type(progress).__name__}")
