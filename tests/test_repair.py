"""U_R: ci closed form and bounds, bag/set exact solvers, flip-test closed forms, DP caveats."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpaudit import Categorical, DPAuditError, Schema, audit
from dpaudit.measures import _center as center_module
from dpaudit.measures._center_rc2 import Hybrid
from dpaudit.measures.repair import repair_block, two_row_ci, u_r


def dense_scan(n1, n2, grid=200_001):
    """ci cost of a 2-row table by brute force over ρ = u2/u1 (an oracle on purpose)."""
    rho = np.concatenate([np.linspace(1e-9, 1, grid), 1 / np.linspace(1, 1e-6, grid)])
    costs = np.minimum(1, 1 / rho)[:, None] * np.abs(n2[None, :] - rho[:, None] * n1[None, :])
    return min(costs.sum(axis=1).min(), n1.sum(), n2.sum())


@settings(max_examples=60, deadline=None)
@given(arrays(np.int64, st.tuples(st.just(2), st.integers(1, 6)), elements=st.integers(0, 40)))
def test_ci_two_rows_equals_dense_scan(table):
    exact = repair_block(table, "ci")
    assert exact.exact
    scan = dense_scan(table[0].astype(float), table[1].astype(float))
    assert exact.lower <= scan + 1e-9  # the closed form is never worse than any scanned ρ ...
    assert exact.lower >= scan - 1e-3 * max(1.0, scan)  # ... and the scan gets arbitrarily close
    fit = exact.repaired
    assert np.linalg.matrix_rank(fit, tol=1e-8) <= 1 and (fit >= -1e-12).all()
    assert np.abs(fit - table).sum() == pytest.approx(exact.lower, abs=1e-8)


@settings(max_examples=60, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(2, 5), st.just(2)), elements=st.integers(0, 30)))
def test_ci_two_columns_is_exact_too(table):
    assert repair_block(table, "ci").lower == pytest.approx(repair_block(table.T, "ci").lower)
    assert repair_block(table, "ci").exact


@settings(max_examples=60, deadline=None)
@given(arrays(np.int64, st.integers(2, 4), elements=st.integers(0, 9)),
       arrays(np.int64, st.integers(2, 4), elements=st.integers(0, 9)))
def test_ci_zero_iff_independent(u, v):
    independent = np.outer(u, v)
    assert u_r(independent, semantics="ci") == pytest.approx(0.0, abs=1e-9)
    dependent = independent.copy()
    dependent[0, 0] += 3
    if np.linalg.matrix_rank(dependent) > 1:
        assert u_r(dependent, semantics="ci") > 0


@settings(max_examples=40, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(3, 5), st.integers(3, 5)), elements=st.integers(0, 20)),
       st.integers(0, 2**31 - 1))
def test_ci_bounds_are_certified(table, seed):
    res = repair_block(table, "ci")
    assert res.lower <= res.upper + 1e-7
    fit = res.repaired
    assert (fit >= -1e-12).all() and np.linalg.matrix_rank(fit, tol=1e-6 * max(1, fit.max())) <= 1
    assert np.abs(fit - table).sum() == pytest.approx(res.upper, rel=1e-9, abs=1e-9)  # upper is achieved
    rng = np.random.default_rng(seed)
    for _ in range(50):  # the lower bound is below every feasible repair we try
        u, v = rng.uniform(0, 3, table.shape[0]), rng.uniform(0, 8, table.shape[1])
        assert res.lower <= np.abs(table - np.outer(u, v)).sum() + 1e-7
    rows = table.astype(float)
    best_pair = max(two_row_ci(rows[i:i + 1], rows[j:j + 1])[0][0]
                    for i in range(len(rows)) for j in range(i + 1, len(rows)))
    assert res.lower >= best_pair - 1e-7  # at least any single exact pair


@pytest.mark.parametrize("t", [0.0, 0.2, 0.5, 0.8, 1.0])
def test_flip_closed_forms(t, flip_table):
    n = 200
    table = flip_table(n, t)
    assert u_r(table, semantics="ci") == pytest.approx(2 * n * t / (1 + t))
    assert u_r(table, semantics="bag") == pytest.approx(n * min(2 * t, 1.0))
    assert u_r(table, semantics="set") == (1.0 if t == 1.0 else 0.0)


def test_adult_sex_income_explanation():
    female, male = np.array([14423, 1769]), np.array([22732, 9918])
    table = np.vstack([female, male])
    ci = repair_block(table, "ci")
    assert ci.lower == pytest.approx(4523.77, abs=0.01)
    assert (ci.repaired - table)[0, 1] == pytest.approx(4523.77, abs=0.01)  # add high-income women
    assert np.abs(ci.repaired - table).sum() == pytest.approx(ci.lower)
    removing_men = abs(male[1] - male[0] * female[1] / female[0])  # keep women's ratio instead
    assert removing_men == pytest.approx(7129.9, abs=0.1) and removing_men > ci.lower
    assert repair_block(table, "bag").lower == female.sum()  # group imbalance, not dependence
    assert repair_block(table, "set").lower == 0.0


def test_bag_subset_and_grid_enumerations_agree():
    rng = np.random.default_rng(2)
    for _ in range(30):
        rows = rng.integers(0, 6, size=(rng.integers(2, 7), rng.integers(1, 4))).astype(float)
        rows = rows[rows.sum(axis=1) > 0]
        if len(rows) < 2:
            continue
        grids = [np.unique(np.append(rows[:, o], 0.0)) for o in range(rows.shape[1])]
        grid_value, grid_t = center_module._grid_search(rows, grids)
        subset_value, subset_t = center_module._subset_search(rows)
        assert grid_value == subset_value
        assert center_module._cost_of(rows, subset_t)[0] == subset_value


def test_solver_fallback_matches_enumeration(monkeypatch):
    rng = np.random.default_rng(4)
    tables = [rng.integers(0, 9, size=(7, 3)) for _ in range(5)]
    exact = {s: [repair_block(t, s).lower for t in tables] for s in ("bag", "set")}
    monkeypatch.setattr(center_module, "ENUMERATION_LIMIT", 1)
    for semantics, values in exact.items():
        for t, value in zip(tables, values):
            res = repair_block(t, semantics, work_limit=20)
            assert res.method.startswith("CP-SAT + RC2") and "gap closed by" in res.method
            assert res.exact and res.status == "exact" and res.stopped_by is None and res.lower == value
    # CP-SAT alone (no RC2) still proves these small blocks
    monkeypatch.setattr(center_module, "rc2_available", lambda: False)
    monkeypatch.setattr("dpaudit.measures._center_rc2.rc2_available", lambda: False)
    for t, value in zip(tables, exact["bag"]):
        res = repair_block(t, "bag", work_limit=20)
        assert res.method.startswith("CP-SAT (RC2 unavailable") and res.exact and res.lower == value


def test_stack_overflow_male_block_is_fast_and_exact():
    """The case a compressed RC2 formulation needed 11 minutes for: Country ⊥ Age | Gender=Male."""
    import os
    from pathlib import Path

    root = os.environ.get("DPAUDIT_DATA")
    path = Path(root or "") / "stackoverflow" / "so_countries_col_new.csv.gz"
    if not root or not path.is_file():
        if os.environ.get("CI"):
            pytest.fail("CI must provide DPAUDIT_DATA with stackoverflow/")
        pytest.skip("Stack Overflow file not found: set DPAUDIT_DATA")
    so = pd.read_csv(path, keep_default_na=False, usecols=["Gender", "Country", "Age"])
    block = so[so.Gender == "Male"].groupby(["Country", "Age"]).size().unstack(fill_value=0).to_numpy()
    assert block.shape == (20, 8)
    res = repair_block(block, "bag")
    assert res.exact and res.lower == 23_163 and "kept sets" in res.method


def _frame():
    rng = np.random.default_rng(8)
    n = 600
    g = rng.choice(["a", "b", "c"], size=n)
    y = np.where(rng.random(n) < np.where(g == "a", 0.7, 0.3), "yes", "no")
    z = rng.choice(["u", "v"], size=n)
    return pd.DataFrame({"g": g, "y": y, "z": z}), Schema(
        {"g": Categorical(["a", "b", "c"]), "y": Categorical(["no", "yes"]), "z": Categorical(["u", "v"])}
    )


def test_audit_exact_details_per_block():
    df, schema = _frame()
    res = audit(df, ["g ⊥ y | z", "g ⊥ y"], measures=("repair",), schema=schema, exact=True)
    rep = res["repair"]
    d = res.to_dict()["measures"]["repair"]
    assert d["semantics"] == "ci" and d["exact"] is True and d["sensitivity"] == pytest.approx(4.004)
    assert len(d["per_block"]) == 3  # two blocks of z, one block without A
    assert sum(b["value"] for b in d["per_block"]) == pytest.approx(rep.value)
    block = d["per_block"][0]
    assert block["admissible"] == {"z": "u"} and block["changes"][0]["change"] != 0
    json.dumps(d)


def test_audit_dp_release_and_caveat_on_timeouts(monkeypatch):
    df, schema = _frame()
    res = audit(df, "g ⊥ y", measures=("repair",), schema=schema, epsilon=1.0, semantics="bag")
    assert res.dp and res["repair"].release.scale == 2.0 and "per_block" not in res.to_dict()["measures"]["repair"]
    monkeypatch.setattr(center_module, "ENUMERATION_LIMIT", 1)
    monkeypatch.setattr(center_module, "solve_hybrid", lambda rows, binary, limits: Hybrid(
        0.0, float(rows.sum()), np.zeros(rows.shape[1]), None, "work limit", limits.work))
    res = audit(df, "g ⊥ y", measures=("repair",), schema=schema, epsilon=1.0, semantics="bag")
    assert not res.dp
    assert any("the work limit of 30 units per block" in r for r in res["repair"].release.reasons)


@pytest.mark.parametrize("kwargs, message", [
    ({"semantics": "nope"}, "semantics must be one of ci, bag, set"),
    ({"time_limit": 0}, "time_limit must be a finite number > 0"),
    ({"work_limit": 0}, "work_limit must be a finite number > 0"),
    ({"work_limit": None}, "work_limit must be a finite number > 0, got None"),
])
def test_bad_repair_options(kwargs, message):
    df, schema = _frame()
    with pytest.raises(DPAuditError, match=message):
        audit(df, "g ⊥ y", measures=("repair",), schema=schema, **kwargs)
