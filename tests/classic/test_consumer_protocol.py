"""The embedded consumer protocol: hand-written byte fixtures, Kafka's rules, bad input.

Every fixture below is written out field by field from Kafka's message schemas
(``ConsumerProtocolSubscription.json`` / ``ConsumerProtocolAssignment.json``,
valid versions 0-3, not flexible) and the protocol guide's primitive types:
int16/int32 big-endian, STRING = int16 length + UTF-8, NULLABLE_BYTES = int32
length (-1: null), ARRAY = int32 count. The librdkafka fixtures follow
``rd_kafka_consumer_protocol_member_metadata_new`` and
``rd_kafka_group_MemberState_consumer_write`` in librdkafka's sources.
"""

from __future__ import annotations

import re

import pytest

from regroup.assignors.classic.api import Assignment, Subscription
from regroup.classic.protocol import (
    HIGHEST_SUPPORTED_VERSION,
    LOWEST_SUPPORTED_VERSION,
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    decode_version,
    encode_assignment,
    encode_subscription,
)
from regroup.model import NO_GENERATION, TopicPartition
from regroup.model.wire import WireFormatError


def h(text: str) -> bytes:
    """Hex with whitespace and ``#`` comments, so fixtures can be laid out field by field."""
    return bytes.fromhex(re.sub(r"#[^\n]*", "", text))


TP = TopicPartition

# --------------------------------------------------------------------------- fixtures

# The body fields, one constant each, so the versions below read like the schema.
TOPICS = """
    00000002                  # topics: array of 2
      0006 6f7264657273       #   "orders"
      0008 7061796d656e7473   #   "payments"
"""
USER_DATA = """
    00000002 cafe             # user_data: 2 bytes
"""
OWNED = """
    00000002                  # owned_partitions: array of 2 topics
      0006 6f7264657273       #   topic "orders"
      00000002                #   partitions: array of 2
        00000000 00000002     #     0, 2
      0008 7061796d656e7473   #   topic "payments"
      00000001                #   partitions: array of 1
        00000001              #     1
"""
GENERATION = """
    00000005                  # generation_id: 5
"""
RACK = """
    0006 7261636b2d61         # rack_id: "rack-a"
"""

SUBSCRIPTION_FIXTURES: dict[int, bytes] = {
    0: h("0000" + TOPICS + USER_DATA),
    1: h("0001" + TOPICS + USER_DATA + OWNED),
    2: h("0002" + TOPICS + USER_DATA + OWNED + GENERATION),
    3: h("0003" + TOPICS + USER_DATA + OWNED + GENERATION + RACK),
}

#: What each fixture decodes to: fields a version does not carry take their defaults.
SUBSCRIPTION_VALUES: dict[int, Subscription] = {
    0: Subscription(topics=("orders", "payments"), user_data=b"\xca\xfe"),
    1: Subscription(
        topics=("orders", "payments"),
        user_data=b"\xca\xfe",
        owned_partitions=(TP("orders", 0), TP("orders", 2), TP("payments", 1)),
    ),
    2: Subscription(
        topics=("orders", "payments"),
        user_data=b"\xca\xfe",
        owned_partitions=(TP("orders", 0), TP("orders", 2), TP("payments", 1)),
        generation_id=5,
    ),
    3: Subscription(
        topics=("orders", "payments"),
        user_data=b"\xca\xfe",
        owned_partitions=(TP("orders", 0), TP("orders", 2), TP("payments", 1)),
        generation_id=5,
        rack_id="rack-a",
    ),
}

#: One member's full subscription, deliberately unsorted: every version is written from it.
FULL_SUBSCRIPTION = Subscription(
    topics=["payments", "orders"],
    user_data=b"\xca\xfe",
    owned_partitions=[TP("payments", 1), TP("orders", 2), TP("orders", 0)],
    generation_id=5,
    rack_id="rack-a",
    group_instance_id="instance-1",  # not part of the bytes
)

ASSIGNED = """
    00000002                  # assigned_partitions: array of 2 topics
      0006 6f7264657273       #   topic "orders"
      00000002                #   partitions: array of 2
        00000000 00000002     #     0, 2
      0008 7061796d656e7473   #   topic "payments"
      00000001                #   partitions: array of 1
        00000001              #     1
"""
ASSIGNMENT_VALUE = Assignment(
    partitions=(TP("orders", 0), TP("orders", 2), TP("payments", 1)), user_data=b"\xca\xfe"
)
ASSIGNMENT_FIXTURES: dict[int, bytes] = {
    version: h(f"000{version}" + ASSIGNED + USER_DATA) for version in range(4)
}


