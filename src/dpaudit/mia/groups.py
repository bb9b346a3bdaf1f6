"""Disparate vulnerability: the mean per-record TPR of every group of a protected column, their gap and a test.

Kulynych, Yaghini, Cherubin, Veale & Troncoso, "Disparate Vulnerability to Membership Inference
Attacks", PoPETs 2022 (1): a group's vulnerability is the attack's advantage averaged over the group's
records; *disparate* vulnerability is its difference between groups. Here the record's measure is its
per-record TPR at FPR α from the valid estimators of :mod:`dpaudit.mia.per_record` — the very vector
whose mean is the whole run's ``per_record_empirical`` (or, where that is not estimable,
``per_record_parametric``) TPR, so a group's TPR is that mean restricted to its records:

    TPR_g(α) = (1/n_g) Σ_{x ∈ g} TPR_x(α).

Each record's test has FPR α by construction (exactly for the empirical estimator, under the Gaussian
model for the parametric one), so the groups are compared at the *same* FPR and a gap in TPR is a gap
in membership risk, not in calibration.

**Gap.** The groups are sorted by TPR; the gap is TPR(first) − TPR(last) (and, for at most
:data:`MAX_PAIR_GROUPS` groups, every pair's difference). Interval: percentile bootstrap over records,
stratified by group (each group's records resampled with replacement, its size fixed), like the
records axis of the whole run's per-record means. It treats the records as independent given the
models; the models' shared randomness (one more overfitted model raises every record's TPR) moves
both groups alike and largely cancels in a difference.

**Test of equality.** A permutation test of the group labels over records (Fisher 1935; Pitman 1937;
Good, *Permutation Tests*, 2nd ed., 2000, §3) with a *studentized* statistic (Chung & Romano, "Exact
and asymptotically robust permutation tests", Ann. Statist. 41, 2013): the heteroscedastic
between-group statistic ``S = Σ_g w_g (TPR_g − m̃)²``, ``w_g = n_g/s_g²`` (``s_g²`` the variance of the
group's per-record TPRs, ``m̃`` the w-weighted mean; for two groups Welch's t²), recomputed after each of
B random permutations of the labels, and ``p = (1 + #{S_b ≥ S})/(B + 1)``. The null is **exchangeability of the records' per-record TPRs under
relabelling**: given the vector of per-record TPRs, every assignment of the observed group sizes to
the records is equally likely — true when the group of a record has nothing to do with its
vulnerability (membership independent of the scores, or a signal whose strength does not depend on
the group), whatever the dependence among records' TPRs through the shared models, ties and score
shapes: the permutation acts on records and the models' randomness is common to all of them, so the
joint law of (TPR_1 … TPR_N) is symmetric and the labels are independent of it. Under it the test is exact
(any statistic); studentized, it is also asymptotically valid for the weaker null of equal *means*
with unequal spreads and sizes (Chung & Romano 2013), where the unstudentized difference of means is
not (Romano 1990). The gap's own p-value permutes the studentized difference of the groups of the
largest and the smallest TPR, both re-chosen in every permutation, so the choice of the two extreme
groups is part of its null distribution.
Pairs are tested by permuting the labels among the two groups' records only. Several α are one claim:
the smallest p-value times their number (Bonferroni) at most ``1 − level``
(:attr:`dpaudit.mia.group_results.Disparity.claimed`). Validated on null and planted score matrices
(``tests/test_mia_groups.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpaudit._errors import DataError
from dpaudit._validation import whole_number
from dpaudit.mia.group_results import Disparity, GroupAlpha, GroupGap, GroupRate
from dpaudit.mia.metrics.intervals import percentile_interval

__all__ = ["MIN_GROUP_RECORDS", "MAX_GROUPS", "MAX_PAIR_GROUPS", "DEFAULT_PERMUTATIONS", "Groups", "PerRecordTPR",
           "groups_of", "group_means", "permutation_pvalues", "bootstrap_means", "disparity"]

#: The fewest records a group may have (a group's TPR over fewer is noise, and its interval meaningless).
MIN_GROUP_RECORDS = 20
#: The most groups a column may have.
MAX_GROUPS = 20
#: Every pair of groups is reported when there are at most this many groups (at most 6 pairs).
MAX_PAIR_GROUPS = 4
#: Permutations of the test of equality (p-values down to 1/2,000).
DEFAULT_PERMUTATIONS = 1999
#: Records resampled per bootstrap chunk × group size, bounding the chunk's index array (~8 MB).
_CHUNK_CELLS = 1 << 20


@dataclass(frozen=True, eq=False)
class Groups:
    """The group of every record: ``codes[x]`` indexes ``names``; ``source`` says where they came from."""

    column: str
    names: tuple[str, ...]
    codes: np.ndarray
    source: str = ""

    @property
    def counts(self) -> np.ndarray:
        return np.bincount(self.codes, minlength=len(self.names))


@dataclass(frozen=True, eq=False)
class PerRecordTPR:
    """One α's per-record TPRs (``tpr``, shape (N+,)) from ``rule``, valid for these scores or not (``warning``)."""

    alpha: float
    rule: str
    tpr: np.ndarray
    valid: bool = True
    warning: str | None = None


