"""The unfairness study's accuracy experiments: exp3 (epsilon.py, error vs ε) and exp5/exp6 (topk.py, U_TC
vs k) — their claims run on their controls, the paper-value columns, and the statistics on known truth."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from tests.unfairness_study import study_modules

pytest.importorskip("matplotlib")



@pytest.fixture(scope="module")
def mods():
    with study_modules("common", "epsilon", "paper", "topk") as modules:
        yield modules


def _seeded_errors(seed: int = 7):
    """A seeded stand-in for OpenDP's unseeded Laplace draws (tests only, not a release)."""
    rng = np.random.default_rng(seed)

    def errors(value, sensitivity, epsilon, draws):
        noisy = value + rng.laplace(0.0, sensitivity / epsilon, draws)
        return np.abs(noisy - value) / abs(value) if value != 0 else np.full(draws, math.nan)

    return errors


def _run_seeded(mods, name, out):
    """``name``'s quick run on Healthcare and COMPAS with the seeded draws in place of OpenDP's."""
    mp = pytest.MonkeyPatch()
    mp.setattr(mods[name], "relative_errors", _seeded_errors())
    try:
        return mods[name].run(mods["common"].Config(out=out, quick=True, datasets=("healthcare", "compas")))
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def eps_result(mods, data_root, tmp_path_factory):
    return _run_seeded(mods, "epsilon", tmp_path_factory.mktemp("eps"))


@pytest.fixture(scope="module")
def topk_result(mods, data_root, tmp_path_factory):
    return _run_seeded(mods, "topk", tmp_path_factory.mktemp("topk"))


def _verdicts(claims):
    return {c["claim"]: c["verdict"] for c in claims if c["verdict"] != "measured"}


def _mechanism(claims):
    """The claims that follow from the noise mechanism: {claim text before its rule: (holds?, control holds?)}."""
    out = {}
    for c in claims:
        if "a property of the mechanism" in c["note"]:
            assert c["verdict"] == "measured"  # never "reproduced": no data control can fail them
            out[c["claim"].split(" (rule:")[0]] = (c["dpaudit"].startswith("holds"), c["note"].endswith("holds there"))
    return out


# -- (1) each claim and its control; the mechanism's claims are measurements -------------------------
def test_epsilon_claims_on_real_data_and_on_their_controls(mods, eps_result):
    eps = mods["epsilon"]
    assert not _verdicts(eps.claims(eps_result))
    real = _mechanism(eps.claims(eps_result))
    assert set(real) == {"relative error falls as ε grows", "U_R is the most accurate",
                         "U_TC is the least accurate (small groups)"}
    assert all(v == (True, False) for v in real.values()), real  # hold on the data, fail on the mechanism control
    control = copy.deepcopy(eps_result)  # the control's statistic in place of the data's
    s = control["summary"]
    for f in s["falls"].values():
        f["worst_ratio"] = f["control_worst_ratio"]
    for r in s["ranking"].values():
        r["paper"] = r["control"]
    assert all(not held for held, _ in _mechanism(eps.claims(control)).values())


def test_epsilon_controls_lack_the_claimed_property(mods, eps_result):
    """The fixed-scale releases do not fall with ε; the equal-accuracy releases rank no measure 2× apart
    in expectation (their scale is the same share c of every value)."""
    rows = eps_result["rows"]
    for f in eps_result["summary"]["falls"].values():
        assert 0.3 < f["control_min_ratio"] <= f["control_worst_ratio"] < 3.0
    for name, r in eps_result["summary"]["ranking"].items():
        sel = {x["measure"]: x for x in rows if x["dataset"] == name and x["epsilon"] == 1.0
               and x["measure"] in mods["epsilon"].PAPER_MEASURES}
        c = float(np.median([x["expected_relative_error"] for x in sel.values()]))
        assert all(0.3 * c < v < 3 * c for v in r["control"].values())


def test_topk_claim_on_real_data_and_on_its_control(mods, topk_result):
    tk = mods["topk"]
    assert not _verdicts(tk.claims(topk_result))
    real = _mechanism(tk.claims(topk_result))
    assert real == {"with the paper's sensitivity, U_TC's relative error grows with k": (True, False)}
    control = copy.deepcopy(topk_result)
    for g in control["summary"]["error_vs_k"].values():
        g["paper"] = g["control"]
    assert all(not held for held, _ in _mechanism(tk.claims(control)).values())


def test_topk_control_error_does_not_grow_with_k(topk_result):
    """Frozen sensitivity: the expected error b/M falls as M(k) grows, so it never rises with k."""
    for name in ("healthcare", "compas"):
        sel = [r for r in topk_result["rows"] if r["dataset"] == name]
        frozen = sel[0]["paper_sensitivity"]
        expected = [frozen / r["paper_value"] for r in sel]
        assert all(b <= a + 1e-12 for a, b in zip(expected, expected[1:]))


# -- (2) the paper-value columns are paper.py's --------------------------------------------------------
def test_epsilon_paper_columns(mods, eps_result):
    paper = mods["paper"]
    beside = mods["epsilon"].tables(eps_result)[0][1]
    assert beside
    for r in beside:
        at10, at01 = paper.EXP3_ERROR[r["measure"]][r["dataset"]]
        assert r["paper"] == (at10 if r["epsilon"] == 10.0 else at01)
        assert r["difference"] == pytest.approx(r["dpaudit"] - r["paper"])
    assert {(r["dataset"], r["measure"]) for r in beside} == {(n, m) for m in ("tvd", "tc", "repair")
                                                               for n in ("healthcare", "compas")}


