"""The DP-audit view: ε lower bounds from a membership test's rates (spec ``mia.md`` §4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpaudit._arrays import as_list
from dpaudit._validation import number, number_array
from dpaudit.mia.metrics._inputs import DEFAULT_LEVEL, check_counts, check_level, scalar_or_array
from dpaudit.mia.metrics.intervals import clopper_pearson

__all__ = ["EpsilonBound", "epsilon_lower_bound", "epsilon_lower_bound_ci", "check_delta", "DELTA_HINT"]

#: What δ usually is (the ``hint`` of its message).
DELTA_HINT = " (usually well below 1/n)"


# --------------------------------------------------------------------------------------------------
# DP-audit view
# --------------------------------------------------------------------------------------------------


def check_delta(delta: object) -> float:
    """δ of an (ε, δ) bound as a float in [0, 1)."""
    return number("delta", delta, low=0.0, high=1.0, high_open=True, hint=DELTA_HINT)


def epsilon_lower_bound(tpr: object, fpr: object, *, delta: float = 0.0) -> float | np.ndarray:
    """ε lower bound implied by one operating point: ε ≥ ln((TPR − δ) / FPR).

    An (ε, δ)-DP mechanism makes every membership test satisfy ``TPR ≤ e^ε · FPR + δ`` (the
    hypothesis-testing view of DP; Kairouz, Oh & Viswanath, ICML 2015), so an observed (TPR, FPR)
    rules out every smaller ε. Vectorised (broadcast) over ``tpr`` and ``fpr``.

    Conventions:

    - ``0`` when ``TPR − δ ≤ FPR``: the point is no evidence of leakage (ε ≥ 0 holds anyway), which
      also covers FPR = TPR − δ = 0 (no NaN is returned).
    - ``+inf`` when ``FPR = 0 < TPR − δ``: no finite ε explains the point estimate. Point estimates
      at FPR = 0 are common with few trials, which is why :func:`epsilon_lower_bound_ci` is the number
      to report.

    The symmetric bound ``ln((1 − δ − FPR) / (1 − TPR))`` (Jagielski et al. 2020) is the same formula
    applied to the complementary test: call ``epsilon_lower_bound(1 - fpr, 1 - tpr, delta=delta)``.

    Examples
    --------
    >>> round(epsilon_lower_bound(0.5, 0.05), 6), round(float(np.log(10)), 6)
    (2.302585, 2.302585)
    >>> epsilon_lower_bound([0.1, 0.3, 0.2], [0.2, 0.0, 0.0], delta=0.2)
    array([ 0., inf,  0.])
    """
    d = check_delta(delta)
    t = number_array("tpr", tpr, low=0.0, high=1.0)
    f = number_array("fpr", fpr, low=0.0, high=1.0)
    t, f = np.broadcast_arrays(t, f)
    excess = t - d
    informative = excess > f  # implies excess > 0
    finite = informative & (f > 0)
    eps = np.zeros(t.shape)
    eps[finite] = np.log(excess[finite] / f[finite])
    eps[informative & (f == 0)] = np.inf
    return scalar_or_array(eps)


@dataclass(frozen=True, eq=False)
class EpsilonBound:
    """A conservative ε lower bound from counts, with its ingredients.

    Attributes
    ----------
    epsilon : float or ndarray
        ``ln((TPR_lower − δ) / FPR_upper)``: holds with probability ≥ ``level`` (see
        :func:`epsilon_lower_bound_ci`).
    point : float or ndarray
        The same formula on the point estimates k/n (may be inf).
    tpr_lower, fpr_upper : float or ndarray
        Clopper–Pearson lower bound of TPR and upper bound of FPR.
    level, delta : float
    """

    epsilon: float | np.ndarray
    point: float | np.ndarray
    tpr_lower: float | np.ndarray
    fpr_upper: float | np.ndarray
    level: float
    delta: float

    def __str__(self) -> str:
        return (
            f"epsilon >= {self.epsilon} with confidence {self.level:.0%} (delta={self.delta:g}; "
            f"TPR >= {self.tpr_lower}, FPR <= {self.fpr_upper}, Clopper-Pearson); point estimate {self.point}"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "epsilon": as_list(self.epsilon),
            "point": as_list(self.point),
            "tpr_lower": as_list(self.tpr_lower),
            "fpr_upper": as_list(self.fpr_upper),
            "level": self.level,
            "delta": self.delta,
            "method": "Clopper-Pearson (Jagielski et al. 2020; Nasr et al. 2021)",
        }


def epsilon_lower_bound_ci(
    k_tp: object,
    n_pos: object,
    k_fp: object,
    n_neg: object,
    *,
    delta: float = 0.0,
    level: float = DEFAULT_LEVEL,
) -> EpsilonBound:
    """Conservative ε lower bound from true/false-positive counts (Clopper–Pearson).

    ``ε_LB = ln((TPR_lo − δ) / FPR_hi)`` where ``TPR_lo`` is the lower end of the two-sided
    Clopper–Pearson interval of ``k_tp / n_pos`` and ``FPR_hi`` the upper end of that of
    ``k_fp / n_neg``, both at ``level``; conventions of :func:`epsilon_lower_bound` (0 when
    uninformative, inf only if FPR_hi = 0, which never happens since n_neg is finite). This is the
    audit recipe of Jagielski, Ullman & Oprea (NeurIPS 2020, "Auditing differentially private machine
    learning: how private is private SGD?", Alg. 2) and Nasr, Song, Thakurta, Papernot & Carlini
    (IEEE S&P 2021, "Adversary instantiation: lower bounds for differentially private machine
    learning").

    Guarantee: each one-sided end fails with probability ≤ (1 − level)/2, so by the union bound both
    hold, and the mechanism is **not** (ε, δ)-DP for any ε < ``epsilon``, with probability ≥ ``level``.
    It requires what Clopper–Pearson requires: independent trials (in a DP audit, one trained model
    per trial, the target record IN or OUT) and a threshold fixed before these counts were seen
    (chosen on a separate split). Counts pooled over the records of efficient LiRA are dependent,
    and the guarantee is about one record's privacy only if every trial tests the same record.

    Parameters
    ----------
    k_tp, n_pos : int or array_like of int
        True positives among ``n_pos`` member trials.
    k_fp, n_neg : int or array_like of int
        False positives among ``n_neg`` non-member trials.
    delta : float, default 0.0
    level : float, default 0.95

    Returns
    -------
    EpsilonBound

    Examples
    --------
    >>> b = epsilon_lower_bound_ci(500, 1000, 0, 1000)
    >>> b.point, round(b.epsilon, 3)
    (inf, 4.846)
    """
    level = check_level(level)
    d = check_delta(delta)
    k_tp_a, n_pos_a = check_counts(k_tp, n_pos, "k_tp", "n_pos")
    k_fp_a, n_neg_a = check_counts(k_fp, n_neg, "k_fp", "n_neg")
    tpr_lo, _ = clopper_pearson(k_tp_a, n_pos_a, level=level)
    _, fpr_hi = clopper_pearson(k_fp_a, n_neg_a, level=level)
    return EpsilonBound(
        epsilon=epsilon_lower_bound(tpr_lo, fpr_hi, delta=d),
        point=epsilon_lower_bound(k_tp_a / n_pos_a, k_fp_a / n_neg_a, delta=d),
        tpr_lower=tpr_lo,
        fpr_upper=fpr_hi,
        level=level,
        delta=d,
    )
