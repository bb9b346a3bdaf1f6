"""No import circles in ``src/``: the import graph of every module, with module-level and function-level
imports, has no strongly connected component of more than one module (spec ``architecture.md``,
"Layers").

An edge ``a → b`` is any ``import b`` / ``from b import x`` in ``a`` (``from p import m`` is an edge to
the module ``p.m`` when ``m`` is one, else to ``p``), wherever it stands in ``a`` — at the top or inside
a function — except under ``if TYPE_CHECKING:``, which never runs. Lookups by name at run time are not
edges: the views registry :mod:`dpaudit._views` importing the renderer package (a deliberate upward
lookup, like pandas' plotting backend: at run time results → _views ⇒ report → results), the formats'
``module:function`` targets, the dataset registry's modules (each imports ``DatasetInfo`` back from
``dpaudit.datasets``) and a user's ``package.module:factory`` model.

Run as a script to print the graph's circles and its size per package:
``python tests/test_import_graph.py [src]``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module under ``root``: dotted name → (file, is a package's ``__init__``)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` blocks."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                hidden.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return hidden


def _targets(node: ast.AST, name: str, package: bool, known: dict[str, tuple[Path, bool]]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = name.split(".") if package else name.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        for alias in node.names:
            full = f"{source}.{alias.name}"
            yield full if full in known else source


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the modules under ``root`` it imports (the nearest enclosing module of a dotted name)."""
    known = modules(root)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, (path, package) in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hidden = _type_checking_only(tree)
        for node in ast.walk(tree):
            if id(node) in hidden:
                continue
            for target in _targets(node, name, package, known):
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=len, reverse=True)


#: The layers of docs/architecture.md, bottom to top, by module prefix (the longest matching prefix wins):
#: a module may import its own layer and the ones below, never one above.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundations", ("dpaudit._errors", "dpaudit._validation", "dpaudit._io", "dpaudit._arrays", "dpaudit._version",
                     "dpaudit._checks", "dpaudit._fields", "dpaudit._document", "dpaudit._views", "dpaudit._lazy",
                     "dpaudit._defaults", "dpaudit._format", "dpaudit.mia._defaults", "dpaudit.schema", "dpaudit.criteria",
                     "dpaudit._progress")),
    ("counting", ("dpaudit.counting",)),
    ("privacy", ("dpaudit.privacy",)),
    ("typed data", ("dpaudit.details", "dpaudit.diagnostics", "dpaudit.results", "dpaudit._result_frames", "dpaudit.mia.findings", "dpaudit.mia.results",
                    "dpaudit.mia.group_results",
                    "dpaudit.mia.scores", "dpaudit.mia._score_checks")),
    ("computation", ("dpaudit.measures", "dpaudit.mia", "dpaudit.datasets")),
    ("entry points", ("dpaudit.audit", "dpaudit._audit_args", "dpaudit.mia.evaluate", "dpaudit.mia.group_labels",
                      "dpaudit.mia.train", "dpaudit.mia.simulate", "dpaudit.mia.claim.learners", "dpaudit.mia.claim.dpsgd",
                      "dpaudit.mia.claim.audit", "dpaudit.selfcheck")),
    ("renderers", ("dpaudit.report",)),
    ("command", ("dpaudit.cli", "dpaudit.__main__", "dpaudit")),
)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the layer whose longest prefix names ``module``."""
    matches = [(len(p), i) for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes
               if module == p or module.startswith(p + ".")]
    return max(matches)[1]


def test_every_import_goes_to_the_same_layer_or_below() -> None:
    graph = import_graph(SRC)
    upward = [f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
              for a in sorted(graph) for b in sorted(graph[a]) if layer_of(b) > layer_of(a)]
    assert not upward, "imports that climb the layers of docs/architecture.md:\n  " + "\n  ".join(upward)


def test_src_has_no_import_circles() -> None:
    found = circles(import_graph(SRC))
    assert not found, "import circles in src/ (break them: a lower layer must not import a higher one):\n" + "\n".join(
        f"  {len(c)} modules: {', '.join(c)}" for c in found)


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The check would catch a circle made of any import form, and ignores TYPE_CHECKING imports."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\n")
    (pkg / "e.py").write_text("from . import d\n")
    graph = import_graph(tmp_path)
    assert graph["pkg.a"] == {"pkg.sub.b"} and graph["pkg.sub.b"] == {"pkg.c"} and graph["pkg.c"] == {"pkg.a"}
    assert graph["pkg.d"] == set() and graph["pkg.e"] == {"pkg.d"}
    assert circles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


def test_results_reach_their_renderers_without_importing_them() -> None:
    """``str(result)`` and ``_repr_html_`` work in a process that never imported dpaudit.report (the
    views registry imports it by name), and ``import dpaudit`` does not import it."""
    code = """
import sys
import pandas as pd
import dpaudit
assert not any(m.startswith("dpaudit.report") for m in sys.modules), "import dpaudit imported the renderers"
frame = pd.DataFrame({"s": ["a", "b"] * 50, "y": ["0", "0", "1", "1"] * 25})
result = dpaudit.audit(frame, ["s ⊥ y"], measures=["tvd", "tc"], exact=True, schema="infer")
print(str(result).splitlines()[0])
print("MD(a, p, o) per block" in result._repr_html_())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0].startswith("dpaudit fairness audit") and out[1] == "True"


def test_a_view_registered_by_the_user_wins() -> None:
    from dpaudit._views import register_view, render_view
    from dpaudit.results import AuditResult

    class Mine(AuditResult):
        pass

    register_view(Mine, "text", lambda r: "mine")
    assert render_view(object.__new__(Mine), "text") == "mine"
    with pytest.raises(TypeError, match="no 'svg' view"):
        render_view(object(), "svg")


if __name__ == "__main__":  # pragma: no cover - a report for people
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else SRC
    graph = import_graph(root)
    found = circles(graph)
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, {len(found)} circles")
    for component in found:
        print(f"  {len(component)}: {', '.join(component)}")
    per_package = Counter(".".join(name.split(".")[:2]) for name in graph)
    print("modules per package:", ", ".join(f"{p} {n}" for p, n in sorted(per_package.items())))
