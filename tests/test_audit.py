"""The audit API: exact and DP modes, the result object, schema handling, budget sharing."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from dpaudit import (
    Budget,
    BudgetError,
    Categorical,
    DPAuditError,
    Schema,
    SchemaError,
    audit,
    split_budget,
)


@pytest.fixture
def frame():
    rng = np.random.default_rng(3)
    n = 2000
    sex = rng.choice(["F", "M"], size=n)
    edu = rng.integers(0, 3, size=n)
    y = (rng.random(n) < np.where(sex == "M", 0.4, 0.2) + 0.1 * edu).astype(int)
    return pd.DataFrame({"sex": sex, "edu": edu, "y": y})


@pytest.fixture
def schema():
    return Schema({"sex": Categorical(["F", "M"]), "edu": Categorical([0, 1, 2]), "y": Categorical([0, 1])})


CRITERIA = ["sex ⊥ y", "sex ⊥ y | edu"]


def test_exact_mode_values_and_per_criterion(frame, schema):
    res = audit(frame, CRITERIA, schema=schema, exact=True, measures=("tvd",))
    tvd = res["tvd"]
    assert res.exact and not res.dp and res.n == 2000
    assert tvd.per_criterion is not None and len(tvd.per_criterion) == 2
    assert tvd.value == pytest.approx(sum(tvd.per_criterion))
    # per-criterion values equal the measure on a direct pandas crosstab (oracle on purpose)
    crosstab = pd.crosstab(frame.sex, frame.y).to_numpy()
    from dpaudit import u_mi_tvd

    assert tvd.per_criterion[0] == pytest.approx(u_mi_tvd(crosstab))
    assert tvd.release.sensitivity == pytest.approx(16 * 2 / 2000)
    assert tvd.extras["baseline"][0]["mi_bits"] == pytest.approx(tvd.extras["baseline"][0]["mi_nats"] / np.log(2))


def test_dp_mode_hides_exact_values(frame, schema):
    res = audit(frame, CRITERIA, schema=schema, epsilon=0.5, measures=("tvd",))
    tvd = res["tvd"]
    assert res.dp and not res.exact
    assert tvd.per_criterion is None and tvd.extras == {}
    assert tvd.release.scale == pytest.approx(16 * 2 / 2000 / 0.5)
    d = res.to_dict()
    assert "per_criterion" not in d["measures"]["tvd"] and d["dp"] is True
    assert set(d["measures"]["tvd"]) >= {"value", "epsilon", "sensitivity", "scale", "interval", "dp"}


def test_seeded_audit_reproducible_and_not_dp(frame, schema):
    a = audit(frame, CRITERIA, schema=schema, epsilon=1.0, seed=5, measures=("tvd",))
    b = audit(frame, CRITERIA, schema=schema, epsilon=1.0, seed=5, measures=("tvd",))
    assert a["tvd"].value == b["tvd"].value and not a.dp


def test_seeded_audit_gives_each_release_its_own_noise(frame, schema):
    """A seeded run is not DP, but its mechanisms must still draw independently: the standardised
    noise (released − exact) / scale of tvd and tc differs, and changes with the seed."""
    exact = audit(frame, CRITERIA, schema=schema, measures=("tvd", "tc"), exact=True)

    def draws(seed):
        res = audit(frame, CRITERIA, schema=schema, measures=("tvd", "tc"), epsilon=1.0, seed=seed)
        return [(res[m].value - exact[m].value) / res[m].release.scale for m in ("tvd", "tc")]

    tvd, tc = draws(5)
    assert abs(tvd - tc) > 1e-6
    assert draws(5) == [tvd, tc] and draws(6) != [tvd, tc]


def test_inferred_schema_is_marked_not_dp(frame):
    res = audit(frame, CRITERIA, schema="infer", epsilon=1.0, measures=("tvd",))
    assert not res.dp
    assert any("inferred from the data" in r for r in res["tvd"].release.reasons)
    assert res.to_dict()["schema"] == "data-derived (not DP)"


def test_missing_schema_is_an_error(frame):
    with pytest.raises(SchemaError, match="no schema given: declare the domains"):
        audit(frame, CRITERIA, exact=True, measures=("tvd",))


def test_unknown_measure(frame, schema):
    with pytest.raises(DPAuditError, match="unknown measure 'nope'; choose from: tvd"):
        audit(frame, CRITERIA, schema=schema, measures=["nope"], exact=True)


def test_shared_budget_refuses_second_audit(frame, schema):
    budget = Budget(1.0)
    audit(frame, CRITERIA, schema=schema, epsilon=0.75, budget=budget, measures=("tvd",))
    assert budget.remaining == 0.25
    with pytest.raises(BudgetError, match="asks for epsilon=0.5 but only 0.25"):
        audit(frame, CRITERIA, schema=schema, epsilon=0.5, budget=budget, measures=("tvd",))
    assert budget.remaining == 0.25


@pytest.mark.parametrize("eps", [0, -0.5, float("nan")])
def test_bad_epsilon(frame, schema, eps):
    with pytest.raises(DPAuditError, match="epsilon must be a positive finite number"):
        audit(frame, CRITERIA, schema=schema, epsilon=eps, measures=("tvd",))


def test_split_budget_rules():
    assert split_budget(0.9, ["tvd", "tc", "repair"]) == pytest.approx({"tvd": 0.3, "tc": 0.3, "repair": 0.3})
    with pytest.raises(DPAuditError, match="must sum to 1"):
        split_budget(1.0, ["tvd", "tc"], {"tvd": 0.5, "tc": 0.6})
    with pytest.raises(DPAuditError, match="one fraction per measure"):
        split_budget(1.0, ["tvd", "tc"], {"tvd": 1.0})
    with pytest.raises(DPAuditError, match="positive numbers"):
        split_budget(1.0, ["tvd", "tc"], {"tvd": 1.5, "tc": -0.5})


def test_result_prints_and_serialises(frame, schema):
    res = audit(frame, CRITERIA, schema=schema, exact=True, measures=("tvd",))
    text = str(res)
    assert "U_MI^TVD" in text and "sex ⊥ y | edu" in text and "explain trail" in text
    assert "curator-only" in text
    d = json.loads(res.to_json())
    assert d["criteria"] == CRITERIA and d["n"] == 2000 and d["mode"] == "exact"
    assert d["stages"][0].startswith("counted 2,000 rows")
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.n = 3  # frozen


def test_empty_data(schema):
    empty = pd.DataFrame({"sex": pd.Series([], dtype=object), "y": pd.Series([], dtype="int64")})
    with pytest.raises(DPAuditError, match="no rows"):
        audit(empty, "sex ⊥ y", schema=schema, exact=True, measures=("tvd",))


def test_file_input_matches_frame(frame, schema, tmp_path):
    path = tmp_path / "d.parquet"
    frame.to_parquet(path)
    assert audit(str(path), CRITERIA, schema=schema, exact=True, measures=("tvd",))["tvd"].value == pytest.approx(
        audit(frame, CRITERIA, schema=schema, exact=True, measures=("tvd",))["tvd"].value
    )


# -- typed measures, validation before counting, round-trip of the result -----------------------------


@pytest.fixture
def counting_spy(monkeypatch):
    """Replace the counting step by a spy: a test that must fail before any row is read checks it."""
    calls = []

    def spy(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the data were counted before the bad option was refused")

    import sys

    monkeypatch.setattr(sys.modules["dpaudit.audit"], "count_tables", spy)  # the module, not the function
    monkeypatch.setattr(sys.modules["dpaudit.audit"], "infer_schema", spy)
    return calls


@pytest.mark.parametrize("kwargs, message", [
    ({"measures": ["tc"], "k": 0}, "k must be an integer >= 1"),
    ({"measures": ["tc"], "cells": "bogus"}, "cells must be one of domain, observed"),
    ({"measures": ["tc"], "name_cells": -1}, "name_cells must be an integer >= 0"),
    ({"measures": ["tc"], "cells": "observed", "name_cells": 2, "epsilon": 1.0}, "naming top cells privately"),
    ({"measures": ["repair"], "semantics": "foo"}, "semantics must be one of ci, bag, set"),
    ({"measures": ["repair"], "time_limit": -1}, "time_limit must be a finite number > 0"),
    ({"measures": ["repair"], "work_limit": -1}, "work_limit must be a finite number > 0"),
    ({"measures": ["tvd"], "k": 3}, "option k configures tc, which is not among the measures"),
    ({"measures": ["tvd", "nope"]}, "unknown measure 'nope'"),
    ({"measures": []}, "no measures requested"),
    ({"measures": ["tc", "tc"]}, "requested twice"),
    ({"epsilon": -1.0}, "epsilon must be a positive finite number"),
    ({"epsilon": 1.0, "measures": ["tvd"], "split": {"tvd": 2.0}}, "must sum to 1"),
    ({"split": {"tvd": 1.0}}, "split shares ε between measures: it needs epsilon"),
    ({"epsilon": 1.0, "budget": Budget(0.5)}, "asks for epsilon=1"),
    ({"seed": -3, "epsilon": 1.0}, "seed must be a non-negative integer or None"),
    ({"schema": 42, "exact": True}, "schema must be a Schema, 'infer' or None"),
    ({"schema": None, "exact": True}, "no schema given"),
    ({"epsilon": 1.0, "budget": "x"}, "budget must be a dpaudit Budget"),
    ({"budget": Budget(1.0)}, "budget records the ε of DP releases: it needs epsilon"),
    ({"seed": 3}, "seed fixes the noise of DP releases: it needs epsilon"),
    ({"engine": "nope"}, "engine must be one of duckdb, spark"),
    ({"progress": 42}, "progress must be a callable"),
    ({"measures": None}, "say how private the audit is: epsilon=<float>"),
    ({"measures": 42}, "measures must be a measure name, a Measure, or a list of them"),
])
def test_every_option_is_refused_before_any_row_is_read(frame, schema, counting_spy, kwargs, message):
    options = {"schema": schema, **kwargs}
    with pytest.raises(DPAuditError, match=message):
        audit(frame, CRITERIA, **options)
    assert counting_spy == []


def test_bad_criteria_are_refused_before_any_row_is_read(frame, schema, counting_spy):
    with pytest.raises(DPAuditError, match="has no outcome attribute"):
        audit(frame, "sex ⊥ ", schema=schema, exact=True, measures=("tvd",))
    assert counting_spy == []


@pytest.fixture
def reading_spy(monkeypatch):
    """Replace the step of count_tables that reads rows (and every registered engine's copy of the data
    into it, ``Engine.to_frame``) by a spy: the checks count_tables makes on the criteria (columns present,
    declared, table size) come before it."""
    calls = []

    def spy(*args, **kwargs):
        calls.append(args)
        raise AssertionError("rows were read (or copied into an engine) before the bad criterion was refused")

    import sys

    from dpaudit.counting import ENGINES

    monkeypatch.setattr(sys.modules["dpaudit.counting.count"], "_tally", spy)
    for engine in ENGINES.values():
        monkeypatch.setattr(engine, "to_frame", spy)  # the registered instance: what audit() calls
    return calls


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
@pytest.mark.parametrize("criterion, declared, message", [
    ("sex ⊥ nope", None, "nope"),  # not a column of the data
    ("sex ⊥ y", {"sex"}, "y"),  # a column the schema does not declare
    ("sex ⊥ y | edu", None, "more than the limit of 3"),  # DPAUDIT_MAX_CELLS=3
])
def test_criteria_are_checked_before_any_row_is_read(frame, schema, reading_spy, monkeypatch, engine, criterion,
                                                     declared, message):
    if "limit" in message:
        monkeypatch.setenv("DPAUDIT_MAX_CELLS", "3")
    used = schema if declared is None else Schema({c: schema[c] for c in declared})
    with pytest.raises(DPAuditError, match=message):
        audit(frame, criterion, schema=used, engine=engine, exact=True, measures=("tvd",))
    assert reading_spy == []


@pytest.mark.parametrize("kwargs, message", [
    ({"semantics": "ci"}, "semantics 'ci' has no tuple-level WCNF encoding"),
    ({"semantics": "foo"}, "semantics must be one of ci, bag, set"),
    ({"max_clauses": "x"}, "max_clauses must be an integer >= 1"),
    ({"max_clauses": -1}, "max_clauses must be an integer >= 1"),
])
def test_wcnf_options_are_refused_before_any_row_is_read(frame, schema, counting_spy, kwargs, message, tmp_path):
    from dpaudit.audit import repair_wcnf

    with pytest.raises(DPAuditError, match=message):
        repair_wcnf(frame, CRITERIA, schema=schema, path=str(tmp_path / "out.wcnf"), **kwargs)
    assert counting_spy == [] and list(tmp_path.iterdir()) == []


def test_measure_objects_and_names_agree(frame, schema):
    from dpaudit.measures import Repair, TopContribution

    by_name = audit(frame, CRITERIA, schema=schema, measures=("tc", "repair"), k=3, semantics="bag", exact=True)
    by_object = audit(frame, CRITERIA, schema=schema, measures=[TopContribution(k=3), Repair(semantics="bag")], exact=True)
    assert by_name.to_dict() == by_object.to_dict()
    assert by_object["tc"].options == {"k": 3, "cells": "domain", "name_cells": None}


@pytest.mark.parametrize("epsilon", [None, 2.0])
def test_result_round_trips_through_json(frame, schema, epsilon):
    from dpaudit.results import AuditResult

    res = audit(frame, CRITERIA, schema=schema, measures=("tvd", "tc", "repair"), epsilon=epsilon, exact=epsilon is None, seed=1 if epsilon else None,
                name_cells=3)
    doc = json.loads(res.to_json())
    back = AuditResult.from_dict(doc)
    assert back.to_dict() == doc and str(back) == str(res)
    assert back["tc"].details == res["tc"].details and back["repair"].details == res["repair"].details


@pytest.mark.parametrize("epsilon", [None, 2.0])
def test_labels_that_read_like_numbers_survive_the_json_round_trip(epsilon):
    """Categories spelled "nan", "inf", "-inf" stay text when a saved document is read back (the JSON
    writes non-finite numbers as those strings; only numbers are restored)."""
    from dpaudit.report.json import read_json, render_json

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"s": rng.choice(["nan", "inf", "M"], 400), "y": rng.choice(["-inf", "b"], 400),
                          "a": rng.choice(["nan", "x"], 400)})
    schema = Schema({"s": Categorical(["nan", "inf", "M"]), "y": Categorical(["-inf", "b"]),
                     "a": Categorical(["nan", "x"])})
    res = audit(frame, "s ⊥ y | a", schema=schema, measures=("tvd", "tc", "repair"), epsilon=epsilon, exact=epsilon is None, seed=1 if epsilon else None,
                semantics="bag")
    back = read_json(render_json(res))
    assert back.to_dict() == res.to_dict() and str(back) == str(res)
    labels = {v for cell in back["tc"].details.top_cells for side in (cell.protected, cell.outcome, cell.admissible)
              for v in side.values()}
    assert labels <= {"nan", "inf", "-inf", "M", "b", "x"} and all(isinstance(v, str) for v in labels)


def test_exact_by_name_equals_epsilon_none_and_refuses_epsilon():
    df = pd.DataFrame({"sex": ["F", "M"] * 20, "y": [0, 1, 1, 1] * 10})
    s = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1])})
    named = audit(df, "sex ⊥ y", schema=s, exact=True, measures=("tvd",))
    assert named.exact and named["tvd"].value == audit(df, "sex ⊥ y", schema=s, exact=True, measures=("tvd",))["tvd"].value
    with pytest.raises(DPAuditError, match="pass one of them"):
        audit(df, "sex ⊥ y", schema=s, exact=True, epsilon=1.0, measures=("tvd",))
    with pytest.raises(DPAuditError, match="exact must be True or False"):
        audit(df, "sex ⊥ y", schema=s, exact="yes", measures=("tvd",))
