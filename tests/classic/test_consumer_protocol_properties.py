"""The embedded consumer protocol: hypothesis round trips and fuzzing.

Round trips state Kafka's writing rules as properties (topics and owned
partitions sorted as Java sorts strings, assignment partitions grouped by
topic in first-seen order, fields newer than the version dropped, negative
generations and empty racks read as "none"); the fuzz properties state that
any input either decodes or raises the one ``ConsumerProtocolError`` with a
one-line message, never anything else.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regroup.assignors.classic.api import Assignment, Subscription
from regroup.classic.protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    decode_version,
    encode_assignment,
    encode_subscription,
)
from regroup.model import NO_GENERATION, TopicPartition

TP = TopicPartition

# Topic names as Kafka allows them, plus arbitrary text (no lone surrogates) to exercise
# the UTF-8 and Java-ordering paths.
kafka_topic = st.from_regex(r"[a-zA-Z0-9._-]{1,12}", fullmatch=True)
any_text = st.text(max_size=8)
topic_name = st.one_of(kafka_topic, any_text)
int32 = st.integers(-(2**31), 2**31 - 1)
partition = st.one_of(st.integers(0, 64), int32)
topic_partition = st.builds(TP, topic_name, partition)
user_data = st.one_of(st.none(), st.binary(max_size=24))

subscriptions = st.builds(
    Subscription,
    topics=st.lists(topic_name, max_size=6),
    user_data=user_data,
    owned_partitions=st.lists(topic_partition, max_size=10),
    generation_id=int32,
    rack_id=st.one_of(st.none(), any_text),
    group_instance_id=st.one_of(st.none(), any_text),
)
assignments = st.builds(
    Assignment, partitions=st.lists(topic_partition, max_size=12), user_data=user_data
)


def java_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def expected_subscription(subscription: Subscription, version: int) -> Subscription:
    """What Kafka's rules say a subscription reads back as after being written at ``version``."""
    version = min(version, 3)
    owned = sorted(subscription.owned_partitions, key=lambda tp: (java_key(tp.topic), tp.partition))
    return Subscription(
        topics=tuple(sorted(subscription.topics, key=java_key)),
        user_data=subscription.user_data,
        owned_partitions=tuple(owned) if version >= 1 else (),
        generation_id=max(subscription.generation_id, NO_GENERATION) if version >= 2 else -1,
        rack_id=(subscription.rack_id or None) if version >= 3 else None,
    )


def expected_assignment(assignment: Assignment) -> Assignment:
    grouped: dict[str, list[TopicPartition]] = {}
    for tp in assignment.partitions:
        grouped.setdefault(tp.topic, []).append(tp)
    return Assignment(
        partitions=tuple(tp for tps in grouped.values() for tp in tps),
        user_data=assignment.user_data,
    )


@settings(max_examples=300, deadline=None)
@given(subscriptions, st.integers(0, 5))
def test_subscription_round_trip(subscription: Subscription, version: int) -> None:
    data = encode_subscription(subscription, version)
    assert decode_version(data) == min(version, 3)
    decoded = decode_subscription(data)
    assert decoded == expected_subscription(subscription, version)
    # The written form is canonical: writing what was read gives the same bytes (except an
    # empty rack id, written as given but read as "no rack", as Kafka does).
    if subscription.rack_id != "" or version < 3:
        assert encode_subscription(decoded, version) == data


@settings(max_examples=300, deadline=None)
@given(assignments, st.integers(0, 5))
def test_assignment_round_trip(assignment: Assignment, version: int) -> None:
    data = encode_assignment(assignment, version)
    decoded = decode_assignment(data)
    assert decoded == expected_assignment(assignment)
    assert encode_assignment(decoded, version) == data


@settings(max_examples=300, deadline=None)
@given(subscriptions, st.integers(4, 2**15 - 1), st.binary(max_size=16))
def test_a_future_subscription_version_reads_as_v3(
    subscription: Subscription, future: int, extra: bytes
) -> None:
    # A future version is a v3 body with fields appended: read with the v3 layout.
    body = encode_subscription(subscription, 3)[2:]
    data = future.to_bytes(2, "big") + body + extra
    assert decode_subscription(data) == expected_subscription(subscription, 3)


def _either_decodes_or_raises_the_one_error(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        try:
            decode(data)
        except ConsumerProtocolError as error:
            assert type(error) is ConsumerProtocolError
            assert "\n" not in str(error)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=64))
def test_fuzz_arbitrary_bytes(data: bytes) -> None:
    _either_decodes_or_raises_the_one_error(data)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=48))
def test_fuzz_arbitrary_bodies_behind_each_version(body: bytes) -> None:
    for version in (b"\x00\x00", b"\x00\x01", b"\x00\x02", b"\x00\x03", b"\x00\x04"):
        _either_decodes_or_raises_the_one_error(version + body)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        subscriptions.map(encode_subscription),
        assignments.map(encode_assignment),
    ),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 10_000),
)
def test_fuzz_mutated_valid_bytes(data: bytes, flips: list[tuple[int, int]], cut: int) -> None:
    # Corrupting real encodings reaches far deeper into the readers than random bytes do.
    mutated = bytearray(data)
    for position, value in flips:
        mutated[position % len(mutated)] = value
    _either_decodes_or_raises_the_one_error(bytes(mutated))
    _either_decodes_or_raises_the_one_error(bytes(mutated[: cut % (len(mutated) + 1)]))
