"""Small array helpers shared across modules."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["frozen", "as_list"]


def frozen(array: Any) -> np.ndarray:
    """``array`` as a C-contiguous, read-only numpy array (no copy when it already is contiguous).

    Examples
    --------
    >>> a = frozen(np.arange(3))
    >>> a.flags.writeable
    False
    """
    out = np.ascontiguousarray(array)
    out.setflags(write=False)
    return out


def as_list(value: Any) -> Any:
    """A scalar or array as plain Python values (``numpy.asarray(value).tolist()``; floats stay floats)."""
    return np.asarray(value).tolist()
