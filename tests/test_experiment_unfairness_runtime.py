"""The unfairness study's runtime (exp1/exp2) and chunked repair (plot_3/plot_4) experiments: the paper's
chunked MaxSAT against known optima, the claims' rules on their controls, the paper-value columns."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.unfairness_study import study_modules

pytest.importorskip("matplotlib")
pytest.importorskip("pysat")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def study():
    """The study's modules, imported the way run.py imports them (its folder on sys.path)."""
    with study_modules("chunked", "common", "paper", "runtime") as modules:
        yield modules


# -- the paper's method: MaxSAT on 100-row chunks ------------------------------------------------------
@pytest.mark.parametrize("seed", range(12))
def test_maxsat_block_equals_the_exact_bag_repair(study, seed):
    from dpaudit.measures.repair import repair_block

    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 4, size=(int(rng.integers(2, 4)), int(rng.integers(2, 4))))
    cost, proven = study["chunked"].maxsat_block(counts, work_limit=30.0)
    assert proven
    assert cost == pytest.approx(repair_block(counts, "bag").value)


def test_maxsat_block_known_values(study):
    block = study["chunked"].maxsat_block
    assert block(np.array([[3, 0], [0, 0]]), 30.0) == (0.0, True)  # one protected value: a product already
    assert block(np.array([[2, 2], [2, 2]]), 30.0) == (0.0, True)  # equal count vectors: no repair
    assert block(np.array([[1, 0], [0, 1]]), 30.0) == (1.0, True)  # delete one of the two tuples


def test_maxsat_block_budget_is_work_not_time(study):
    # a budget of (almost) no propagations stops RC2 before it proves anything: unproven, a lower bound
    counts = np.array([[5, 3, 2], [1, 4, 6], [3, 3, 3]])
    cost, proven = study["chunked"].maxsat_block(counts, work_limit=1e-9)
    from dpaudit.measures.repair import repair_block

    assert not proven and cost <= repair_block(counts, "bag").value


def test_chunked_maxsat_sum_equals_the_exact_chunked_repair(study):
    import pandas as pd

    from dpaudit.criteria import parse_criteria
    from dpaudit.measures import Repair
    from dpaudit.schema import Categorical, Schema

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"p": rng.integers(0, 3, 250), "o": rng.integers(0, 2, 250), "a": rng.integers(0, 2, 250)})
    schema = Schema({c: Categorical([0, 1, 2] if c == "p" else [0, 1]) for c in frame})
    crits = list(parse_criteria(["p ⊥ o | a", "p ⊥ o"]))
    tables = study["chunked"].chunked_tables(frame, schema, crits)
    assert tables[0].counts.shape[0] == 3 * 2  # 3 chunks × 2 admissible values
    values, proven = study["chunked"].maxsat_repair(tables, 30.0)
    assert proven
    assert values == pytest.approx(Repair(semantics="bag").assess(tables, details=False).per_criterion)


