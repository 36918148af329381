"""The embedded consumer protocol against a second implementation: kafka-python 3.0.12.

kafka-python generates its ``ConsumerProtocolSubscription`` /
``ConsumerProtocolAssignment`` codecs from the same JSON schemas as Kafka
(``kafka/protocol/schemas/resources``, versions 0-3), and its assignors build
the subscriptions a real kafka-python consumer sends in JoinGroup and the
assignments its leader sends in SyncGroup. So: what it writes must decode
here, what we write must decode there, and for inputs already in Kafka's
canonical order both encoders must produce the same bytes.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.cooperative_sticky import (
    CooperativeStickyAssignor as KpCooperativeSticky,
)
from kafka.coordinator.assignors.range import RangePartitionAssignor as KpRange
from kafka.coordinator.assignors.roundrobin import (
    RoundRobinPartitionAssignor as KpRoundRobin,
)
from kafka.coordinator.assignors.sticky.sticky_assignor import (
    StickyPartitionAssignor as KpSticky,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment as KpAssignment,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolSubscription as KpSubscription,
)
from kafka.structs import TopicPartition as KpTopicPartition

from regroup.assignors.classic.api import Assignment, Subscription
from regroup.classic.protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from regroup.model import NO_GENERATION, TopicPartition

TP = TopicPartition


# --------------------------------------------------------------------------- conversions


def java_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def grouped(partitions: list[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Group by topic in order of first appearance (what both encoders do with sorted input)."""
    groups: dict[str, list[int]] = {}
    for topic, partition in partitions:
        groups.setdefault(topic, []).append(partition)
    return list(groups.items())


def kp_subscription(subscription: Subscription, version: int, *, canonical: bool) -> Any:
    """The same subscription as a kafka-python message, optionally in Kafka's canonical order."""
    topics = list(subscription.topics)
    owned = list(subscription.owned_partitions)
    if canonical:
        topics.sort(key=java_key)
        owned.sort(key=lambda tp: (java_key(tp.topic), tp.partition))
    fields: dict[str, Any] = {"topics": topics, "user_data": subscription.user_data}
    if version >= 1:
        fields["owned_partitions"] = [
            KpSubscription.TopicPartition(topic=topic, partitions=partitions)
            for topic, partitions in grouped(owned)
        ]
    if version >= 2:
        fields["generation_id"] = max(subscription.generation_id, NO_GENERATION)
    if version >= 3:
        fields["rack_id"] = subscription.rack_id
    return KpSubscription(version=version, **fields)


def kp_assignment(assignment: Assignment, version: int) -> Any:
    return KpAssignment(
        version=version,
        assigned_partitions=[
            KpAssignment.TopicPartition(topic=topic, partitions=partitions)
            for topic, partitions in grouped(list(assignment.partitions))
        ],
        user_data=assignment.user_data,
    )


def flatten(entries: Any) -> tuple[TopicPartition, ...]:
    return tuple(TP(entry.topic, p) for entry in entries for p in entry.partitions)


# --------------------------------------------------------------------------- strategies

kafka_topic = st.from_regex(r"[a-zA-Z0-9._-]{1,12}", fullmatch=True)
topic_name = st.one_of(kafka_topic, st.text(max_size=8))
int32 = st.integers(-(2**31), 2**31 - 1)
topic_partition = st.builds(TP, topic_name, st.one_of(st.integers(0, 64), int32))
user_data = st.one_of(st.none(), st.binary(max_size=24))
# kafka-python reads an empty rack id back as "", Kafka (and we) as "no rack": avoid "".
rack = st.one_of(st.none(), st.text(min_size=1, max_size=8))

subscriptions = st.builds(
    Subscription,
    topics=st.lists(topic_name, max_size=6),
    user_data=user_data,
    owned_partitions=st.lists(topic_partition, max_size=10),
    generation_id=int32,
    rack_id=rack,
)
assignments = st.builds(
    Assignment, partitions=st.lists(topic_partition, max_size=12), user_data=user_data
)
versions = st.integers(0, 3)


