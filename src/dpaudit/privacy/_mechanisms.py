"""The mechanisms: OpenDP's Laplace and report-noisy-top-k, and the one seeded test path."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from dpaudit._errors import DPAuditError
from dpaudit._validation import positive, whole_number
from dpaudit.privacy._budget import TOLERANCE
from dpaudit.privacy._release import Release

__all__ = ["INTERVAL_Z", "MIN_RELEASE_EPSILON", "laplace_release", "laplace_vector", "noisy_top_k", "SelectionRelease",
           "VectorRelease", "derive_seed"]

#: The smallest ε :func:`dpaudit.audit` releases a measure with. Below it the noise scale Δ/ε exceeds
#: any measure's range by nine orders of magnitude (and at ε ≈ 1e-308 it overflows to infinity).
MIN_RELEASE_EPSILON = 1e-9

#: Half-width of the 95% noise interval in units of the Laplace scale: ln 20, because
#: ``P(|Lap(b)| > t) = exp(−t/b)``.
INTERVAL_Z = math.log(20.0)
_SEEDED = "seeded noise is reproducible and can be subtracted: not differentially private"


def _opendp() -> Any:
    """The OpenDP constructors the releases use, from their own modules: ``opendp.prelude`` also
    imports OpenDP's scikit-learn extras (scikit-learn and SciPy when installed), 1–20 s on the first
    release of a process (measured on a 2-core machine, the longer under load) for nothing used here."""
    import opendp.domains as domains
    import opendp.measurements as measurements
    import opendp.measures as measures
    import opendp.metrics as metrics
    from opendp.mod import enable_features

    enable_features("contrib")
    return SimpleNamespace(m=measurements, atom_domain=domains.atom_domain, vector_domain=domains.vector_domain,
                           absolute_distance=metrics.absolute_distance, linf_distance=metrics.linf_distance,
                           l1_distance=metrics.l1_distance,
                           max_divergence=measures.max_divergence)


def _check_map(measurement: Any, sensitivity: float, epsilon: float) -> None:
    if measurement.map(sensitivity) > epsilon * (1 + TOLERANCE):  # pragma: no cover - OpenDP invariant
        raise DPAuditError("OpenDP's privacy map exceeds the requested epsilon; refusing to release")


def _test_rng(seed: int) -> np.random.Generator:
    """The seeded test path's generator (both mechanisms): reproducible, **not** private."""
    return np.random.default_rng(seed)


def derive_seed(seed: int | None, *key: int) -> int | None:
    """An independent seed for one release of a seeded run: releases keyed differently get unrelated
    noise (``SeedSequence(seed, spawn_key=key)``); None stays None (real, unseeded noise).

    Examples
    --------
    >>> derive_seed(0, 1) != derive_seed(0, 2), derive_seed(None, 1)
    (True, None)
    """
    if seed is None:
        return None
    return int(np.random.SeedSequence(seed, spawn_key=key).generate_state(1)[0])


def _finite_scale(scale: float, epsilon: float) -> float:
    if not math.isfinite(scale):
        raise DPAuditError(f"epsilon={epsilon:g} is too small: the noise scale overflows to {scale}; use epsilon >= "
                           f"{MIN_RELEASE_EPSILON:g}")
    return scale


def _laplace_measurement(sensitivity: float, epsilon: float) -> Any:
    """OpenDP's Laplace measurement of scale Δ/ε, its privacy map checked against ε."""
    dp = _opendp()
    meas = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                             scale=_finite_scale(sensitivity / epsilon, epsilon))
    _check_map(meas, sensitivity, epsilon)
    return meas


def _top_k_measurement(k: int, sensitivity_linf: float, epsilon: float) -> Any:
    """OpenDP's report-noisy-top-k measurement of scale 2·k·Δ∞/ε, its privacy map checked against ε."""
    dp = _opendp()
    meas = dp.m.make_noisy_top_k(dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                                 dp.linf_distance(T=float, monotonic=False), dp.max_divergence(),
                                 k=k, scale=_finite_scale(2.0 * max(k, 1) * sensitivity_linf / epsilon, epsilon))
    _check_map(meas, sensitivity_linf, epsilon)
    return meas


def _laplace_vector_measurement(sensitivity_l1: float, epsilon: float) -> Any:
    """OpenDP's vector Laplace measurement (L1 distance) of scale Δ₁/ε, its privacy map checked against ε."""
    dp = _opendp()
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float),
                             scale=_finite_scale(sensitivity_l1 / epsilon, epsilon))
    _check_map(meas, sensitivity_l1, epsilon)
    return meas


