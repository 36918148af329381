"""Kafka's ``__consumer_offsets`` binary format of the coordinator's records.

Byte-level examples are built field by field from the schemas of Kafka 4.x's
``group-coordinator`` module (``OffsetCommitValue.json`` etc.): the field order,
the versions written, compact vs. classic lengths and tagged fields. The property
tests round-trip every record type; the fuzz test feeds the decoder garbage.
"""

from __future__ import annotations

import contextlib
import dataclasses
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.model.requests.consumer import ClientAssignor, TopicPartitions
from regroup.model.uuid import Uuid
from regroup.records import CoordinatorRecord, RecordKey, RecordValue
from regroup.records.classic import (
    GroupMetadataKey,
    GroupMetadataValue,
    GroupMetadataValueMember,
    GroupMetadataValueProtocol,
)
from regroup.records.consumer import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupConfigKey,
    ConsumerGroupConfigValue,
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
    GroupConfigEntry,
    PartitionMetadataTopic,
)
from regroup.records.kafka_format import (
    KAFKA_RECORD_TYPES,
    KafkaFormatError,
    NotInKafkaFormat,
    decode_record,
    encode_record,
    in_kafka_format,
)
from regroup.records.offsets import OffsetCommitKey, OffsetCommitValue


def s16(text: str) -> bytes:
    """A non-flexible STRING: int16 length + UTF-8."""
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def cs(text: str | None) -> bytes:
    """A COMPACT_(NULLABLE_)STRING: unsigned varint length + 1 (0: null)."""
    if text is None:
        return b"\x00"
    data = text.encode()
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


TOPIC = Uuid(0x0102030405060708, 0x090A0B0C0D0E0F10)
TOPIC_BYTES = bytes(range(1, 17))


# -- byte-level examples -----------------------------------------------------------------


def test_offset_commit_key_and_value_v3() -> None:
    record = CoordinatorRecord(
        OffsetCommitKey("g", "orders", 7), OffsetCommitValue(42, 5, "meta", 1_700_000_000_000)
    )
    key, value = encode_record(record)
    assert key == i16(1) + s16("g") + s16("orders") + i32(7)
    # Kafka 4.x writes version 3: offset, leaderEpoch, metadata, commitTimestamp.
    assert value == i16(3) + i64(42) + i32(5) + s16("meta") + i64(1_700_000_000_000)
    assert decode_record(key, value) == record


def test_offset_commit_tombstone_and_legacy_key_and_old_versions() -> None:
    key = i16(1) + s16("g") + s16("t") + i32(0)
    assert decode_record(key, None) == CoordinatorRecord(OffsetCommitKey("g", "t", 0), None)
    legacy = i16(0) + s16("g") + s16("t") + i32(0)
    assert decode_record(legacy, None).key == OffsetCommitKey("g", "t", 0)
    # Version 1 has expireTimestamp after commitTimestamp and no leader epoch.
    v1 = i16(1) + i64(9) + s16("") + i64(100) + i64(200)
    assert decode_record(key, v1).value == OffsetCommitValue(9, -1, "", 100)
    # Version 4 is flexible: compact metadata and an (empty) tagged-field section.
    v4 = i16(4) + i64(9) + i32(2) + cs("m") + i64(100) + b"\x00"
    assert decode_record(key, v4).value == OffsetCommitValue(9, 2, "m", 100)
    # An unknown tagged field of a newer Kafka is skipped.
    v4_tag = i16(4) + i64(9) + i32(2) + cs("m") + i64(100) + b"\x01\x05\x02ab"
    assert decode_record(key, v4_tag).value == OffsetCommitValue(9, 2, "m", 100)


def test_group_metadata_v3() -> None:
    member = GroupMetadataValueMember(
        member_id="m-1",
        group_instance_id=None,
        client_id="c",
        client_host="/127.0.0.1",
        rebalance_timeout=300_000,
        session_timeout=45_000,
        subscription=b"\x00\x01",
        assignment=b"",
    )
    record = CoordinatorRecord(
        GroupMetadataKey("g"), GroupMetadataValue("consumer", 3, "range", "m-1", 1234, (member,))
    )
    key, value = encode_record(record)
    assert key == i16(2) + s16("g")
    assert value == (
        i16(3)
        + s16("consumer")
        + i32(3)
        + s16("range")
        + s16("m-1")
        + i64(1234)
        + i32(1)
        + s16("m-1")
        + i16(-1)  # groupInstanceId null
        + s16("c")
        + s16("/127.0.0.1")
        + i32(300_000)
        + i32(45_000)
        + i32(2)
        + b"\x00\x01"
        + i32(0)
    )
    assert decode_record(key, value) == record


