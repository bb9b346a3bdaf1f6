"""Benchmark: ``dpaudit.audit`` vs the bare DuckDB group-by a user would write by hand, and U_TC vs the
paper's reference code.

Run from the repository root::

    DPAUDIT_DATA=../shared/datasets python benchmarks/bench_fairness.py                 # Adult + census 10M
    DPAUDIT_DATA=../shared/datasets python benchmarks/bench_fairness.py --census-rows 10000000 100000000
    python benchmarks/bench_fairness.py --skip-adult --census-rows 1000000 --repeat 5
    python benchmarks/bench_fairness.py --paper-code DIR   # DIR holds the paper's tuple_contribution.py

What it measures (``benchmarks/README.md`` has the details and the measured numbers):

1. **Adult** (the real 48,842 rows, ``dpaudit.datasets.load("adult")``; needs ``DPAUDIT_DATA``), the
   paper's four criteria, exact: ``audit`` with U_MI^TVD, U_TC, both, and ``count_tables`` alone, vs
   the **baseline**: a fresh DuckDB connection running one ``SELECT cols, count(*) … GROUP BY`` per
   criterion on the frame, each fetched to numpy.
2. **U_TC on Adult vs the paper's reference implementation** (Vologdin, Tao, Gilad, PVLDB 19(9);
   ``tuple_contribution.py`` of github.com/makarenko1/Measures-for-estimating-unfairness-in-data-under-DP,
   loaded from ``--paper-code``/``$DPAUDIT_PAPER_CODE``, never copied here), timed as the paper's
   experiments time it: on a label-encoded frame, ``calculate(criteria, k=500)``; dpaudit on the raw
   frame and on the same encoded frame, both with the reference's observed-cell definition (the values
   are checked equal), and the reference on the raw frame too (its own ``encode_and_clean=True``).
   The target compares like with like (:data:`TC_PAIRS`): dpaudit's value alone on the encoded frame
   vs the reference on it, dpaudit on the raw frame vs the reference encoding it. Without the reference code, a plain
   pandas + numpy implementation of its formula stands in, and the output says so.
3. **Census-like Parquet** (``dpaudit.datasets.synthetic.write_census``, written once to the data
   folder) at each ``--census-rows``, the paper's four IPUMS criteria, vs the same baseline on
   ``read_parquet`` with the binned columns (INCTOT, AGE: equal-width edges) binned by integer
   division. The peak RSS of each side is measured in a fresh process.
4. ``--frame-rows N``: the same census audit on in-memory pandas and polars frames of N rows vs DuckDB
   on the frame (secondary).

Every comparison interleaves the sides in this one process (a b b a …, after one untimed warm-up
each), reports **medians**, the ratio of the medians and the range of the per-round ratios, and
records ``os.getloadavg()`` before and after. Untimed checks show both sides did the same work.

Generated data goes to ``$XDG_CACHE_HOME/dpaudit-bench`` (default ``~/.cache/dpaudit-bench``;
``--data-dir`` overrides; a folder inside this repository is refused), never into the source tree.

Importable (``benchmarks/run_all.py``)::

    run_adult(frame=None, schema=None, *, repeat=21, warmup=1) -> dict
    run_paper_tc(frame=None, schema=None, *, repeat=41, warmup=1, paper_code=None, k=500) -> dict
    run_census(rows, *, data_dir=None, repeat=3, warmup=1, seed=0, dependence=0.5, rss=True) -> dict
    run_frames(rows, *, data_dir=None, repeat=3, warmup=1, seed=0, dependence=0.5) -> dict

Each returns ``{"name", "rows", "baseline", "sides": {side: {"seconds": [...], "median": s,
"ratio": median / baseline median, "round_ratios": [min, max]}}, "load": {"before", "after"},
"check": text, ...}`` (``run_census`` adds ``"peak_rss_mib": {side: MiB}`` from fresh processes).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# Benchmark the working tree this script lives in, whatever copy `pip install -e` points at.
REPO = Path(__file__).resolve().parents[1]
_SRC = REPO / "src"
if (_SRC / "dpaudit" / "__init__.py").is_file():
    sys.path.insert(0, str(_SRC))

import dpaudit  # noqa: E402
from dpaudit import Binned, Categorical, Schema  # noqa: E402
from dpaudit.measures.tvd import u_mi_tvd  # noqa: E402

if str(REPO / "benchmarks") not in sys.path:  # the suite's timing module, shared by every script
    sys.path.append(str(REPO / "benchmarks"))
from _suite.timing import interleaved  # noqa: E402

TARGET_RATIO = 1.5  # audit / baseline, Adult and census
TARGET_RSS_MIB = 2048  # peak RSS of the audit at 100M rows


# --------------------------------------------------------------------------------------------------
# where generated data goes
# --------------------------------------------------------------------------------------------------
def default_data_dir() -> Path:
    """``$XDG_CACHE_HOME/dpaudit-bench``, else ``~/.cache/dpaudit-bench``: outside the source tree."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dpaudit-bench"