# --------------------------------------------------------------------------- byte-for-byte


@settings(max_examples=300, deadline=None)
@given(subscriptions, versions)
def test_subscription_bytes_equal_kafka_python(subscription: Subscription, version: int) -> None:
    theirs = kp_subscription(subscription, version, canonical=True).encode()
    assert encode_subscription(subscription, version) == theirs


@settings(max_examples=300, deadline=None)
@given(assignments, versions)
def test_assignment_bytes_equal_kafka_python(assignment: Assignment, version: int) -> None:
    theirs = kp_assignment(assignment, version).encode()
    assert encode_assignment(assignment, version) == theirs


# ----------------------------------------------------------------------- their bytes, our decoder


@settings(max_examples=300, deadline=None)
@given(subscriptions, versions)
def test_kafka_python_subscriptions_decode(subscription: Subscription, version: int) -> None:
    # Not canonical: kafka-python writes topics and owned partitions in the order given,
    # and we read them back in the order written.
    data = kp_subscription(subscription, version, canonical=False).encode()
    decoded = decode_subscription(data)
    owned = [TP(t, p) for t, ps in grouped(list(subscription.owned_partitions)) for p in ps]
    assert decoded == Subscription(
        topics=tuple(subscription.topics),
        user_data=subscription.user_data,
        owned_partitions=tuple(owned) if version >= 1 else (),
        generation_id=max(subscription.generation_id, NO_GENERATION) if version >= 2 else -1,
        rack_id=subscription.rack_id if version >= 3 else None,
    )


@settings(max_examples=300, deadline=None)
@given(assignments, versions)
def test_kafka_python_assignments_decode(assignment: Assignment, version: int) -> None:
    data = kp_assignment(assignment, version).encode()
    decoded = decode_assignment(data)
    assert decoded.partitions == tuple(
        TP(topic, p) for topic, ps in grouped(list(assignment.partitions)) for p in ps
    )
    assert decoded.user_data == assignment.user_data


# ----------------------------------------------------------------------- our bytes, their decoder


@settings(max_examples=300, deadline=None)
@given(subscriptions, versions)
def test_our_subscriptions_decode_in_kafka_python(subscription: Subscription, version: int) -> None:
    theirs = KpSubscription.decode(encode_subscription(subscription, version))
    assert theirs.version == version
    assert list(theirs.topics) == sorted(subscription.topics, key=java_key)
    assert theirs.user_data == subscription.user_data
    if version >= 1:
        owned = sorted(subscription.owned_partitions, key=lambda tp: (java_key(tp[0]), tp[1]))
        assert flatten(theirs.owned_partitions) == tuple(owned)
    if version >= 2:
        assert theirs.generation_id == max(subscription.generation_id, NO_GENERATION)
    if version >= 3:
        assert theirs.rack_id == subscription.rack_id


@settings(max_examples=300, deadline=None)
@given(assignments, versions)
def test_our_assignments_decode_in_kafka_python(assignment: Assignment, version: int) -> None:
    theirs = KpAssignment.decode(encode_assignment(assignment, version))
    assert theirs.version == version
    assert [(tp.topic, tp.partition) for tp in theirs.partitions()] == [
        (topic, p) for topic, ps in grouped(list(assignment.partitions)) for p in ps
    ]
    assert theirs.user_data == assignment.user_data


def test_kafka_python_reads_a_future_version_we_write_as_its_highest() -> None:
    # Forward compatibility on their side too: a v3 body with extra bytes labelled v9.
    data = b"\x00\x09" + encode_subscription(Subscription(["t"], generation_id=4), 3)[2:] + b"xx"
    assert KpSubscription.decode(data).generation_id == 4
    assert decode_subscription(data).generation_id == 4


# --------------------------------------------------------------------------- real assignors