def test_group_metadata_empty_group_and_version_0() -> None:
    record = CoordinatorRecord(GroupMetadataKey("g"), GroupMetadataValue(None, 0, None, None, -1))
    key, value = encode_record(record)
    assert value == i16(3) + s16("") + i32(0) + i16(-1) + i16(-1) + i64(-1) + i32(0)
    assert decode_record(key, value) == record
    # Version 0: no currentStateTimestamp, no instance id, no rebalance timeout (the
    # session timeout stands for it).
    v0 = (
        i16(0) + s16("consumer") + i32(1) + s16("range") + s16("a") + i32(1)
        + s16("a") + s16("c") + s16("h") + i32(10) + i32(0) + i32(0)
    )  # fmt: skip
    value0 = decode_record(key, v0).value
    assert isinstance(value0, GroupMetadataValue)
    assert value0.current_state_timestamp == -1
    assert value0.members[0].rebalance_timeout == 10


def test_consumer_group_metadata_and_epochs() -> None:
    key, value = encode_record(
        CoordinatorRecord(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(7))
    )
    assert key == i16(3) + s16("g")
    assert value == i16(0) + i32(7) + b"\x00"
    key, value = encode_record(
        CoordinatorRecord(
            ConsumerGroupTargetAssignmentMetadataKey("g"),
            ConsumerGroupTargetAssignmentMetadataValue(4),
        )
    )
    assert key == i16(6) + s16("g")
    assert value == i16(0) + i32(4) + b"\x00"


def test_partition_metadata() -> None:
    record = CoordinatorRecord(
        ConsumerGroupPartitionMetadataKey("g"),
        ConsumerGroupPartitionMetadataValue((PartitionMetadataTopic(TOPIC, "t", 3),)),
    )
    key, value = encode_record(record)
    assert key == i16(4) + s16("g")
    # Topics: compact array of 1; TopicId, TopicName, NumPartitions, PartitionMetadata
    # (empty since 4.0), the topic's tags; the value's tags.
    assert value == i16(0) + b"\x02" + TOPIC_BYTES + cs("t") + i32(3) + b"\x01" + b"\x00" + b"\x00"
    assert decode_record(key, value) == record
    # A record of Kafka 3.x with racks reads (the racks are not kept).
    with_racks = (
        i16(0) + b"\x02" + TOPIC_BYTES + cs("t") + i32(3)
        + b"\x02" + i32(0) + b"\x02" + cs("r1") + b"\x00" + b"\x00" + b"\x00"
    )  # fmt: skip
    assert decode_record(key, with_racks) == record


def test_member_metadata_with_and_without_classic_member() -> None:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=None,
        rack_id="r",
        client_id="c",
        client_host="/h",
        subscribed_topic_names=("a", "b"),
        subscribed_topic_regex=None,
        rebalance_timeout_ms=1000,
        server_assignor="uniform",
    )
    record = CoordinatorRecord(ConsumerGroupMemberMetadataKey("g", "m"), value)
    key, data = encode_record(record)
    assert key == i16(5) + s16("g") + s16("m")
    fields = (
        cs(None) + cs("r") + cs("c") + cs("/h") + b"\x03" + cs("a") + cs("b")
        + cs(None) + i32(1000) + cs("uniform")
    )  # fmt: skip
    assert data == i16(0) + fields + b"\x00"
    assert decode_record(key, data) == record

    classic = ClassicMemberMetadata(45_000, (ClassicProtocol("range", b"xy"),))
    record = CoordinatorRecord(
        record.key,
        dataclasses.replace(value, classic_member_metadata=classic),
    )
    key, data = encode_record(record)
    # Tag 0: a nullable struct, so a present marker (1) before its fields.
    struct_bytes = b"\x01" + i32(45_000) + b"\x02" + cs("range") + b"\x03xy" + b"\x00" + b"\x00"
    assert data == i16(0) + fields + b"\x01" + b"\x00" + bytes([len(struct_bytes)]) + struct_bytes
    assert decode_record(key, data) == record