def data_dir_of(data_dir: str | Path | None) -> Path:
    """The folder for generated data (created), refusing one inside this repository."""
    folder = Path(data_dir).expanduser().resolve() if data_dir is not None else default_data_dir()
    if folder == REPO or REPO in folder.parents:
        raise SystemExit(f"--data-dir {folder} is inside the repository {REPO}; generated data stays out of the "
                         "source tree (default: $XDG_CACHE_HOME/dpaudit-bench or ~/.cache/dpaudit-bench)")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def census_file(rows: int, data_dir: str | Path | None = None, *, seed: int = 0,
                dependence: float = 0.5) -> tuple[Path, bool]:
    """The census-like Parquet file of ``rows`` rows (written once, then reused while its rows, seed
    and generator version, read from the Parquet metadata, match). Returns the path and whether it
    was reused. Same file name as ``benchmarks/_suite``'s, so both share the cache."""
    from dpaudit.datasets.synthetic import GENERATOR_VERSION, write_census

    folder = data_dir_of(data_dir)
    path = folder / f"census_n{rows}_d{dependence:g}_s{seed}_v{GENERATOR_VERSION}.parquet"
    want = {b"dpaudit.n_rows": str(rows).encode(), b"dpaudit.seed": str(seed).encode(),
            b"dpaudit.generator": f"census v{GENERATOR_VERSION}".encode()}
    if path.is_file():
        try:
            meta = pq.read_metadata(path).metadata or {}
            if all(meta.get(k) == v for k, v in want.items()):
                return path, True
        except (OSError, pa.ArrowInvalid):
            pass
    write_census(path, rows, dependence=dependence, seed=seed)
    return path, False


# --------------------------------------------------------------------------------------------------
# the synthetic Adult-like table (used by bench_repair.py)
# --------------------------------------------------------------------------------------------------
GENERATOR_VERSION = "1"  # bump when the generator below changes, so cached files are regenerated
CHUNK_ROWS = 1_000_000  # rows generated and written per step (one Parquet row group each)
SEX = ("Male", "Female")
SEX_P = (0.669, 0.331)
RACE = ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other")
RACE_P = (0.854, 0.096, 0.032, 0.010, 0.008)
RACE_LOGIT = (0.0, -0.85, 0.05, -0.95, -1.2)  # log-odds shift of >50K by race, roughly Adult's gaps
INCOME = ("<=50K", ">50K")
EDU = tuple(range(1, 17))
EDU_P = np.array([0.002, 0.005, 0.010, 0.020, 0.016, 0.029, 0.036, 0.013,
                  0.323, 0.224, 0.042, 0.033, 0.164, 0.053, 0.018, 0.013])
EDU_P = EDU_P / EDU_P.sum()
EDU_RATE = np.array([0.01, 0.036, 0.048, 0.062, 0.053, 0.066, 0.051, 0.076,  # P(>50K | education-num)
                     0.16, 0.19, 0.261, 0.248, 0.415, 0.557, 0.734, 0.741])
HOURS = tuple(range(1, 100))
HOURS_EDGES = (1, 20, 30, 40, 41, 50, 60, 100)  # Binned variant: 7 bins of hours-per-week
CRITERIA = ("education-num ⊥ income", "sex ⊥ income", "race ⊥ income", "sex ⊥ income | hours-per-week")