def test_kendall_and_paper_labels(study):
    ch = study["chunked"]
    assert ch.kendall([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert ch.kendall([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(ch.kendall([1, 1, 1], [1, 2, 3]))
    from dpaudit.criteria import parse_criteria

    crit = parse_criteria(["sex ⊥ income | hours-per-week"])[0]
    assert ch.paper_label(crit) == "sex , income | hours-per-week"


# -- claims on their controls ----------------------------------------------------------------------
def _runtime_rows(slow: float, tvd: float) -> list[dict]:
    """Grid points with planted timings: the chunked U_R ``slow`` s, U_MI^TVD ``tvd`` s, U_TC 1e-4 s."""
    rows = []
    for k in range(5):
        r = {"series": "rows", "dataset": "adult", "rows": 1000 * (k + 1), "criteria": 4, "grid_rows": [1000 * (k + 1)],
             "count": 1e-3, "tvd": tvd, "tc": 1e-4, "tc_again": 1e-4, "repair_bag": 1e-2, "maxsat": slow if k == 0 else None,
             "maxsat_proven": True if k == 0 else None, "repair_bag_proven": True}
        for key in ("count", "tvd", "tc", "tc_again", "repair_bag", "maxsat"):
            r[f"{key}_band"] = [r[key], r[key]] if r[key] is not None else None
        rows.append(r)
    return rows


def _verdicts(study, rows):
    rt = study["runtime"]
    return {c["claim"]: c["verdict"] for c in rt.claims({"rows": rows, "summary": rt.summarise(rows)})}


def test_runtime_claims_on_planted_timings(study):
    got = _verdicts(study, _runtime_rows(slow=10.0, tvd=3e-4))  # 10 s vs 1.3 ms; TVD 3× TC
    slower = next(k for k in got if "10²–10³" in k)
    fastest = next(k for k in got if "fastest" in k)
    assert got[slower] == "reproduced" and got[fastest] == "reproduced"
    null = _verdicts(study, _runtime_rows(slow=1.1e-3, tvd=1e-4))  # the claims false by construction
    assert null[slower] != "reproduced" and null[fastest] != "reproduced"


def test_runtime_claims_on_their_control_are_not_reproduced(study):
    # the control (U_TC timed twice) put in place of the data: ratio 1, so neither claim is reproduced
    rows = _runtime_rows(slow=10.0, tvd=3e-4)
    for r in rows:
        r["tvd"] = r["tc_again"]
        if r["maxsat"] is not None:
            r["maxsat"] = r["count"] + r["tc_again"]
    got = _verdicts(study, rows)
    assert all(v != "reproduced" for v in got.values())


def _paper_rows(study, unchunked: dict, chunked: dict) -> list[dict]:
    rows = []
    for name in unchunked:
        for i, (u, c) in enumerate(zip(unchunked[name], chunked[name])):
            rows.append({"dataset": name, "unchunked": u, "chunked": c, "paper_unchunked": None,
                         "difference_unchunked": None, "unchunked_seconds": 0.01, "chunked_seconds": 0.02,
                         "maxsat_seconds": 1.0, "maxsat_proven": True, "criterion": str(i)})
    return rows


def _chunked_result(study, rows):
    ch = study["chunked"]
    empty = {"median_abs_relative_error": 0.1, "chunked_above_exact": 1, "chunked_below_exact": 1, "proven": 2}
    return {"rows": [], "paper_rows": rows, "summary": {"paper_config": ch.tau_summary(rows), "bag": empty,
                                                         "ci": empty, "maxsat_equals_exact": True,
                                                         "maxsat_unproven": 0}}


def test_chunked_tau_claim_planted_and_control(study):
    ch = study["chunked"]
    names = ("adult", "census", "compas", "healthcare")
    # consecutive datasets rank their criteria in opposite orders, so the control (next dataset's values) is τ = −1
    unchunked = {n: [50.0, 150.0, 250.0, 350.0][:: 1 if k % 2 == 0 else -1] for k, n in enumerate(names)}
    agree = {n: [v * 1.3 + 7 for v in unchunked[n]] for n in names}  # the same ranking in every dataset
    got = ch.claims(_chunked_result(study, _paper_rows(study, unchunked, agree)))[0]
    assert got["verdict"] == "reproduced"
    # the control in place of the data: another dataset's chunked values (unrelated by construction)
    shifted = {n: agree[names[(k + 1) % len(names)]] for k, n in enumerate(names)}
    control = ch.claims(_chunked_result(study, _paper_rows(study, unchunked, shifted)))[0]
    assert control["verdict"] != "reproduced"
    reverse = {n: [-v for v in unchunked[n]] for n in names}  # chunking reverses the order: the claim false
    assert ch.claims(_chunked_result(study, _paper_rows(study, unchunked, reverse)))[0]["verdict"] == "differs"


def test_paper_tau_from_the_paper_values(study):
    ch, paper = study["chunked"], study["paper"]
    rows = _paper_rows(study, {"adult": [1, 2, 3, 4]}, {"adult": [1, 2, 3, 4]})
    assert ch.tau_summary(rows)["paper_tau"]["adult"] == pytest.approx(
        ch.kendall(list(paper.CHUNKED_1K_UNCHUNKED["adult"]), list(paper.CHUNKED_1K_CHUNKED["adult"])))


# -- the experiments on real data (small grids): the paper-value columns -------------------------------
def test_runtime_quick_run_and_paper_columns(study, data_root, tmp_path, monkeypatch):
    rt, paper, common = study["runtime"], study["paper"], study["common"]
    monkeypatch.setattr(rt, "QUICK_GRIDS", {"healthcare": (100, 1_000)})
    monkeypatch.setattr(rt, "QUICK_MAXSAT_POINTS", {"healthcare": ((100, 1), (1_000, 1))})
    monkeypatch.setattr(rt, "QUICK_REPEATS", 2)
    result = rt.run(common.Config(out=tmp_path, quick=True))
    assert (tmp_path / "runtime.png").stat().st_size > 10_000
    point = next(r for r in result["rows"] if r["series"] == "rows" and r["grid_rows"] == [1_000])
    assert point["rows"] == 887 and point["capped"]  # Healthcare's joined rows cap the paper's 1,000
    beside = rt.tables(result)[0][1]
    want = dict(paper.EXP1_RUNTIME["healthcare"])
    assert {b["rows"]: b["paper_maxsat"] for b in beside} == want
    assert result["summary"]["paper_fast_seconds"] == {k: list(v) for k, v in paper.EXP1_FAST_SECONDS.items()}
    assert all(r["maxsat_proven"] for r in result["rows"] if r["maxsat"] is not None)
    for c in rt.claims(result):
        assert c["verdict"] in common.VERDICTS


def test_chunked_paper_configuration_columns(study, data_root, tmp_path, monkeypatch):
    ch, paper, common = study["chunked"], study["paper"], study["common"]
    monkeypatch.setattr(ch, "QUICK_SEEDS", 2)
    config = common.Config(out=tmp_path, quick=True, datasets=("healthcare",))
    rows = ch._paper_config("healthcare", config)
    labels = [r["paper_label"] for r in rows]
    assert labels == sorted(labels)  # alphabetical, as the paper's plot
    assert [r["paper_unchunked"] for r in rows] == list(paper.CHUNKED_1K_UNCHUNKED["healthcare"])
    assert [r["paper_chunked"] for r in rows] == list(paper.CHUNKED_1K_CHUNKED["healthcare"])
    for r in rows:
        assert r["difference_unchunked"] == pytest.approx(r["unchunked"] - r["paper_unchunked"])
        assert r["maxsat_proven"] and r["maxsat_equals_exact"]
        assert r["unchunked_range"][0] <= r["unchunked"] <= r["unchunked_range"][1]
