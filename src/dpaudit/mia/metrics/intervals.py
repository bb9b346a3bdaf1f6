"""Uncertainty of the TPR rules: Clopper–Pearson and **the** bootstrap over models and records.

Every bootstrap interval of dpaudit comes from one draw, :class:`Bootstrap`: multinomial weights over
the M models and the N+ records (the "pigeonhole" bootstrap for crossed designs, Owen, Ann. Appl.
Stat. 2007), which is the same as resampling both axes with replacement. Its views:

* :meth:`Bootstrap.rate` — a fixed per-target rule's weighted TPR or FPR (one BLAS product);
* :meth:`Bootstrap.tpr_at_fpr` — TPR with the threshold re-chosen at FPR ≤ α in every replicate;
* :meth:`Bootstrap.record_mean` — a mean of per-record values (record weights only);
* :meth:`Bootstrap.indices` — a replicate as index arrays, for any statistic
  (:func:`bootstrap_ci`).

Clopper–Pearson on counts is valid for independent trials at a threshold fixed in advance; pooled
efficient-LiRA targets share models and records, which only the bootstrap sees.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse, stats

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import whole_number
from dpaudit.mia.fits import column_blocks
from dpaudit.mia.metrics._inputs import as_bool, as_scores, check_counts, check_level, check_same_shape, scalar_or_array
from dpaudit.mia.metrics.roc import PooledScores

__all__ = ["clopper_pearson", "Bootstrap", "ReplicateBlock", "TargetSets", "TargetEntries", "RechosenThreshold",
           "BootstrapCI",
           "bootstrap_ci", "percentile_interval"]

_AXES = ("models", "records")


def clopper_pearson(k: object, n: object, *, level: float = 0.95) -> tuple[float | np.ndarray, float | np.ndarray]:
    """Exact two-sided Clopper–Pearson interval for a binomial proportion k/n; vectorised.

    ``lower = Beta⁻¹(a/2; k, n − k + 1)``, ``upper = Beta⁻¹(1 − a/2; k + 1, n − k)`` with
    ``a = 1 − level``; ``lower = 0`` when k = 0 and ``upper = 1`` when k = n (Clopper & Pearson,
    Biometrika 1934). Coverage is at least ``level`` for every true proportion, and each one-sided
    bound alone fails with probability at most ``a/2``.

    Valid for k successes in n **independent** Bernoulli trials with a common probability, counted
    at a threshold **fixed independently of these data** (an analytic threshold, or one chosen on a
    held-out split). Not valid for a threshold chosen on the same data (the empirical "FPR = α"
    point) nor for concatenated scores that share models and records: use :func:`bootstrap_ci`.

    Parameters
    ----------
    k : int or array_like of int
        Successes, ``0 <= k <= n``.
    n : int or array_like of int
        Trials, ``n >= 1``. Broadcast against ``k``.
    level : float, default 0.95
        Two-sided confidence level.

    Returns
    -------
    lower, upper : float or ndarray
        Floats for scalar inputs, else arrays of the broadcast shape.

    Examples
    --------
    >>> lo, hi = clopper_pearson(0, 10)
    >>> lo, round(hi, 6), round(1 - 0.025 ** (1 / 10), 6)
    (0.0, 0.308497, 0.308497)
    """
    level = check_level(level)
    k_arr, n_arr = check_counts(k, n, "k", "n")
    a = 1.0 - level
    # Beta(0, ·) and Beta(·, 0) are degenerate: keep scipy's parameters valid and set the edges exactly.
    lower = stats.beta.ppf(a / 2, np.maximum(k_arr, 1), n_arr - k_arr + 1)
    upper = stats.beta.ppf(1 - a / 2, k_arr + 1, np.maximum(n_arr - k_arr, 1))
    lower = np.where(k_arr == 0, 0.0, lower)
    upper = np.where(k_arr == n_arr, 1.0, upper)
    return scalar_or_array(lower), scalar_or_array(upper)


def percentile_interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval ``[(1 − level)/2, (1 + level)/2]`` of replicates (NaNs ignored).

    Examples
    --------
    >>> tuple(round(v, 9) for v in percentile_interval(np.arange(101.0), 0.9))
    (5.0, 95.0)
    """
    lo, hi = np.nanpercentile(samples, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def _axes(over: str | Sequence[str]) -> tuple[str, ...]:
    axes = (over,) if isinstance(over, str) else tuple(over)
    if not axes or any(ax not in _AXES for ax in axes) or len(set(axes)) != len(axes):
        raise DPAuditError(f"over must name 'models', 'records' or both, got {over!r}")
    return tuple(ax for ax in _AXES if ax in axes)


#: Bytes of record weights per replicate block: the bootstrap holds one block of replicates at a time.
_BLOCK_BYTES = 1 << 24
#: Record weights of all replicates are kept after the first draw when they take at most this many bytes
#: (the default evaluation: 200 replicates × 50,000 records = 10 MB); else each pass draws them again.
_CACHE_BYTES = 1 << 27
#: Replicates per chunk of the re-chosen threshold's cumulative sums (bounds a (chunk × L) array).
_RECHOSEN_ROWS = 16
#: Most bits of one packed field of :meth:`Bootstrap.column_totals`: a field sums record weights only
#: until that sum could reach 2^13 (then it is unpacked), so four sets share one float64 at any N+.
_FIELD_BITS = 13
#: Targets per matrix product of :meth:`Bootstrap.column_totals` (8 MB of looked-up fields): large
#: products keep BLAS's threads busy (measured on 2 loaded cores: 0.57 s against 0.98 s with 2 MB).
_PRODUCT_ELEMENTS = 1 << 20


@dataclass(frozen=True, eq=False)
class ReplicateBlock:
    """Replicates ``start:stop`` of a :class:`Bootstrap`.

    Attributes
    ----------
    start, stop : int
    w_models : ndarray of float, shape (stop − start, M)
    w_records : ndarray of small unsigned int, shape (stop − start, N+)
        The multinomial counts (one byte each when they fit), converted to float where they are used.
    """

    start: int
    stop: int
    w_models: np.ndarray
    w_records: np.ndarray


class TargetSets:
    """Several sets of targets of an (M, N+) design, bit-packed for :meth:`Bootstrap.column_totals`.

    Set ``i`` is bit ``i mod g`` of the uint8 array ``codes[i // g]``, ``g`` = :attr:`Bootstrap.group`
    (how many counts share one float64 in the bootstrap's matrix product).

    Examples
    --------
    >>> sets = TargetSets((2, 3), 2, group=3)
    >>> sets.add(1, slice(0, 3), np.array([[True, False, True], [False, False, True]]))
    >>> sets.codes[0].tolist()
    [[2, 0, 2], [0, 0, 2]]
    """

    def __init__(self, shape: tuple[int, int], n_sets: int, *, group: int) -> None:
        self.shape, self.n_sets, self.group = shape, int(n_sets), int(group)
        self.codes = [np.zeros(shape, dtype=np.uint8) for _ in range(-(-self.n_sets // self.group))]

    def add(self, i: int, cols: slice, members: np.ndarray) -> None:
        """Put the targets ``members`` (bool, shape (M, width of cols)) of records ``cols`` in set ``i``."""
        code = self.codes[i // self.group][:, cols]
        code |= np.left_shift(members.view(np.uint8), i % self.group)


class TargetEntries:
    """Listed targets of an (M, N+) design with ``k`` values each, for :meth:`Bootstrap.entry_totals`.

    Held as one sparse (k·M × N+) matrix in compressed columns: row ``j·M + m`` of column ``x`` is
    ``values[e, j]`` of the target ``e`` at (m, x) (zeros dropped), so a block of records is a slice of
    columns.

    Parameters
    ----------
    shape : (M, N+)
    positions : ndarray of int, shape (E,)
        Flat positions ``m·N+ + x`` (each target at most once).
    values : ndarray of float, shape (E, k)

    Examples
    --------
    >>> e = TargetEntries((2, 3), np.array([1, 5]), np.array([[1.0, 0.5], [0.0, 2.0]]))
    >>> e.matrix.toarray().tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 2.0]]
    """

    def __init__(self, shape: tuple[int, int], positions: np.ndarray, values: np.ndarray) -> None:
        m, n = int(shape[0]), int(shape[1])
        self.shape, self.k = (m, n), int(values.shape[1])
        rows, cols = np.divmod(np.asarray(positions, dtype=np.int64), n)
        nz_entry, nz_col = np.nonzero(values)
        self.matrix = sparse.csc_matrix((values[nz_entry, nz_col], (nz_col * m + rows[nz_entry], cols[nz_entry])),
                                        shape=(self.k * m, n))


class Bootstrap:
    """The two-axis bootstrap of an (M models × N+ records) design, as multinomial weights.

    Replicate b weights model m by ``w_models[b, m]`` and record x by ``w_records[b, x]`` (how often
    each was drawn; all ones on an axis that is not resampled), so a target (m, x) counts
    ``w_models[b, m]·w_records[b, x]`` times. Drawn once, in that order, from ``seed``.

    The record weights are produced in blocks of replicates (:meth:`blocks`, about 16 MB of one-byte
    counts each), so no (n_boot × N+) float array is ever formed: a block is drawn, used by every
    statistic, and dropped (kept only when all blocks fit in 128 MB; otherwise a second pass draws
    them again from the saved generator state, the same numbers). When they fit and ``seed`` is not a
    Generator, they are drawn in a background thread from construction on (numpy's multinomial draw
    releases the GIL, and it is a fifth of a 200-replicate evaluation), so the draw overlaps the
    caller's own work until :meth:`blocks` first needs them. Every total is computed per block:

    * :meth:`column_totals` — weighted counts of many target sets (:class:`TargetSets`) and weighted
      sums of per-record values, in one pass over the records;
    * :meth:`entry_totals` — weighted sums over a list of targets with values (sparse rules);
    * :meth:`tpr_at_fpr` — TPR with the threshold re-chosen in every replicate.

    A weighted count ``Σ_{m,x} w_m w_x [target in set]`` is an integer below ``M·N+``, so it is exact in
    float64 whatever the order of summation: the counts are the same numbers as any other exact way
    of computing them. Sums of non-integer values (per-record means, call probabilities) are rounded
    in another order than a single (n_boot × M)·(M × N+) product would round them (relative 1e-16).

    Parameters
    ----------
    shape : (int, int)
        (M, N+).
    n_boot : int
        Replicates.
    seed : int, numpy Generator or None
        A Generator is advanced past both draws, as when they were drawn at once.
    over : "models", "records" or both

    Examples
    --------
    >>> boot = Bootstrap((4, 6), 3, seed=0)
    >>> boot.w_models.sum(axis=1).tolist(), boot.w_records.sum(axis=1).tolist()
    ([4.0, 4.0, 4.0], [6.0, 6.0, 6.0])
    """

    def __init__(self, shape: tuple[int, int], n_boot: int, *, seed: int | np.random.Generator | None = 0,
                 over: str | Sequence[str] = _AXES) -> None:
        axes = _axes(over)
        given = isinstance(seed, np.random.Generator)
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        m, n = shape
        self.shape = (int(m), int(n))
        self.n_boot = int(n_boot)
        self.w_models = (rng.multinomial(m, np.full(m, 1.0 / m), size=n_boot).astype(np.float64)
                         if "models" in axes else np.ones((n_boot, m)))
        self._records = "records" in axes
        self._bit_generator = type(rng.bit_generator)
        self._state = rng.bit_generator.state
        self._block = max(1, min(self.n_boot, _BLOCK_BYTES // max(self.shape[1], 1)))
        self._cache: list[ReplicateBlock] | None = None
        self._drawing: threading.Thread | None = None
        self._drawn: list[list[ReplicateBlock] | BaseException] = []
        #: Bits per packed field (a weighted count of records, at most N+, summed 2^13 − 1 at a time:
        #: :meth:`column_totals`) and fields per float64 (53-bit integers).
        self.bits = max(1, min(self.shape[1].bit_length(), _FIELD_BITS))
        self.group = max(1, min(8, 53 // self.bits))
        if given:  # advance the caller's generator past the record weights (and keep them if small)
            self._cache = self._draw(rng)
        elif self.n_boot and self._records and self.n_boot * self.shape[1] <= _CACHE_BYTES:
            # draw the record weights in the background while the caller prepares what they weigh
            # (the multinomial draw releases the GIL); the first :meth:`blocks` waits for them
            self._drawing = threading.Thread(target=self._draw_in_background, daemon=True)
            self._drawing.start()

    def _draw_in_background(self) -> None:
        try:
            rng = np.random.Generator(self._bit_generator())
            rng.bit_generator.state = self._state
            self._drawn.append(list(self._blocks_from(rng)))
        except BaseException as exc:  # handed to the thread that asks for the blocks
            self._drawn.append(exc)

    # ------------------------------------------------------------------ the replicates, block by block

    def _draw(self, rng: np.random.Generator) -> list[ReplicateBlock] | None:
        """Draw every block from ``rng``; the list when it fits the cache, else None (drawn, not kept)."""
        keep = self.n_boot * self.shape[1] <= _CACHE_BYTES
        blocks = [block for block in self._blocks_from(rng) if keep]
        return blocks if keep else None

    def _blocks_from(self, rng: np.random.Generator) -> Iterator[ReplicateBlock]:
        n = self.shape[1]
        p = np.full(n, 1.0 / n)
        for start in range(0, self.n_boot, self._block):
            stop = min(start + self._block, self.n_boot)
            if not self._records:
                w = np.ones((stop - start, n), dtype=np.uint8)
            else:
                w = np.empty((stop - start, n), dtype=np.uint8)
                for lo in range(0, stop - start, _RECHOSEN_ROWS):  # int64 draws, a few rows at a time
                    counts = rng.multinomial(n, p, size=min(_RECHOSEN_ROWS, stop - start - lo))
                    if counts.max() > np.iinfo(w.dtype).max:
                        w = w.astype(np.int64)
                    w[lo:lo + counts.shape[0]] = counts
            yield ReplicateBlock(start, stop, self.w_models[start:stop], w)

    def blocks(self) -> Iterator[ReplicateBlock]:
        """The replicates in blocks, in order (the same weights on every call)."""
        if self._drawing is not None:
            self._drawing.join()
            self._drawing = None
            drawn = self._drawn.pop()
            if isinstance(drawn, BaseException):
                raise drawn
            self._cache = drawn
        if self._cache is not None:
            yield from self._cache
            return
        rng = np.random.Generator(self._bit_generator())
        rng.bit_generator.state = self._state
        if self.n_boot * self.shape[1] <= _CACHE_BYTES:
            self._cache = list(self._blocks_from(rng))
            yield from self._cache
        else:
            yield from self._blocks_from(rng)

    @property
    def w_records(self) -> np.ndarray:
        """(n_boot, N+) float record weights of every replicate, formed on request (8·n_boot·N+ bytes)."""
        return np.concatenate([block.w_records.astype(np.float64) for block in self.blocks()])

    # ------------------------------------------------------------------ totals of one block

    def column_totals(self, block: ReplicateBlock, sets: TargetSets | None = None,
                      records: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Weighted counts of target sets and weighted sums of per-record values, for one block.

        Returns ``counts`` (b, n_sets) with ``counts[b, i] = Σ_{m,x} w_m w_x [(m, x) in set i]`` and
        ``sums`` (b, k) with ``sums[b, j] = Σ_x w_x records[x, j]`` (``records`` of shape (N+, k)).

        Notes
        -----
        One pass over the records in blocks. The ``g`` sets of one code array are counted by one
        matrix product: each target carries ``Σ_i [in set i]·2^(bits·i)`` (a lookup of its code), and
        the product with the record weights sums ``Σ_x w_x·[in set i]`` in field i of a float64. A
        field stays an exact integer below ``2^bits`` (so ``g·bits ≤ 53`` fields fit one float64) as
        long as the record weights summed into it stay below ``2^bits``: the running total of every
        replicate's weights is tracked, and before it would reach ``2^bits`` the fields are split into
        int64 per-set totals and restarted (a block of records whose weights alone would reach it is
        halved; a single record weighted ``≥ 2^bits``, possible only when N+ ≥ 2^13, is counted on its
        own). The per-set totals are then weighted by the models: ``counts = Σ_m w_m·total_i[m]``,
        exact as well (every partial sum is an integer below M·N+ < 2^53).
        """
        m, n = self.shape
        b = block.stop - block.start
        codes = [] if sets is None else sets.codes
        n_sets = 0 if sets is None else sets.n_sets
        g, bits = self.group, self.bits
        limit, mask = (1 << bits) - 1, (1 << bits) - 1
        fields = 2.0 ** (bits * np.arange(g))
        lut = np.array([float(np.dot([(c >> i) & 1 for i in range(g)], fields)) for c in range(1 << g)])
        packed = [np.zeros((m, b)) for _ in codes]  # fields since the last split
        exact = [np.zeros((m, b), dtype=np.int64) for _ in range(n_sets)]
        running = np.zeros(b, dtype=np.int64)  # record weight summed into the fields, per replicate

        def split() -> None:
            for c, acc in enumerate(packed):
                whole = acc.astype(np.int64)
                for f in range(min(g, n_sets - c * g)):
                    exact[c * g + f] += (whole >> (bits * f)) & mask
                acc[:] = 0.0
            running[:] = 0

        sums = np.zeros((b, 0 if records is None else records.shape[1]))
        for cols in column_blocks(n, m, elements=_PRODUCT_ELEMENTS):
            w = block.w_records[:, cols]
            if records is not None:
                sums += w.astype(np.float64) @ records[cols]
            for piece, load in self._pieces(block.w_records, cols, limit) if codes else ():
                if load is None:  # one record weighted ≥ 2^bits in some replicate: its sets one by one
                    x = piece.start
                    wx = block.w_records[:, x].astype(np.int64)
                    for i in range(n_sets):
                        exact[i] += np.outer((codes[i // g][:, x] >> (i % g)) & 1, wx)
                    continue
                if int((running + load).max()) > limit:
                    split()
                running += load
                wt = np.ascontiguousarray(block.w_records[:, piece].T, dtype=np.float64)  # (width, b)
                for acc, code in zip(packed, codes):
                    acc += lut.take(code[:, piece]) @ wt
        split()
        counts = np.empty((b, n_sets))
        for i in range(n_sets):
            counts[:, i] = np.einsum("bm,mb->b", block.w_models, exact[i].astype(np.float64))
        return counts, sums

    @staticmethod
    def _pieces(w_records: np.ndarray, cols: slice, limit: int) -> Iterator[tuple[slice, np.ndarray | None]]:
        """``cols`` cut into slices whose record weights sum to ≤ ``limit`` in every replicate, with those
        sums; a single record above ``limit`` comes alone with None."""
        load = w_records[:, cols].sum(axis=1, dtype=np.int64)
        if int(load.max(initial=0)) <= limit:
            yield cols, load
        elif cols.stop - cols.start == 1:
            yield cols, None
        else:
            mid = (cols.start + cols.stop) // 2
            yield from Bootstrap._pieces(w_records, slice(cols.start, mid), limit)
            yield from Bootstrap._pieces(w_records, slice(mid, cols.stop), limit)

    def entry_totals(self, block: ReplicateBlock, entries: TargetEntries) -> np.ndarray:
        """(b, k) ``Σ_e w_m(e) w_x(e) values[e]`` over listed targets (:class:`TargetEntries`).

        ``R = V·W_xᵀ`` (the sparse (k·M × N+) values times the record weights, a block of records at a
        time: one multiply-add per listed value and replicate), then ``Σ_m w_m R[j·M + m]``. With 0/1
        values every partial sum is an integer (exact); other values are summed in another order than
        per-target products would be (≤ 1e-12 relative).
        """
        m, n = self.shape
        b = block.stop - block.start
        acc = np.zeros((entries.k * m, b))
        matrix = entries.matrix
        for cols in column_blocks(n, m, elements=_PRODUCT_ELEMENTS):
            part = matrix[:, cols]
            if part.nnz:
                acc += part @ np.ascontiguousarray(block.w_records[:, cols].T, dtype=np.float64)
        return np.einsum("bm,jmb->bj", block.w_models, acc.reshape(entries.k, m, b))

    def totals_of_blocks(self, per_block: Callable[[ReplicateBlock], np.ndarray]) -> np.ndarray:
        """Stack ``per_block(block)`` (each (b, …)) over all blocks: (n_boot, …)."""
        return np.concatenate([per_block(block) for block in self.blocks()])

    # ------------------------------------------------------------------ views

    def weighted_sum(self, values: np.ndarray) -> np.ndarray:
        """(n_boot,) Σ_{m,x} w_m w_x · values[m, x], one block of records and replicates at a time."""
        values = np.asarray(values, dtype=np.float64)
        m, n = self.shape

        def per_block(block: ReplicateBlock) -> np.ndarray:
            acc = np.zeros((m, block.stop - block.start))
            for cols in column_blocks(n, m):
                acc += values[:, cols] @ block.w_records[:, cols].T.astype(np.float64)
            return np.einsum("bm,mb->b", block.w_models, acc)

        return self.totals_of_blocks(per_block)

    def rate(self, hits: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(n_boot,) weighted share of ``hits`` (bool, or call probabilities in [0, 1]) among the targets
        in ``mask`` (e.g. TPR among the IN targets)."""
        return self.weighted_sum(np.where(mask, hits, 0.0)) / np.maximum(self.weighted_sum(mask), 1e-300)

    def record_mean(self, values: np.ndarray) -> np.ndarray:
        """(n_boot,) weighted mean of per-record values (shape (N+,))."""
        column = np.asarray(values, dtype=np.float64).reshape(-1, 1)
        return self.totals_of_blocks(lambda block: self.column_totals(block, records=column)[1][:, 0]
                                     / block.w_records.sum(axis=1))

    def tpr_at_fpr(self, stat: np.ndarray, keep: np.ndarray, alphas: Sequence[float]) -> np.ndarray:
        """(n_boot, len(alphas)) TPR with the threshold re-chosen at weighted FPR ≤ α in every replicate.

        Ties are cut together; replicate b takes the largest weighted FPR ≤ α + 1e-12 (see
        :class:`RechosenThreshold`, which evaluates it from one sort of the non-members' values).
        """
        keep = np.asarray(keep, dtype=bool)
        pooled = PooledScores(np.asarray(stat, dtype=np.float64), keep)
        anchors = [pooled.cut(a) for a in alphas]
        sets = TargetSets(self.shape, len(alphas) + 1, group=self.group)
        score = pooled.scores.reshape(self.shape)
        for cols in column_blocks(self.shape[1], self.shape[0]):
            k = keep[:, cols]
            sets.add(0, cols, k)
            for j, c in enumerate(anchors):
                sets.add(j + 1, cols, k & (score[:, cols] > c))
        rechosen = RechosenThreshold(pooled, alphas, anchors, self.shape)

        def per_block(block: ReplicateBlock) -> np.ndarray:
            counts, _ = self.column_totals(block, sets)
            return rechosen.tpr(block, counts[:, 1:], counts[:, 0])[0]

        return self.totals_of_blocks(per_block)

    def indices(self, b: int) -> tuple[np.ndarray, ...]:
        """Replicate b as an index into the (M, N+) matrices (rows and columns repeated by their weights)."""
        for block in self.blocks():
            if block.start <= b < block.stop:
                return self._indices(block, b - block.start)
        raise IndexError(f"replicate {b} of {self.n_boot}")

    def _indices(self, block: ReplicateBlock, r: int) -> tuple[np.ndarray, ...]:
        m, n = self.shape
        rows = np.repeat(np.arange(m), block.w_models[r].astype(np.int64))
        cols = np.repeat(np.arange(n), block.w_records[r].astype(np.int64))
        return np.ix_(rows, cols)


class RechosenThreshold:
    """The naive rule's bootstrap: TPR at the largest weighted FPR ≤ α, threshold re-chosen per replicate.

    In replicate b every target (m, x) counts ``w = w_m w_x`` times. With the distinct non-member
    scores ``u₁ > u₂ > …`` and ``C_k`` the weighted count of non-members scoring ≥ ``u_k``, the
    threshold admits the ``K`` largest groups, ``K`` the largest with ``C_K / T ≤ α + 1e-12``
    (``T`` the replicate's weighted non-members; the slack of the rule it replaces); every target
    scoring above ``c = u_{K+1}`` is then called a member (ties cross together), so

        TPR_b = Σ_{members, s > c} w / Σ_{members} w        (0 when no member scores above u₁).

    Evaluated from the :class:`~dpaudit.mia.metrics.roc.PooledScores` (one sort of the non-members'
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

    def tpr(self, block: ReplicateBlock, tp_anchor: np.ndarray, tot_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(TPR (b, J) at the re-chosen thresholds, weighted false positives (b, J) above the anchors).

        ``tp_anchor[b, j]`` is the weighted count of members scoring above anchor j, ``tot_pos[b]``
        the weighted members (both from :meth:`Bootstrap.column_totals`).
        """
        b, n_alpha = block.stop - block.start, len(self.alphas)
        tot_neg = block.w_models.sum(axis=1) * block.w_records.sum(axis=1) - tot_pos
        denominator = np.maximum(tot_neg, 1e-300)
        cut = np.empty((b, n_alpha))
        fp_anchor = np.empty((b, n_alpha))
        lo = 0
        while lo < b:
            rows = slice(lo, min(lo + _RECHOSEN_ROWS, b))
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


@dataclass(frozen=True, eq=False)
class BootstrapCI:
    """A percentile bootstrap interval.

    Attributes
    ----------
    estimate : float or ndarray
        ``stat_fn`` on the original data.
    lower, upper : float or ndarray
        Percentiles ``(1 − level)/2`` and ``(1 + level)/2`` of the replicates (NaN if any replicate
        is NaN: the statistic was undefined on some resample).
    level : float
    n_boot : int
    over : tuple of str
        Resampled axes ("models", "records").
    replicates : ndarray, shape (n_boot, *estimate.shape)
    """

    estimate: float | np.ndarray
    lower: float | np.ndarray
    upper: float | np.ndarray
    level: float
    n_boot: int
    over: tuple[str, ...]
    replicates: np.ndarray

    def __str__(self) -> str:
        return (
            f"{self.estimate} ({self.level:.0%} percentile bootstrap CI [{self.lower}, {self.upper}], "
            f"{self.n_boot} resamples over {' and '.join(self.over)})"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "estimate": np.asarray(self.estimate).tolist(),
            "lower": np.asarray(self.lower).tolist(),
            "upper": np.asarray(self.upper).tolist(),
            "level": self.level,
            "n_boot": self.n_boot,
            "over": list(self.over),
            "method": "percentile bootstrap",
        }


def bootstrap_ci(
    stat_fn: Callable[[np.ndarray, np.ndarray], object],
    score: object,
    keep: object,
    *,
    n_boot: int = 200,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    over: str | Sequence[str] = ("models", "records"),
) -> BootstrapCI:
    """Percentile bootstrap CI of ``stat_fn(score, keep)``, resampling models and/or records.

    Each replicate draws model rows and/or record columns with replacement (the same draw for
    ``score`` and ``keep``; :class:`Bootstrap`, the draw every interval of dpaudit uses), and
    recomputes ``stat_fn`` on the resampled matrices. Resampling both axes
    at once is the "pigeonhole" bootstrap for crossed designs (Owen, Ann. Appl. Stat. 2007), which is
    conservative: it accounts for the dependence of concatenated scores that share a model or a record.
    This is the interval to report for TPR at an empirical FPR α (threshold chosen on the data),
    where :func:`clopper_pearson` is invalid (spec §4).

    Parameters
    ----------
    stat_fn : callable ``(score_b, keep_b) -> float or array``
        The statistic, e.g. ``lambda s, k: tpr_at_fpr(roc_curve(s, k), [1e-2, 1e-3])``. Its output
        shape must not depend on the resample. It receives already computed statistics: if it refits
        LiRA with leave-one-out shadows, a duplicated model row would be its own shadow.
    score : array_like of float, shape (M, N+)
    keep : array_like of bool, shape (M, N+)
    n_boot : int, default 200
        Resamples (at least 2). Percentiles far in the tails need more.
    level : float, default 0.95
    seed : int, numpy Generator or None, default 0
        Reproducible by default.
    over : "models", "records" or both, default both

    Returns
    -------
    BootstrapCI

    Notes
    -----
    Which axes: resampling only models treats the records as fixed (in a simulation with a random
    record effect, a nominal 95% interval over models alone covered the population TPR about 83% of
    the time; over records 95%; over both 99%). Resample both unless the records are the population.

    Memory: one resampled copy of the matrices exists at a time (plus the replicates' weights), so
    peak memory is about twice the input, whatever ``n_boot``.
    Errors raised by ``stat_fn`` on a resample (e.g. no member left) propagate.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> keep = rng.random((8, 50)) < 0.5
    >>> score = rng.normal(size=(8, 50)) + keep
    >>> from dpaudit.mia.metrics.roc import auc, roc_curve
    >>> ci = bootstrap_ci(lambda s, k: auc(roc_curve(s, k)), score, keep, n_boot=50)
    >>> bool(ci.lower <= ci.estimate <= ci.upper)
    True
    """
    if not callable(stat_fn):
        raise DPAuditError(f"stat_fn must be a function (score, keep) -> statistic, got {type(stat_fn).__name__}")
    s = as_scores(score, "score")
    k = as_bool(keep, "keep")
    check_same_shape(s, k, "score", "keep")
    if s.ndim != 2 or s.size == 0:
        raise DataError(f"score must be a non-empty (M models, N+ records) matrix, got shape {s.shape}")
    level = check_level(level)
    n_boot = whole_number("n_boot", n_boot, minimum=2)
    axes = _axes(over)

    boot = Bootstrap(s.shape, n_boot, seed=seed, over=axes)
    estimate = np.asarray(stat_fn(s, k), dtype=float)
    reps = np.empty((n_boot, *estimate.shape))
    for b in range(n_boot):
        idx = boot.indices(b)
        value = np.asarray(stat_fn(s[idx], k[idx]), dtype=float)
        if value.shape != estimate.shape:
            raise DPAuditError(
                f"stat_fn returned shape {value.shape} on a resample but {estimate.shape} on the data; "
                "it must return the same shape every time"
            )
        reps[b] = value
    a = 1.0 - level
    if np.isnan(reps).any():
        lo = hi = np.full(estimate.shape, np.nan)
    else:
        lo, hi = np.quantile(reps, [a / 2, 1 - a / 2], axis=0)
    reps.setflags(write=False)
    return BootstrapCI(
        estimate=scalar_or_array(estimate),
        lower=scalar_or_array(lo),
        upper=scalar_or_array(hi),
        level=level,
        n_boot=int(n_boot),
        over=axes,
        replicates=reps,
    )