# ----------------------------------------------------------------------- the fixtures, both ways


@pytest.mark.parametrize("version", range(4))
def test_subscription_fixture_decodes(version: int) -> None:
    assert decode_subscription(SUBSCRIPTION_FIXTURES[version]) == SUBSCRIPTION_VALUES[version]


@pytest.mark.parametrize("version", range(4))
def test_subscription_is_written_as_the_fixture(version: int) -> None:
    # Newer fields are "ignorable" in the schema: an older version drops them silently.
    assert encode_subscription(FULL_SUBSCRIPTION, version) == SUBSCRIPTION_FIXTURES[version]


@pytest.mark.parametrize("version", range(4))
def test_assignment_fixture_decodes(version: int) -> None:
    assert decode_assignment(ASSIGNMENT_FIXTURES[version]) == ASSIGNMENT_VALUE


@pytest.mark.parametrize("version", range(4))
def test_assignment_is_written_as_the_fixture(version: int) -> None:
    assert encode_assignment(ASSIGNMENT_VALUE, version) == ASSIGNMENT_FIXTURES[version]


def test_default_version_is_the_highest() -> None:
    assert HIGHEST_SUPPORTED_VERSION == 3 and LOWEST_SUPPORTED_VERSION == 0
    assert encode_subscription(FULL_SUBSCRIPTION) == SUBSCRIPTION_FIXTURES[3]
    assert encode_assignment(ASSIGNMENT_VALUE) == ASSIGNMENT_FIXTURES[3]
    assert PROTOCOL_TYPE == "consumer"


def test_decode_version_reads_the_header_only() -> None:
    for version, data in SUBSCRIPTION_FIXTURES.items():
        assert decode_version(data) == version
    assert decode_version(h("7fff")) == 32767
    assert decode_version(h("ffff")) == -1


def test_empty_subscription_v3_with_nulls() -> None:
    # A member with no topics, null user data, nothing owned, no generation and no rack:
    # what Kafka's Java client sends from a fresh range-only consumer with no subscription.
    data = h(
        """
        0003        # version 3
        00000000    # topics: []
        ffffffff    # user_data: null
        00000000    # owned_partitions: []
        ffffffff    # generation_id: -1
        ffff        # rack_id: null
        """
    )
    assert decode_subscription(data) == Subscription(topics=())
    assert encode_subscription(Subscription(topics=[])) == data


def test_empty_assignment_v0() -> None:
    data = h("0000 00000000 ffffffff")  # version 0, no partitions, null user data
    assert decode_assignment(data) == Assignment(partitions=())
    assert encode_assignment(Assignment(partitions=[]), 0) == data


# --------------------------------------------------------------------------- other clients' bytes


def test_librdkafka_subscription_v3() -> None:
    # librdkafka (rd_kafka_consumer_protocol_member_metadata_new): always v3; null user data
    # is sent as *empty* bytes ("Kafka 0.9.0.0 can't parse NULL bytes"); no owned partitions
    # is an empty array; generation -1 from assignors without one; rack null without client.rack.
    data = h(
        """
        0003                        # version 3
        00000001 0006 6f7264657273  # topics: ["orders"]
        00000000                    # user_data: empty, not null
        00000000                    # owned_partitions: []
        ffffffff                    # generation_id: -1
        ffff                        # rack_id: null
        """
    )
    assert decode_subscription(data) == Subscription(topics=("orders",), user_data=b"")


def test_librdkafka_subscription_v3_with_owned_and_rack() -> None:
    # librdkafka's cooperative-sticky member: owned partitions written per topic,
    # the generation of its last assignment, and client.rack as rack_id.
    data = h(
        """
        0003
        00000001 0006 6f7264657273                  # topics: ["orders"]
        00000000                                    # user_data: empty
        00000001 0006 6f7264657273 00000001 00000003 # owned: orders [3]
        0000000c                                    # generation_id: 12
        0004 75736531                               # rack_id: "use1"
        """
    )
    assert decode_subscription(data) == Subscription(
        topics=("orders",),
        user_data=b"",
        owned_partitions=(TP("orders", 3),),
        generation_id=12,
        rack_id="use1",
    )


