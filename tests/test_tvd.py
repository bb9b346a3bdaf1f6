"""U_MI^TVD and the mutual-information baseline on count tables (spec §2.1, §5)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpaudit.measures import MEASURES
from dpaudit.measures.tvd import block_tvd, mutual_information, u_mi_tvd


@pytest.mark.parametrize("t", [0.0, 0.1, 0.3, 0.5, 0.8, 1.0])
def test_flip_closed_form(t, flip_table):
    table = flip_table(1000, t)
    assert u_mi_tvd(table) == pytest.approx(t * t / 2, abs=1e-12)
    # MI of the flip table: 1 − H2((1+t)/2) bits (spec §5)
    q = (1 + t) / 2
    h2 = 0.0 if q in (0.0, 1.0) else -(q * np.log2(q) + (1 - q) * np.log2(1 - q))
    assert mutual_information(table, base=2) == pytest.approx(1 - h2, abs=1e-12)


tables = arrays(np.int64, st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
                elements=st.integers(0, 30))


@settings(max_examples=300, deadline=None)
@given(tables)
def test_pinsker_u_below_mi_nats(table):
    assert u_mi_tvd(table) <= mutual_information(table) + 1e-12


@settings(max_examples=200, deadline=None)
@given(tables)
def test_range(table):
    value = u_mi_tvd(table)
    assert 0.0 <= value < MEASURES["tvd"].upper


@st.composite
def margins(draw):
    blocks, n_p, n_o = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    rows = draw(arrays(np.int64, (blocks, n_p), elements=st.integers(0, 9)))
    cols = draw(arrays(np.int64, (blocks, n_o), elements=st.integers(0, 9)))
    return rows, cols


@settings(max_examples=200, deadline=None)
@given(margins())
def test_zero_iff_independent(margin_pair):
    rows, cols = margin_pair
    # Outer products of integer vectors are exactly independent in every block.
    independent = np.einsum("ap,ao->apo", rows, cols)
    assert u_mi_tvd(independent) == pytest.approx(0.0, abs=1e-12)
    # A table is zero only if every non-empty block is rank one.
    dependent = independent.copy()
    dependent[0, 0, 0] += 1
    r = dependent[0].sum(1, keepdims=True)
    s = dependent[0].sum(0, keepdims=True)
    rank_one = np.allclose(dependent[0] * dependent[0].sum(), r * s)
    assert (u_mi_tvd(dependent) == pytest.approx(0.0, abs=1e-12)) == rank_one


def test_conditional_weighting_by_block_size():
    dependent = np.array([[30, 10], [10, 30]])  # TVD = 0.125 on 80 rows
    fair = np.array([[20, 20], [20, 20]])
    stacked = np.stack([dependent, fair, np.zeros((2, 2), dtype=int)])
    n_a, t = block_tvd(stacked)
    assert n_a.tolist() == [80, 80, 0]
    assert t.tolist() == [0.25, 0.0, 0.0]
    # Σ_a Pr(a)·2·TVD_a²: the dependent block has weight 1/2, the empty block contributes 0.
    assert u_mi_tvd(stacked) == pytest.approx(0.5 * 2 * 0.25**2)
    assert u_mi_tvd(stacked) == pytest.approx(0.5 * u_mi_tvd(dependent))


def test_conditioning_differs_from_pooling():
    # Simpson-style: each block independent, pooled table dependent.
    blocks = np.array([[[9, 1], [9, 1]], [[1, 9], [1, 9]]])
    assert u_mi_tvd(blocks) == pytest.approx(0.0)
    assert u_mi_tvd(blocks.sum(axis=0)) == pytest.approx(0.0)
    skewed = np.array([[[18, 2], [9, 1]], [[1, 9], [2, 18]]])
    assert u_mi_tvd(skewed) == pytest.approx(0.0)
    assert u_mi_tvd(skewed.sum(axis=0)) == pytest.approx(2 * (8 / 60) ** 2)


def test_mutual_information_matches_definition():
    rng = np.random.default_rng(1)
    table = rng.integers(0, 20, size=(3, 3, 4))
    n = table.sum()
    expected = 0.0  # direct definition, cell by cell (oracle on purpose)
    for a in range(3):
        na = table[a].sum()
        for p in range(3):
            for o in range(4):
                c = table[a, p, o]
                if c:
                    expected += c / n * np.log(c * na / (table[a, p].sum() * table[a, :, o].sum()))
    assert mutual_information(table) == pytest.approx(expected)
    assert mutual_information(table, base=2) == pytest.approx(expected / np.log(2))


def test_empty_table_is_zero():
    assert u_mi_tvd(np.zeros((2, 2, 2))) == 0.0
    assert mutual_information(np.zeros((1, 2, 2))) == 0.0


def test_bad_shape():
    with pytest.raises(ValueError, match="shape"):
        u_mi_tvd(np.zeros(3))