def groups_of(column: str, labels: Sequence[object] | np.ndarray, *, source: str = "",
              min_records: int = MIN_GROUP_RECORDS) -> Groups:
    """:class:`Groups` from every record's label (compared as strings), the groups in order of first
    appearance sorted by name; a :class:`~dpaudit.DataError` for missing labels, a single group, more than
    :data:`MAX_GROUPS` groups or one with fewer than ``min_records`` records.

    Examples
    --------
    >>> g = groups_of("sex", ["F", "M"] * 20)
    >>> g.names, g.counts.tolist()
    (('F', 'M'), [20, 20])
    >>> groups_of("sex", ["F"] * 30 + ["M"] * 5)
    Traceback (most recent call last):
    dpaudit._errors.DataError: column 'sex': group 'M' has 5 records; each group needs ≥ 20 (merge or drop the small groups)
    """
    values = np.asarray(labels, dtype=object)
    missing = np.array([v is None or (isinstance(v, float) and v != v) for v in values], dtype=bool)
    if missing.any():
        raise DataError(f"column {column!r} has {int(missing.sum()):,} missing values among the records; give every "
                        "record a group")
    names, codes = np.unique(np.array([str(v) for v in values], dtype=object), return_inverse=True)
    counts = np.bincount(codes, minlength=len(names))
    where = f"column {column!r}"
    if len(names) < 2:
        raise DataError(f"{where} has a single group ({names[0]!r}) among the records: nothing to compare")
    if len(names) > MAX_GROUPS:
        raise DataError(f"{where} has {len(names):,} groups; at most {MAX_GROUPS} can be compared (a continuous "
                        "column needs declared bins)")
    small = int(np.argmin(counts))
    if counts[small] < min_records:
        raise DataError(f"{where}: group {names[small]!r} has {int(counts[small]):,} records; each group needs ≥ "
                        f"{min_records} (merge or drop the small groups)")
    return Groups(column, tuple(str(n) for n in names), codes.astype(np.int64), source)