def test_librdkafka_assignment_v0_with_repeated_topic_runs() -> None:
    # librdkafka (rd_kafka_group_MemberState_consumer_write) writes version 0 and starts a
    # new topic entry whenever the topic changes from the previous partition, so a topic
    # may appear twice; the partitions are read back in the order written.
    data = h(
        """
        0000                                          # version 0
        00000003                                      # 3 topic entries
          0001 61 00000001 00000000                   #   "a" [0]
          0001 62 00000001 00000001                   #   "b" [1]
          0001 61 00000001 00000002                   #   "a" [2]
        ffffffff                                      # user_data: null
        """
    )
    assert decode_assignment(data) == Assignment(partitions=(TP("a", 0), TP("b", 1), TP("a", 2)))


def test_java_client_range_subscription_v3() -> None:
    # Kafka's Java client with the range assignor (no user data) as member of generation 3,
    # owning orders-1, in rack "r" (ConsumerCoordinator.metadata -> serializeSubscription).
    data = h(
        """
        0003
        00000001 0006 6f7264657273                    # topics: ["orders"]
        ffffffff                                      # user_data: null
        00000001 0006 6f7264657273 00000001 00000001  # owned: orders [1]
        00000003                                      # generation_id: 3
        0001 72                                       # rack_id: "r"
        """
    )
    value = Subscription(
        topics=("orders",), owned_partitions=(TP("orders", 1),), generation_id=3, rack_id="r"
    )
    assert decode_subscription(data) == value
    assert encode_subscription(value) == data


# --------------------------------------------------------------------------- forward compatibility


def test_newer_subscription_version_is_read_with_the_v3_layout() -> None:
    # A hypothetical v4 that appends an int32 field: Kafka parses it as v3 and ignores the rest.
    body = SUBSCRIPTION_FIXTURES[3][2:]
    for version in ("0004", "7fff"):
        data = h(version) + body + h("0000002a")
        assert decode_subscription(data) == SUBSCRIPTION_VALUES[3]
        assert decode_version(data) == int(version, 16)


def test_newer_assignment_version_is_read_with_the_v3_layout() -> None:
    data = h("0009") + ASSIGNMENT_FIXTURES[3][2:] + h("0001 ffff")
    assert decode_assignment(data) == ASSIGNMENT_VALUE


@pytest.mark.parametrize("version", range(4))
def test_trailing_bytes_are_ignored_at_every_version(version: int) -> None:
    # Java's generated readers stop after the last known field and never check the rest.
    padded = SUBSCRIPTION_FIXTURES[version] + b"\x00\x01\x02"
    assert decode_subscription(padded) == SUBSCRIPTION_VALUES[version]
    assert decode_assignment(ASSIGNMENT_FIXTURES[version] + b"\xff") == ASSIGNMENT_VALUE


def test_assignment_with_the_pre_release_error_code_is_read() -> None:
    # During KIP-429's development Kafka's trunk briefly wrote Assignment v1 with a trailing
    # int16 error_code (NEED_REJOIN = 1); it never shipped, and would be ignored as trailing.
    data = ASSIGNMENT_FIXTURES[1] + h("0001")
    assert decode_assignment(data) == ASSIGNMENT_VALUE


def test_a_newer_version_is_written_as_the_highest() -> None:
    # Kafka: checkSubscriptionVersion / checkAssignmentVersion clamp to the highest known.
    assert encode_subscription(FULL_SUBSCRIPTION, 7) == SUBSCRIPTION_FIXTURES[3]
    assert encode_assignment(ASSIGNMENT_VALUE, 7) == ASSIGNMENT_FIXTURES[3]


# --------------------------------------------------------------------------- Kafka's writing rules


def test_subscription_topics_and_owned_partitions_are_sorted_and_grouped() -> None:
    subscription = Subscription(
        topics=["c", "a", "b"],
        owned_partitions=[TP("b", 2), TP("a", 9), TP("b", 0), TP("a", 1)],
        generation_id=1,
    )
    decoded = decode_subscription(encode_subscription(subscription))
    assert decoded.topics == ("a", "b", "c")
    assert decoded.owned_partitions == (TP("a", 1), TP("a", 9), TP("b", 0), TP("b", 2))
    # Grouped: two topic entries, not four.
    data = encode_subscription(subscription, 1)
    owned_start = 2 + 4 + 3 * 3 + 4  # header, topics array, user_data (null)
    assert data[owned_start : owned_start + 4] == h("00000002")


def test_topics_sort_as_java_strings() -> None:
    # Java compares UTF-16 code units: U+10000 (D800 DC00) sorts before U+FFFF, where
    # Python's code-point order puts it after.
    low, high = "\uffff", "\U00010000"
    assert sorted([low, high]) == [low, high]
    decoded = decode_subscription(encode_subscription(Subscription(topics=[low, high])))
    assert decoded.topics == (high, low)


