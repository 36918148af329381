"""A dataclass whose ``__init__`` is written out must say exactly what the generated one would.

A few frozen dataclasses made once per request or per member and rebalance
write their ``__init__`` by hand: under the compiled build (``regroup.native``)
each ``object.__setattr__(self, "name", value)`` becomes a direct slot store,
where the one ``dataclasses`` generates stays interpreted and cost about five
times as much. Such an ``__init__`` must take every field, in field order, with
the field's default, and set each field from the parameter of its name and
nothing else, so that the class behaves as if the line were not there.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def _is_dataclass_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id == "dataclass") or (
        isinstance(target, ast.Attribute) and target.attr == "dataclass"
    )


def _hand_written() -> list[tuple[str, ast.ClassDef, ast.FunctionDef]]:
    found = []
    for path in sorted((SRC / "regroup").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            if not any(_is_dataclass_decorator(d) for d in node.decorator_list):
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    found.append((module, node, item))
    return found


HAND_WRITTEN = _hand_written()


def test_the_hot_classes_are_found() -> None:
    names = {cls.name for _, cls, _ in HAND_WRITTEN}
    assert {"Subscription", "Assignment", "JoinPreparation", "JoinCompletion"} <= names


@pytest.mark.parametrize(
    ("module", "cls", "init"), HAND_WRITTEN, ids=[f"{m}.{c.name}" for m, c, _ in HAND_WRITTEN]
)
def test_a_written_out_init_matches_the_fields(
    module: str, cls: ast.ClassDef, init: ast.FunctionDef
) -> None:
    runtime = getattr(importlib.import_module(module), cls.name)
    fields = [f for f in dataclasses.fields(runtime) if f.init]
    names = [f.name for f in fields]

    parameters = list(inspect.signature(runtime.__init__).parameters.values())[1:]
    assert [p.name for p in parameters] == names, "the parameters are the init fields, in order"
    for parameter, field in zip(parameters, fields, strict=True):
        expected_kind = (
            inspect.Parameter.KEYWORD_ONLY
            if field.kw_only
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        assert parameter.kind is expected_kind, f"{field.name}: keyword-only or not, as the field"
        default = inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default
        assert field.default_factory is dataclasses.MISSING, "a factory needs the generated init"
        assert parameter.default == default, f"{field.name}: the default differs from the field's"

    statements = [
        s
        for s in init.body
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))  # docstring
    ]
    expected = [f'object.__setattr__(self, "{name}", {name})' for name in names]
    assert [ast.unparse(s).replace("'", '"') for s in statements] == expected


def test_a_written_out_init_keeps_the_class_frozen_and_comparable() -> None:
    from regroup.assignors.classic.api import Assignment, Subscription
    from regroup.model import TopicPartition

    sub = Subscription(["t"], owned_partitions=(TopicPartition("t", 0),), generation_id=3)
    assert sub == Subscription(["t"], None, (TopicPartition("t", 0),), 3, None, None)
    assert dataclasses.replace(sub, generation_id=4).generation_id == 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        sub.generation_id = 5  # type: ignore[misc]
    assert hash(Assignment((TopicPartition("t", 1),))) == hash(
        Assignment((TopicPartition("t", 1),), None)
    )
