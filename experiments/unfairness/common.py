"""Shared pieces of the unfairness study: configuration, datasets, exact measure values, outputs.

Every experiment module has ``run(config) -> dict`` returning ``{"experiment", "rows", "summary"}``
(plain JSON data) and writes its figures into ``config.out``; :mod:`run` saves the dict as
``<experiment>.json`` and ``<experiment>.csv`` and :mod:`page` renders ``docs/results/unfairness.md``
from those files only.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit import datasets
from dpaudit._io import atomic_open, atomic_write_text, to_jsonable
from dpaudit.counting import CountTable, count_tables
from dpaudit.criteria import parse_criteria
from dpaudit.measures import TVD, Measure, Repair, TopContribution

#: Registered datasets, each with the criteria of all its presets (the paper's; credit: "default").
FULL_DATASETS = ("adult", "census", "compas", "compas-two-years", "cps1988", "cpssw8", "credit", "healthcare",
                 "stackoverflow")
#: ``--quick``: the two smallest real tables.
QUICK_DATASETS = ("healthcare", "compas-two-years")
#: Rows of the census generator standing in for IPUMS-CPS in the per-dataset experiments.
CENSUS_ROWS, QUICK_CENSUS_ROWS = 200_000, 20_000
#: U_R work limit per block (work units) in ``--quick`` runs (a full run uses the library default, 30).
QUICK_WORK_LIMIT = 0.25
#: What each dataset is, printed beside it wherever it appears. Claims are judged on the paper's five
#: (``PAPER_DATASETS``: two of them stand-ins, labelled so); the four extras are shown, never pooled in.
ROLE = {
    "adult": "paper",
    "census": "synthetic stand-in for IPUMS-CPS (dpaudit's generator; IPUMS is not redistributable)",
    "compas": "paper (compas-scores, 11,757 rows)",
    "healthcare": "paper (synthetic in the paper too: mlinspect's generator)",
    "stackoverflow": "proxy: the 2018 survey with other criteria (the paper's 2022+ columns are not available)",
    "compas-two-years": "extra (not in the paper)",
    "cps1988": "extra (not in the paper)",
    "cpssw8": "extra (not in the paper)",
    "credit": "extra (not in the paper)",
}
PAPER_DATASETS = ("adult", "census", "compas", "healthcare", "stackoverflow")
#: Short labels for tables and figure legends.
ROLE_TAG = {"census": "synthetic", "healthcare": "synthetic", "stackoverflow": "proxy", "compas-two-years": "extra",
            "cps1988": "extra", "cpssw8": "extra", "credit": "extra"}


def label(name: str) -> str:
    """The dataset's name with its role, e.g. ``census (synthetic)``, for tables and legends."""
    tag = ROLE_TAG.get(name)
    return f"{name} ({tag})" if tag else name


def paper_only(names: Iterable[str]) -> list[str]:
    """The names among the paper's datasets, in the given order (what claims are judged on)."""
    return [n for n in names if n in PAPER_DATASETS]


@dataclass(frozen=True)
class Config:
    """What one run of the study does; ``quick`` shrinks every grid so that CI runs it in minutes."""

    out: Path
    quick: bool = False
    seed: int = 0
    datasets: tuple[str, ...] = field(default=())
    #: Work limit per U_R block (work units, :mod:`dpaudit.measures._limits`): the library default in a full run.
    work_limit: float = 30.0

    def __post_init__(self) -> None:
        if not self.datasets:
            object.__setattr__(self, "datasets", QUICK_DATASETS if self.quick else FULL_DATASETS)
        if self.quick:
            object.__setattr__(self, "work_limit", min(self.work_limit, QUICK_WORK_LIMIT))


# -- data ------------------------------------------------------------------------------------------
@cache
def load(name: str, quick: bool) -> tuple[Any, Any]:
    """The dataset's frame and declared schema (census: the generator at CENSUS_ROWS rows)."""
    if name == "census":
        from dpaudit.datasets.synthetic import census

        return census(QUICK_CENSUS_ROWS if quick else CENSUS_ROWS, seed=0)
    return datasets.load(name)


def criteria_of(name: str) -> tuple[str, ...]:
    """Every criterion of every preset of the dataset (the paper's first), each once."""
    presets = datasets.info(name).presets
    ordered = sorted(presets, key=lambda p: p != "paper")
    return tuple(dict.fromkeys(c for p in ordered for c in presets[p]))


