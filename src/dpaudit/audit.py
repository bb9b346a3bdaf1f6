"""Audit a dataset: count once per criterion, compute measures on the tables, release them.

``audit(data, criteria, measures=("tvd",), epsilon=1.0, schema=...)`` follows the data flow of the
architecture sketch: counts (one pass over the data for all criteria) → exact measures on count tables → release
(OpenDP Laplace noise, debited from a budget) → a frozen :class:`AuditResult` that keeps the explain
trail (what was counted, which mechanism, ε, sensitivity) and prints a readable table.
"""

from __future__ import annotations

import inspect
import math
import numbers
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from dpaudit._defaults import DEFAULT_WCNF_SEMANTICS, MAX_CLAUSES  # not the WCNF encoder: imported when used
from dpaudit._errors import DPAuditError, SchemaError
from dpaudit._validation import positive
from dpaudit.counting import DEFAULT_ENGINE, check_engine, count_tables, describe, engine_of, infer_schema, open_data
from dpaudit.criteria import CriterionLike, parse_criteria
from dpaudit.measures import Measure, measure_from, option_fields, options_doc
from dpaudit.privacy import Budget, exact_release, laplace_release
from dpaudit.privacy._mechanisms import MIN_RELEASE_EPSILON, derive_seed
from dpaudit.results import AuditResult, BudgetState, MeasureResult
from dpaudit.schema import Schema

__all__ = ["audit", "AuditResult", "MeasureResult", "split_budget", "repair_wcnf", "resolve_measures"]


def split_budget(epsilon: float, measures: Sequence[str], split: Mapping[str, float] | None = None) -> dict[str, float]:
    """Share a total ε across measures: equally by default, or by the fractions in ``split``.

    Examples
    --------
    >>> split_budget(1.0, ["tvd", "tc"])
    {'tvd': 0.5, 'tc': 0.5}
    >>> split_budget(1.0, ["tvd", "tc"], {"tvd": 0.25, "tc": 0.75})
    {'tvd': 0.25, 'tc': 0.75}
    """
    if split is None:
        shares = {m: epsilon / len(measures) for m in measures}
    else:
        if not isinstance(split, Mapping):
            raise DPAuditError(f"budget split must map each measure to a fraction (e.g. {{'tvd': 0.5, 'tc': 0.5}}), "
                               f"got {split!r}")
        if set(split) != set(measures):
            raise DPAuditError(
                f"budget split names {sorted(map(str, split))} but the measures are {sorted(measures)}; give one "
                "fraction per measure"
            )
        if any(not (isinstance(f, numbers.Real) and not isinstance(f, bool) and math.isfinite(f) and f > 0)
               for f in split.values()):
            raise DPAuditError(f"budget split fractions must be positive numbers, got {dict(split)}")
        total = math.fsum(split.values())
        if abs(total - 1.0) > 1e-9:
            raise DPAuditError(f"budget split fractions must sum to 1, they sum to {total:g}")
        shares = {m: epsilon * split[m] for m in measures}
    for m, share in shares.items():
        if share < MIN_RELEASE_EPSILON:
            raise DPAuditError(
                f"measure {m} would be released with epsilon={share:g}, below the smallest dpaudit releases "
                f"with ({MIN_RELEASE_EPSILON:g}): its noise would drown any value; raise epsilon or its split fraction"
            )
    return shares


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


