"""U_R: repair distance — how many tuples must change for P ⊥ O | A to hold (spec §2.3).

The repair constraint decomposes by block A = a, so U_R of a criterion is a sum over blocks, and
each block is solved from its count table ``c[p, o]`` alone (never from rows). Three semantics:

``ci`` (default)
    The minimum total number of tuples to delete or insert, fractional tuples allowed, so that the
    block becomes exactly independent: the L1 distance of ``c`` to the nearest non-negative rank-1
    table ``u vᵀ``. Zero iff the criterion holds. Closed form when a side of the block has at most two
    values with data (below); otherwise a global branch and bound over v
    (:mod:`dpaudit.measures._ci_exact`) that proves the minimum to within 0.001 tuples, warm-started
    from alternating weighted-median descent (upper bound) and the best pairing of rows or columns into
    exact two-row problems (lower bound). The problem is NP-hard in general (Gillis & Vavasis 2018,
    rank-one ℓ1 approximation), so a work budget per block applies (``work_limit``, counted in
    nodes, :mod:`dpaudit.measures._limits`: the same on every machine); a block it stops has status
    ``"work limit"`` and both certified bounds.

``bag`` (the unfairness paper's)
    The i-th copy of a tuple gets occurrence index i on the outcome side; a block is repaired when
    its set of pairs (p, (o, i)) is a product S' × Q'. Equivalently every kept protected value has
    the same outcome count vector t, and the others are deleted:

        U_R^bag(block) = min_{t ∈ ℕ^O} Σ_p min(‖c_p − t‖₁, ‖c_p‖₁).

    For a fixed kept set S' the best t_o is a median of {c_po : p ∈ S'}, so t ranges over the grid
    Π_o ({c_po} ∪ {0}) and the minimum over the grid is exact.

``set`` (Capuchin's MVD repair on distinct tuples, Salimi et al. SIGMOD 2019)
    The same with c replaced by its support b = [c > 0] and t ∈ {0, 1}^O: each block's set of
    distinct (p, o) pairs must become a product P' × O'.

Both ``bag`` and ``set`` are solved exactly by enumerating whichever is smaller — the t grid or the
subsets S' (medians by sorted prefix sums, vectorised) — up to ``2**22`` candidates, from ``2**16`` on
after RC2 has had one work unit to prove the optimum. Larger blocks go to OR-Tools CP-SAT (one integer
per outcome, one cost per protected value; incumbents) and RC2 (PySAT, core-guided MaxSAT on the
compressed boolean formulation: one boolean per protected value, one per distinct column class; the
proof), one after the other within the work budget (:mod:`dpaudit.measures._center_rc2`): exact when
either proves the optimum or RC2's bound meets CP-SAT's incumbent (``method`` says which closed the
gap), else proven lower and upper bounds with status ``"work limit"``.

The ci closed form for two rows n₁, n₂ (spec §2.3): with ρ = u₂/u₁ the cost is
``min(1, 1/ρ)·Σ_j |n₂ⱼ − ρ·n₁ⱼ|``. For ρ ≤ 1 it is Σ_j n₁ⱼ|n₂ⱼ/n₁ⱼ − ρ| (+ Σ_{n₁ⱼ=0} n₂ⱼ), a weighted
L1 distance minimised at the weighted median of the ratios clipped to [0, 1]; for ρ ≥ 1 the same
with σ = 1/ρ and the rows swapped. ρ = 0 or σ = 0 drops a row (cost: its total).

Replace-one sensitivity (docs/privacy.md, "U_R"): 2 per criterion for ``bag`` and ``set``, and
2 + 2·0.001 for ``ci`` (the released value is within the branch and bound's tolerance of the
minimum, a 1-Lipschitz distance). Proven when every block is exact; a block left by the work budget
makes the released bound depend on the search, and the audit says so. Whether a block is exact
depends only on the data, the options and the versions — never on the machine's load — unless a
wall-clock ``time_limit`` is given explicitly (then the audit records it and says so).
"""

