"""Coordinator records: the only way coordinator state changes.

See docs/architecture.md, "Contracts between the parts".

Like the records Kafka's group coordinator writes to ``__consumer_offsets``:
a record is a *key* (which thing: a group, a member, an offset) and a
*value* (its new state), or a *tombstone* (value ``None``: the thing is gone).
Every key type has Kafka's record type id. Replaying a group's records in
order rebuilds the group exactly; that is how a restart recovers and how the
property tests check the live state.

Text form (the durable store and ``regroup replay``):
``{"type": <id>, "name": "...", "key": {...}, "value": {...} | null}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from regroup.model.codec import CodecError, from_jsonable, to_jsonable

__all__ = [
    "RECORD_TYPES",
    "CoordinatorRecord",
    "RecordKey",
    "RecordValue",
    "register_record_type",
]


class RecordKey:
    """Base of record keys: frozen dataclasses, each registered with ``register_record_type``."""

    __slots__ = ()
    record_type: ClassVar[int]
    record_name: ClassVar[str]
    value_type: ClassVar[type[RecordValue]]


class RecordValue:
    """Base of record values (frozen dataclasses).

    ``tagged_fields``: fields that are Kafka *tagged* fields of the value's schema
    (``taggedVersions``); like Kafka, the text form leaves them out while they are
    ``None``, so a value without them reads as it did before they existed.
    """

    __slots__ = ()
    tagged_fields: ClassVar[tuple[str, ...]] = ()


RECORD_TYPES: dict[int, type[RecordKey]] = {}


def register_record_type(
    key_type: type[RecordKey], type_id: int, name: str, value_type: type[RecordValue]
) -> None:
    """Register a key class under Kafka's record type id, with its value class.

    Called after the class, next to Kafka's id for it, so the table of ids reads
    as Kafka's ``CoordinatorRecordType`` does.
    """
    if type_id in RECORD_TYPES and RECORD_TYPES[type_id] is not key_type:
        raise ValueError(f"record type {type_id} registered twice")
    key_type.record_type = type_id
    key_type.record_name = name
    key_type.value_type = value_type
    RECORD_TYPES[type_id] = key_type


def _value_jsonable(value: RecordValue) -> Any:
    data = to_jsonable(value)
    for name in value.tagged_fields:
        if isinstance(data, dict) and data.get(name) is None:
            data.pop(name, None)
    return data


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """A key and its new value; ``value=None`` is a tombstone."""

    key: RecordKey
    value: RecordValue | None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.key.record_type,
            "name": self.key.record_name,
            "key": to_jsonable(self.key),
            "value": None if self.value is None else _value_jsonable(self.value),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CoordinatorRecord:
        type_id = data.get("type")
        key_type = RECORD_TYPES.get(type_id) if isinstance(type_id, int) else None
        if key_type is None:
            name = data.get("name")
            matches = [k for k in RECORD_TYPES.values() if k.record_name == name]
            if not matches:
                raise CodecError(f"unknown record type {type_id!r} / name {name!r}")
            key_type = matches[0]
        key = from_jsonable(key_type, data.get("key"), key_type.record_name + ".key")
        raw_value = data.get("value")
        value = (
            None
            if raw_value is None
            else from_jsonable(key_type.value_type, raw_value, key_type.record_name + ".value")
        )
        return cls(key, value)

    @classmethod
    def from_json(cls, text: str) -> CoordinatorRecord:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CodecError(f"not a JSON record: {exc.msg}") from None
        if not isinstance(data, dict):
            raise CodecError("a record must be a JSON object")
        return cls.from_dict(data)
