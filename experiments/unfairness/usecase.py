"""exp9 — the use case: an analyst's group-by query beside the measures, four criteria per dataset.

The authors' ``main.py`` (``run_experiment_9``: Adult and COMPAS; its IPUMS variant reports the
measures only) puts, for each criterion S ⊥ Y (| A), the SQL query ``SELECT S, AVG(Y) … GROUP BY S``
(with A: grouped by A, S) beside the measures. Its *query disparity* is the row-weighted mean absolute
gap of the group rates from their stratum's rate (``_unconditional_story_stats`` /
``_conditional_story_stats``)::

    QD = Σ_{a,s} n_{a,s}/n · |ȳ_{a,s} − ȳ_a|        (no A: one stratum)

on the outcome as a number (income > 50K as 0/1; COMPAS ``decile_score`` with the reference code's
negative values set to 0; IPUMS ``INCTOT`` in its 10,000-wide buckets, rows above 200,000 dropped).
Adult's sex query: rates 0.10926 / 0.30376 around 0.23929 give QD = 0.0862 (``paper.ADULT_RATES``).
The SQL string the code prints beside it computes another number, the gap ``MAX(avg_y) − MIN(avg_y)``
per stratum; its row-weighted mean ``Σ_a n_a/n · (max_s ȳ_{a,s} − min_s ȳ_{a,s})`` is saved as ``gap``
and τ against it reported as a measurement (on COMPAS it orders the criteria as the paper's τ = 1 says,
QD does not).

The measures per criterion at ε = 10 (the paper's), each the mean of ``REPS`` OpenDP Laplace releases
with their central 95 % range: U_MI^TVD (16|F|/n); U_TC the paper's way (observed cells, k = 500, 3k/n or
7k/n + ½, ``topk``) and dpaudit's; U_R the paper's way (``bag`` over 100-row chunks, each solved exactly,
sensitivity 2; its MaxSAT gives other values, ``chunked``) and dpaudit's exact ``ci`` / ``bag``; MI (bits)
non-private (the paper releases it too). Exact values saved beside. Datasets: Adult, COMPAS and the
census generator at 100,000 rows for IPUMS-CPS (it has SEX, RACE, EDUC, INCTOT; labelled synthetic).

Claim (the paper: "the measures rank the criteria as the query disparity does", Kendall τ printed):
on Adult and COMPAS (the datasets the paper gives τ for), τ(released mean, QD) ≥ ``TAU_RULE`` for U_MI^TVD
and the paper's U_TC. With four criteria τ takes only the values 0, ±1/3, ±2/3, ±1, and one swapped
pair already gives 2/3: the exact permutation p-value (share of the 24 orderings with τ at least the
observed) is saved beside each τ (τ = 1: 1/24 = 0.042; τ = 2/3: 4/24 = 0.167). One claim per measure.
Control: the same τ with every criterion's protected column shuffled (``SHUFFLES`` seeds; QD stays the
data's), so the measures carry no dependence; it passes on a dataset when at least 5 % of the shuffles
reach the rule and the data's τ (``common.control_meets``), and the claim is reproduced only when the
data pass and the control fails on every judged dataset.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import paper
from chunked import CHUNK_WORK_LIMIT, chunked_tables, kendall
from common import Config, at_least, claim, control_meets, figure, interval, label, load, measurement, shuffle_protected
from topk import paper_tc_sensitivity

from dpaudit.counting import count_tables
from dpaudit.criteria import Criterion, parse_criteria
from dpaudit.measures import TVD, Repair, TopContribution, mutual_information
from dpaudit.measures.contribution import DEFAULT_K

NAME = "usecase"
TITLE = "exp9 — the use case: group-by query disparity beside the measures"
EPSILON, REPS, SHUFFLES, QUICK_SHUFFLES = 10.0, 10, 20, 3
TAU_RULE = 0.6
#: The paper's exp9 criteria (``main.py``; the reference file's table order) and its tables.
CRITERIA = {
    "adult": ("sex ⊥ income", "sex ⊥ income | education-num", "race ⊥ income", "race ⊥ income | education-num"),
    "compas": ("race ⊥ decile_score | c_charge_degree", "c_charge_degree ⊥ decile_score | race",
               "race ⊥ decile_score | age_cat", "age_cat ⊥ decile_score | race"),
    "census": ("SEX ⊥ INCTOT", "RACE ⊥ INCTOT", "SEX ⊥ INCTOT | EDUC", "RACE ⊥ INCTOT | EDUC"),
}
PAPER_TABLE = {"adult": paper.ADULT_USECASE, "compas": paper.COMPAS_USECASE, "census": paper.IPUMS_USECASE}
JUDGED = tuple(paper.USECASE_KENDALL)  # adult, compas
CENSUS_ROWS, QUICK_CENSUS_ROWS = 100_000, 20_000
QUICK_NAMES = ("compas", "census")
#: Released measures (key → title); "mi_bits" is exact only. Judged: the paper's U_MI^TVD and U_TC.
MEASURES = {"mi_bits": "MI (bits, non-private)", "tvd": "U_MI^TVD", "tc_paper": "U_TC, paper (observed, 3k/7k/n + ½)",
            "tc": "U_TC, dpaudit", "repair_chunked": "U_R, paper (100-row chunks, bag, exact per chunk)",
            "repair_bag": "U_R, dpaudit exact bag", "repair_ci": "U_R, dpaudit exact ci"}
RULED = ("tvd", "tc_paper")
#: paper.*_USECASE's measure → our series computed the paper's way.
PAPER_SERIES = {"mi_bits": "mi_bits", "tvd": "tvd", "tc": "tc_paper", "repair": "repair_chunked"}
CHEAP = ("mi_bits", "tvd", "tc_paper", "tc")  # what the shuffled control recomputes
COLUMNS = [("dataset", "dataset"), ("criterion", "criterion"), ("rows", "rows"), ("query_disparity", "query disparity"),
           ("gap", "SQL MAX − MIN gap"),
           ("min_group_rate", "lowest group rate"), ("max_group_rate", "highest group rate")] + [
    (f"{m}_{k}", f"{t} {'(exact)' if k == 'exact' else 'ε = 10, mean' if k == 'mean' else '95 % range'}")
    for m, t in MEASURES.items() for k in (("exact",) if m == "mi_bits" else ("exact", "mean", "interval"))]


# -- the query ------------------------------------------------------------------------------------------
def outcome_number(name: str, frame: Any, column: str) -> tuple[Any, np.ndarray]:
    """The rows the reference code keeps and their outcome as the number its ``AVG`` averages."""
    if name == "adult":
        return frame, (frame[column].astype(str) == ">50K").to_numpy(dtype=float)
    values = frame[column].to_numpy(dtype=float)
    if name == "census":
        keep = values <= 200_000
        return frame[keep], np.floor(values[keep] / 10_000) * 10_000
    return frame, np.clip(values, 0, None)  # the reference code's "negative values → 0"


def query_disparity(y: np.ndarray, s: np.ndarray, a: np.ndarray | None = None) -> dict[str, float]:
    """QD = Σ_{a,s} n_{a,s}/n · |ȳ_{a,s} − ȳ_a|, the SQL string's gap Σ_a n_a/n · (max_s ȳ_{a,s} − min_s ȳ_{a,s})
    and the lowest / highest group rate ȳ_{a,s}.

    >>> round(query_disparity(np.array([1., 0, 0, 0, 1, 1, 1, 0]), np.array([0, 0, 0, 0, 1, 1, 1, 1]))
    ...       ["query_disparity"], 12)  # rates 0.25 / 0.75 around 0.5
    0.25
    """
    import pandas as pd

    df = pd.DataFrame({"y": np.asarray(y, dtype=float), "s": s, "a": 0 if a is None else a})
    cell = df.groupby(["a", "s"])["y"].agg(["mean", "size"])
    stratum = df.groupby("a")["y"].mean()
    gap = (cell["mean"] - stratum.reindex(cell.index.get_level_values("a")).to_numpy()).abs()
    spread = cell["mean"].groupby(level="a").agg(lambda v: v.max() - v.min())
    share = df.groupby("a").size() / len(df)
    return {"query_disparity": float((cell["size"] * gap).sum() / len(df)), "gap": float((spread * share).sum()),
            "min_group_rate": float(cell["mean"].min()), "max_group_rate": float(cell["mean"].max())}


def sql(name: str, crit: Criterion) -> str:
    """The reference code's ``_query_string``."""
    s, y = crit.protected[0], crit.outcome[0]
    if not crit.admissible:
        return f"SELECT {s}, AVG({y}) AS rate_{y} FROM {name} GROUP BY {s};"
    a = crit.admissible[0]
    return (f"SELECT {a}, MAX(avg_y) - MIN(avg_y) AS disparity FROM (SELECT {a}, {s}, AVG({y}) AS avg_y "
            f"FROM {name} GROUP BY {a}, {s}) q GROUP BY {a};")