from __future__ import annotations

import functools
import math
import time  # the progress line's seconds only: no result depends on the clock
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._defaults import DEFAULT_SEMANTICS, MEASURE_TITLES, Semantics
from dpaudit._format import plural
from dpaudit._validation import number, one_of
from dpaudit.details.repair import SEMANTICS, BlockRepairDetail, CellChange, RepairDetails
from dpaudit.measures._base import Assessment, Measure, ReportSection
from dpaudit.measures._block import BlockRepair
from dpaudit.measures._ci import TOLERANCE, ci_block, two_row_ci
from dpaudit.measures._limits import DEFAULT_WORK_LIMIT, Limits
from dpaudit.measures._neighbours import NeighbourPair, WorstCase, moved

__all__ = ["Repair", "SEMANTICS", "BlockRepair", "repair_block", "repair_blocks", "u_r", "two_row_ci",
           "repair_pair"]  # ENUMERATION_LIMIT: read from _center on first use (__getattr__ below)

# Semantics and the defaults DEFAULT_SEMANTICS, DEFAULT_WORK_LIMIT of every U_R entry point (the functions
# below and :class:`Repair`): dpaudit._defaults (read by `dpaudit fairness --help` without importing this module).


def _check_semantics(semantics: Any) -> str:
    return str(one_of("semantics", semantics, SEMANTICS))


def _limits(work_limit: Any, time_limit: Any) -> Limits:
    """The checked budget of one block: work units (required) and an optional wall clock in seconds."""
    work = number("work_limit", work_limit, low=0.0, low_open=True)
    seconds = None if time_limit is None else number("time_limit", time_limit, low=0.0, low_open=True)
    return Limits(work, seconds)


# ---------------------------------------------------------------------------------------------------
def repair_block(counts: np.ndarray, semantics: Semantics = DEFAULT_SEMANTICS, *,
                 work_limit: float = DEFAULT_WORK_LIMIT, time_limit: float | None = None) -> BlockRepair:
    """Repair one block's (P × O) count table under ``semantics``, within ``work_limit`` work units
    (deterministic; :mod:`dpaudit.measures._limits`) and, if given, ``time_limit`` seconds.

    Examples
    --------
    Flip test (spec §5) with N = 100 rows per group at t = 0.5: ci = 2Nt/(1+t), bag = N·min(2t, 1),
    set = 0 below t = 1.

    >>> table = np.array([[75, 25], [25, 75]])
    >>> [round(repair_block(table, s).lower, 6) for s in ("ci", "bag", "set")]
    [66.666667, 100.0, 0.0]
    """
    _check_semantics(semantics)
    limits = _limits(work_limit, time_limit)  # None is no "no limit" for work_limit: refused, as by Repair
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"a block is a 2-D (P, O) table, got shape {table.shape}")
    if semantics == "ci":
        return ci_block(table, limits=limits)
    from dpaudit.measures._center import center_block  # bag/set only: U_R (ci) loads no center solver

    return center_block(table, binary=semantics == "set", limits=limits)


def repair_blocks(counts: np.ndarray, semantics: Semantics = DEFAULT_SEMANTICS, *,
                  work_limit: float = DEFAULT_WORK_LIMIT, time_limit: float | None = None) -> list[BlockRepair]:
    """Repair every block of a ``(blocks, P, O)`` table; empty blocks cost 0. The limits are per block."""
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim == 2:
        table = table[None]
    return [repair_block(block, semantics, work_limit=work_limit, time_limit=time_limit) for block in table]


def u_r(counts: np.ndarray, *, semantics: Semantics = DEFAULT_SEMANTICS, work_limit: float = DEFAULT_WORK_LIMIT,
        time_limit: float | None = None) -> float:
    """U_R of one criterion: the sum over blocks of :attr:`BlockRepair.value` (the minimum where it is
    known, else the certified lower bound).

    Examples
    --------
    >>> u_r(np.array([[10, 0], [0, 10]]), semantics="ci")
    10.0
    """
    return math.fsum(b.value for b in repair_blocks(counts, semantics, work_limit=work_limit, time_limit=time_limit))


