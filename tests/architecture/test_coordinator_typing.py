"""No ``Any`` in ``regroup.coordinator``: mypy --strict checks every line of it.

The coordinator once took ``coordinator: Any`` and reached through it, so the type
checker saw none of what the handlers did with the groups. Now every handler
takes a typed ``GroupCoordinatorState``; this test keeps ``Any`` out of the
package: no annotation may name it (parameters, returns, variables, type
aliases, quoted annotations), and no module may import it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

COORDINATOR = Path(__file__).resolve().parents[2] / "src" / "regroup" / "coordinator"


def _annotations(tree: ast.Module) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    yield arg.annotation
            if node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation
        elif isinstance(node, ast.Assign) and _is_type_alias(node.value):
            yield node.value
        elif type(node).__name__ == "TypeAlias":  # ``type X = ...`` (Python 3.12+)
            yield node.value  # type: ignore[attr-defined]


def _is_type_alias(value: ast.expr) -> bool:
    """``X = Callable[...]`` / ``X = dict[...]``: a subscripted type on the right."""
    return isinstance(value, ast.Subscript)


def _names_any(annotation: ast.expr) -> bool:
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == "Any":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "Any":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                quoted = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                continue
            if _names_any(quoted):
                return True
    return False


def _uses_of_any(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(COORDINATOR.parents[1])
    found = [
        f"{where}:{a.lineno}: annotation names Any" for a in _annotations(tree) if _names_any(a)
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "Any" for alias in node.names):
            found.append(f"{where}:{node.lineno}: imports Any")
    return found


def test_the_coordinator_names_no_any() -> None:
    found = [use for path in sorted(COORDINATOR.rglob("*.py")) for use in _uses_of_any(path)]
    assert not found, "\n".join(found)


def test_any_is_found_where_it_hides(tmp_path: Path) -> None:
    module = tmp_path / "sample.py"
    module.write_text(
        "from typing import Any\n"
        "Handler = Callable[[int, Any], None]\n"
        "def f(x: 'dict[str, Any]') -> None: ...\n"
        "def g(*, y: typing.Any) -> int: ...\n"
        "z: list[int] = []\n"
    )
    tree = ast.parse(module.read_text())
    flagged = sorted(a.lineno for a in _annotations(tree) if _names_any(a))
    assert flagged == [2, 3, 4]