def queries(name: str, frame: Any, crits: list[Criterion]) -> list[dict[str, Any]]:
    out = []
    for crit in crits:
        kept, y = outcome_number(name, frame, crit.outcome[0])
        a = kept[crit.admissible[0]].to_numpy() if crit.admissible else None
        out.append({**query_disparity(y, kept[crit.protected[0]].to_numpy(), a), "query": sql(name, crit)})
    return out


# -- the measures ---------------------------------------------------------------------------------------
def data(name: str, quick: bool) -> tuple[Any, Any]:
    if name == "census":
        from dpaudit.datasets.synthetic import census

        return census(QUICK_CENSUS_ROWS if quick else CENSUS_ROWS, seed=0)
    return load(name, quick)


def _measure(key: str, config: Config) -> Any:
    if key in ("tvd", "tc", "tc_paper"):
        return {"tvd": TVD(), "tc": TopContribution(), "tc_paper": TopContribution(k=DEFAULT_K, cells="observed")}[key]
    semantics, limit = ("bag", min(config.work_limit, CHUNK_WORK_LIMIT)) if key == "repair_chunked" else \
        (key.split("_")[1], config.work_limit)
    return Repair(semantics=semantics, work_limit=limit)


def exact(tables: list[Any], keys: tuple[str, ...], config: Config, frame: Any = None,
          schema: Any = None) -> dict[str, dict[str, Any]]:
    """Per measure: per-criterion values, per-criterion sensitivity, proven (no solver stopped early)."""
    crits, n = [t.criterion for t in tables], tables[0].n
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        if key == "mi_bits":
            out[key] = {"values": [mutual_information(t.counts, base=2.0) for t in tables], "sens": None, "proven": True}
            continue
        m = _measure(key, config)
        on = chunked_tables(frame, schema, crits) if key == "repair_chunked" else tables
        results = [m.assess([t], details=False) for t in on]
        sens = [paper_tc_sensitivity([c], n, DEFAULT_K) if key == "tc_paper" else 2.0 if key == "repair_chunked"
                else m.sensitivity([c], n) for c in crits]
        out[key] = {"values": [r.per_criterion[0] for r in results], "sens": sens,
                    "proven": [not r.caveats for r in results]}
    return out


