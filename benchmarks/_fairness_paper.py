"""U_TC on Adult, dpaudit vs the paper's reference implementation (``bench_fairness.py`` part 2): the
reference loaded from a checkout (else a plain pandas stand-in of its formula), the label-encoded frame
its experiments time, the run and the like-for-like pairs the target is judged on."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _fairness_data import adult_data
from _suite.timing import run_sides

import dpaudit
from dpaudit import Categorical, Schema

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
    frame, sch = adult_data(frame, schema)
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
        privacy = kw if "epsilon" in kw else {"exact": True, **kw}
        return lambda: dpaudit.audit(data, criteria, measures=("tc",), schema=sch_, k=k, cells="observed", **privacy)

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
    return run_sides("U_TC on Adult vs the paper's code", len(frame), fns, base, repeat, warmup, verify, reference=source)


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