def test_assignments() -> None:
    tp = TopicPartitions(TOPIC, (0, 2))
    tp_bytes = TOPIC_BYTES + b"\x03" + i32(0) + i32(2) + b"\x00"
    target = CoordinatorRecord(
        ConsumerGroupTargetAssignmentMemberKey("g", "m"),
        ConsumerGroupTargetAssignmentMemberValue((tp,)),
    )
    key, value = encode_record(target)
    assert key == i16(7) + s16("g") + s16("m")
    assert value == i16(0) + b"\x02" + tp_bytes + b"\x00"
    current = CoordinatorRecord(
        ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
        ConsumerGroupCurrentMemberAssignmentValue(5, 4, 1, (tp,), ()),
    )
    key, value = encode_record(current)
    assert key == i16(8) + s16("g") + s16("m")
    assert value == i16(0) + i32(5) + i32(4) + b"\x01" + b"\x02" + tp_bytes + b"\x01" + b"\x00"
    assert decode_record(key, value) == current


def test_regular_expression() -> None:
    record = CoordinatorRecord(
        ConsumerGroupRegularExpressionKey("g", "t.*"),
        ConsumerGroupRegularExpressionValue(("t1",), 3, 99),
    )
    key, value = encode_record(record)
    assert key == i16(16) + s16("g") + s16("t.*")
    assert value == i16(0) + b"\x02" + cs("t1") + i64(3) + i64(99) + b"\x00"
    assert decode_record(key, value) == record


def test_regroup_extensions_are_not_kafka_records() -> None:
    config = CoordinatorRecord(
        ConsumerGroupConfigKey("g"), ConsumerGroupConfigValue((GroupConfigEntry("a", "b"),))
    )
    assert not in_kafka_format(config)
    with pytest.raises(NotInKafkaFormat):
        encode_record(config)
    with pytest.raises(KafkaFormatError, match="unknown record type 900"):
        decode_record(i16(900) + s16("g"), None)


# -- round trips -------------------------------------------------------------------------

text = st.text(max_size=12)
opt_text = st.none() | text
i32s = st.integers(-(2**31), 2**31 - 1)
i64s = st.integers(-(2**63), 2**63 - 1)
uuids = st.builds(Uuid, i64s, i64s)
topic_partitions = st.builds(TopicPartitions, uuids, st.lists(i32s, max_size=4).map(tuple))
tps = st.lists(topic_partitions, max_size=3).map(tuple)
group_members = st.builds(
    GroupMetadataValueMember,
    member_id=text,
    group_instance_id=opt_text,
    client_id=text,
    client_host=text,
    rebalance_timeout=i32s,
    session_timeout=i32s,
    subscription=st.binary(max_size=8),
    assignment=st.binary(max_size=8),
)
classic_members = st.builds(
    ClassicMemberMetadata,
    i32s,
    st.lists(st.builds(ClassicProtocol, text, st.binary(max_size=8)), max_size=3).map(tuple),
)