def laplace_release(
    value: float,
    *,
    sensitivity: float,
    epsilon: float,
    seed: int | None = None,
    reasons: tuple[str, ...] = (),
) -> Release:
    """Release ``value`` with Laplace noise of scale ``sensitivity / epsilon``.

    Parameters
    ----------
    value : float
        Exact value (never returned).
    sensitivity : float
        Replace-one sensitivity of ``value``.
    epsilon : float
        Privacy loss of this release; debit it from a :class:`Budget` first.
    seed : int, optional
        Reproducible noise for tests. **Voids the DP guarantee**: the release says ``dp=False``.
    reasons : tuple of str
        Extra reasons the release is not DP (e.g. a data-derived schema).

    Examples
    --------
    >>> r = laplace_release(0.3, sensitivity=0.01, epsilon=1.0, seed=0)
    >>> r.scale, r.dp
    (0.01, False)
    """
    epsilon = positive("epsilon", epsilon)
    sensitivity = positive("sensitivity", sensitivity)
    scale = _finite_scale(sensitivity / epsilon, epsilon)
    if seed is None:
        noisy = float(_laplace_measurement(sensitivity, epsilon)(float(value)))
        mechanism = "Laplace (OpenDP make_laplace)"
    else:
        noisy = float(value + _test_rng(seed).laplace(0.0, scale))
        mechanism = "Laplace (seeded numpy, NOT private)"
        reasons = reasons + (_SEEDED,)
    half = scale * INTERVAL_Z
    return Release(
        value=noisy,
        epsilon=epsilon,
        sensitivity=sensitivity,
        scale=scale,
        interval=(noisy - half, noisy + half),
        dp=not reasons,
        mechanism=mechanism,
        reasons=tuple(reasons),
    )



@dataclass(frozen=True)
class VectorRelease:
    """Several numbers released together with independent Laplace noise of one scale."""

    values: tuple[float, ...]
    epsilon: float
    sensitivity_l1: float
    scale: float
    mechanism: str
    dp: bool


