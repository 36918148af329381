"""A class's type hints in either build: what ``typing.get_type_hints`` gives for pure Python.

The JSON codec (``regroup.model.codec``) builds requests, events and records from
their field types: ``tuple[JoinGroupRequestProtocol, ...]`` says what each item
of a list becomes. Pure Python keeps a class's annotations as written (every
module says ``from __future__ import annotations``) and ``typing.get_type_hints``
resolves them. A class compiled by mypyc (``regroup.native``) keeps only erased
runtime types in its ``__annotations__``: ``str | None`` becomes ``type``,
``tuple[X, ...]`` becomes ``tuple``, a ``Mapping[K, V]`` becomes ``Mapping``.

So for a compiled class the annotations are read again from its module's
source, which the build leaves beside the extension module, and resolved in the
module's namespace exactly as ``typing.get_type_hints`` resolves them for pure
Python. This is the one place the compiled build reads a file after import; it
sits outside the sans-IO core on purpose, and the core reaches it only through
the codec. A compiled module whose source is missing is an error that says so.
"""

from __future__ import annotations

import ast
import sys
import typing
from functools import cache
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

__all__ = ["source_type_hints", "type_hints"]


def type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, also for a class compiled by mypyc."""
    if not any(_is_compiled(klass) for klass in cls.__mro__):
        return typing.get_type_hints(cls)
    return source_type_hints(cls)


def source_type_hints(cls: type) -> dict[str, Any]:
    """The type hints of ``cls`` and its bases, resolved from the annotations in their source.

    Bases first, as ``typing.get_type_hints`` merges them, so a subclass's
    annotation of a name wins.
    """
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        origin: str | None = getattr(sys.modules.get(klass.__module__), "__file__", None)
        if not origin:
            continue  # a built-in class (object, tuple): no annotations to read
        written = _annotations_by_class(_source_path(origin)).get(klass.__name__, ())
        if not written:
            continue
        # A stand-in class in the same module: get_type_hints resolves it in that namespace.
        stand_in = type(klass.__name__, (), {"__annotations__": dict(written)})
        stand_in.__module__ = klass.__module__
        hints.update(typing.get_type_hints(stand_in))
    return hints


def _is_compiled(klass: type) -> bool:
    module = sys.modules.get(klass.__module__)
    origin = getattr(module, "__file__", None) or ""
    return origin.endswith(tuple(EXTENSION_SUFFIXES))


def _source_path(origin: str) -> str:
    """The ``.py`` beside an extension module (or the source itself, for pure Python)."""
    for suffix in EXTENSION_SUFFIXES:
        if origin.endswith(suffix):
            return origin[: -len(suffix)] + ".py"
    return origin


@cache
def _annotations_by_class(source_path: str) -> dict[str, tuple[tuple[str, str], ...]]:
    """Per top-level class of a source file: (name, annotation text) of each annotated name."""
    path = Path(source_path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TypeError(
            f"the source of compiled module {path.name} is missing ({exc.strerror}): "
            "its type hints cannot be read"
        ) from None
    return {
        node.name: tuple(
            (item.target.id, ast.unparse(item.annotation))
            for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
        )
        for node in ast.parse(text, filename=source_path).body
        if isinstance(node, ast.ClassDef)
    }