def resolve_measures(measures: str | Measure | Sequence[str | Measure], **options: Any) -> list[Measure]:
    """Configured measure objects from names and/or instances, each option validated.

    ``options`` (``k=...``, ``semantics=...``) configure the measures named by string, routed by the
    name of the measure's dataclass field; a value given is checked by the measure, None included (it
    is the default only of an option whose default is None, ``name_cells``: ``semantics=None`` is
    refused, not read as "not given"). An option that no registered measure takes, or no named one,
    is refused rather than ignored, and so is a measure requested twice.

    Examples
    --------
    >>> resolve_measures(["tvd", "tc"], k=10)
    [TVD(), TopContribution(k=10, cells='domain', name_cells=None)]
    >>> resolve_measures(["tvd"], semantics="bag")
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: option semantics configures repair, which is not among the measures (tvd); add it or drop the option
    """
    if isinstance(measures, (str, Measure)):
        items = [measures]
    elif isinstance(measures, Iterable) and not isinstance(measures, (bytes, Mapping)):
        items = list(measures)
    else:
        raise DPAuditError(f"measures must be a measure name, a Measure, or a list of them (e.g. ('tvd', 'tc')), "
                           f"got {measures!r}")
    odd = [m for m in items if not isinstance(m, (str, Measure))]
    if odd:
        raise DPAuditError(f"measures must be names or Measure objects, got {odd[0]!r}; e.g. ('tvd', TopContribution(k=5))")
    if not items:
        raise DPAuditError("no measures requested; pass e.g. measures=('tvd',)")
    named = {m for m in items if isinstance(m, str)}
    known = option_fields()
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise DPAuditError(f"unknown option {unknown[0]!r}: no registered measure takes it; the measures' options are "
                           f"{', '.join(known)}")
    for option in options:
        takers = [cls.name for cls, _ in known[option]]
        if not any(name in named for name in takers):
            raise DPAuditError(
                f"option {option} configures {', '.join(takers) or 'no measure'}, which is not among the measures "
                f"({', '.join(m if isinstance(m, str) else m.name for m in items)}); add it or drop the option"
            )
    out = [measure_from(m, **options) for m in items]
    names = [m.name for m in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DPAuditError(f"measure {', '.join(twice)} is requested twice; request each measure once")
    return out


def audit(
    data: Any,
    criteria: CriterionLike | Iterable[CriterionLike],
    *,
    measures: str | Measure | Sequence[str | Measure] = ("tvd",),
    epsilon: float | None = None,
    schema: Schema | str | None = None,
    budget: Budget | None = None,
    split: Mapping[str, float] | None = None,
    seed: int | None = None,
    engine: str = DEFAULT_ENGINE,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> AuditResult:
    """Measure how far the data are from satisfying fairness criteria, privately.

    Every argument is validated before any row is read.

    Parameters
    ----------
    data : pandas/polars/pyarrow frame, DuckDB relation, PySpark DataFrame, or CSV/Parquet path
        A lazy frame (DuckDB, Spark) is grouped by its own engine; only the grouped counts are fetched.
    criteria : str, Criterion, or a list of them
        E.g. ``"sex ⊥ income | education-num"``; each measure is summed over the criteria.
    measures : name, Measure, or a sequence of them, default ("tvd",)
        Registered names (:data:`dpaudit.measures.MEASURES`: ``"tvd"``, ``"tc"``, ``"repair"``) or
        configured measures (``TopContribution(k=10)``, ``Repair(semantics="bag")``).
    epsilon : float or None, default None
        Total privacy loss of this audit, shared by ``split`` across the measures. ``None`` returns
        exact values for the data curator: no noise, not DP, and per-criterion values and
        non-private baselines are included.
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
    progress : callable, optional
        Called with a short description of each step as it starts (counting the rows, then each
        measure) and, for U_R, after every block (``"U_R (bag) P ⊥ O | A: block 3/11 exact, 4.2 s"``);
        ``dpaudit fairness`` shows it in a spinner when stderr is a terminal.
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
    >>> res = audit(df, "sex ⊥ y", schema=s)
    >>> round(res["tvd"].value, 4), res.dp
    (0.045, False)
    >>> audit(df, "sex ⊥ y", schema=s, epsilon=1.0)["tvd"].release.scale
    0.16
    """
    engine = check_engine(engine)
    source = os.fspath(data) if isinstance(data, (str, os.PathLike)) else None  # the file, as given
    if progress is not None and not callable(progress):
        raise DPAuditError(f"progress must be a callable taking one str, got {type(progress).__name__}")
    crits = parse_criteria(criteria)
    chosen = resolve_measures(measures, **options)
    names = [m.name for m in chosen]
    if seed is not None:
        from dpaudit._validation import seed_value

        seed = seed_value("seed", seed)
    shares_explained = {m.name: m.explain_share if epsilon is not None else 0.0 for m in chosen}
    if epsilon is not None:
        epsilon = positive("epsilon", epsilon)
        if budget is not None and not isinstance(budget, Budget):
            raise DPAuditError(f"budget must be a dpaudit Budget (Budget(total) or Budget.open(path, total)), "
                               f"got {type(budget).__name__}")
        ledger = budget if budget is not None else Budget(epsilon)
        shares = split_budget(epsilon, names, split)
        ledger.check(epsilon, "audit of " + ", ".join(names))  # refuse before any release
    elif split is not None:
        raise DPAuditError("split shares ε between measures: it needs epsilon (a DP release)")
    elif budget is not None:
        raise DPAuditError("budget records the ε of DP releases: it needs epsilon (drop budget for an exact, "
                           "non-private audit)")
    elif seed is not None:
        raise DPAuditError("seed fixes the noise of DP releases: it needs epsilon (an exact audit draws no noise; "
                           "drop seed)")
    if not (isinstance(schema, Schema) or (isinstance(schema, str) and schema == "infer")):
        _resolve_schema(data, schema)  # no schema, or a wrong kind, is refused before the data are opened
    counter = engine_of(data, engine)
    # opened once (an engine that copies gets the data after the criteria were checked on the header);
    # the schema is inferred from and the rows counted on that one opened frame
    with counter.errors("the data"), open_data(data, crits, schema, counter) as opened:
        resolved = _resolve_schema(opened, schema)
        if progress is not None:
            progress(f"counting rows for {len(crits)} criteria")
        tables = count_tables(opened, crits, resolved)
    not_dp = ("domains were inferred from the data (infer_schema), which leaks which values occur",) if resolved.data_derived else ()

    n = tables[0].n
    if n == 0:
        raise DPAuditError("the data have no rows; nothing to audit")
    stages = [
        f"counted {n:,} rows: one pass over the data for all criteria (each table over its A ∪ P ∪ O), domains from a "
        f"{'data-derived' if resolved.data_derived else 'declared'} schema "
        f"({'; '.join(f'{t.criterion}: {t.counts.shape[0]} block(s) × {t.counts.shape[1]} × {t.counts.shape[2]} cells' for t in tables)})"
    ]
    assessed = []
    blocks = sum(t.counts.shape[0] for t in tables)
    for m in chosen:
        if progress is not None:
            shown = ", ".join(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}"
                              for key, value in m.options().items() if value is not None)
            progress(f"{m.title}{f' ({shown})' if shown else ''}: {n:,} rows, {blocks:,} block(s)")
        if progress is not None and "progress" in inspect.signature(m.assess).parameters:
            assessment = m.assess(tables, details=epsilon is None, progress=progress)
        else:  # a measure written before assess took a progress callback
            assessment = m.assess(tables, details=epsilon is None)
        assessed.append((m, assessment, math.fsum(assessment.per_criterion), m.sensitivity(crits, n)))
    if epsilon is not None:
        # every share is debited at once, before the first release: a shared ledger either records the
        # whole audit or none of it
        debits = []
        for m, *_ in assessed:
            eps_explain = shares[m.name] * shares_explained[m.name]
            debits.append((m.name, shares[m.name] - eps_explain))
            if eps_explain > 0:
                debits.append((f"{m.name}: explanation", eps_explain))
        ledger.spend_many(debits)
    results: dict[str, MeasureResult] = {}
    for index, (m, assessment, exact_value, sensitivity) in enumerate(assessed):
        per = assessment.per_criterion
        formula = f"sensitivity {m.sensitivity_formula} = {sensitivity:.4g}"
        if epsilon is None:
            release = exact_release(exact_value, sensitivity=sensitivity)
            results[m.name] = MeasureResult(m.name, m.title, release, tuple(per), assessment.details, m.options())
            stages.append(f"{m.title}: exact sum over {len(crits)} criteria (no noise, curator-only; {formula})")
            continue
        eps = shares[m.name]
        eps_explain = eps * shares_explained[m.name]
        eps_value = eps - eps_explain
        # a seeded run still gives every release its own, independent noise
        release = laplace_release(exact_value, sensitivity=sensitivity, epsilon=eps_value,
                                  seed=derive_seed(seed, index, 0), reasons=not_dp + assessment.caveats)
        stages.append(
            f"{m.title}: sum over {len(crits)} criteria + {release.mechanism}, ε = {eps_value:g}, "
            f"{formula}, scale {release.scale:.4g}"
        )
        details = None
        if eps_explain > 0:
            details = m.private_details(tables, eps_explain, derive_seed(seed, index, 1))
            mechanism = getattr(getattr(details, "release", None), "mechanism", "private selection")
            stages.append(f"{m.title} explanation: {mechanism}, ε = {eps_explain:g}")
        results[m.name] = MeasureResult(m.name, m.title, release, None, details, m.options())
    return AuditResult(
        n=n,
        criteria=crits,
        measures=results,
        epsilon=epsilon,
        stages=tuple(stages),
        schema_data_derived=resolved.data_derived,
        source=source,
        budget=_budget_state(budget) if epsilon is not None and budget is not None else None,
    )


if audit.__doc__:  # the measures' options and the engines, written from the registries (python -OO drops docstrings)
    audit.__doc__ = audit.__doc__.replace("{options}", options_doc()).replace(
        "{engines}", "\n".join(f"        - {line}" for line in describe()))


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
