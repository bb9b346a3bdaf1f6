"""U_TC: top-k tuple contribution — which cells drive the unfairness (paper Alg. 3; spec §2.2).

Marginal difference of a cell (a, p, o) of a criterion with count table ``c`` (block a has n_a rows):

    MD(a,p,o) = Pr(a) · | Pr(p,o|a) − Pr(p|a)·Pr(o|a) | = | c[a,p,o] − r[a,p]·s[a,o]/n_a | / n

(without admissible attributes there is one block and MD(p,o) = |Pr(p,o) − Pr(p)Pr(o)|). U_TC of a
criterion is the sum of the k largest MD values over its cells; the measure sums over criteria.

Cells ranked:

- ``cells="domain"`` (default): every cell of the declared domain, empty ones included. The value
  moves smoothly when a cell empties, and the cell set is public, so the top cells can be named
  privately (:func:`private_top_cells`).
- ``cells="observed"``: only cells with count > 0, as the paper's reference code. It jumps when a cell
  empties (the flip test drops from t to 0.5 at t = 1) and needs a larger sensitivity.

Replace-one sensitivity per criterion, times n (derivation in docs/privacy.md, "U_TC"):
``min(3k, 6)`` without A, ``min(3k, 8)`` with A; observed mode adds ``2·max(1/4, 1/n)`` (not /n),
which is the spec's +0.5 for n ≥ 4. The paper states 3k and 7k: valid, but for k ≥ 3 far larger.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._defaults import (
    CELL_MODES,
    DEFAULT_CELLS,
    DEFAULT_K,
    DEFAULT_NAME_CELLS,
    DEFAULT_PRIVATE_NAME_CELLS,
    MEASURE_TITLES,
    CellMode,
)
from dpaudit._errors import DPAuditError
from dpaudit._validation import one_of, whole_number
from dpaudit.details.contribution import CellMDMap, NamedCell, PrivateTopCellsDetails, TopCell, TopCellsDetails
from dpaudit.measures._base import Measure, ReportSection
from dpaudit.measures._naming import MD_LINF_SENSITIVITY, NAMING_SHARE, name_privately
from dpaudit.measures._neighbours import NeighbourPair, WorstCase, family_r, moved
from dpaudit.measures._tables import as_blocks, signed_deviation

__all__ = [
    "TopContribution",
    "marginal_differences",
    "top_k_sum",
    "u_tc",
    "tc_sensitivity",
    "top_cells",
    "top_cells_of_tables",
    "private_top_cells",
    "cell_md_maps",
    "CELL_MODES",
    "MAX_MAP_CELLS",
    "MD_LINF_SENSITIVITY",
    "K_ALL",
]

# CELL_MODES, CellMode and the defaults DEFAULT_K, DEFAULT_CELLS, DEFAULT_NAME_CELLS: dpaudit._defaults (read by
# `dpaudit fairness --help` without importing this module).
#: A k larger than any table of the worst-case pairs: U_TC then sums every cell's MD.
K_ALL = 10**6


def marginal_differences(counts: np.ndarray, *, cells: CellMode = DEFAULT_CELLS) -> np.ndarray:
    """MD of every cell, shape (B, P, O); in ``observed`` mode, cells with count 0 get 0.

    Examples
    --------
    >>> marginal_differences(np.array([[3, 1], [1, 3]])).tolist()
    [[[0.125, 0.125], [0.125, 0.125]]]
    """
    return _md_and_deviation(as_blocks(counts), cells)[0]


def _md_and_deviation(table: np.ndarray, cells: CellMode) -> tuple[np.ndarray, np.ndarray]:
    """MD of every cell of a (B, P, O) float table and the signed deviation ``c − r·s/n_a`` it is
    built from."""
    _check_cells(cells)
    n = table.sum()
    signed = signed_deviation(table)[1]
    md = np.abs(signed) / (n if n > 0 else 1.0)
    if cells == "observed":
        md = np.where(table > 0, md, 0.0)
    return md, signed


def top_k_sum(values: np.ndarray, k: int) -> float:
    """Sum of the k largest entries (all of them when k ≥ size), by partition, not a full sort.

    Examples
    --------
    >>> top_k_sum(np.array([0.1, 0.4, 0.3, 0.2]), 2)
    0.7
    """
    flat = np.ravel(values)
    if k >= flat.size:
        return float(flat.sum())
    return float(np.partition(flat, flat.size - k)[flat.size - k :].sum())


def u_tc(counts: np.ndarray, *, k: int = DEFAULT_K, cells: CellMode = DEFAULT_CELLS) -> float:
    """U_TC of one criterion: the sum of the k largest marginal differences.

    Examples
    --------
    Flip test of spec §5 at t = 0.5 (100 rows per group): domain-mode U_TC = t.

    >>> u_tc(np.array([[75, 25], [25, 75]]), k=4)
    0.5
    """
    _check_k(k)
    return top_k_sum(marginal_differences(counts, cells=cells), k)


def tc_sensitivity(*, n: int, k: int, conditional: bool, cells: CellMode) -> float:
    """Replace-one sensitivity of one criterion's U_TC (docs/privacy.md, "U_TC").

    ``min(3k, 6)/n`` without admissible attributes, ``min(3k, 8)/n`` with them; observed mode adds
    ``2·max(1/4, 1/n)``.

    Examples
    --------
    >>> tc_sensitivity(n=1000, k=500, conditional=False, cells="domain")
    0.006
    >>> tc_sensitivity(n=1000, k=1, conditional=True, cells="observed")
    0.503
    """
    _check_k(k)
    _check_cells(cells)
    value = min(3.0 * k, 8.0 if conditional else 6.0) / n
    if cells == "observed":
        value += 2.0 * max(0.25, 1.0 / n)
    return value


def top_cells(counts: np.ndarray, m: int, *, cells: CellMode = DEFAULT_CELLS) -> list[dict[str, Any]]:
    """The m cells with the largest MD, largest first (ties by cell order), with their evidence.

    Each entry: ``index`` (block, p, o), ``md``, ``count``, ``expected`` (r·s/n_a) and ``sign``
    (``"over"`` when the cell holds more rows than independence predicts, ``"under"`` when fewer).
    """
    table = as_blocks(counts)
    md, signed = _md_and_deviation(table, cells)
    flat = md.ravel()
    m = min(m, flat.size)
    if m <= 0:
        return []
    part = np.argpartition(-flat, m - 1)[:m] if m < flat.size else np.arange(flat.size)
    order = part[np.lexsort((part, -flat[part]))]
    deviation = signed.ravel()
    out = []
    for i in order:
        if flat[i] <= 0:  # independent cells (and unobserved ones in observed mode) drive nothing
            continue
        a, p, o = np.unravel_index(i, table.shape)
        out.append(
            {
                "index": (int(a), int(p), int(o)),
                "md": float(flat[i]),
                "count": int(table.ravel()[i]),
                "expected": float(table.ravel()[i] - deviation[i]),
                "sign": "over" if deviation[i] > 0 else "under" if deviation[i] < 0 else "none",
            }
        )
    return out


def _check_k(k: Any) -> int:
    return whole_number("k", k, minimum=1)


def _check_cells(cells: Any) -> str:
    return str(one_of("cells", cells, CELL_MODES))




def _labels(table: Any, index: tuple[int, int, int]) -> dict[str, Any]:
    return {"criterion": str(table.criterion), **table.cell_labels(*index)}


def top_cells_of_tables(tables: Sequence[Any], m: int, *, cells: CellMode = DEFAULT_CELLS) -> tuple[TopCell, ...]:
    """The m cells with the largest MD over all criteria (exact, curator-only), with labels.

    Each names the criterion and the values of its protected, outcome and admissible columns, and
    gives ``md``, ``count``, ``expected`` and ``sign`` (see :func:`top_cells`).
    """
    if m <= 0:
        return ()
    merged = [(t, cell) for t in tables for cell in top_cells(t.counts, m, cells=cells)]
    merged.sort(key=lambda tc: -tc[1]["md"])  # stable: ties keep criterion order
    return tuple(TopCell(**_labels(t, cell["index"]), **{k: v for k, v in cell.items() if k != "index"})
                 for t, cell in merged[:m])  # labels only for the cells kept


#: The largest criterion (blocks × protected × outcome cells) whose MD map the exact result keeps;
#: a larger one is summarised by its top cells only (its map would weigh megabytes and show nothing).
MAX_MAP_CELLS = 20_000


def cell_md_maps(tables: Sequence[Any], *, cells: CellMode = DEFAULT_CELLS) -> tuple[CellMDMap, ...]:
    """MD(a, p, o) of every cell of every criterion, labelled (exact, curator-only): what the HTML
    report's heat maps draw. A criterion with more than :data:`MAX_MAP_CELLS` cells gets its labels'
    sizes only (``md`` None)."""
    maps = []
    for t in tables:
        size = int(t.counts.size)
        blocks, n_p, n_o = as_blocks(t.counts).shape
        if size > MAX_MAP_CELLS:
            maps.append(CellMDMap(str(t.criterion), (), (), (), None, size))
            continue
        md, signed = _md_and_deviation(as_blocks(t.counts), cells)
        sign = np.where(md > 0, np.sign(signed), 0.0).astype(int)
        maps.append(CellMDMap(
            str(t.criterion),
            tuple(t.cell_labels(b, 0, 0)["admissible"] for b in range(blocks)),
            tuple(t.cell_labels(0, p, 0)["protected"] for p in range(n_p)),
            tuple(t.cell_labels(0, 0, o)["outcome"] for o in range(n_o)),
            tuple(tuple(tuple(float(v) for v in row) for row in block) for block in md),
            size,
            tuple(tuple(tuple(int(v) for v in row) for row in block) for block in sign),
        ))
    return tuple(maps)


def private_top_cells(tables: Sequence[Any], m: int, *, epsilon: float, seed: int | None = None) -> PrivateTopCellsDetails:
    """Name the m cells with the largest MD over all criteria privately (domain cells only), each with
    its noisy MD and reliability (:func:`dpaudit.measures._naming.name_privately`, on the naming ε
    ``epsilon``: the MD vector of every declared cell of every criterion). ``seed``: the seeded test
    path, not private."""
    scores = np.concatenate([marginal_differences(t.counts).ravel() for t in tables])
    owners = np.concatenate([np.full(t.counts.size, i) for i, t in enumerate(tables)])
    starts = np.cumsum([0] + [t.counts.size for t in tables])
    out = name_privately(scores, m, n=tables[0].n, epsilon=epsilon, seed=seed)
    named = []
    for rank, (i, noisy, sure) in enumerate(zip(out.chosen, out.noisy_md, out.reliability), 1):
        t = tables[int(owners[i])]
        index = tuple(int(v) for v in np.unravel_index(i - starts[int(owners[i])], t.counts.shape))
        named.append(NamedCell(**_labels(t, index), rank=rank, noisy_md=noisy, reliability=sure))  # type: ignore[arg-type]
    return PrivateTopCellsDetails(tuple(named), out.selection, out.rated)


@dataclass(frozen=True)
class TopContribution(Measure):
    """U_TC as a registered measure, with its options.

    Parameters
    ----------
    k : int, default 500
        How many of the largest cell contributions are summed per criterion.
    cells : {"domain", "observed"}, default "domain"
        Rank every declared cell, or only cells with rows (the paper's reference code).
    name_cells : int, optional
        How many top cells to name. Exact mode lists them with counts (default 10) and keeps the MD
        map of every criterion; 0 asks for the value alone (no cells, no maps). DP mode names
        them with report-noisy-top-k, each with its reliability, on 3/4 of U_TC's ε (default 5 in
        domain mode; 0 turns it off; observed mode cannot name cells privately).

    Examples
    --------
    >>> TopContribution(k=4).value(np.array([[75, 25], [25, 75]]))
    0.5
    >>> TopContribution(k=0)
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: k must be an integer >= 1, got 0
    """

    k: int = DEFAULT_K
    cells: CellMode = DEFAULT_CELLS
    name_cells: int | None = None

    name = "tc"
    title = MEASURE_TITLES["tc"]
    reference = "Vologdin, Tao, Gilad, PVLDB 19(9), Alg. 3; spec §2.2"
    sensitivity_formula = "Σ_F min(3k, 6 [8 with A])/n (+2·max(¼, 1/n) each if observed)"
    upper = 2.0
    zero_iff_independent = True
    meaning = ("U_TC adds up the k largest cell contributions MD(a,p,o) = Pr(a)·|Pr(p,o|a) − Pr(p|a)·Pr(o|a)|, "
               "the share of all rows by which a cell departs from what independence predicts: it says how much of "
               "the data the most unfair cells account for (0 exactly when the criterion holds, at most 2 per "
               "criterion), and the cells it names are where to look.")
    unit = "U_TC (share of all n rows; per criterion in [0, 2])"
    details_types = (PrivateTopCellsDetails, TopCellsDetails)
    report_section = ReportSection(
        "Top contributing cells", "cells",
        absent="<p>U_TC was not requested, so no cells are named; add --measure tc.</p>",
        undisclosed="<p>No top cells were named (--name-cells 0, or observed-cell mode, which cannot name cells "
                    "privately).</p>")

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", _check_k(self.k))
        object.__setattr__(self, "cells", _check_cells(self.cells))
        if self.name_cells is not None:
            object.__setattr__(self, "name_cells", whole_number("name_cells", self.name_cells, minimum=0))

    def value(self, counts: np.ndarray) -> float:
        return u_tc(counts, k=self.k, cells=self.cells)

    def criterion_sensitivity(self, conditional: bool, n: int) -> float:
        return tc_sensitivity(n=n, k=self.k, conditional=conditional, cells=self.cells)

    def details(self, tables: Sequence[Any]) -> TopCellsDetails:
        """The top cells and the MD maps; ``name_cells=0`` asks for the value alone: neither is built
        (``top_cells`` and ``cell_md`` empty)."""
        m = DEFAULT_NAME_CELLS if self.name_cells is None else self.name_cells
        if m == 0:
            return TopCellsDetails((), ())
        return TopCellsDetails(top_cells_of_tables(tables, m, cells=self.cells), cell_md_maps(tables, cells=self.cells))

    @property
    def private_names(self) -> int:
        """How many top cells a DP release names: :data:`DEFAULT_PRIVATE_NAME_CELLS` (5) by default in
        domain mode, never in observed mode."""
        if self.name_cells is None:
            return DEFAULT_PRIVATE_NAME_CELLS if self.cells == "domain" else 0
        if self.name_cells and self.cells != "domain":
            raise DPAuditError(
                "naming top cells privately needs cells='domain': in observed mode the candidate cells "
                "depend on the data; pass name_cells=0 or cells='domain'"
            )
        return self.name_cells

    @property
    def explain_share(self) -> float:
        """:data:`~dpaudit.measures._naming.NAMING_SHARE` (3/4) of U_TC's ε when it names cells privately."""
        return NAMING_SHARE if self.private_names else 0.0

    def private_details(self, tables: Sequence[Any], epsilon: float, seed: int | None) -> PrivateTopCellsDetails:
        return private_top_cells(tables, self.private_names, epsilon=epsilon, seed=seed)

    @classmethod
    def worst_cases(cls) -> tuple[WorstCase, ...]:
        return (
            WorstCase(tc_domain_pair(), cls(k=K_ALL, cells="domain", name_cells=0),
                      lambda change, n: f"n·|ΔU_TC| = {change * n:.3f} of min(3k, 8) = 8 ({change * n / 8:.1%}): "
                                        "the bound is tight"),
            WorstCase(tc_observed_pair(), cls(k=K_ALL, cells="observed", name_cells=0),
                      lambda change, n: "the emptied and the appearing cell move U_TC in opposite directions, so at "
                                        "most one of the two 2·max(1/4, 1/n) terms is reachable: ≈ 50 % is the "
                                        "practical maximum"),
            WorstCase(naming_pair(), cls(), release="names",
                      note=lambda change, n: f"largest move of one cell's MD: {change * n:.3f}/n of the declared 3/n, "
                                             "so report-noisy-max realises at most 2·(1/n)/scale = ε/3 here"),
        )