def describe_block(table: Any, block_index: int, result: BlockRepair, *, top: int = 10) -> BlockRepairDetail:
    """One block's repair, labelled: bounds, method, and what it changes (the ``top`` largest cell changes)."""
    counts = table.counts[block_index]
    changes = kept = deleted = target = None
    if result.repaired is not None:
        change = result.repaired - counts
        flat = np.argsort(-np.abs(change), axis=None, kind="stable")[:top]
        changes = tuple(
            CellChange(**{k: v for k, v in table.cell_labels(block_index, int(p), int(o)).items() if k != "admissible"},
                       count=int(counts[p, o]), repaired=float(result.repaired[p, o]), change=float(change[p, o]))
            for p, o in zip(*np.unravel_index(flat, change.shape))
            if abs(change[p, o]) > 1e-9
        )
    if result.kept is not None and result.target is not None:
        kept = tuple(table.cell_labels(block_index, int(p), 0)["protected"] for p in np.flatnonzero(result.kept))
        deleted = tuple(table.cell_labels(block_index, int(p), 0)["protected"]
                        for p in np.flatnonzero(~result.kept & (counts.sum(axis=1) > 0)))
        target = tuple({**table.cell_labels(block_index, 0, int(o))["outcome"], "count": float(result.target[o])}
                       for o in range(len(result.target)))
    return BlockRepairDetail(str(table.criterion), table.cell_labels(block_index, 0, 0)["admissible"], result.value,
                             result.lower, result.upper, result.exact, result.method, changes, kept, deleted, target,
                             status=result.status)


