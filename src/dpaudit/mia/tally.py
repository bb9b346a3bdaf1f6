"""The evaluation's two passes over blocks of records, counting every rule's calls.

:class:`RulePlan` fixes what :func:`~dpaudit.mia.evaluate.evaluate` counts: the levels α, the PP
rules' thresholds, the α at which the rank rules are estimable, and where each rule's called targets
go among the bootstrap's target sets. :func:`first_pass` fits every block of records
(:class:`~dpaudit.mia.fits.LooFitter`) and counts the PP-normal, PP-t and rank rules, gathering the
attack's statistic (:class:`~dpaudit.mia.statistic.Statistic`) and the figures' sample
(:class:`~dpaudit.mia.curves.CurveSample`) on the way; :func:`naive_pass` counts the naive rule at its
pooled cuts. Everything counted lands in one :class:`Tally`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.mia.calibrate import fitted_sign, pp_transform, threshold
from dpaudit.mia.conformal import block_ranks, hit_probability, rank_cap
from dpaudit.mia.curves import CurveSample
from dpaudit.mia.fits import LooFitter, RecordMoments, column_blocks
from dpaudit.mia.metrics.replicates import TargetSets
from dpaudit.mia.per_record import not_estimable_reason
from dpaudit.mia.statistic import Statistic

__all__ = ["RulePlan", "Tally", "first_pass", "naive_pass"]


@dataclass(frozen=True)
class RulePlan:
    """What the passes count at the levels ``alphas`` (per α: index j).

    ``t_cut[j]``: each record's Student-t threshold at n_out (IN targets) and n_out − 1 (OUT targets);
    ``z_cut[j]``: the normal threshold; ``reasons[j]``: why the rank rules are not estimable ("" when
    they are), ``ranked`` the j where they are, ``cap`` the conformal ranks they need; ``index``: the
    bootstrap's target sets by name, ``column``: the targets' values it sums one by one, by name.
    """

    alphas: tuple[float, ...]
    t_cut: list[tuple[Any, Any]]
    z_cut: list[Any]
    reasons: list[str]
    ranked: list[int]
    cap: int
    index: dict[str, int]
    column: dict[str, int]

    @classmethod
    def of(cls, alphas: tuple[float, ...], moments: RecordMoments, *, inclusion: float | None = None) -> RulePlan:
        """The plan at ``alphas`` for records with these per-record counts (``inclusion``: the Poisson
        design's q, for the M that :func:`~dpaudit.mia.per_record.not_estimable_reason` asks for)."""
        n_alpha = len(alphas)
        # Student-t thresholds per record: a target's leave-one-out OUT count is n_out (IN target) or
        # n_out − 1 (OUT target), so two values per record, from the distinct counts
        t_cut = [(threshold(a, kind="t", n_out=moments.n_out), threshold(a, kind="t", n_out=moments.n_out - 1))
                 for a in alphas]
        z_cut = [threshold(a, kind="normal") for a in alphas]
        reasons = [not_estimable_reason(moments.n_in, moments.n_out, a, inclusion=inclusion) for a in alphas]
        ranked = [j for j in range(n_alpha) if not reasons[j]]
        cap = rank_cap([alphas[j] for j in ranked], int(moments.n_out.max())) if ranked else 0
        # the bootstrap's target sets: the IN targets, then per α the IN targets each rule calls members
        set_names = ["keep"] + [f"{rule}/{j}" for j in range(n_alpha) for rule in ("naive", "pp_normal", "pp_t")]
        set_names += [f"pp_rank/{j}" for j in ranked]
        # …and the targets summed one by one: per α, OUT targets called by a PP rule or ranked, and IN
        # targets with a fractional conformal call
        value_names = [f"{rule}/{j}" for j in range(n_alpha) for rule in ("pp_normal", "pp_t")]
        value_names += [f"{part}/{j}" for j in ranked for part in ("rank_fp", "rank_tp")]
        return cls(alphas, t_cut, z_cut, reasons, ranked, cap, {name: i for i, name in enumerate(set_names)},
                   {name: i for i, name in enumerate(value_names)})


@dataclass
class Tally:
    """Everything the passes over the blocks of records gather for the rules (per α: index j)."""

    n_alpha: int
    tp: dict[str, list[float]] = field(default_factory=dict)  # pooled rule → per α
    fp: dict[str, list[float]] = field(default_factory=dict)
    positions: list[np.ndarray] = field(default_factory=list)  # targets the bootstrap sums one by one
    values: list[np.ndarray] = field(default_factory=list)  # … and their values, one column per sum
    crossed: list[np.ndarray] = field(default_factory=list)  # per α: each record's t threshold crossed by its OUT signals
    emp_tpr: dict[int, np.ndarray] = field(default_factory=dict)  # ranked α → per-record empirical TPR
    emp_fpr: dict[int, np.ndarray] = field(default_factory=dict)  # … and FPR
    rank_tp: dict[int, np.ndarray] = field(default_factory=dict)  # ranked α → per-record sums of conformal calls
    rank_fp: dict[int, np.ndarray] = field(default_factory=dict)
    rec_fpr: list[np.ndarray] = field(default_factory=list)  # per α: each record's FPR at the naive cut

    @classmethod
    def start(cls, plan: RulePlan, n_records: int) -> Tally:
        """An empty tally for ``n_records`` records."""
        ranked = plan.ranked
        return cls(len(plan.alphas), crossed=[np.zeros(n_records, dtype=np.int64) for _ in plan.alphas],
                   emp_tpr={j: np.empty(n_records) for j in ranked}, emp_fpr={j: np.empty(n_records) for j in ranked},
                   rank_tp={j: np.empty(n_records) for j in ranked}, rank_fp={j: np.empty(n_records) for j in ranked})

    def count(self, rule: str, j: int, hits: np.ndarray, members: np.ndarray) -> None:
        """Add a block's calls of a 0/1 rule: ``hits`` (all targets) and ``members`` (hits among IN targets)."""
        tp = int(np.count_nonzero(members))
        self.tp.setdefault(rule, [0.0] * self.n_alpha)[j] += tp
        self.fp.setdefault(rule, [0.0] * self.n_alpha)[j] += int(np.count_nonzero(hits)) - tp

    def list_targets(self, cols: slice, called_out: np.ndarray, rows: dict[str, np.ndarray],
                     column: dict[str, int], n_records: int) -> None:
        """List the block's targets the bootstrap sums one by one (``called_out``) with their ``rows`` values."""
        picked = np.flatnonzero(called_out)
        width = called_out.shape[1]
        self.positions.append((picked // width) * n_records + cols.start + picked % width)
        vals = np.zeros((picked.size, len(column)))
        for name, arr in rows.items():
            vals[:, column[name]] = arr.reshape(-1)[picked]
        self.values.append(vals)


def first_pass(signal: np.ndarray, keep: np.ndarray, fitter: LooFitter, plan: RulePlan, tally: Tally,
               statistic: Statistic, curve: CurveSample, sets: TargetSets | None, *, sign: str, n_in: np.ndarray,
               n_out: np.ndarray) -> None:
    """Pass 1: fit every block of records, compute the PP score ``z = (t − μ_out)/σ_out`` and the attack's
    statistic, and count the PP-normal, PP-t and rank rules (and their bootstrap target sets, if ``sets``)."""
    n_models, n_records = keep.shape
    for cols in column_blocks(n_records, n_models):
        s, k = signal[:, cols], keep[:, cols]
        out = ~k
        fits = fitter.fits(cols)
        z = pp_transform(s, fits, sign="positive")  # (t − μ_out)/σ_out: PP's score and LiRA's OUT density
        statistic.add(cols, s, out, fits, z)
        f = z if sign == "positive" else fitted_sign(z.copy(), fits)
        curve.add(cols, f, k)
        called_out = np.zeros(k.shape, dtype=bool)  # OUT targets that some rule calls a member
        rows: dict[str, np.ndarray] = {}
        _count_pp(plan, tally, sets, cols, f, z, k, called_out, rows)
        if plan.ranked:
            _count_rank(plan, tally, sets, cols, s, k, n_in, n_out, called_out, rows)
        if sets is not None:
            sets.add(plan.index["keep"], cols, k)
            tally.list_targets(cols, called_out, rows, plan.column, n_records)


def _count_pp(plan: RulePlan, tally: Tally, sets: TargetSets | None, cols: slice, f: np.ndarray, z: np.ndarray,
              k: np.ndarray, called_out: np.ndarray, rows: dict[str, np.ndarray]) -> None:
    """Count one block's PP-normal and PP-t calls at every α (PP scores ``f``), and the Gaussian check."""
    out = ~k
    for j in range(tally.n_alpha):
        # Student-t threshold of a target: its record's, at n_out (IN target) or n_out − 1 (OUT)
        t_in, t_out = plan.t_cut[j][0][cols], plan.t_cut[j][1][cols]
        for rule, hits in (("pp_normal", f >= plan.z_cut[j]), ("pp_t", ((f >= t_in) & k) | ((f >= t_out) & out))):
            members = hits & k
            tally.count(rule, j, hits, members)
            if sets is not None:
                sets.add(plan.index[f"{rule}/{j}"], cols, members)
                rows[f"{rule}/{j}"] = hits & out
                called_out |= rows[f"{rule}/{j}"]
        # the Gaussian model's check: each record's t threshold crossed by its own OUT signals
        tally.crossed[j][cols] = np.count_nonzero((z >= t_out) & out, axis=0)


def _count_rank(plan: RulePlan, tally: Tally, sets: TargetSets | None, cols: slice, s: np.ndarray, k: np.ndarray,
                n_in: np.ndarray, n_out: np.ndarray, called_out: np.ndarray, rows: dict[str, np.ndarray]) -> None:
    """Sum one block's conformal call probabilities at every estimable α (signals ``s``)."""
    out = ~k
    ranks = block_ranks(s, k, n_out[cols], plan.cap)
    for j in plan.ranked:
        hits = hit_probability(ranks, plan.alphas[j])
        in_hits, out_hits = hits * k, hits * out  # hits ≥ 0: the same floats as where(k, hits, 0)
        tally.rank_tp[j][cols], tally.rank_fp[j][cols] = in_hits.sum(axis=0), out_hits.sum(axis=0)
        tally.emp_tpr[j][cols] = tally.rank_tp[j][cols] / n_in[cols]
        tally.emp_fpr[j][cols] = tally.rank_fp[j][cols] / n_out[cols]
        if sets is not None:
            whole = in_hits == 1.0
            sets.add(plan.index[f"pp_rank/{j}"], cols, whole)
            fraction = in_hits * ~whole  # IN targets called with a probability strictly below 1
            called_out |= (out_hits > 0) | (fraction > 0)
            rows[f"rank_fp/{j}"], rows[f"rank_tp/{j}"] = out_hits, fraction


def naive_pass(stat: np.ndarray, keep: np.ndarray, cuts: list[float], tally: Tally, sets: TargetSets | None,
               plan: RulePlan, n_out: np.ndarray) -> None:
    """Pass 2: count the naive rule "statistic > cut" at every α, and each record's FPR (``tally.rec_fpr``)."""
    n_models, n_records = keep.shape
    tally.rec_fpr = [np.empty(n_records) for _ in cuts]
    for cols in column_blocks(n_records, n_models):
        st, k = stat[:, cols], keep[:, cols]
        for j, c in enumerate(cuts):
            above = st > c
            members = above & k
            tally.count("naive", j, above, members)
            tally.rec_fpr[j][cols] = np.count_nonzero(above & ~k, axis=0) / n_out[cols]
            if sets is not None:
                sets.add(plan.index[f"naive/{j}"], cols, members)
