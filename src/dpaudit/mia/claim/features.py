"""The audit's feature space: rows of L2 norm ≤ 1, built from the DECLARED schema only.

A DP learner's guarantee (diffprivlib's logistic regression, DP-SGD with per-example clipping)
assumes a bound on every record's norm that does not depend on the data: a bound read off the data
(a column's observed minimum and maximum) would itself leak the records at the extremes. So every
transformation here comes from the :class:`~dpaudit.schema.Schema`:

- a :class:`~dpaudit.schema.Categorical` column → one-hot over its declared values (a missing entry
  → the declared ``missing`` value; a value outside the domain is refused);
- a :class:`~dpaudit.schema.Binned` column → min–max scaled to its declared range
  ``[lo, hi]`` = its smallest and largest *finite* bin edges, and clipped to [0, 1]: an open-ended
  outer bin (``[70, inf)``) is clipped to its finite edge, so those records keep the schema's own
  resolution there (one bin). A Binned column with fewer than two finite edges declares no range
  and is refused, naming what to declare.

Each of the k feature columns then contributes at most 1 to ‖x‖² (one 1 of a one-hot block, or a
value in [0, 1]), so dividing by √k gives ‖x‖₂ ≤ 1 for every record.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit._errors import DataError

__all__ = ["declared_range", "unit_features"]


def declared_range(column: str, domain: Any) -> tuple[float, float]:
    """``(lo, hi)``: the smallest and largest finite bin edges of a Binned column, else a DataError.

    Examples
    --------
    >>> from dpaudit.schema import Binned
    >>> declared_range("age", Binned([17, 30, 70, float("inf")]))
    (17.0, 70.0)
    """
    finite = [float(e) for e in domain.edges if math.isfinite(e)]
    if len(finite) < 2:
        raise DataError(f"numeric column {column!r} declares no range (bin edges {list(domain.edges)}): the audit "
                        "scales it to its declared bounds, never to the data's; declare at least two finite bin "
                        f"edges in the schema, e.g. Binned([0, 100]) for values in [0, 100]")
    return finite[0], finite[-1]


def _one_hot(column: str, values: Any, domain: Any) -> np.ndarray:
    by_text = {str(v): i for i, v in enumerate(domain.values)}
    codes = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        code = domain.code_of(v)
        if code is None and v is not None:
            code = by_text.get(str(v))
        if code is None:
            raise DataError(f"column {column!r} holds {v!r}, outside its declared domain; add it to the schema "
                            "(or declare a missing value) or fix the data")
        codes[i] = code
    out = np.zeros((len(values), len(domain.values)))
    out[np.arange(len(values)), codes] = 1.0
    return out


def unit_features(frame: Any, columns: list[str], schema: Any) -> np.ndarray:
    """The float64 matrix of ``frame[columns]`` in the unit-ball space of the module docstring.

    Raises
    ------
    DataError
        A column the schema does not declare, a Binned column without a declared range, a value
        outside a categorical domain, a numeric value that is not a finite number.
    """
    from dpaudit.schema import Binned, Categorical

    if not columns:
        raise DataError("the audit needs at least one feature column")
    blocks = []
    for c in columns:
        if schema is None or c not in schema:
            raise DataError(f"feature column {c!r} has no declared domain; the audit builds its features from the "
                            "schema only: declare it (Categorical values, or Binned with finite edges) in --schema")
        domain = schema[c]
        values = frame[c].to_numpy(dtype=object)
        if isinstance(domain, Categorical):
            blocks.append(_one_hot(c, values, domain))
        elif isinstance(domain, Binned):
            lo, hi = declared_range(c, domain)
            try:
                x = np.asarray(values, dtype=np.float64)
            except (TypeError, ValueError):
                raise DataError(f"column {c!r} is declared numeric (Binned) but holds non-numbers") from None
            if not np.all(np.isfinite(x)):
                raise DataError(f"numeric column {c!r} holds missing or infinite values; impute or drop them")
            blocks.append(np.clip((x - lo) / (hi - lo), 0.0, 1.0)[:, None])
        else:  # pragma: no cover - the schema has two domain types
            raise DataError(f"column {c!r}: unsupported domain {type(domain).__name__}")
    return np.hstack(blocks) / math.sqrt(len(columns))