@dataclass(frozen=True)
class Repair(Measure):
    """U_R as a registered measure, with its options.

    Parameters
    ----------
    semantics : {"ci", "bag", "set"}, default "ci"
        What "repaired" means (module docstring).
    work_limit : float, default 30
        Work units per block for the solvers (about seconds on the reference machine, but counted in
        the solvers' own work — branch and bound nodes, RC2 propagations, CP-SAT deterministic time —
        so the same on every machine; :mod:`dpaudit.measures._limits`); a block they leave with a gap
        has status ``"work limit"``.
    time_limit : float or None, default None
        An additional wall-clock limit in seconds per block. Off by default: a block it stops (status
        ``"timed out"``) has bounds that depend on the machine and its load.

    Examples
    --------
    >>> Repair(semantics="bag").value(np.array([[75, 25], [25, 75]]))
    100.0
    >>> Repair(semantics="foo")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: semantics must be one of ci, bag, set, got 'foo'
    """

    semantics: Semantics = DEFAULT_SEMANTICS
    work_limit: float = DEFAULT_WORK_LIMIT
    time_limit: float | None = None

    name = "repair"
    title = MEASURE_TITLES["repair"]
    reference = "Vologdin, Tao, Gilad, PVLDB 19(9), Alg. 2; spec §2.3"
    sensitivity_formula = "2·|F| (ci: (2 + 2·0.001)·|F|)"
    upper = math.inf
    zero_iff_independent = False
    meaning = ("U_R is the smallest number of rows to delete plus insert so that the criterion holds; it is a "
               "count of rows, between 0 and n (semantics ci: exact independence with fractional rows allowed; "
               "bag: every kept protected group gets identical outcome counts, the paper's; set: the distinct "
               "(p, o) pairs of each block form a product, Capuchin's).")
    unit = "U_R (rows deleted + inserted)"
    details_types = (RepairDetails,)
    report_section = ReportSection(
        "Repair", "repair",
        absent="<p>U_R was not requested; add --measure repair to see what a repair would change.</p>",
        undisclosed="<p>What the repair changes per block is not released in DP mode: it is made of exact counts. "
                    "Only U_R's noisy total is released (above: {value} rows). The curator sees the per-block "
                    "repair with --exact.</p>")

    @classmethod
    def maximum(cls, n: int) -> float:
        """n rows per criterion, under every semantics: keeping each block's largest protected group and
        deleting the block's other rows is a repair (one group: P ⊥ O | A holds, bag's kept groups agree,
        set's pairs form a product) costing n_a − max_p n_ap ≤ n_a; summed over the blocks, at most n."""
        return float(n)

    @classmethod
    def zero_means(cls, options: Mapping[str, Any]) -> str:
        """ci: the criterion holds exactly; bag and set: their own repair constraint holds (spec §2.3)."""
        return {"ci": "the criterion holds exactly",
                "bag": "every kept protected group already has the same outcome counts in each block",
                "set": "each block's distinct (p, o) pairs already form a product"}.get(
            str(options.get("semantics", DEFAULT_SEMANTICS)), "")

    def __post_init__(self) -> None:
        object.__setattr__(self, "semantics", _check_semantics(self.semantics))
        limits = _limits(self.work_limit, self.time_limit)
        object.__setattr__(self, "work_limit", limits.work)
        object.__setattr__(self, "time_limit", limits.seconds)

    def value(self, counts: np.ndarray) -> float:
        return u_r(counts, semantics=self.semantics, work_limit=self.work_limit, time_limit=self.time_limit)

    def criterion_sensitivity(self, conditional: bool, n: int) -> float:
        return 2.0 + 2.0 * TOLERANCE if self.semantics == "ci" else 2.0

    def assess(self, tables: Sequence[Any], *, details: bool,
               progress: Callable[[str], None] | None = None) -> Assessment:
        """Per-criterion values, details and caveats; ``progress`` (optional) is called after every
        block with ``"U_R (bag) P ⊥ O | A: block i/N exact, 12.3 s"`` (status, seconds so far)."""
        per, blocks, caveats = [], [], []
        total = sum(len(t.counts) for t in tables)
        done, start = 0, time.perf_counter()
        for t in tables:
            results = []
            for block in t.counts:
                results.append(repair_block(block, self.semantics, work_limit=self.work_limit,
                                            time_limit=self.time_limit))
                done += 1
                if progress is not None:
                    progress(f"{self.title} ({self.semantics}) {t.criterion}: block {done:,}/{total:,} "
                             f"{results[-1].status}, {time.perf_counter() - start:.1f} s")
            per.append(math.fsum(r.value for r in results))
            inexact = [i for i, r in enumerate(results) if not r.exact]
            if inexact:
                timed = sum(results[i].status == "timed out" for i in inexact)
                why = (f"the work limit of {self.work_limit:g} units per block, or a ci search making no progress"
                       + (f"; {timed} by the {self.time_limit:g} s wall-clock time_limit, so those bounds depend "
                          "on the machine and its load" if timed else ""))
                caveats.append(
                    f"U_R ({self.semantics}) of '{t.criterion}': {plural(len(inexact), 'block')} stopped before the solver "
                    f"proved the minimum ({why}), so the value is a lower bound whose sensitivity is not proven; "
                    "raise work_limit"
                )
            if details:
                blocks += [describe_block(t, i, r) for i, r in enumerate(results) if t.counts[i].sum() > 0]
        detail = None
        if details:
            detail = RepairDetails(self.semantics, all(b.exact for b in blocks), math.fsum(b.upper for b in blocks),
                                   tuple(blocks))
        return Assessment(per, detail, tuple(caveats))

    @property
    def degree(self) -> int:
        return 0 if self.semantics == "set" else 1

    @property
    def zero_if_independent(self) -> bool:
        return self.semantics != "bag"

    @classmethod
    def worst_cases(cls) -> tuple[WorstCase, ...]:
        return tuple(WorstCase(repair_pair(key), cls(semantics=semantics), note)
                     for key, (semantics, *_, note) in _REPAIR_PAIRS.items())