def tc_domain_pair(m: int = 100, big: int = 1000) -> NeighbourPair:
    """Σ|d| rises by → 4 in each block: Family R loses its lone tuple, a one-cell block gains a corner."""
    a = family_r(4 * m, m)
    b = np.zeros_like(a)
    b[1, 1] = big
    before = np.stack([a, b])
    return NeighbourPair("tc/domain", "p ⊥ o | a", before, moved(before, (0, 0, 0), (1, 0, 0)),
                         f"block a = Family R (m = {m}), block b = one cell of {big}; the lone (0,0) tuple of a moves to "
                         "b's empty corner (each block's Σ|d| rises by almost 4)")


def tc_observed_pair(h: int = 1000) -> NeighbourPair:
    """A count-1 cell with MD → 1/4 empties; the cell that gains is already observed."""
    before = np.array([[[1, h], [h, 1]]])
    return NeighbourPair("tc/observed", "p ⊥ o", before, moved(before, (0, 0, 0), (0, 1, 1)),
                         f"[[1, {h}], [{h}, 1]] → [[0, {h}], [{h}, 2]]: a single-tuple cell with MD ≈ 1/4 empties")


def naming_pair(a: int = 320, b: int = 12, c: int = 640) -> NeighbourPair:
    """A cell of a one-cell block gains a fresh corner tuple from a perfectly dependent block."""
    before = np.zeros((2, 2, 2), dtype=np.int64)
    before[0, 0, 1], before[1, 0, 1], before[1, 1, 0] = a, b, c
    return NeighbourPair("tc/names", "p ⊥ o | a", before, moved(before, (1, 0, 1), (0, 1, 0)),
                         f"block 0 = one cell of {a}, block 1 = [[0, {b}], [{c}, 0]]; one tuple of block 1 moves to a "
                         "fresh corner of block 0 (found by search over the exact selection probabilities)")
