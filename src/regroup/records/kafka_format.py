"""The coordinator's records in Kafka's own binary ``__consumer_offsets`` format.

Kafka 4.x's group coordinator writes each record to ``__consumer_offsets`` as a
record *key* and *value* of the schemas in its ``group-coordinator`` module
(``common/message/*Key.json`` / ``*Value.json``), serialised by
``CoordinatorRecordSerde``:

- key: an int16, the record type (the schema's ``apiKey``; before 4.0 the key's
  "version"), then the key's fields, non-flexible (``STRING`` = int16 length +
  UTF-8, ``INT32`` big-endian);
- value: an int16, the value's schema version, then its fields in that version;
  a *flexible* version writes ``COMPACT_STRING`` / ``COMPACT_BYTES`` /
  ``COMPACT_ARRAY`` (unsigned-varint length + 1, 0 for null) and ends every struct
  with its *tagged fields* (varint count, then tag, size, data per field);
- a tombstone is a record whose value is null.

Versions written are Kafka 4.x's (``GroupCoordinatorRecordHelpers`` and
``MetadataVersion.offsetCommitValueVersion`` / ``groupMetadataValueVersion``):

====  ======================================  ============  ===============================
type  record                                  value ver.    value format
====  ======================================  ============  ===============================
0, 1  OffsetCommit (0: its legacy key)         3             non-flexible (read: 0-4)
2     GroupMetadata                            3             non-flexible (read: 0-4)
3     ConsumerGroupMetadata                    0             flexible
4     ConsumerGroupPartitionMetadata           0             flexible
5     ConsumerGroupMemberMetadata              0             flexible, tag 0: classic member
6     ConsumerGroupTargetAssignmentMetadata    0             flexible
7     ConsumerGroupTargetAssignmentMember      0             flexible
8     ConsumerGroupCurrentMemberAssignment     0             flexible
16    ConsumerGroupRegularExpression           0             flexible
====  ======================================  ============  ===============================

What Kafka's format cannot hold of regroup's records (they stay in regroup's own
store, whose text form is ``regroup.records.base``): the ``ConsumerGroupConfig``
records (type 900, a regroup extension: Kafka keeps group configs in the metadata
log), which ``encode_record`` refuses with ``NotInKafkaFormat``; a classic
member's ``supported_protocols`` and a KIP-848 member's ``client_assignors``
(extensions, left out: Kafka's readers never had them). GroupMetadata's
``protocolType`` is a non-null string in Kafka: a group without one is written as
``""``, as Kafka's ``ClassicGroup`` does, and ``""`` reads back as none.

A decoder of bytes from the wire: every malformed input raises
``KafkaFormatError`` (a ``WireFormatError``), never another exception. Tagged
fields a reader does not know are skipped, as Kafka's generated readers keep them
aside (a newer Kafka's additions read back as absent).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import TypeVar

from regroup.model.requests.consumer import TopicPartitions
from regroup.model.uuid import Uuid
from regroup.model.wire import WireFormatError
from regroup.records.base import CoordinatorRecord, RecordKey, RecordValue
from regroup.records.classic import (
    GroupMetadataKey,
    GroupMetadataValue,
    GroupMetadataValueMember,
)
from regroup.records.consumer import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    PartitionMetadataTopic,
)
from regroup.records.offsets import OffsetCommitKey, OffsetCommitValue

__all__ = [
    "KAFKA_RECORD_TYPES",
    "KafkaFormatError",
    "NotInKafkaFormat",
    "decode_key",
    "decode_record",
    "encode_key",
    "encode_record",
    "encode_value",
    "in_kafka_format",
]

T = TypeVar("T")

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

#: The record types Kafka's group coordinator has among regroup's, by type id.
KAFKA_RECORD_TYPES: dict[int, type[RecordKey]] = {
    1: OffsetCommitKey,
    2: GroupMetadataKey,
    3: ConsumerGroupMetadataKey,
    4: ConsumerGroupPartitionMetadataKey,
    5: ConsumerGroupMemberMetadataKey,
    6: ConsumerGroupTargetAssignmentMetadataKey,
    7: ConsumerGroupTargetAssignmentMemberKey,
    8: ConsumerGroupCurrentMemberAssignmentKey,
    16: ConsumerGroupRegularExpressionKey,
}
#: ``OffsetCommitKey`` version 0 (Kafka's ``LegacyOffsetCommitKey``): the same fields.
_LEGACY_OFFSET_COMMIT = 0

#: The value version Kafka 4.x writes per record type.
_WRITTEN_VERSION = {1: 3, 2: 3}
#: The value versions Kafka's schemas define per record type (first flexible one).
_VALUE_VERSIONS = {1: (0, 4), 2: (0, 4)}
_FIRST_FLEXIBLE = {1: 4, 2: 4}

#: ``ConsumerGroupMemberMetadataValue``'s tag of ``ClassicMemberMetadata``.
_TAG_CLASSIC_MEMBER = 0


class KafkaFormatError(WireFormatError):
    """Bytes that are not a coordinator record in Kafka's ``__consumer_offsets`` format."""


