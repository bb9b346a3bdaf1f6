"""The benchmark suite's plain-pandas U_MI^TVD / U_TC and scikit-learn MI equal dpaudit's exact values.

Section 2 of docs/benchmarks.md times dpaudit against these reference implementations
(``benchmarks/_suite/references.py``); this test makes that a like-for-like comparison: on real
datasets (their paper presets, several-column sides, uniform and non-uniform bins), the synthetic
census table and the flip test's closed forms, the references compute the same numbers.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _suite import references as ref  # noqa: E402

import dpaudit  # noqa: E402
from dpaudit.datasets.synthetic import CENSUS_PRESET, FLIP_CRITERION, census, flip  # noqa: E402

REL = 1e-9


def assert_like_dpaudit(frame: pd.DataFrame, schema: dpaudit.Schema, criteria: tuple[str, ...], k: int = 500) -> None:
    result = dpaudit.audit(frame, criteria, measures=("tvd", dpaudit.TopContribution(k=k)), exact=True,
                           schema=schema)
    mi = [b.mi_nats for b in result["tvd"].details.baseline]
    for i, criterion in enumerate(criteria):
        protected, outcome, admissible = ref.criterion_columns(criterion)
        bins = ref.integer_bins(schema, [*protected, *outcome, *admissible])
        assert ref.tvd(frame, protected, outcome, admissible, bins=bins) == pytest.approx(
            result["tvd"].per_criterion[i], rel=REL, abs=1e-15), criterion
        assert ref.tc(frame, protected, outcome, admissible, k=k, bins=bins) == pytest.approx(
            result["tc"].per_criterion[i], rel=REL, abs=1e-15), criterion
        assert ref.mutual_information(frame, protected, outcome, admissible, bins=bins) == pytest.approx(
            mi[i], rel=1e-9, abs=1e-12), criterion


def test_adult_paper_criteria_and_several_columns_per_side(adult_available):
    frame, schema = dpaudit.datasets.load("adult")
    criteria = (*dpaudit.datasets.preset("adult"), "sex,race ⊥ income | age", "race ⊥ income,sex",
                "sex ⊥ income | workclass,age")
    assert ref.integer_bins(schema, ["age", "hours-per-week"])["age"] == (17, 20, 30, 40, 50, 60, 70, math.inf)
    for k in (500, 5):
        assert_like_dpaudit(frame, schema, criteria, k=k)


@pytest.mark.parametrize("name", ["compas", "healthcare", "cps1988", "credit"])
def test_other_real_datasets(adult_available, name):
    if not (adult_available / dpaudit.datasets.info(name).files[0].folder).is_dir():
        pytest.skip(f"{name} is not in DPAUDIT_DATA")
    frame, schema = dpaudit.datasets.load(name)
    presets = dpaudit.datasets.info(name).presets
    assert_like_dpaudit(frame, schema, next(iter(presets.values())), k=7)


def test_census_with_integer_division_bins():
    frame, schema = census(20_000, seed=3)
    assert ref.integer_bins(schema, ["INCTOT", "AGE", "HEALTH"]) == {"INCTOT": 10_000, "AGE": 10}
    assert_like_dpaudit(frame, schema, CENSUS_PRESET)
    assert_like_dpaudit(frame, schema, CENSUS_PRESET, k=3)


@pytest.mark.parametrize("t", [0.0, 0.2, 0.5, 1.0])
def test_flip_closed_forms(t):
    """Spec §5 on a balanced 2×2 table: U_MI^TVD = t²/2, U_TC (domain cells, k ≥ 4) = t, MI = ln 2 − H((1+t)/2)."""
    frame, schema = flip(200, t)
    protected, outcome, admissible = ref.criterion_columns(FLIP_CRITERION)
    assert ref.tvd(frame, protected, outcome, admissible) == pytest.approx(t * t / 2, abs=1e-15)
    assert ref.tc(frame, protected, outcome, admissible) == pytest.approx(t, abs=1e-15)
    p = (1 + t) / 2
    entropy = -sum(x * math.log(x) for x in (p, 1 - p) if x > 0)
    assert ref.mutual_information(frame, protected, outcome) == pytest.approx(math.log(2) - entropy, abs=1e-12)
    assert_like_dpaudit(frame, schema, (FLIP_CRITERION,))


def test_grouped_counts_give_the_row_level_values():
    """tvd_from_counts / tc_from_counts on already grouped counts (the benchmark's check of the
    DuckDB baseline) equal the values on the rows."""
    frame, _ = census(5_000, seed=1)
    bins = {"INCTOT": 10_000, "AGE": 10}
    grouped = ref.binned(frame, ["AGE", "HEALTH", "INCTOT"], bins).value_counts().rename("n").reset_index()
    grid = ref.count_grid(grouped, ["HEALTH"], ["INCTOT"], ["AGE"], weights="n")
    assert ref.tvd_from_counts(grid, 1) == pytest.approx(ref.tvd(frame, ["HEALTH"], ["INCTOT"], ["AGE"], bins=bins),
                                                         rel=1e-12)
    assert ref.tc_from_counts(grid, 1, 10) == pytest.approx(
        ref.tc(frame, ["HEALTH"], ["INCTOT"], ["AGE"], k=10, bins=bins), rel=1e-12)


def test_independent_and_empty_tables():
    rng = np.random.default_rng(0)
    independent = pd.DataFrame({"p": np.repeat(["a", "b"], 6), "o": np.tile(["x", "y", "z"], 4)})
    assert ref.tvd(independent, ["p"], ["o"]) == 0.0
    assert ref.tc(independent, ["p"], ["o"]) == 0.0
    empty = pd.DataFrame({"p": pd.Series([], dtype=object), "o": pd.Series([], dtype=object)})
    assert ref.tvd(empty, ["p"], ["o"]) == 0.0 and ref.tc(empty, ["p"], ["o"]) == 0.0
    # a block with one protected value contributes nothing (Pr(p|a) = 1)
    frame = pd.DataFrame({"a": [0] * 10 + [1] * 10, "p": ["u"] * 10 + list(rng.choice(["u", "v"], 10)),
                          "o": rng.choice(["x", "y"], 20)})
    only_block_1 = frame[frame["a"] == 1]
    assert ref.tvd(frame, ["p"], ["o"], ["a"]) == pytest.approx(0.5 * ref.tvd(only_block_1, ["p"], ["o"]), abs=1e-15)


def test_demographic_parity_is_fairlearns(adult_available):
    pytest.importorskip("fairlearn")
    frame, _ = dpaudit.datasets.load("adult")
    rates = (frame["income"] == ">50K").groupby(frame["sex"]).mean()
    assert ref.demographic_parity(frame, ["sex"], "income", ">50K") == pytest.approx(rates.max() - rates.min())