def _chunk(rows: int, seed: int, index: int) -> pa.Table:
    """One chunk of the synthetic Adult-like table; deterministic in (seed, index)."""
    rng = np.random.default_rng([seed, index])
    male = rng.random(rows) < SEX_P[0]
    race = rng.choice(len(RACE), size=rows, p=RACE_P)
    edu_code = rng.choice(len(EDU), size=rows, p=EDU_P)
    bell = rng.normal(np.where(male, 44.0, 35.0), 12.0)  # hours: a spike at 40, else a sex-dependent bell
    bell = np.where(rng.random(rows) < 0.5, np.round(bell / 5.0) * 5.0, np.round(bell))
    hours = np.where(rng.random(rows) < 0.45, 40.0, bell).clip(1, 99).astype(np.int64)
    logit = (np.log(EDU_RATE / (1 - EDU_RATE))[edu_code] + np.where(male, 0.45, -0.9)
             + np.asarray(RACE_LOGIT)[race] + 0.035 * (hours - 40))
    rich = rng.random(rows) < 1.0 / (1.0 + np.exp(-logit))

    def strings(codes: np.ndarray, labels: Sequence[str]) -> pa.Array:
        dictionary = pa.array(labels, type=pa.string())
        return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), dictionary).cast(pa.string())

    return pa.table({
        "sex": strings(np.where(male, 0, 1), SEX),
        "race": strings(race, RACE),
        "education-num": pa.array(np.asarray(EDU, dtype=np.int64)[edu_code]),
        "hours-per-week": pa.array(hours),
        "income": strings(rich.astype(np.int64), INCOME),
    })


def dataset(rows: int, seed: int, data_dir: str | Path | None = None) -> tuple[Path, bool]:
    """The synthetic Adult-like Parquet file (in the data folder), generated in 1M-row chunks unless a
    matching one exists. Returns the path and whether it was reused."""
    folder = data_dir_of(data_dir)
    path = folder / f"adult_synth_n{rows}_s{seed}.parquet"
    want = {b"dpaudit_bench_rows": str(rows).encode(), b"dpaudit_bench_seed": str(seed).encode(),
            b"dpaudit_bench_generator": GENERATOR_VERSION.encode()}
    if path.is_file():
        try:
            meta = pq.read_metadata(path)
            if meta.num_rows == rows and all((meta.metadata or {}).get(k) == v for k, v in want.items()):
                return path, True
        except (OSError, pa.ArrowInvalid):
            pass
    if rows <= 0:
        raise SystemExit("rows must be positive")
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    writer = None
    try:
        for index, start in enumerate(range(0, rows, CHUNK_ROWS)):
            table = _chunk(min(CHUNK_ROWS, rows - start), seed, index)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema.with_metadata(want), compression="snappy")
            writer.write_table(table.replace_schema_metadata(want), row_group_size=CHUNK_ROWS)
        assert writer is not None
        writer.close()
        writer = None
        tmp.replace(path)
    finally:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)
    return path, False


def schema(binned_hours: bool = False) -> Schema:
    """The declared schema of the synthetic Adult-like table."""
    return Schema({
        "sex": Categorical(SEX), "race": Categorical(RACE), "income": Categorical(INCOME),
        "education-num": Categorical(EDU),
        "hours-per-week": Binned(HOURS_EDGES) if binned_hours else Categorical(HOURS),
    })


# --------------------------------------------------------------------------------------------------
# the baseline: the group-bys a user writes by hand
# --------------------------------------------------------------------------------------------------
def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def integer_division(domain: Binned) -> tuple[float, float]:
    """``(first edge, width)`` of equally spaced bin edges; the bin of x is ``(x − first) // width``."""
    edges = domain.edges
    width = edges[1] - edges[0]
    if not all(math.isfinite(e) for e in edges) or any(b - a != width for a, b in zip(edges, edges[1:])):
        raise ValueError(f"edges {edges} are not equally spaced: the hand-written baseline bins by integer division")
    return edges[0], width


def group_by_sql(source: str, columns: Sequence[str], sch: Schema) -> str:
    """``SELECT cols, count(*) AS n FROM source GROUP BY ALL``, binned columns by integer division."""
    select = []
    for c in columns:
        dom = sch[c]
        if isinstance(dom, Binned):
            first, width = integer_division(dom)
            select.append(f"({_q(c)} - {first:g}) // {width:g} AS {_q(c)}")
        else:
            select.append(_q(c))
    return f"SELECT {', '.join(select)}, count(*) AS n FROM {source} GROUP BY ALL"


def criterion_columns(criteria: Sequence[str]) -> list[tuple[str, ...]]:
    """Each criterion's columns in dpaudit's order (A, P, O)."""
    return [c.columns for c in dpaudit.parse_criteria(criteria)]


def duckdb_counts(source: str, sqls: Sequence[str], frame: Any = None) -> list[dict[str, np.ndarray]]:
    """The baseline: a fresh DuckDB connection, one query per criterion, each fetched to numpy."""
    con = duckdb.connect()
    try:
        if frame is not None:
            con.register(source, frame)
        return [con.sql(sql).fetchnumpy() for sql in sqls]
    finally:
        con.close()


