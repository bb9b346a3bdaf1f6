"""Leave-one-out Gaussian fits of every (target model, record) at once (spec ``mia.md`` §2).

For target model ``m`` and record ``x``, two Gaussians are fitted to the scores of the *other* models
(efficient LiRA reuses every model as target and shadow; Carlini et al., IEEE S&P 2022):

    IN  ~ N(μ_in,  σ²_in)   from {score[m', x] : m' ≠ m, keep[m', x]}
    OUT ~ N(μ_out, σ²_out)  from {score[m', x] : m' ≠ m, not keep[m', x]}

With ``references="balanced"`` (the evaluation's default, :mod:`dpaudit.mia.references`) each target
also leaves out one *partner* of the other group, so that every target, IN or OUT, is fitted from
``n_in − 1`` IN and ``n_out − 1`` OUT scores and no fitted quantity depends on its own membership
under the null; ``"loo"`` is the plain leave-one-out above (``n_in − 1`` and ``n_out`` for an IN
target, ``n_in`` and ``n_out − 1`` for an OUT one).

LiRA's statistics (:mod:`dpaudit.mia.attacks.lira`), the PP calibration
(:mod:`dpaudit.mia.calibrate`) and the evaluation read them. One pass of per-record sums
(:func:`record_moments`) gives all ``M × N+`` fits; :class:`LooFitter` turns them into the fits of
any block of records, so the evaluation never holds more than one block of fits (:func:`loo_fits`
assembles all of them). Standard deviations of 0 (all other scores equal) are floored at
:data:`SD_FLOOR` = 1e-30 wherever they divide (the LiRA reference code adds 1e-30), so a perfectly
separated record yields a huge but finite statistic instead of NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import number, one_of, whole_number
from dpaudit.mia.moments import BLOCK_ELEMENTS, RecordMoments, column_blocks, record_moments
from dpaudit.mia.references import PARTNER_SEED, REFERENCES, References, partner_rows
from dpaudit.mia.scores import check_score_keep

__all__ = ["LooFits", "loo_fits", "LooFitter", "RecordMoments", "record_moments", "column_blocks", "BLOCK_ELEMENTS",
           "check_fpc",
           "fit_options", "Location", "Variance", "LOCATIONS", "VARIANCES", "DEFAULT_LOCATION", "DEFAULT_VARIANCE",
           "SD_FLOOR", "floored_sd", "target_score"]

#: Location of a fit: the mean, or the median of the other models' scores (LiRA reference-code parity).
Location = Literal["mean", "median"]
#: Variance of a fit: each record's own, or the LiRA paper's pooled "fixed variance" (:func:`loo_fits`).
Variance = Literal["per-record", "global"]
LOCATIONS: tuple[Location, ...] = get_args(Location)
VARIANCES: tuple[Variance, ...] = get_args(Variance)
#: The defaults of every fit (:func:`loo_fits`, :class:`LooFitter`, the attacks' options).
DEFAULT_LOCATION: Location = "mean"
DEFAULT_VARIANCE: Variance = "per-record"


#: Floor applied to fitted standard deviations inside the statistics and the PP transform.
SD_FLOOR = 1e-30
@dataclass(frozen=True, eq=False, repr=False)
class LooFits:
    """Leave-one-out Gaussian fits for every target ``(m, x)``; every array has shape (M, N+).

    Attributes
    ----------
    mu_in, sd_in : ndarray of float, shape (M, N+)
        Location and standard deviation of the IN scores of record ``x`` from models ``m' ≠ m``.
    mu_out, sd_out : ndarray of float, shape (M, N+)
        The same from the OUT scores.
    n_in, n_out : ndarray of int, shape (M, N+)
        Number of models in each fit (``n_in + n_out = M − 1``; ``M − 2`` with balanced references).
    location, variance : str
        The options the fits were made with (see :func:`loo_fits`).
    ddof : int
    fpc : float or None
        Finite-population correction the variances were divided by (None: none).
    """

    mu_in: np.ndarray
    sd_in: np.ndarray
    mu_out: np.ndarray
    sd_out: np.ndarray
    n_in: np.ndarray
    n_out: np.ndarray
    location: Location = DEFAULT_LOCATION
    variance: Variance = DEFAULT_VARIANCE
    ddof: int = 1
    fpc: float | None = None
    references: References = "loo"

    @property
    def shape(self) -> tuple[int, int]:
        """(M, N+)."""
        m, n = self.mu_in.shape
        return int(m), int(n)

    def __repr__(self) -> str:
        m, n = self.shape
        return (
            f"LooFits(n_models={m}, n_records={n}, location={self.location!r}, variance={self.variance!r}, "
            f"ddof={self.ddof}, fpc={self.fpc!r}, references={self.references!r})"
        )


class LooFitter:
    """Leave-one-out fits of any block of records, from one pass of per-record sums.

    Parameters as :func:`loo_fits` (whose Notes give the formulas); ``score`` and ``keep`` must
    already be validated float64 and bool arrays. ``moments`` may pass precomputed
    :func:`record_moments` of the same matrices. :meth:`fits` returns the :class:`LooFits` of a slice
    of records; only the global ("fixed") variance needs a pass over every record first, to pool the
    within-record sums of squares of each model (with one (M, N+) array, so that each model's sum
    is the same pairwise sum as over the whole matrix at once).

    Examples
    --------
    >>> from dpaudit.mia.designs import keep_matrix
    >>> keep = keep_matrix(8, 6, seed=0)
    >>> score = np.where(keep, 1.0, 0.0) + np.arange(8)[:, None] / 100
    >>> fitter = LooFitter(score, keep)
    >>> bool(np.array_equal(fitter.fits(slice(2, 4)).mu_in, loo_fits(score, keep).mu_in[:, 2:4]))
    True
    """

    def __init__(self, score: np.ndarray, keep: np.ndarray, *, location: Location = DEFAULT_LOCATION,
                 variance: Variance = DEFAULT_VARIANCE, ddof: int = 1, fpc: float | None = None,
                 moments: RecordMoments | None = None, references: References = "loo",
                 partner_seed: int = PARTNER_SEED) -> None:
        location, variance = fit_options(location, variance)
        self.references = one_of("references", references, REFERENCES)
        self.partner_seed = whole_number("partner_seed", partner_seed, minimum=0)
        self.score, self.keep = score, keep
        self.location, self.variance, self.ddof = location, variance, whole_number("ddof", ddof, minimum=0)
        self.fpc = None if fpc is None else check_fpc(fpc)
        self.moments = record_moments(score, keep) if moments is None else moments
        mom = self.moments
        if min(mom.n_in.min(), mom.n_out.min()) - 1 <= self.ddof:
            raise DPAuditError(f"ddof = {self.ddof} needs more than {self.ddof} models in every leave-one-out fit")
        eps = np.finfo(np.float64).eps
        # per record and group: n, n − 1, n − ddof, the mean, SS and the downdate's rounding bound
        self._groups = {
            g: (n, n - 1.0, n - self.ddof, mean, ss, 4 * n * eps * ss)
            for g, n, mean, ss in (("in", mom.n_in, mom.mean_in, mom.ss_in), ("out", mom.n_out, mom.mean_out, mom.ss_out))
        }
        self._global: dict[str, np.ndarray] = {}
        if variance == "global":
            for g in ("in", "out"):
                ss_all = np.empty(score.shape)
                dof = np.zeros(score.shape[0], dtype=np.int64)
                for cols in column_blocks(score.shape[1], score.shape[0]):
                    _, ss, count = self._group(g, cols, self.partners(cols))
                    ss_all[:, cols] = ss
                    dof += (count - self.ddof).sum(axis=1)
                var = ss_all.sum(axis=1) / dof
                del ss_all
                if self.fpc is not None:
                    var /= self.fpc
                self._global[g] = np.sqrt(var)[:, None]

    def partners(self, cols: slice) -> dict[str, np.ndarray] | None:
        """Balanced references: per group ("in", "out"), each record's model that the targets outside the
        group leave out of it (:func:`~dpaudit.mia.references.partner_rows`); None for plain leave-one-out."""
        if self.references == "loo":
            return None
        best_in, best_out = partner_rows(self.keep[:, cols], cols.start or 0, seed=self.partner_seed)
        return {"in": best_in, "out": best_out}

    def _group(self, g: str, cols: slice,
               partners: dict[str, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """LOO mean, sum of squares and count of group ``g`` for every target of ``cols`` (Notes of :func:`loo_fits`).

        Leave-one-out: with ``w = 1`` for a target in the group and 0 outside, ``d = (t − μ)·w`` and
        ``n' = n − w``: ``μ' = μ − d/(n − 1)``, ``SS' = SS − d²·n/(n − 1)`` (for a target outside the
        group d = 0, so dividing by n − 1 instead of n changes nothing). Balanced (``partners``): every
        target removes one score of the group, its own if it is in the group, else its partner's, so
        ``d = r − μ`` with that score r and ``n' = n − 1`` for all.
        """
        n, n1, _, mean, ss_full, bound = (v[cols] for v in self._groups[g])
        k = self.keep[:, cols]
        member = k if g == "in" else ~k
        s = self.score[:, cols]
        removed = None
        if partners is None:
            w = member.astype(np.float64)
            dev = np.subtract(s, mean)
            dev *= w
            count = n.astype(np.int64) - member
        else:  # a target outside the group removes the record's partner of the group (one score per record)
            partner_score = s[partners[g], np.arange(s.shape[1])]
            removed = partner_score  # (the removed scores are formed again where _snap_constant needs them)
            # d = r − μ as (t − μ)·[member] + (partner − μ)·[not member], not np.where (a random mask costs it
            # ten times an add): adding the other term's exact zero leaves d as it is but for the sign of a
            # zero d, which changes neither SS' (d²) nor μ' = μ − d/(n − 1) (μ − (±0) is one float unless
            # μ = −0, and then neither form of d is −0: x − (−0) never is)
            dev = np.subtract(s, mean)
            dev *= member
            dev += np.multiply(~member, partner_score - mean)
            count = np.broadcast_to(n.astype(np.int64) - 1, k.shape)  # a read-only view: one count per record
        mu = dev / n1
        np.subtract(mean, mu, out=mu)
        np.square(dev, out=dev)
        dev *= n
        dev /= n1
        ss = np.subtract(ss_full, dev, out=dev)
        # The downdate's rounding error is at most a few n·eps·SS; anything below is noise (or exactly
        # 0, as when all other scores are equal), so it is set to 0 rather than left as ±1e-16 (and then
        # SS' = 0 exactly where it was ≤ that bound, which is ≥ 0).
        zero = ss <= bound
        np.copyto(ss, 0.0, where=zero)
        self._snap_constant(g, cols, mu, ss, s, member, removed, count, zero.any(axis=0))
        return mu, ss, count

    def _snap_constant(self, g: str, cols: slice, mu: np.ndarray, ss: np.ndarray, s: np.ndarray, member: np.ndarray,
                       partner_score: np.ndarray | None, count: np.ndarray, zero: np.ndarray) -> None:
        """Fits whose remaining scores are all equal: mean exactly that value, SS exactly 0 (in place).

        The downdate ``μ' = μ − d/(n − 1)`` is off by a few ulps when the removed score differs from
        the others, and against a standard deviation of 0 (floored at 1e-30) an ulp between a target
        and μ' is a statistic of ±1e30 whose sign is the rounding's. Which of a target's IN or OUT fits
        carries the rounding depends on its own membership, so on null data the sign did too
        (measured: random-forest-like scores at M = 16, 281 huge IN statistics against 1,355 OUT ones
        over 30 nulls; 1,132 against 1,126 now). Only records with a fit whose SS' fell within the
        downdate's rounding (``ss`` already 0 there) are looked at: with the group's largest value B
        (held by b models) and smallest S (by s), removing one score r (a member its own; with balanced
        references a non-member its record's ``partner_score``, with plain leave-one-out none) leaves n' = ``count`` equal scores exactly
        when B = S, or r = S with s = 1 and b = n', or r = B with b = 1 and s = n'; their value is B
        unless r = B ≠ S. (A group equal from the start has its exact mean and SS = 0 already:
        :func:`record_moments`.)
        """
        where = np.flatnonzero(zero & (self._groups[g][4][cols] > 0))
        if not where.size:
            return
        sub, grp, left = s[:, where], member[:, where], count[:, where]
        b = np.where(grp, sub, -np.inf).max(axis=0)
        sm = np.where(grp, sub, np.inf).min(axis=0)
        nb = np.count_nonzero((sub == b) & grp, axis=0)
        ns = np.count_nonzero((sub == sm) & grp, axis=0)
        r = np.where(grp, sub, np.nan if partner_score is None else partner_score[None, where])
        constant = (b == sm) | ((r == sm) & (ns == 1) & (nb == left)) | ((r == b) & (nb == 1) & (ns == left))
        value = np.where((r == b) & (b != sm), sm, b)
        block_mu, block_ss = mu[:, where], ss[:, where]
        block_mu[constant] = np.broadcast_to(value, constant.shape)[constant]
        block_ss[constant] = 0.0
        mu[:, where], ss[:, where] = block_mu, block_ss

    def fits(self, cols: slice) -> LooFits:
        """The :class:`LooFits` of the records in ``cols`` (arrays of shape (M, width))."""
        parts = {}
        partners = self.partners(cols)
        for g in ("in", "out"):
            mu, ss, count = self._group(g, cols, partners)
            if self.variance == "per-record":
                # a count that is one per record (balanced references: a broadcast row) is divided by as a row
                dof = (count[0] if count.strides[0] == 0 else count) - self.ddof
                var = np.divide(ss, dof, out=ss)
                if self.fpc is not None:
                    var /= self.fpc
                sd = np.sqrt(var, out=var)
            else:
                sd = np.broadcast_to(self._global[g], ss.shape).copy()
            if self.location == "median":
                k = self.keep[:, cols]
                mu = _loo_median(self.score[:, cols], k if g == "in" else ~k,
                                 None if partners is None else partners[g])
            parts[g] = (mu, sd, count)
        return LooFits(mu_in=parts["in"][0], sd_in=parts["in"][1], mu_out=parts["out"][0], sd_out=parts["out"][1],
                       n_in=parts["in"][2], n_out=parts["out"][2], location=self.location, variance=self.variance,
                       ddof=self.ddof, fpc=self.fpc, references=self.references)


def loo_fits(
    score: Any,
    keep: Any,
    *,
    location: Location = DEFAULT_LOCATION,
    variance: Variance = DEFAULT_VARIANCE,
    ddof: int = 1,
    fpc: float | None = None,
    references: References = "loo",
) -> LooFits:
    """Leave-one-out IN and OUT Gaussian fits for every target model and record.

    Parameters
    ----------
    score : array_like of float, shape (M, N+)
    keep : array_like of bool, shape (M, N+)
        Validated like :class:`~dpaudit.mia.scores.ScoreSet` (every record IN in ≥ 3 and OUT in ≥ 3
        models, so every fit has ≥ 2 models).
    location : {"mean", "median"}
        ``"mean"`` (default) or the median of the other models' scores (LiRA reference-code parity).
        The standard deviation is always the sample sd around the mean.
    variance : {"per-record", "global"}
        ``"per-record"``: σ² of each record's other IN (OUT) scores. ``"global"``: the LiRA paper's
        "fixed variance" (advised below ~64 shadow models): one pooled within-record variance
        for IN and one for OUT, over all records, from the models other than the target model ``m``:

            σ²_in[m] = Σ_x SS_in[m, x] / Σ_x (n_in[m, x] − ddof)

        where ``SS_in[m, x]`` is the sum of squared deviations of record ``x``'s other IN scores from
        their mean. So it depends on ``m`` only, and excludes model ``m`` everywhere.
    ddof : int
        Delta degrees of freedom of the variance (default 1: the unbiased sample variance).
    fpc : float in (0, 1], optional
        Finite-population correction ``1 − N/N+`` (:func:`dpaudit.mia.calibrate.fpc_factor`); the
        variances are divided by it: ``σ² = σ²_emp / FPC`` (spec §3b, the MIA paper; Cochran 1977). It corrects the
        data-sampling part of the variance only: if training adds its own randomness (seeds, dropout),
        rescaling everything over-corrects.
    references : {"loo", "balanced"}, default "loo"
        ``"loo"``: the other models' scores (LiRA). ``"balanced"``: also without one partner of the
        other group per target, so every target's fits hold ``n_in − 1`` IN and ``n_out − 1`` OUT
        scores (:mod:`dpaudit.mia.references`; the evaluation's default).

    Returns
    -------
    LooFits

    Notes
    -----
    *Mean and variance* come from per-record group sums (:func:`record_moments`) minus the target's
    row. Scores are first centred by their record's full group mean ``μ`` (so the sums of squares do
    not cancel); a target in the group with deviation ``d = t − μ`` is removed by the exact downdate

        μ' = μ − d/(n − 1),   SS' = SS − d²·n/(n − 1),

    and targets outside the group see the full-group ``μ``, ``SS``. A downdated ``SS'`` below the
    subtraction's rounding error, ``4·n·eps·SS``, is set to 0 (so equal scores give σ = 0 exactly).
    The fits are computed in blocks of records (:class:`LooFitter`), so the temporaries are a few
    blocks, not full (M, N+) arrays (the global variance lays its sums of squares out once).

    *Median*: each record's group scores are sorted once (stable, other models' entries sent to +∞).
    The leave-one-out median of ``n' = n − [target in group]`` values averages the order statistics
    ``j₁ = ⌊(n' − 1)/2⌋`` and ``j₂ = ⌊n'/2⌋`` of the remaining values; when the target is in the group
    at sorted rank ``r``, the remaining ``j``-th value is the full group's ``(j + [j ≥ r])``-th (the
    target's own score is skipped whether it lies below or above the median).

    Examples
    --------
    >>> from dpaudit.mia.designs import keep_matrix
    >>> keep = keep_matrix(8, 3, seed=0)
    >>> score = np.where(keep, 1.0, 0.0) + np.arange(8)[:, None] / 100
    >>> f = loo_fits(score, keep)
    >>> f.shape, int(f.n_in[0, 0] + f.n_out[0, 0])
    ((8, 3), 7)
    >>> bool(np.all(f.mu_in > f.mu_out))
    True
    """
    score, keep = check_score_keep(score, keep)
    fitter = LooFitter(score, keep, location=location, variance=variance, ddof=ddof, fpc=fpc, references=references)
    names = ("mu_in", "sd_in", "mu_out", "sd_out", "n_in", "n_out")
    full = {name: np.empty(score.shape, dtype=np.int64 if name.startswith("n_") else np.float64) for name in names}
    for cols in column_blocks(score.shape[1], score.shape[0]):
        block = fitter.fits(cols)
        for name in names:
            full[name][:, cols] = getattr(block, name)
    return LooFits(**full, location=location, variance=variance, ddof=fitter.ddof, fpc=fitter.fpc,
                   references=fitter.references)


def fit_options(location: Any, variance: Any) -> tuple[Location, Variance]:
    """``location`` and ``variance`` of the fits, each one of :data:`LOCATIONS` / :data:`VARIANCES`."""
    return one_of("location", location, LOCATIONS), one_of("variance", variance, VARIANCES)


#: Why the finite-population correction lies in (0, 1] (the ``hint`` of its message).
FPC_HINT = " (1 − train_size/pool_size)"


def check_fpc(fpc: Any) -> float:
    """``fpc`` as a float in (0, 1] (the finite-population correction ``1 − N/N+``), else DPAuditError."""
    return number("fpc", fpc, low=0.0, low_open=True, high=1.0, hint=FPC_HINT)


def _loo_median(score: np.ndarray, group: np.ndarray, partner: np.ndarray | None = None) -> np.ndarray:
    """Median of each record's ``group`` scores from the models other than the target (Notes above);
    with ``partner`` (balanced references: per record, the group's model its outside targets leave out),
    a target outside the group leaves out that model's score."""
    n_models = score.shape[0]
    vals = np.where(group, score, np.inf)
    order = np.argsort(vals, axis=0, kind="stable")
    ordered = np.take_along_axis(vals, order, axis=0)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(n_models)[:, None], order.shape), axis=0)
    if partner is None:
        removed, n = group, group.sum(axis=0)[None, :] - group
    else:  # every target removes one score of the group: its own, or its partner's
        rank = np.where(group, rank, rank[partner, np.arange(rank.shape[1])][None, :])
        removed, n = np.ones_like(group), np.broadcast_to(group.sum(axis=0)[None, :] - 1, group.shape)
    j1 = (n - 1) // 2
    j2 = n // 2
    i1 = j1 + (removed & (j1 >= rank))
    i2 = j2 + (removed & (j2 >= rank))
    return 0.5 * (np.take_along_axis(ordered, i1, axis=0) + np.take_along_axis(ordered, i2, axis=0))


def target_score(score: Any, fits: LooFits) -> np.ndarray:
    t = np.asarray(score, dtype=np.float64)
    if t.shape != fits.shape:
        raise DataError(f"score has shape {t.shape} but the fits have shape {fits.shape}; pass the fitted score matrix")
    return t


def floored_sd(sd: np.ndarray) -> np.ndarray:
    return np.maximum(sd, SD_FLOOR)
