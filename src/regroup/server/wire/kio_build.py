"""Build kio message objects from plain values, whatever the wire version.

kio generates one frozen dataclass per message *and version*; a field that a
version lacks is simply absent from its class. The mapping layer describes a
response once, version-neutrally, as a dict of kio field names; ``build``
keeps the fields the target class has, drops the others, and converts the
plain values to kio's types: milliseconds to ``timedelta`` (kio's
``timedelta_i32``/``timedelta_i64``), ``regroup.model.Uuid`` to ``uuid.UUID``,
``ErrorCode`` to kio's enum, dicts to nested entities. A required field that
is missing is a bug in the mapping and raises ``BuildError``.
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode as KioErrorCode

from regroup.model.uuid import Uuid

__all__ = ["BuildError", "build", "kio_error", "ms", "to_kio_uuid", "to_uuid"]

T = TypeVar("T")

_ZERO_UUID = uuid.UUID(int=0)
_KIO_ERRORS: dict[int, Any] = {int(code.value): code for code in KioErrorCode}


class BuildError(ValueError):
    """A response that the mapping described incompletely (a server bug)."""


@dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    kafka_type: str
    #: The nested entity class, for entity and entity-array fields.
    entity: type[Any] | None
    is_array: bool
    required: bool


def _unwrap_optional(hint: Any) -> Any:
    if typing.get_origin(hint) in (UnionType, typing.Union):
        args = [a for a in typing.get_args(hint) if a is not NoneType]
        if len(args) == 1:
            return args[0]
    return hint


_PLANS: dict[type[Any], tuple[_FieldPlan, ...]] = {}


def _plan(cls: type[Any]) -> tuple[_FieldPlan, ...]:
    cached = _PLANS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    plans: list[_FieldPlan] = []
    for field in dataclasses.fields(cls):
        hint = _unwrap_optional(hints[field.name])
        is_array = typing.get_origin(hint) is tuple
        inner = _unwrap_optional(typing.get_args(hint)[0]) if is_array else hint
        entity = inner if dataclasses.is_dataclass(inner) else None
        required = (
            field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        )
        plans.append(
            _FieldPlan(
                field.name,
                str(field.metadata.get("kafka_type", "")),
                entity if isinstance(entity, type) else None,
                is_array,
                required,
            )
        )
    _PLANS[cls] = result = tuple(plans)
    return result


def kio_error(code: int) -> Any:
    """kio's ``ErrorCode`` for ``code``; regroup's private codes become UNKNOWN_SERVER_ERROR.

    kio's enum has no member for regroup's 10000/10001, and no response built
    here goes to regroup's own client only (``heartbeat_codec`` handles that
    case); UNKNOWN_SERVER_ERROR is what Kafka's clients make of an unknown code.
    """
    return _KIO_ERRORS.get(int(code), KioErrorCode.unknown_server_error)


_MS = datetime.timedelta(milliseconds=1)


def ms(value: datetime.timedelta | int) -> int:
    """kio's ``timedelta`` as Kafka's int milliseconds."""
    if isinstance(value, datetime.timedelta):
        return value // _MS
    return int(value)


def to_kio_uuid(value: Uuid | None) -> uuid.UUID:
    return _ZERO_UUID if value is None else uuid.UUID(bytes=value.to_bytes())


def to_uuid(value: uuid.UUID | None) -> Uuid:
    return Uuid.ZERO if value is None else Uuid.from_bytes(value.bytes)


def _convert(plan: _FieldPlan, value: Any) -> Any:
    if value is None:
        return None
    if plan.entity is not None:
        if plan.is_array:
            return tuple(_entity(plan.entity, item) for item in value)
        return _entity(plan.entity, value)
    kind = plan.kafka_type
    if kind in ("timedelta_i32", "timedelta_i64"):
        if isinstance(value, datetime.timedelta):
            return value
        return datetime.timedelta(milliseconds=int(value))
    if kind == "datetime_i64":
        if isinstance(value, datetime.datetime):
            return value
        if int(value) < 0:
            return None
        return datetime.datetime.fromtimestamp(int(value) / 1000, tz=datetime.UTC)
    if kind == "uuid":
        if isinstance(value, uuid.UUID):
            return value
        return to_kio_uuid(value)
    if kind == "error_code":
        return kio_error(value)
    if plan.is_array:
        return tuple(value)
    return value


def _entity(cls: type[Any], value: Any) -> Any:
    if isinstance(value, Mapping):
        return build(cls, value)
    return value


def build(cls: type[T], values: Mapping[str, Any]) -> T:
    """An instance of the kio class ``cls`` from plain ``values`` (extra keys ignored)."""
    kwargs: dict[str, Any] = {}
    for plan in _plan(cls):
        if plan.name in values:
            kwargs[plan.name] = _convert(plan, values[plan.name])
        elif plan.required:
            raise BuildError(f"{cls.__module__}.{cls.__qualname__} needs field {plan.name!r}")
    return cls(**kwargs)