def laplace_vector(values: Any, *, sensitivity_l1: float, epsilon: float, seed: int | None = None) -> VectorRelease:
    """Release a vector whose L1 replace-one sensitivity is Δ₁ with i.i.d. Laplace noise of scale Δ₁/ε
    (ε-DP, Dwork et al. 2006; OpenDP ``make_laplace`` on a vector domain with ``l1_distance``, whose
    map ε = Δ₁/scale is checked before releasing). ``seed``: the seeded test path, **not private**.

    Examples
    --------
    >>> r = laplace_vector([0.5, 0.25], sensitivity_l1=0.02, epsilon=1.0, seed=0)
    >>> len(r.values), r.scale, r.dp
    (2, 0.02, False)
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    sensitivity_l1 = positive("sensitivity_l1", sensitivity_l1)
    epsilon = positive("epsilon", epsilon)
    scale = _finite_scale(sensitivity_l1 / epsilon, epsilon)
    if seed is None:
        noisy = tuple(float(v) for v in _laplace_vector_measurement(sensitivity_l1, epsilon)(x.tolist()))
        mechanism = "Laplace vector (OpenDP make_laplace, L1)"
    else:
        noisy = tuple(float(v) for v in x + _test_rng(seed).laplace(0.0, scale, size=x.size))
        mechanism = "Laplace vector (seeded numpy, NOT private)"
    return VectorRelease(noisy, epsilon, sensitivity_l1, scale, mechanism, seed is None)


def laplace_vector_draws(values: Any, *, sensitivity_l1: float, epsilon: float, draws: int) -> np.ndarray:
    """``draws`` independent outputs of the unseeded :func:`laplace_vector`, shape ``(draws, len(values))``:
    one OpenDP measurement, map-checked once, invoked ``draws`` times (for the privacy tests only)."""
    meas = _laplace_vector_measurement(positive("sensitivity_l1", sensitivity_l1), positive("epsilon", epsilon))
    listed = np.asarray(values, dtype=np.float64).ravel().tolist()
    return np.array([meas(listed) for _ in range(whole_number("draws", draws, minimum=1))], dtype=np.float64)


@dataclass(frozen=True)
class SelectionRelease:
    """Indices chosen by a private selection, and how they were chosen.

    Attributes
    ----------
    indices : tuple of int
        Positions in the score vector, in noisy rank order (best first).
    epsilon, sensitivity_linf, scale : float
    mechanism : str
    dp : bool
        False on the seeded test path.
    """

    indices: tuple[int, ...]
    epsilon: float
    sensitivity_linf: float
    scale: float
    mechanism: str
    dp: bool


def noisy_top_k(scores: Any, k: int, *, sensitivity_linf: float, epsilon: float,
                seed: int | None = None) -> SelectionRelease:
    """Report-noisy-top-k: the indices of the k largest scores, ε-DP (OpenDP ``make_noisy_top_k``).

    For scores whose every entry moves by at most Δ∞ between neighbouring databases (non-monotonic:
    entries may move in either direction), OpenDP's privacy map of top-k selection with Gumbel noise
    of scale s is ε = 2·k·Δ∞/s, so ``scale = 2·k·Δ∞/ε``. Only the indices are released.

    Parameters
    ----------
    scores : array_like of float, shape (n,)
    k : int
        How many to select (at most n).
    sensitivity_linf : float
        Δ∞ of the score vector.
    epsilon : float
    seed : int, optional
        The seeded test path: Gumbel noise from numpy. **Not private** (``dp=False``).

    Examples
    --------
    >>> r = noisy_top_k([0.0, 5.0, 1.0], 1, sensitivity_linf=0.01, epsilon=1.0, seed=0)
    >>> r.indices, r.dp
    ((1,), False)
    """
    values = np.asarray(scores, dtype=np.float64).ravel()
    k = whole_number("k", k, minimum=0, maximum=values.size)
    sensitivity_linf = positive("sensitivity_linf", sensitivity_linf)
    epsilon = positive("epsilon", epsilon)
    scale = _finite_scale(2.0 * max(k, 1) * sensitivity_linf / epsilon, epsilon)
    if seed is None:
        chosen = tuple(int(i) for i in _top_k_measurement(k, sensitivity_linf, epsilon)(values.tolist()))
        mechanism = "report-noisy-top-k (OpenDP make_noisy_top_k)"
    else:
        noisy = values + _test_rng(seed).gumbel(0.0, scale, size=values.size)
        chosen = tuple(int(i) for i in np.argsort(-noisy, kind="stable")[:k])
        mechanism = "noisy top-k (seeded numpy Gumbel, NOT private)"
    return SelectionRelease(chosen, epsilon, sensitivity_linf, scale, mechanism, seed is None)


# -- repeated draws from ONE measurement: for the empirical privacy audit (dpaudit.selfcheck) only ------
# Each helper builds the OpenDP measurement of the unseeded release above (the same builder), checks
# its privacy map once, and invokes it ``draws`` times (tests/privacy checks that the draws follow
# the release's distribution). Every draw spends the release's ε: for synthetic audit data, never real data.


def laplace_draws(value: float, *, sensitivity: float, epsilon: float, draws: int) -> np.ndarray:
    """``draws`` independent outputs of the unseeded :func:`laplace_release` of ``value``.

    One OpenDP ``make_laplace`` measurement of scale ``sensitivity / epsilon`` (as the release),
    built and privacy-map-checked once, then invoked ``draws`` times.

    Examples
    --------
    >>> laplace_draws(0.5, sensitivity=0.1, epsilon=1.0, draws=3).shape
    (3,)
    """
    epsilon = positive("epsilon", epsilon)
    sensitivity = positive("sensitivity", sensitivity)
    draws = whole_number("draws", draws, minimum=1)
    meas = _laplace_measurement(sensitivity, epsilon)
    x = float(value)
    return np.fromiter((meas(x) for _ in range(draws)), dtype=np.float64, count=draws)


def noisy_top_k_draws(scores: Any, k: int, *, sensitivity_linf: float, epsilon: float, draws: int) -> np.ndarray:
    """``draws`` independent outputs of the unseeded :func:`noisy_top_k`, shape ``(draws, k)``.

    One OpenDP ``make_noisy_top_k`` measurement of scale ``2·k·Δ∞/ε`` (as the release), built and
    map-checked once, then invoked ``draws`` times; each row holds the selected indices in noisy rank
    order.

    Examples
    --------
    >>> noisy_top_k_draws([0.0, 5.0, 1.0], 1, sensitivity_linf=0.01, epsilon=1.0, draws=2).tolist()
    [[1], [1]]
    """
    values = np.asarray(scores, dtype=np.float64).ravel()
    k = whole_number("k", k, minimum=1, maximum=values.size)
    sensitivity_linf = positive("sensitivity_linf", sensitivity_linf)
    epsilon = positive("epsilon", epsilon)
    draws = whole_number("draws", draws, minimum=1)
    meas = _top_k_measurement(k, sensitivity_linf, epsilon)
    listed = values.tolist()
    out = np.empty((draws, k), dtype=np.int64)
    for i in range(draws):
        out[i] = meas(listed)
    return out