def test_assignment_groups_by_topic_in_first_seen_order() -> None:
    # Kafka: serializeAssignment finds-or-adds a topic entry per partition, in input order.
    assignment = Assignment(partitions=[TP("b", 3), TP("a", 0), TP("b", 1), TP("a", 2)])
    data = encode_assignment(assignment, 0)
    assert data == h(
        """
        0000
        00000002
          0001 62 00000002 00000003 00000001   # "b" [3, 1]
          0001 61 00000002 00000000 00000002   # "a" [0, 2]
        ffffffff
        """
    )
    assert decode_assignment(data).partitions == (TP("b", 3), TP("b", 1), TP("a", 0), TP("a", 2))


@pytest.mark.parametrize("generation", [-1, -2, -(2**31)])
def test_a_negative_generation_is_written_and_read_as_none(generation: int) -> None:
    written = encode_subscription(Subscription(topics=["t"], generation_id=generation), 2)
    assert written.endswith(h("ffffffff"))
    wire = h("0002 00000001 0001 74 ffffffff 00000000") + generation.to_bytes(4, "big", signed=True)
    assert decode_subscription(wire).generation_id == NO_GENERATION
    assert not decode_subscription(wire).has_generation


def test_an_empty_rack_reads_as_none() -> None:
    # Kafka: deserializeSubscription maps a null or empty rack id to Optional.empty().
    data = h("0003 00000000 ffffffff 00000000 ffffffff 0000")
    assert decode_subscription(data).rack_id is None


def test_group_instance_id_is_not_in_the_bytes() -> None:
    with_id = Subscription(topics=["t"], group_instance_id="i-1")
    assert encode_subscription(with_id) == encode_subscription(Subscription(topics=["t"]))
    assert decode_subscription(encode_subscription(with_id)).group_instance_id is None


def test_empty_and_null_user_data_are_distinct() -> None:
    assert decode_subscription(encode_subscription(Subscription(["t"], b""))).user_data == b""
    assert decode_subscription(encode_subscription(Subscription(["t"], None))).user_data is None
    assert decode_assignment(encode_assignment(Assignment([], b""))).user_data == b""


def test_decode_accepts_bytearray_and_memoryview() -> None:
    data = SUBSCRIPTION_FIXTURES[3]
    assert decode_subscription(bytearray(data)) == SUBSCRIPTION_VALUES[3]
    assert decode_subscription(memoryview(data)) == SUBSCRIPTION_VALUES[3]
    assert decode_assignment(memoryview(ASSIGNMENT_FIXTURES[0])) == ASSIGNMENT_VALUE


# --------------------------------------------------------------------------- bad input


def assert_one_error(excinfo: pytest.ExceptionInfo[ConsumerProtocolError]) -> None:
    error = excinfo.value
    assert type(error) is ConsumerProtocolError
    assert isinstance(error, WireFormatError) and isinstance(error, ValueError)
    message = str(error)
    assert message and "\n" not in message


BAD_SUBSCRIPTIONS = {
    "empty": b"",
    "half a header": h("00"),
    "version -1": h("ffff 00000000 ffffffff"),
    "version -32768": h("8000"),
    "null topics array": h("0000 ffffffff ffffffff"),
    "negative topics array": h("0000 fffffffe ffffffff"),
    "topics count beyond the input": h("0000 7fffffff 0001 61"),
    "null topic string": h("0000 00000001 ffff ffffffff"),
    "negative topic length": h("0000 00000001 fffe ffffffff"),
    "topic longer than the input": h("0000 00000001 0010 6162"),
    "topic not utf-8": h("0000 00000001 0002 c328 ffffffff"),
    "user data length -2": h("0000 00000000 fffffffe"),
    "user data longer than the input": h("0000 00000000 00000010 0102"),
    "missing user data": h("0000 00000000"),
    "v1 missing owned": h("0001 00000000 ffffffff"),
    "v1 null owned": h("0001 00000000 ffffffff ffffffff"),
    "v1 null owned topic": h("0001 00000000 ffffffff 00000001 ffff 00000000"),
    "v1 null partitions": h("0001 00000000 ffffffff 00000001 0001 61 ffffffff"),
    "v1 partitions beyond input": h("0001 00000000 ffffffff 00000001 0001 61 00000003 00000000"),
    "v2 missing generation": h("0002 00000000 ffffffff 00000000"),
    "v2 half a generation": h("0002 00000000 ffffffff 00000000 0000"),
    "v3 missing rack": h("0003 00000000 ffffffff 00000000 ffffffff"),
    "v3 rack length -2": h("0003 00000000 ffffffff 00000000 ffffffff fffe"),
    "v3 rack beyond input": h("0003 00000000 ffffffff 00000000 ffffffff 0005 6162"),
    "v3 rack not utf-8": h("0003 00000000 ffffffff 00000000 ffffffff 0001 ff"),
    "garbage": b"\x00\x03\xde\xad\xbe\xef\xde\xad\xbe\xef",
}


