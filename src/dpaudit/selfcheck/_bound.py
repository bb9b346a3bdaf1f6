"""The privacy loss of a release on one pair: the empirical ε lower bound from its draws (a test chosen
on one half, evaluated on the other) and the exact loss of report-noisy-max (permute-and-flip)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.mia.metrics import epsilon_lower_bound_ci
from dpaudit.selfcheck._params import SELECTION_LEVEL


# ---------------------------------------------------------------------------------------------------
# Exact loss of report-noisy-max (OpenDP's max-divergence selection is permute-and-flip)
# ---------------------------------------------------------------------------------------------------
def permute_and_flip_probabilities(scores: Any, scale: float) -> np.ndarray:
    """Exact selection probabilities of permute-and-flip (McKenna & Sheldon 2020) with ``scale``.

    OpenDP's ``make_noisy_top_k(k=1)`` under max-divergence (exponential noise) is this mechanism:
    visit the candidates in random order and stop at r with probability p_r = exp((q_r − max q)/scale).
    Then P(r) = p_r · Σ_m e_m(1 − p_j : j ≠ r) / (C·binom(C−1, m)), e_m the elementary symmetric sums.

    Examples
    --------
    >>> permute_and_flip_probabilities([0.0, 0.0], 1.0).tolist()
    [0.5, 0.5]
    """
    q = np.asarray(scores, dtype=np.float64).ravel()
    c = q.size
    p = np.exp((q - q.max()) / scale)
    weight = np.array([1.0 / (c * math.comb(c - 1, m)) for m in range(c)])
    out = np.empty(c)
    for r in range(c):
        e = np.zeros(c)
        e[0] = 1.0
        for j in range(c):
            if j != r:
                e[1:] = e[1:] + (1.0 - p[j]) * e[:-1]
        out[r] = p[r] * float(weight @ e)
    return out


def _selection_loss(s0: np.ndarray, s1: np.ndarray, scale: float) -> float:
    """The exact privacy loss of report-noisy-max (k = 1) between the scores of D and D′ at ``scale``."""
    return float(np.abs(np.log(permute_and_flip_probabilities(s0, scale))
                        - np.log(permute_and_flip_probabilities(s1, scale))).max())


# ---------------------------------------------------------------------------------------------------
# The test: chosen on the first half, evaluated on the second
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Test:
    upper: bool          # the event is {statistic ≥ t} (else {statistic < t})
    positive_is_d1: bool  # the event is more likely under D′ (else under D)
    threshold: float


def _event_counts(stat: np.ndarray, thresholds: np.ndarray, upper: bool) -> np.ndarray:
    s = np.sort(stat)
    below = np.searchsorted(s, thresholds, side="left")  # #{stat < t}
    return s.size - below if upper else below


def _choose(s0: np.ndarray, s1: np.ndarray) -> _Test:
    pooled = np.unique(np.concatenate([s0, s1]))
    if pooled.size > 1024:
        pooled = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, 1025)))
    best: tuple[float, _Test] = (-1.0, _Test(True, True, float(pooled[0])))
    for upper in (True, False):
        c0, c1 = _event_counts(s0, pooled, upper), _event_counts(s1, pooled, upper)
        for positive_is_d1, (kp, np_), (kn, nn) in ((True, (c1, s1.size), (c0, s0.size)),
                                                    (False, (c0, s0.size), (c1, s1.size))):
            eps = np.atleast_1d(epsilon_lower_bound_ci(kp, np_, kn, nn, level=SELECTION_LEVEL).epsilon)
            i = int(np.argmax(eps))
            if eps[i] > best[0]:
                best = (float(eps[i]), _Test(upper, positive_is_d1, float(pooled[i])))
    return best[1]


@dataclass(frozen=True)
class _Outcome:
    test: str
    k_tp: int
    n_pos: int
    k_fp: int
    n_neg: int
    epsilon: float
    point: float


def _audit(out0: np.ndarray, out1: np.ndarray, statistic: Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], np.ndarray]],
           describe: Callable[[_Test], str], level: float, rng: np.random.Generator) -> _Outcome:
    """Pick the test on a random half of each sample, evaluate it on the other half, bound ε."""
    i0, i1 = rng.permutation(len(out0)), rng.permutation(len(out1))
    h0, h1 = len(out0) // 2, len(out1) // 2
    sel0, ev0, sel1, ev1 = out0[i0[:h0]], out0[i0[h0:]], out1[i1[:h1]], out1[i1[h1:]]
    stat = statistic(sel0, sel1)  # fitted on the selection half only
    test = _choose(stat(sel0), stat(sel1))
    e0, e1 = stat(ev0), stat(ev1)
    in0 = (e0 >= test.threshold) if test.upper else (e0 < test.threshold)
    in1 = (e1 >= test.threshold) if test.upper else (e1 < test.threshold)
    (kp, np_), (kn, nn) = ((int(in1.sum()), e1.size), (int(in0.sum()), e0.size))
    if not test.positive_is_d1:
        (kp, np_), (kn, nn) = (kn, nn), (kp, np_)
    bound = epsilon_lower_bound_ci(kp, np_, kn, nn, level=level)
    return _Outcome(describe(test), kp, np_, kn, nn, float(bound.epsilon), float(bound.point))


def _identity(sel0: np.ndarray, sel1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.asarray(x, dtype=np.float64)


def _describe_threshold(test: _Test) -> str:
    side = "≥" if test.upper else "<"
    return f"output {side} {test.threshold:.6g}, more likely under {'D′' if test.positive_is_d1 else 'D'}"


def _empirical_log_ratio(sel0: np.ndarray, sel1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Named cell → log(P̂_D′ / P̂_D) on the selection half (add-½ smoothing; unseen cells → 0)."""
    cells = np.union1d(sel0, sel1)
    ratio = {int(c): math.log(((sel1 == c).sum() + 0.5) / (sel1.size + 1.0)) - math.log(((sel0 == c).sum() + 0.5) / (sel0.size + 1.0))
             for c in cells}
    return lambda x: np.array([ratio.get(int(c), 0.0) for c in np.ravel(x)])


def _describe_cells(statistic_of: Callable[[np.ndarray], np.ndarray], universe: np.ndarray) -> Callable[[_Test], str]:
    def describe(test: _Test) -> str:
        s = statistic_of(universe)
        chosen = universe[(s >= test.threshold) if test.upper else (s < test.threshold)]
        return (f"named cell ∈ {{{', '.join(str(int(c)) for c in chosen)}}}, more likely under "
                f"{'D′' if test.positive_is_d1 else 'D'}")
    return describe


def _audit_names(out0: np.ndarray, out1: np.ndarray, cells: int, level: float,
                 rng: np.random.Generator) -> _Outcome:
    """:func:`_audit` of named cells (0 … cells − 1): the statistic is their log-ratio on the selection half."""
    universe = np.arange(cells)
    fitted: dict[str, Callable[[np.ndarray], np.ndarray]] = {}

    def statistic(sel0: np.ndarray, sel1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        fitted["stat"] = _empirical_log_ratio(sel0, sel1)
        return fitted["stat"]

    return _audit(out0, out1, statistic, lambda t: _describe_cells(fitted["stat"], universe)(t), level, rng)
