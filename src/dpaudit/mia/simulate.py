"""Simulations with known ground truth for the MIA evaluation (spec ``mia.md`` §3a, §3b, §5).

Two simulators, both vectorised and seeded:

* :func:`gaussian_scores` draws a score matrix ``score[m, x]`` and an efficient-LiRA ``keep``
  matrix from per-record Gaussians whose parameters are known, so every estimate of
  vulnerability (naive concatenation, PP concatenation, mean per-record TPR) can be compared with
  the exact mean per-record TPR of the calibrated test (:meth:`SimulatedScores.true_mean_tpr`).
* :func:`fpc_simulation` is the analytic Gaussian simulation of the finite-population bias of
  efficient LiRA (MIA paper, finite population correction): the "model" is the empirical
  mean of its training set; training sets drawn without replacement from one fixed pool of N+
  points spread less than training sets drawn from the distribution, by the factor
  ``√FPC = √(1 − N/N+)`` (Cochran 1977, Thm. 2.2 and Sec. 2.6).

Both results are frozen dataclasses with a readable ``str()`` and a JSON-ready ``to_dict()``.

References
----------
.. [1] Jälkö, Pradhan, Räisä, Honkela. "On Reliability of Efficient Membership Inference
   Vulnerability Evaluation", arXiv 2605.25819 (the MIA paper).
.. [2] Carlini, Chien, Nasr, Song, Terzis, Tramèr. "Membership Inference Attacks From First
   Principles", IEEE S&P 2022 (LiRA, efficient keep design).
.. [3] Cochran, W. G. *Sampling Techniques*, 3rd ed., Wiley 1977, Sec. 2.6 (finite population
   correction; Thm. 2.2, variance of the mean of a simple random sample).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from dpaudit._errors import DPAuditError
from dpaudit._io import to_jsonable
from dpaudit.mia.scores import keep_matrix

__all__ = [
    "SimulatedScores",
    "gaussian_scores",
    "FpcResult",
    "fpc_simulation",
    "DEFAULT_ALPHAS",
]

#: FPR levels reported by default (spec §3: 1e-2, 1e-3, 1e-4; 1e-1 as an easy reference).
DEFAULT_ALPHAS: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4)

_DESIGNS = ("efficient", "subsets")
_CHUNK_VALUES = 1 << 22  # fresh-data draws are made in chunks of at most this many floats


# --------------------------------------------------------------------------------------------
# validation helpers (messages name the bad value and what is allowed)


def _int_arg(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DPAuditError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise DPAuditError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def _float_arg(name: str, value: Any, *, low: float, low_open: bool, high: float | None = None) -> float:
    allowed = f"{'>' if low_open else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DPAuditError(f"{name} must be a finite number {allowed}, got {value!r}")
    value = float(value)
    if (
        not math.isfinite(value)
        or value < low
        or (low_open and value == low)
        or (high is not None and value > high)
    ):
        raise DPAuditError(f"{name} must be a finite number {allowed}, got {value!r}")
    return value


def _alpha_arg(alpha: Any) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < float(alpha) < 1.0:
        raise DPAuditError(f"alpha must be a number strictly between 0 and 1 (a target FPR), got {alpha!r}")
    return float(alpha)


def _seed_arg(seed: Any) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise DPAuditError(f"seed must be a non-negative integer or None, got {seed!r}")
    return int(seed)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _subset_keep(rng: np.random.Generator, n_models: int, n_records: int, train_size: int) -> np.ndarray:
    """Independent simple random subsets: model m is IN on exactly ``train_size`` distinct records."""
    ranks = np.argsort(rng.random((n_models, n_records)), axis=1)
    return ranks < train_size


def _summary(values: np.ndarray) -> dict[str, float]:
    """Mean, sd (ddof = 1), standard error of the mean and quartiles of a 1-d sample."""
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    sd = float(values.std(ddof=1)) if n > 1 else float("nan")
    q = np.quantile(values, [0.0, 0.25, 0.5, 0.75, 1.0]) if n else np.full(5, np.nan)
    return {
        "n": int(n),
        "mean": float(values.mean()) if n else float("nan"),
        "sd": sd,
        "se": sd / math.sqrt(n) if n > 1 else float("nan"),
        "min": float(q[0]),
        "q25": float(q[1]),
        "median": float(q[2]),
        "q75": float(q[3]),
        "max": float(q[4]),
    }


# --------------------------------------------------------------------------------------------
# §3a: per-record Gaussian scores with known truth


@dataclass(frozen=True, eq=False)
class SimulatedScores:
    """Scores of M models on N+ records drawn from known per-record Gaussians.

    ``score[m, x] ~ N(mu_in[x], sd_in[x]²)`` if ``keep[m, x]`` (x in model m's training set), else
    ``N(mu_out[x], sd_out[x]²)``; all draws independent. Arrays are read-only.

    Attributes
    ----------
    score : ndarray of float64, shape (M, N+)
    keep : ndarray of bool, shape (M, N+)
        Efficient-LiRA design: every record is IN in exactly M/2 models.
    mu_in, mu_out, sd_in, sd_out : ndarray of float64, shape (N+,)
        The true per-record parameters.
    pool_size : int
        N+ (= number of records).
    train_size : int
        Expected training-set size N = N+/2 of the design (rounded down for odd N+); the realised
        sizes ``keep.sum(axis=1)`` vary around it and average exactly N+/2.
    seed : int or None
    params : dict
        The generator's parameters (effect, sigma, heterogeneity, ...).
    """

    score: np.ndarray
    keep: np.ndarray
    mu_in: np.ndarray
    mu_out: np.ndarray
    sd_in: np.ndarray
    sd_out: np.ndarray
    pool_size: int
    train_size: int
    seed: int | None
    params: dict[str, float] = field(default_factory=dict)

    @property
    def n_models(self) -> int:
        return int(self.score.shape[0])

    @property
    def n_records(self) -> int:
        return int(self.score.shape[1])

    @property
    def delta(self) -> np.ndarray:
        """Per-record effect ``Δ_x = μ_in,x − μ_out,x``."""
        return self.mu_in - self.mu_out

    def true_tpr(self, alpha: float) -> np.ndarray:
        """Exact per-record TPR of the calibrated one-sided test at FPR ``alpha`` (true parameters).

        The test (spec §3a; MIA paper, post-processing for FPR calibration) standardises a score
        by the record's OUT distribution, ``f_x(t) = s_x (t − μ_out,x) / σ_out,x`` with
        ``s_x = sign(Δ_x)`` (``s_x = +1`` when ``Δ_x = 0``), and says "member" when
        ``f_x(t) > z_α = Φ⁻¹(1 − α)``. Under OUT, ``f_x ~ N(0, 1)``, so its FPR is exactly α for
        every record. Under IN, ``t ~ N(μ_in,x, σ²_in,x)``:

        * ``s_x = +1``: member iff ``t > μ_out + σ_out z_α``, so
          ``TPR_x = 1 − Φ((μ_out + σ_out z_α − μ_in)/σ_in) = Φ((Δ_x − σ_out z_α)/σ_in)``;
        * ``s_x = −1``: member iff ``t < μ_out − σ_out z_α``, so
          ``TPR_x = Φ((μ_out − σ_out z_α − μ_in)/σ_in) = Φ((−Δ_x − σ_out z_α)/σ_in)``.

        Both cases are ``TPR_x(α) = Φ((|Δ_x| − σ_out,x z_α) / σ_in,x)``. When σ_in = σ_out this is
        the most powerful level-α test (Neyman–Pearson); otherwise it is calibrated but not most
        powerful, a lower bound on the record's vulnerability (spec §3a).

        Parameters
        ----------
        alpha : float
            Target FPR, 0 < alpha < 1.

        Returns
        -------
        ndarray of float64, shape (N+,)

        Examples
        --------
        >>> sim = gaussian_scores(4, 6, seed=0, effect=0.0)
        >>> bool(np.allclose(sim.true_tpr(0.05), 0.05))   # Δ = 0, σ_in = σ_out: TPR = FPR
        True
        """
        z = stats.norm.isf(_alpha_arg(alpha))
        return stats.norm.cdf((np.abs(self.delta) - self.sd_out * z) / self.sd_in)

    def true_mean_tpr(self, alpha: float) -> float:
        """Mean over records of :meth:`true_tpr`: ``(1/N+) Σ_x Φ((|Δ_x| − σ_out,x z_α)/σ_in,x)``.

        This is the quantity that PP concatenation and the mean per-record TPR estimate (spec §3a,
        item 3), exact for the simulated records.

        Examples
        --------
        >>> sim = gaussian_scores(8, 1000, seed=1)
        >>> 0.01 < sim.true_mean_tpr(0.01) < 1
        True
        """
        return float(self.true_tpr(alpha).mean())

    def true_tpr_of_test(self, alpha: float, test: str, n_out: Any = None) -> np.ndarray:
        """Exact per-record TPR of a *finite-sample* one-sided level-α test with n_out OUT scores.

        What dpaudit's per-record estimators and PP-t estimate at a finite number of models
        (:mod:`dpaudit.mia.per_record`); both tests call "member" when the score is high, so they
        equal :meth:`true_tpr`'s convention when ``negative_share = 0``. With ``r = σ_in/σ_out``,
        ``d = Δ/σ_out``:

        * ``"t"``: member when ``t > μ̂_out + σ̂_out·c``, ``c = t_{n−1}(1 − α)√(1 + 1/n)``, the fit from
          n OUT scores. ``(Y − μ̂_out)/σ_out ~ N(d, r² + 1/n)`` is independent of
          ``σ̂_out/σ_out ~ √(χ²_{n−1}/(n − 1))``, so ``TPR = P(T' > c/√(r² + 1/n))`` with
          ``T'`` noncentral t, n − 1 degrees of freedom, noncentrality ``d/√(r² + 1/n)``.
        * ``"conformal"``: the randomised conformal test against n OUT scores
          (:func:`dpaudit.mia.per_record.hit_probability`). Given an IN score Y, the number of OUT
          scores above it is Binomial(n, S(Y)), ``S(Y) = Φ((μ_out − Y)/σ_out)``, so with
          ``k = ⌊α(n + 1)⌋``, ``f = α(n + 1) − k``:
          ``TPR = E_Y[P(Bin ≤ k − 1) + f·P(Bin = k)]``, integrated over Y ~ N(μ_in, σ²_in) by the
          midpoint rule on 4,000 equal-probability nodes.

        Parameters
        ----------
        alpha : float
        test : {"t", "conformal"}
        n_out : int or array_like of int, shape (N+,)
            OUT scores per record behind the test (efficient LiRA: M/2).

        Returns
        -------
        ndarray of float64, shape (N+,)

        Examples
        --------
        >>> sim = gaussian_scores(4, 6, seed=0, effect=0.0)
        >>> np.round(sim.true_tpr_of_test(0.05, "t", 10), 6).tolist() == [0.05] * 6
        True
        >>> np.round(sim.true_tpr_of_test(0.05, "conformal", 39), 4).tolist() == [0.05] * 6
        True
        """
        alpha = _alpha_arg(alpha)
        n = np.broadcast_to(np.asarray(n_out if n_out is not None else -1), self.mu_in.shape).astype(np.int64)
        if (n < 2).any():
            raise DPAuditError(f"n_out must be an integer >= 2 per record, got {n_out!r}")
        r = self.sd_in / self.sd_out
        d = self.delta / self.sd_out
        if test == "t":
            from dpaudit.mia.calibrate import threshold

            scale = np.sqrt(r**2 + 1.0 / n)
            return stats.nct.sf(threshold(alpha, kind="t", n_out=n) / scale, n - 1, d / scale)
        if test != "conformal":
            raise DPAuditError(f"test must be 't' or 'conformal', got {test!r}")
        budget = alpha * (n + 1) * (1 + 1e-12)
        k = np.floor(budget)
        frac = budget - k
        nodes = stats.norm.ppf((np.arange(4000) + 0.5) / 4000)
        out = np.empty(self.n_records)
        for lo in range(0, self.n_records, 2000):
            sl = slice(lo, lo + 2000)
            z = d[sl, None] + r[sl, None] * nodes[None, :]  # (Y − μ_out)/σ_out at the nodes
            p_above = stats.norm.sf(z)
            nn, kk = n[sl, None], k[sl, None]
            hit = stats.binom.cdf(kk - 1, nn, p_above) + frac[sl, None] * stats.binom.pmf(kk, nn, p_above)
            out[sl] = hit.mean(axis=1)
        return out

    def to_dict(self, *, alphas: tuple[float, ...] = DEFAULT_ALPHAS) -> dict[str, Any]:
        """JSON-ready summary: parameters, shapes and the true mean TPR (with per-record quartiles)
        at each α. The score and keep matrices themselves are not included."""
        truth = {}
        for alpha in alphas:
            tpr = self.true_tpr(alpha)
            truth[repr(float(alpha))] = {
                "mean_tpr": float(tpr.mean()),
                "tpr_quartiles": [float(v) for v in np.quantile(tpr, [0.25, 0.5, 0.75])],
                "max_tpr": float(tpr.max()),
                "share_records_tpr_above_10_alpha": float((tpr > 10 * alpha).mean()),
            }
        standardized = np.abs(self.delta) / self.sd_out
        return {
            "kind": "gaussian_scores",
            "n_models": self.n_models,
            "n_records": self.n_records,
            "pool_size": self.pool_size,
            "train_size": self.train_size,
            "seed": self.seed,
            "params": dict(self.params),
            "standardized_effect": to_jsonable(_summary(standardized), nonfinite="null"),
            "sd_out": to_jsonable(_summary(self.sd_out), nonfinite="null"),
            "truth": truth,
            "test": (
                "f_x = sign(Δ_x)(t − μ_out,x)/σ_out,x > Φ⁻¹(1 − α); "
                "TPR_x = Φ((|Δ_x| − σ_out,x z_α)/σ_in,x)"
            ),
        }

    def __str__(self) -> str:
        lines = [
            f"SimulatedScores: {self.n_models} models × {self.n_records} records "
            f"(N+ = {self.pool_size}, N = {self.train_size}, seed {self.seed})",
            "  params: " + ", ".join(f"{k}={v:g}" for k, v in self.params.items()),
        ]
        for alpha in DEFAULT_ALPHAS:
            lines.append(f"  true mean TPR @ FPR {alpha:g}: {self.true_mean_tpr(alpha):.4f}")
        return "\n".join(lines)


def gaussian_scores(
    n_models: int,
    n_records: int,
    *,
    seed: int | None,
    effect: float = 1.0,
    sigma: float = 1.0,
    heterogeneity: float = 0.5,
    location_spread: float = 1.0,
    in_sd_ratio: float = 1.0,
    negative_share: float = 0.0,
) -> SimulatedScores:
    """Draw LiRA-like scores from per-record Gaussians with known parameters (spec §3a).

    Per record x (independently, in this order from one generator seeded by ``seed``):

    * location ``μ_out,x = location_spread · V_x``, ``V_x ~ N(0, 1)`` (records differ in how easy
      they are, which is what makes one global threshold miscalibrated);
    * OUT spread ``σ_out,x = sigma · exp(heterogeneity · U_x)``, ``U_x ~ N(0, 1)`` (log-normal,
      median ``sigma``; ``heterogeneity = 0`` gives one common σ);
    * standardised effect ``d_x = effect · W_x²``, ``W_x ~ N(0, 1)``: a scaled χ²₁ with mean
      ``effect``, median ``0.45 · effect`` and 5% of records above ``3.84 · effect`` — most records
      barely vulnerable, a few very vulnerable;
    * direction ``s_x = −1`` with probability ``negative_share`` (else +1),
      ``Δ_x = s_x d_x σ_out,x``, ``μ_in,x = μ_out,x + Δ_x``, ``σ_in,x = in_sd_ratio · σ_out,x``.

    Then ``keep`` follows the efficient-LiRA design (spec §1: argsort of uniform noise along the
    model axis, first M/2 ranks IN) and ``score[m, x] = μ + σ Z[m, x]`` with the IN or OUT
    parameters of x according to ``keep[m, x]``.

    Parameters
    ----------
    n_models : int
        M, even and >= 2 (every record is IN in exactly M/2 models).
    n_records : int
        N+, >= 2.
    seed : int or None
        Seed of ``numpy.random.default_rng``; required so that runs are reproducible by default.
    effect : float, default 1.0
        Mean standardised effect ``E|Δ_x|/σ_out,x`` (>= 0).
    sigma : float, default 1.0
        Median OUT standard deviation (> 0).
    heterogeneity : float, default 0.5
        Log-scale spread of σ_out,x across records (>= 0).
    location_spread : float, default 1.0
        Spread of μ_out,x across records (>= 0).
    in_sd_ratio : float, default 1.0
        σ_in,x / σ_out,x (> 0). Values ≠ 1 make the calibrated test calibrated but not most powerful.
    negative_share : float, default 0.0
        Share of records whose IN scores are *lower* than their OUT scores (in [0, 1]).

    Returns
    -------
    SimulatedScores

    Raises
    ------
    DPAuditError
        For a non-integer, odd or too small ``n_models``, a bad ``n_records`` or an out-of-range
        parameter; the message names the value and what is allowed.

    References
    ----------
    MIA paper (arXiv 2605.25819), post-processing for FPR calibration (Gaussian IN/OUT model);
    Carlini et al., IEEE S&P 2022 (efficient LiRA keep design, via :func:`~dpaudit.mia.scores.keep_matrix`).

    Examples
    --------
    >>> sim = gaussian_scores(16, 10, seed=0)
    >>> sim.score.shape, sim.keep.shape, sim.train_size
    ((16, 10), (16, 10), 5)
    >>> sim.keep.sum(axis=0).tolist() == [8] * 10
    True
    """
    n_models = _int_arg("n_models", n_models, 2)
    if n_models % 2:
        raise DPAuditError(
            f"n_models must be even (every record is IN in exactly n_models/2 models), got {n_models}"
        )
    n_records = _int_arg("n_records", n_records, 2)
    seed = _seed_arg(seed)
    params = {
        "effect": _float_arg("effect", effect, low=0.0, low_open=False),
        "sigma": _float_arg("sigma", sigma, low=0.0, low_open=True),
        "heterogeneity": _float_arg("heterogeneity", heterogeneity, low=0.0, low_open=False),
        "location_spread": _float_arg("location_spread", location_spread, low=0.0, low_open=False),
        "in_sd_ratio": _float_arg("in_sd_ratio", in_sd_ratio, low=0.0, low_open=True),
        "negative_share": _float_arg("negative_share", negative_share, low=0.0, low_open=False, high=1.0),
    }

    rng = np.random.default_rng(seed)
    mu_out = params["location_spread"] * rng.standard_normal(n_records)
    sd_out = params["sigma"] * np.exp(params["heterogeneity"] * rng.standard_normal(n_records))
    d = params["effect"] * rng.standard_normal(n_records) ** 2
    sign = np.where(rng.random(n_records) < params["negative_share"], -1.0, 1.0)
    mu_in = mu_out + sign * d * sd_out
    sd_in = params["in_sd_ratio"] * sd_out

    keep = keep_matrix(n_models, n_records, seed=rng)
    z = rng.standard_normal((n_models, n_records))
    score = np.where(keep, mu_in + sd_in * z, mu_out + sd_out * z)

    return SimulatedScores(
        score=_frozen(score),
        keep=_frozen(keep),
        mu_in=_frozen(mu_in),
        mu_out=_frozen(mu_out),
        sd_in=_frozen(sd_in),
        sd_out=_frozen(sd_out),
        pool_size=n_records,
        train_size=n_records // 2,
        seed=seed,
        params=params,
    )


# --------------------------------------------------------------------------------------------
# §3b: the finite-population bias of efficient LiRA


@dataclass(frozen=True, eq=False)
class FpcResult:
    """Spread of model outputs under the efficient protocol vs fresh training sets (spec §3b).

    Per repeat r (one fixed pool each), all arrays of shape (R,) unless stated:

    Attributes
    ----------
    pool_size, train_size, n_models, n_fresh, n_repeats, dim : int
        N+, N, M (models on the pool), models on fresh data, R, data dimension d.
    design : {"efficient", "subsets"}
    noise_sd : float
        τ, sd of the algorithmic noise added to every model output (0: deterministic training).
    seed : int or None
    fpc : float
        ``1 − N/N+``.
    sqrt_fpc : float
    sigma_ana : float
        Analytic sd of one output coordinate over fresh training sets: ``√(1/N + τ²)``.
    sigma_emp : ndarray
        sd (ddof = 1) over the M pool models of their output, root-mean-square over coordinates.
    sigma_ana_sim : ndarray
        The same sd over ``n_fresh`` models trained on fresh draws of N points from N(0, I).
    ratio : ndarray
        ``sigma_emp / sigma_ana``; concentrates around ``sqrt_fpc`` when τ = 0.
    ratio_sim : ndarray
        ``sigma_emp / sigma_ana_sim``.
    corrected : ndarray
        ``sigma_emp / √FPC``, the spec's correction; recovers ``sigma_ana`` when τ = 0.
    corrected_data_only : ndarray
        ``√((sigma_emp² − τ²)₊ / FPC + τ²)``: rescales only the data part of the variance (the
        right correction when training adds its own noise).
    mean_train_size : float
        Mean realised training-set size over models and repeats: N for both designs (per-model
        sizes vary under ``"efficient"``).
    record_sd_out : ndarray, shape (R, N+)
        Per-record spread over the OUT models of the per-record score ``⟨θ_m, x⟩`` (NaN for a
        record that is OUT in fewer than 2 models).
    record_sd_out_ana : ndarray, shape (R, N+)
        Its analytic value for fresh training sets: ``‖x‖ √(1/N + τ²)``.
    record_ratio : ndarray, shape (R, N+)
        ``record_sd_out / record_sd_out_ana``.
    """

    pool_size: int
    train_size: int
    n_models: int
    n_fresh: int
    n_repeats: int
    dim: int
    design: str
    noise_sd: float
    seed: int | None
    fpc: float
    sqrt_fpc: float
    sigma_ana: float
    sigma_emp: np.ndarray
    sigma_ana_sim: np.ndarray
    ratio: np.ndarray
    ratio_sim: np.ndarray
    corrected: np.ndarray
    corrected_data_only: np.ndarray
    mean_train_size: float
    record_sd_out: np.ndarray
    record_sd_out_ana: np.ndarray
    record_ratio: np.ndarray

    @property
    def record_ratio_rms(self) -> np.ndarray:
        """Per repeat, ``√(mean over records of record_ratio²)`` (records with ≥ 2 OUT models).

        NaN for a repeat without such records. A variance-scale average: free of the small-sample
        bias of a mean of sds. Expected about
        ``√(1 − N/(N+ − 1))`` for τ = 0 (a record that is OUT is absent from a pool of N+ − 1).
        """
        squared = np.where(np.isfinite(self.record_ratio), self.record_ratio, 0.0) ** 2
        counts = np.isfinite(self.record_ratio).sum(axis=1)
        return np.where(counts > 0, np.sqrt(squared.sum(axis=1) / np.maximum(counts, 1)), np.nan)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary with the per-repeat arrays (length R) and their summaries.

        Per-record arrays (R × N+) are summarised per repeat, not listed.
        """
        per_repeat = {
            "sigma_emp": self.sigma_emp,
            "sigma_ana_sim": self.sigma_ana_sim,
            "ratio": self.ratio,
            "ratio_sim": self.ratio_sim,
            "corrected": self.corrected,
            "corrected_data_only": self.corrected_data_only,
            "record_ratio_rms": self.record_ratio_rms,
        }
        return {
            "kind": "fpc_simulation",
            "pool_size": self.pool_size,
            "train_size": self.train_size,
            "n_models": self.n_models,
            "n_fresh": self.n_fresh,
            "n_repeats": self.n_repeats,
            "dim": self.dim,
            "design": self.design,
            "noise_sd": self.noise_sd,
            "seed": self.seed,
            "fpc": self.fpc,
            "sqrt_fpc": self.sqrt_fpc,
            "sigma_ana": self.sigma_ana,
            "mean_train_size": self.mean_train_size,
            "summary": {k: to_jsonable(_summary(v), nonfinite="null") for k, v in per_repeat.items()},
            "per_repeat": {k: to_jsonable(v, nonfinite="null") for k, v in per_repeat.items()},
            "caveat": (
                "If training adds its own randomness (seeds, dropout), only the data part of the "
                "variance should be divided by FPC: see corrected_data_only."
            ),
        }

    def __str__(self) -> str:
        ratio, corrected = _summary(self.ratio), _summary(self.corrected)
        lines = [
            f"FPC simulation: N+ = {self.pool_size}, N = {self.train_size}, M = {self.n_models} "
            f"({self.design}), d = {self.dim}, τ = {self.noise_sd:g}, {self.n_repeats} repeat(s), "
            f"seed {self.seed}",
            f"  √FPC = √(1 − N/N+)        = {self.sqrt_fpc:.4f}",
            f"  σ_emp/σ_ana               = {ratio['mean']:.4f} ± {ratio['se']:.4f} (mean ± se over repeats)",
            f"  σ_ana (analytic)          = {self.sigma_ana:.5f}; simulated {self.sigma_ana_sim.mean():.5f}",
            f"  σ_emp/√FPC (corrected)    = {corrected['mean']:.5f} ± {corrected['se']:.4f}",
            f"  per-record σ_out ratio    = {self.record_ratio_rms.mean():.4f} (rms over records)",
        ]
        if self.noise_sd > 0:
            lines.append(f"  data-only correction      = {self.corrected_data_only.mean():.5f}")
        return "\n".join(lines)


def _fresh_model_means(rng: np.random.Generator, n_models: int, train_size: int, dim: int) -> np.ndarray:
    """Means of ``n_models`` fresh training sets of ``train_size`` points from N(0, I_dim).

    The points are drawn (not the means directly) so the simulation is the protocol itself; draws
    are chunked over models to bound memory.
    """
    chunk = max(1, _CHUNK_VALUES // (train_size * dim))
    out = np.empty((n_models, dim))
    for start in range(0, n_models, chunk):
        stop = min(n_models, start + chunk)
        out[start:stop] = rng.standard_normal((stop - start, train_size, dim)).mean(axis=1)
    return out


def fpc_simulation(
    *,
    pool_size: int = 1000,
    train_size: int = 500,
    n_models: int = 256,
    n_repeats: int = 20,
    dim: int = 1,
    design: str = "efficient",
    noise_sd: float = 0.0,
    n_fresh: int | None = None,
    seed: int | None,
) -> FpcResult:
    """Analytic Gaussian simulation of the finite-population bias of efficient LiRA (spec §3b).

    Data ``x ~ N(0, I_d)``; the "model" trained on S is its empirical mean
    ``θ(S) = (1/|S|) Σ_{x∈S} x`` plus optional algorithmic noise ``τ ξ``, ``ξ ~ N(0, I_d)``. For each
    of R repeats:

    1. *Efficient protocol.* Draw one pool of N+ points; train M models on subsets of the pool
       (``keep`` below); ``σ_emp`` = sd over the M models of their output.
    2. *Analytic reference.* Over fresh training sets of N points from the distribution,
       ``Var θ = 1/N + τ²`` per coordinate, so ``σ_ana = √(1/N + τ²)``; ``σ_ana_sim`` estimates it
       with ``n_fresh`` models on fresh draws.

    For a pool with sample variance S² (≈ 1), the mean of an N-subset drawn without replacement has
    variance ``(S²/N)(1 − N/N+)`` (Cochran 1977, Thm. 2.2), hence with τ = 0
    ``σ_emp/σ_ana ≈ √FPC``, ``FPC = 1 − N/N+``, and ``σ_emp/√FPC`` recovers σ_ana (MIA paper,
    finite population correction and its Gaussian simulation).

    **Caveat:** when training adds its own randomness (τ > 0: seeds, dropout, ...), only the data
    part of the variance shrinks; dividing the whole variance by FPC over-corrects. The right
    correction is ``σ² = (σ²_emp − τ²)/FPC + τ²`` (``corrected_data_only``), which needs τ, e.g.
    from retraining on one fixed set with different seeds.

    Per-record view (what LiRA fits): the score of record x under model m is ``⟨θ_m, x⟩``, the
    part of the Gaussian log-likelihood ``log N(x; θ_m, I)`` that couples model and record (the
    rest, ``−½‖x‖² − ½‖θ_m‖²``, depends on the record only or on the model only). Its spread over
    the models that are OUT on x is ``record_sd_out``; for fresh training sets it is exactly
    ``‖x‖ √(1/N + τ²)`` (``record_sd_out_ana``). With τ = 0 the ratio concentrates around
    ``√(1 − N/(N+ − 1)) ≈ √FPC``: the OUT models of x draw from the N+ − 1 other pool points.

    Parameters
    ----------
    pool_size : int, default 1000
        N+ (>= 3).
    train_size : int, default 500
        N, 1 <= N < N+.
    n_models : int, default 256
        M, models trained on the pool per repeat (>= 2).
    n_repeats : int, default 20
        R, number of independent pools (>= 1).
    dim : int, default 1
        d, dimension of the data.
    design : {"efficient", "subsets"}, default "efficient"
        ``"efficient"``: the efficient-LiRA keep design (:func:`~dpaudit.mia.scores.keep_matrix`),
        every record IN in exactly M/2 models; needs N = N+/2 and an even M >= 4. Training-set
        sizes vary around N (they average exactly N). ``"subsets"``: each model an independent
        simple random sample of exactly N records (any N < N+).
    noise_sd : float, default 0.0
        τ >= 0, sd of the algorithmic noise added to each output coordinate.
    n_fresh : int, optional
        Models trained on fresh data for ``sigma_ana_sim`` (default: ``n_models``; >= 2).
    seed : int or None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    FpcResult

    Raises
    ------
    DPAuditError
        For sizes out of range, an unknown design, or ``design="efficient"`` with N ≠ N+/2 or an
        odd M or M < 4.

    References
    ----------
    MIA paper (arXiv 2605.25819), finite population correction and its Gaussian simulation;
    Cochran, *Sampling Techniques* (1977), Thm. 2.2 and Sec. 2.6.

    Examples
    --------
    >>> res = fpc_simulation(pool_size=200, train_size=100, n_models=64, n_repeats=3, seed=0)
    >>> round(res.sqrt_fpc, 4), res.ratio.shape
    (0.7071, (3,))
    >>> bool(0.5 < res.ratio.mean() < 0.9)
    True
    """
    pool_size = _int_arg("pool_size", pool_size, 3)
    train_size = _int_arg("train_size", train_size, 1)
    if train_size >= pool_size:
        raise DPAuditError(
            f"train_size must be smaller than pool_size (FPC = 1 − N/N+ must be > 0), got "
            f"train_size={train_size}, pool_size={pool_size}"
        )
    n_models = _int_arg("n_models", n_models, 2)
    n_repeats = _int_arg("n_repeats", n_repeats, 1)
    dim = _int_arg("dim", dim, 1)
    n_fresh = n_models if n_fresh is None else _int_arg("n_fresh", n_fresh, 2)
    if design not in _DESIGNS:
        raise DPAuditError(f"design must be one of {', '.join(_DESIGNS)}, got {design!r}")
    noise_sd = _float_arg("noise_sd", noise_sd, low=0.0, low_open=False)
    seed = _seed_arg(seed)
    if design == "efficient":
        if 2 * train_size != pool_size:
            raise DPAuditError(
                f"design='efficient' puts every record IN exactly half the models, so "
                f"train_size must be pool_size/2 = {pool_size / 2:g}, got train_size={train_size}: "
                f"change train_size or use design='subsets'"
            )
        if n_models % 2 or n_models < 4:
            raise DPAuditError(
                f"design='efficient' needs an even n_models >= 4 (every record IN in n_models/2 "
                f"models and OUT in at least 2, for a per-record sd), got {n_models}"
            )

    fpc = 1.0 - train_size / pool_size
    sigma_ana = math.sqrt(1.0 / train_size + noise_sd**2)
    rng = np.random.default_rng(seed)

    sigma_emp = np.empty(n_repeats)
    sigma_ana_sim = np.empty(n_repeats)
    record_sd_out = np.empty((n_repeats, pool_size))
    record_sd_out_ana = np.empty((n_repeats, pool_size))
    total_size = 0
    for r in range(n_repeats):
        pool = rng.standard_normal((pool_size, dim))
        if design == "efficient":
            keep = keep_matrix(n_models, pool_size, seed=rng)
        else:
            keep = _subset_keep(rng, n_models, pool_size, train_size)
        sizes = keep.sum(axis=1)
        total_size += int(sizes.sum())
        # An efficient-design model may (for tiny pools only) get an empty training set; its output
        # is then taken as 0, the mean of the data distribution, plus the algorithmic noise.
        theta = (keep.astype(np.float64) @ pool) / np.maximum(sizes, 1)[:, None]
        theta += noise_sd * rng.standard_normal((n_models, dim))
        sigma_emp[r] = math.sqrt(theta.var(axis=0, ddof=1).mean())

        fresh = _fresh_model_means(rng, n_fresh, train_size, dim)
        fresh += noise_sd * rng.standard_normal((n_fresh, dim))
        sigma_ana_sim[r] = math.sqrt(fresh.var(axis=0, ddof=1).mean())

        score = theta @ pool.T  # (M, N+): ⟨θ_m, x⟩
        out = ~keep
        n_out = out.sum(axis=0)
        mean_out = np.where(out, score, 0.0).sum(axis=0) / np.maximum(n_out, 1)
        ss = np.where(out, (score - mean_out) ** 2, 0.0).sum(axis=0)
        record_sd_out[r] = np.where(n_out >= 2, np.sqrt(ss / np.maximum(n_out - 1, 1)), np.nan)
        record_sd_out_ana[r] = np.linalg.norm(pool, axis=1) * sigma_ana

    sqrt_fpc = math.sqrt(fpc)
    data_var = np.maximum(sigma_emp**2 - noise_sd**2, 0.0)
    return FpcResult(
        pool_size=pool_size,
        train_size=train_size,
        n_models=n_models,
        n_fresh=n_fresh,
        n_repeats=n_repeats,
        dim=dim,
        design=design,
        noise_sd=noise_sd,
        seed=seed,
        fpc=fpc,
        sqrt_fpc=sqrt_fpc,
        sigma_ana=sigma_ana,
        sigma_emp=_frozen(sigma_emp),
        sigma_ana_sim=_frozen(sigma_ana_sim),
        ratio=_frozen(sigma_emp / sigma_ana),
        ratio_sim=_frozen(sigma_emp / sigma_ana_sim),
        corrected=_frozen(sigma_emp / sqrt_fpc),
        corrected_data_only=_frozen(np.sqrt(data_var / fpc + noise_sd**2)),
        mean_train_size=total_size / (n_models * n_repeats),
        record_sd_out=_frozen(record_sd_out),
        record_sd_out_ana=_frozen(record_sd_out_ana),
        record_ratio=_frozen(record_sd_out / record_sd_out_ana),
    )