def test_range_and_roundrobin_member_metadata_decodes() -> None:
    # kafka-python's eager assignors send v0 with empty (not null) user data.
    for assignor in (KpRange, KpRoundRobin):
        data = assignor.metadata({"orders", "payments"}).encode()
        decoded = decode_subscription(data)
        assert sorted(decoded.topics) == ["orders", "payments"]
        assert decoded.user_data == b""
        assert decoded.owned_partitions == () and not decoded.has_generation


def test_sticky_member_metadata_keeps_its_user_data() -> None:
    # kafka-python's sticky assignor (v0) carries its previous assignment and generation in
    # StickyAssignorUserData v1; we pass the bytes through untouched.
    assignor = KpSticky()
    assignor.member_assignment = [KpTopicPartition("t", 1), KpTopicPartition("t", 0)]
    assignor.generation = 4
    data = assignor.metadata({"t"}).encode()
    decoded = decode_subscription(data)
    assert decoded.topics == ("t",)
    # kafka-python 3.0.12 prefixes its StickyAssignorUserData with an int16 version (0001);
    # Java's StickyAssignor writes the struct bare. Either way the bytes are opaque here.
    assert decoded.user_data == bytes.fromhex(
        "0001 00000001 0001 74 00000002 00000001 00000000 00000004"  # [t: [1, 0]], generation 4
    )
    # And kafka-python's leader reads our re-encoding of it identically.
    assert KpSubscription.decode(encode_subscription(decoded, 0)).user_data == decoded.user_data


def test_cooperative_sticky_member_metadata_carries_owned_partitions() -> None:
    # kafka-python's cooperative-sticky sends v1 with the owned partitions in the schema field.
    assignor = KpCooperativeSticky()
    assignor.member_assignment = [KpTopicPartition("u", 0), KpTopicPartition("t", 1)]
    data = assignor.metadata({"u", "t"}).encode()
    assert data[:2] == b"\x00\x01"
    decoded = decode_subscription(data)
    assert decoded.topics == ("t", "u")
    assert set(decoded.owned_partitions) == {TP("t", 1), TP("u", 0)}


class _Cluster:
    """The one method kafka-python's range and roundrobin assignors ask of the cluster."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self._partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._partitions.get(topic)
        return None if count is None else set(range(count))


@pytest.mark.parametrize("assignor", [KpRange, KpRoundRobin])
@pytest.mark.parametrize("version", range(4))
def test_a_kafka_python_leader_assigns_from_our_subscriptions(assignor: Any, version: int) -> None:
    # Our members' JoinGroup metadata, read by a kafka-python leader, and the leader's
    # SyncGroup assignments read back by us: the whole embedded round of one rebalance.
    # (Both members subscribe to both topics: kafka-python's roundrobin fails on members
    # with different subscriptions, a bug of its own.)
    ours = {
        "m1": Subscription(["payments", "orders"], generation_id=2, rack_id="a"),
        "m2": Subscription(
            ["orders", "payments"], owned_partitions=[TP("orders", 1)], generation_id=2
        ),
    }
    members = [
        SimpleNamespace(
            member_id=member_id,
            group_instance_id=None,
            metadata=KpSubscription.decode(encode_subscription(sub, version)),
        )
        for member_id, sub in ours.items()
    ]
    result = assignor.assign(_Cluster({"orders": 3, "payments": 2}), members)
    assigned = {m: decode_assignment(a.encode()) for m, a in result.items()}
    everything = [tp for a in assigned.values() for tp in a.partitions]
    assert sorted(everything) == [TP("orders", p) for p in range(3)] + [
        TP("payments", p) for p in range(2)
    ]
    assert all(assigned[m].partitions for m in ours)
    for member_id, assignment in assigned.items():
        # And our own encoding of what we read is what kafka-python wrote.
        assert encode_assignment(assignment, 0) == result[member_id].encode()
