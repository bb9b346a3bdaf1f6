"""U_TC: marginal differences, top-k sums, top cells, private naming (spec §2.2, §5)."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpaudit import Categorical, DPAuditError, Schema, audit, count_tables, parse_criteria
from dpaudit.measures.contribution import (
    marginal_differences,
    private_top_cells,
    tc_sensitivity,
    top_cells,
    top_k_sum,
    u_tc,
)


@pytest.mark.parametrize("t", [0.0, 0.1, 0.4, 0.7, 0.9, 1.0])
def test_flip_closed_form_domain_mode(t, flip_table):
    assert u_tc(flip_table(1000, t), k=4) == pytest.approx(t, abs=1e-12)
    assert u_tc(flip_table(1000, t), k=500) == pytest.approx(t, abs=1e-12)


def test_flip_observed_mode_jumps_at_one(flip_table):
    assert u_tc(flip_table(1000, 0.9), k=4, cells="observed") == pytest.approx(0.9)
    # at t = 1 two cells are empty: observed mode ranks only the two others (reference code: 0.5)
    assert u_tc(flip_table(1000, 1.0), k=4, cells="observed") == pytest.approx(0.5)
    assert u_tc(flip_table(1000, 1.0), k=4, cells="domain") == pytest.approx(1.0)


def test_conditional_md_is_block_weighted():
    dependent = np.array([[30, 10], [10, 30]])
    fair = np.array([[20, 20], [20, 20]])
    md = marginal_differences(np.stack([dependent, fair]))
    # Pr(a) · |Pr(p,o|a) − Pr(p|a)Pr(o|a)| = ½ · |30/80 − ¼| = 1/16 in every dependent cell
    assert md[0].tolist() == [[1 / 16] * 2] * 2 and not md[1].any()
    assert u_tc(np.stack([dependent, fair]), k=2) == pytest.approx(1 / 8)


tables = arrays(np.int64, st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 5)),
                elements=st.integers(0, 20))


@settings(max_examples=200, deadline=None)
@given(tables, st.integers(1, 80))
def test_top_k_sum_equals_full_sort(table, k):
    md = marginal_differences(table)
    oracle = np.sort(md.ravel())[::-1][:k].sum()  # full sort: an oracle on purpose
    assert top_k_sum(md, k) == pytest.approx(oracle, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(tables)
def test_monotone_in_k_and_bounded(table):
    values = [u_tc(table, k=k) for k in range(1, table.size + 3)]
    assert all(b >= a - 1e-15 for a, b in zip(values, values[1:]))
    assert values[-1] == pytest.approx(marginal_differences(table).sum())  # k beyond the cells
    assert 0.0 <= values[-1] <= 2.0
    assert u_tc(table, k=3, cells="observed") <= u_tc(table, k=3) + 1e-12


@settings(max_examples=150, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(1, 3), st.integers(1, 4)), elements=st.integers(0, 6)),
       st.integers(2, 4))
def test_zero_iff_independent(rows, n_o):
    cols = np.arange(1, n_o + 1)[None, :].repeat(rows.shape[0], 0)
    independent = np.einsum("ap,ao->apo", rows, cols)
    assert u_tc(independent, k=5) == pytest.approx(0.0, abs=1e-12)
    if rows[0].sum() > 0 and (rows[0] > 0).sum() >= 1:
        dependent = independent.copy()
        p = int(np.argmax(rows[0]))
        dependent[0, p, 0] += 7  # break rank one in block 0 (its row p grows in one column only)
        r = dependent[0].sum(1, keepdims=True)
        s = dependent[0].sum(0, keepdims=True)
        if not np.allclose(dependent[0] * dependent[0].sum(), r * s):
            assert u_tc(dependent, k=5) > 0


def test_top_cells_known_answer():
    table = np.array([[[50, 10, 40], [10, 10, 80]]])  # n = 200
    cells = top_cells(table, 2)
    # expected counts: row totals 100/100, column totals 60/20/120 → 30, 10, 60 per row
    assert [c["index"] for c in cells] == [(0, 0, 0), (0, 0, 2)]
    assert cells[0] == {"index": (0, 0, 0), "md": 0.1, "count": 50, "expected": 30.0, "sign": "over"}
    assert cells[1]["sign"] == "under" and cells[1]["count"] == 40 and cells[1]["md"] == pytest.approx(0.1)
    assert top_cells(np.array([[5, 5], [5, 5]]), 3) == []  # independent: nothing drives unfairness
    assert len(top_cells(table, 100)) == 4  # k beyond the cells: every cell with MD > 0


@pytest.fixture
def frame_and_schema():
    rng = np.random.default_rng(11)
    n = 4000
    sex = rng.choice(["F", "M"], size=n)
    age = rng.choice(["young", "old"], size=n)
    hi = rng.random(n) < np.where((sex == "M") & (age == "old"), 0.6, 0.2)
    df = pd.DataFrame({"sex": sex, "age": age, "income": np.where(hi, "high", "low")})
    schema = Schema({"sex": Categorical(["F", "M"]), "age": Categorical(["young", "old"]),
                     "income": Categorical(["low", "high"])})
    return df, schema


def test_audit_exact_names_top_cells_with_labels(frame_and_schema):
    df, schema = frame_and_schema
    res = audit(df, ["sex ⊥ income | age"], measures=("tc",), k=2, schema=schema, name_cells=4, exact=True)
    tc = res["tc"]
    cells = tc.extras["top_cells"]
    assert len(cells) == 4  # the 4 cells of the old block share the largest |deviation|
    assert len(audit(df, ["sex ⊥ income | age"], measures=("tc",), schema=schema, exact=True)["tc"].extras["top_cells"]) == 8
    assert all(c["admissible"] == {"age": "old"} for c in cells)
    over = [c for c in cells if c["sign"] == "over"]
    assert {(c["protected"]["sex"], c["outcome"]["income"]) for c in over} == {("M", "high"), ("F", "low")}
    assert tc.value == pytest.approx(2 * cells[0]["md"])
    crosstab = df[df.age == "old"].groupby(["sex", "income"]).size()
    for c in cells:
        assert c["count"] == crosstab[(c["protected"]["sex"], c["outcome"]["income"])]
    assert res.to_dict()["measures"]["tc"]["options"] == {"k": 2, "cells": "domain", "name_cells": 4}


@pytest.mark.parametrize("cells", ["domain", "observed"])
def test_exact_value_alone_builds_no_breakdown(frame_and_schema, cells):
    """name_cells=0: the same values, and neither the top cells nor the MD maps are built."""
    df, schema = frame_and_schema
    crits = ["sex ⊥ income | age", "age ⊥ income"]
    full = audit(df, crits, measures=("tc",), schema=schema, k=3, cells=cells, exact=True)["tc"]
    alone = audit(df, crits, measures=("tc",), schema=schema, k=3, cells=cells, name_cells=0, exact=True)["tc"]
    assert alone.value == full.value and alone.per_criterion == full.per_criterion
    assert full.details.top_cells and full.details.cell_md and len(full.details.cell_md) == 2
    assert alone.details.top_cells == () and alone.details.cell_md == ()
    assert alone.extras.get("top_cells", []) == [] and alone.extras.get("cell_md", []) == []


def test_audit_dp_names_cells_privately(frame_and_schema):
    df, schema = frame_and_schema
    res = audit(df, ["sex ⊥ income | age"], measures=("tc",), k=2, schema=schema, epsilon=50.0, name_cells=2)
    tc = res["tc"]
    assert tc.release.epsilon == pytest.approx(12.5)  # 3/4 of U_TC's share goes to naming cells
    named = tc.extras["top_cells"]
    assert [c["rank"] for c in named] == [1, 2]
    assert all(set(c) == {"rank", "criterion", "protected", "outcome", "admissible", "noisy_md", "reliability"}
               for c in named)
    assert all(c["admissible"] == {"age": "old"} for c in named)  # high ε: the true top block
    info = tc.extras["top_cells_release"]  # 4/5 of the naming ε selects the cells ...
    assert info["dp"] and info["epsilon"] == pytest.approx(30.0) and "OpenDP" in info["mechanism"]
    assert info["scale"] == pytest.approx(2 * 2 * 3 / 4000 / 30.0)
    sure = tc.extras["top_cells_reliability"]  # ... 1/5 releases their MD and the 3rd largest MD
    assert sure["dp"] and sure["epsilon"] == pytest.approx(7.5) and "OpenDP" in sure["mechanism"]
    assert sure["sensitivity_l1"] == pytest.approx(3 / 4000) and sure["scale"] == pytest.approx(3 / 4000 / 7.5)
    assert all(0 < c["reliability"] < 1 for c in named)  # ties with 2 cells left out: tests/test_names.py
    assert res.dp
    four = audit(df, ["sex ⊥ income | age"], measures=("tc",), k=2, schema=schema, epsilon=50.0, name_cells=4)
    assert all(c.reliability > 0.99 for c in four["tc"].details.top_cells)  # the whole top block: surely right


def test_dp_naming_off_spends_all_on_the_value(frame_and_schema):
    df, schema = frame_and_schema
    res = audit(df, "sex ⊥ income", measures=("tc",), schema=schema, epsilon=1.0, name_cells=0)
    assert res["tc"].release.epsilon == 1.0 and res["tc"].extras == {}


def test_observed_mode_cannot_name_cells_privately(frame_and_schema):
    df, schema = frame_and_schema
    with pytest.raises(DPAuditError, match="naming top cells privately needs cells='domain'"):
        audit(df, "sex ⊥ income", measures=("tc",), schema=schema, epsilon=1.0, cells="observed", name_cells=3)
    # by default observed mode simply names nothing
    res = audit(df, "sex ⊥ income", measures=("tc",), schema=schema, epsilon=1.0, cells="observed")
    assert res["tc"].extras == {} and res["tc"].release.epsilon == 1.0


@pytest.mark.parametrize("kwargs, message", [
    ({"k": 0}, "k must be an integer >= 1"),
    ({"k": 2.5}, "k must be an integer >= 1"),
    ({"cells": "all"}, "cells must be one of domain, observed"),
    ({"name_cells": -1, "epsilon": 1.0}, "name_cells must be an integer"),
])
def test_bad_options(frame_and_schema, kwargs, message):
    df, schema = frame_and_schema
    with pytest.raises(DPAuditError, match=message):
        audit(df, "sex ⊥ income", measures=("tc",), schema=schema, **kwargs)


def test_seeded_private_naming_is_reproducible(frame_and_schema):
    df, schema = frame_and_schema
    tabs = count_tables(df, parse_criteria(["sex ⊥ income | age", "age ⊥ income"]), schema)
    a = private_top_cells(tabs, 3, epsilon=0.5, seed=4)
    b = private_top_cells(tabs, 3, epsilon=0.5, seed=4)
    assert a == b and not a.release.dp
    assert len(private_top_cells(tabs, 100, epsilon=0.5).top_cells) == 8 + 4  # all cells, capped


def test_sensitivity_formula():
    assert tc_sensitivity(n=100, k=1, conditional=False, cells="domain") == pytest.approx(0.03)
    assert tc_sensitivity(n=100, k=500, conditional=False, cells="domain") == pytest.approx(0.06)
    assert tc_sensitivity(n=100, k=500, conditional=True, cells="domain") == pytest.approx(0.08)
    assert tc_sensitivity(n=100, k=500, conditional=True, cells="observed") == pytest.approx(0.58)
    assert tc_sensitivity(n=2, k=1, conditional=False, cells="observed") == pytest.approx(1.5 + 1.0)


def test_budget_split_between_measures(frame_and_schema):
    df, schema = frame_and_schema
    res = audit(df, "sex ⊥ income", measures=("tvd", "tc"), schema=schema, epsilon=1.0,
                split={"tvd": 0.2, "tc": 0.8}, name_cells=0)
    assert res["tvd"].release.epsilon == pytest.approx(0.2) and res["tc"].release.epsilon == pytest.approx(0.8)
    default = audit(df, "sex ⊥ income", measures=("tvd", "tc"), schema=schema, epsilon=1.0)
    assert default["tvd"].release.epsilon == 0.5
    assert default["tc"].release.epsilon + default["tc"].extras["top_cells_release"]["epsilon"] == pytest.approx(0.5)
    json.dumps(default.to_dict())  # everything serialises
