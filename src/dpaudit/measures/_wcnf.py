"""Tuple-level weighted MaxSAT (WCNF) encoding of the ``bag`` and ``set`` repairs (spec §2.3).

This is the unfairness paper's reduction of U_R to weighted MaxSAT, **made complete**. dpaudit
itself solves ``bag`` and ``set`` exactly from count tables (:mod:`dpaudit.measures.repair`); this
module exports the paper's tuple-level formula so that an external MaxSAT solver can check or
reproduce those values.

The encoding, per block A = a with count table ``c[p, o]``:

* The protected values present in the block form S; the *outcome items* present form Q. Under
  ``set`` an item is an outcome value o with some ``c[p, o] > 0`` (tuples are the distinct pairs);
  under ``bag`` it is a pair (o, i), the i-th occurrence of o, for ``1 ≤ i ≤ max_p c[p, o]``.
* D* = S × Q (the block's self-join); D ⊆ D* holds the tuples of the data: (p, o) with
  ``c[p, o] > 0`` (``set``) or (p, (o, i)) with ``i ≤ c[p, o]`` (``bag``).
* One boolean x(p, q) per element of D*, true when the tuple is in the repaired database.
* Soft unit clauses of weight 1: ``x(p, q)`` for (p, q) ∈ D (keep it) and ``¬x(p, q)`` for
  (p, q) ∈ D* \\ D (do not insert it). A falsified soft clause is one deletion or one insertion.
* Hard clauses ``¬x(p1, q1) ∨ ¬x(p2, q2) ∨ x(p1, q2)`` for **every ordered pair** of elements of
  D* with p1 ≠ p2 and q1 ≠ q2: |S|(|S| − 1)|Q|(|Q| − 1) clauses. Taken over both orders of a pair
  they force both other corners of every rectangle, so the kept set is a product S' × Q'.

The optimum cost of the block's formula is the minimum number of tuples deleted plus inserted, i.e.
U_R of the block; blocks (and criteria) use disjoint variables, so the optimum of the joint formula
is their sum. The paper's reference code added only one implication per pair (its optima differ
from the true ones on most small random instances) and solved 100-row chunks separately; neither
defect is reproduced here. ``ci`` has no tuple-level encoding: its repairs are fractional tuples.

pysat is *not* imported here: clauses are plain Python lists and the text is standard DIMACS WCNF
(``p wcnf <nvars> <nclauses> <top>``), readable by any MaxSAT solver and by
``pysat.formula.WCNF(from_string=...)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._defaults import DEFAULT_WCNF_SEMANTICS, MAX_CLAUSES
from dpaudit._errors import DPAuditError
from dpaudit._validation import one_of, whole_number

__all__ = ["MAX_CLAUSES", "DEFAULT_WCNF_SEMANTICS", "BlockFormula", "block_wcnf", "wcnf_text", "repair_wcnf", "check_wcnf_options"]

# MAX_CLAUSES (the default cap on an exported formula's clauses) and DEFAULT_WCNF_SEMANTICS: dpaudit._defaults.

_CHUNK_CLAUSES = 1 << 18  # hard clauses generated (and formatted) per numpy chunk


def _check_semantics(semantics: Any) -> str:
    from dpaudit.measures.repair import SEMANTICS  # the one list of U_R's semantics

    semantics = one_of("semantics", semantics, SEMANTICS)
    if semantics == "ci":
        raise DPAuditError(
            "semantics 'ci' has no tuple-level WCNF encoding: its repairs delete or insert fractional "
            "tuples; export semantics 'bag' or 'set' instead"
        )
    return str(semantics)


def check_wcnf_options(semantics: Any, max_clauses: Any) -> tuple[str, int]:
    """The export's options, checked (before any row is read): ``semantics`` one of U_R's semantics
    with a tuple-level encoding (``bag``, ``set``), ``max_clauses`` a positive integer."""
    return _check_semantics(semantics), whole_number("max_clauses", max_clauses, minimum=1)


@dataclass(frozen=True, eq=False)
class BlockFormula:
    """The complete tuple-level encoding of one block, kept compact (clauses are generated on demand).

    Variable ``k·|Q| + j + 1`` (1-based) is x(S[k], Q[j]): protected values vary slowest.

    Attributes
    ----------
    semantics : {'bag', 'set'}
    protected : ndarray of int
        S: indices (rows of the block table) of the protected values present in the block.
    items : tuple of (int, int)
        Q: the outcome items present, each ``(o, i)`` — outcome value index and occurrence index
        (``i = 1`` under ``set``).
    present : ndarray of bool, shape (len(protected), len(items))
        Membership in D: ``present[k, j]`` is True when the tuple (S[k], Q[j]) is in the data.
    """

    semantics: str
    protected: np.ndarray
    items: tuple[tuple[int, int], ...]
    present: np.ndarray

    @property
    def n_vars(self) -> int:
        """|D*| = |S|·|Q|."""
        return int(self.present.size)

    @property
    def n_soft(self) -> int:
        """One soft unit clause per variable."""
        return self.n_vars

    @property
    def n_hard(self) -> int:
        """|S|(|S| − 1)|Q|(|Q| − 1): ordered pairs of D* elements differing on both sides."""
        s, q = self.present.shape
        return s * (s - 1) * q * (q - 1)

    @property
    def n_data(self) -> int:
        """|D|: the tuples of the data in this block (the cost of deleting everything)."""
        return int(self.present.sum())

    @property
    def variables(self) -> list[tuple[int, Any]]:
        """(p, q) of every variable in order: q = o under ``set``, q = (o, i) under ``bag``."""
        out: list[tuple[int, Any]] = []
        for p in self.protected.tolist():
            for o, i in self.items:
                out.append((p, o if self.semantics == "set" else (o, i)))
        return out

    def soft_clauses(self, offset: int = 0) -> list[list[int]]:
        """Unit soft clauses (weight 1): ``[v]`` for tuples of D, ``[-v]`` for D* \\ D."""
        signs = np.where(self.present.ravel(), 1, -1)
        return [[int(s * v)] for s, v in zip(signs, range(offset + 1, offset + self.n_vars + 1))]

    def hard_chunks(self, offset: int = 0) -> Iterator[np.ndarray]:
        """Hard clauses as int64 arrays of shape (k, 3), one row ``[-x(p1,q1), -x(p2,q2), x(p1,q2)]``."""
        s, q = self.present.shape
        if s < 2 or q < 2:
            return
        q1, q2 = np.nonzero(~np.eye(q, dtype=bool))  # all ordered pairs q1 ≠ q2
        step = max(1, _CHUNK_CLAUSES)
        for a in range(s):
            for b in range(s):
                if a == b:
                    continue
                for start in range(0, len(q1), step):
                    u, w = q1[start:start + step], q2[start:start + step]
                    chunk = np.empty((len(u), 3), dtype=np.int64)
                    chunk[:, 0] = -(offset + a * q + u + 1)
                    chunk[:, 1] = -(offset + b * q + w + 1)
                    chunk[:, 2] = offset + a * q + w + 1
                    yield chunk

    def hard_clauses(self, offset: int = 0) -> list[list[int]]:
        """All hard clauses as plain lists (materialised: use :meth:`hard_chunks` for large blocks)."""
        return [row for chunk in self.hard_chunks(offset) for row in chunk.tolist()]

    def cost(self, kept: np.ndarray) -> int:
        """Number of falsified soft clauses for a 0/1 assignment ``kept`` of shape (|S|, |Q|)."""
        return int((np.asarray(kept, dtype=bool) != self.present).sum())

    def to_wcnf(self) -> Any:
        """The formula as a ``pysat.formula.WCNF`` (imports pysat, an optional dependency)."""
        from pysat.formula import WCNF

        wcnf = WCNF()
        for clause in self.hard_clauses():
            wcnf.append(clause)
        for clause in self.soft_clauses():
            wcnf.append(clause, weight=1)
        return wcnf


def block_wcnf(counts2d: np.ndarray, semantics: str) -> tuple[BlockFormula, list[tuple[int, Any]]]:
    """The complete tuple-level WCNF encoding of one block (the paper's, made complete; spec §2.3).

    Parameters
    ----------
    counts2d : array_like of non-negative int, shape (P, O)
        The block's count table ``c[p, o]``.
    semantics : {'bag', 'set'}
        ``set``: tuples are the distinct pairs (p, o) with ``c[p, o] > 0``. ``bag``: the i-th copy
        of (p, o) is the tuple (p, (o, i)).

    Returns
    -------
    formula : BlockFormula
        Variables, soft unit clauses (weight 1) and hard clauses over every ordered pair of D*
        elements with p1 ≠ p2 and q1 ≠ q2. Its optimum cost equals ``repair_block(c, semantics)``.
    variables : list of (p, q)
        The tuple of D* behind each variable (variable v is ``variables[v - 1]``); q = o under
        ``set`` and q = (o, i) under ``bag``.

    Raises
    ------
    DPAuditError
        For semantics other than 'bag' and 'set' (``ci`` repairs are fractional), or counts that
        are not a 2-D table of non-negative integers.

    Examples
    --------
    >>> formula, variables = block_wcnf(np.array([[2, 0], [1, 1]]), "bag")
    >>> variables
    [(0, (0, 1)), (0, (0, 2)), (0, (1, 1)), (1, (0, 1)), (1, (0, 2)), (1, (1, 1))]
    >>> formula.n_vars, formula.n_data, formula.n_hard
    (6, 4, 12)
    >>> formula.soft_clauses()
    [[1], [2], [-3], [4], [-5], [6]]
    >>> formula.hard_clauses()[0]
    [-1, -5, 2]
    """
    _check_semantics(semantics)
    table = np.asarray(counts2d)
    if table.ndim != 2:
        raise DPAuditError(f"a block is a 2-D (protected, outcome) count table, got shape {table.shape}")
    if table.size and (np.any(table < 0) or np.any(table != np.rint(table))):
        raise DPAuditError("a tuple-level encoding needs non-negative integer counts")
    table = np.rint(table).astype(np.int64)
    if semantics == "set":
        table = (table > 0).astype(np.int64)
    protected = np.flatnonzero(table.sum(axis=1) > 0)
    rows = table[protected]
    depth = rows.max(axis=0) if len(protected) else np.zeros(table.shape[1], dtype=np.int64)
    items = tuple((o, i) for o in range(table.shape[1]) for i in range(1, int(depth[o]) + 1))
    item_o = np.array([o for o, _ in items], dtype=np.int64)
    item_i = np.array([i for _, i in items], dtype=np.int64)
    present = rows[:, item_o] >= item_i[None, :] if items else np.zeros((len(protected), 0), dtype=bool)
    formula = BlockFormula(semantics, protected, items, np.ascontiguousarray(present, dtype=bool))
    return formula, formula.variables


def _one_line(text: str) -> str:
    """``text`` with every character that would break a comment line escaped."""
    return "".join(ch if len(f"a{ch}b".splitlines()) == 1 else ch.encode("unicode_escape").decode() for ch in text)


def _clause_lines(formula: BlockFormula, offset: int, top: int) -> Iterator[str]:
    signs = np.where(formula.present.ravel(), 1, -1)
    variables = np.arange(offset + 1, offset + formula.n_vars + 1)
    if formula.n_vars:
        yield "\n".join(f"1 {lit} 0" for lit in (signs * variables).tolist())
    fmt = f"{top} %d %d %d 0"
    for chunk in formula.hard_chunks(offset):
        yield "\n".join(fmt % (a, b, c) for a, b, c in chunk.tolist())


def wcnf_text(
    formulas: Sequence[BlockFormula],
    *,
    block_notes: Sequence[str] | None = None,
    variable_notes: Callable[[int, int, int, int], str] | None = None,
    title: str | None = None,
) -> str:
    """Standard DIMACS WCNF text of several block formulas, with disjoint variables.

    The classic format: ``p wcnf <nvars> <nclauses> <top>`` with ``top = 1 + number of soft
    clauses``; hard clauses are weighted ``top``, soft ones 1; one clause per line ending in 0.
    Comment lines (``c ...``, all before the ``p`` line) map every variable to its block,
    protected value index, outcome value index and occurrence index, and say whether the tuple is
    in the data. The optimum is the sum of the blocks' optima (spec §2.3).

    Parameters
    ----------
    formulas : sequence of BlockFormula
        From :func:`block_wcnf`; block k's variables follow those of blocks 0..k−1.
    block_notes : sequence of str, optional
        One description per block, written in its ``c block`` line.
    variable_notes : callable (block, p, o, i) -> str, optional
        Extra text for a variable's comment line (for example its labels).
    title : str, optional
        First comment line.

    Returns
    -------
    str

    Examples
    --------
    >>> formula, _ = block_wcnf(np.array([[1, 0], [0, 1]]), "set")
    >>> print(wcnf_text([formula]))  # doctest: +NORMALIZE_WHITESPACE
    c dpaudit tuple-level repair encoding (spec §2.3); soft weight 1, hard weight = top
    c block 0: semantics set, variables 1..4, |D| = 2, soft 4, hard 4
    c var 1 block 0 p 0 o 0 i 1 in_data 1
    c var 2 block 0 p 0 o 1 i 1 in_data 0
    c var 3 block 0 p 1 o 0 i 1 in_data 0
    c var 4 block 0 p 1 o 1 i 1 in_data 1
    p wcnf 4 8 5
    1 1 0
    1 -2 0
    1 -3 0
    1 4 0
    5 -1 -4 2 0
    5 -2 -3 1 0
    5 -3 -2 4 0
    5 -4 -1 3 0
    """
    if block_notes is not None and len(block_notes) != len(formulas):
        raise DPAuditError(f"block_notes has {len(block_notes)} entries for {len(formulas)} blocks")
    n_vars = sum(f.n_vars for f in formulas)
    n_soft = sum(f.n_soft for f in formulas)
    n_hard = sum(f.n_hard for f in formulas)
    top = n_soft + 1
    title = title or "dpaudit tuple-level repair encoding (spec §2.3); soft weight 1, hard weight = top"
    head = [f"c {_one_line(title)}"]
    offsets = []
    offset = 0
    for k, formula in enumerate(formulas):
        offsets.append(offset)
        note = f" {_one_line(block_notes[k])}" if block_notes is not None else ""
        span = f"variables {offset + 1}..{offset + formula.n_vars}" if formula.n_vars else "no variables"
        head.append(
            f"c block {k}:{note} semantics {formula.semantics}, {span}, |D| = {formula.n_data}, "
            f"soft {formula.n_soft}, hard {formula.n_hard}"
        )
        v = offset
        for p, in_row in zip(formula.protected.tolist(), formula.present):
            for (o, i), here in zip(formula.items, in_row.tolist()):
                v += 1
                extra = f" {_one_line(variable_notes(k, p, o, i))}" if variable_notes is not None else ""
                head.append(f"c var {v} block {k} p {p} o {o} i {i} in_data {int(here)}{extra}")
        offset += formula.n_vars
    head.append(f"p wcnf {n_vars} {n_soft + n_hard} {top}")
    parts = ["\n".join(head)]
    for formula, offset in zip(formulas, offsets):
        parts.extend(_clause_lines(formula, offset, top))
    return "\n".join(parts) + "\n"


def repair_wcnf(tables: Sequence[Any], semantics: str, *, max_clauses: int = MAX_CLAUSES) -> str:
    """One WCNF for U_R of several criteria: the paper's tuple-level encoding, complete (spec §2.3).

    Every non-empty block of every criterion gets the complete encoding of :func:`block_wcnf` on its
    own variables (empty blocks cost 0 and have none), so the optimum of the formula is Σ over criteria and blocks of U_R — the value dpaudit
    computes exactly with ``u_r(table.counts, semantics=semantics)`` (without noise). Comment lines
    name each block's criterion and admissible values, and each variable's protected and outcome
    values and occurrence index.

    Parameters
    ----------
    tables : sequence of dpaudit.counting.CountTable
        Count tables (``.counts`` of shape (blocks, P, O), ``.criterion``, ``.cell_labels``).
    semantics : {'bag', 'set'}
    max_clauses : int, default 50,000,000
        Refuse formulas with more clauses (hard plus soft): the hard clauses grow with the fourth
        power of a block's size.

    Returns
    -------
    str
        DIMACS WCNF text (see :func:`wcnf_text`).

    Raises
    ------
    DPAuditError
        For semantics other than 'bag' and 'set', or when the formula would exceed ``max_clauses``.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpaudit import Categorical, Criterion, Schema, count_tables
    >>> df = pd.DataFrame({"sex": ["F", "M", "M"], "y": [1, 0, 1]})
    >>> s = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1])})
    >>> text = repair_wcnf(count_tables(df, [Criterion.parse("sex ⊥ y")], s), "set")
    >>> [line for line in text.splitlines() if line.startswith("p ")]
    ['p wcnf 4 8 5']
    """
    _check_semantics(semantics)
    formulas: list[BlockFormula] = []
    owners: list[tuple[int, Any, int]] = []
    for t, table in enumerate(tables):
        counts = np.asarray(table.counts)
        if counts.ndim == 2:
            counts = counts[None]
        for block in range(counts.shape[0]):
            if not counts[block].any():
                continue
            formula, _ = block_wcnf(counts[block], semantics)
            formulas.append(formula)
            owners.append((t, table, block))
    n_soft = sum(f.n_soft for f in formulas)
    n_hard = sum(f.n_hard for f in formulas)
    if n_soft + n_hard > max_clauses:
        worst = max(range(len(formulas)), key=lambda k: formulas[k].n_hard)
        t, table, block = owners[worst]
        raise DPAuditError(
            f"the tuple-level WCNF ({semantics}) would have {n_soft + n_hard:,} clauses ({n_hard:,} hard, "
            f"{n_soft:,} soft), above max_clauses={max_clauses:,}; the largest block ({table.criterion}, "
            f"block {block}) alone has {formulas[worst].n_hard:,} hard clauses. Export fewer criteria, "
            "fewer rows (a sample) or coarser domains, or raise max_clauses"
        )

    def labels(k: int, p: int, o: int, i: int) -> str:
        _, table, block = owners[k]
        cell = table.cell_labels(block, p, o)
        return json.dumps({"protected": cell["protected"], "outcome": cell["outcome"]},
                          ensure_ascii=False, default=str)

    notes = []
    for t, table, block in owners:
        admissible = table.cell_labels(block, 0, 0)["admissible"]
        notes.append(f"criterion {t} ({table.criterion}) block {block} "
                     f"{json.dumps(admissible, ensure_ascii=False, default=str)}")
    title = (f"dpaudit U_R ({semantics}) tuple-level encoding, spec §2.3: {len(tables)} criteria, "
             f"{len(formulas)} non-empty blocks; optimum = U_R summed over criteria; soft weight 1, "
             "hard weight = top")
    return wcnf_text(formulas, block_notes=notes, variable_notes=labels, title=title)