class NotInKafkaFormat(ValueError):
    """A regroup record that Kafka's ``__consumer_offsets`` has no type for."""


def in_kafka_format(record: CoordinatorRecord) -> bool:
    """Whether Kafka's coordinator has ``record``'s type (``encode_record`` takes it)."""
    return KAFKA_RECORD_TYPES.get(record.key.record_type) is type(record.key)


# -- primitives ---------------------------------------------------------------------------


class _Writer:
    """Kafka primitives; ``flexible`` picks the compact forms of a flexible version."""

    __slots__ = ("flexible", "parts")

    def __init__(self, flexible: bool) -> None:
        self.flexible = flexible
        self.parts: list[bytes] = []

    def int8(self, value: int) -> None:
        self.parts.append(_I8.pack(value))

    def int16(self, value: int) -> None:
        self.parts.append(_I16.pack(value))

    def int32(self, value: int) -> None:
        self.parts.append(_I32.pack(value))

    def int64(self, value: int) -> None:
        self.parts.append(_I64.pack(value))

    def uvarint(self, value: int) -> None:
        out = bytearray()
        while value >= 0x80:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
        self.parts.append(bytes(out))

    def uuid(self, value: Uuid) -> None:
        self.parts.append(value.to_bytes())

    def _length(self, length: int | None, *, wide: bool) -> None:
        if self.flexible:
            self.uvarint(0 if length is None else length + 1)
        elif wide:
            self.int32(-1 if length is None else length)
        else:
            if length is not None and length > 0x7FFF:
                raise KafkaFormatError(f"string of {length} bytes is longer than an int16 length")
            self.int16(-1 if length is None else length)

    def string(self, value: str | None) -> None:
        data = None if value is None else value.encode("utf-8")
        self._length(None if data is None else len(data), wide=False)
        if data is not None:
            self.parts.append(data)

    def bytes_(self, value: bytes) -> None:
        self._length(len(value), wide=True)
        self.parts.append(bytes(value))

    def array(self, items: Sequence[T], write: Callable[[_Writer, T], None]) -> None:
        self._length(len(items), wide=True)
        for item in items:
            write(self, item)

    def no_tags(self) -> None:
        if self.flexible:
            self.uvarint(0)

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    """Reads what ``_Writer`` writes; any malformed input raises ``KafkaFormatError``."""

    __slots__ = ("data", "flexible", "pos")

    def __init__(self, data: bytes, flexible: bool) -> None:
        self.data = data
        self.flexible = flexible
        self.pos = 0

    def _take(self, fmt: struct.Struct, what: str) -> int:
        if self.pos + fmt.size > len(self.data):
            raise KafkaFormatError(f"truncated: expected {what} at byte {self.pos}")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return int(value)

    def int8(self) -> int:
        return self._take(_I8, "an int8")

    def int16(self) -> int:
        return self._take(_I16, "an int16")

    def int32(self) -> int:
        return self._take(_I32, "an int32")

    def int64(self) -> int:
        return self._take(_I64, "an int64")

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            if self.pos >= len(self.data):
                raise KafkaFormatError(f"truncated: expected a varint at byte {self.pos}")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise KafkaFormatError(f"varint longer than 5 bytes at byte {self.pos}")

    def raw(self, length: int, what: str) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise KafkaFormatError(f"truncated: {what} of {length} bytes at byte {self.pos}")
        chunk = self.data[self.pos : self.pos + length]
        self.pos += length
        return chunk

    def uuid(self) -> Uuid:
        return Uuid.from_bytes(self.raw(16, "a uuid"))

    def _length(self, *, wide: bool) -> int | None:
        if self.flexible:
            n = self.uvarint()
            return None if n == 0 else n - 1
        n = self.int32() if wide else self.int16()
        if n < -1:
            raise KafkaFormatError(f"negative length {n} at byte {self.pos}")
        return None if n == -1 else n

    def nullable_string(self) -> str | None:
        length = self._length(wide=False)
        if length is None:
            return None
        try:
            return self.raw(length, "a string").decode("utf-8")
        except UnicodeDecodeError:
            raise KafkaFormatError(f"string before byte {self.pos} is not UTF-8") from None

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise KafkaFormatError(f"null where a string is required, before byte {self.pos}")
        return value

    def bytes_(self) -> bytes:
        length = self._length(wide=True)
        if length is None:
            raise KafkaFormatError(f"null where bytes are required, before byte {self.pos}")
        return self.raw(length, "bytes")

    def array(self, read: Callable[[_Reader], T]) -> list[T]:
        count = self._length(wide=True)
        if count is None:
            raise KafkaFormatError(f"null where an array is required, before byte {self.pos}")
        # Every element takes at least one byte: a longer count is corrupt input and
        # must not make us allocate a huge list.
        if count > len(self.data) - self.pos:
            raise KafkaFormatError(f"array of {count} elements is longer than the input")
        return [read(self) for _ in range(count)]

    def tags(self) -> dict[int, bytes]:
        """A flexible struct's tagged fields (tag -> data); none in a non-flexible one."""
        if not self.flexible:
            return {}
        found: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            if tag in found:
                raise KafkaFormatError(f"tagged field {tag} appears twice")
            found[tag] = self.raw(self.uvarint(), "a tagged field")
        return found

    def done(self, what: str) -> None:
        if self.pos != len(self.data):
            raise KafkaFormatError(f"{len(self.data) - self.pos} bytes left over after {what}")


