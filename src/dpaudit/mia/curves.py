"""The figure data of a membership-inference report: ROC curves and per-record FPR histograms.

Display only (spec-free): :func:`dpaudit.mia.evaluate.evaluate` fills ``MiaReport.curves`` and
``MiaReport.fpr_histograms`` from what its passes gathered, and none of it changes a number of the
tables. The naive rule's exact ROC is sampled at ≤ :data:`CURVE_POINTS` false-positive counts; the
PP-normal and PP-t ROCs as α sweeps are counted on the targets :class:`CurveSample` keeps (at most
:data:`CURVE_TARGETS`); the mean per-record parametric TPR against α is read on up to 2,048 evenly
spaced records; and per α a histogram of the naive threshold's per-record FPR covers all records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpaudit.mia._distributions import norm_isf, t_isf
from dpaudit.mia.fits import RecordMoments
from dpaudit.mia.per_record import normal_tail_umvue
from dpaudit.mia.results import Curve, Histogram

__all__ = ["CURVE_POINTS", "CURVE_TARGETS", "CurveSample", "naive_curve", "parametric_curve", "fpr_histogram"]

#: Points per ROC curve of the report's figures (:class:`~dpaudit.mia.results.Curve`).
CURVE_POINTS = 160
#: The most targets the PP curves are counted on (every k-th model, all records): ~10 ms at M = 256,
#: N+ = 50,000 (~1 % of the evaluation; 2 models there, 50,000 non-member targets, so the curves reach
#: FPR 2e-5).
CURVE_TARGETS = 1 << 17


def _curve_alphas(n_neg: int, points: int = CURVE_POINTS) -> np.ndarray:
    """``points`` target FPRs log-spaced from 1 down to 1/n_neg (so the thresholds ascend)."""
    return np.geomspace(1.0, 1.0 / max(n_neg, 1), points)


def naive_curve(negatives: np.ndarray, positives: np.ndarray, n_models: int, n_records: int) -> Curve:
    """The naive rule's exact ROC at ≤ :data:`CURVE_POINTS` false-positive counts log-spaced from 1 to
    n_neg: each point is "score > c" with c the cut of
    :meth:`~dpaudit.mia.metrics.pooled.PooledScores.cut` (both classes sorted)."""
    n_neg, n_pos = negatives.size, positives.size
    allowed = np.unique(np.geomspace(1, n_neg, CURVE_POINTS).round().astype(np.int64))
    where = n_neg - 1 - allowed
    cut = np.where(where >= 0, negatives[np.maximum(where, 0)], -np.inf)
    fp = n_neg - np.searchsorted(negatives, cut, side="right")
    tp = n_pos - np.searchsorted(positives, cut, side="right")
    return Curve(tuple((fp / n_neg).tolist()), tuple((tp / n_pos).tolist()), "realised", n_records, n_models)


def _suffix_counts(index: np.ndarray, members: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """Targets called at each of ``points`` ascending thresholds, given ``index`` = how many thresholds
    each target reaches: (false positives, true positives) per threshold."""
    counts = np.bincount((index + (points + 1) * members).ravel(), minlength=2 * (points + 1))
    out, inside = counts[:points + 1], counts[points + 1:]
    # called at threshold i iff index > i: the sum over bins i + 1 … points
    return np.cumsum(out[::-1])[::-1][1:], np.cumsum(inside[::-1])[::-1][1:]


def _counted_curve(fp: np.ndarray, tp: np.ndarray, n_neg: int, n_pos: int, shape: tuple[int, int]) -> Curve:
    """The curve of counts at ascending thresholds (FPR descending), FPR ascending, repeated points once."""
    fp, tp = fp[::-1], tp[::-1]
    new = np.ones(fp.size, dtype=bool)
    new[1:] = (fp[1:] != fp[:-1]) | (tp[1:] != tp[:-1])
    return Curve(tuple((fp[new] / n_neg).tolist()), tuple((tp[new] / n_pos).tolist()), "realised", shape[1],
                 shape[0])


def _pp_curves(f: np.ndarray, members: np.ndarray, n_out: np.ndarray, *, balanced: bool) -> dict[str, Curve]:
    """ROC of the PP-normal and PP-t rules as α sweeps :func:`_curve_alphas`, on sampled targets.

    ``f``, ``members``: the PP scores and membership of the sampled targets (models × records); ``n_out``
    their records' OUT counts. A target is called at α when ``f`` reaches the rule's threshold
    (PP-t: its record's, at the OUT count of the target's fit: n_out − 1 with balanced references,
    else n_out for an IN target and n_out − 1 for an OUT one, as in :func:`~dpaudit.mia.evaluate.evaluate`).
    """
    counted = f > -np.inf  # a target no rule counts (references.counted_targets) has f = −inf: never called
    n_pos = int(np.count_nonzero(members & counted))
    n_neg = int(np.count_nonzero(~members & counted))
    alphas = _curve_alphas(n_neg)
    points = alphas.size
    out: dict[str, Curve] = {}
    index = np.where(counted, np.searchsorted(norm_isf(alphas), f, side="right"), 0)
    out["pp_normal"] = _counted_curve(*_suffix_counts(index, members, points), n_neg, n_pos, f.shape)
    n_ref = n_out[None, :] - (np.ones_like(members) if balanced else ~members)  # the OUT count of each target's fit
    low, high = int(n_out.min()) - 1, int(n_out.max())
    for d in range(low, high + 1):  # few values: n_out − 1 and n_out under the efficient design
        chosen = (n_ref == d) & counted
        if chosen.any():
            cut = t_isf(alphas, d - 1) * math.sqrt(1 + 1 / d)
            index[chosen] = np.searchsorted(cut, f[chosen], side="right")
    out["pp_t"] = _counted_curve(*_suffix_counts(index, members, points), n_neg, n_pos, f.shape)
    return out


@dataclass
class CurveSample:
    """The targets the PP curves are counted on, gathered block by block: every ``model_step``-th model,
    then every ``record_step``-th record only if one model has more than :data:`CURVE_TARGETS` records
    (all records otherwise, so that the heterogeneity of records does not move the curve off the
    table's numbers)."""

    model_step: int
    record_step: int
    f: list[np.ndarray] = field(default_factory=list)  # the sampled targets' PP scores, per block
    k: list[np.ndarray] = field(default_factory=list)  # … and their membership

    @classmethod
    def of(cls, n_models: int, n_records: int) -> CurveSample:
        """The sampling of an evaluation of ``n_models`` × ``n_records`` targets (k = 1 when it is small)."""
        model_step = -(-n_models // max(1, min(n_models, CURVE_TARGETS // n_records)))
        record_step = -(-len(range(0, n_models, model_step)) * n_records // CURVE_TARGETS)
        return cls(model_step, record_step)

    def add(self, cols: slice, f: np.ndarray, k: np.ndarray) -> None:
        """Keep the sampled targets of the block of records ``cols`` (PP scores ``f``, membership ``k``)."""
        first = -cols.start % self.record_step
        if first < k.shape[1]:
            self.f.append(f[::self.model_step, first::self.record_step].copy())
            self.k.append(k[::self.model_step, first::self.record_step].copy())

    def curves(self, n_out: np.ndarray, *, balanced: bool) -> dict[str, Curve]:
        """The PP-normal and PP-t curves of the kept targets; ``n_out``: every record's OUT count;
        ``balanced``: whether the fits used balanced references (:mod:`dpaudit.mia.references`)."""
        sampled = np.arange(0, n_out.size, self.record_step)
        return _pp_curves(np.concatenate(self.f, axis=1), np.concatenate(self.k, axis=1), n_out[sampled],
                          balanced=balanced)


#: Points of the per-record parametric curve (a smooth function of α), and the most records it reads
#: (evenly spaced; each point is a beta function per record, ~0.2 µs): its mean over records moves
#: with their heterogeneity, sd ~5 % at TPR 0.1 on 2,048 records of the Gaussian simulation (sd of
#: per-record TPR 0.23); ~8 ms.
_PARAMETRIC_POINTS = 20
_PARAMETRIC_RECORDS = 2048


def parametric_curve(moments: RecordMoments, fpc: float | None, n_neg: int) -> Curve:
    """Mean per-record parametric TPR at α log-spaced from 1/n_neg to 1 (nominal FPR), on evenly spaced
    records: :func:`~dpaudit.mia.per_record.parametric_per_record` for every α at once (the same formula)."""
    n_records = moments.n_in.size
    sampled = np.arange(0, n_records, -(-n_records // _PARAMETRIC_RECORDS))
    alphas = _curve_alphas(n_neg, _PARAMETRIC_POINTS)[::-1][:-1]  # α = 1 (every target called) is added last
    scale = 1.0 if fpc is None else 1.0 / math.sqrt(fpc)
    n_in, n_out = moments.n_in[sampled], moments.n_out[sampled]
    sd_in, sd_out = np.sqrt(moments.ss_in[sampled] / (n_in - 1)), np.sqrt(moments.ss_out[sampled] / (n_out - 1))
    distinct, inverse = np.unique(n_out, return_inverse=True)
    t_cut = (t_isf(alphas[:, None], distinct - 1) * np.sqrt(1 + 1 / distinct))[:, inverse]
    cut = moments.mean_out[sampled] + sd_out * scale * t_cut
    tpr = normal_tail_umvue(cut, n_in, moments.mean_in[sampled], sd_in * scale).mean(axis=1)
    return Curve((*alphas.tolist(), 1.0), (*tpr.tolist(), 1.0), "nominal", int(sampled.size))


def fpr_histogram(alpha: float, fpr: np.ndarray, n_out: int) -> Histogram:
    """Histogram of per-record FPRs: ≤ ~40 bins, each a whole number of steps 1/n_out wide and centred
    on the lattice k/n_out the FPRs of records with n_out OUT models lie on; the range covers 2α."""
    step = 1.0 / n_out
    high = max(float(np.nanmax(fpr)), 2 * alpha)
    width = max(1, math.ceil(high / step / 40)) * step
    bins = int((high + step / 2) // width) + 1
    edges = np.arange(bins + 1) * width - step / 2
    counts = np.histogram(fpr[np.isfinite(fpr)], edges)[0]
    return Histogram(alpha, tuple(edges.tolist()), tuple(int(c) for c in counts))
