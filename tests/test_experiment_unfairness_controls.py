"""The unfairness study's verdict rules against counter-examples an outside check built: data on which a
claim is false by construction must not come out "reproduced" (ties a hair below a threshold, one
criterion deciding a median, one measure's control cancelling another's, a control that cannot be
built, a curve that does not grow), and data on which it is true still can.

Each test takes the committed full-run result of an experiment (``docs/results/unfairness/*.json``),
puts the counter-example's statistics in place of the data's, and reads the verdict off ``claims``.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from tests.unfairness_study import study_modules

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results" / "unfairness"


@pytest.fixture(scope="module")
def mods():
    with study_modules("chunked", "common", "fidelity", "flip", "usecase") as modules:
        yield modules


def _result(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))


def _verdict(claims: list[dict], starts: str) -> str:
    (row,) = [c for c in claims if c["claim"].startswith(starts)]
    return row["verdict"]


def test_at_least_and_control_meets(mods):
    common = mods["common"]
    assert common.at_least(0.7999999999999999, 0.8) and not common.at_least(math.nan, 0.0)
    assert not common.at_least(None, 0.0)
    # a control passes when 5 % of its draws reach the rule and the data's own value (a permutation test)
    assert common.control_meets([0.6] * 5 + [0.2] * 15, 0.5)
    assert not common.control_meets([0.6] * 5 + [0.2] * 15, 0.5, data=0.9)
    assert common.control_meets([0.9] + [0.0] * 19, 0.5, data=0.9)  # 1 of 20 = 5 %
    assert not common.control_meets([0.0] * 20, 0.5, data=0.9)
    assert common.control_meets([], 0.5) is None
    assert common.control_meets([0.0] * 5, 0.5, data=0.9)  # 5 draws cannot make a 5 % test: counts as passing


def test_fidelity_rank_claim_whose_shuffles_tie_the_threshold_is_not_reproduced(mods):
    """Spearman ρ = 0.8 on four criteria comes back as 0.7999999999999999: a control at that value passes."""
    fidelity = mods["fidelity"]
    result = copy.deepcopy(_result("fidelity"))
    c = result["summary"]["tc_dp_gap"]
    c["rho"], c["control_rhos"] = 0.8, [0.7999999999999999] * 10 + [0.4] * 10
    c["control_rho_median"] = 0.6
    claim = "U_TC (the paper's: observed cells) grows monotonically"
    assert _verdict(fidelity.claims(result), claim) == "not distinguished from its control"
    c["rho"] = 1.0  # the data beat every shuffle
    assert _verdict(fidelity.claims(result), claim) == "reproduced"
    c["control_rhos"] = [1.0] + [0.4] * 19  # one shuffle of 20 (5 %) reaches the data's ρ
    assert _verdict(fidelity.claims(result), claim) == "not distinguished from its control"


def test_fidelity_planted_median_counts_undefined_criteria_as_failing(mods):
    """One-row blocks make a measure constant over λ (ρ undefined) on most criteria: one defined ρ = 1
    must not decide the median."""
    fidelity = mods["fidelity"]
    assert fidelity._median([1.0, math.nan, None, math.nan]) == -1.0
    assert fidelity._median([1.0, 1.0, 1.0, math.nan]) == 1.0


def test_usecase_one_measures_control_does_not_cancel_anothers(mods):
    """Each measure is its own claim; a measure whose shuffled τ reaches the data's is not reproduced,
    whatever the other measure's control does."""
    usecase = mods["usecase"]
    result = copy.deepcopy(_result("usecase"))
    s = result["summary"]
    for n in s["judged"]:
        for k in usecase.RULED:
            t = s["datasets"][n]["tau"][k]
            t["tau"], t["control_taus"] = 1.0, [0.0] * 20  # data τ = 1, no shuffle reaches it
    claims = usecase.claims(result)
    assert _verdict(claims, "U_MI^TVD ranks") == "reproduced"
    assert _verdict(claims, "the paper's U_TC ranks") == "reproduced"
    first = s["judged"][0]
    s["datasets"][first]["tau"]["tvd"]["control_taus"] = [1.0] * 2 + [0.0] * 18  # 10 % of shuffles reach τ = 1
    claims = usecase.claims(result)
    assert _verdict(claims, "U_MI^TVD ranks") == "not distinguished from its control"
    assert _verdict(claims, "the paper's U_TC ranks") == "reproduced"


