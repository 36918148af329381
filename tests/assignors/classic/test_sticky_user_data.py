"""The sticky assignors' user data, byte for byte, and Kafka's memberData tests.

Fixed byte strings are derived by hand from Kafka's schema
(``StickyAssignor.STICKY_ASSIGNOR_USER_DATA_V1``: ARRAY(topic STRING,
partitions ARRAY(INT32)), generation INT32; big-endian; STRING = int16 length
+ UTF-8; ARRAY = int32 count). Topic order is Java ``HashMap`` order: for
"topic" (hashCode 0x0696cd2f, bucket 0x9) and "other" (0x06527f10, bucket
0x2) that is "other" first. kafka-python's ``StickyAssignorUserData`` is a
second implementation of the same schema (it prefixes a 2-byte version and
keeps insertion order, so it is compared without the prefix on one-topic or
same-order data).
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

from regroup.assignors.classic.api import Assignment, ConsumerGroupMetadata, Subscription
from regroup.assignors.classic.cooperative_sticky import CooperativeStickyAssignor
from regroup.assignors.classic.sticky import StickyAssignor
from regroup.assignors.classic.sticky_engine.user_data import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from regroup.model import TopicPartition

TP = TopicPartition

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

V1_TOPIC_OTHER = (
    b"\x00\x00\x00\x02"  # two topics
    b"\x00\x05other"
    b"\x00\x00\x00\x01"
    b"\x00\x00\x00\x01"  # other: [1]
    b"\x00\x05topic"
    b"\x00\x00\x00\x02"
    b"\x00\x00\x00\x00"
    b"\x00\x00\x00\x02"  # topic: [0, 2]
    b"\x00\x00\x00\x05"  # generation 5
)


def test_v1_bytes_follow_java_hash_map_topic_order() -> None:
    partitions = [TP("topic", 0), TP("topic", 2), TP("other", 1)]
    assert encode_sticky_user_data(partitions, 5) == V1_TOPIC_OTHER


def test_v0_bytes_have_no_generation() -> None:
    assert encode_sticky_user_data([TP("t", 3)], None) == (
        b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x03"
    )


def test_empty_assignment_bytes() -> None:
    assert encode_sticky_user_data([], -1) == b"\x00\x00\x00\x00\xff\xff\xff\xff"


def test_decode_v1_and_v0() -> None:
    partitions, generation = decode_sticky_user_data(V1_TOPIC_OTHER)
    assert list(partitions) == [TP("other", 1), TP("topic", 0), TP("topic", 2)]
    assert generation == 5
    partitions, generation = decode_sticky_user_data(V1_TOPIC_OTHER[:-4])
    assert list(partitions) == [TP("other", 1), TP("topic", 0), TP("topic", 2)]
    assert generation is None


@pytest.mark.parametrize(
    "data",
    [b"\x00", b"\xff\xff\xff\xff", b"\x00\x00\x00\x01\x00\x05ab", b"\x00\x00\x00\x01\xff\xff"],
)
def test_unparsable_user_data_means_no_previous_assignment(data: bytes) -> None:
    # Kafka: deserializeTopicPartitionAssignment falls back to (empty, generation -1)
    partitions, generation = decode_sticky_user_data(data)
    assert list(partitions) == []
    assert generation == -1


@pytest.mark.parametrize("data", [None, b""])
def test_absent_user_data_means_no_generation(data: bytes | None) -> None:
    partitions, generation = decode_sticky_user_data(data)
    assert list(partitions) == [] and generation is None


def test_trailing_bytes_are_ignored_like_schema_read() -> None:
    partitions, generation = decode_sticky_user_data(V1_TOPIC_OTHER + b"\x01\x02")
    assert generation == 5 and len(partitions) == 3


def test_kafka_python_reads_our_bytes() -> None:
    decoded = StickyAssignorUserData.decode(b"\x00\x01" + V1_TOPIC_OTHER)
    assert [(t.topic, t.partitions) for t in decoded.previous_assignment] == [
        ("other", [1]),
        ("topic", [0, 2]),
    ]
    assert decoded.generation == 5


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=2**31 - 1), max_size=20),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.text(min_size=1, max_size=10),
)
def test_one_topic_bytes_equal_kafka_python(
    numbers: list[int], generation: int, topic: str
) -> None:
    partitions = [TP(topic, n) for n in numbers]
    ours = encode_sticky_user_data(partitions, generation)
    if numbers:
        theirs = StickyAssignorUserData([(topic, numbers)], generation).encode()
        assert ours == theirs[2:]
    decoded, decoded_generation = decode_sticky_user_data(ours)
    assert list(decoded) == partitions and decoded_generation == generation


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=64))
def test_decoding_never_raises(data: bytes) -> None:
    decode_sticky_user_data(data)
    decode_cooperative_user_data(data)


def test_cooperative_user_data_is_one_int32() -> None:
    assert encode_cooperative_user_data(-1) == b"\xff\xff\xff\xff"
    assert encode_cooperative_user_data(10) == b"\x00\x00\x00\x0a"
    assert decode_cooperative_user_data(b"\x00\x00\x00\x0a") == 10
    assert decode_cooperative_user_data(b"\x00\x00\x00\x0a\x99") == 10
    assert decode_cooperative_user_data(b"\x00\x01") == -1
    assert decode_cooperative_user_data(None) is None


def test_sticky_user_data_is_null_until_first_assignment() -> None:
    assignor = StickyAssignor()
    assert assignor.subscription_user_data({"topic"}) is None
    assignor.on_assignment(
        Assignment([TP("topic", 0), TP("topic", 2), TP("other", 1)]),
        ConsumerGroupMetadata("group", 5, "member"),
    )
    assert assignor.subscription_user_data({"topic"}) == V1_TOPIC_OTHER


# --- Kafka's memberData tests -------------------------------------------------------


def test_member_data_all_subscription_versions() -> None:
    # Kafka: AbstractStickyAssignorTest.testMemberData (V0, V1, V2+ for each assignor)
    owned = [TP("topic1", 0), TP("topic2", 1)]
    sticky = StickyAssignor()
    user_data = encode_sticky_user_data(owned, 1)
    for subscription in (
        Subscription(["topic"], user_data),
        Subscription(["topic"], user_data, owned),
        Subscription(["topic"], user_data, owned, generation_id=1),
    ):
        data = sticky.member_data(subscription)
        assert list(data.partitions) == owned and data.generation == 1
    cooperative = CooperativeStickyAssignor()
    cooperative.on_assignment(Assignment(owned), ConsumerGroupMetadata("group", 1, "consumer1"))
    v1 = Subscription(["topic"], cooperative.subscription_user_data({"topic"}), owned)
    v2 = Subscription(
        ["topic"],
        CooperativeStickyAssignor().subscription_user_data({"topic"}),
        owned,
        generation_id=1,
    )
    for subscription in (v1, v2):
        data = cooperative.member_data(subscription)
        assert list(data.partitions) == owned and data.generation == 1


def test_sticky_member_data_honors_user_data() -> None:
    # Kafka: StickyAssignorTest.testMemberDataWillHonorUserData and
    # testMemberDataWithInconsistentData
    owned = [TP("topic1", 0), TP("topic2", 1)]
    subscription = Subscription(["topic"], encode_sticky_user_data(owned, 0), [], generation_id=1)
    data = StickyAssignor.member_data(subscription)
    assert list(data.partitions) == owned and data.generation == 0

    assignor = StickyAssignor()
    assignor.on_assignment(Assignment([TP("topic", 1)]), ConsumerGroupMetadata("group", 1, "c1"))
    subscription = Subscription(
        ["topic"], assignor.subscription_user_data({"topic"}), [TP("topic", 0)]
    )
    data = StickyAssignor.member_data(subscription)
    assert list(data.partitions) == [TP("topic", 1)] and data.generation == 1


def test_cooperative_member_data() -> None:
    # Kafka: CooperativeStickyAssignorTest.testEncodeAndDecodeGeneration, testDecodeGeneration,
    # testMemberDataWithInconsistentData,
    # testMemberDataWithEmptyPartitionsAnd{Equal,Higher}Generation
    assignor = CooperativeStickyAssignor()
    data = assignor.member_data(Subscription(["topic"], assignor.subscription_user_data({"t"})))
    assert data.generation == -1
    assignor.on_assignment(Assignment([]), ConsumerGroupMetadata("g", 10, "m"))
    data = assignor.member_data(Subscription(["topic"], assignor.subscription_user_data({"t"})))
    assert data.generation == 10
    assert CooperativeStickyAssignor.member_data(Subscription(["topic"])).generation is None

    assignor = CooperativeStickyAssignor()
    assignor.on_assignment(Assignment([TP("topic", 1)]), ConsumerGroupMetadata("g", 1, "c1"))
    subscription = Subscription(
        ["topic"], assignor.subscription_user_data({"topic"}), [TP("topic", 0)]
    )
    data = assignor.member_data(subscription)
    assert list(data.partitions) == [TP("topic", 0)] and data.generation == 1

    for user_generation in (1, 0):
        user_data = struct.pack(">i", user_generation)
        data = assignor.member_data(Subscription(["topic"], user_data, [], generation_id=1))
        assert list(data.partitions) == [] and data.generation == 1
