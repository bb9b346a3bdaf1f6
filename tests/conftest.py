"""Shared fixtures."""

import os
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def adult_available():
    """Skip (locally, with the reason) when the real Adult files are absent; never skip in CI."""
    root = os.environ.get("DPAUDIT_DATA")
    if root and (Path(root) / "adult" / "adult.data.gz").is_file():
        return Path(root).resolve()  # tests may change the working folder
    if os.environ.get("CI"):
        pytest.fail("CI must run with DPAUDIT_DATA pointing at the shared datasets folder (adult/ missing)")
    pytest.skip("real Adult files not found: set DPAUDIT_DATA to the shared datasets folder")


@pytest.fixture(scope="module")
def data_root():
    """The shared datasets folder (``DPAUDIT_DATA``); skip locally when unset, never in CI."""
    root = os.environ.get("DPAUDIT_DATA")
    if not root:
        if os.environ.get("CI"):
            pytest.fail("CI must run with DPAUDIT_DATA pointing at the shared datasets folder")
        pytest.skip("DPAUDIT_DATA is not set: point it at the shared datasets folder to test the real files")
    return Path(root).resolve()  # tests may change the working folder


def _flip_table(n_per_group: int, t: float) -> np.ndarray:
    """Spec §5: balanced 2×2 table, a fraction t of (male, 0) flipped to 1 and of (female, 1) to 0."""
    half = n_per_group // 2
    moved = round(t * half)
    return np.array([[half + moved, half - moved], [half - moved, half + moved]])


@pytest.fixture
def flip_table():
    """The flip-test table builder ``flip_table(n_per_group, t)``."""
    return _flip_table


class _FakeResponse:
    """What ``urllib.request.urlopen`` returns, serving fixed bytes (for offline download tests)."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def read(self) -> bytes:
        return self.body

    def __enter__(self) -> "_FakeResponse":
        return self

    def __exit__(self, *exc: object) -> bool:
        return False


@pytest.fixture
def fake_response():
    """The response class a fake ``urlopen`` returns: ``fake_response(body_bytes)``."""
    return _FakeResponse
