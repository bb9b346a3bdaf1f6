"""The paper's tuple-level MaxSAT encoding of U_R, made complete, as an oracle for repair.py (spec §2.3).

dpaudit solves ``bag`` and ``set`` exactly from count tables (``repair_block``). Here the same values
are obtained two other ways and compared on hundreds of random small blocks:

1. the complete tuple-level WCNF of :mod:`dpaudit.measures._wcnf`, solved with RC2 (pysat);
2. an exhaustive enumeration, written independently of both on purpose: every kept set
   S' ⊆ protected values and every kept set Q' ⊆ outcome items, cost |D Δ (S' × Q')| counted
   directly on Python sets of tuples.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pysat")
from pysat.examples.rc2 import RC2  # noqa: E402
from pysat.formula import WCNF  # noqa: E402

from dpaudit import Categorical, Criterion, DPAuditError, Schema, count_tables  # noqa: E402
from dpaudit.measures._wcnf import block_wcnf, repair_wcnf, wcnf_text  # noqa: E402
from dpaudit.measures.repair import repair_block, u_r  # noqa: E402


def rc2_optimum(wcnf: WCNF) -> tuple[int, list[int]]:
    with RC2(wcnf) as rc2:
        model = rc2.compute()
        assert model is not None, "the hard clauses are always satisfiable (keep nothing)"
        return int(rc2.cost), model


def random_block(rng: np.random.Generator, max_p: int, max_o: int, max_count: int) -> np.ndarray:
    shape = (int(rng.integers(1, max_p + 1)), int(rng.integers(1, max_o + 1)))
    counts = rng.integers(0, max_count + 1, size=shape)
    counts[rng.random(shape) < rng.uniform(0.0, 0.5)] = 0  # vary the sparsity
    return counts


def kept_matrix(formula, model: list[int]) -> np.ndarray:
    true = {lit for lit in model if lit > 0}
    return np.array([v in true for v in range(1, formula.n_vars + 1)], dtype=bool).reshape(formula.present.shape)


def is_product(kept: np.ndarray) -> bool:
    rows = kept[kept.any(axis=1)]
    return len(rows) == 0 or bool((rows == rows[0]).all())


# ---------------------------------------------------------------------------------------------------
# the independent exhaustive oracle
def tuples_of(counts: np.ndarray, semantics: str) -> set[tuple[int, tuple[int, int]]]:
    """The block's tuples as (p, (o, i)); under set semantics only i = 1 (distinct tuples)."""
    out = set()
    for p in range(counts.shape[0]):
        for o in range(counts.shape[1]):
            copies = int(counts[p, o]) if semantics == "bag" else min(int(counts[p, o]), 1)
            out.update((p, (o, i)) for i in range(1, copies + 1))
    return out


def subsets(values: list) -> itertools.chain:
    return itertools.chain.from_iterable(itertools.combinations(values, r) for r in range(len(values) + 1))


def exhaustive_repair(counts: np.ndarray, semantics: str) -> int:
    """min over S' ⊆ protected values, Q' ⊆ outcome items of |D Δ (S' × Q')| — an oracle on purpose.

    Only values and items occurring in the block are enumerated: inserting a tuple with an unseen
    protected value or outcome item can only add insertions.
    """
    data = tuples_of(counts, semantics)
    protected = sorted({p for p, _ in data})
    items = sorted({q for _, q in data})
    best = len(data)  # S' = ∅: delete everything
    for s_kept in subsets(protected):
        for q_kept in subsets(items):
            repaired = {(p, q) for p in s_kept for q in q_kept}
            best = min(best, len(data ^ repaired))
    return best


# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "semantics, max_p, max_o, max_count, n_cases, seed",
    [("bag", 4, 3, 3, 300, 20240611), ("set", 5, 4, 5, 300, 20240612)],
)
def test_rc2_on_complete_encoding_equals_repair_block(semantics, max_p, max_o, max_count, n_cases, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n_cases):
        counts = random_block(rng, max_p, max_o, max_count)
        formula, variables = block_wcnf(counts, semantics)
        assert len(variables) == formula.n_vars
        optimum, model = rc2_optimum(formula.to_wcnf())
        kept = kept_matrix(formula, model)
        assert is_product(kept), counts
        assert formula.cost(kept) == optimum
        result = repair_block(counts, semantics)
        assert result.exact, (counts, result)
        assert result.lower == optimum, (counts.tolist(), result, optimum)
        assert result.upper == optimum, (counts.tolist(), result, optimum)


@pytest.mark.parametrize(
    "semantics, max_p, max_o, max_count, n_cases, seed",
    [("bag", 3, 3, 2, 150, 7), ("set", 4, 4, 1, 150, 8), ("set", 3, 3, 5, 100, 9)],
)
def test_exhaustive_oracle(semantics, max_p, max_o, max_count, n_cases, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n_cases):
        counts = random_block(rng, max_p, max_o, max_count)
        expected = exhaustive_repair(counts, semantics)
        formula, _ = block_wcnf(counts, semantics)
        assert rc2_optimum(formula.to_wcnf())[0] == expected, counts.tolist()
        result = repair_block(counts, semantics)
        assert result.exact and result.lower == result.upper == expected, (counts.tolist(), result, expected)


def test_one_implication_per_pair_is_not_enough():
    """The reference code's defect: with one of the two orders of each pair, optima are too low."""
    rng = np.random.default_rng(3)
    too_low = 0
    for _ in range(60):
        counts = random_block(rng, 3, 3, 2)
        formula, _ = block_wcnf(counts, "bag")
        partial = WCNF()
        for a, b, c in formula.hard_clauses():
            if -a < -b:  # keep x(p1,q1) ∧ x(p2,q2) → x(p1,q2) for one order of the pair only
                partial.append([a, b, c])
        for clause in formula.soft_clauses():
            partial.append(clause, weight=1)
        full, _ = rc2_optimum(formula.to_wcnf())
        low, _ = rc2_optimum(partial)
        assert low <= full
        too_low += low < full
    assert too_low > 0


# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("semantics", ["bag", "set"])
def test_wcnf_text_parses_back(semantics):
    counts = np.array([[3, 1, 0], [0, 2, 2], [1, 1, 1], [0, 0, 0]])
    formula, variables = block_wcnf(counts, semantics)
    s = 3  # protected values present
    q = 3 + 2 + 2 if semantics == "bag" else 3  # outcome items present
    v = s * q
    assert formula.n_vars == v == len(variables)
    text = wcnf_text([formula])
    parsed = WCNF(from_string=text)
    assert parsed.nv == v
    assert len(parsed.soft) == v and set(parsed.wght) == {1}
    assert len(parsed.hard) == s * (s - 1) * q * (q - 1)  # ordered pairs with p1 ≠ p2 and q1 ≠ q2
    assert parsed.topw == v + 1
    header = next(line for line in text.splitlines() if line.startswith("p "))
    assert header == f"p wcnf {v} {v + s * (s - 1) * q * (q - 1)} {v + 1}"
    assert sum(line.startswith("c var ") for line in text.splitlines()) == v
    assert rc2_optimum(parsed)[0] == repair_block(counts, semantics).lower


def test_wcnf_text_blocks_are_disjoint_and_sum():
    rng = np.random.default_rng(11)
    blocks = [random_block(rng, 3, 3, 3) for _ in range(5)]
    formulas = [block_wcnf(b, "bag")[0] for b in blocks]
    parsed = WCNF(from_string=wcnf_text(formulas, block_notes=[f"b{k}" for k in range(5)]))
    assert parsed.nv == sum(f.n_vars for f in formulas)
    assert len(parsed.hard) == sum(f.n_hard for f in formulas)
    assert rc2_optimum(parsed)[0] == sum(repair_block(b, "bag").lower for b in blocks)


