"""Shared views of a criterion's count table ``c[a, p, o]`` used by every measure."""

from __future__ import annotations

import numpy as np


def as_blocks(counts: np.ndarray) -> np.ndarray:
    """Counts as float64 of shape (blocks, P, O); a 2-D table is one block."""
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim == 2:
        table = table[None]
    if table.ndim != 3:
        raise ValueError(f"count table must have shape (blocks, P, O) or (P, O), got {table.shape}")
    return table


def signed_deviation(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Block sizes ``n_a`` and observed minus expected counts ``c − r·s/n_a`` (0 in empty blocks)."""
    table = as_blocks(counts)
    n_a = table.sum(axis=(1, 2))
    safe = np.where(n_a > 0, n_a, 1.0)
    expected = table.sum(axis=2)[:, :, None] * table.sum(axis=1)[:, None, :] / safe[:, None, None]
    return n_a, table - expected