@pytest.mark.parametrize("name", sorted(BAD_SUBSCRIPTIONS))
def test_bad_subscriptions_raise_the_one_error(name: str) -> None:
    with pytest.raises(ConsumerProtocolError) as excinfo:
        decode_subscription(BAD_SUBSCRIPTIONS[name])
    assert_one_error(excinfo)


BAD_ASSIGNMENTS = {
    "empty": b"",
    "half a header": h("00"),
    "version -1": h("ffff 00000000 ffffffff"),
    "null partitions array": h("0000 ffffffff ffffffff"),
    "null topic": h("0000 00000001 ffff 00000000 ffffffff"),
    "null partition list": h("0000 00000001 0001 61 ffffffff ffffffff"),
    "negative partition count": h("0000 00000001 0001 61 80000000 ffffffff"),
    "missing user data": h("0003 00000000"),
    "user data length -5": h("0003 00000000 fffffffb"),
    "garbage": b"\x00\x00\x41\x41\x41\x41\x41\x41",
}


@pytest.mark.parametrize("name", sorted(BAD_ASSIGNMENTS))
def test_bad_assignments_raise_the_one_error(name: str) -> None:
    with pytest.raises(ConsumerProtocolError) as excinfo:
        decode_assignment(BAD_ASSIGNMENTS[name])
    assert_one_error(excinfo)


@pytest.mark.parametrize("version", range(4))
def test_every_truncation_of_a_fixture_is_refused(version: int) -> None:
    # At every version every field is required, so any proper prefix is truncated input.
    for data, decode in (
        (SUBSCRIPTION_FIXTURES[version], decode_subscription),
        (ASSIGNMENT_FIXTURES[version], decode_assignment),
    ):
        for end in range(len(data)):
            with pytest.raises(ConsumerProtocolError) as excinfo:
                decode(data[:end])
            assert_one_error(excinfo)


def test_error_messages_say_what_and_which_version() -> None:
    with pytest.raises(ConsumerProtocolError, match="unsupported subscription version -1"):
        decode_subscription(h("ffff"))
    with pytest.raises(ConsumerProtocolError, match="unsupported assignment version -2"):
        decode_assignment(h("fffe"))
    with pytest.raises(ConsumerProtocolError, match=r"malformed subscription v2: truncated"):
        decode_subscription(h("0002 00000000 ffffffff 00000000"))
    with pytest.raises(ConsumerProtocolError, match=r"malformed assignment v7"):
        decode_assignment(h("0007 00000000"))


@pytest.mark.parametrize(
    ("what", "subscription"),
    [
        ("partition above int32", Subscription(["t"], owned_partitions=[TP("t", 2**31)])),
        ("partition below int32", Subscription(["t"], owned_partitions=[TP("t", -(2**31) - 1)])),
        ("generation above int32", Subscription(["t"], generation_id=2**31)),
        ("topic too long", Subscription(["x" * 40_000])),
        ("owned topic too long", Subscription([], owned_partitions=[TP("é" * 20_000, 0)])),
        ("rack too long", Subscription([], rack_id="r" * 40_000)),
        ("lone surrogate", Subscription(["\ud800"])),
    ],
)
def test_unwritable_subscriptions_raise_the_one_error(
    what: str, subscription: Subscription
) -> None:
    with pytest.raises(ConsumerProtocolError) as excinfo:
        encode_subscription(subscription)
    assert_one_error(excinfo)


@pytest.mark.parametrize(
    ("assignment", "version"),
    [
        (Assignment([TP("t", 2**31)]), 3),
        (Assignment([TP("x" * 40_000, 0)]), 3),
        (Assignment([]), -1),
    ],
)
def test_unwritable_assignments_raise_the_one_error(assignment: Assignment, version: int) -> None:
    with pytest.raises(ConsumerProtocolError) as excinfo:
        encode_assignment(assignment, version)
    assert_one_error(excinfo)


def test_a_negative_version_cannot_be_written() -> None:
    with pytest.raises(ConsumerProtocolError, match="unsupported subscription version -1"):
        encode_subscription(Subscription([]), -1)