def releases(values: dict[str, dict[str, Any]]) -> dict[str, np.ndarray]:
    """(REPS, criteria) OpenDP Laplace releases at ε = EPSILON per released measure (MI: the exact value)."""
    from dpaudit.privacy._mechanisms import laplace_draws

    return {key: np.tile(np.asarray(v["values"], dtype=float), (REPS, 1)) if v["sens"] is None else
            np.column_stack([laplace_draws(x, sensitivity=s, epsilon=EPSILON, draws=REPS)
                             for x, s in zip(v["values"], v["sens"])]) for key, v in values.items()}


def permutation_p(x: list[float], y: list[float]) -> float:
    """Exact one-sided p-value of Kendall τ(x, y): the share of orderings of x with τ ≥ the observed."""
    tau = kendall(x, y)
    if not math.isfinite(tau):
        return math.nan
    perms = list(itertools.permutations(x))
    return sum(kendall(list(p), y) >= tau - 1e-12 for p in perms) / len(perms)


# -- the experiment -------------------------------------------------------------------------------------
def names_of(config: Config) -> tuple[str, ...]:
    return tuple(n for n in CRITERIA if n in config.datasets) or (QUICK_NAMES if config.quick else tuple(CRITERIA))


def run(config: Config) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {"datasets": {}, "judged": [], "epsilon": EPSILON, "reps": REPS, "tau_rule": TAU_RULE}
    shuffles = QUICK_SHUFFLES if config.quick else SHUFFLES
    for name in names_of(config):
        frame, schema = data(name, config.quick)
        crits = list(parse_criteria(CRITERIA[name]))
        tables = count_tables(frame, crits, schema)
        qs = queries(name, frame, crits)
        qd = [q["query_disparity"] for q in qs]
        gap = [q["gap"] for q in qs]
        values = exact(tables, tuple(MEASURES), config, frame, schema)
        rel = releases(values)
        for i, (crit, q) in enumerate(zip(CRITERIA[name], qs)):
            row: dict[str, Any] = {"dataset": label(name), "name": name, "criterion": crit, "rows": tables[i].n, **q}
            for key, v in values.items():
                row[f"{key}_exact"] = v["values"][i]
                if v["sens"] is not None:
                    row[f"{key}_mean"] = float(np.mean(rel[key][:, i]))
                    row[f"{key}_interval"] = list(interval(rel[key][:, i]))
                    row[f"{key}_sensitivity"] = v["sens"][i]
                    row[f"{key}_proven"] = v["proven"][i]
            rows.append(row)
        per: dict[str, Any] = {}
        for key in MEASURES:
            mean = [float(np.mean(rel[key][:, i])) for i in range(len(crits))]
            per_release = [kendall(list(r), qd) for r in rel[key]]
            proven = values[key]["proven"]
            per[key] = {"tau": kendall(mean, qd), "tau_exact": kendall(values[key]["values"], qd),
                        "tau_gap": kendall(mean, gap),
                        "tau_release_interval": list(interval(per_release)), "p_value": permutation_p(mean, qd),
                        "proven": all(proven) if isinstance(proven, list) else proven,
                        "paper_tau": paper.USECASE_KENDALL.get(name, {}).get(_paper_key(key))}
        control: dict[str, list[float]] = {k: [] for k in CHEAP}
        for seed in range(shuffles):
            shuffled = shuffle_protected(frame, schema, crits, config.seed * 1000 + seed)
            rel_c = releases(exact(shuffled, CHEAP, config))
            for key in CHEAP:
                control[key].append(kendall([float(np.mean(rel_c[key][:, i])) for i in range(len(crits))], qd))
        for key in CHEAP:
            per[key]["control_taus"] = control[key]
            per[key]["control_median_tau"] = float(np.nanmedian(control[key])) if control[key] else math.nan
        summary["datasets"][name] = {"n": tables[0].n, "tau": per, "query_disparity": qd, "gap": gap}
        if name in JUDGED:
            summary["judged"].append(name)
        if name == "adult":
            summary["adult_rates"] = adult_rates(frame)
    return {"experiment": NAME, "rows": rows, "summary": summary, "figures": [draw(config, rows)]}