def _full_two(change: float, n: int) -> str:
    return f"|ΔU_R| = {change:g} = the bound 2"


@functools.lru_cache(maxsize=1)
def _branch_and_bound_blocks() -> tuple[BlockRepair, BlockRepair]:
    pair = repair_pair("ci 3×3")
    d, d_prime = (ci_block(t[0].astype(np.float64), limits=Limits()) for t in (pair.before, pair.after))
    return d, d_prime


def _branch_and_bound_note(change: float, n: int) -> str:
    """How the 3 × 3 pair's blocks were solved, computed (the pair's whole point is that the released
    ci value comes from the branch and bound, not a closed form)."""
    d, d_prime = _branch_and_bound_blocks()
    return (f"|ΔU_R| = {change:.5f} of 2 + 2·{TOLERANCE:g} ({change / (2 + 2 * TOLERANCE):.2%}); "
            f"D: {d.method}, {d.status}, ci ∈ [{d.lower:.4f}, {d.upper:.4f}]; "
            f"D′: {d_prime.method}, {d_prime.status}, ci ∈ [{d_prime.lower:.4f}, {d_prime.upper:.4f}]")


#: U_R's worst-case pairs: key → (semantics, one block, the moved tuple's cell before and after, what
#: the pair is, the report's note). The 2 × 2 / 2 × 3 pairs are the smallest on which U_R changes by the
#: full 2 (exhaustive search over 2 × 2 and 2 × 3 tables); they take ci's closed form. "ci 3×3" sends
#: both ci values through the branch and bound (:mod:`dpaudit.measures._ci_exact`). Search: every
#: replace-one move of 1,057 random 3 × 3 tables (counts 0–6, 0–8) and 444 3 × 4 tables (0–5), screened
#: by the descent upper bound (|Δ| ≥ 1.95), up to 400 candidates per run solved exactly: hundreds move the
#: exact ci by the full 2 (the most any replacement can, docs/privacy.md) with both sides solved by the
#: branch and bound; this one releases the largest change, 11.5 → 13.50045 (one block: ≤ 2 + τ).
_REPAIR_PAIRS: dict[str, tuple[Semantics, list[list[int]], tuple[int, int, int], tuple[int, int, int], str,
                               Callable[[float, int], str]]] = {
    "ci": ("ci", [[0, 2], [2, 2]], (0, 0, 1), (0, 0, 0), "U_R ci changes by the full 2", _full_two),
    "ci 3×3": ("ci", [[8, 3, 3], [4, 5, 2], [4, 3, 8]], (0, 0, 1), (0, 1, 1),
               "3 × 3, n = 40 (search): both ci values come from the branch and bound; the exact ci moves by 2",
               _branch_and_bound_note),
    "bag": ("bag", [[0, 2], [0, 2]], (0, 0, 1), (0, 0, 0), "U_R bag changes by the full 2", _full_two),
    "set": ("set", [[0, 1, 1], [0, 1, 1]], (0, 0, 1), (0, 0, 0), "U_R set changes by the full 2", _full_two),
}


def repair_pair(key: str) -> NeighbourPair:
    """U_R's worst-case pair ``key`` (a semantics, or ``"ci 3×3"``): its change is the full 2."""
    _, table, src, dst, what, _ = _REPAIR_PAIRS[key]
    before = np.array([table])
    after = moved(before, src, dst)
    return NeighbourPair(f"repair/{key}", "p ⊥ o", before, after,
                         f"{before[0].tolist()} → {after[0].tolist()} ({what})")


def __getattr__(name: str) -> Any:
    """``ENUMERATION_LIMIT``, the bag/set center solver's (:mod:`dpaudit.measures._center`), read from it on
    first use, so that importing this module (every audit) does not import that solver."""
    if name == "ENUMERATION_LIMIT":
        from dpaudit.measures import _center

        return _center.ENUMERATION_LIMIT
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
