"""What the two-axis bootstrap totals over: a block of its replicates and the targets it counts.

* :class:`ReplicateBlock` — the model and record weights of a block of replicates;
* :class:`TargetSets` — sets of targets, bit-packed for :meth:`Bootstrap.column_totals`;
* :class:`TargetEntries` — listed targets with values, for :meth:`Bootstrap.entry_totals`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ReplicateBlock", "TargetSets", "TargetEntries"]


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

    The sets come in groups of ``g`` = :attr:`Bootstrap.group` (how many counts share one float64 in the
    bootstrap's matrix product), and each uint8 array of ``codes`` holds as many whole groups as fit in
    its 8 bits (``per_byte = g·⌊8/g⌋`` sets: 8 for g = 4, the bootstrap's at N+ ≥ 1,024): set ``i`` is bit
    ``i mod per_byte`` of ``codes[i // per_byte]``, and group ``q`` the ``g`` bits from
    ``(q mod ⌊8/g⌋)·g`` (:meth:`group_codes`). One byte per target for up to 8 sets.

    Examples
    --------
    >>> sets = TargetSets((2, 3), 2, group=3)
    >>> sets.add(1, slice(0, 3), np.array([[True, False, True], [False, False, True]]))
    >>> sets.codes[0].tolist()
    [[2, 0, 2], [0, 0, 2]]
    """

    def __init__(self, shape: tuple[int, int], n_sets: int, *, group: int) -> None:
        self.shape, self.n_sets, self.group = shape, int(n_sets), int(group)
        self.per_byte = self.group * max(1, 8 // self.group)
        self.codes = [np.zeros(shape, dtype=np.uint8) for _ in range(-(-self.n_sets // self.per_byte))]

    def locate(self, i: int) -> tuple[np.ndarray, int]:
        """The code array holding set ``i`` and its bit there."""
        return self.codes[i // self.per_byte], i % self.per_byte

    def group_codes(self) -> list[tuple[np.ndarray, int]]:
        """Per group of ``g`` sets (``q = 0, 1, …``), its code array and the bit its first set sits at."""
        return [self.locate(q * self.group) for q in range(-(-self.n_sets // self.group))]

    def add(self, i: int, cols: slice, members: np.ndarray) -> None:
        """Put the targets ``members`` (bool, shape (M, width of cols)) of records ``cols`` in set ``i``."""
        codes, bit = self.locate(i)
        code = codes[:, cols]
        code |= np.left_shift(members.view(np.uint8), bit)


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
        from scipy import sparse  # only a bootstrap builds one: an evaluation with n_boot = 0 skips the import

        m, n = int(shape[0]), int(shape[1])
        self.shape, self.k = (m, n), int(values.shape[1])
        rows, cols = np.divmod(np.asarray(positions, dtype=np.int64), n)
        nz_entry, nz_col = np.nonzero(values)
        self.matrix = sparse.csc_matrix((values[nz_entry, nz_col], (nz_col * m + rows[nz_entry], cols[nz_entry])),
                                        shape=(self.k * m, n))

    @classmethod
    def stacked(cls, pieces: list[TargetEntries]) -> TargetEntries:
        """The entries of consecutive blocks of records (each a :class:`TargetEntries` of its columns) as
        one: their matrices side by side — the same arrays (canonical CSC: rows sorted in every column) as
        one construction from all positions, without holding every listed target's dense values at once.

        Examples
        --------
        >>> a = TargetEntries((2, 2), np.array([1]), np.array([[1.0, 0.5]]))
        >>> b = TargetEntries((2, 1), np.array([1]), np.array([[0.0, 2.0]]))
        >>> TargetEntries.stacked([a, b]).matrix.toarray().tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 2.0]]
        """
        from scipy import sparse

        whole = cls.__new__(cls)
        whole.shape = (pieces[0].shape[0], sum(p.shape[1] for p in pieces))
        whole.k = pieces[0].k
        whole.matrix = sparse.hstack([p.matrix for p in pieces], format="csc")
        return whole