# -- keys ---------------------------------------------------------------------------------


def encode_key(key: RecordKey) -> bytes:
    """The key's bytes: its int16 record type, then its fields (non-flexible)."""
    type_id = key.record_type
    if KAFKA_RECORD_TYPES.get(type_id) is not type(key):
        raise NotInKafkaFormat(f"{key.record_name} (type {type_id}) is not a Kafka record")
    w = _Writer(flexible=False)
    w.int16(type_id)
    if isinstance(key, OffsetCommitKey):
        w.string(key.group)
        w.string(key.topic)
        w.int32(key.partition)
    elif isinstance(key, GroupMetadataKey):
        w.string(key.group)
    elif isinstance(
        key,
        ConsumerGroupMemberMetadataKey
        | ConsumerGroupTargetAssignmentMemberKey
        | ConsumerGroupCurrentMemberAssignmentKey,
    ):
        w.string(key.group_id)
        w.string(key.member_id)
    elif isinstance(key, ConsumerGroupRegularExpressionKey):
        w.string(key.group_id)
        w.string(key.regular_expression)
    elif isinstance(
        key,
        ConsumerGroupMetadataKey
        | ConsumerGroupPartitionMetadataKey
        | ConsumerGroupTargetAssignmentMetadataKey,
    ):
        w.string(key.group_id)
    else:  # pragma: no cover - KAFKA_RECORD_TYPES lists exactly the types above
        raise NotInKafkaFormat(key.record_name)
    return w.getvalue()


