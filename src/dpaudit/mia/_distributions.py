"""The four distribution functions an evaluation reads, straight from :mod:`scipy.special`.

``scipy.stats`` costs ~0.5 s to import (its whole distribution zoo and optimisers) against ~0.2 s for
``scipy.special``, which every evaluation loads anyway; ``dpaudit mia evaluate FILE`` paid it on every
run (issue 25, "Sub-second start"). These are the ufuncs that scipy.stats's own methods call for
arguments inside the support (``norm.isf = -ndtri``, ``t.isf = -stdtrit(df, q)``, ``beta.ppf =
_beta_ppf``, ``chi2.sf = chdtrc``), so each returns the same floats as the ``scipy.stats`` call named
beside it (``tests/test_mia_distributions.py`` compares them bit for bit, edges included).

Examples
--------
>>> round(float(norm_isf(0.05)), 4), round(float(t_isf(0.05, 10)), 4), float(chi2_sf(0.0, 2))
(1.6449, 1.8125, 1.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special
from scipy.special import _ufuncs

__all__ = ["norm_isf", "t_isf", "beta_ppf", "chi2_sf"]


def _scalar_or_array(value: np.ndarray) -> Any:
    """numpy's scalar for a 0-d result (as ``scipy.stats`` returns), else the array."""
    return value[()] if value.ndim == 0 else value


def norm_isf(q: Any) -> Any:
    """``scipy.stats.norm.isf(q)`` for q in (0, 1): the standard normal's upper-q quantile."""
    return _scalar_or_array(-np.asarray(special.ndtri(q), dtype=np.float64))


def t_isf(q: Any, df: Any) -> Any:
    """``scipy.stats.t.isf(q, df)`` for q in (0, 1) and finite df > 0: Student t's upper-q quantile."""
    return _scalar_or_array(-np.asarray(special.stdtrit(df, q), dtype=np.float64))


def beta_ppf(q: Any, a: Any, b: Any) -> Any:
    """``scipy.stats.beta.ppf(q, a, b)`` for q in (0, 1) and a, b > 0: the Beta(a, b) q-quantile."""
    return _scalar_or_array(np.asarray(_ufuncs._beta_ppf(q, a, b), dtype=np.float64))


def chi2_sf(x: Any, df: Any) -> Any:
    """``scipy.stats.chi2.sf(x, df)`` for x ≥ 0 (or NaN) and df > 0: the χ²(df) upper tail at x."""
    return _scalar_or_array(np.asarray(special.chdtrc(df, x), dtype=np.float64))