def group_means(values: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Each group's mean of ``values`` (shape (N,) or (N, A)): shape (G,) or (G, A)."""
    flat = values.reshape(len(codes), -1)
    a = flat.shape[1]
    cells = (codes[:, None] * a + np.arange(a)).ravel()
    sums = np.bincount(cells, weights=flat.ravel(), minlength=n_groups * a).reshape(n_groups, a)
    means = sums / np.bincount(codes, minlength=n_groups)[:, None]
    return means.reshape((n_groups,) + values.shape[1:])


def _statistics(sums: np.ndarray, counts: np.ndarray, floor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per α, from each group's sums of the per-record TPRs and of their squares (``sums``: (G, 2A)): the
    heteroscedastic between-group statistic ``W = Σ_g w_g (m_g − m̃)²``, ``w_g = n_g/s_g²``,
    ``m̃ = Σ w_g m_g / Σ w_g``, and the studentized gap of the extreme groups
    ``(m_hi − m_lo)/√(s²_hi/n_hi + s²_lo/n_lo)`` (hi, lo: the groups of the largest and the smallest mean).
    ``s_g²``: the group's sample variance, at least ``floor`` (a group of equal values)."""
    a = sums.shape[1] // 2
    n = counts[:, None]
    means = sums[:, :a] / n
    var = np.maximum((sums[:, a:] - n * means**2) / np.maximum(n - 1, 1), floor)
    w = n / var
    centre = (w * means).sum(axis=0) / w.sum(axis=0)
    between = (w * (means - centre) ** 2).sum(axis=0)
    hi, lo = means.argmax(axis=0), means.argmin(axis=0)
    cols = np.arange(a)
    spread = (means[hi, cols] - means[lo, cols]) / np.sqrt(var[hi, cols] / counts[hi] + var[lo, cols] / counts[lo])
    return between, spread


def permutation_pvalues(values: np.ndarray, codes: np.ndarray, n_groups: int, n_permutations: int,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Permutation p-values (per column of ``values`` (N, A)) of the two statistics of :func:`_statistics`:
    ``(1 + #{T_b ≥ T})/(B + 1)`` over ``B = n_permutations`` relabellings (module docstring). ``T_b ≥ T``
    is read with a relative tolerance of 1e-9, so ties (identical sums added in another order) count as
    at least as extreme, which keeps the test valid. A relabelling with the group sizes fixed is a
    permutation of the records against labels sorted by group, so each one gathers the records in a
    random order and sums consecutive runs of the group sizes.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> tpr = np.r_[np.linspace(0, 0.5, 30), np.linspace(0.5, 1, 30)][:, None]
    >>> p, _ = permutation_pvalues(tpr, np.repeat([0, 1], 30), 2, 199, rng)
    >>> float(p[0])
    0.005
    """
    both = np.hstack([values, values * values])
    counts = np.bincount(codes, minlength=n_groups).astype(np.float64)
    starts = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64)
    floor = 1e-12 * values.var(axis=0) + 1e-300  # a group of equal values: its variance, not 0
    between, spread = _statistics(np.add.reduceat(both[np.argsort(codes, kind="stable")], starts, axis=0), counts,
                                  floor)
    hits_between, hits_spread = np.ones(values.shape[1]), np.ones(values.shape[1])
    for _ in range(n_permutations):
        b, r = _statistics(np.add.reduceat(both[rng.permutation(len(codes))], starts, axis=0), counts, floor)
        hits_between += b >= between * (1 - 1e-9)
        hits_spread += r >= spread * (1 - 1e-9)
    return hits_between / (n_permutations + 1), hits_spread / (n_permutations + 1)


def bootstrap_means(values: np.ndarray, codes: np.ndarray, n_groups: int, n_boot: int,
                    rng: np.random.Generator) -> np.ndarray:
    """Group means (B, G, A) of ``values`` (N, A) over ``B = n_boot`` resamples of each group's records with
    replacement (stratified: every group keeps its size)."""
    out = np.empty((n_boot, n_groups, values.shape[1]))
    for g in range(n_groups):
        own = values[codes == g]
        chunk = max(1, _CHUNK_CELLS // len(own))
        for start in range(0, n_boot, chunk):
            stop = min(n_boot, start + chunk)
            draws = rng.integers(0, len(own), size=(stop - start, len(own)))
            out[start:stop, g] = own[draws].mean(axis=1)
    return out


def disparity(estimates: Sequence[PerRecordTPR], groups: Groups, *, level: float = 0.95,
              n_permutations: int = DEFAULT_PERMUTATIONS, n_boot: int = 200, seed: int = 0) -> Disparity:
    """The groups' mean per-record TPRs at every α of ``estimates``, their gaps with bootstrap intervals and
    the permutation tests (module docstring).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> tpr = np.r_[rng.uniform(0, 0.02, 50), rng.uniform(0.02, 0.06, 50)]
    >>> g = groups_of("sex", ["F"] * 50 + ["M"] * 50)
    >>> d = disparity([PerRecordTPR(0.01, "per_record_empirical", tpr)], g, n_permutations=999, n_boot=100)
    >>> d.claimed, d.rows[0].groups[0].group, round(d.rows[0].gap.gap, 2)
    (True, 'M', 0.03)
    """
    n_permutations = whole_number("n_permutations", n_permutations, minimum=1)
    n_boot = whole_number("n_boot", n_boot, minimum=0)
    if not estimates:
        raise DataError("disparity needs the per-record TPR at one α or more")
    values = np.stack([np.asarray(e.tpr, dtype=np.float64) for e in estimates], axis=1)
    codes, names, n_groups = groups.codes, groups.names, len(groups.names)
    if values.shape[0] != len(codes):
        raise DataError(f"{len(codes):,} group labels for {values.shape[0]:,} records")
    counts = groups.counts
    perm_rng, boot_rng, pair_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    means = group_means(values, codes, n_groups)
    p_between, p_spread = permutation_pvalues(values, codes, n_groups, n_permutations, perm_rng)
    boot = bootstrap_means(values, codes, n_groups, n_boot, boot_rng) if n_boot else None
    pair_p = _pair_pvalues(values, codes, n_groups, n_permutations, pair_rng)

    def interval(reps: np.ndarray | None) -> tuple[float, float] | None:
        return None if reps is None else percentile_interval(reps, level)

    def gap(a: int, b: int, j: int, p: float) -> GroupGap:
        """TPR(a) − TPR(b) at α number j, ``a`` the larger."""
        if means[a, j] < means[b, j]:
            a, b = b, a
        return GroupGap(names[a], names[b], float(means[a, j] - means[b, j]),
                        interval(None if boot is None else boot[:, a, j] - boot[:, b, j]), p)

    rows = []
    for j, est in enumerate(estimates):
        order = sorted(range(n_groups), key=lambda g: (-means[g, j], names[g]))
        rates = tuple(GroupRate(names[g], int(counts[g]), float(means[g, j]),
                                interval(None if boot is None else boot[:, g, j])) for g in order)
        pairs = tuple(gap(a, b, j, float(p[j])) for (a, b), p in pair_p.items())
        rows.append(GroupAlpha(est.alpha, est.rule, est.valid, float(values[:, j].mean()), rates,
                               gap(order[0], order[-1], j, float(p_spread[j])), float(p_between[j]), pairs,
                               est.warning))
    return Disparity(groups.column, groups.source, level, n_permutations, n_boot, seed, tuple(rows))


def _pair_pvalues(values: np.ndarray, codes: np.ndarray, n_groups: int, n_permutations: int,
                  rng: np.random.Generator) -> dict[tuple[int, int], np.ndarray]:
    """Every pair's permutation p-value (labels permuted among the pair's records), for 3 to
    :data:`MAX_PAIR_GROUPS` groups (two groups: the pair is the gap)."""
    if not 2 < n_groups <= MAX_PAIR_GROUPS:
        return {}
    out = {}
    for a in range(n_groups):
        for b in range(a + 1, n_groups):
            mine = (codes == a) | (codes == b)
            out[(a, b)] = permutation_pvalues(values[mine], (codes[mine] == b).astype(np.int64), 2, n_permutations,
                                              rng)[0]
    return out