def _dense(result: dict[str, np.ndarray], cols: Sequence[str], sch: Schema) -> np.ndarray:
    """The baseline's grouped rows as a dense (A, P, O) table, for the untimed check."""
    index, dims = [], []
    for c in cols:
        dom = sch[c]
        if isinstance(dom, Binned):
            codes = np.asarray(result[c], dtype=np.int64)
        else:
            lookup = {v: i for i, v in enumerate(dom.values)}
            codes = np.array([lookup[v.item() if hasattr(v, "item") else v] for v in result[c]], dtype=np.int64)
        index.append(codes)
        dims.append(dom.size)
    flat = np.ravel_multi_index(tuple(index), tuple(dims))
    return np.bincount(flat, weights=np.asarray(result["n"], dtype=np.float64), minlength=math.prod(dims))


def check(result: dpaudit.AuditResult, baseline: list[dict[str, np.ndarray]], criteria: Sequence[str],
          sch: Schema, rows: int) -> str:
    """Untimed: the audit counted ``rows`` rows and its per-criterion U_MI^TVD equals the formula on the
    baseline's counts, so both sides did the same work."""
    assert result.n == rows, (result.n, rows)
    worst = 0.0
    got = result["tvd"].per_criterion
    assert got is not None
    for value, counted, crit in zip(got, baseline, dpaudit.parse_criteria(criteria)):
        sizes = [math.prod(sch[c].size for c in side) for side in (crit.admissible, crit.protected, crit.outcome)]
        expected = u_mi_tvd(np.rint(_dense(counted, crit.columns, sch)).astype(np.int64).reshape(sizes))
        worst = max(worst, abs(value - expected) / max(abs(expected), 1e-300))
    assert worst <= 1e-9, worst
    return f"n = {rows:,} and U_MI^TVD of every criterion equal the baseline's counts (rel. diff {worst:.0e})"


# --------------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------------
def summarize(times: dict[str, list[float]], baseline: str) -> dict[str, dict[str, Any]]:
    """Median of each side, its ratio to the baseline's median, and the range of per-round ratios."""
    base = statistics.median(times[baseline])
    out = {}
    for name, seconds in times.items():
        rounds = [a / b for a, b in zip(seconds, times[baseline])]
        out[name] = {"seconds": seconds, "median": statistics.median(seconds),
                     "ratio": statistics.median(seconds) / base, "round_ratios": [min(rounds), max(rounds)]}
    return out


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def status_mib(field: str) -> float | None:
    """``VmRSS`` / ``VmHWM`` of this process from /proc (Linux), MiB; None elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def reset_high_water_mark() -> bool:
    """Reset this process's peak RSS (``echo 5 > /proc/self/clear_refs``, Linux ≥ 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def ru_maxrss_mib() -> float:
    """``ru_maxrss`` of this process (KiB on Linux, bytes on macOS). On Linux a process started by
    fork + exec inherits its parent's peak here, so it overstates a fresh child's own peak."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far: ``VmHWM`` (the high-water mark of this
    process's own memory, not inherited across exec) where /proc exists, else ``ru_maxrss``."""
    hwm = status_mib("VmHWM")
    return hwm if hwm is not None else ru_maxrss_mib()


def _run(name: str, rows: int, fns: dict[str, Callable[[], Any]], baseline: str, repeat: int, warmup: int,
         verify: Callable[[], str], **extra: Any) -> dict[str, Any]:
    before = load()
    times = interleaved(fns, repeat, warmup=warmup)
    after = load()
    return {"name": name, "rows": rows, "baseline": baseline, "sides": summarize(times, baseline),
            "load": {"before": before, "after": after}, "check": verify(), "repeat": repeat, **extra}


# --------------------------------------------------------------------------------------------------
# 1. Adult
# --------------------------------------------------------------------------------------------------
def _adult(frame: Any, sch: Schema | None) -> tuple[Any, Schema]:
    if frame is None:
        return dpaudit.datasets.load("adult")
    return frame, sch if sch is not None else dpaudit.datasets.info("adult").schema


