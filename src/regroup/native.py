"""The optional compiled build: which modules mypyc compiles, and which are compiled now.

regroup is pure Python, and that is what the tests, the demo and a fresh
``make setup`` run. ``make native`` compiles the protocol core and the
simulator with mypyc (part of mypy, a dev dependency; it needs a C compiler and
the Python headers) into extension modules beside the sources. Python imports
an extension module in preference to the ``.py`` file of the same name, so the
compiled build is used from then on, by the CLI, the benchmarks and Spark's
workers alike; ``make pure`` deletes it again. The two builds write the same
event log, byte for byte (``tests/architecture/test_native_build.py``).

What mypyc cannot compile stays interpreted, and a few source forms are chosen
for it (each says so where it is):

* a class derived from a builtin exception mypyc cannot extend (``RuntimeError``,
  ``TypeError``) is marked ``@mypyc_attr(native_class=False)``;
* the classes users subclass (the assignor interfaces) are marked
  ``@mypyc_attr(allow_interpreted_subclasses=True)``, and an assignor's ``name``
  is a ``ClassVar``, so ``RangeAssignor.name`` reads the same in both builds;
* a dataclass field is never ``init=False`` (mypyc leaves it unset), never
  annotated ``object`` and never generic;
* a dataclass body declares no ``ClassVar`` (mypyc makes it a field): an event's
  ``kind`` and a record's type id are declared on a plain base class and set
  after the class (``EVENT_KINDS``, ``register_record_type``), and a class has no
  decorator but ``@dataclass`` (mypyc would leave it interpreted);
* mypyc keeps only erased annotations on a compiled class (``str | None`` becomes
  ``type``), so the JSON codec reads a compiled class's type hints from its source
  beside the extension module (``regroup.type_hints``);
* one function never binds one name in ``except`` clauses of different types
  (mypyc gives them one variable, typed by the first); a test checks this;
* a function names an enum member through its class (``MemberState.STABLE``),
  which mypyc compiles to a constant; through a module alias (``S.STABLE``) it is
  a globals lookup and Python 3.11's ``EnumType.__getattr__`` slot, about 800
  instructions each time. Short aliases serve only the rule tables built at
  import; a test checks this;
* what ``enum`` does in Python stays interpreted under the build: the state
  enums derive from ``NameHashedEnum`` (a compiled ``__hash__``), and hot paths
  read ``member._value_`` rather than the ``.value`` property;
* a module constant read on a hot path is ``Final``: mypyc keeps it in a C
  static instead of looking it up in the module's globals on every read;
* a frozen dataclass made once per request or rebalance (``Reply``,
  ``Subscription``, ``Assignment``, the join steps, the requests and responses
  of the classic, offset and heartbeat APIs, the member and data-plane events,
  the group, offset and assignment records) writes its ``__init__`` out as
  ``object.__setattr__(self, "field", field)`` lines: mypyc compiles each to a
  direct slot store, where the ``__init__`` that ``dataclasses`` generates stays
  interpreted and costs about five times as much; a test checks that such an
  ``__init__`` says exactly what the generated one would. ``CoordinatorResult``
  (mutable, three lists) is a plain class with slots for the same reason.

Compiled code checks annotations at run time, so a value whose type differs
from its annotation raises ``TypeError`` there; the test above runs every
built-in scenario under both builds to find them. An in-place build can go
stale (a source edited after ``make native`` would not run); ``stale_sources``
finds that, and the command line and the test run warn about it.

The modules and packages left out, and why, are in ``INTERPRETED``; the
package ``__init__`` files (re-exports only) are left out too.
"""

from __future__ import annotations

import importlib
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

__all__ = [
    "COMPILED_PACKAGES",
    "INTERPRETED",
    "compiled_modules",
    "describe_build",
    "stale_sources",
]

#: Every module of these packages is compiled, except the ones in ``INTERPRETED``.
COMPILED_PACKAGES = (
    "regroup.model",
    "regroup.events",
    "regroup.records",
    "regroup.assignors",
    "regroup.classic",
    "regroup.consumer",
    "regroup.coordinator",
    "regroup.sim",
)

#: Modules and packages of ``COMPILED_PACKAGES`` that stay interpreted, with the reason.
INTERPRETED = {
    "regroup.model.uuid": "a dataclass with ClassVar constants (mypyc makes them fields)",
    "regroup.assignors.classic.sticky_engine.engine": "numpy does the work there",
    "regroup.coordinator.consumer_timers": "a mixin that declares its host's attributes",
    "regroup.sim.scenario": "file parsing, once per run",
    "regroup.sim.timeline": "matplotlib does the work there",
}

#: A probe per package: a module that is compiled whenever the build is.
_PROBES = ("regroup.classic.member", "regroup.coordinator.classic_join", "regroup.sim.world")


def compiled_modules() -> list[str]:
    """The probe modules that were loaded from an extension module (empty: pure Python)."""
    compiled = []
    for name in _PROBES:
        origin = getattr(importlib.import_module(name), "__file__", None) or ""
        if origin.endswith(tuple(EXTENSION_SUFFIXES)):
            compiled.append(name)
    return compiled


def stale_sources(package_dir: Path | None = None) -> list[str]:
    """Sources edited after their module was compiled: Python still runs the compiled one.

    The hazard of an in-place build (edit a file, and the old code runs); the
    command line warns about it. Empty for a pure-Python checkout.
    """
    root = package_dir or Path(__file__).resolve().parent
    stale = []
    for suffix in EXTENSION_SUFFIXES:
        for extension in root.rglob(f"*{suffix}"):
            source = extension.with_name(extension.name[: -len(suffix)] + ".py")
            if source.exists() and source.stat().st_mtime > extension.stat().st_mtime:
                stale.append(source.relative_to(root.parent).as_posix())
    return sorted(stale)


def describe_build() -> str:
    """One line for benchmark output: which build is running."""
    compiled = compiled_modules()
    if not compiled:
        return "pure Python"
    if len(compiled) == len(_PROBES):
        return "compiled with mypyc (make native)"
    return "partly compiled with mypyc (stale build? run make native again): " + ", ".join(compiled)
