"""Exact vectorised categorical draws for the synthetic generators (many rows, one table per group)."""

from __future__ import annotations

from typing import Any

import numpy as np


def _normalised(weights: Any) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    return w / w.sum(axis=-1, keepdims=True)


class _Categorical:
    """Exact categorical draws from one probability table per group, for many rows at once.

    The CDFs of all groups are laid out as one increasing array ``g + cdf_g``; a draw for a row of
    group g with uniform u is the number of entries ``<= g + u``, minus ``g·K``. A guide table
    (Chen & Asau 1974) gives, for each of ``_RES`` buckets per unit, a lower bound on that number,
    so a few vectorised fix-up steps replace a binary search (numpy's searchsorted on unsorted keys
    was the generator's bottleneck).
    """

    _RES = 1 << 12  # a power of two: key · _RES is exact

    def __init__(self, probs: Any) -> None:
        p = np.atleast_2d(_normalised(probs))
        groups, self.width = p.shape
        cdf = np.cumsum(p, axis=1)
        cdf[:, -1] = 1.0  # so that row g ends exactly at g + 1
        self.flat = np.append((np.arange(groups)[:, None] + cdf).ravel(), np.inf)
        self.guide = np.searchsorted(self.flat, np.arange(groups * self._RES) / self._RES, side="right")

    def __call__(self, u: np.ndarray, group: np.ndarray | None = None) -> np.ndarray:
        key = u if group is None else group + u
        idx = self.guide[(key * self._RES).astype(np.intp)]
        while True:
            step = key >= self.flat[idx]
            if not step.any():
                break
            idx += step
        return idx if group is None else idx - group * self.width
