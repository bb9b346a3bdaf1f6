"""The choices and defaults of the fairness measures that ``dpaudit fairness --help`` shows.

One definition each: the measure modules import them from here (and re-export them where they always
were: ``dpaudit.measures.contribution.DEFAULT_K``, ``dpaudit.measures.repair.DEFAULT_SEMANTICS``,
``TopContribution.k``, …). They live in a module that imports nothing but :mod:`typing` because the
command's help shows them: the help then loads no numpy and no solver (``tests/test_import_light.py``),
while an audit loads what its measures use. The membership-inference counterpart is
:mod:`dpaudit.mia._defaults`.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["MEASURE_TITLES", "DEFAULT_MEASURES", "LEFT_OUT", "CellMode", "CELL_MODES", "DEFAULT_K", "DEFAULT_CELLS", "DEFAULT_NAME_CELLS",
           "DEFAULT_PRIVATE_NAME_CELLS", "Semantics", "DEFAULT_SEMANTICS", "DEFAULT_WORK_LIMIT", "MAX_CLAUSES", "DEFAULT_WCNF_SEMANTICS",
           "MIN_BLOCK_ROWS", "WARN_SHARE", "DIAGNOSTIC_SHARE"]

#: The built-in measures' titles (the paper's symbols) by name, in registration order: each measure
#: class takes its ``title`` from here; :data:`dpaudit.measures.MEASURES` holds the classes (and any a
#: user registers).
MEASURE_TITLES = {"tvd": "U_MI^TVD", "tc": "U_TC", "repair": "U_R"}
#: The measures of ``dpaudit.audit()`` and ``dpaudit fairness`` when none are named: U_MI^TVD and U_TC,
#: which cost one pass over the count tables. U_R solves one optimisation per block and can take
#: minutes on large data (the 1M-row census preset), so it is computed only when asked for.
DEFAULT_MEASURES = ("tvd", "tc")
#: The measures left out of :data:`DEFAULT_MEASURES`; every output of a defaulted audit says how to add them.
LEFT_OUT = tuple(name for name in MEASURE_TITLES if name not in DEFAULT_MEASURES)

# -- U_TC (dpaudit.measures.contribution) ----------------------------------------------------------------
CellMode = Literal["domain", "observed"]
CELL_MODES = ("domain", "observed")
#: The defaults of every U_TC entry point (:func:`~dpaudit.measures.contribution.u_tc` and
#: :class:`~dpaudit.measures.TopContribution`), in one place.
DEFAULT_K = 500
DEFAULT_CELLS: CellMode = "domain"
#: Top cells named when name_cells is not given: in exact mode ...
DEFAULT_NAME_CELLS = 10
#: ... and in DP mode (domain cells): 5, under which names on Adult at ε = 1 are right ≥ 90 % of the time
#: (benchmarks/bench_names.py; 10 names were right 55 % of the time).
DEFAULT_PRIVATE_NAME_CELLS = 5

# -- U_R (dpaudit.measures.repair) and its WCNF export (dpaudit.measures._wcnf) -------------------------
Semantics = Literal["ci", "bag", "set"]
#: The defaults of every U_R entry point (:func:`~dpaudit.measures.repair.u_r` and friends,
#: :class:`~dpaudit.measures.Repair`), in one place.
DEFAULT_SEMANTICS: Semantics = "ci"
#: Solver work units per block (≈ seconds on the reference machine; :mod:`dpaudit.measures._limits`).
DEFAULT_WORK_LIMIT = 30.0
#: Default cap on the number of clauses (hard plus soft) of an exported formula.
MAX_CLAUSES = 50_000_000
#: The semantics exported when none is named.
DEFAULT_WCNF_SEMANTICS = "bag"

# -- the block diagnostic (dpaudit.diagnostics) ----------------------------------------------------------
#: A block with fewer rows than this is "small": its P × O table has too few rows for a dependence.
MIN_BLOCK_ROWS = 20
#: The share of rows in small blocks above which a criterion is flagged.
WARN_SHARE = 0.10
#: The fraction of a DP audit's ε spent on the diagnostic when some criterion needs a release.
DIAGNOSTIC_SHARE = 0.05
