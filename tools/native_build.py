"""Compile regroup's protocol core and simulator with mypyc, in place (``make native``).

The modules are the ones ``regroup.native`` names. The extension modules are
written beside the sources under ``--src`` (default: this checkout's ``src``),
so an editable install picks them up; ``--clean`` removes them. Needs mypy's
mypyc (a dev dependency), a C compiler and the Python headers.

Usage::

    python tools/native_build.py            # compile (a few minutes on 2 cores)
    python tools/native_build.py --clean    # back to pure Python
    python tools/native_build.py --src /tmp/copy/src   # compile a copy
    python tools/native_build.py --list     # the modules it compiles
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import shutil
import sys
import sysconfig
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def module_files(src: Path) -> list[str]:
    """The ``.py`` files to compile, relative to ``src``, in a stable order."""
    sys.path.insert(0, str(src))
    try:
        from regroup.native import COMPILED_PACKAGES, INTERPRETED
    finally:
        sys.path.pop(0)
    files = []
    for package in COMPILED_PACKAGES:
        root = src / package.replace(".", "/")
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(src)
            module = ".".join(relative.with_suffix("").parts)
            left_out = any(module == name or module.startswith(name + ".") for name in INTERPRETED)
            if path.name == "__init__.py" or left_out:
                continue
            files.append(str(relative))
    return files


def built_extensions(src: Path) -> list[Path]:
    from importlib.machinery import EXTENSION_SUFFIXES

    found = []
    for suffix in EXTENSION_SUFFIXES:
        found += src.glob(f"*{suffix}")  # mypyc's shared runtime library
        found += (src / "regroup").rglob(f"*{suffix}")
    return sorted(set(found))


def clean(src: Path) -> int:
    removed = built_extensions(src)
    for path in removed:
        path.unlink()
    shutil.rmtree(src / "build", ignore_errors=True)
    return len(removed)


def _show(report: str) -> None:
    """mypyc's messages, less its notes that a generator argument was compiled as a list."""
    lines = report.splitlines()
    notes = [line for line in lines if "Treating generator comprehension as list" in line]
    for line in lines:
        if line not in notes:
            print(line)
    if notes:
        print(f"mypyc: {len(notes)} generator arguments compiled as lists (harmless)")


def compile_native(src: Path, jobs: int) -> None:
    from mypyc.build import mypycify
    from setuptools import setup

    files = module_files(src)
    print(f"mypyc: compiling {len(files)} modules under {src} ...", flush=True)
    started = time.perf_counter()
    previous = Path.cwd()
    os.chdir(src)
    try:
        report = io.StringIO()
        try:
            with contextlib.redirect_stdout(report):
                extensions = mypycify(
                    ["--config-file", str(REPO / "pyproject.toml"), *files],
                    opt_level="3",
                    multi_file=True,  # several C files, so the C compiler can use both cores
                )
        finally:
            _show(report.getvalue())
        setup(
            name="regroup-native",
            ext_modules=extensions,
            script_args=["-q", "build_ext", "--inplace", "--parallel", str(jobs)],
        )
    finally:
        os.chdir(previous)
    print(f"mypyc: done in {time.perf_counter() - started:.0f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=REPO / "src", help="the source tree")
    parser.add_argument("--clean", action="store_true", help="remove the compiled modules")
    parser.add_argument("--list", action="store_true", help="print the modules to compile")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="C compile jobs")
    args = parser.parse_args()
    src = args.src.resolve()
    if not (src / "regroup" / "native.py").is_file():
        parser.error(f"{src} is not a regroup source tree (no regroup/native.py)")
    if args.list:
        print("\n".join(module_files(src)))
        return 0
    if args.clean:
        print(f"removed {clean(src)} compiled modules; regroup is pure Python again")
        return 0
    missing = _missing_tools()  # checked before the old build is removed
    if missing:
        parser.error(f"{missing}; the pure-Python build needs none of this (make pure)")
    clean(src)
    compile_native(src, args.jobs)
    return 0


def _missing_tools() -> str | None:
    """Why this machine cannot compile, in one line (``None``: it can)."""
    compiler = (os.environ.get("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler}) on PATH: install gcc"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python headers (Python.h): install python3-dev"
    if importlib.util.find_spec("mypyc") is None:
        return "mypyc is not installed: it comes with the dev dependencies (make setup)"
    return None


if __name__ == "__main__":
    raise SystemExit(main())
