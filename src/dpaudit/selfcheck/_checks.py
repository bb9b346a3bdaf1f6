"""The per-mechanism checks: each release, real or broken, drawn on its pair and bounded."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit.criteria import Criterion
from dpaudit.details import PrivateTopCellsDetails
from dpaudit.measures import Repair, TopContribution, WorstCase
from dpaudit.measures.contribution import K_ALL, MD_LINF_SENSITIVITY, marginal_differences
from dpaudit.privacy._mechanisms import laplace_draws, noisy_top_k_draws
from dpaudit.selfcheck._bound import (
    _audit,
    _audit_names,
    _describe_threshold,
    _empirical_log_ratio,
    _identity,
    _Outcome,
    _selection_loss,
)
from dpaudit.selfcheck._pairs import NeighbourPair, split_pair
from dpaudit.selfcheck._params import BROKEN_FACTOR, EPSILON, REQUIRED_EXCESS, SPLIT
from dpaudit.selfcheck._results import CheckResult


def _result(name: str, release: str, pair: NeighbourPair, claimed: float, sensitivity: float | None,
            change: float | None, ratio: float, exact_loss: float, draws: int, outcome: _Outcome, level: float,
            broken: bool, note: str = "") -> CheckResult:
    if broken:
        required = exact_loss >= REQUIRED_EXCESS * claimed
        passed = outcome.epsilon > claimed
    else:
        required, passed = True, outcome.epsilon <= claimed
    return CheckResult(name, release, pair.description, pair.n, claimed, sensitivity, change, ratio, exact_loss, draws,
                       outcome.test, outcome.k_tp, outcome.n_pos, outcome.k_fp, outcome.n_neg, outcome.epsilon,
                       outcome.point, level, broken, required, passed, note)


def _laplace_check(case: WorstCase, draws: int, level: float, rng: np.random.Generator, broken: bool) -> CheckResult:
    pair, measure = case.pair, case.measure
    v0, v1 = measure.value(pair.before), measure.value(pair.after)
    sensitivity = measure.sensitivity([Criterion.parse(pair.criterion)], pair.n)
    change = abs(v1 - v0)
    noise = sensitivity * (BROKEN_FACTOR if broken else 1.0)
    out0 = laplace_draws(v0, sensitivity=noise, epsilon=EPSILON, draws=draws)
    out1 = laplace_draws(v1, sensitivity=noise, epsilon=EPSILON, draws=draws)
    outcome = _audit(out0, out1, _identity, _describe_threshold, level, rng)
    return _result(pair.name, f"{measure.title} value (Laplace)", pair, EPSILON, sensitivity, change,
                   change / sensitivity, EPSILON * change / noise, draws, outcome, level, broken,
                   case.note(change, pair.n) if case.note else "")


def _names_check(case: WorstCase, draws: int, level: float, rng: np.random.Generator, broken: bool) -> CheckResult:
    pair = case.pair
    s0, s1 = marginal_differences(pair.before).ravel(), marginal_differences(pair.after).ravel()
    sensitivity = MD_LINF_SENSITIVITY / pair.n  # what private_top_cells declares
    noise = sensitivity * (BROKEN_FACTOR if broken else 1.0)
    out0 = noisy_top_k_draws(s0, 1, sensitivity_linf=noise, epsilon=EPSILON, draws=draws)[:, 0]
    out1 = noisy_top_k_draws(s1, 1, sensitivity_linf=noise, epsilon=EPSILON, draws=draws)[:, 0]
    scale = 2.0 * noise / EPSILON
    exact = _selection_loss(s0, s1, scale)
    change = float(np.abs(s1 - s0).max())
    outcome = _audit_names(out0, out1, s0.size, level, rng)
    return _result(pair.name, "U_TC top-cell name (report-noisy-max, k = 1)", pair, EPSILON, sensitivity, change,
                   change / sensitivity, exact, draws, outcome, level, broken,
                   case.note(change, pair.n) if case.note else "")


#: The check of each kind of release a measure's worst case names (:attr:`WorstCase.release`).
CHECKS: dict[str, Callable[[WorstCase, int, float, np.random.Generator, bool], CheckResult]] = {
    "value": _laplace_check,
    "names": _names_check,
}


def _split_checks(draws: int, level: float, rng: np.random.Generator,
                  broken: bool) -> tuple[list[CheckResult], dict[str, Any]]:
    """The audit of two measures with a split: each release against its share, and all of them jointly."""
    from dpaudit.audit import audit
    from dpaudit.counting import count_tables
    from dpaudit.privacy import Budget

    pair = split_pair()
    df0, df1 = pair.frames()
    schema = pair.schema()
    criterion = Criterion.parse(pair.criterion)
    measures = [TopContribution(k=K_ALL, name_cells=1), Repair(semantics="ci")]
    exact0 = audit(df0, criterion, measures=measures, schema=schema, exact=True)
    exact1 = audit(df1, criterion, measures=measures, schema=schema, exact=True)
    budget = Budget(EPSILON)
    private = audit(df0, criterion, measures=measures, epsilon=EPSILON, schema=schema, split=dict(SPLIT), budget=budget)
    tc_value, repair = private["tc"].release, private["repair"].release
    private_names = private["tc"].details
    assert isinstance(private_names, PrivateTopCellsDetails)  # U_TC names its cells on 3/4 of its share
    names = private_names.release
    releases = {"tc value": float(tc_value.epsilon or 0.0), "tc names": float(names.epsilon),
                "repair value": float(repair.epsilon or 0.0)}
    if private_names.reliability is not None:  # the names' reliability (audited in tests/privacy/test_names_reliability.py)
        releases["tc names reliability"] = float(private_names.reliability.epsilon)
    total = math.fsum(releases.values())
    problems = []
    if not math.isclose(total, EPSILON, rel_tol=1e-9):
        problems.append(f"the releases spend {total:g}, not ε = {EPSILON:g}")
    for name, share in SPLIT.items():
        spent = math.fsum(v for k, v in releases.items() if k.startswith(name))
        if not math.isclose(spent, share * EPSILON, rel_tol=1e-9):
            problems.append(f"{name} spends {spent:g}, not its share {share * EPSILON:g}")
    if not math.isclose(budget.spent, EPSILON, rel_tol=1e-9):
        problems.append(f"the ledger debits {budget.spent:g}, not ε = {EPSILON:g}")
    composition = {"epsilon": EPSILON, "split": dict(SPLIT), "releases": releases, "sum": total,
                   "spent": budget.spent, "ok": not problems, "problem": "; ".join(problems)}

    factor = BROKEN_FACTOR if broken else 1.0
    scores = [np.concatenate([marginal_differences(t.counts).ravel() for t in count_tables(df, [criterion], schema)])
              for df in (df0, df1)]
    laplace = {}
    for key, release, exact in (("tc value", tc_value, "tc"), ("repair value", repair, "repair")):
        v0, v1 = exact0[exact].release.value, exact1[exact].release.value
        noise = release.sensitivity * factor
        eps = float(release.epsilon or 0.0)
        laplace[key] = (v0, v1, noise / eps, release.sensitivity, eps,
                        laplace_draws(v0, sensitivity=noise, epsilon=eps, draws=draws),
                        laplace_draws(v1, sensitivity=noise, epsilon=eps, draws=draws))
    names_noise = names.sensitivity_linf * factor
    n0 = noisy_top_k_draws(scores[0], 1, sensitivity_linf=names_noise, epsilon=names.epsilon, draws=draws)[:, 0]
    n1 = noisy_top_k_draws(scores[1], 1, sensitivity_linf=names_noise, epsilon=names.epsilon, draws=draws)[:, 0]

    def names_loss_at(noise: float) -> float:
        return _selection_loss(scores[0], scores[1], 2.0 * noise / names.epsilon)

    names_loss = names_loss_at(names_noise)

    results = []
    for key, (v0, v1, b, sens, eps, o0, o1) in laplace.items():
        outcome = _audit(o0, o1, _identity, _describe_threshold, level, rng)
        change = abs(v1 - v0)
        results.append(_result(f"split: {key}", f"{key} at its share of the split", pair, eps, sens, change,
                               change / sens, change / b, draws, outcome, level, broken))
    outcome = _audit_names(n0, n1, scores[0].size, level, rng)
    change = float(np.abs(scores[1] - scores[0]).max())
    results.append(_result("split: tc names", "tc names (the selection) at its part of tc's share", pair, names.epsilon,
                           names.sensitivity_linf, change, change / names.sensitivity_linf, names_loss, draws, outcome,
                           level, broken))

    # The joint release: one draw = (tc value, tc name, repair value); statistic = exact Laplace log-likelihood
    # ratios (fixed in advance) + the names' log-ratio fitted on the selection half.
    joint0 = np.column_stack([laplace["tc value"][5], laplace["repair value"][5], n0])
    joint1 = np.column_stack([laplace["tc value"][6], laplace["repair value"][6], n1])

    def joint_stat(sel0: np.ndarray, sel1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        name_part = _empirical_log_ratio(sel0[:, 2], sel1[:, 2])

        def stat(x: np.ndarray) -> np.ndarray:
            total_llr = name_part(x[:, 2])
            for col, key in ((0, "tc value"), (1, "repair value")):
                v0, v1, b = laplace[key][:3]
                total_llr = total_llr + (np.abs(x[:, col] - v0) - np.abs(x[:, col] - v1)) / b
            return total_llr

        return stat

    outcome = _audit(joint0, joint1, joint_stat,
                     lambda t: f"log-likelihood ratio {'≥' if t.upper else '<'} {t.threshold:.4g}, more likely under "
                               f"{'D′' if t.positive_is_d1 else 'D'}", level, rng)
    exact_joint = math.fsum(r.exact_loss for r in results)
    drawn = math.fsum(r.claimed_epsilon for r in results)  # the joint draw holds these three releases
    # the fraction of ε the pair realises under the correct noise (Laplace: ε·|Δv|/Δ; names: exact loss)
    realised = (math.fsum(r.ratio * r.claimed_epsilon for r in results[:2]) + names_loss_at(names.sensitivity_linf)) / drawn
    results.append(_result("split: joint", "all three releases together", pair, drawn, None, None,
                           realised, exact_joint, draws, outcome, level, broken,
                           "sequential composition: the joint loss is at most the sum of the shares"))
    return results, composition