def run_adult(frame: Any = None, schema: Schema | None = None, *, repeat: int = 21, warmup: int = 1) -> dict[str, Any]:
    """Adult (pandas frame), the paper's four criteria, exact: audit (U_MI^TVD, U_TC, both) and
    ``count_tables`` vs the hand-written DuckDB group-bys on the frame."""
    frame, sch = _adult(frame, schema)
    criteria = dpaudit.datasets.preset("adult")
    crits = dpaudit.parse_criteria(criteria)
    sqls = [group_by_sql("adult", cols, sch) for cols in criterion_columns(criteria)]

    def audit(*measures: str) -> Callable[[], Any]:
        return lambda: dpaudit.audit(frame, criteria, measures=measures, epsilon=None, schema=sch)

    fns = {"baseline: DuckDB group-by ×4": lambda: duckdb_counts("adult", sqls, frame),
           "audit tvd": audit("tvd"), "audit tc": audit("tc"), "audit tvd+tc": audit("tvd", "tc"),
           "count_tables": lambda: dpaudit.count_tables(frame, crits, sch)}
    return _run("Adult (pandas frame)", len(frame), fns, "baseline: DuckDB group-by ×4", repeat, warmup,
                lambda: check(audit("tvd")(), duckdb_counts("adult", sqls, frame), criteria, sch, len(frame)),
                sql=sqls)


# --------------------------------------------------------------------------------------------------
# 2. U_TC vs the paper's reference implementation
# --------------------------------------------------------------------------------------------------
PAPER_REPO = "https://github.com/makarenko1/Measures-for-estimating-unfairness-in-data-under-DP"


class FormulaTC:
    """Stand-in for the paper's reference code when it is not available: U_TC as the paper defines it
    (Alg. 3; dpaudit spec fairness.md §2.2) in plain pandas + numpy, over the cells that occur:
    ``MD(a,p,o) = Pr(a) · |Pr(p,o|a) − Pr(p|a)·Pr(o|a)| = |c(a,p,o) − c(a,p)·c(a,o)/c(a)| / n``, the sum of
    the k largest MD per criterion, summed over criteria. Same interface as the reference's class."""

    def __init__(self, data: Any) -> None:
        self.dataset = data.copy()

    def calculate(self, fairness_criteria: Sequence[Sequence[str]], k: int = 500, epsilon: float | None = None) -> float:
        n = len(self.dataset)
        total = 0.0
        for criterion in fairness_criteria:
            protected, outcome, *admissible = criterion
            counts = self.dataset.groupby([*admissible, protected, outcome]).size()
            block = counts.groupby(level=list(range(len(admissible)))).transform("sum") if admissible else n
            keys_p = [*range(len(admissible)), len(admissible)]
            keys_o = [*range(len(admissible)), len(admissible) + 1]
            c_p = counts.groupby(level=keys_p).transform("sum")
            c_o = counts.groupby(level=keys_o).transform("sum")
            md = np.abs(counts.to_numpy() - c_p.to_numpy() * c_o.to_numpy() / np.asarray(block)) / n
            total += float(np.sort(md)[::-1][:k].sum())
        if epsilon is not None:  # the reference's noise: 7k/n + 1/2 per criterion (3k/n + 1/2 without A)
            per = (7 if any(len(c) > 2 for c in fairness_criteria) else 3) * k / n + 0.5
            total += float(np.random.default_rng().laplace(0.0, len(fairness_criteria) * per / epsilon))
        return total


