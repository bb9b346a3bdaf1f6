"""Which other models' scores a target's reference fits read: balanced (default) or leave-one-out.

The fits of target ``(m, x)`` come from the scores of record ``x`` under the *other* models
(:mod:`dpaudit.mia.fits`). Plain leave-one-out (``"loo"``, the LiRA reference code and the MIA paper)
fits an IN target from ``n_in − 1`` IN and ``n_out`` OUT scores, an OUT target from ``n_in`` IN and
``n_out − 1`` OUT scores: the sizes of the reference groups carry the target's own membership. Any
statistic of the references whose distribution depends on the group sizes then differs between IN
and OUT targets *on data without any membership signal*. On Gaussian scores the difference is small
(the naive and PP-N(0,1) rules report less than their FPR at M = 16: TPR/FPR 0.54–0.91); on scores
with a few values far out (a probability-only model's saturated 0/1 outputs) it is large: with 5 %
of the scores at 708.4 and M = 64 the fitted sign sign(μ_in − μ_out) is + for 58 % of IN targets
and 41 % of OUT targets (equal counts of saturated scores in both groups give the smaller group the
larger mean), and PP-t reported TPR 0.031 at a realised FPR of 0.023, ε ≥ 0.26, on pure noise.

**Balanced references** (``"balanced"``) give every target ``n_in − 1`` IN and ``n_out − 1`` OUT
reference scores: besides itself, a target drops one *partner*, a model drawn uniformly at random
from the record's models of the other group (an IN target drops one OUT model, an OUT target one IN
model). Under the null (membership permuted within the record, so the record's IN set is a uniform
random subset of its models of fixed size), the pair (IN references, OUT references) of target m is
then a uniformly random pair of disjoint subsets of sizes (n_in − 1, n_out − 1) of the other M − 1
models *whether m is IN or OUT*: given the scores, an IN target's IN references are a uniform
(n_in − 1)-subset of the others and its OUT references a uniform (n_out − 1)-subset of the remaining
n_out; an OUT target's OUT references are a uniform (n_out − 1)-subset of the others and its IN
references a uniform (n_in − 1)-subset of the remaining n_in — the same joint law. So every
quantity fitted from the references (location, scale, sign, LiRA's likelihood ratio) and every
decision made from them and the target's own score has the same distribution for IN and OUT
targets: on null data a rule's expected TPR equals its expected FPR exactly, for any score
distribution. The price is one reference score per group per target.

The partner comes from a counter-based hash of ``(seed, m, x)`` (SplitMix64; Steele, Lea & Flood,
OOPSLA 2014), so a block of records gets the same partners however the matrix is split, and the
same inputs give the same partners on any machine: every model of a record gets a key, and the
partner is the other group's model with the largest key (uniform over that group, since the keys do
not depend on membership; :func:`partner_models`).
"""

from __future__ import annotations

import numpy as np

from dpaudit.mia._defaults import DEFAULT_REFERENCES, REFERENCES, References

__all__ = ["References", "REFERENCES", "DEFAULT_REFERENCES", "PARTNER_SEED", "partner_models", "partner_rows",
           "model_keys"]

#: The seed of the partners the evaluation draws (a fixed part of the rule, not the bootstrap's seed).
PARTNER_SEED = 0
#: The seed of the keys that choose the counted targets of an unbalanced design (:func:`counted_targets`).
COUNT_SEED = 1

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def partner_models(keep: np.ndarray, first_record: int = 0, *, seed: int = PARTNER_SEED) -> np.ndarray:
    """The partner of every target of a block of records: a model of the record's other group.

    Every model of every record gets a key (:func:`model_keys`, a hash of (seed, m, x)); an IN
    target's partner is the record's OUT model with the largest key, an OUT target's its IN model with
    the largest key. The keys are independent of membership, so given the group (a uniformly random
    subset under the null) the model with the largest key is a uniform draw from it: each target's
    partner is uniform over the other group, which is all the balance argument needs (module
    docstring). One masked maximum per record and group; all IN targets of a record share a partner.

    Parameters
    ----------
    keep : ndarray of bool, shape (M, width)
        Membership of the block's records (columns ``first_record …``); every record has models in
        both groups.
    first_record : int
        Index of the block's first record in the whole matrix (the hash reads the global index).
    seed : int

    Returns
    -------
    ndarray of int, shape (M, width)
        For an IN target, an OUT model of its record; for an OUT target, an IN model.

    Examples
    --------
    >>> keep = np.array([[True], [True], [False], [False], [False]])
    >>> p = partner_models(keep)
    >>> bool(set(p[:2, 0]) <= {2, 3, 4}), bool(set(p[2:, 0]) <= {0, 1})
    (True, True)
    """
    best_in, best_out = partner_rows(keep, first_record, seed=seed)
    return np.where(keep, best_out[None, :], best_in[None, :])


