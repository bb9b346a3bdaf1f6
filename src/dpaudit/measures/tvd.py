"""U_MI^TVD: dependence of P and O given A via total variation (unfairness paper, Alg. 1; spec §2.1).

For one criterion with count tables ``c[a, p, o]`` (block ``a`` holding ``n_a`` rows):

    TVD_a = ½ Σ_{p,o} | c[a,p,o]/n_a − (r[a,p]/n_a)(s[a,o]/n_a) |
    U     = Σ_a (n_a/n) · 2 · TVD_a²            (empty blocks contribute 0)

Without admissible attributes there is one block and U = 2·TVD(Pr[P,O], Pr[P]⊗Pr[O])². U lies in
[0, 2), is 0 iff P ⊥ O | A holds in the data, and by Pinsker's inequality U ≤ I(P;O|A) in nats.
Replace-one sensitivity of the sum over F: 16|F|/n (derivation in docs/privacy.md).

The non-private baseline is the conditional mutual information
``I(P;O|A) = (1/n) Σ_{a,p,o} c·log(c·n_a / (r·s))`` over cells with c > 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._defaults import MEASURE_TITLES
from dpaudit.details.tvd import MIBaseline, TVDDetails
from dpaudit.measures._base import Measure
from dpaudit.measures._neighbours import NeighbourPair, WorstCase, family_r, moved
from dpaudit.measures._tables import as_blocks, signed_deviation

__all__ = ["TVD", "block_tvd", "u_mi_tvd", "mutual_information", "TVD_SENSITIVITY", "tvd_pair"]

#: Replace-one sensitivity of U_MI^TVD per criterion, times n (docs/privacy.md, "U_MI^TVD").
TVD_SENSITIVITY = 16.0


def block_tvd(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Block sizes ``n_a`` and ``TVD_a`` for every block at once (TVD of an empty block is 0).

    Examples
    --------
    >>> n_a, t = block_tvd(np.array([[[2, 0], [0, 2]]]))
    >>> n_a.tolist(), t.tolist()
    ([4.0], [0.5])
    """
    n_a, deviation = signed_deviation(counts)
    tvd = 0.5 * np.abs(deviation).sum(axis=(1, 2)) / np.where(n_a > 0, n_a, 1.0)
    return n_a, tvd


def u_mi_tvd(counts: np.ndarray) -> float:
    """U_MI^TVD of one criterion from its count table ``(blocks, P, O)``.

    Examples
    --------
    Flip test of spec §5 at t = 0.5 (N = 100 rows per group): U = t²/2.

    >>> u_mi_tvd(np.array([[75, 25], [25, 75]]))
    0.125
    """
    n_a, tvd = block_tvd(counts)
    n = n_a.sum()
    return float((n_a * 2.0 * tvd**2).sum() / n) if n > 0 else 0.0


def mutual_information(counts: np.ndarray, *, base: float = math.e) -> float:
    """Conditional mutual information I(P;O|A) of the empirical distribution (nats by default).

    Examples
    --------
    >>> round(mutual_information(np.array([[5, 0], [0, 5]]), base=2), 12)
    1.0
    """
    table = as_blocks(counts)
    n = table.sum()
    if n == 0:
        return 0.0
    n_a = table.sum(axis=(1, 2))[:, None, None]
    r = table.sum(axis=2)[:, :, None]
    s = table.sum(axis=1)[:, None, :]
    nz = table > 0
    ratio = np.ones_like(table)
    np.divide(table * n_a, r * s, out=ratio, where=nz)
    return float((table[nz] * np.log(ratio[nz])).sum() / n / np.log(base))


@dataclass(frozen=True)
class TVD(Measure):
    """U_MI^TVD as a registered measure (no options); curator view: the MI baseline per criterion.

    Examples
    --------
    >>> TVD().value(np.array([[[2, 0], [0, 2]]])), TVD().criterion_sensitivity(False, 1000)
    (0.5, 0.016)
    """

    name = "tvd"
    title = MEASURE_TITLES["tvd"]
    reference = "Vologdin, Tao, Gilad, PVLDB 19(9), Alg. 1; spec §2.1"
    sensitivity_formula = "16·|F|/n"
    upper = 2.0
    zero_iff_independent = True
    meaning = ("U_MI^TVD says how strongly the protected and outcome attributes depend on each other inside each "
               "block A = a: twice the squared total-variation distance between their joint distribution and the "
               "product of their marginals, weighted by the block's share Pr(a). It is 0 exactly when P ⊥ O | A "
               "holds, below 2 per criterion, and never above the conditional mutual information in nats (Pinsker).")
    unit = "U_MI^TVD (dimensionless; per criterion in [0, 2))"
    details_types = (TVDDetails,)

    def value(self, counts: np.ndarray) -> float:
        return u_mi_tvd(counts)

    def criterion_sensitivity(self, conditional: bool, n: int) -> float:
        return TVD_SENSITIVITY / n

    def details(self, tables: Sequence[Any]) -> TVDDetails:
        nats = [mutual_information(t.counts) for t in tables]
        return TVDDetails(tuple(MIBaseline(v, v / math.log(2)) for v in nats))

    @classmethod
    def worst_cases(cls) -> tuple[WorstCase, ...]:
        return (WorstCase(tvd_pair(), cls(), lambda change, n: (
            f"N·|ΔU| = {change * n:.3f} of the released 16 ({change * n / 16:.1%}); the proven supremum is 38/3 "
            f"≈ 12.667 ({change * n / (38 / 3):.1%} of it)")),)


def tvd_pair(m: int = 300) -> NeighbourPair:
    """docs/privacy.md's cross-block family: N·ΔU → 38/3 (12.52 at m = 300)."""
    a = family_r(4 * m, m)
    b = np.zeros_like(a)
    b[[1, 2, 3], [1, 2, 3]] = m  # Family A: diag(m, m, m) beside an empty row and column
    before = np.stack([a, b])
    return NeighbourPair("tvd", "p ⊥ o | a", before, moved(before, (0, 0, 0), (1, 0, 0)),
                         f"cross-block family (docs/privacy.md), m = {m}: block a = Family R, block b = Family A; the "
                         "lone (0,0) tuple of a moves to b's empty corner")
