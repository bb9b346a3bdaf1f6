"""What ``import dpaudit`` and the command's ``--help`` import: nothing they do not use (issue 25, "Sub-second start").

The pins are on module names, never on time (no test depends on the machine's speed;
``benchmarks/bench_startup.py`` measures the seconds). Each is checked in a fresh interpreter, where
nothing has been imported yet.

* ``import dpaudit`` imports this package's ``__init__``, the version and the exception family, and no
  third-party package at all: every other public name is imported on first use (:mod:`dpaudit._lazy`).
* ``dpaudit --help`` and the help of every command and group: none of :data:`HEAVY`. Not numpy either
  (0.1 s of a 0.2 s help): the defaults the help shows live in ``dpaudit._defaults`` and
  ``dpaudit.mia._defaults``, the engine and format registries name their libraries without importing
  them. Nor rich: the help is click's plain formatter (``rich_markup_mode=None``; typer's rich one
  imports rich's markdown and syntax modules, about 0.15 s). Allowed: typer and click (typer's copy).
* the small exact audit of ``benchmarks/bench_startup.py`` printing to a pipe: no rich (the view is plain
  text there), no MIA module, no engine or solver it does not use (U_R (ci) needs no center solver).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from dpaudit.cli import app

SRC = Path(__file__).resolve().parents[1] / "src"

#: Never imported by ``import dpaudit`` or any ``--help``: numerics, engines, solvers, plotting, DP and ML
#: libraries, typer's pydantic (only when it coerces a given value), the stdlib's network stack
#: (the dataset downloader's), and rich (the help is plain; rich draws only results and the spinner).
HEAVY = ("numpy", "scipy", "pandas", "pyarrow", "polars", "duckdb", "pyspark", "narwhals", "sklearn", "joblib",
         "threadpoolctl", "dask", "distributed", "matplotlib", "opendp", "ortools", "pysat", "pyscipopt", "highspy",
         "torch", "opacus", "jax", "tabpfn", "pydantic", "ssl", "http", "urllib3", "rich", "markdown_it", "pygments")


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _loaded(heavy: tuple[str, ...]) -> str:
    return f"sorted({set(heavy)!r} & {{m.split('.')[0] for m in sys.modules}})"


def test_import_dpaudit_imports_only_its_own_foundations():
    out = _fresh("import json, sys; before = set(sys.modules); import dpaudit; "
                 "print(json.dumps(sorted(set(sys.modules) - before)))")
    new = set(json.loads(out))
    assert {m for m in new if m.startswith("dpaudit")} == {"dpaudit", "dpaudit._errors", "dpaudit._lazy",
                                                            "dpaudit._version"}
    assert not {m.split(".")[0] for m in new} & set(HEAVY), new


def _command_paths(command=None, path=()):
    command = command or typer.main.get_command(app)
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _command_paths(sub, (*path, name))


COMMANDS = list(_command_paths())

#: Runs ``dpaudit ARGS --help`` as the command does (``python -m dpaudit``) and prints the heavy modules loaded.
_HELP = """
import runpy, sys
sys.argv = ["dpaudit", *{args!r}, "--help"]
try:
    runpy.run_module("dpaudit", run_name="__main__")
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
print({loaded}, file=sys.stderr)
"""


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "dpaudit")
def test_every_help_imports_nothing_heavy(path):
    code = _HELP.format(args=list(path), loaded=_loaded(HEAVY))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "Usage: dpaudit" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


def test_the_renderers_and_the_counting_code_wait_for_their_use():
    """``import dpaudit.report`` loads only the format registry; the engine registry loads no counting code."""
    out = _fresh("import sys; import dpaudit.report; from dpaudit.counting import describe; describe(); "
                 "print(sorted(m for m in sys.modules if m.startswith(('dpaudit.report.', 'dpaudit.counting.'))))")
    assert out.strip() == str(sorted(["dpaudit.report._formats", "dpaudit.counting.engines", "dpaudit.counting.spark", "dpaudit.counting.keys",
                                      "dpaudit.counting.files"]))


# -- the lazy packages -----------------------------------------------------------------------------------

LAZY_PACKAGES = ("dpaudit", "dpaudit.counting", "dpaudit.selfcheck")


def _type_checking_imports(package: str) -> dict[str, set[str]]:
    """module → names of the ``if TYPE_CHECKING:`` imports of ``package``'s ``__init__``."""
    tree = ast.parse((SRC / package.replace(".", "/") / "__init__.py").read_text(encoding="utf-8"))
    found: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module
                found.setdefault(stmt.module, set()).update(a.asname or a.name for a in stmt.names)
    return found


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_the_lazy_table_is_what_type_checkers_see(package):
    import importlib

    module = importlib.import_module(package)
    table = {source: set(names) for source, names in vars(module)["_LAZY"].items()}
    seen = _type_checking_imports(package)
    submodules = {f"{package}.{name}" for name in seen.pop(package, set())}  # ``from dpaudit import datasets``
    assert seen == table
    for name in module.__all__:
        value = getattr(module, name)
        assert name in dir(module) and value is getattr(module, name)
    for full in submodules:
        assert getattr(module, full.rpartition(".")[2]).__name__ == full