def test_empty_block():
    formula, variables = block_wcnf(np.zeros((2, 3), dtype=int), "bag")
    assert variables == [] and formula.n_hard == 0
    text = wcnf_text([formula])
    assert "p wcnf 0 0 1" in text.splitlines()
    assert WCNF(from_string=text).nv == 0


@pytest.mark.parametrize("semantics", ["bag", "set"])
def test_repair_wcnf_on_count_tables(semantics):
    rng = np.random.default_rng(5)
    n = 40
    frame = pd.DataFrame({
        "sex": rng.choice(["F", "M"], n),
        "race": rng.choice(["a", "b", "c"], n),
        "income": rng.choice(["<=50K", ">50K"], n, p=[0.7, 0.3]),
        "hours": rng.choice(["part\ntime", "full"], n),  # a newline in a label must not break a line
    })
    schema = Schema({
        "sex": Categorical(["F", "M"]),
        "race": Categorical(["a", "b", "c"]),
        "income": Categorical(["<=50K", ">50K"]),
        "hours": Categorical(["part\ntime", "full"]),
    })
    criteria = [Criterion.parse("sex ⊥ income | hours"), Criterion.parse("race ⊥ income")]
    tables = count_tables(frame, criteria, schema)
    text = repair_wcnf(tables, semantics)
    parsed = WCNF(from_string=text)
    expected = sum(u_r(t.counts, semantics=semantics) for t in tables)
    assert rc2_optimum(parsed)[0] == expected
    comments = [line for line in text.splitlines() if not line.startswith(("p ", "c "))]
    assert all(line.endswith(" 0") for line in comments)  # every other line is a clause
    assert "sex ⊥ income | hours" in text and '"race": "c"' in text and '"income": ">50K"' in text
    assert '"part\\ntime"' in text


def test_flip_closed_forms_via_rc2(flip_table):
    """Spec §5 flip test, N = 6 per group: bag = N·min(2t, 1); set = 0 for t < 1 and 1 at t = 1."""
    n = 6
    for t in (0.0, 1 / 3, 2 / 3, 1.0):
        table = flip_table(n, t)
        bag, _ = rc2_optimum(block_wcnf(table, "bag")[0].to_wcnf())
        set_, _ = rc2_optimum(block_wcnf(table, "set")[0].to_wcnf())
        assert bag == round(n * min(2 * t, 1.0))
        assert set_ == (1 if t == 1.0 else 0)


# ---------------------------------------------------------------------------------------------------
def test_errors():
    table = np.array([[1, 2], [3, 0]])
    with pytest.raises(DPAuditError, match="fractional"):
        block_wcnf(table, "ci")
    with pytest.raises(DPAuditError, match="semantics must be one of ci, bag, set"):
        block_wcnf(table, "multiset")
    with pytest.raises(DPAuditError, match="non-negative integer"):
        block_wcnf(np.array([[1.5, 0]]), "bag")
    with pytest.raises(DPAuditError, match="2-D"):
        block_wcnf(np.ones((2, 2, 2)), "bag")
    frame = pd.DataFrame({"sex": ["F", "M", "M", "F"], "y": [1, 0, 1, 1]})
    schema = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1])})
    tables = count_tables(frame, [Criterion.parse("sex ⊥ y")], schema)
    with pytest.raises(DPAuditError, match="fractional"):
        repair_wcnf(tables, "ci")
    with pytest.raises(DPAuditError, match="semantics must be one of ci, bag, set"):
        repair_wcnf(tables, "Bag")
    # bag: S = {F, M}, Q = {(0,1), (1,1), (1,2)} → 6 soft + 2·1·3·2 = 12 hard = 18 clauses
    with pytest.raises(DPAuditError, match=r"18 clauses .*max_clauses=17.*fewer"):
        repair_wcnf(tables, "bag", max_clauses=17)
    assert "p wcnf 6 18 7" in repair_wcnf(tables, "bag", max_clauses=18).splitlines()