def test_topk_paper_columns(mods, topk_result):
    paper = mods["paper"]
    beside = mods["topk"].tables(topk_result)[0][1]
    assert {r["dataset"] for r in beside} == {"healthcare", "compas"}
    for r in beside:
        flat = paper.EXP5_TC[r["dataset"]]
        assert r["paper_value"] == (f"{flat[0]} → {flat[1]}" if isinstance(flat, tuple) else f"{flat}")
        lo, hi = paper.EXP6_TC_ERROR[r["dataset"]]
        assert r["paper_error"] == f"{lo:.3g}–{hi:.3g}"
        assert r["difference"] == pytest.approx(r["value"] - (flat[-1] if isinstance(flat, tuple) else flat))


# -- (3) the statistics on known truth and null data ---------------------------------------------------
def test_paper_tc_sensitivity_is_the_stated_formula(mods):
    from dpaudit.criteria import Criterion

    crits = [Criterion(("p",), ("o",)), Criterion(("p",), ("o",), ("a",))]
    assert mods["topk"].paper_tc_sensitivity(crits, 1000, 500) == pytest.approx(3 * 500 / 1000 + 7 * 500 / 1000 + 1.0)


def test_topk_values_saturate_at_the_sum_of_all_cells(mods, topk_result):
    """Known truth: past the number of cells U_TC is the sum of every (observed) cell's MD, computed here
    straight from the count tables."""
    common = mods["common"]
    for name in ("healthcare", "compas"):
        total = total_obs = 0.0
        for t in common.tables_of(name, True):
            c = np.asarray(t.counts, dtype=float).reshape(-1, *t.counts.shape[-2:])
            na = c.sum(axis=(1, 2), keepdims=True)
            md = np.abs(c - c.sum(axis=2, keepdims=True) * c.sum(axis=1, keepdims=True) / np.where(na > 0, na, 1))
            md /= c.sum()
            total += md.sum()
            total_obs += md[c > 0].sum()
        sel = [r for r in topk_result["rows"] if r["dataset"] == name]
        sat = topk_result["summary"]["value_saturates_at_k"][name]
        for r in sel:
            if r["k"] >= sat:
                assert r["value"] == pytest.approx(total, rel=1e-12)
                assert r["paper_value"] == pytest.approx(total_obs, rel=1e-12)
        assert all(a["value"] <= b["value"] + 1e-12 for a, b in zip(sel, sel[1:]))


def test_ranking_rule_on_planted_and_null_errors(mods):
    ranks = mods["epsilon"].ranks
    planted = {"tvd": 0.1, "tc_paper": 5.0, "repair_chunked": 0.001}
    assert ranks(planted, "repair_chunked", smallest=True) == (True, pytest.approx(100.0))
    assert ranks(planted, "tc_paper", smallest=False) == (True, pytest.approx(50.0))
    null = {"tvd": 1.0, "tc_paper": 1.2, "repair_chunked": 0.9}
    assert not ranks(null, "repair_chunked", smallest=True)[0]
    assert not ranks(null, "tc_paper", smallest=False)[0]


def test_epsilon_errors_follow_the_laplace_scale(mods, eps_result):
    """Known truth: E|Lap(b)|/M = b/M; the rows' expected error is the sensitivity over ε·M and the mean of
    the releases sits within a factor 3 of it (10 releases); the noise scale is sensitivity / ε."""
    for r in eps_result["rows"]:
        assert r["scale"] == pytest.approx(r["sensitivity"] / r["epsilon"])
        assert r["expected_relative_error"] == pytest.approx(r["scale"] / r["value"])
        assert r["expected_relative_error"] / 3 < r["mean_relative_error"] < 3 * r["expected_relative_error"]
        lo, hi = r["error_interval"]
        assert lo <= r["median_relative_error"] <= hi
    tc = {r["measure"]: r for r in eps_result["rows"] if r["dataset"] == "healthcare" and r["epsilon"] == 1.0}
    assert tc["tc_paper"]["sensitivity"] == pytest.approx(4 * (7 * 500 / 887 + 0.5))
    assert tc["repair_chunked"]["sensitivity"] == 8.0


def test_code_tc_sensitivity_is_the_reference_codes(mods):
    """tuple_contribution.py: |F|·(4k/(m − 1) + 2) with m the smallest observed block of the conditional
    criteria, |F|·(3k/n + 2) when there is none (or m = 1)."""
    from types import SimpleNamespace

    from dpaudit.criteria import Criterion

    cond = SimpleNamespace(criterion=Criterion(("p",), ("o",), ("a",)), n=30,
                           counts=np.array([[[5, 5], [5, 5]], [[0, 0], [0, 0]], [[3, 2], [4, 1]]]))
    plain = SimpleNamespace(criterion=Criterion(("p",), ("o",)), n=30, counts=np.array([[10, 5], [5, 10]]))
    code = mods["topk"].code_tc_sensitivity
    assert code([cond, plain], 7) == pytest.approx(2 * (4 * 7 / (10 - 1) + 2))  # the empty block is not observed
    assert code([plain], 7) == pytest.approx(3 * 7 / 30 + 2)
