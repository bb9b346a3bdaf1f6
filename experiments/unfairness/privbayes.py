"""plot_1's PrivBayes-style proxy of mutual information (raw and with the +0.5 offset), reimplemented.

Source: the authors' ``unused_measures/proxy_mutual_information_privbayes.py``
(``ProxyMutualInformationPrivbayes.calculate(s, o, a, add_offset)``), which ``main.py``'s ``create_plot_1``
runs on the raw CSV beside MI and U_MI^TVD. Its definition, restated on counts:

1. Each of S, O (and A) is label-encoded over its *observed* values in sorted order (``LabelEncoder``:
   lexicographic for strings, numeric for numbers) and written in ``b = ⌈log₂ m⌉`` bits, most
   significant first (``format(code, "0{b}b")``).
2. For every bit i of S and j of O (and k of A) where the S-bit and the O-bit each take both values,
   the score F of the 2×2 (×2) table of those bits is computed; the proxy is the plain mean of the scores.
   (With every attribute binary the reference code takes a direct path that is this with one bit each.)
3. F of a 2×2 table c[s, o] over N rows (unconditional): the PrivBayes score
   ``max_{a, b} (a + b − N) / N`` over the ways of giving each outcome value o either its s = 0 count
   to ``a`` or its s = 1 count to ``b`` (each capped at ⌈N/2⌉ = ``(N + 1) // 2``), a dynamic programme
   over o in order — only this direction (t = 0) is returned.
4. Conditional: per value of the A-bit with N_a > 0 rows, the same score in *both* directions (t = 0:
   over o, splitting s; t = 1: over s, splitting o), each weighted by N_a; the sum over slices and
   directions divided by Σ 2·N_a.
5. The offset version adds 0.5 ("non-negative adjustment"); the reference code rounds to 4 decimals,
   this module does not (``round(x, 4)`` gives the printed value).

F lies in [−1, 0] (−0.5 on a table with no dependence and balanced groups, 0 at a perfect split), so
"+0.5" does not make it non-negative in general. :func:`privbayes_proxy` works on a frame;
:func:`proxy_from_counts` on a joint count array whose axes are already in the encoder's order (empty
levels are dropped, as the encoder never sees them), so a dpaudit count table qualifies only when its
declared categories are sorted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit.criteria import Criterion, parse_criteria

OFFSET = 0.5


def dp_score(pairs: list[tuple[int, int]], total: int) -> float:
    """PrivBayes' dynamic programme (step 3): ``pairs`` = per step (count to ``a``, count to ``b``);
    returns max (a + b − total) over the reachable (a, b), a and b capped at (total + 1) // 2.

    >>> dp_score([(30, 10), (20, 40)], 100)  # a = 30, b = 40 or a = 50 (capped), b = 0 …
    -30
    """
    cap = (total + 1) // 2
    current = {0: 0}
    for to_a, to_b in pairs:
        nxt: dict[int, int] = {}
        for a, b in current.items():
            a_new, b_new = min(a + to_a, cap), min(b + to_b, cap)
            nxt[a_new] = max(nxt.get(a_new, 0), b)
            nxt[a] = max(nxt.get(a, 0), b_new)
        current = nxt
    return max(a + b - total for a, b in current.items())


def f_unconditional(c: np.ndarray) -> float:
    """F of a 2×2 count table c[s, o] (step 3, direction t = 0)."""
    total = int(c.sum())
    return dp_score([(int(c[0, o]), int(c[1, o])) for o in range(2)], total) / total


def f_conditional(c: np.ndarray) -> float:
    """F of a 2×2×k count table c[s, o, a] (step 4: both directions, slices weighted by their rows)."""
    num = den = 0.0
    for a in range(c.shape[2]):
        sub = c[:, :, a]
        total = int(sub.sum())
        if total == 0:
            continue
        for pairs in ([(int(sub[0, o]), int(sub[1, o])) for o in range(2)],
                      [(int(sub[s, 0]), int(sub[s, 1])) for s in range(2)]):
            num += dp_score(pairs, total) / total * total
            den += total
    return num / den if den > 0 else 0.0


def _bits(levels: int) -> np.ndarray:
    """(levels, b) 0/1 matrix: code → its b = ⌈log₂ levels⌉ bits, most significant first."""
    width = int(math.ceil(math.log2(levels))) if levels > 1 else 0
    codes = np.arange(levels)
    return np.array([(codes >> (width - 1 - i)) & 1 for i in range(width)], dtype=np.int64).T.reshape(levels, width)


def proxy_from_counts(joint: np.ndarray, *, offset: bool = False) -> float:
    """The proxy (step 2) from a joint count array N[s, o] or N[s, o, a], axes in the encoder's order."""
    counts = np.asarray(joint, dtype=np.int64)
    for axis in range(counts.ndim):  # the encoder sees observed values only
        others = tuple(i for i in range(counts.ndim) if i != axis)
        counts = np.compress(counts.sum(axis=others) > 0, counts, axis=axis)
    onehot = [np.stack([1 - b, b], axis=-1) for b in (_bits(m) for m in counts.shape)]  # (levels, bits, 2)
    scores = []
    if counts.ndim == 2:
        s_bits, o_bits = onehot
        for i in range(s_bits.shape[1]):
            for j in range(o_bits.shape[1]):
                c = np.einsum("so,sx,oy->xy", counts, s_bits[:, i], o_bits[:, j])
                if (c.sum(axis=1) > 0).all() and (c.sum(axis=0) > 0).all():
                    scores.append(f_unconditional(c))
    else:
        s_bits, o_bits, a_bits = onehot
        for i in range(s_bits.shape[1]):
            for j in range(o_bits.shape[1]):
                for k in range(a_bits.shape[1]):
                    c = np.einsum("soa,sx,oy,az->xyz", counts, s_bits[:, i], o_bits[:, j], a_bits[:, k])
                    if (c.sum(axis=(1, 2)) > 0).all() and (c.sum(axis=(0, 2)) > 0).all():
                        scores.append(f_conditional(c))
    value = float(np.mean(scores)) if scores else 0.0
    return value + OFFSET if offset else value


def _codes(values: Any) -> tuple[np.ndarray, int]:
    """LabelEncoder's codes: the rank of each value among the sorted observed values."""
    levels, codes = np.unique(np.asarray(values), return_inverse=True)
    return codes.reshape(-1), len(levels)


def joint_counts(frame: Any, criterion: Criterion | str) -> np.ndarray:
    """N[s, o(, a)] over the rows with no missing value in the criterion's columns, encoder order."""
    crit = parse_criteria([criterion])[0] if isinstance(criterion, str) else criterion
    if len(crit.protected) != 1 or len(crit.outcome) != 1 or len(crit.admissible) > 1:
        raise ValueError("the PrivBayes proxy takes one protected, one outcome and at most one admissible column")
    columns = [crit.protected[0], crit.outcome[0], *crit.admissible]
    data = frame[columns].dropna()
    encoded = [_codes(data[c].to_numpy()) for c in columns]
    joint = np.zeros(tuple(m for _, m in encoded), dtype=np.int64)
    np.add.at(joint, tuple(codes for codes, _ in encoded), 1)
    return joint


def privbayes_proxy(frame: Any, schema: Any, criterion: Criterion | str) -> tuple[float, float]:
    """(raw, offset) PrivBayes-style proxy of the criterion on the frame (``schema`` is not needed: the
    reference code encodes the raw values; kept for the callers' uniform signature)."""
    del schema
    value = proxy_from_counts(joint_counts(frame, criterion))
    return value, value + OFFSET