def _paper_key(key: str) -> str | None:
    return next((p for p, s in PAPER_SERIES.items() if s == key), None)

def adult_rates(frame: Any) -> dict[str, list[float]]:
    """P(income > 50K) overall and by sex, with the rows: ``paper.ADULT_RATES``' layout."""
    y = (frame["income"].astype(str) == ">50K").to_numpy(dtype=float)
    out = {"all": [float(y.mean()), len(y)]}
    for sex in sorted(set(frame["sex"])):
        pick = (frame["sex"] == sex).to_numpy()
        out[str(sex)] = [float(y[pick].mean()), int(pick.sum())]
    return out


def draw(config: Config, rows: list[dict[str, Any]]) -> str:
    names = list(dict.fromkeys(r["name"] for r in rows))
    shown = ("mi_bits", "tvd", "tc_paper", "repair_chunked")

    def plot(axes: Any) -> None:
        for ax, name in zip(axes, names):
            sel = sorted((r for r in rows if r["name"] == name), key=lambda r: r["query_disparity"])
            x = [r["query_disparity"] for r in sel]
            for k, key in enumerate(shown):
                col = f"{key}_mean" if f"{key}_mean" in sel[0] else f"{key}_exact"
                top = max(abs(r[col]) for r in sel) or 1.0
                y = [r[col] / top for r in sel]
                err = ([[(r[col] - r[f"{key}_interval"][0]) / top for r in sel],
                        [(r[f"{key}_interval"][1] - r[col]) / top for r in sel]] if f"{key}_interval" in sel[0] else None)
                ax.errorbar(x, y, yerr=err, marker="os^D"[k], ms=4, capsize=2, lw=1, color=f"C{k}", label=MEASURES[key])
            # one scale: every measure divided by its largest mean on the dataset; the axis takes every interval
            ax.axhline(0.0, color="grey", lw=0.6)
            ax.set_xlabel("query disparity (outcome units)", fontsize=8)
            ax.set_title(f"{label(name)}: 4 criteria", fontsize=9)
            ax.grid(True, ls="--", alpha=0.3)
        axes[0].set_ylabel(f"measure / its largest mean (ε = {EPSILON:g}, {REPS} releases)", fontsize=8)
        handles, labels = axes[0].get_legend_handles_labels()
        axes[-1].axis("off")
        axes[-1].legend(handles, labels, loc="center left", fontsize=8, title="measure (95 % range of releases)")

    return figure(config.out, NAME, plot, ncols=len(names) + 1, size=(3.6, 3.6))


