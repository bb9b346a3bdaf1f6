"""**The** bootstrap over models and records: multinomial weights, totalled block by block.

Every bootstrap interval of dpaudit comes from one draw, :class:`Bootstrap`: multinomial weights over
the M models and the N+ records (the "pigeonhole" bootstrap for crossed designs, Owen, Ann. Appl.
Stat. 2007), which is the same as resampling both axes with replacement. Its views:

* :meth:`Bootstrap.rate` — a fixed per-target rule's weighted TPR or FPR (one BLAS product);
* :meth:`Bootstrap.tpr_at_fpr` — TPR with the threshold re-chosen at FPR ≤ α in every replicate
  (:class:`~dpaudit.mia.metrics.rechosen.RechosenThreshold`);
* :meth:`Bootstrap.record_mean` — a mean of per-record values (record weights only);
* :meth:`Bootstrap.indices` — a replicate as index arrays, for any statistic
  (:func:`~dpaudit.mia.metrics.intervals.bootstrap_ci`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from dpaudit._validation import some_of
from dpaudit.mia.fits import column_blocks
from dpaudit.mia.metrics.pooled import PooledScores
from dpaudit.mia.metrics.rechosen import _RECHOSEN_ROWS, RechosenThreshold
from dpaudit.mia.metrics.replicates import ReplicateBlock, TargetEntries, TargetSets

__all__ = ["Bootstrap"]

_AXES = ("models", "records")


def _axes(over: str | Sequence[str]) -> tuple[str, ...]:
    return some_of("over", over, _AXES)


#: Bytes of record weights per replicate block: the bootstrap holds one block of replicates at a time.
_BLOCK_BYTES = 1 << 24
#: Record weights of all replicates are kept after the first draw when they take at most this many bytes
#: (the default evaluation: 200 replicates × 50,000 records = 10 MB); else each pass draws them again.
_CACHE_BYTES = 1 << 27
#: Most bits of one packed field of :meth:`Bootstrap.column_totals`: a field sums record weights only
#: until that sum could reach 2^13 (then it is unpacked), so four sets share one float64 at any N+.
_FIELD_BITS = 13
#: Targets per matrix product of :meth:`Bootstrap.column_totals` (8 MB of looked-up fields): large
#: products keep BLAS's threads busy (measured on 2 loaded cores: 0.57 s against 0.98 s with 2 MB).
_PRODUCT_ELEMENTS = 1 << 20
#: Records per product of the packed set fields (a (M × 1,024) lookup, 2 MB at M = 256): their sums are
#: exact integers, so the products may be split finer than the float sums of per-record values.
_SET_RECORDS = 1 << 10


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
        One pass over the records in blocks. Each group of ``g`` sets (:meth:`TargetSets.group_codes`;
        two groups share a byte at g = 4) is counted by one
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
        groups = [] if sets is None else sets.group_codes()  # per group of g sets: its codes and first bit
        n_sets = 0 if sets is None else sets.n_sets
        g, bits = self.group, self.bits
        limit, mask = (1 << bits) - 1, (1 << bits) - 1
        fields = 2.0 ** (bits * np.arange(g))
        # per first bit of a group: every byte's g bits from there, as the float of their fields
        luts = {shift: np.array([float(np.dot([(c >> (shift + i)) & 1 for i in range(g)], fields)) for c in range(256)])
                for shift in {shift for _, shift in groups}}
        packed = [np.zeros((m, b)) for _ in groups]  # fields since the last split
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
            for piece, load in self._pieces(block.w_records, cols, limit) if groups else ():
                if load is None:  # one record weighted ≥ 2^bits in some replicate: its sets one by one
                    x = piece.start
                    wx = block.w_records[:, x].astype(np.int64)
                    for i in range(n_sets):
                        code, bit = sets.locate(i)  # type: ignore[union-attr]
                        exact[i] += np.outer((code[:, x] >> bit) & 1, wx)
                    continue
                if int((running + load).max()) > limit:
                    split()
                running += load
                for lo in range(piece.start, piece.stop, _SET_RECORDS):  # exact sums: any split gives the same
                    part = slice(lo, min(lo + _SET_RECORDS, piece.stop))
                    wt = np.ascontiguousarray(block.w_records[:, part].T, dtype=np.float64)  # (width, b)
                    for acc, (code, shift) in zip(packed, groups):
                        acc += luts[shift].take(code[:, part]) @ wt
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
