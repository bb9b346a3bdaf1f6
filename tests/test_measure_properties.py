"""Shared invariants, run for every registered measure and its option grid.

A new measure registered in dpaudit.measures.MEASURES is picked up here automatically.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpaudit.measures import MEASURES
from dpaudit.measures._ci import TOLERANCE as CI_TOLERANCE

OPTION_GRID = {
    "tvd": [{}],
    "tc": [{"k": 1}, {"k": 3}, {"k": 500}, {"cells": "observed"}],
    "repair": [{"semantics": "ci"}, {"semantics": "bag"}, {"semantics": "set"}],
}
GRID = [(name, opts) for name in MEASURES for opts in OPTION_GRID[name]]
IDS = [f"{n}-{o}" for n, o in GRID]

tables = arrays(np.int64, st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4)),
                elements=st.integers(0, 15))


def value(name, opts, table):
    return MEASURES[name](**opts).value(table)


@pytest.mark.parametrize("name, opts", GRID, ids=IDS)
@settings(max_examples=80, deadline=None)
@given(table=tables)
def test_range(name, opts, table):
    assert 0.0 <= value(name, opts, table) <= MEASURES[name].upper
    assert value(name, opts, table) <= MEASURES[name].maximum(int(table.sum())) + 1e-9  # the reports' stated range


@pytest.mark.parametrize("name, opts", GRID, ids=IDS)
@settings(max_examples=80, deadline=None)
@given(table=tables, seed=st.integers(0, 2**31 - 1))
def test_invariant_under_relabelling_values(name, opts, table, seed):
    rng = np.random.default_rng(seed)
    shuffled = table[rng.permutation(table.shape[0])][:, rng.permutation(table.shape[1])][:, :, rng.permutation(table.shape[2])]
    # ci: each block's released value is an achieved repair within the branch and bound's tolerance.
    slack = CI_TOLERANCE * table.shape[0] if opts.get("semantics") == "ci" else 1e-12
    assert value(name, opts, shuffled) == pytest.approx(value(name, opts, table), abs=slack)


@pytest.mark.parametrize("name, opts", GRID, ids=IDS)
@settings(max_examples=80, deadline=None)
@given(table=tables, factor=st.integers(2, 5))
def test_homogeneous_in_the_counts(name, opts, table, factor):
    degree = MEASURES[name](**opts).degree
    # ci is homogeneous; its released value is known to the branch and bound's tolerance per block.
    slack = (1 + factor) * CI_TOLERANCE * table.shape[0] if opts.get("semantics") == "ci" else 1e-9
    assert value(name, opts, table * factor) == pytest.approx(factor**degree * value(name, opts, table), rel=1e-7, abs=slack)


@pytest.mark.parametrize("name, opts", GRID, ids=IDS)
@settings(max_examples=80, deadline=None)
@given(rows=arrays(np.int64, (2, 3), elements=st.integers(0, 9)), cols=arrays(np.int64, (2, 2), elements=st.integers(0, 9)))
def test_zero_under_independence(name, opts, rows, cols):
    independent = value(name, opts, np.einsum("ap,ao->apo", rows, cols))
    if MEASURES[name](**opts).zero_if_independent:
        assert independent == pytest.approx(0.0, abs=1e-9)


def test_every_measure_and_semantics_is_in_the_grid():
    assert set(OPTION_GRID) == set(MEASURES)


@pytest.mark.parametrize("name, opts", GRID, ids=IDS)
def test_positive_when_dependent(name, opts):
    assert value(name, opts, np.array([[[5, 0], [1, 5]]])) > 0


def test_every_measure_has_defaults_and_its_metadata():
    for name, cls in MEASURES.items():
        m = cls()  # every option has a default, in exactly one place: the class
        assert m.name == name and m.title and m.reference and m.sensitivity_formula
        assert m.options() == {f.name: getattr(m, f.name) for f in dataclasses.fields(cls)}