# -- page -----------------------------------------------------------------------------------------------
NOTES = {"mi_bits": "ours non-private; the paper's is released at ε = 10", "tvd": "same definition; Laplace noise",
         "tc": "the paper's way (observed cells, k = 500); its sensitivity 3k/n or 7k/n + ½ makes the noise large",
         "repair": "ours: bag repair over 100-row chunks in file order, each solved exactly; the paper's: its MaxSAT "
                   "encoding (one implication of four per pair, spec §2.3) on chunks of its sample's row order"}


def beside(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for r in result["rows"]:
        ref = PAPER_TABLE.get(r["name"], {}).get(r["criterion"])
        if not ref:
            continue
        for m, value in ref.items():
            series = "query_disparity" if m == "query_disparity" else PAPER_SERIES[m]
            ours = r[series] if m == "query_disparity" else r.get(f"{series}_mean", r[f"{series}_exact"])
            out.append({"dataset": r["dataset"], "criterion": r["criterion"], "measure": m, "series": series,
                        "paper": value, "dpaudit": ours, "interval": r.get(f"{series}_interval"),
                        "exact": r.get(f"{series}_exact", ours), "difference": ours - value,
                        "note": "the paper: 48,837 rows after its cleaning; ours 48,842" if m == "query_disparity"
                        else NOTES[m] + (" (synthetic census: other data than IPUMS)" if r["name"] == "census" else "")})
    return out


def tables(result: dict[str, Any]) -> list[tuple[str | None, list[dict[str, Any]], list[tuple[str, str]]]]:
    s = result["summary"]
    taus = [{"dataset": label(n), "measure": MEASURES[k], "paper_tau": t["paper_tau"], "tau": t["tau"],
             "tau_release_interval": t["tau_release_interval"], "tau_exact": t["tau_exact"], "p_value": t["p_value"],
             "tau_gap": t["tau_gap"],
             "control_median_tau": t.get("control_median_tau"), "proven": t["proven"]}
            for n, d in s["datasets"].items() for k, t in d["tau"].items()]
    tau_cols = [("dataset", "dataset"), ("measure", "measure"), ("paper_tau", "paper τ"), ("tau", "τ (mean of releases)"),
                ("tau_release_interval", "τ 95 % range over releases"), ("tau_exact", "τ (exact values)"),
                ("p_value", "permutation p"), ("control_median_tau", "control τ (shuffled, median)"),
                ("tau_gap", "τ vs the SQL MAX − MIN gap"),
                ("proven", "proven")]
    out = [("Kendall τ of each measure against the query disparity (4 criteria: τ ∈ {0, ±⅓, ±⅔, ±1})", taus, tau_cols),
           ("Beside the paper's exp9 tables", beside(result),
            [("dataset", "dataset"), ("criterion", "criterion"), ("measure", "paper's measure"), ("series", "ours as"),
             ("paper", "paper"), ("dpaudit", "ours (ε = 10 mean)"), ("interval", "95 % range"), ("exact", "exact"),
             ("difference", "difference"), ("note", "why")])]
    if "adult_rates" in s:
        rates = [{"group": g, "paper": paper.ADULT_RATES[g][0], "paper_rows": paper.ADULT_RATES[g][1], "dpaudit": v[0],
                  "rows": v[1], "difference": v[0] - paper.ADULT_RATES[g][0]}
                 for g, v in s["adult_rates"].items() if g in paper.ADULT_RATES]
        out.append(("Adult: P(income > 50K) overall and by sex", rates,
                    [("group", "group"), ("paper", "paper"), ("paper_rows", "paper rows"), ("dpaudit", "ours"),
                     ("rows", "rows"), ("difference", "difference")]))
    out.append(("Every criterion", result["rows"], COLUMNS))
    return out


def claims(result: dict[str, Any]) -> list[dict[str, Any]]:
    s = result["summary"]
    judged = s["judged"]
    out = []
    if judged:
        rule = s["tau_rule"]
        for k, (title, paper_key) in {"tvd": ("U_MI^TVD", "tvd"), "tc_paper": ("the paper's U_TC", "tc")}.items():
            real = {n: s["datasets"][n]["tau"][k] for n in judged}
            reach = {n: sum(at_least(v, max(rule, t["tau"])) for v in t["control_taus"]) for n, t in real.items()}
            out.append(claim(
                experiment="exp9", claim=f"{title} ranks the criteria as the query disparity does",
                rule=f"Kendall τ(ε = {s['epsilon']:g} mean of {s['reps']}, query disparity) ≥ {rule:g} over the 4 "
                     f"criteria on each of {', '.join(judged)}",
                paper="; ".join(f"{n}: {paper.USECASE_KENDALL[n][paper_key]:+.3g}" for n in judged),
                dpaudit="; ".join(f"{n}: τ {t['tau']:+.2f} (releases {t['tau_release_interval'][0]:+.2f}…"
                                  f"{t['tau_release_interval'][1]:+.2f}, p = {t['p_value']:.3f})" for n, t in real.items()),
                control="protected column shuffled (QD kept): " + "; ".join(
                    f"{n} median τ {t['control_median_tau']:+.2f}, {reach[n]} of {len(t['control_taus'])} shuffles "
                    "reach the rule and the data's τ" for n, t in real.items()),
                passes=all(at_least(t["tau"], rule) for t in real.values()),
                control_passes=any(control_meets(t["control_taus"], rule, t["tau"]) for t in real.values()),
                note="4 criteria: τ ∈ {0, ±1/3, ±2/3, ±1}; one swapped pair gives 2/3 (p = 4/24), so the rule cannot "
                     "tell a real ordering from a lucky one better than p ≈ 0.04–0.17; the control passes from 5 % "
                     "of the shuffles"))
        out.append(measurement(
            experiment="exp9", claim="Kendall τ of MI, U_R (paper's chunked, dpaudit's exact) and dpaudit's U_TC "
                                     "against the query disparity",
            paper="; ".join(f"{n}: MI {paper.USECASE_KENDALL[n]['mi_bits']:+.3g}, U_R {paper.USECASE_KENDALL[n]['repair']:+.3g}"
                            for n in judged),
            dpaudit="; ".join(f"{n}: " + ", ".join(f"{k} {s['datasets'][n]['tau'][k]['tau']:+.2f}"
                                                  for k in ("mi_bits", "repair_chunked", "repair_bag", "repair_ci", "tc"))
                              for n in judged),
            note="U_R unproven values (a solver's work limit) are marked in the τ table"))
        out.append(measurement(
            experiment="exp9", claim="Kendall τ against the gap the printed SQL computes (MAX − MIN per stratum, "
                                     "row-weighted) instead of the code's query disparity",
            paper="; ".join(f"{n}: " + ", ".join(f"{k} {v:+.3g}" for k, v in paper.USECASE_KENDALL[n].items())
                            for n in judged),
            dpaudit="; ".join(f"{n}: " + ", ".join(f"{k} {s['datasets'][n]['tau'][k]['tau_gap']:+.2f}"
                                                  for k in ("mi_bits", *RULED, "repair_chunked"))
                              for n in judged),
            note="which of the two the paper's τ was computed against is not in its files; its Adult table's "
                 "numbers are the query disparity"))
    others = [n for n in s["datasets"] if n not in judged]
    for n in others:
        t = s["datasets"][n]["tau"]
        out.append(measurement(
            experiment="exp9", claim=f"{label(n)}: Kendall τ of the measures against the query disparity",
            paper="— (the paper's IPUMS run reports the measures only, no τ)",
            dpaudit=", ".join(f"{k} {v['tau']:+.2f}" for k, v in t.items()),
            note="synthetic census generator at 100,000 rows, not IPUMS" if n == "census" else ""))
    return out
