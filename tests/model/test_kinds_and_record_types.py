"""Every event class has its own ``kind`` and every record key its type id.

A class that forgot its ``kind`` would silently keep the base's empty one, and a key
left out of ``register_record_type`` would have no type id at all; these tests find that.
"""

from __future__ import annotations

import dataclasses
import inspect

from regroup.events import schema
from regroup.records import RECORD_TYPES, RecordKey, RecordValue
from regroup.records import classic as classic_records
from regroup.records import consumer as consumer_records
from regroup.records import offsets as offset_records


def _event_classes() -> list[type[schema.Event]]:
    return [
        cls
        for _, cls in inspect.getmembers(schema, inspect.isclass)
        if issubclass(cls, schema.Event) and cls is not schema.Event
    ]


def test_every_event_class_has_its_own_kind() -> None:
    classes = _event_classes()
    assert len(classes) == len(schema.EVENT_KINDS) > 20
    for cls in classes:
        assert cls.kind, f"{cls.__name__} has no kind: add it to EVENT_KINDS"
        assert schema.EVENT_KINDS[cls.kind] is cls
    assert schema.Event.kind == ""


def test_kind_is_not_a_field() -> None:
    for cls in _event_classes():
        assert "kind" not in {f.name for f in dataclasses.fields(cls)}


def test_every_record_key_is_registered_with_its_value() -> None:
    keys = [
        cls
        for module in (classic_records, consumer_records, offset_records)
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, RecordKey) and cls is not RecordKey and cls.__module__ == module.__name__
    ]
    assert len(keys) == len(RECORD_TYPES) > 8
    for key in keys:
        assert RECORD_TYPES[key.record_type] is key
        assert key.record_name and issubclass(key.value_type, RecordValue)


def test_the_tagged_field_is_set_on_the_member_metadata_value() -> None:
    value = consumer_records.ConsumerGroupMemberMetadataValue
    assert value.tagged_fields == ("classic_member_metadata",)
    assert "tagged_fields" not in {f.name for f in dataclasses.fields(value)}
