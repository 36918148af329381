"""``regroup.type_hints``: the codec's field types, the same in the pure and the compiled build.

mypyc leaves a compiled class only erased annotations, so for it the hints are
read from the source beside the extension module. These tests run without a
compiler: the source path is held to ``typing.get_type_hints`` for every class the
codec decodes, and a module that *looks* compiled (its ``__file__`` an extension
module, its annotations erased as mypyc leaves them) is read from its source.
The compiled build itself is checked in ``tests/architecture/test_native_build.py``.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import typing
from collections.abc import Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType

import pytest

from regroup.type_hints import source_type_hints, type_hints

DECODED_MODULES = (
    "regroup.model.requests.admin",
    "regroup.model.requests.classic",
    "regroup.model.requests.consumer",
    "regroup.model.requests.offsets",
    "regroup.events.schema",
    "regroup.records.base",
    "regroup.records.classic",
    "regroup.records.consumer",
    "regroup.records.offsets",
)


def _dataclasses() -> list[type]:
    found = []
    for name in DECODED_MODULES:
        module = importlib.import_module(name)
        found += [
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and dataclasses.is_dataclass(value)
            and value.__module__ == name
        ]
    return found


DECODED = _dataclasses()


def test_every_decoded_module_has_dataclasses() -> None:
    assert len(DECODED) > 100


@pytest.mark.parametrize("cls", DECODED, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_the_source_gives_what_get_type_hints_gives(cls: type) -> None:
    assert source_type_hints(cls) == typing.get_type_hints(cls)


SOURCE = """
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from regroup.model import TopicPartition


@dataclass(frozen=True)
class Base:
    kind: ClassVar[str] = "base"
    owner: str | None


@dataclass(frozen=True)
class Owned(Base):
    partitions: tuple[TopicPartition, ...]
    by_topic: dict[str, list[int]]
"""


@pytest.fixture
def compiled_looking(tmp_path: Path) -> Iterator[tuple[ModuleType, Path]]:
    """A module whose ``__file__`` is an extension module beside its source, annotations erased."""
    name = f"looks_compiled_{tmp_path.name.replace('-', '_')}"
    source = tmp_path / f"{name}.py"
    source.write_text(SOURCE, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module(name)
        module.__file__ = str(tmp_path / f"{name}{EXTENSION_SUFFIXES[0]}")
        # What mypyc leaves: runtime classes, the parameters and the Optional gone.
        module.Base.__annotations__ = {"kind": str, "owner": type}
        module.Owned.__annotations__ = {"partitions": tuple, "by_topic": dict}
        yield module, source
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def test_a_compiled_class_is_read_from_its_source(
    compiled_looking: tuple[ModuleType, Path],
) -> None:
    from regroup.model import TopicPartition

    module, _ = compiled_looking
    assert type_hints(module.Owned) == {
        "kind": typing.ClassVar[str],
        "owner": str | None,
        "partitions": tuple[TopicPartition, ...],
        "by_topic": dict[str, list[int]],
    }


def test_a_compiled_class_without_its_source_is_a_clear_error(
    compiled_looking: tuple[ModuleType, Path],
) -> None:
    module, source = compiled_looking
    source.unlink()
    with pytest.raises(TypeError, match=r"source of compiled module .*\.py is missing"):
        type_hints(module.Owned)


def test_a_pure_class_goes_to_get_type_hints() -> None:
    from regroup.model.requests.classic import JoinGroupRequest

    assert type_hints(JoinGroupRequest) == typing.get_type_hints(JoinGroupRequest)
