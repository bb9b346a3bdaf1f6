"""The unfairness study's modules (``experiments/unfairness``), imported as its ``run.py`` imports them:
with the study's folder first on ``sys.path``, for the tests of its experiments."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

STUDY = Path(__file__).resolve().parents[1] / "experiments" / "unfairness"


@contextmanager
def study_modules(*names: str) -> Iterator[dict[str, ModuleType]]:
    """``{name: module}`` for the study's modules ``names``, its folder on ``sys.path`` while in use."""
    sys.path.insert(0, str(STUDY))
    try:
        yield {name: importlib.import_module(name) for name in names}
    finally:
        sys.path.remove(str(STUDY))
