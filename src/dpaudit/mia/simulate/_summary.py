"""A five-number summary with its standard error, for the simulators' reports."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["summary"]


def summary(values: np.ndarray) -> dict[str, float]:
    """Mean, sd (ddof = 1), standard error of the mean and quartiles of a 1-d sample."""
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    sd = float(values.std(ddof=1)) if n > 1 else float("nan")
    q = np.quantile(values, [0.0, 0.25, 0.5, 0.75, 1.0]) if n else np.full(5, np.nan)
    return {
        "n": int(n),
        "mean": float(values.mean()) if n else float("nan"),
        "sd": sd,
        "se": sd / math.sqrt(n) if n > 1 else float("nan"),
        "min": float(q[0]),
        "q25": float(q[1]),
        "median": float(q[2]),
        "q75": float(q[3]),
        "max": float(q[4]),
    }