def partner_rows(keep: np.ndarray, first_record: int = 0, *, seed: int = PARTNER_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Per record of the block, the partner of its OUT targets (its IN model with the largest key) and of
    its IN targets (its OUT model with the largest key): :func:`partner_models` as two arrays of shape
    (width,)."""
    n_models, width = keep.shape
    # one row per record (the keys laid out so, and the membership transposed once): the maxima run along
    # contiguous rows, ~2× faster than an argmax along the models' axis, which copies the array first
    key = model_keys(n_models, first_record, width, seed, by_record=True)
    member = np.ascontiguousarray(keep.T)
    best_out = (key * ~member).argmax(axis=1)  # keys are > 0: the largest among the group's (first on ties)
    best_in = (key * member).argmax(axis=1)
    return best_in, best_out


def model_keys(n_models: int, first_record: int, width: int, seed: int, *, by_record: bool = False) -> np.ndarray:
    """The key of every (model, record) of a block, shape (n_models, width), a float in (0, 1]: one
    SplitMix64 round of the xor of a model's and a record's own SplitMix64 hash (each of (seed, index)),
    its top 53 bits — the same keys whatever the block, at a quarter of the cost of hashing every pair in
    full. Ties (probability ~M²/2⁵³) go to the lower model index. ``by_record``: the same keys laid out
    (width, n_models), one row per record."""
    rows = _splitmix(np.arange(n_models, dtype=np.uint64) + np.uint64(((seed + 1) * _GOLDEN) & _MASK))
    cols = _splitmix(np.arange(first_record, first_record + width, dtype=np.uint64) * np.uint64(0xD1B54A32D192ED03)
                     + np.uint64(seed))
    z = cols[:, None] ^ rows[None, :] if by_record else rows[:, None] ^ cols[None, :]
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(31)
    return ((z >> np.uint64(11)).astype(np.float64) + 1.0) * (1.0 / (1 << 53))


def _splitmix(z: np.ndarray) -> np.ndarray:
    z = z + np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def counted_targets(keep: np.ndarray, *, seed: int = COUNT_SEED) -> np.ndarray | None:
    """Which targets the pooled rules count when records have different numbers of IN models; None when
    every record is IN in the same number of models (the efficient design: every target counts).

    A pooled rule's TPR averages over IN targets and its FPR over OUT targets, so it weights record x
    by n_in,x in one and by n_out,x in the other. With balanced references each target's call
    probability p_m is the same whether it is IN or OUT (module docstring), but it varies between
    records — a record with two or three reference scores on one side fits unstable Gaussians and
    calls often — so with unequal weights E[TPR] ≠ E[FPR] on null data (measured on the first 16 of
    1,024 efficient-design models, records IN in 3–13 of them: naive null TPR 0.017 at FPR 0.010; a
    Poisson design q = 0.7, M = 16, tied scores: "evidence of leakage, ε ≥ 0.11" on noise). Counting
    c_x = min(n_in,x, n_out,x) targets of each group per record removes it: the c_x IN and c_x OUT
    models with the smallest keys (:func:`model_keys`, drawn independently of membership, so given its
    group a model is counted with probability c_x/n_group, whatever the other models' scores), and
    then ``E[TP_x] = Σ_m (n_in/M)(c/n_in) p_m = (c/M) Σ_m p_m = E[FP_x]``. (When every record is IN in
    the same number of models the weights are alike on both sides and every target counts.) The other
    targets still serve
    as references for every fit; the rules just do not count them.

    Parameters
    ----------
    keep : ndarray of bool, shape (M, N+)
    seed : int

    Returns
    -------
    ndarray of bool, shape (M, N+), or None

    Examples
    --------
    >>> keep = np.array([[True, True], [True, False], [True, True], [False, False], [False, True], [False, False]])
    >>> counted_targets(keep) is None   # both records IN in 3 models: equal weights on both sides
    True
    >>> keep[3, 0] = True               # record 0: 4 IN, 2 OUT → 2 of its IN models count
    >>> c = counted_targets(keep)
    >>> int(c[:, 0][keep[:, 0]].sum()), int(c[:, 0][~keep[:, 0]].sum()), bool(c[:, 1].all())
    (2, 2, True)
    """
    n_models, n_records = keep.shape
    n_in = np.count_nonzero(keep, axis=0)
    if n_records == 0 or n_in.min() == n_in.max():  # every record weighted alike on both sides
        return None
    from dpaudit.mia.moments import column_blocks

    counted = np.empty(keep.shape, dtype=bool)
    for cols in column_blocks(n_records, n_models):
        k = keep[:, cols]
        key = model_keys(n_models, cols.start, k.shape[1], seed)
        c = np.minimum(n_in[cols], n_models - n_in[cols])
        chosen = np.zeros(k.shape, dtype=bool)
        for group in (k, ~k):  # each group's models in key order: the first c count
            order = np.argsort(np.where(group, key, 2.0), axis=0, kind="stable")
            rank = np.empty_like(order)
            np.put_along_axis(rank, order, np.arange(n_models)[:, None], axis=0)
            chosen |= group & (rank < c[None, :])
        counted[:, cols] = chosen
    return counted

