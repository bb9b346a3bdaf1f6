"""Audit a dataset: count once per criterion, compute measures on the tables, release them.

``audit(data, criteria, epsilon=1.0, schema=...)`` (or ``exact=True``) follows the data flow of the
architecture sketch: counts (one pass over the data for all criteria) → exact measures on count tables → release
(OpenDP Laplace noise, debited from a budget) → a frozen :class:`AuditResult` that keeps the explain
trail (what was counted, which mechanism, ε, sensitivity) and prints a readable table.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from dpaudit._audit_args import NO_PRIVACY_CHOICE, PYTHON_HINT, left_out_note, resolve_measures, split_budget
from dpaudit._defaults import (  # not the WCNF encoder: imported when used
    DEFAULT_MEASURES,
    DEFAULT_WCNF_SEMANTICS,
    MAX_CLAUSES,
)
from dpaudit._errors import DPAuditError, SchemaError
from dpaudit._format import epsilon_text, plural
from dpaudit._progress import progress_callback
from dpaudit._validation import positive
from dpaudit.counting import DEFAULT_ENGINE, check_engine, count_tables, describe, engine_of, infer_schema, open_data
from dpaudit.criteria import CriterionLike, parse_criteria
from dpaudit.details import hook
from dpaudit.diagnostics import DIAGNOSTIC_SHARE, check_share, diagnose_exact, diagnose_private, diagnostic_epsilon
from dpaudit.measures import Measure, options_doc
from dpaudit.privacy import Budget, exact_release, laplace_release
from dpaudit.privacy._mechanisms import derive_seed
from dpaudit.results import AuditResult, BudgetState, MeasureResult
from dpaudit.schema import Schema

__all__ = ["audit", "AuditResult", "MeasureResult", "split_budget", "repair_wcnf", "resolve_measures",
           "NO_PRIVACY_CHOICE", "PYTHON_HINT", "left_out_note"]


def _resolve_schema(data: Any, schema: Schema | str | None) -> Schema:
    if isinstance(schema, Schema):
        return schema
    if schema == "infer":
        return infer_schema(data)
    if schema is None:
        raise SchemaError(
            "no schema given: declare the domains (schema=Schema({...}) or a JSON file), or pass "
            "schema='infer' to read them off the data (the result is then not DP)"
        )
    raise SchemaError(f"schema must be a Schema, 'infer' or None, got {schema!r}")


def audit(
    data: Any,
    criteria: CriterionLike | Iterable[CriterionLike],
    *,
    measures: str | Measure | Sequence[str | Measure] | None = None,
    epsilon: float | None = None,
    exact: bool = False,
    schema: Schema | str | None = None,
    budget: Budget | None = None,
    split: Mapping[str, float] | None = None,
    seed: int | None = None,
    engine: str = DEFAULT_ENGINE,
    progress: bool | Callable[[str], None] | None = None,
    diagnostic_share: float | None = None,
    **options: Any,
) -> AuditResult:
    """Measure how far the data are from satisfying fairness criteria, privately.

    Privacy is explicit: give ``epsilon`` (a DP release) or ``exact=True`` (exact values for the data
    curator, not DP); an audit with neither is refused. Every argument is validated before any row is read.

    Parameters
    ----------
    data : pandas/polars/pyarrow frame, DuckDB relation, PySpark DataFrame, or CSV/Parquet path
        A lazy frame (DuckDB, Spark) is grouped by its own engine; only the grouped counts are fetched.
    criteria : str, Criterion, or a list of them
        E.g. ``"sex ⊥ income | education-num"``; each measure is summed over the criteria.
    measures : name, Measure, or a sequence of them, default ("tvd", "tc")
        Registered names (:data:`dpaudit.measures.MEASURES`: ``"tvd"``, ``"tc"``, ``"repair"``) or
        configured measures (``TopContribution(k=10)``, ``Repair(semantics="bag")``). The default,
        U_MI^TVD and U_TC, is that of ``dpaudit fairness``; U_R (``"repair"``) solves one optimisation
        per block and can take minutes on large data, so it is computed only when asked for
        (``measures=("tvd", "tc", "repair")``) — a defaulted result says so in its explain trail.
    epsilon : float
        Total privacy loss of this audit, shared by ``split`` across the measures. Required unless
        ``exact=True``.
    exact : bool, default False
        Exact values for the data curator: no noise, not DP, with per-criterion values, non-private
        baselines and the per-group rates (:meth:`AuditResult.by_group`). Refused beside ``epsilon``.
    schema : Schema, 'infer' or None
        Declared domains. ``'infer'`` reads them off the data; the result then says it is not DP.
    budget : Budget, optional
        An accountant to debit (for several audits of the same data); by default a fresh
        ``Budget(epsilon)``. Each measure's ε is debited before its value is released.
    split : mapping of measure name to fraction, optional
        How ``epsilon`` is shared; equal shares by default.
    seed : int, optional
        Reproducible noise for tests only; voids the DP guarantee (the result says so).
    engine : str, default "duckdb"
        Where the rows are counted: a name in :data:`dpaudit.counting.ENGINES` (``docs/engines.md``).
        A frame native to a registered engine (a Spark DataFrame) is counted by that engine whatever
        the name. The registered engines:

