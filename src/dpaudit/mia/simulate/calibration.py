"""Per-record Gaussian scores with known truth, for the TPR rules (spec ``mia.md`` §3a).

:func:`gaussian_scores` draws a score matrix ``score[m, x]`` and an efficient-LiRA ``keep`` matrix
from per-record Gaussians whose parameters are known, so every estimate of vulnerability (naive
concatenation, PP concatenation, the per-record estimators) can be compared with the exact mean
per-record TPR of the oracle test (:meth:`SimulatedScores.true_mean_tpr`) or of the finite-M test
an estimator estimates (:meth:`SimulatedScores.true_tpr_of_test`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from dpaudit._arrays import frozen
from dpaudit._io import to_jsonable
from dpaudit._validation import number, number_array, one_of, seed_value, unit_interval
from dpaudit.mia.designs import efficient_models, keep_matrix
from dpaudit.mia.scores import ScoreSet, ScoreShape
from dpaudit.mia.simulate._limits import within_cells
from dpaudit.mia.simulate._summary import summary

__all__ = ["SimulatedScores", "gaussian_scores", "DEFAULT_ALPHAS"]

#: FPR levels reported by default (spec §3: 1e-2, 1e-3, 1e-4; 1e-1 as an easy reference).
DEFAULT_ALPHAS: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4)


@dataclass(frozen=True, eq=False)
class SimulatedScores(ScoreShape):
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
    def delta(self) -> np.ndarray:
        """Per-record effect ``Δ_x = μ_in,x − μ_out,x``."""
        return self.mu_in - self.mu_out

    def to_scoreset(self, **meta: Any) -> ScoreSet:
        """The simulated scores as a :class:`~dpaudit.mia.scores.ScoreSet` (N = N+/2), with ``meta``.

        Examples
        --------
        >>> gaussian_scores(8, 10, seed=0).to_scoreset(source="doc")
        ScoreSet(n_models=8, n_records=10, train_size=5, pool_size=10, meta={'simulation': 'gaussian_scores', 'seed': 0, 'source': 'doc'})
        """
        return ScoreSet(self.score, self.keep, train_size=self.train_size, pool_size=self.pool_size,
                        meta={"simulation": "gaussian_scores", "seed": self.seed, **meta})

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
        z = stats.norm.isf(unit_interval("alpha", alpha, " (a target FPR)"))
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
        alpha = unit_interval("alpha", alpha, " (a target FPR)")
        test = one_of("test", test, ("t", "conformal"))
        n = np.broadcast_to(number_array("n_out", n_out, integer=True, low=2), self.mu_in.shape).astype(np.int64)
        r = self.sd_in / self.sd_out
        d = self.delta / self.sd_out
        if test == "t":
            from dpaudit.mia.calibrate import threshold

            scale = np.sqrt(r**2 + 1.0 / n)
            return stats.nct.sf(threshold(alpha, kind="t", n_out=n) / scale, n - 1, d / scale)
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
            "standardized_effect": to_jsonable(summary(standardized), nonfinite="null"),
            "sd_out": to_jsonable(summary(self.sd_out), nonfinite="null"),
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
        N+, >= 2. M × N+ is at most :data:`~dpaudit.mia.simulate._limits.MAX_CELLS` = 5 × 10⁸ (about
        34 bytes of memory per cell with the evaluation: ~17 GB).
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
        For a non-integer, odd or too small ``n_models``, a bad ``n_records``, more than 5 × 10⁸ cells
        or an out-of-range parameter; the message names the value and what is allowed.

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
    n_models = within_cells("n_models", efficient_models(n_models), per=2, what="at least 2 records", minimum=2)
    n_records = within_cells("n_records", n_records, per=n_models, what=f"n_models = {n_models}", minimum=2)
    seed = seed_value("seed", seed)
    params = {
        "effect": number("effect", effect, low=0.0, low_open=False),
        "sigma": number("sigma", sigma, low=0.0, low_open=True),
        "heterogeneity": number("heterogeneity", heterogeneity, low=0.0, low_open=False),
        "location_spread": number("location_spread", location_spread, low=0.0, low_open=False),
        "in_sd_ratio": number("in_sd_ratio", in_sd_ratio, low=0.0, low_open=True),
        "negative_share": number("negative_share", negative_share, low=0.0, low_open=False, high=1.0),
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
        score=frozen(score),
        keep=frozen(keep),
        mu_in=frozen(mu_in),
        mu_out=frozen(mu_out),
        sd_in=frozen(sd_in),
        sd_out=frozen(sd_out),
        pool_size=n_records,
        train_size=n_records // 2,
        seed=seed,
        params=params,
    )