def decode_key(data: bytes) -> RecordKey:
    """A key from its bytes (``KafkaFormatError`` for an unknown type or bad bytes)."""
    r = _Reader(bytes(data), flexible=False)
    type_id = r.int16()
    if type_id == _LEGACY_OFFSET_COMMIT:
        type_id = 1
    key_type = KAFKA_RECORD_TYPES.get(type_id)
    if key_type is None:
        raise KafkaFormatError(f"unknown record type {type_id}")
    key: RecordKey
    if key_type is OffsetCommitKey:
        key = OffsetCommitKey(r.string(), r.string(), r.int32())
    elif key_type is GroupMetadataKey:
        key = GroupMetadataKey(r.string())
    elif key_type is ConsumerGroupRegularExpressionKey:
        key = ConsumerGroupRegularExpressionKey(r.string(), r.string())
    elif key_type in (
        ConsumerGroupMemberMetadataKey,
        ConsumerGroupTargetAssignmentMemberKey,
        ConsumerGroupCurrentMemberAssignmentKey,
    ):
        key = key_type(r.string(), r.string())
    else:
        key = key_type(r.string())  # type: ignore[call-arg]
    r.done(f"the key of {key.record_name}")
    return key


# -- values -------------------------------------------------------------------------------


def _write_topic_partitions(w: _Writer, tp: TopicPartitions) -> None:
    w.uuid(tp.topic_id)
    w.array(tp.partitions, _Writer.int32)
    w.no_tags()


def _read_topic_partitions(r: _Reader) -> TopicPartitions:
    topic_id = r.uuid()
    partitions = tuple(r.array(_Reader.int32))
    r.tags()
    return TopicPartitions(topic_id, partitions)


def _write_gm_member(w: _Writer, m: GroupMetadataValueMember, version: int) -> None:
    w.string(m.member_id)
    if version >= 3:
        w.string(m.group_instance_id)
    w.string(m.client_id)
    w.string(m.client_host)
    if version >= 1:
        w.int32(m.rebalance_timeout)
    w.int32(m.session_timeout)
    w.bytes_(m.subscription)
    w.bytes_(m.assignment)
    w.no_tags()


def _read_gm_member(r: _Reader, version: int) -> GroupMetadataValueMember:
    member_id = r.string()
    instance_id = r.nullable_string() if version >= 3 else None
    client_id = r.string()
    client_host = r.string()
    rebalance_timeout = r.int32() if version >= 1 else None
    session_timeout = r.int32()
    subscription = r.bytes_()
    assignment = r.bytes_()
    r.tags()
    return GroupMetadataValueMember(
        member_id=member_id,
        group_instance_id=instance_id,
        client_id=client_id,
        client_host=client_host,
        # Kafka's ClassicGroup.fromRecord: version 0 had no rebalance timeout, the
        # session timeout stood for it.
        rebalance_timeout=session_timeout if rebalance_timeout is None else rebalance_timeout,
        session_timeout=session_timeout,
        subscription=subscription,
        assignment=assignment,
    )


def _write_classic_member(w: _Writer, c: ClassicMemberMetadata) -> None:
    w.int32(c.session_timeout_ms)

    def protocol(w: _Writer, p: ClassicProtocol) -> None:
        w.string(p.name)
        w.bytes_(p.metadata)
        w.no_tags()

    w.array(c.supported_protocols, protocol)
    w.no_tags()


def _read_classic_member(r: _Reader) -> ClassicMemberMetadata:
    session_timeout = r.int32()

    def protocol(r: _Reader) -> ClassicProtocol:
        name = r.string()
        metadata = r.bytes_()
        r.tags()
        return ClassicProtocol(name, metadata)

    protocols = tuple(r.array(protocol))
    r.tags()
    return ClassicMemberMetadata(session_timeout, protocols)