@cache
def tables_of(name: str, quick: bool) -> tuple[CountTable, ...]:
    """Count tables of the dataset's preset criteria: one pass over its rows."""
    frame, schema = load(name, quick)
    return tuple(count_tables(frame, parse_criteria(criteria_of(name)), schema))


def shuffle_protected(frame: Any, schema: Any, crits: Sequence[Any], seed: int) -> list[CountTable]:
    """Count tables of ``crits`` on ``frame`` with the protected columns permuted (seeded): the null with
    the same marginals, where P ⊥ O | A holds up to sampling noise. One permutation per distinct set
    of protected columns (jointly), shared by every criterion protecting that set — the data with its
    protected column shuffled once — so criteria that tie on the data tie on the null too."""
    rng = np.random.default_rng(seed)
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, crit in enumerate(crits):
        groups.setdefault(tuple(crit.protected), []).append(i)
    out: list[Any] = [None] * len(crits)
    for columns, members in groups.items():
        shuffled = frame.copy()
        order = rng.permutation(len(frame))
        for column in columns:
            shuffled[column] = frame[column].to_numpy()[order]
        distinct = list(dict.fromkeys(str(crits[i]) for i in members))  # count_tables takes each criterion once
        by_text = dict(zip(distinct, count_tables(shuffled, [next(crits[i] for i in members if str(crits[i]) == t)
                                                            for t in distinct], schema)))
        for i in members:
            out[i] = by_text[str(crits[i])]
    return out


def shuffled_tables(name: str, quick: bool, seed: int) -> tuple[CountTable, ...]:
    """:func:`shuffle_protected` on the dataset's preset criteria."""
    frame, schema = load(name, quick)
    return tuple(shuffle_protected(frame, schema, parse_criteria(criteria_of(name)), seed))


# -- measures --------------------------------------------------------------------------------------
def measures(config: Config) -> dict[str, Measure]:
    """The measures every per-dataset experiment reports (each with its full options)."""
    return {
        "tvd": TVD(),
        "tc": TopContribution(),
        "repair_ci": Repair(semantics="ci", work_limit=config.work_limit),
        "repair_bag": Repair(semantics="bag", work_limit=config.work_limit),
    }


@cache
def _exact(name: str, quick: bool, key: str, measure: Measure) -> tuple[tuple[float, ...], tuple[str, ...], float]:
    tables = tables_of(name, quick)
    start = time.perf_counter()
    assessment = measure.assess(tables, details=False)
    return tuple(assessment.per_criterion), tuple(assessment.caveats), time.perf_counter() - start


def exact_values(name: str, config: Config) -> dict[str, dict[str, Any]]:
    """Per measure: the exact per-criterion values, their sum, the sensitivity of the sum, whether the
    value is proven (no solver stopped early) and the seconds it took (cached per process)."""
    tables = tables_of(name, config.quick)
    crits = [t.criterion for t in tables]
    n = tables[0].n
    out = {}
    for key, measure in measures(config).items():
        per, caveats, seconds = _exact(name, config.quick, key, measure)
        out[key] = {"per_criterion": list(per), "value": math.fsum(per), "sensitivity": measure.sensitivity(crits, n),
                    "proven": not caveats, "seconds": seconds}
    return out


def dp_gap(counts: np.ndarray, *, min_group: int = 20) -> float:
    """Demographic-parity gap of a (B, P, O) count table, conditional on A.

    Per block a, the largest total-variation distance between the outcome distributions P(O | p, a)
    of two protected values with at least ``min_group`` rows; blocks weighted by their share of the
    rows (blocks with fewer than two such groups count 0). With a binary outcome this is the usual
    max_{p, p'} |P(O = 1 | p, a) − P(O = 1 | p', a)|, the gap a model's predictions are scored by.

    >>> dp_gap(np.array([[[80, 20], [40, 60]]]))
    0.4
    """
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim == 2:
        table = table[None]
    total = table.sum()
    gap = 0.0
    for block in table:
        sizes = block.sum(axis=1)
        keep = sizes >= min_group
        if keep.sum() < 2:
            continue
        dist = block[keep] / sizes[keep, None]
        tvd = 0.5 * np.abs(dist[:, None, :] - dist[None, :, :]).sum(axis=2)
        gap += float(block.sum() / total * tvd.max())
    return gap


