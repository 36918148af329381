"""The layer table and the sans-IO contract of docs/architecture.md, enforced.

1. import-linter's contracts (pyproject.toml, ``[tool.importlinter]``): a lower
   layer never imports a higher one, and the core never imports a clock,
   sockets, threads, asyncio or subprocesses.
2. An AST scan of the core for what an import contract cannot see: calls to
   the *global* random generator, wall clocks reached through other modules,
   and file access.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "regroup"
CORE = (
    "model",
    "assignors",
    "brokerlog",
    "classic",
    "consumer",
    "coordinator",
    "events",
    "members",
    "testing",
)

#: Calls that reach global state or the outside world.
FORBIDDEN_CALLS = {
    ("random", name)
    for name in (
        "random",
        "randint",
        "randrange",
        "choice",
        "choices",
        "shuffle",
        "sample",
        "uniform",
        "getrandbits",
        "seed",
        "gauss",
    )
} | {
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("uuid", "uuid1"),
    ("uuid", "uuid4"),
    ("os", "urandom"),
    ("os", "getenv"),
}
FORBIDDEN_NAMES = {"open", "input", "print"}


def _lint_imports(
    *args: str, cwd: Path, pythonpath: Path | None = None
) -> subprocess.CompletedProcess[str]:
    binary = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(binary), "--no-cache", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(pythonpath or cwd)},
    )


def test_import_contracts_hold() -> None:
    # The sources beside this test (src/), not whichever regroup the environment installed:
    # the contracts in this checkout's pyproject.toml are about this checkout's modules.
    result = _lint_imports(cwd=SRC.parents[1], pythonpath=SRC.parent)
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts_catch_a_lower_layer_importing_a_higher_one(tmp_path: Path) -> None:
    # The same kind of contract on a toy package whose bottom layer imports its top layer:
    # the check must fail, or it could not catch a real violation either.
    package = tmp_path / "toy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text("")
    (package / "model.py").write_text("import toy.cli\n")
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_package = toy\n\n"
        "[importlinter:contract:layers]\nname = layers\ntype = layers\n"
        "layers =\n    toy.cli\n    toy.model\n"
    )
    result = _lint_imports("--config", str(tmp_path / ".importlinter"), cwd=tmp_path)
    assert result.returncode != 0
    assert "toy.model" in result.stdout


def _core_files() -> list[Path]:
    return sorted(p for layer in CORE for p in (SRC / layer).rglob("*.py"))


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_core_module_does_no_io_and_uses_no_global_randomness(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    offences = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if (func.value.id, func.attr) in FORBIDDEN_CALLS:
                offences.append(f"line {node.lineno}: {func.value.id}.{func.attr}()")
        elif isinstance(func, ast.Name) and func.id in FORBIDDEN_NAMES:
            offences.append(f"line {node.lineno}: {func.id}()")
    assert not offences, f"{path.relative_to(SRC)} breaks the sans-IO rule: {offences}"
