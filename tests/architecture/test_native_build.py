"""The mypyc-compiled build (``make native``, ``regroup.native``) is the same program.

It compiles a copy of the sources with ``tools/native_build.py`` and runs the
same simulations under both builds (``native_build_driver.py``: every built-in
scenario under every protocol it allows, static membership, the example files
and a 40-member rolling bounce). The event logs must be byte-identical and the
metrics equal. Compiled code checks its type annotations at run time, so this
also finds a value whose runtime type differs from its annotation, which mypy
cannot see (it found one: ``frozenset & dict.keys()`` is a ``set``).

Skipped, saying so, only on a machine with no C compiler: the compiled build
is optional there. The compile takes about 90 s of one core.
"""

from __future__ import annotations

import ast
import enum
import importlib
import json
import os
import shutil
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from regroup.cli import main as cli_main
from regroup.native import stale_sources

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("native_build_driver.py")
BUILD_TOOL = REPO / "tools" / "native_build.py"

pytestmark = pytest.mark.xdist_group("native")


def _copy_sources(target: Path) -> Path:
    """A copy of ``src`` without any compiled modules (a developer may have run make native)."""
    ignore = shutil.ignore_patterns(
        "__pycache__", "build", "*.egg-info", *(f"*{s}" for s in EXTENSION_SUFFIXES)
    )
    shutil.copytree(REPO / "src", target, ignore=ignore)
    return target


def _run(args: list[str], src: Path, timeout: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which((os.environ.get("CC") or "cc").split()[0]) is None:
        pytest.skip("no C compiler on this machine: the compiled build is optional")
    root = tmp_path_factory.mktemp("native")
    pure = _copy_sources(root / "pure")
    native = _copy_sources(root / "native")
    built = _run([str(BUILD_TOOL), "--src", str(native)], native, timeout=1200)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return {"pure": pure, "native": native}


def test_every_named_module_is_compiled(builds: dict[str, Path]) -> None:
    native = builds["native"]
    listed = _run([str(BUILD_TOOL), "--src", str(native), "--list"], native, timeout=60)
    assert listed.returncode == 0, listed.stderr
    expected = listed.stdout.split()
    assert len(expected) > 80  # the protocol core and the simulator, not a handful
    missing = [
        name
        for name in expected
        if not any((native / name).with_suffix(suffix).exists() for suffix in EXTENSION_SUFFIXES)
    ]
    assert missing == []


def _compiled_sources() -> list[Path]:
    listed = _run([str(BUILD_TOOL), "--list"], REPO / "src", timeout=60)
    assert listed.returncode == 0, listed.stderr
    return [REPO / "src" / name for name in listed.stdout.split()]


def test_no_function_binds_one_name_in_except_clauses_of_different_types() -> None:
    """mypyc gives ``except A as e`` and ``except B as e`` in one function one variable.

    It is typed by the first clause, so the second raises TypeError when it
    catches (it did: an assignor failure became a TypeError instead of
    UNKNOWN_SERVER_ERROR). Runs without a compiler: it reads the sources.
    """
    clashes = []
    for path in _compiled_sources():
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            types: dict[str, set[str]] = {}
            for node in ast.walk(function):
                if isinstance(node, ast.ExceptHandler) and node.name:
                    caught = ast.unparse(node.type) if node.type else "BaseException"
                    types.setdefault(node.name, set()).add(caught)
            clashes += [
                f"{path.relative_to(REPO)}:{function.lineno} {name}: {sorted(caught)}"
                for name, caught in types.items()
                if len(caught) > 1
            ]
    assert clashes == []


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO / "src").with_suffix("").parts)


def test_no_function_reaches_an_enum_member_through_a_module_alias() -> None:
    """``MemberState.STABLE`` in a function, never ``S.STABLE`` with ``S = MemberState``.

    mypyc compiles an enum member named through its class to a constant; through
    a module-level alias it is a globals lookup and then Python 3.11's
    ``EnumType.__getattr__`` slot, about 800 instructions a time (it was a tenth
    of a compiled KIP-848 run). A short alias may still serve the rule tables
    built at import. Runs without a compiler: it reads the sources.
    """
    uses = []
    for path in _compiled_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {
            node.targets[0].id
            for node in tree.body
            if isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Name)
        }
        if not aliases:
            continue
        module = importlib.import_module(_module_name(path))
        enum_aliases = {a for a in aliases if isinstance(getattr(module, a, None), enum.EnumMeta)}
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            uses += [
                f"{path.relative_to(REPO)}:{node.lineno} {node.value.id}.{node.attr}"
                for node in ast.walk(function)
                if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in enum_aliases
            ]
    assert uses == []


def test_both_builds_write_the_same_event_logs_and_read_them_back(builds: dict[str, Path]) -> None:
    outputs = {}
    for name, src in builds.items():
        run = _run([str(DRIVER)], src, timeout=900)
        assert run.returncode == 0, run.stderr[-3000:]
        outputs[name] = run.stdout.splitlines()
    assert outputs["pure"][0] == "pure Python"
    assert outputs["native"][0] == "compiled with mypyc (make native)"
    pure_runs, native_runs = outputs["pure"][1:], outputs["native"][1:]
    assert len(pure_runs) >= 50
    # Every event of the compiled build read back equal from its JSON line (regroup.type_hints).
    read_back_line = next(line for line in native_runs if line.startswith("events-read-back "))
    read_back = json.loads(read_back_line.split(" ", 1)[1])
    assert read_back["different"] == 0
    assert read_back["equal"] > 10_000
    for pure_line, native_line in zip(pure_runs, native_runs, strict=True):
        assert native_line == pure_line


def _touch(path: Path, mtime: float) -> None:
    path.write_bytes(b"")
    os.utime(path, (mtime, mtime))


def test_a_source_edited_after_the_build_is_reported_stale(tmp_path: Path) -> None:
    package = tmp_path / "regroup"
    (package / "sim").mkdir(parents=True)
    suffix = EXTENSION_SUFFIXES[0]
    _touch(package / "sim" / "world.py", 1000)
    _touch(package / "sim" / f"world{suffix}", 2000)
    _touch(package / "sim" / "network.py", 3000)
    _touch(package / "sim" / f"network{suffix}", 2000)
    _touch(package / "sim" / "scenario.py", 5000)  # never compiled: not stale
    assert stale_sources(package) == ["regroup/sim/network.py"]


def test_the_command_line_warns_about_a_stale_build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(cli_main, "stale_sources", lambda: ["regroup/a.py", "regroup/b.py"])
    assert cli_main.main(["assign", str(tmp_path / "missing.json")]) == 2  # the command still runs
    warning, error = capsys.readouterr().err.splitlines()
    assert warning.startswith("regroup: warning: regroup/a.py and 1 more changed after")
    assert error.startswith("regroup assign: error:")


def test_the_command_line_is_quiet_when_the_build_is_fresh(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(cli_main, "stale_sources", lambda: [])
    assert cli_main.main(["assign", str(tmp_path / "missing.json")]) == 2
    assert "warning" not in capsys.readouterr().err