{engines}
    progress : bool or callable, default None (silent)
        ``True`` writes one line per step to stderr, with the seconds since the start (shown in a
        notebook, a log or a pipe as well as on a terminal; U_R's block lines at most one every 2 s,
        :mod:`dpaudit._progress`). A callable is called with a short description of each step as it
        starts (counting the rows, then each measure) and, for U_R, after every block
        (``"U_R (bag) P ⊥ O | A: block 3/11 exact, 4.2 s"``); ``dpaudit fairness`` shows it in a
        spinner when stderr is a terminal.
    progress : callable, optional
        Called with a short description of each step as it starts (counting the rows, then each
        measure) and, for U_R, after every block (``"U_R (bag) P ⊥ O | A: block 3/11 exact, 4.2 s"``);
        ``dpaudit fairness`` shows it in a spinner when stderr is a terminal.
    diagnostic_share : float, default None (0.05, ``DIAGNOSTIC_SHARE``; DP audits only)
        The fraction of ``epsilon`` the block diagnostic (:mod:`dpaudit.diagnostics`: the share of rows
        in blocks of fewer than 20 rows) may spend, taken off before the measures share the rest; spent
        only when a criterion has so many blocks that the public bound cannot rule the warning out. 0
        releases nothing (the diagnostic then reports the public bound only).
    **options
        Options of the measures named by string, by the name of the measure's field (where its default
        lives; None: the default). Each goes to every requested measure that takes it; one that no
        registered or no requested measure takes is refused. The options of the registered measures:

