"""U_TC's private naming of top cells, and how reliable each name is (docs/privacy.md, "Naming the top
cells privately" and "How reliable the names are"; issue 26).

Of U_TC's ε, :data:`NAMING_SHARE` (3/4) names cells when it names any, the rest releases the value. Of
the naming ε, 1 − :data:`RELIABILITY_SHARE` (4/5) selects the m cells by report-noisy-top-k over the
MD vector of every declared cell (L∞ sensitivity Δ∞ = 3/n, OpenDP ``make_noisy_top_k``), and
:data:`RELIABILITY_SHARE` (1/5) releases, with OpenDP Laplace noise, the vector

    v = (MD of named cell 1, …, MD of named cell m, t),   t = the (m+1)-th largest MD,

whose L1 replace-one sensitivity is (m+1)/n: each entry is an MD or an order statistic of the MD
vector, and no MD moves by more than 1/n (the tight bound of docs/privacy.md, "U_TC", Step 2′; the
selection keeps the looser declared 3/n its self-check was measured against). A named cell is among the true top m exactly when its MD
exceeds t (ties aside), so its **reliability** is

    P(MD_i > t | released) = F(ṽ_i − t̃),   F = CDF of the difference of two Laplace(b) draws,
    F(z) = 1 − ½·(1 + z/(2b))·e^(−z/b) for z ≥ 0,   F(z) = 1 − F(−z) for z < 0,

the posterior under a flat prior on (MD_i, t) given the released ṽ_i, t̃ and the public scale b: it
is computed from released values only, so it costs no ε beyond the release. The Laplace noise is
fresh (independent of the selection), so ṽ_i is unbiased for MD_i even though cell i was selected.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dpaudit.details.contribution import ReliabilityInfo, SelectionInfo

__all__ = ["NAMING_SHARE", "RELIABILITY_SHARE", "MD_LINF_SENSITIVITY", "MD_LINF_TIGHT", "NamedRelease", "name_privately",
           "reliability", "naming_epsilons"]

#: L∞ replace-one sensitivity of the MD vector, times n, that the selection declares: no cell's MD moves
#: by more than 3/n (docs/privacy.md, "U_TC", Step 2; Step 2′ tightens it to 1/n).
MD_LINF_SENSITIVITY = 3.0

#: The share of U_TC's ε spent on naming cells privately (when it names any): 3/4, measured on Adult at
#: ε = 1 (benchmarks/bench_names.py): the value's sensitivity is so small that 1/4 of the ε still pins it.
NAMING_SHARE = 0.75
#: The share of the naming ε spent on the reliability release (the rest selects the cells).
RELIABILITY_SHARE = 0.2
#: ‖ΔMD‖∞ · n: the tight bound of docs/privacy.md, "U_TC", Step 2′ (every |Δd| ≤ 1), which the
#: reliability release uses (the selection declares 3/n, :data:`MD_LINF_SENSITIVITY`).
MD_LINF_TIGHT = 1.0


class NamedRelease(NamedTuple):
    """What :func:`name_privately` releases: the chosen indices (noisy rank order), how they were chosen,
    and per chosen cell its noisy MD and reliability (None without a reliability release)."""

    chosen: tuple[int, ...]
    selection: SelectionInfo
    noisy_md: tuple[float | None, ...]
    reliability: tuple[float | None, ...]
    rated: ReliabilityInfo | None


def naming_epsilons(epsilon: float, m: int, candidates: int) -> tuple[float, float]:
    """The ε of the selection and of the reliability release, out of the naming ε ``epsilon``.

    When every candidate cell is named (m ≥ candidates) nothing is uncertain: the selection gets it all
    and no reliability is released (each named cell is surely among the top m).

    Examples
    --------
    >>> naming_epsilons(0.25, 5, 442), naming_epsilons(0.25, 4, 4)
    ((0.2, 0.05), (0.25, 0.0))
    """
    if m >= candidates:
        return epsilon, 0.0
    return epsilon * (1.0 - RELIABILITY_SHARE), epsilon * RELIABILITY_SHARE


def reliability(noisy_md: float, noisy_threshold: float, scale: float) -> float:
    """P(MD > t) given Laplace(scale)-noisy releases of both: F(noisy_md − noisy_threshold), F the CDF of
    the difference of two independent Laplace(scale) draws (module docstring).

    Examples
    --------
    >>> reliability(0.5, 0.5, 0.1), round(reliability(0.8, 0.5, 0.1), 4), round(reliability(0.2, 0.5, 0.1), 4)
    (0.5, 0.9378, 0.0622)
    """
    z = (noisy_md - noisy_threshold) / scale
    tail = 0.5 * (1.0 + abs(z) / 2.0) * math.exp(-abs(z))
    return 1.0 - tail if z >= 0 else tail


def name_privately(scores: np.ndarray, m: int, *, n: int, epsilon: float, seed: int | None = None) -> NamedRelease:
    """Select m of ``scores`` (the MD vector of every declared cell, n rows) privately and rate each.

    ``epsilon`` is the whole naming ε: :func:`naming_epsilons` splits it between the selection
    (:func:`dpaudit.privacy.noisy_top_k`, ``scale = 2·m·(3/n)/ε_select``, only the indices released,
    in noisy rank order) and the reliability release (:func:`dpaudit.privacy.laplace_vector`, L1
    sensitivity (m+1)/n). ``seed``: the seeded test path, not private.
    """
    from dpaudit.privacy._mechanisms import derive_seed, laplace_vector, noisy_top_k

    m = int(min(m, scores.size))
    eps_select, eps_reliability = naming_epsilons(epsilon, m, scores.size)
    release = noisy_top_k(scores, m, sensitivity_linf=MD_LINF_SENSITIVITY / n, epsilon=eps_select, seed=seed)
    info = SelectionInfo(release.epsilon, release.mechanism, release.sensitivity_linf, release.scale, release.dp)
    chosen = tuple(int(i) for i in release.indices)
    if eps_reliability <= 0 or not chosen:
        return NamedRelease(chosen, info, (None,) * len(chosen), (None,) * len(chosen), None)
    threshold = float(np.partition(scores, scores.size - m - 1)[scores.size - m - 1])  # the (m+1)-th largest
    vector = laplace_vector(np.append(scores[list(chosen)], threshold), sensitivity_l1=(m + 1) * MD_LINF_TIGHT / n,
                            epsilon=eps_reliability, seed=derive_seed(seed, 1))
    *noisy, noisy_threshold = vector.values
    sure = tuple(reliability(v, noisy_threshold, vector.scale) for v in noisy)
    rated = ReliabilityInfo(vector.epsilon, vector.mechanism, vector.sensitivity_l1, vector.scale, noisy_threshold,
                            vector.dp)
    return NamedRelease(chosen, info, tuple(noisy), sure, rated)
