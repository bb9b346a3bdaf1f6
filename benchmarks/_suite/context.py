"""What every section of docs/benchmarks.md shares: the :class:`SectionResult` it returns, the run's
:class:`Context` (the Adult frame, the census files, section 1's census rows) and the progress log.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import adapters
from .config import Config
from .timing import Comparison, median

#: How a section that raised is marked in its notes (run_all.py then exits with status 1).
FAILED = "section failed:"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class SectionResult:
    key: str
    mode: str
    comparisons: list[Comparison]
    env: dict[str, Any]
    load_end: list[float]
    seconds: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["comparisons"] = [c.to_dict() for c in self.comparisons]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SectionResult:
        fields = dict(data)
        fields["comparisons"] = [Comparison.from_dict(c) for c in fields["comparisons"]]
        return cls(**fields)


class Context:
    """What sections share within one run: the Adult frame, the census files, section 1's census rows."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self._adult: tuple[Any, Any] | str | None = None
        self.census_rows: dict[int, list[Comparison]] = {}

    def adult(self) -> tuple[Any, Any] | str:
        if self._adult is None:
            self._adult = adapters.adult()
        return self._adult

    def census(self, rows: int) -> Path:
        t0 = time.perf_counter()
        path, reused = adapters.census_file(rows, self.cfg.data_dir, seed=self.cfg.seed)
        log(f"  census data {rows:,} rows: {path} "
            + ("(reused)" if reused else f"(generated in {time.perf_counter() - t0:.1f} s)"))
        return path


def _logged(comps: list[Comparison]) -> list[Comparison]:
    for c in comps:
        log(f"    {c.workload}, {c.size}: {c.a_name}: {c.ratio:.3g}× ({median(c.a):.4g} s vs "
            f"{median(c.b):.4g} s, {c.b_name})")
    return comps
