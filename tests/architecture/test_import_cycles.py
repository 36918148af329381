"""No import circles in ``regroup``: every import anywhere in a module counts.

docs/architecture.md, "The layers": no import circles, anywhere. import-linter's contracts
(``test_layers``) check the layers between packages; this test checks the modules
themselves, and it counts what a contract or a runtime import error would miss:
imports inside functions and under ``if TYPE_CHECKING:``. Moving an import into a
function hides a circle from Python, not from a reader: the two modules still
need each other.

The graph has an edge ``a -> b`` for every ``import b`` / ``from b import x`` in
``a`` (``from p import m`` is an edge to the module ``p.m`` when ``m`` is one, as
import-linter counts it), wherever the statement stands. A circle is a strongly
connected component of more than one module (a module naming itself is ignored).

``KNOWN_CIRCLES`` names the circles that exist today, each by the work that
removes it, as the exact set of its modules. The list may only shrink: a new
circle fails, and so does a known one that changed (smaller, or gone), until
the entry is updated to what is left or removed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

#: Circles that exist today, by the work that is removing them. Only ever shrink this:
#: there are none left.
KNOWN_CIRCLES: dict[str, frozenset[str]] = {}


def module_files(src: Path, package: str = "regroup") -> dict[str, Path]:
    """Every module under ``src/<package>`` by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imported_names(module: str, path: Path, tree: ast.Module) -> Iterable[str]:
    """The dotted names the import statements of ``tree`` reach, wherever they stand."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            # ``source.name``: a submodule, or (resolved to ``source`` below) a name in it.
            yield from (f"{source}.{alias.name}" for alias in node.names)


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports (a name counts as its nearest module)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for target in _imported_names(name, path, tree):
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target in modules and target != name:
                graph[name].add(target)
    return graph


def circles(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _describe(component: frozenset[str], graph: Mapping[str, set[str]]) -> str:
    edges = sorted(f"{a} -> {b}" for a in component for b in graph[a] if b in component)
    return "\n    ".join([", ".join(sorted(component)), *edges])


GRAPH = import_graph(module_files(SRC))


def test_no_new_import_circle() -> None:
    known = set(KNOWN_CIRCLES.values())
    new = [c for c in circles(GRAPH) if c not in known]
    report = "\n".join(f"  {_describe(c, GRAPH)}" for c in new)
    assert not new, f"import circles (imports in functions and TYPE_CHECKING count):\n{report}"


def test_known_circles_only_shrink() -> None:
    found = set(circles(GRAPH))
    stale = {name: c for name, c in KNOWN_CIRCLES.items() if c not in found}
    assert not stale, "\n".join(
        f"known circle {name!r} is no longer exactly {sorted(c)}: what is left of it is "
        f"{sorted(m for f in found if f & c for m in f) or 'nothing'}; update or remove the entry"
        for name, c in stale.items()
    )


def test_a_circle_through_a_function_body_or_type_checking_is_found(tmp_path: Path) -> None:
    package = tmp_path / "toy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "manager.py").write_text("def handlers():\n    from toy import handler\n")
    (package / "handler.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy.manager import M\n"
    )
    (package / "leaf.py").write_text("from . import manager\n")
    graph = import_graph(module_files(tmp_path, "toy"))
    assert circles(graph) == [frozenset({"toy.manager", "toy.handler"})]
    assert graph["toy.leaf"] == {"toy.manager"}