def test_chunked_rank_claim_without_a_second_dataset_is_not_run(mods):
    chunked = mods["chunked"]
    result = copy.deepcopy(_result("chunked"))
    pc = result["summary"]["paper_config"]
    pc["tau"] = {"adult": 1.0}
    pc["mean_tau"], pc["control_tau"], pc["control_mean_tau"] = 1.0, {}, math.nan
    assert _verdict(chunked.claims(result), "the 100-row chunked U_R ranks") == "not run"


@pytest.mark.parametrize("curve, linear", [
    (lambda t: 100 + 400 * t, True),  # rises linearly: near-linear
    (lambda t: 500 - 400 * t, False),  # falls
    (lambda t: 300.0, False),  # flat
    (lambda t: 100 + 400 * t + (60 if round(10 * t) % 2 else -60), False),  # zigzag beyond the chunking noise
    (lambda t: 100 + 400 * math.sqrt(t), False),  # rises, concave
    # a second check's: mean lift ≈ 0, yet not a line
    (lambda t: 100 + 400 * (0.45 + 0.45 * math.tanh(12 * (t - 0.45)) / math.tanh(12 * 0.45)), False),  # an S
    (lambda t: 100 + (400 if t > 0.45 else 0), False),  # a single step
    (lambda t: 100 + 400 * ((t - 0.45) ** 3 + 0.45 ** 3) / (2 * 0.45 ** 3), False),  # a cubic
])
def test_flip_near_linear_rule_needs_a_rising_curve(mods, curve, linear):
    flip = mods["flip"]
    ts = [round(0.1 * i, 1) for i in range(11)]
    values = [curve(t) for t in ts]
    noise = 20.0  # the spread of the chunked values at t = 0
    shape = flip.shape(flip.mean_lift(ts, values), flip.grows(ts, values, noise), flip.largest_deviation(ts, values))
    assert (shape == "near-linear") is linear, shape


def test_flip_claim_on_a_falling_chunked_curve_differs(mods):
    """The committed flip result with its chunked U_R reversed (falling with t) is not near-linear growth."""
    flip = mods["flip"]
    result = copy.deepcopy(_result("flip"))
    rows = result["rows"]
    ts = [r["t"] for r in rows]
    values = [r["chunked_bag"] for r in rows][::-1]
    spread = rows[0]["chunked_bag_range"][1] - rows[0]["chunked_bag_range"][0]
    s = result["summary"]
    s["mean_lift"]["chunked_bag"] = flip.mean_lift(ts, values)
    s["grows"]["chunked_bag"] = flip.grows(ts, values, spread)
    s["largest_deviation"]["chunked_bag"] = flip.largest_deviation(ts, values)
    s["shape"]["chunked_bag"] = flip.shape(s["mean_lift"]["chunked_bag"], s["grows"]["chunked_bag"],
                                           s["largest_deviation"]["chunked_bag"])
    assert s["shape"]["chunked_bag"] == "not increasing"
    assert _verdict(flip.claims(result), "U_R grows near-linearly") == "differs"


def test_flip_ratio_survives_a_zero_mutual_information(mods):
    """A level whose MI is 0 (no dependence) is left out of U_MI^TVD / MI instead of dividing by zero."""
    tvd_over_mi = mods["flip"].tvd_over_mi
    rows = [{"t": 0.3, "tvd": 0.0, "mi_bits": 0.0}, {"t": 0.6, "tvd": 0.18, "mi_bits": 0.4}]
    assert tvd_over_mi(rows) == pytest.approx([0.18 / (0.4 * math.log(2))] * 2)
    assert all(math.isnan(v) for v in tvd_over_mi(rows[:1]))
