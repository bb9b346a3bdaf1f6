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

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.mia.calibrate import fitted_sign, pp_transform, threshold
from dpaudit.mia.conformal import ConformalRanks, block_ranks, hit_probability, rank_cap
from dpaudit.mia.curves import CurveSample
from dpaudit.mia.fits import LooFitter, RecordMoments, column_blocks
from dpaudit.mia.metrics.replicates import TargetEntries, TargetSets
from dpaudit.mia.moments import column_counts
from dpaudit.mia.per_record import not_estimable_reason, t_test_block_calls, t_test_cut
from dpaudit.mia.statistic import Statistic

__all__ = ["RulePlan", "Tally", "first_pass", "naive_pass"]


@dataclass(frozen=True)
class RulePlan:
    """What the passes count at the levels ``alphas`` (per α: index j).

    ``t_cut[j]``: each record's Student-t threshold for its IN and its OUT targets, at the OUT count of
    their fits (n_out − 1 for both with balanced references; n_out and n_out − 1 with plain
    leave-one-out); ``z_cut[j]``: the normal threshold; ``raw_scale``: √FPC (1 without the correction),
    by which the PP scores' uncorrected thresholds — those of the Gaussian check — are scaled; ``reasons[j]``: why the rank rules are not estimable ("" when
    they are), ``ranked`` the j where they are, ``cap`` the conformal ranks they need; ``index``: the
    bootstrap's target sets by name (with ``"out"``, the counted OUT targets, when not every target
    counts), ``column``: the targets' values it sums one by one, by name; ``test_cut[j]``: each record's
    own t-test threshold from all its OUT scores (:func:`~dpaudit.mia.per_record.t_test_cut`), whose
    crossings by its IN scores the tail check counts.
    """

    alphas: tuple[float, ...]
    t_cut: list[tuple[Any, Any]]
    z_cut: list[Any]
    raw_scale: float
    reasons: list[str]
    ranked: list[int]
    cap: int
    index: dict[str, int]
    column: dict[str, int]
    test_cut: list[np.ndarray]

    @classmethod
    def of(cls, alphas: tuple[float, ...], moments: RecordMoments, *, balanced: bool, fpc: float | None = None,
           inclusion: float | None = None, all_counted: bool = True) -> RulePlan:
        """The plan at ``alphas`` for records with these per-record counts (``balanced``: the fits' references;
        ``fpc``: the correction the fits' variances carry; ``inclusion``: the Poisson design's q, for the M
        that :func:`~dpaudit.mia.per_record.not_estimable_reason` asks for)."""
        n_alpha = len(alphas)
        # Student-t thresholds per record at the OUT count of each target's fit: n_out − 1 for every
        # target with balanced references; n_out (IN target) or n_out − 1 (OUT target) with plain
        # leave-one-out; from the distinct counts
        t_cut = []
        for a in alphas:
            t_out = threshold(a, kind="t", n_out=moments.n_out - 1)
            t_cut.append((t_out if balanced else threshold(a, kind="t", n_out=moments.n_out), t_out))
        z_cut = [threshold(a, kind="normal") for a in alphas]
        reasons = [not_estimable_reason(moments.n_in, moments.n_out, a, inclusion=inclusion) for a in alphas]
        ranked = [j for j in range(n_alpha) if not reasons[j]]
        cap = rank_cap([alphas[j] for j in ranked], int(moments.n_out.max())) if ranked else 0
        # the bootstrap's target sets: the IN targets, then per α the IN targets each rule calls members
        set_names = ["keep"] + ([] if all_counted else ["out"])
        set_names += [f"{rule}/{j}" for j in range(n_alpha) for rule in ("naive", "pp_normal", "pp_t")]
        set_names += [f"pp_rank/{j}" for j in ranked]
        # …and the targets summed one by one: per α, OUT targets called by a PP rule or ranked, and IN
        # targets with a fractional conformal call
        value_names = [f"{rule}/{j}" for j in range(n_alpha) for rule in ("pp_normal", "pp_t")]
        value_names += [f"{part}/{j}" for j in ranked for part in ("rank_fp", "rank_tp")]
        raw_scale = 1.0 if fpc is None else math.sqrt(fpc)
        return cls(alphas, t_cut, z_cut, raw_scale, reasons, ranked, cap, {name: i for i, name in enumerate(set_names)},
                   {name: i for i, name in enumerate(value_names)}, [t_test_cut(moments, a) for a in alphas])