{options}

    Returns
    -------
    AuditResult

    References
    ----------
    Vologdin, Tao, Gilad, "Measuring Database Unfairness via Dependency Quantification Under
    Differential Privacy", PVLDB 19(9), Algorithms 1–3; dpaudit spec ``fairness.md`` §2–3.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpaudit import Categorical, Schema, audit
    >>> df = pd.DataFrame({"sex": ["F"] * 50 + ["M"] * 50, "y": [1] * 25 + [0] * 25 + [1] * 40 + [0] * 10})
    >>> s = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1])})
    >>> res = audit(df, "sex ⊥ y", schema=s, exact=True)
    >>> list(res), round(res["tvd"].value, 4), res.dp
    (['tvd', 'tc'], 0.045, False)
    >>> audit(df, "sex ⊥ y", schema=s, measures="tvd", epsilon=1.0)["tvd"].release.scale
    0.16
    >>> audit(df, "sex ⊥ y", schema=s)
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: say how private the audit is: epsilon=<float> for a DP release (e.g. epsilon=1.0), or exact=True for exact values for the data curator (not DP)
    """
    engine = check_engine(engine)
    source = os.fspath(data) if isinstance(data, (str, os.PathLike)) else None  # the file, as given
    progress = progress_callback(progress)
    if not isinstance(exact, bool):
        raise DPAuditError(f"exact must be True or False, got {exact!r}")
    if exact and epsilon is not None:
        raise DPAuditError("exact=True asks for exact, non-private values and epsilon for a DP release: pass one of them")
    crits = parse_criteria(criteria)
    chosen = resolve_measures(DEFAULT_MEASURES if measures is None else measures, **options)
    names = [m.name for m in chosen]
    if seed is not None:
        from dpaudit._validation import seed_value

        seed = seed_value("seed", seed)
    if diagnostic_share is not None and epsilon is None:
        raise DPAuditError("diagnostic_share is a share of ε: it needs epsilon (an exact audit computes the block "
                           "diagnostic exactly; drop diagnostic_share)")
    diagnostic_share = check_share(DIAGNOSTIC_SHARE if diagnostic_share is None else diagnostic_share)
    shares_explained = {m.name: m.explain_share if epsilon is not None else 0.0 for m in chosen}
    if epsilon is not None:
        epsilon = positive("epsilon", epsilon)
        if budget is not None and not isinstance(budget, Budget):
            raise DPAuditError(f"budget must be a dpaudit Budget (Budget(total) or Budget.open(path, total)), "
                               f"got {type(budget).__name__}")
        ledger = budget if budget is not None else Budget(epsilon)
        split_budget(epsilon, names, split)  # a bad split is refused before the data are read
        ledger.check(epsilon, "audit of " + ", ".join(names))  # refuse before any release
    elif split is not None:
        raise DPAuditError("split shares ε between measures: it needs epsilon (a DP release)")
    elif budget is not None:
        raise DPAuditError("budget records the ε of DP releases: it needs epsilon (drop budget for an exact, "
                           "non-private audit)")
    elif seed is not None:
        raise DPAuditError("seed fixes the noise of DP releases: it needs epsilon (an exact audit draws no noise; "
                           "drop seed)")
    elif not exact:
        raise DPAuditError(NO_PRIVACY_CHOICE)
    if not (isinstance(schema, Schema) or (isinstance(schema, str) and schema == "infer")):
        _resolve_schema(data, schema)  # no schema, or a wrong kind, is refused before the data are opened
    counter = engine_of(data, engine)
    # opened once (an engine that copies gets the data after the criteria were checked on the header);
    # the schema is inferred from and the rows counted on that one opened frame
    with counter.errors("the data"), open_data(data, crits, schema, counter) as opened:
        resolved = _resolve_schema(opened, schema)
        if progress is not None:
            progress(f"counting rows for {plural(len(crits), 'criterion', 'criteria')}")
        tables = count_tables(opened, crits, resolved)
        opened_columns = list(opened.frame.columns) if source is None else []
    not_dp = ("domains were inferred from the data (infer_schema), which leaks which values occur",) if resolved.data_derived else ()

    n = tables[0].n
    if n == 0:
        raise DPAuditError("the data have no rows; nothing to audit")
    stages = [
        f"counted {n:,} rows: one pass over the data for all criteria (each table over its A ∪ P ∪ O), domains from a "
        f"{'data-derived' if resolved.data_derived else 'declared'} schema "
        f"({'; '.join(_shape_text(t) for t in tables)})"
    ]
    if resolved.data_derived and resolved.source != "declared":  # what inference did (continuous columns binned)
        stages.append(f"domains {resolved.source}")
    if epsilon is None:
        diagnostics = diagnose_exact(tables)
    else:  # the diagnostic's ε first (0 when no criterion needs it), the measures share the rest
        eps_diagnostic = diagnostic_epsilon(tables, n, epsilon, diagnostic_share)
        shares = split_budget(epsilon - eps_diagnostic, names, split)
    assessed = []
    blocks = sum(t.counts.shape[0] for t in tables)
    for m in chosen:
        if progress is not None:
            shown = ", ".join(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}"
                              for key, value in m.options().items() if value is not None)
            progress(f"{m.title}{f' ({shown})' if shown else ''}: {n:,} rows, {plural(blocks, 'block')}")
        if progress is not None and "progress" in inspect.signature(m.assess).parameters:
            assessment = m.assess(tables, details=epsilon is None, progress=progress)
        else:  # a measure written before assess took a progress callback
            assessment = m.assess(tables, details=epsilon is None)
        assessed.append((m, assessment, math.fsum(assessment.per_criterion), m.sensitivity(crits, n)))
    if epsilon is not None:
        # every share is debited at once, before the first release: a shared ledger either records the
        # whole audit or none of it
        debits = [(f"block diagnostic ({plural(len(crits), 'criterion', 'criteria')})", eps_diagnostic)] if eps_diagnostic > 0 else []
        for m, *_ in assessed:
            eps_explain = shares[m.name] * shares_explained[m.name]
            debits.append((m.name, shares[m.name] - eps_explain))
            if eps_explain > 0:
                debits.append((f"{m.name}: explanation", eps_explain))
        ledger.spend_many(debits, about={"data": source if source is not None else _fingerprint(opened_columns, n),
                                         "criteria": [str(c) for c in crits]})
        diagnostics = diagnose_private(tables, n, eps_diagnostic, seed=seed, reasons=not_dp)
        if eps_diagnostic > 0:
            noise = "seeded numpy Laplace, NOT private" if seed is not None else "Laplace (OpenDP make_laplace)"
            stages.append(f"block diagnostic: soft share of rows in small blocks + {noise}, "
                          f"ε = {epsilon_text(eps_diagnostic)} ({diagnostic_share:g} of ε), sensitivity 2/n per criterion")
    results: dict[str, MeasureResult] = {}
    for index, (m, assessment, exact_value, sensitivity) in enumerate(assessed):
        per = assessment.per_criterion
        formula = f"sensitivity {m.sensitivity_formula} = {sensitivity:.4g}"
        if epsilon is None:
            release = exact_release(exact_value, sensitivity=sensitivity)
            results[m.name] = MeasureResult(m.name, m.title, release, tuple(per), assessment.details, m.options())
            stages.append(f"{m.title}: exact sum over {plural(len(crits), 'criterion', 'criteria')} (no noise, curator-only; {formula})")
            continue
        eps = shares[m.name]
        eps_explain = eps * shares_explained[m.name]
        eps_value = eps - eps_explain
        # a seeded run still gives every release its own, independent noise
        release = laplace_release(exact_value, sensitivity=sensitivity, epsilon=eps_value,
                                  seed=derive_seed(seed, index, 0), reasons=not_dp + assessment.caveats)
        stages.append(
            f"{m.title}: sum over {plural(len(crits), 'criterion', 'criteria')} + {release.mechanism}, ε = {epsilon_text(eps_value)}, "
            f"{formula}, scale {release.scale:.4g}"
        )
        details = None
        if eps_explain > 0:
            details = m.private_details(tables, eps_explain, derive_seed(seed, index, 1))
            explained = hook(details, "explanation")()  # (what, ε, mechanism): U_TC's names and their reliability
            mechanism = explained[2] if explained else "private selection"
            stages.append(f"{m.title} explanation: {mechanism}, ε = {epsilon_text(eps_explain)}")
        results[m.name] = MeasureResult(m.name, m.title, release, None, details, m.options())
    if measures is None:
        stages.append(left_out_note(PYTHON_HINT))
    return AuditResult(
        n=n,
        criteria=crits,
        measures=results,
        epsilon=epsilon,
        stages=tuple(stages),
        schema_data_derived=resolved.data_derived,
        source=source,
        budget=_budget_state(budget) if epsilon is not None and budget is not None else None,
        tables=tuple(tables) if epsilon is None else None,
        diagnostics=diagnostics,
    )


if audit.__doc__:  # the measures' options and the engines, written from the registries (python -OO drops docstrings)
    audit.__doc__ = audit.__doc__.replace("{options}", options_doc()).replace(
        "{engines}", "\n".join(f"        - {line}" for line in describe()))


def _fingerprint(columns: Sequence[Any], n: int) -> str:
    from dpaudit.privacy._ledger_entries import data_fingerprint

    return data_fingerprint([str(c) for c in columns], n)


def _budget_state(budget: Budget) -> BudgetState:
    """What the caller's budget (or ledger file) holds after this audit's debits."""
    path = getattr(budget, "path", None)
    return BudgetState(float(budget.total_epsilon), float(budget.spent), float(budget.remaining),
                       None if path is None else os.fspath(path))


def repair_wcnf(
    data: Any,
    criteria: CriterionLike | Iterable[CriterionLike],
    *,
    schema: Schema | str | None = None,
    semantics: str = DEFAULT_WCNF_SEMANTICS,
    path: str | None = None,
    max_clauses: int = MAX_CLAUSES,
) -> str:
    """The paper's tuple-level weighted MaxSAT encoding of U_R, complete, as DIMACS WCNF text.

    Lets anyone check dpaudit's exact ``bag``/``set`` values with an external MaxSAT solver: the
    optimum of the formula equals ``audit(data, criteria, measures=("repair",), semantics=...)``'s
    exact value. Written to ``path`` too when given (atomically: a temporary file, then a rename).
    See :mod:`dpaudit.measures._wcnf` for the encoding; spec §2.3.
    """
    from dpaudit._io import atomic_write_text, check_writable
    from dpaudit.measures._wcnf import check_wcnf_options
    from dpaudit.measures._wcnf import repair_wcnf as _encode

    crits = parse_criteria(criteria)  # every option before counting
    semantics, max_clauses = check_wcnf_options(semantics, max_clauses)
    if path is not None:
        check_writable(path)
    if not (isinstance(schema, Schema) or (isinstance(schema, str) and schema == "infer")):
        _resolve_schema(data, schema)  # no schema, or a wrong kind, is refused before the data are opened
    with open_data(data, crits, schema) as opened:  # once, for inferring the domains and counting
        tables = count_tables(opened, crits, _resolve_schema(opened, schema))
    text = _encode(tables, semantics, max_clauses=max_clauses)
    if path is not None:
        atomic_write_text(path, text)
    return text


def _shape_text(table: Any) -> str:
    """``criterion: K blocks × P × O cells`` of a count table, for the explain trail."""
    blocks, p, o = table.counts.shape
    return f"{table.criterion}: {plural(blocks, 'block')} × {p} × {o} cells"