def paper_reference(paper_code: str | Path | None = None) -> tuple[Any, str]:
    """The reference's ``TupleContribution`` class from ``paper_code`` (or ``$DPAUDIT_PAPER_CODE``): a
    folder holding ``tuple_contribution.py`` of the paper's repository; else :class:`FormulaTC`.
    Returns the class and a description of what was loaded."""
    folder = paper_code or os.environ.get("DPAUDIT_PAPER_CODE")
    if folder:
        path = Path(folder).expanduser() / "tuple_contribution.py"
        if not path.is_file():
            raise SystemExit(f"--paper-code {folder}: no tuple_contribution.py there (a checkout of {PAPER_REPO})")
        spec = importlib.util.spec_from_file_location("paper_tuple_contribution", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        import hashlib

        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
        return module.TupleContribution, f"the paper's reference code ({path}, sha256 {digest}…; {PAPER_REPO})"
    return FormulaTC, ("a stand-in: the paper's U_TC formula in plain pandas + numpy (FormulaTC; pass --paper-code "
                       f"with a checkout of {PAPER_REPO} to time the reference itself)")


def label_encoded(frame: Any, columns: Sequence[str], sch: Schema) -> tuple[Any, Schema]:
    """The columns as the paper's experiments feed them to the reference (``main.py``'s
    ``_encode_and_clean``: text columns label-encoded in sorted order, numeric ones as they are), and the
    matching dpaudit schema."""
    import pandas as pd

    out, doms = {}, {}
    for c in columns:
        values = frame[c]
        if pd.api.types.is_numeric_dtype(values):
            out[c], doms[c] = values.to_numpy(), sch[c]
        else:
            labels = sorted(values.astype(str).unique())
            out[c] = pd.Categorical(values.astype(str), categories=labels).codes.astype(np.int64)
            doms[c] = Categorical(range(len(labels)))
    return pd.DataFrame(out), Schema(doms)


def run_paper_tc(frame: Any = None, schema: Schema | None = None, *, repeat: int = 41, warmup: int = 1,
                 paper_code: str | Path | None = None, k: int = 500) -> dict[str, Any]:
    """U_TC on Adult, dpaudit vs the paper's reference implementation (baseline), both over the cells
    that occur (the reference's definition), k = 500. The reference is timed as the paper's runtime
    experiments time it: ``calculate`` on an already label-encoded frame, the object built beforehand."""
    frame, sch = _adult(frame, schema)
    criteria = dpaudit.datasets.preset("adult")
    crits = dpaudit.parse_criteria(criteria)
    as_paper = [[c.protected[0], c.outcome[0], *c.admissible] for c in crits]  # (protected, response[, admissible])
    columns = list(dict.fromkeys(col for c in crits for col in c.columns))
    encoded, encoded_schema = label_encoded(frame, columns, sch)
    reference_class, source = paper_reference(paper_code)
    reference = reference_class(data=encoded)

    def quiet(fn: Callable[[], Any]) -> Callable[[], Any]:
        def call() -> Any:
            with contextlib.redirect_stdout(io.StringIO()):  # the reference prints a line per call
                return fn()
        return call

    def tc(data: Any, sch_: Schema, **kw: Any) -> Callable[[], Any]:
        return lambda: dpaudit.audit(data, criteria, measures=("tc",), schema=sch_, k=k, cells="observed", **kw)

    base = "paper reference, encoded frame"
    fns = {base: quiet(lambda: reference.calculate(as_paper, k=k, epsilon=None)),
           "dpaudit tc, raw frame": tc(frame, sch),
           "dpaudit tc, encoded frame": tc(encoded, encoded_schema),
           "dpaudit tc value only, encoded frame": tc(encoded, encoded_schema, name_cells=0),
           "paper reference ε=1, encoded frame": quiet(lambda: reference.calculate(as_paper, k=k, epsilon=1.0)),
           "dpaudit tc ε=1 (value only), raw frame": tc(frame, sch, epsilon=1.0, name_cells=0)}

    def verify() -> str:
        ref = quiet(lambda: reference.calculate(as_paper, k=k, epsilon=None))()
        ours = [tc(frame, sch)()["tc"].value, tc(encoded, encoded_schema)()["tc"].value]
        worst = max(abs(v - ref) / max(abs(ref), 1e-300) for v in ours)
        assert worst <= 1e-12, (ours, ref)
        return f"U_TC (observed cells, k = {k}) equal: {ref:.10f} (rel. diff {worst:.0e})"

    if "encode_and_clean" in reference_class.calculate.__code__.co_varnames:  # the reference's own encoder
        raw = reference_class(data=frame)
        fns[RAW_REFERENCE] = quiet(lambda: raw.calculate(as_paper, k=k, epsilon=None, encode_and_clean=True))
    return _run("U_TC on Adult vs the paper's code", len(frame), fns, base, repeat, warmup, verify, reference=source)


#: The like-for-like pairs of :func:`run_paper_tc` (dpaudit side, reference side): U_TC "no slower
#: than the paper's code" compares what each is given and returns — the value alone (the reference
#: names no cells; dpaudit's exact mode lists the top 10 unless ``name_cells=0``) from the
#: label-encoded frame the paper's experiments time, and from the raw frame (the reference then
#: encodes it itself, ``encode_and_clean=True``).
RAW_REFERENCE = "paper reference, raw frame (its encode_and_clean)"
TC_PAIRS = (("dpaudit tc value only, encoded frame", "paper reference, encoded frame"),
            ("dpaudit tc, raw frame", RAW_REFERENCE))


def tc_misses(paper: dict[str, Any]) -> list[str]:
    """The same-input pairs (:data:`TC_PAIRS`) in which dpaudit's median is above the reference's."""
    sides = paper["sides"]
    return [f"U_TC {ours} {sides[ours]['median'] / sides[ref]['median']:.2f}x {ref}"
            for ours, ref in TC_PAIRS if ref in sides and sides[ours]["median"] > sides[ref]["median"]]


# --------------------------------------------------------------------------------------------------
# 3. census-like Parquet
# --------------------------------------------------------------------------------------------------
def _census_workload(path: Path) -> tuple[tuple[str, ...], Schema, str, list[str]]:
    from dpaudit.datasets.synthetic import CENSUS_PRESET, CENSUS_SCHEMA

    source = "read_parquet('" + str(path).replace("'", "''") + "')"
    sqls = [group_by_sql(source, cols, CENSUS_SCHEMA) for cols in criterion_columns(CENSUS_PRESET)]
    return CENSUS_PRESET, CENSUS_SCHEMA, source, sqls


def run_census(rows: int, *, data_dir: str | Path | None = None, repeat: int = 3, warmup: int = 1, seed: int = 0,
               dependence: float = 0.5, rss: bool = True) -> dict[str, Any]:
    """The census-like Parquet file of ``rows`` rows, the paper's four IPUMS criteria, exact: audit
    (U_MI^TVD; U_MI^TVD + U_TC) and ``count_tables`` vs the hand-written DuckDB group-bys on
    ``read_parquet`` (integer-division binning). With ``rss``, the peak RSS of the audit and of the
    baseline, each alone in a fresh process."""
    path, reused = census_file(rows, data_dir, seed=seed, dependence=dependence)
    criteria, sch, source, sqls = _census_workload(path)
    crits = dpaudit.parse_criteria(criteria)

    def audit(*measures: str) -> Callable[[], Any]:
        return lambda: dpaudit.audit(str(path), criteria, measures=measures, epsilon=None, schema=sch)

    base = "baseline: DuckDB group-by ×4"
    fns = {base: lambda: duckdb_counts(source, sqls), "audit tvd": audit("tvd"), "audit tvd+tc": audit("tvd", "tc"),
           "count_tables": lambda: dpaudit.count_tables(str(path), crits, sch)}
    result = _run("census (Parquet file)", rows, fns, base, repeat, warmup,
                  lambda: check(audit("tvd")(), duckdb_counts(source, sqls), criteria, sch, rows),
                  path=str(path), mib=path.stat().st_size / 2**20, reused=reused, sql=sqls)
    if rss:
        result["peak_rss_mib"] = {side: fresh_process(side, path)["peak_rss_mib"] for side in ("audit", "baseline")}
    return result


def child(kind: str, path: Path) -> int:
    """Run one side once in this (fresh) process and print its wall time and peak RSS as JSON."""
    criteria, sch, source, sqls = _census_workload(path)
    after_imports = peak_rss_mib()
    t0 = time.perf_counter()
    if kind == "audit":
        dpaudit.audit(str(path), criteria, measures=("tvd", "tc"), epsilon=None, schema=sch)
    else:
        duckdb_counts(source, sqls)
    print(json.dumps({"kind": kind, "seconds": time.perf_counter() - t0, "peak_rss_mib": peak_rss_mib(),
                      "after_imports_mib": after_imports}))
    return 0


def fresh_process(kind: str, path: Path) -> dict[str, Any]:
    """One side alone in a new Python process (its peak RSS is then its own)."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--_child", kind, "--_path", str(path)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the {kind} child process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------------
# 4. in-memory frames
# --------------------------------------------------------------------------------------------------
def run_frames(rows: int, *, data_dir: str | Path | None = None, repeat: int = 3, warmup: int = 1, seed: int = 0,
               dependence: float = 0.5) -> dict[str, Any]:
    """The census audit (U_MI^TVD) on in-memory pandas and polars frames of ``rows`` rows, loaded as a
    user would (``pd.read_parquet``, ``pl.read_parquet``), vs the hand-written group-bys run by DuckDB
    on the same frame. Returns ``{"pandas": result, "polars": result}`` (polars if installed)."""
    import pandas as pd

    path, _ = census_file(rows, data_dir, seed=seed, dependence=dependence)
    criteria, sch, _source, _ = _census_workload(path)
    sqls = [group_by_sql("frame", cols, sch) for cols in criterion_columns(criteria)]
    frames: dict[str, Any] = {"pandas": pd.read_parquet(path)}
    with contextlib.suppress(ImportError):
        import polars as pl

        frames["polars"] = pl.read_parquet(path)
    out = {}
    base = "baseline: DuckDB group-by ×4 on the frame"
    for name, frame in frames.items():
        fns = {base: lambda f=frame: duckdb_counts("frame", sqls, f),
               "audit tvd": lambda f=frame: dpaudit.audit(f, criteria, measures=("tvd",), epsilon=None, schema=sch)}
        out[name] = _run(f"census, {name} frame", rows, fns, base, repeat, warmup,
                         lambda f=frame: check(dpaudit.audit(f, criteria, schema=sch), duckdb_counts("frame", sqls, f),
                                               criteria, sch, rows))
    return out


# --------------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------------
def print_result(result: dict[str, Any]) -> None:
    print(f"\n{result['name']}, {result['rows']:,} rows — medians of {result['repeat']} interleaved runs; "
          f"load {result['load']['before']} → {result['load']['after']}")
    for side, s in result["sides"].items():
        rng = "" if side == result["baseline"] else f"  (rounds {s['round_ratios'][0]:.2f}–{s['round_ratios'][1]:.2f}x)"
        print(f"  {side:<50} {s['median'] * 1e3:10.2f} ms   {s['ratio']:6.2f}x{rng}")
    if "peak_rss_mib" in result:
        print("  peak RSS, fresh process: " + ", ".join(f"{k} {v:,.0f} MiB" for k, v in result["peak_rss_mib"].items()))
    if "reference" in result:
        print(f"  reference: {result['reference']}")
    print(f"  check: {result['check']}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--census-rows", type=int, nargs="*", default=[10_000_000],
                    help="rows of each census Parquet file (default 10,000,000; e.g. 10000000 100000000)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per side (default: 21 on Adult, 41 for U_TC, 5 at ≤10M census rows, 3 above)")
    ap.add_argument("--frame-rows", type=int, default=0, help="also time in-memory pandas/polars census frames")
    ap.add_argument("--skip-adult", action="store_true", help="skip Adult and the U_TC comparison")
    ap.add_argument("--no-rss", action="store_true", help="skip the fresh-process peak RSS runs")
    ap.add_argument("--paper-code", default=None, help=f"folder with tuple_contribution.py from {PAPER_REPO}")
    ap.add_argument("--data-dir", default=None, help="generated data (default $XDG_CACHE_HOME/dpaudit-bench)")
    ap.add_argument("--json", type=Path, default=None, help="write every result (all repeats) to this file")
    ap.add_argument("--_child", choices=("audit", "baseline"), help=argparse.SUPPRESS)
    ap.add_argument("--_path", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        return child(args._child, args._path)

    print(f"dpaudit {dpaudit.__version__} from {Path(dpaudit.__file__).parent} | duckdb {duckdb.__version__} | "
          f"pyarrow {pa.__version__} | numpy {np.__version__} | Python {platform.python_version()} | "
          f"{os.cpu_count()} CPU(s) | load {load()}")
    results: list[dict[str, Any]] = []
    misses: list[str] = []
    if not args.skip_adult:
        try:
            frame, sch = dpaudit.datasets.load("adult")
        except dpaudit.DPAuditError as exc:
            print(f"\nAdult skipped: {str(exc).splitlines()[0]}")
        else:
            adult = run_adult(frame, sch, repeat=args.repeat or 21)
            paper = run_paper_tc(frame, sch, repeat=args.repeat or 41, paper_code=args.paper_code)
            for r in (adult, paper):
                print_result(r)
                results.append(r)
            misses += [f"Adult {side} {s['ratio']:.2f}x" for side, s in adult["sides"].items()
                       if side.startswith("audit") and s["ratio"] > TARGET_RATIO]
            misses += tc_misses(paper)
    for rows in args.census_rows:
        r = run_census(rows, data_dir=args.data_dir, repeat=args.repeat or (5 if rows <= 10_000_000 else 3),
                       rss=not args.no_rss)
        print_result(r)
        results.append(r)
        misses += [f"census {rows:,} {side} {s['ratio']:.2f}x" for side, s in r["sides"].items()
                   if side.startswith("audit") and s["ratio"] > TARGET_RATIO]
        if r.get("peak_rss_mib", {}).get("audit", 0) > TARGET_RSS_MIB:
            misses.append(f"census {rows:,} peak RSS {r['peak_rss_mib']['audit']:,.0f} MiB")
    if args.frame_rows:
        for r in run_frames(args.frame_rows, data_dir=args.data_dir, repeat=args.repeat or 3).values():
            print_result(r)
            results.append(r)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"\nTargets: audit ≤ {TARGET_RATIO:g}x the baseline, U_TC no slower than the paper's code, "
          f"peak RSS ≤ {TARGET_RSS_MIB:,} MiB: " + ("all met" if not misses else "MISSED: " + "; ".join(misses)))
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