# -- statistics ------------------------------------------------------------------------------------
def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (ties averaged); NaN with fewer than three pairs or a constant side."""
    from scipy.stats import spearmanr

    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(spearmanr(x, y).statistic)


def relative_errors(value: float, sensitivity: float, epsilon: float, draws: int) -> np.ndarray:
    """|M_ε − M| / |M| over ``draws`` OpenDP Laplace releases of ``value`` (NaN when M = 0)."""
    from dpaudit.privacy._mechanisms import laplace_draws

    noisy = laplace_draws(value, sensitivity=sensitivity, epsilon=epsilon, draws=draws)
    return np.abs(noisy - value) / abs(value) if value != 0 else np.full(draws, math.nan)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


# -- claims ---------------------------------------------------------------------------------------
#: A verdict is one of these. "reproduced" needs the real data to pass the claim's rule and its
#: control — data on which the claim is false by construction — to fail the same rule; when both pass
#: the rule says nothing about the data ("not distinguished from its control").
VERDICTS = ("reproduced", "not distinguished from its control", "differs", "measured", "not run")


#: Rules compare statistics over a handful of points (Spearman's ρ on 4 criteria takes multiples of 0.2,
#: Kendall's τ multiples of 1/3), which floating point returns a hair off (ρ = 0.8 as 0.7999999999999999):
#: a threshold is met within this tolerance, on the data and on the control alike.
RULE_TOLERANCE = 1e-9


def at_least(value: float | None, threshold: float) -> bool:
    """``value ≥ threshold`` within :data:`RULE_TOLERANCE`; an undefined statistic (None, NaN) fails.

    >>> at_least(0.7999999999999999, 0.8), at_least(0.6, 0.8), at_least(float("nan"), 0.8)
    (True, False, False)
    """
    return value is not None and math.isfinite(value) and value >= threshold - RULE_TOLERANCE


#: A control of several draws (shuffles, seeds) passes when at least this share of them reach the bar.
CONTROL_SHARE = 0.05


def control_meets(draws: Sequence[float | None], rule: float, data: float | None = None) -> bool | None:
    """Whether a control of several draws passes "statistic ≥ ``rule``": at least ``CONTROL_SHARE`` of the
    draws reach the rule *and* the data's own statistic (:func:`at_least`; an undefined draw fails). With
    the data's value given this is a permutation test: the claim is reproduced only when the data beat
    95 % of the draws of data on which it is false, so a lenient rule that noise often meets (ρ ≥ 0.5 over
    8 criteria) cannot make noise look reproduced. Fewer than 1/``CONTROL_SHARE`` = 20 draws cannot make
    a 5 % test (with 3, one lucky draw would decide): the control then counts as passing, so such a claim
    is never reproduced. None without draws (no control).

    >>> control_meets([0.2] * 19 + [0.7999999999999999], 0.8), control_meets([0.2] * 20, 0.8), control_meets([], 0.8)
    (True, False, None)
    >>> control_meets([0.2] * 5, 0.8)  # too few draws for a 5 % test
    True
    >>> control_meets([0.6] * 5 + [0.2] * 15, 0.5), control_meets([0.6] * 5 + [0.2] * 15, 0.5, data=0.9)
    (True, False)
    """
    if not len(draws):
        return None
    if len(draws) < round(1 / CONTROL_SHARE):
        return True
    bar = max(rule, data) if data is not None and math.isfinite(data) else rule
    return sum(at_least(d, bar) for d in draws) >= CONTROL_SHARE * len(draws)


def verdict(passes: bool | None, control_passes: bool | None) -> str:
    """The verdict of a claim from whether its rule holds on the data and on the control.

    >>> verdict(True, False), verdict(True, True), verdict(False, False), verdict(None, None)
    ('reproduced', 'not distinguished from its control', 'differs', 'not run')
    """
    if passes is None:
        return "not run"
    if not passes:
        return "differs"
    if control_passes is None:
        raise ValueError("a claim whose data pass needs a control to be called reproduced")
    return "not distinguished from its control" if control_passes else "reproduced"


def claim(*, experiment: str, claim: str, rule: str, paper: str, dpaudit: str, control: str,
          passes: bool | None, control_passes: bool | None, note: str = "") -> dict[str, Any]:
    """One row of the page's claims table.

    ``experiment``: the paper's experiment id (``main.py``: plot_0 … exp10); ``paper``: the paper's value
    (from :mod:`paper`, or "—" where it has none); ``dpaudit``: the statistic on the data;
    ``control``: the same statistic on the control, with what the control is; ``passes`` /
    ``control_passes``: the rule on each (``None``: not run). A measurement without a rule uses
    :func:`measurement`.
    """
    return {"experiment": experiment, "claim": claim, "rule": rule, "paper": paper, "dpaudit": dpaudit,
            "control": control, "passes": passes, "control_passes": control_passes,
            "verdict": verdict(passes, control_passes), "note": note}


def measurement(*, experiment: str, claim: str, paper: str, dpaudit: str, note: str = "") -> dict[str, Any]:
    """A row of the claims table that reports numbers without a verdict (the paper makes no claim)."""
    return {"experiment": experiment, "claim": claim, "rule": "—", "paper": paper, "dpaudit": dpaudit,
            "control": "—", "passes": None, "control_passes": None, "verdict": "measured", "note": note}


def mechanism_property(*, experiment: str, claim: str, rule: str, paper: str, dpaudit: str, control: str,
                       passes: bool, control_passes: bool, why: str) -> dict[str, Any]:
    """A claim that follows from the noise mechanism and the sensitivity alone (the relative error of a
    Laplace release is b/(ε·|M|) whatever the data), so that no data can make it false and no data control
    can fail it: reported as a measurement — whether the rule holds on the data and on a *mechanism*
    control (noise changed so that the claim is false) — never as "reproduced". ``why``: the property."""
    return measurement(
        experiment=experiment, claim=f"{claim} (rule: {rule})", paper=paper,
        dpaudit=f"{'holds' if passes else 'does not hold'}: {dpaudit}",
        note=f"a property of the mechanism, not of the data — {why}; no data control can fail it. Mechanism "
             f"control: {control} — the rule {'holds' if control_passes else 'fails'} there")


def spearman_interval(x: Sequence[float], y: Sequence[float], *, boots: int = 2000, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of Spearman's ρ, resampling the (x, y) pairs (criteria) ``boots``
    times; resamples with a constant side (ρ undefined) are left out. Vectorised: the ranks of all
    resamples at once (the same resamples as drawing them one by one from the same seed)."""
    from scipy.stats import rankdata

    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xs) < 3:
        return math.nan, math.nan
    pick = np.random.default_rng(seed).integers(0, len(xs), (boots, len(xs)))
    rx, ry = rankdata(xs[pick], axis=1), rankdata(ys[pick], axis=1)
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx ** 2).sum(axis=1) * (ry ** 2).sum(axis=1))
    keep = (np.ptp(xs[pick], axis=1) > 0) & (np.ptp(ys[pick], axis=1) > 0)
    if not keep.any():
        return math.nan, math.nan
    rho = (rx * ry).sum(axis=1)[keep] / den[keep]
    tail = 100 * (1 - level) / 2
    return float(np.percentile(rho, tail)), float(np.percentile(rho, 100 - tail))


def interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` range of repeated values (seeds, releases, splits): the error bar plotted."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    tail = 100 * (1 - level) / 2
    return float(np.percentile(v, tail)), float(np.percentile(v, 100 - tail))


# -- outputs ---------------------------------------------------------------------------------------
def save(result: dict[str, Any], out: Path) -> None:
    """``<experiment>.json`` (everything; non-finite numbers as null) and ``<experiment>.csv`` (the rows),
    each written atomically."""
    out.mkdir(parents=True, exist_ok=True)
    name = result["experiment"]
    doc = to_jsonable(result, nonfinite="null")
    atomic_write_text(out / f"{name}.json", json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    columns: list[str] = []
    for row in doc["rows"]:
        columns += [c for c in row if c not in columns]
    with atomic_open(out / f"{name}.csv") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(doc["rows"])


def figure(out: Path, name: str, draw: Callable[[Any], Iterable[Any] | None], *, ncols: int = 1,
           size: tuple[float, float] = (6.0, 4.0)) -> str:
    """Draw a matplotlib figure with ``draw(axes)`` and save ``<name>.png`` in ``out``; returns the file name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(size[0] * ncols, size[1]), squeeze=False)
    draw(axes[0] if ncols > 1 else axes[0][0])
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=110)
    plt.close(fig)
    return f"{name}.png"