def test_a_submodule_import_leaves_the_function_of_the_same_name():
    """``dpaudit.audit`` is the function whoever imported the module ``dpaudit/audit.py`` first."""
    out = _fresh("import dpaudit.audit; from dpaudit.audit import resolve_measures; import dpaudit; "
                 "print(callable(dpaudit.audit), dpaudit.audit.__module__, dpaudit.counting.__name__)")
    assert out.split() == ["True", "dpaudit.audit", "dpaudit.counting"]
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        import dpaudit

        dpaudit.nope  # noqa: B018


# -- the defaults the help shows are the registries' own ------------------------------------------------

def test_the_help_defaults_are_the_registered_ones():
    from dpaudit._defaults import DEFAULT_CELLS, DEFAULT_K, DEFAULT_SEMANTICS, DEFAULT_WORK_LIMIT, MEASURE_TITLES
    from dpaudit.measures import MEASURES, Repair, TopContribution
    from dpaudit.mia._defaults import ATTACK_TITLES, DEFAULT_ATTACK, MODEL_NAMES
    from dpaudit.mia.attacks import ATTACKS
    from dpaudit.mia.train.models import MODELS

    assert {name: MEASURES[name].title for name in MEASURE_TITLES} == MEASURE_TITLES
    assert list(MEASURES)[:len(MEASURE_TITLES)] == list(MEASURE_TITLES)  # the built-ins, registered first
    assert (TopContribution.k, TopContribution.cells) == (DEFAULT_K, DEFAULT_CELLS)
    assert (Repair.semantics, Repair.work_limit, Repair.time_limit) == (DEFAULT_SEMANTICS, DEFAULT_WORK_LIMIT, None)
    assert {name: cls.title for name, cls in ATTACKS.items()} == ATTACK_TITLES and DEFAULT_ATTACK in ATTACKS
    assert tuple(MODELS) == MODEL_NAMES


def test_the_dataset_files_module_imports_no_network_stack():
    """The dataset files module (every dataset load, the small audit of ``bench_startup.py``) imports no
    urllib.request / http / ssl: they are imported only when a file is downloaded."""
    code = ("import sys; from dpaudit.datasets import _files; "
            "print(sorted({'urllib.request', 'http', 'ssl'} & set(sys.modules)))")
    assert _fresh(code).strip() == "[]"


def test_a_command_run_with_option_values_imports_no_pydantic(tmp_path):
    """A command given option values (a string, an int, a repeated option) coerces them without pydantic
    (and so without asyncio and ssl behind it): typer 0.29 imports it for every value, 0.15-0.25 s of each
    run, which is why pyproject keeps typer below 0.29."""
    data = tmp_path / "d.csv"
    data.write_text("sex,income\nF,lo\nM,hi\nF,hi\nM,lo\n")
    code = _HELP.replace('*{args!r}, "--help"', "*{args!r}").format(
        args=["fairness", str(data), "-c", "sex ⊥ income", "--infer-schema", "--exact", "-m", "tvd", "-m", "tc", "--k", "5"],
        loaded=_loaded(("pydantic", "asyncio", "ssl")))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "U_MI^TVD" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


#: Never imported by the small exact audit of ``benchmarks/bench_startup.py`` printing to a pipe: rich (the
#: plain view, :func:`dpaudit.report.text.render_command`, no spinner without a terminal), the engines and
#: solvers a pandas frame and U_R (ci) do not use, the DP noise library (exact values draw none), scipy.
AUDIT_UNUSED = ("rich", "markdown_it", "pygments", "scipy", "duckdb", "pyspark", "polars", "dask", "sklearn",
                "matplotlib", "opendp", "ortools", "pysat", "pyscipopt", "highspy", "torch", "pydantic", "ssl", "http")
#: dpaudit modules that audit does not need: every MIA module but the defaults the help reads, the bag/set
#: center solvers, the WCNF export, the HTML and rich renderers, the self-check beyond its help defaults.
AUDIT_UNUSED_OWN = ("dpaudit.mia.", "dpaudit.measures._center", "dpaudit.measures._wcnf", "dpaudit.report.html",
                    "dpaudit.report.rich", "dpaudit.report.json", "dpaudit.selfcheck._run", "dpaudit.selfcheck._checks")
ALLOWED_MIA = {"dpaudit.mia._defaults"}


def test_the_small_exact_audit_imports_no_rich_mia_or_unused_solver(adult_available):
    """``dpaudit fairness adult -c "sex ⊥ income" --exact`` with stdout and stderr a pipe (what a script and
    the start-up benchmark see) loads none of :data:`AUDIT_UNUSED` or :data:`AUDIT_UNUSED_OWN`."""
    own = f"sorted(m for m in sys.modules if m.startswith({AUDIT_UNUSED_OWN!r}) and m not in {ALLOWED_MIA!r})"
    code = _HELP.replace('*{args!r}, "--help"', "*{args!r}").format(
        args=["fairness", "adult", "-c", "sex ⊥ income", "--exact"], loaded=f"{_loaded(AUDIT_UNUSED)}, {own}")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          env={**os.environ, "DPAUDIT_DATA": str(adult_available)})
    assert done.returncode == 0, done.stderr
    assert "U_MI^TVD" in done.stdout and "┃" not in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[] []", done.stderr
