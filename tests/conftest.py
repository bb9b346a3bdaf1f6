"""Shared fixtures."""

import os
from pathlib import Path

import pytest


@pytest.fixture
def adult_available():
    """Skip (locally, with the reason) when the real Adult files are absent; never skip in CI."""
    root = os.environ.get("DPAUDIT_DATA")
    if root and (Path(root) / "adult" / "adult.data.gz").is_file():
        return Path(root)
    if os.environ.get("CI"):
        pytest.fail("CI must run with DPAUDIT_DATA pointing at the shared datasets folder (adult/ missing)")
    pytest.skip("real Adult files not found: set DPAUDIT_DATA to the shared datasets folder")