def _write_partition_topic(w: _Writer, t: PartitionMetadataTopic) -> None:
    w.uuid(t.topic_id)
    w.string(t.topic_name)
    w.int32(t.num_partitions)
    # PartitionMetadata (partitions' racks): unused since Kafka 4.0, written empty.
    w.array((), _Writer.int32)
    w.no_tags()


def _read_partition_topic(r: _Reader) -> PartitionMetadataTopic:
    topic_id = r.uuid()
    name = r.string()
    num_partitions = r.int32()

    def partition_racks(r: _Reader) -> None:
        r.int32()
        r.array(_Reader.string)
        r.tags()

    r.array(partition_racks)
    r.tags()
    return PartitionMetadataTopic(topic_id, name, num_partitions)


def _write_value_fields(w: _Writer, value: RecordValue, version: int) -> None:
    if isinstance(value, OffsetCommitValue):
        w.int64(value.offset)
        if version >= 3:
            w.int32(value.leader_epoch)
        w.string(value.metadata)
        w.int64(value.commit_timestamp)
        if version == 1:
            w.int64(-1)  # expireTimestamp: regroup expires by offsets.retention.minutes
    elif isinstance(value, GroupMetadataValue):
        w.string(value.protocol_type or "")
        w.int32(value.generation)
        w.string(value.protocol)
        w.string(value.leader)
        if version >= 2:
            w.int64(value.current_state_timestamp)
        w.array(value.members, lambda w, m: _write_gm_member(w, m, version))
    elif isinstance(value, ConsumerGroupMetadataValue):
        w.int32(value.epoch)
    elif isinstance(value, ConsumerGroupPartitionMetadataValue):
        w.array(value.topics, _write_partition_topic)
    elif isinstance(value, ConsumerGroupMemberMetadataValue):
        _write_member_metadata(w, value)
        return
    elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        w.int32(value.assignment_epoch)
    elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        w.array(value.topic_partitions, _write_topic_partitions)
    elif isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
        w.int32(value.member_epoch)
        w.int32(value.previous_member_epoch)
        w.int8(value.state)
        w.array(value.assigned_partitions, _write_topic_partitions)
        w.array(value.partitions_pending_revocation, _write_topic_partitions)
    elif isinstance(value, ConsumerGroupRegularExpressionValue):
        w.array(value.topics, _Writer.string)
        w.int64(value.version)
        w.int64(value.timestamp)
    else:  # pragma: no cover - guarded by encode_value's type check
        raise NotInKafkaFormat(type(value).__name__)
    w.no_tags()


def _write_member_metadata(w: _Writer, value: ConsumerGroupMemberMetadataValue) -> None:
    w.string(value.instance_id)
    w.string(value.rack_id)
    w.string(value.client_id)
    w.string(value.client_host)
    w.array(value.subscribed_topic_names, _Writer.string)
    w.string(value.subscribed_topic_regex)
    w.int32(value.rebalance_timeout_ms)
    w.string(value.server_assignor)
    classic = value.classic_member_metadata
    if classic is None:
        w.uvarint(0)
        return
    inner = _Writer(flexible=True)
    inner.uvarint(1)  # a nullable struct's "present" marker
    _write_classic_member(inner, classic)
    data = inner.getvalue()
    w.uvarint(1)
    w.uvarint(_TAG_CLASSIC_MEMBER)
    w.uvarint(len(data))
    w.parts.append(data)


def _read_member_metadata(r: _Reader) -> ConsumerGroupMemberMetadataValue:
    instance_id = r.nullable_string()
    rack_id = r.nullable_string()
    client_id = r.string()
    client_host = r.string()
    topics = tuple(r.array(_Reader.string))
    regex = r.nullable_string()
    rebalance_timeout = r.int32()
    server_assignor = r.nullable_string()
    classic = None
    raw = r.tags().get(_TAG_CLASSIC_MEMBER)
    if raw is not None:
        inner = _Reader(raw, flexible=True)
        marker = inner.int8()
        if marker >= 0:
            classic = _read_classic_member(inner)
        inner.done("ClassicMemberMetadata")
    return ConsumerGroupMemberMetadataValue(
        instance_id=instance_id,
        rack_id=rack_id,
        client_id=client_id,
        client_host=client_host,
        subscribed_topic_names=topics,
        subscribed_topic_regex=regex,
        rebalance_timeout_ms=rebalance_timeout,
        server_assignor=server_assignor,
        classic_member_metadata=classic,
    )