@dataclass
class Tally:
    """Everything the passes over the blocks of records gather for the rules (per α: index j)."""

    n_alpha: int
    tp: dict[str, list[float]] = field(default_factory=dict)  # pooled rule → per α
    fp: dict[str, list[float]] = field(default_factory=dict)
    listed: list[TargetEntries] = field(default_factory=list)  # per block: the targets the bootstrap sums
    # one by one, with their values (one column per sum)
    crossed: list[np.ndarray] = field(default_factory=list)  # per α: each record's t threshold crossed by its OUT signals
    crossed_raw: list[np.ndarray] = field(default_factory=list)  # … the uncorrected threshold (the same without FPC)
    emp_tpr: dict[int, np.ndarray] = field(default_factory=dict)  # ranked α → per-record empirical TPR
    emp_fpr: dict[int, np.ndarray] = field(default_factory=dict)  # … and FPR
    rank_tp: dict[int, np.ndarray] = field(default_factory=dict)  # ranked α → per-record sums of conformal calls
    rank_fp: dict[int, np.ndarray] = field(default_factory=dict)
    rec_fpr: list[np.ndarray] = field(default_factory=list)  # per α: each record's FPR at the naive cut
    fp_raw: dict[str, list[float]] = field(default_factory=dict)  # PP rule → per α: OUT targets called, uncorrected
    rec_calls: dict[str, list[tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)  # PP rule → per α: each
    # record's (IN targets called, OUT targets called)
    t_calls: list[np.ndarray] = field(default_factory=list)  # per α: each record's IN signals above its t test's
    # threshold (per_record.t_test_calls)

    @classmethod
    def start(cls, plan: RulePlan, n_records: int) -> Tally:
        """An empty tally for ``n_records`` records."""
        ranked = plan.ranked
        calls = {rule: [(np.zeros(n_records, dtype=np.int64), np.zeros(n_records, dtype=np.int64)) for _ in plan.alphas]
                 for rule in ("pp_normal", "pp_t")}
        return cls(len(plan.alphas), crossed=[np.zeros(n_records, dtype=np.int64) for _ in plan.alphas],
                   crossed_raw=[np.zeros(n_records, dtype=np.int64) for _ in plan.alphas], rec_calls=calls,
                   t_calls=[np.zeros(n_records, dtype=np.int64) for _ in plan.alphas],
                   emp_tpr={j: np.empty(n_records) for j in ranked}, emp_fpr={j: np.empty(n_records) for j in ranked},
                   rank_tp={j: np.empty(n_records) for j in ranked}, rank_fp={j: np.empty(n_records) for j in ranked})

    def count(self, rule: str, j: int, hits: np.ndarray, members: np.ndarray) -> None:
        """Add a block's calls of a 0/1 rule from its per-record counts: ``hits`` (all targets called) and
        ``members`` (those among IN targets), each of shape (width,)."""
        tp = int(members.sum())
        self.tp.setdefault(rule, [0.0] * self.n_alpha)[j] += tp
        self.fp.setdefault(rule, [0.0] * self.n_alpha)[j] += int(hits.sum()) - tp

    def list_targets(self, called_out: np.ndarray, rows: dict[str, np.ndarray], column: dict[str, int]) -> None:
        """List the block's targets the bootstrap sums one by one (``called_out``) with their ``rows`` values
        (as the block's sparse :class:`~dpaudit.mia.metrics.replicates.TargetEntries`, so that only one block's
        dense values exist at a time)."""
        picked = np.flatnonzero(called_out)
        vals = np.zeros((picked.size, len(column)))
        for name, arr in rows.items():
            vals[:, column[name]] = arr.reshape(-1)[picked]
        self.listed.append(TargetEntries(called_out.shape, picked, vals))


def first_pass(signal: np.ndarray, keep: np.ndarray, fitter: LooFitter, plan: RulePlan, tally: Tally,
               statistic: Statistic, curve: CurveSample, sets: TargetSets | None, *, sign: str, n_in: np.ndarray,
               n_out: np.ndarray, counted: np.ndarray | None = None) -> None:
    """Pass 1: fit every block of records, compute the PP score ``z = (t − μ_out)/σ_out`` and the attack's
    statistic, and count the PP-normal, PP-t and rank rules (and their bootstrap target sets, if ``sets``).

    ``counted``: the targets the rules count (:func:`~dpaudit.mia.references.counted_targets`; None: all);
    the others serve as references only: their PP scores are −inf, so no rule calls them, and they are
    neither IN nor OUT targets of any count. ``n_in``, ``n_out``: each record's counted targets per group.
    """
    n_models, n_records = keep.shape
    for cols in column_blocks(n_records, n_models):  # one call per block: its arrays are freed before the next
        _first_pass_block(cols, signal, keep, fitter, plan, tally, statistic, curve, sets, sign, n_in, n_out, counted)


def _first_pass_block(cols: slice, signal: np.ndarray, keep: np.ndarray, fitter: LooFitter, plan: RulePlan,
                      tally: Tally, statistic: Statistic, curve: CurveSample, sets: TargetSets | None, sign: str,
                      n_in: np.ndarray, n_out: np.ndarray, counted: np.ndarray | None) -> None:
    """:func:`first_pass` on the block of records ``cols``."""
    s, k = signal[:, cols], keep[:, cols]
    for j, cut in enumerate(plan.test_cut):  # the tail check's counts, while the block's signals are in cache
        tally.t_calls[j][cols] = t_test_block_calls(s, k, cut[cols])
    fits = fitter.fits(cols)
    z = pp_transform(s, fits, sign="positive")  # (t − μ_out)/σ_out: PP's score and LiRA's OUT density
    c = None if counted is None else counted[:, cols]
    record_out = ~k
    ck, out = (k, record_out) if c is None else (k & c, record_out & c)  # the counted IN and OUT targets
    statistic.add(cols, s, out, fits, z, counted=c)
    f = z if sign == "positive" and c is None else (z.copy() if sign == "positive" else fitted_sign(z.copy(), fits))
    del fits  # only the PP scores are read from here on
    if c is not None:
        f[~c] = -np.inf
    curve.add(cols, f, ck)
    called_out = np.zeros(k.shape, dtype=bool)  # OUT targets that some rule calls a member
    rows: dict[str, np.ndarray] = {}
    _count_pp(plan, tally, sets, cols, f, z, ck, out, record_out, called_out, rows)
    del f, z
    if plan.ranked:
        _count_rank(plan, tally, sets, cols, s, k, ck, out, n_in, n_out, called_out, rows)
    if sets is not None:
        sets.add(plan.index["keep"], cols, ck)
        if "out" in plan.index:
            sets.add(plan.index["out"], cols, out)
        tally.list_targets(called_out, rows, plan.column)


def _count_pp(plan: RulePlan, tally: Tally, sets: TargetSets | None, cols: slice, f: np.ndarray, z: np.ndarray,
              k: np.ndarray, out: np.ndarray, record_out: np.ndarray, called_out: np.ndarray,
              rows: dict[str, np.ndarray]) -> None:
    """Count one block's PP-normal and PP-t calls at every α (PP scores ``f``; ``k``, ``out``: the counted IN
    and OUT targets), and the parametric rule's check over every OUT target of each record (``record_out``).

    Every total is a sum of per-record counts (exact integers); when every target counts (``out`` is
    ``record_out``, the complement of ``k``) the OUT targets called are each record's calls less its IN ones.
    """
    complement = out is record_out
    for j in range(tally.n_alpha):
        # Student-t threshold of a target: its record's, at its fit's OUT count (RulePlan.t_cut)
        t_in, t_out = plan.t_cut[j][0][cols], plan.t_cut[j][1][cols]
        one_t = plan.t_cut[j][0] is plan.t_cut[j][1]  # balanced references: one threshold per record
        raw = plan.raw_scale  # f ≥ c·√FPC: the uncorrected rule's call, f/√FPC ≥ c
        for rule, cut_in, cut_out, one in (("pp_normal", plan.z_cut[j], plan.z_cut[j], True),
                                           ("pp_t", t_in, t_out, one_t)):
            hits = f >= cut_out if one else ((f >= cut_in) & k) | ((f >= cut_out) & out)
            members = hits & k
            rec_members, rec_hits = column_counts(members), column_counts(hits)
            tally.count(rule, j, rec_hits, rec_members)
            rec_in, rec_out = tally.rec_calls[rule][j]
            rec_in[cols] = rec_members
            rec_out[cols] = rec_hits - rec_members
            raw_fp = (int(rec_out[cols].sum()) if raw == 1.0 and complement else
                      int(np.count_nonzero(hits & out if raw == 1.0 else (f >= cut_out * raw) & out)))
            tally.fp_raw.setdefault(rule, [0.0] * tally.n_alpha)[j] += raw_fp
            if sets is not None:
                sets.add(plan.index[f"{rule}/{j}"], cols, members)
                rows[f"{rule}/{j}"] = hits & out
                called_out |= rows[f"{rule}/{j}"]
        # the parametric rule's thresholds crossed by each record's own OUT signals (leave-one-out), and
        # the same uncorrected (the Gaussian model's check; the same counts without the FPC)
        tally.crossed[j][cols] = column_counts((z >= t_out) & record_out)
        tally.crossed_raw[j][cols] = (tally.crossed[j][cols] if raw == 1.0
                                      else column_counts((z >= t_out * raw) & record_out))


def _count_rank(plan: RulePlan, tally: Tally, sets: TargetSets | None, cols: slice, s: np.ndarray, keep: np.ndarray,
                k: np.ndarray, out: np.ndarray, n_in: np.ndarray, n_out: np.ndarray, called_out: np.ndarray,
                rows: dict[str, np.ndarray]) -> None:
    """Sum one block's conformal call probabilities at every estimable α (signals ``s``; ``keep``: the
    block's membership, whose OUT scores are the references; ``k``, ``out``: the counted IN and OUT targets,
    ``n_in``, ``n_out`` their numbers per record)."""
    ranks = block_ranks(s, keep, column_counts(~keep), plan.cap)
    # Only a target with G below the cap can be called (G ≥ cap puts it beyond every budget: probability 0),
    # so the probabilities are computed for those few targets, and each record's are summed in model order
    # (bincount adds its entries in order): the column sums over all targets add the same terms in the same
    # order, with exact +0.0 terms between them.
    width = s.shape[1]
    few = np.flatnonzero(ranks.greater < plan.cap)
    candidates = ConformalRanks(ranks.greater.reshape(-1)[few], ranks.equal.reshape(-1)[few],
                                ranks.n_ref.reshape(-1)[few], keep)
    record, k_few, out_few = few % width, k.reshape(-1)[few], out.reshape(-1)[few]
    for j in plan.ranked:
        hits = hit_probability(candidates, plan.alphas[j])
        in_few, out_few_hits = hits * k_few, hits * out_few  # hits ≥ 0: the same floats as where(k, hits, 0)
        tally.rank_tp[j][cols] = np.bincount(record, weights=in_few, minlength=width)
        tally.rank_fp[j][cols] = np.bincount(record, weights=out_few_hits, minlength=width)
        tally.emp_tpr[j][cols] = tally.rank_tp[j][cols] / n_in[cols]
        tally.emp_fpr[j][cols] = tally.rank_fp[j][cols] / n_out[cols]
        if sets is not None:
            in_hits, out_hits = np.zeros(k.shape), np.zeros(k.shape)
            in_hits.reshape(-1)[few], out_hits.reshape(-1)[few] = in_few, out_few_hits
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
            rec_above, rec_members = column_counts(above), column_counts(members)
            tally.count("naive", j, rec_above, rec_members)
            tally.rec_fpr[j][cols] = (rec_above - rec_members) / n_out[cols]  # the OUT targets above the cut
            if sets is not None:
                sets.add(plan.index[f"naive/{j}"], cols, members)
