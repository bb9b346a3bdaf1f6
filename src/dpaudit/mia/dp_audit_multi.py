"""Multi-run DP audit (M models) and the verdict on a claimed ε.

:func:`epsilon_lower_bound_multi_run`: M independent training runs, each with the target canary
included or excluded; ``scores_in`` are the attack scores of the canary on the models that
included it, ``scores_out`` on the models that did not. At a threshold t ("in" iff score ≥ t) with
TP = #(in ≥ t) of n_in and FP = #(out ≥ t) of n_out, every (ε, δ)-DP mechanism satisfies
TPR ≤ e^ε FPR + δ and, for the complementary test, TNR ≤ e^ε FNR + δ (Kairouz, Oh & Viswanath,
ICML 2015), so with Clopper–Pearson limits::

    ε ≥ ln((TPR_lo − δ) / FPR_hi)        and        ε ≥ ln((TNR_lo − δ) / FNR_hi)

(Jagielski, Ullman & Oprea, NeurIPS 2020, Alg. 2; Nasr, Song, Thakurta, Papernot & Carlini,
IEEE S&P 2021). Each formula is :func:`dpaudit.mia.metrics.epsilon_lower_bound_ci` (two
one-sided Clopper–Pearson limits, each failing with probability ≤ (1 − level)/2, union bound).

Threshold selection is corrected, as in :mod:`dpaudit.mia.dp_audit`: ``"bonferroni"`` (default)
maximises over the N distinct score values and both directions (2N bounds) each at level
1 − β/(2N) (1 − β/N with ``two_sided=False``); ``"split"`` picks the threshold and direction on a
random half and bounds on the other half at 1 − β; ``threshold=t`` uses a threshold fixed in advance
(the better of the two directions, each at 1 − β/2; ``two_sided=False``: "in" iff score ≥ t, at 1 − β).

:func:`multi_run_split_canaries` audits m canaries on M models at once: on a random half of the models
it picks the canary, threshold and direction of the largest bound; on the other half it bounds that
canary at that threshold and direction at 1 − β. The halves are independent training runs, so the
choice needs no correction — neither over the thresholds nor over the m canaries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dpaudit._errors import DataError
from dpaudit._validation import number
from dpaudit.mia.dp_audit import (
    DPAuditBound,
    canary_scores,
    candidate_thresholds,
    check_strategy,
    split_halves,
)
from dpaudit.mia.metrics._inputs import DEFAULT_LEVEL, check_level
from dpaudit.mia.metrics.epsilon import check_delta, epsilon_lower_bound_ci

__all__ = ["epsilon_lower_bound_multi_run", "multi_run_split_canaries", "AuditVerdict", "audit_verdict"]


def _directions(tp: np.ndarray, fp: np.ndarray, n_in: int, n_out: int, delta: float, level: float,
                two_sided: bool) -> np.ndarray:
    """Bounds of shape (directions, thresholds): row 0 from (TP, FP), row 1 from (TN, FN)."""
    rows = [np.atleast_1d(epsilon_lower_bound_ci(tp, n_in, fp, n_out, delta=delta, level=level).epsilon)]
    if two_sided:
        rows.append(np.atleast_1d(epsilon_lower_bound_ci(n_out - fp, n_out, n_in - tp, n_in,
                                                         delta=delta, level=level).epsilon))
    return np.vstack(rows).astype(float)


def _at(a: np.ndarray, b: np.ndarray, t: float, direction: int, delta: float, level: float
        ) -> tuple[float, int, int]:
    """Bound at one threshold and direction: ε, guesses, correct guesses."""
    tp, fp = int(np.sum(a >= t)), int(np.sum(b >= t))
    eps = float(_directions(np.array([tp]), np.array([fp]), a.size, b.size, delta, level, True)[direction, 0])
    if direction == 0:
        return eps, tp + fp, tp
    return eps, (a.size - tp) + (b.size - fp), b.size - fp


def _best(a: np.ndarray, b: np.ndarray, delta: float, level: float, two_sided: bool) -> tuple[float, float, int]:
    t, tp, fp = candidate_thresholds(a, b)
    eps = _directions(tp, fp, a.size, b.size, delta, level, two_sided)
    d, i = np.unravel_index(int(np.argmax(eps)), eps.shape)
    return float(eps[d, i]), float(t[i]), int(d)


def epsilon_lower_bound_multi_run(scores_in: object, scores_out: object, *, delta: float = 0.0,
                                  confidence: float = DEFAULT_LEVEL, strategy: str = "bonferroni",
                                  threshold: float | None = None, two_sided: bool = True,
                                  seed: int | None = 0) -> DPAuditBound:
    """Multi-run ε lower bound from the target canary's scores on M = len(in) + len(out) models.

    The trials must be independent training runs (one score per model), the canary's inclusion
    decided before training. ``n_guess``/``n_correct`` of the result count the winning direction's
    "in" guesses and true positives (or "out" guesses and true negatives).

    Examples
    --------
    >>> b = epsilon_lower_bound_multi_run(np.ones(500), np.zeros(500), strategy="split")
    >>> from dpaudit.mia.metrics import clopper_pearson
    >>> _, fpr_hi = clopper_pearson(0, 250)  # perfect separation on the 250 + 250 held-out runs
    >>> lo, _ = clopper_pearson(250, 250)
    >>> round(b.epsilon, 9) == round(float(np.log(lo / fpr_hi)), 9)
    True
    """
    a, b = canary_scores(scores_in, scores_out)
    level = check_level(confidence)
    d = check_delta(delta)
    beta = 1.0 - level
    if threshold is not None:  # the better of the two directions, each at 1 − β/2 (union bound over the choice)
        at = 1.0 - beta / 2 if two_sided else level
        best = max((_at(a, b, float(threshold), k, d, at) for k in range(2 if two_sided else 1)),
                   key=lambda x: x[0])
        return DPAuditBound(best[0], "multi-run", level, d, "explicit", float(threshold), best[1], best[2],
                            a.size + b.size)
    if check_strategy(strategy) == "split":
        (a1, b1), (a2, b2) = split_halves(a, b, seed)
        _, t, direction = _best(a1, b1, d, level, two_sided)
        eps, r, v = _at(a2, b2, t, direction, d, level)
        return DPAuditBound(eps, "multi-run", level, d, "split", t, r, v, a2.size + b2.size)
    n_bounds = np.union1d(a, b).size * (2 if two_sided else 1)
    _, t, direction = _best(a, b, d, 1.0 - beta / n_bounds, two_sided)
    eps, r, v = _at(a, b, t, direction, d, 1.0 - beta / n_bounds)
    return DPAuditBound(eps, "multi-run", level, d, "bonferroni", t, r, v, a.size + b.size)


def multi_run_split_canaries(scores: object, masks: object, *, delta: float = 0.0,
                             confidence: float = DEFAULT_LEVEL, seed: int | None = 0
                             ) -> tuple[DPAuditBound, int | None]:
    """Multi-run bound of the most exposed of m canaries, chosen on half of the M models, bounded on the rest.

    ``scores`` and ``masks`` are (M, m): canary i's score on model j and whether model j trained on it.
    The models are split at random (seeded by ``seed``) into a choice half and a bound half; on the
    choice half every canary's best threshold and direction is found (uncorrected bounds, only used to
    choose); the canary with the largest is bounded on the bound half at the chosen threshold and
    direction at ``confidence`` (strategy ``"split"``). Returns the bound and the canary's index — a bound
    of 0 and None when no canary is both in and out of some models in each half (no evidence).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> masks = rng.random((400, 3)) < 0.5
    >>> scores = rng.normal(size=(400, 3)) + 6.0 * (masks & (np.arange(3) == 2))  # canary 2 leaks
    >>> b, i = multi_run_split_canaries(scores, masks, seed=0)
    >>> i, b.epsilon > 3
    (2, True)
    """
    s = np.asarray(scores, dtype=np.float64)
    k = np.asarray(masks, dtype=bool)
    if s.ndim != 2 or s.shape != k.shape:
        raise DataError(f"scores and masks must both be (models, canaries) arrays, got {s.shape} and {k.shape}")
    if not np.all(np.isfinite(s)):
        raise DataError("scores must be finite numbers")
    if s.shape[0] < 4:
        raise DataError(f"the multi-run bound splits the models in halves of at least 2; got M = {s.shape[0]}: "
                        "use at least 4 models")
    level = check_level(confidence)
    d = check_delta(delta)
    perm = np.random.default_rng(seed).permutation(s.shape[0])
    first, second = perm[: s.shape[0] // 2], perm[s.shape[0] // 2:]
    best: tuple[float, float, int, int] | None = None
    for i in range(s.shape[1]):
        ka, kb = k[first, i], k[second, i]
        if not (ka.any() and (~ka).any() and kb.any() and (~kb).any()):
            continue
        eps, t, direction = _best(s[first, i][ka], s[first, i][~ka], d, level, True)
        if best is None or eps > best[0]:
            best = (eps, t, direction, i)
    if best is None:
        return DPAuditBound(0.0, "multi-run", level, d, "split", float("inf"), 0, 0, len(second)), None
    _, t, direction, i = best
    a, b = s[second, i][k[second, i]], s[second, i][~k[second, i]]
    eps, r, v = _at(a, b, t, direction, d, level)
    return DPAuditBound(eps, "multi-run", level, d, "split", t, r, v, a.size + b.size), i


@dataclass(frozen=True)
class AuditVerdict:
    """Whether an (ε, δ)-DP claim survives the audit bounds.

    ``violated`` is True when some bound exceeds the claimed ε. With k bounds each at confidence c,
    "violated" is wrong with probability ≤ k(1 − c) for a mechanism that meets its claim (union
    bound), which is ``confidence`` here.
    """

    claimed_epsilon: float
    violated: bool
    epsilon: float
    method: str
    confidence: float
    text: str

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in ("claimed_epsilon", "violated", "epsilon", "method", "confidence",
                                              "text")}


def audit_verdict(claimed_epsilon: float, bounds: Sequence[DPAuditBound] | Mapping[str, DPAuditBound]
                  ) -> AuditVerdict:
    """"claim consistent" or "claim violated: ε ≥ … > claimed ε", from the largest of ``bounds``.

    Examples
    --------
    >>> b = DPAuditBound(2.5, "one-run", 0.95, 0.0, "bonferroni", 1.0, 100, 99, 1000)
    >>> print(audit_verdict(1.0, [b]))
    claim violated: ε ≥ 2.5 > claimed ε = 1 (one-run bound, confidence 95%)
    >>> print(audit_verdict(4.0, {"one-run": b}))
    claim consistent: largest bound ε ≥ 2.5 ≤ claimed ε = 4 (one-run bound, confidence 95%)
    """
    claim = number("claimed_epsilon", claimed_epsilon, low=0.0)
    items = list(bounds.values()) if isinstance(bounds, Mapping) else list(bounds)
    if not items:
        raise ValueError("audit_verdict needs at least one bound")
    top = max(items, key=lambda x: x.epsilon)
    confidence = max(0.0, 1.0 - sum(1.0 - x.confidence for x in items))
    where = f"({top.method} bound, confidence {confidence:.0%})"
    if top.epsilon > claim:
        text = f"claim violated: ε ≥ {top.epsilon:.4g} > claimed ε = {claim:g} {where}"
    else:
        text = f"claim consistent: largest bound ε ≥ {top.epsilon:.4g} ≤ claimed ε = {claim:g} {where}"
    return AuditVerdict(claim, top.epsilon > claim, float(top.epsilon), top.method, confidence, text)
