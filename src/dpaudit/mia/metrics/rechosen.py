"""The naive rule's bootstrap: TPR with the threshold re-chosen at FPR ≤ α in every replicate."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpaudit.mia.metrics.pooled import PooledScores
from dpaudit.mia.metrics.replicates import ReplicateBlock

__all__ = ["RechosenThreshold"]

#: Replicates per chunk of the bootstrap's multinomial draws of record weights (int64 counts).
_RECHOSEN_ROWS = 16
#: Replicates per chunk of the re-chosen threshold's cumulative sums: two (chunk × L) float arrays, 5 MB
#: each at L = 80,000 (α = 0.01 of 6.4M non-members); each row is summed on its own, so any chunk gives the
#: same numbers.
_CUMSUM_ROWS = 4


class RechosenThreshold:
    """The naive rule's bootstrap: TPR at the largest weighted FPR ≤ α, threshold re-chosen per replicate.

    In replicate b every target (m, x) counts ``w = w_m w_x`` times. With the distinct non-member
    scores ``u₁ > u₂ > …`` and ``C_k`` the weighted count of non-members scoring ≥ ``u_k``, the
    threshold admits the ``K`` largest groups, ``K`` the largest with ``C_K / T ≤ α + 1e-12``
    (``T`` the replicate's weighted non-members; the slack of the rule it replaces); every target
    scoring above ``c = u_{K+1}`` is then called a member (ties cross together), so

        TPR_b = Σ_{members, s > c} w / Σ_{members} w        (0 when no member scores above u₁).

    Evaluated from the :class:`~dpaudit.mia.metrics.pooled.PooledScores` (one sort of the non-members'
    values, shared with the point estimate): the cumulative weights run over the ``L`` largest
    non-members only (L covers the largest α with margin, and doubles for the rare replicate whose
    cut lies beyond), and the members' count is the weighted count above a fixed *anchor* score ``a``
    (counted exactly for all replicates by one matrix product, :meth:`Bootstrap.column_totals`) plus
    the members between ``c`` and ``a``, read from the few members sorted in that band:

        Σ_{s > c} w = Σ_{s > a} w + Σ_{c < s ≤ a} w − Σ_{a < s ≤ c} w.

    Every term is a sum of integer weights, exact in float64, so the TPR is the same number as from a
    full argsort of every target (the code this replaced, kept in ``tests/test_mia_fast_paths.py``).

    Parameters
    ----------
    pooled : PooledScores
        The statistic (shape M·N+, row-major) and membership.
    alphas : sequence of float
    anchors : sequence of float
        One anchor score per α (any score; the point estimate's cut :meth:`PooledScores.cut` is close
        to every replicate's, which keeps the band small).
    shape : (M, N+)
    """

    def __init__(self, pooled: PooledScores, alphas: Sequence[float], anchors: Sequence[float],
                 shape: tuple[int, int]) -> None:
        self.pooled, self.alphas, self.anchors = pooled, [float(a) for a in alphas], [float(c) for c in anchors]
        self.n_records = shape[1]
        n = pooled.n_neg
        # cover the largest α with a margin, and every anchor (its non-members above it are summed)
        above_anchor = int(max(np.count_nonzero(pooled.negatives > c) for c in self.anchors))
        self._load(max(int(1.25 * max(self.alphas) * n) + 64, above_anchor + 1))

    def _load(self, count: int) -> None:
        values, where = self.pooled.top(count)
        self.values = values
        self.rows, self.cols = np.divmod(where, self.n_records)
        last = np.ones(values.size, dtype=bool)
        last[:-1] = values[1:] != values[:-1]
        self.ends = np.flatnonzero(last)  # the last position of every group of tied scores
        self.complete = values.size == self.pooled.n_neg
        self.above = [int(np.count_nonzero(values > c)) for c in self.anchors]

    def tpr(self, block: ReplicateBlock, tp_anchor: np.ndarray, tot_pos: np.ndarray,
            tot_neg: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(TPR (b, J) at the re-chosen thresholds, weighted false positives (b, J) above the anchors).

        ``tp_anchor[b, j]`` is the weighted count of members scoring above anchor j, ``tot_pos[b]``
        the weighted members (both from :meth:`Bootstrap.column_totals`), ``tot_neg[b]`` the weighted
        non-members (default: every other target).
        """
        b, n_alpha = block.stop - block.start, len(self.alphas)
        if tot_neg is None:
            tot_neg = block.w_models.sum(axis=1) * block.w_records.sum(axis=1) - tot_pos
        denominator = np.maximum(tot_neg, 1e-300)
        cut = np.empty((b, n_alpha))
        fp_anchor = np.empty((b, n_alpha))
        lo = 0
        while lo < b:
            rows = slice(lo, min(lo + _CUMSUM_ROWS, b))
            weight = block.w_models[rows][:, self.rows]
            weight *= block.w_records[rows][:, self.cols]
            cum = np.cumsum(weight, axis=1, out=weight)
            for j, above in enumerate(self.above):
                fp_anchor[rows, j] = cum[:, above - 1] if above else 0.0
            # the weighted FPR after every group of ties; non-decreasing along a row, so the groups
            # with FPR ≤ α + 1e-12 are counted by a binary search
            fpr = cum[:, self.ends] if self.ends.size < cum.shape[1] else cum
            fpr /= denominator[rows, None]
            admitted = np.array([[np.searchsorted(row, a + 1e-12, side="right") for a in self.alphas] for row in fpr],
                                dtype=np.intp).reshape(-1, n_alpha)
            if not self.complete and (admitted == self.ends.size).any():
                self._load(2 * self.values.size)  # a cut beyond the loaded non-members: load more, redo
                continue
            group_value = np.append(self.values[self.ends], -np.inf)
            cut[rows] = group_value[admitted]
            lo = rows.stop
        tp = np.array(tp_anchor, dtype=np.float64, copy=True)
        for j, anchor in enumerate(self.anchors):
            finite = np.isfinite(cut[:, j])
            tp[~finite, j] = tot_pos[~finite]  # every target admitted
            if not finite.any():
                continue
            low, high = min(cut[finite, j].min(), anchor), max(cut[finite, j].max(), anchor)
            values, where = self.pooled.members_between(low, high)
            rows_, cols_ = np.divmod(where, self.n_records)
            key = -values  # ascending
            at_anchor = int(np.searchsorted(key, -anchor, side="left"))  # members above the anchor
            for r in np.flatnonzero(finite):
                at_cut = int(np.searchsorted(key, -cut[r, j], side="left"))
                if at_cut == at_anchor:
                    continue
                sl = slice(min(at_cut, at_anchor), max(at_cut, at_anchor))
                band = float(np.sum(block.w_models[r, rows_[sl]] * block.w_records[r, cols_[sl]]))
                tp[r, j] += band if at_cut > at_anchor else -band
        return tp / np.maximum(tot_pos, 1e-300)[:, None], fp_anchor
