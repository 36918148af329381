"""JSON for regroup's frozen dataclasses, driven by their type hints.

Records (for the durable store and ``regroup replay``), events (JSON lines)
and requests read from scripts all go through this one codec, so a value has
one text form everywhere:

* ``bytes`` -> base64 text; ``Uuid`` -> Kafka's base64 text form;
  ``TopicPartition`` -> ``"topic-3"``; enums -> their name (``"NONE"``,
  ``"STABLE"``) and back from a name or a value;
* tuples/lists -> JSON arrays; ``Mapping`` -> objects (keys through the same
  rules, so ``TopicPartition`` and ``Uuid`` keys work); nested dataclasses ->
  objects with their field names; ``X | None`` -> ``null`` or X.

``from_jsonable`` rejects unknown and missing fields with ``CodecError`` (a
``ValueError`` with a one-line message naming the field path).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar, Union

from regroup.model.topic_partition import TopicPartition
from regroup.model.uuid import Uuid

__all__ = ["CodecError", "from_jsonable", "to_jsonable"]

T = TypeVar("T")


class CodecError(ValueError):
    """A JSON value that does not fit the dataclass it should become."""


def to_jsonable(value: Any) -> Any:
    """The JSON-ready form of a value (see the module docstring for the rules)."""
    if isinstance(value, enum.Enum):
        return value.name
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, TopicPartition):
        return str(value)
    if isinstance(value, Uuid):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {_key_text(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple | list | frozenset | set):
        items = [to_jsonable(v) for v in value]
        if isinstance(value, frozenset | set):
            items.sort(key=repr)
        return items
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def _key_text(key: Any) -> str:
    encoded = to_jsonable(key)
    return encoded if isinstance(encoded, str) else str(encoded)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_jsonable(cls: type[T], data: Any, path: str = "") -> T:
    """Build a value of type ``cls`` from its JSON form; ``CodecError`` on a mismatch."""
    return typing.cast(T, _decode(cls, data, path or getattr(cls, "__name__", "value")))


def _decode(tp: Any, data: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return data
    if origin is Union or origin is types.UnionType:
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _decode(arg, data, path)
            except CodecError as exc:
                errors.append(str(exc))
        raise CodecError(errors[0] if len(errors) == 1 else f"{path}: no form fits {data!r}")
    if origin is typing.Literal:
        if data not in typing.get_args(tp):
            raise CodecError(f"{path}: expected one of {typing.get_args(tp)}, got {data!r}")
        return data
    if origin in (tuple, list, frozenset, set) or tp in (tuple, list):
        if not isinstance(data, list):
            raise CodecError(f"{path}: expected a list, got {_describe(data)}")
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(data):
                raise CodecError(f"{path}: expected {len(args)} items, got {len(data)}")
            return tuple(
                _decode(a, d, f"{path}[{i}]")
                for i, (a, d) in enumerate(zip(args, data, strict=True))
            )
        item = args[0] if args else Any
        items = [_decode(item, d, f"{path}[{i}]") for i, d in enumerate(data)]
        if origin in (frozenset, set):
            return frozenset(items)
        return items if origin is list else tuple(items)
    if origin in (dict, Mapping) or origin is typing.get_origin(Mapping[str, int]):
        if not isinstance(data, dict):
            raise CodecError(f"{path}: expected an object, got {_describe(data)}")
        key_type, value_type = typing.get_args(tp) or (Any, Any)
        return {
            _decode(key_type, k, f"{path} key {k!r}"): _decode(value_type, v, f"{path}.{k}")
            for k, v in data.items()
        }
    if isinstance(tp, type):
        return _decode_plain(tp, data, path)
    raise CodecError(f"{path}: unsupported type {tp!r}")


def _decode_plain(tp: type, data: Any, path: str) -> Any:
    if tp is bool:
        if not isinstance(data, bool):
            raise CodecError(f"{path}: expected true or false, got {_describe(data)}")
        return data
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise CodecError(f"{path}: expected an integer, got {_describe(data)}")
        return data
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise CodecError(f"{path}: expected a number, got {_describe(data)}")
        return float(data)
    if tp is str:
        if not isinstance(data, str):
            raise CodecError(f"{path}: expected a string, got {_describe(data)}")
        return data
    if tp is bytes:
        if not isinstance(data, str):
            raise CodecError(f"{path}: expected base64 text, got {_describe(data)}")
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise CodecError(f"{path}: not valid base64: {data!r}") from None
    if tp is TopicPartition:
        try:
            return TopicPartition.parse(data)
        except ValueError as exc:
            raise CodecError(f"{path}: {exc}") from None
    if tp is Uuid:
        try:
            return Uuid.from_string(data)
        except ValueError as exc:
            raise CodecError(f"{path}: {exc}") from None
    if issubclass(tp, enum.Enum):
        if isinstance(data, str):
            try:
                return tp[data.upper()]
            except KeyError:
                pass
        try:
            return tp(data)
        except ValueError:
            names = ", ".join(m.name for m in tp)
            raise CodecError(f"{path}: {data!r} is not one of {names}") from None
    if dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, data, path)
    if isinstance(data, tp):
        return data
    raise CodecError(f"{path}: cannot build {tp.__name__} from {_describe(data)}")


def _decode_dataclass(tp: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise CodecError(f"{path}: expected an object, got {_describe(data)}")
    hints = _hints(tp)
    fields = {f.name: f for f in dataclasses.fields(tp) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise CodecError(f"{path}: unknown field {unknown[0]!r} (known: {', '.join(fields)})")
    kwargs = {}
    for name, field in fields.items():
        if name in data:
            kwargs[name] = _decode(hints[name], data[name], f"{path}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise CodecError(f"{path}: missing field {name!r}")
    try:
        return tp(**kwargs)
    except (TypeError, ValueError) as exc:
        raise CodecError(f"{path}: {exc}") from None


def _describe(data: Any) -> str:
    if data is None:
        return "null"
    text = repr(data)
    return text if len(text) <= 40 else text[:37] + "..."
