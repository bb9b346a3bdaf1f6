"""The analytic Gaussian simulation of efficient LiRA's finite-population bias (spec ``mia.md`` §3b).

The "model" is the empirical mean of its training set; training sets drawn without replacement from
one fixed pool of N+ points spread less than training sets drawn from the distribution, by the
factor ``√FPC = √(1 − N/N+)`` (MIA paper, finite population correction; Cochran 1977, Thm. 2.2 and
Sec. 2.6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._arrays import frozen
from dpaudit._errors import DPAuditError
from dpaudit._io import to_jsonable
from dpaudit._validation import number, one_of, seed_value, whole_number
from dpaudit.mia._defaults import FPC_DEFAULTS, FPC_DESIGNS, MAX_REPEATS
from dpaudit.mia.designs import efficient_models, keep_matrix
from dpaudit.mia.scores import check_train_size
from dpaudit.mia.simulate._limits import MAX_CELLS, within_cells
from dpaudit.mia.simulate._summary import summary

__all__ = ["FpcResult", "fpc_simulation", "FPC_DESIGNS", "FPC_DEFAULTS", "MAX_REPEATS"]

_REPEATS_HINT = " (10,000 repeats pin the mean ratio to ~5e-4; more only cost time)"
_CHUNK_VALUES = 1 << 22  # fresh-data draws are made in chunks of at most this many floats


def _subset_keep(rng: np.random.Generator, n_models: int, n_records: int, train_size: int) -> np.ndarray:
    """Independent simple random subsets: model m is IN on exactly ``train_size`` distinct records."""
    ranks = np.argsort(rng.random((n_models, n_records)), axis=1)
    return ranks < train_size



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
            "summary": {k: to_jsonable(summary(v), nonfinite="null") for k, v in per_repeat.items()},
            "per_repeat": {k: to_jsonable(v, nonfinite="null") for k, v in per_repeat.items()},
            "caveat": (
                "If training adds its own randomness (seeds, dropout), only the data part of the "
                "variance should be divided by FPC: see corrected_data_only."
            ),
        }

    def __str__(self) -> str:
        ratio, corrected = summary(self.ratio), summary(self.corrected)
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
    pool_size: int = FPC_DEFAULTS["pool_size"],
    train_size: int = FPC_DEFAULTS["train_size"],
    n_models: int = 256,
    n_repeats: int = FPC_DEFAULTS["n_repeats"],
    dim: int = 1,
    design: str = FPC_DESIGNS[0],
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
        R, number of independent pools (1 to :data:`MAX_REPEATS` = 10⁴). Memory bounds (M + R) × N+ to
        :data:`~dpaudit.mia.simulate._limits.MAX_CELLS` = 5 × 10⁸ (27 bytes per cell of M × N+, 24 per
        cell of R × N+: ~13 GB at the bound).
    dim : int, default 1
        d, dimension of the data; d × (N+ + M + n_fresh) ≤ 5 × 10⁸ as well.
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
        For sizes out of range (the memory bounds above included), an unknown design, or
        ``design="efficient"`` with N ≠ N+/2 or an odd M or M < 4.

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
    pool_size = within_cells("pool_size", pool_size, per=3, what="M + R >= 3", minimum=3)
    train_size = check_train_size(train_size, pool_size)
    n_models = within_cells("n_models", n_models, per=pool_size, what=f"pool_size = {pool_size}", minimum=2,
                            maximum=MAX_CELLS // pool_size - 1)
    n_repeats = within_cells("n_repeats", whole_number("n_repeats", n_repeats, minimum=1, maximum=MAX_REPEATS,
                                                       hint=_REPEATS_HINT),
                             per=pool_size, maximum=MAX_CELLS // pool_size - n_models,
                             what=f"pool_size = {pool_size} and n_models = {n_models}, (M + R) × N+")
    n_fresh = n_models if n_fresh is None else within_cells("n_fresh", n_fresh, per=pool_size,
                                                            what=f"pool_size = {pool_size}", minimum=2)
    dim = within_cells("dim", dim, per=pool_size + n_models + n_fresh, what="N+ + M + n_fresh values per dimension")
    design = one_of("design", design, FPC_DESIGNS)
    noise_sd = number("noise_sd", noise_sd, low=0.0, low_open=False)
    seed = seed_value("seed", seed)
    if design == "efficient":
        if 2 * train_size != pool_size:
            raise DPAuditError(
                f"design='efficient' puts every record IN exactly half the models, so "
                f"train_size must be pool_size/2 = {pool_size / 2:g}, got train_size={train_size}: "
                f"change train_size or use design='subsets'"
            )
        efficient_models(n_models, minimum=4)  # OUT in at least 2 models, for a per-record sd

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
        sigma_emp=frozen(sigma_emp),
        sigma_ana_sim=frozen(sigma_ana_sim),
        ratio=frozen(sigma_emp / sigma_ana),
        ratio_sim=frozen(sigma_emp / sigma_ana_sim),
        corrected=frozen(sigma_emp / sqrt_fpc),
        corrected_data_only=frozen(np.sqrt(data_var / fpc + noise_sd**2)),
        mean_train_size=total_size / (n_models * n_repeats),
        record_sd_out=frozen(record_sd_out),
        record_sd_out_ana=frozen(record_sd_out_ana),
        record_ratio=frozen(record_sd_out / record_sd_out_ana),
    )