def _read_value_fields(r: _Reader, type_id: int, version: int) -> RecordValue:
    value: RecordValue
    if type_id == 1:
        offset = r.int64()
        leader_epoch = r.int32() if version >= 3 else -1
        metadata = r.string()
        commit_timestamp = r.int64()
        if version == 1:
            r.int64()  # expireTimestamp
        value = OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp)
    elif type_id == 2:
        protocol_type = r.string()
        generation = r.int32()
        protocol = r.nullable_string()
        leader = r.nullable_string()
        timestamp = r.int64() if version >= 2 else -1
        members = tuple(r.array(lambda r: _read_gm_member(r, version)))
        value = GroupMetadataValue(
            protocol_type or None, generation, protocol, leader, timestamp, members
        )
    elif type_id == 3:
        value = ConsumerGroupMetadataValue(r.int32())
    elif type_id == 4:
        value = ConsumerGroupPartitionMetadataValue(tuple(r.array(_read_partition_topic)))
    elif type_id == 5:
        return _read_member_metadata(r)
    elif type_id == 6:
        value = ConsumerGroupTargetAssignmentMetadataValue(r.int32())
    elif type_id == 7:
        value = ConsumerGroupTargetAssignmentMemberValue(tuple(r.array(_read_topic_partitions)))
    elif type_id == 8:
        value = ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=r.int32(),
            previous_member_epoch=r.int32(),
            state=r.int8(),
            assigned_partitions=tuple(r.array(_read_topic_partitions)),
            partitions_pending_revocation=tuple(r.array(_read_topic_partitions)),
        )
    else:
        topics = tuple(r.array(_Reader.string))
        value = ConsumerGroupRegularExpressionValue(topics, r.int64(), r.int64())
    r.tags()
    return value


def encode_value(key: RecordKey, value: RecordValue) -> bytes:
    """The value's bytes: the int16 version Kafka 4.x writes, then its fields."""
    type_id = key.record_type
    if KAFKA_RECORD_TYPES.get(type_id) is not type(key) or not isinstance(value, key.value_type):
        raise NotInKafkaFormat(f"{type(value).__name__} is not a value of a Kafka record type")
    version = _WRITTEN_VERSION.get(type_id, 0)
    head = _Writer(flexible=False)
    head.int16(version)
    w = _Writer(flexible=version >= _FIRST_FLEXIBLE.get(type_id, 0))
    _write_value_fields(w, value, version)
    return head.getvalue() + w.getvalue()


def _decode_value(type_id: int, data: bytes) -> RecordValue:
    r = _Reader(data, flexible=False)
    version = r.int16()
    low, high = _VALUE_VERSIONS.get(type_id, (0, 0))
    if not low <= version <= high:
        raise KafkaFormatError(f"record type {type_id} has no value version {version}")
    r.flexible = version >= _FIRST_FLEXIBLE.get(type_id, 0)
    value = _read_value_fields(r, type_id, version)
    r.done(f"the value of record type {type_id}")
    return value


def encode_record(record: CoordinatorRecord) -> tuple[bytes, bytes | None]:
    """The record's key and value bytes (value ``None``: a tombstone)."""
    key = encode_key(record.key)
    if record.value is None:
        return key, None
    return key, encode_value(record.key, record.value)


def decode_record(key: bytes, value: bytes | None) -> CoordinatorRecord:
    """A record from a ``__consumer_offsets`` record's key and value (``None``: tombstone)."""
    record_key = decode_key(key)
    if value is None:
        return CoordinatorRecord(record_key, None)
    return CoordinatorRecord(record_key, _decode_value(record_key.record_type, bytes(value)))