RECORDS: dict[int, tuple[st.SearchStrategy[RecordKey], st.SearchStrategy[RecordValue]]] = {
    1: (
        st.builds(OffsetCommitKey, text, text, i32s),
        st.builds(OffsetCommitValue, i64s, i32s, text, i64s),
    ),
    2: (
        st.builds(GroupMetadataKey, text),
        st.builds(
            GroupMetadataValue,
            st.none() | st.text(min_size=1, max_size=8),
            i32s,
            opt_text,
            opt_text,
            i64s,
            st.lists(group_members, max_size=3).map(tuple),
        ),
    ),
    3: (st.builds(ConsumerGroupMetadataKey, text), st.builds(ConsumerGroupMetadataValue, i32s)),
    4: (
        st.builds(ConsumerGroupPartitionMetadataKey, text),
        st.builds(
            ConsumerGroupPartitionMetadataValue,
            st.lists(st.builds(PartitionMetadataTopic, uuids, text, i32s), max_size=3).map(tuple),
        ),
    ),
    5: (
        st.builds(ConsumerGroupMemberMetadataKey, text, text),
        st.builds(
            ConsumerGroupMemberMetadataValue,
            instance_id=opt_text,
            rack_id=opt_text,
            client_id=text,
            client_host=text,
            subscribed_topic_names=st.lists(text, max_size=3).map(tuple),
            subscribed_topic_regex=opt_text,
            rebalance_timeout_ms=i32s,
            server_assignor=opt_text,
            classic_member_metadata=st.none() | classic_members,
        ),
    ),
    6: (
        st.builds(ConsumerGroupTargetAssignmentMetadataKey, text),
        st.builds(ConsumerGroupTargetAssignmentMetadataValue, i32s),
    ),
    7: (
        st.builds(ConsumerGroupTargetAssignmentMemberKey, text, text),
        st.builds(ConsumerGroupTargetAssignmentMemberValue, tps),
    ),
    8: (
        st.builds(ConsumerGroupCurrentMemberAssignmentKey, text, text),
        st.builds(
            ConsumerGroupCurrentMemberAssignmentValue,
            i32s,
            i32s,
            st.integers(-128, 127),
            tps,
            tps,
        ),
    ),
    16: (
        st.builds(ConsumerGroupRegularExpressionKey, text, text),
        st.builds(
            ConsumerGroupRegularExpressionValue, st.lists(text, max_size=3).map(tuple), i64s, i64s
        ),
    ),
}


def test_every_kafka_record_type_has_a_round_trip() -> None:
    assert set(RECORDS) == set(KAFKA_RECORD_TYPES)


@pytest.mark.parametrize("type_id", sorted(RECORDS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_trip(type_id: int, data: st.DataObject) -> None:
    keys, values = RECORDS[type_id]
    key = data.draw(keys)
    value = data.draw(st.none() | values)
    record = CoordinatorRecord(key, value)
    assert in_kafka_format(record)
    raw_key, raw_value = encode_record(record)
    assert struct.unpack_from(">h", raw_key)[0] == type_id
    assert decode_record(raw_key, raw_value) == record


def test_regroup_only_fields_are_left_out() -> None:
    """Extensions Kafka's records lack are not written; the rest reads back."""
    member = GroupMetadataValueMember("m", None, "c", "h", 1, 2, b"s", b"a")
    extended = GroupMetadataValueMember(
        "m", None, "c", "h", 1, 2, b"s", b"a", (GroupMetadataValueProtocol("range", b"s", 0),)
    )
    key = GroupMetadataKey("g")
    plain = CoordinatorRecord(key, GroupMetadataValue("consumer", 1, "range", "m", 0, (member,)))
    ext = CoordinatorRecord(key, GroupMetadataValue("consumer", 1, "range", "m", 0, (extended,)))
    assert encode_record(ext) == encode_record(plain)
    value = ConsumerGroupMemberMetadataValue(
        None, None, "c", "h", (), None, 1, None, client_assignors=(ClientAssignor("x", 0, 1),)
    )
    k = ConsumerGroupMemberMetadataKey("g", "m")
    raw = encode_record(CoordinatorRecord(k, value))
    decoded = decode_record(*raw).value
    assert isinstance(decoded, ConsumerGroupMemberMetadataValue)
    assert decoded.client_assignors == ()


# -- fuzz --------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(key=st.binary(max_size=40), value=st.none() | st.binary(max_size=80))
def test_decoder_of_random_bytes_raises_only_format_errors(key: bytes, value: bytes | None) -> None:
    with contextlib.suppress(KafkaFormatError):
        decode_record(key, value)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_decoder_of_mutated_records_raises_only_format_errors(data: st.DataObject) -> None:
    type_id = data.draw(st.sampled_from(sorted(RECORDS)))
    keys, values = RECORDS[type_id]
    raw_key, raw_value = encode_record(CoordinatorRecord(data.draw(keys), data.draw(values)))
    assert raw_value is not None
    cut = data.draw(st.integers(0, len(raw_value)))
    flip = data.draw(st.integers(0, max(0, len(raw_value) - 1)))
    mutated = bytearray(raw_value)
    if mutated:
        mutated[flip % len(mutated)] ^= data.draw(st.integers(1, 255))
    for candidate in (bytes(mutated), raw_value[:cut]):
        with contextlib.suppress(KafkaFormatError):
            decode_record(raw_key, candidate)
