"""Tests of the classic ``roundrobin`` assignor against Apache Kafka's behaviour.

Every case of Kafka's ``RoundRobinAssignorTest`` (clients/src/test/java/org/
apache/kafka/clients/consumer/) is re-expressed here, then the two examples of
the ``RoundRobinAssignor`` javadoc, then property tests, among them a
differential test against a literal circular-iterator transcription of Kafka's
algorithm and against kafka-python's own ``RoundRobinPartitionAssignor``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from itertools import cycle
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.classic.api import (
    ClusterMetadata,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
)
from regroup.assignors.classic.member_order import sorted_members
from regroup.assignors.classic.round_robin import RoundRobinAssignor
from regroup.model import TopicPartition


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def assign(
    metadata: ClusterMetadata, subscriptions: Mapping[str, Subscription]
) -> dict[str, list[TopicPartition]]:
    result = RoundRobinAssignor().assign(metadata, GroupSubscription(dict(subscriptions)))
    return {member: list(a.partitions) for member, a in result.assignments.items()}


def by_instance(
    result: Mapping[str, list[TopicPartition]], subscriptions: Mapping[str, Subscription]
) -> dict[str, list[TopicPartition]]:
    return {
        s.group_instance_id: result[m]
        for m, s in subscriptions.items()
        if s.group_instance_id is not None
    }


TWO_TOPICS = ["topic1", "topic2"]


# --- RoundRobinAssignorTest ----------------------------------------------------------------------


def test_one_consumer_no_topic() -> None:
    # Kafka: RoundRobinAssignorTest.testOneConsumerNoTopic
    assert assign(ClusterMetadata({}), {"consumer": Subscription([])}) == {"consumer": []}


def test_one_consumer_nonexistent_topic() -> None:
    # Kafka: RoundRobinAssignorTest.testOneConsumerNonexistentTopic
    assert assign(ClusterMetadata({}), {"consumer": Subscription(["topic"])}) == {"consumer": []}


def test_one_consumer_one_topic() -> None:
    # Kafka: RoundRobinAssignorTest.testOneConsumerOneTopic
    result = assign(ClusterMetadata({"topic": 3}), {"consumer": Subscription(["topic"])})
    assert result == {"consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}


def test_only_assigns_partitions_from_subscribed_topics() -> None:
    # Kafka: RoundRobinAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics
    result = assign(
        ClusterMetadata({"topic": 3, "other": 3}), {"consumer": Subscription(["topic"])}
    )
    assert result == {"consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}


def test_one_consumer_multiple_topics() -> None:
    # Kafka: RoundRobinAssignorTest.testOneConsumerMultipleTopics
    result = assign(
        ClusterMetadata({"topic1": 1, "topic2": 2}), {"consumer": Subscription(TWO_TOPICS)}
    )
    assert result == {"consumer": [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)]}


def test_two_consumers_one_topic_one_partition() -> None:
    # Kafka: RoundRobinAssignorTest.testTwoConsumersOneTopicOnePartition
    subs = {"consumer1": Subscription(["topic"]), "consumer2": Subscription(["topic"])}
    assert assign(ClusterMetadata({"topic": 1}), subs) == {
        "consumer1": [tp("topic", 0)],
        "consumer2": [],
    }


def test_two_consumers_one_topic_two_partitions() -> None:
    # Kafka: RoundRobinAssignorTest.testTwoConsumersOneTopicTwoPartitions
    subs = {"consumer1": Subscription(["topic"]), "consumer2": Subscription(["topic"])}
    assert assign(ClusterMetadata({"topic": 2}), subs) == {
        "consumer1": [tp("topic", 0)],
        "consumer2": [tp("topic", 1)],
    }


def test_multiple_consumers_mixed_topics() -> None:
    # Kafka: RoundRobinAssignorTest.testMultipleConsumersMixedTopics
    subs = {
        "consumer1": Subscription(["topic1"]),
        "consumer2": Subscription(TWO_TOPICS),
        "consumer3": Subscription(["topic1"]),
    }
    assert assign(ClusterMetadata({"topic1": 3, "topic2": 2}), subs) == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer3": [tp("topic1", 2)],
    }


def test_two_dynamic_consumers_two_topics_six_partitions() -> None:
    # Kafka: RoundRobinAssignorTest.testTwoDynamicConsumersTwoTopicsSixPartitions
    subs = {"consumer1": Subscription(TWO_TOPICS), "consumer2": Subscription(TWO_TOPICS)}
    assert assign(ClusterMetadata({"topic1": 3, "topic2": 3}), subs) == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_two_static_consumers_two_topics_six_partitions() -> None:
    # Kafka: RoundRobinAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions
    # "consumer-a" sorts first by member id, but instance ids decide.
    subs = {
        "consumer-b": Subscription(TWO_TOPICS, group_instance_id="instance1"),
        "consumer-a": Subscription(TWO_TOPICS, group_instance_id="instance2"),
    }
    assert assign(ClusterMetadata({"topic1": 3, "topic2": 3}), subs) == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_one_static_consumer_and_one_dynamic_consumer_two_topics_six_partitions() -> None:
    # Kafka: RoundRobinAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions
    subs = {
        "consumer-b": Subscription(TWO_TOPICS, group_instance_id="instance1"),
        "consumer-a": Subscription(TWO_TOPICS),
    }
    assert assign(ClusterMetadata({"topic1": 3, "topic2": 3}), subs) == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_static_member_round_robin_assignment_persistent() -> None:
    # Kafka: RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistent
    metadata = ClusterMetadata({"topic1": 3, "topic2": 3})
    subs = {
        "consumer1": Subscription(TWO_TOPICS, group_instance_id="instance1"),
        "consumer2": Subscription(TWO_TOPICS, group_instance_id="instance2"),
        "consumer3": Subscription(TWO_TOPICS, group_instance_id="instance3"),
        "consumer4": Subscription(TWO_TOPICS),  # dynamic
    }
    expected = {
        "consumer1": [tp("topic1", 0), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 2)],
        "consumer3": [tp("topic1", 2)],
        "consumer4": [tp("topic2", 0)],
    }
    assert assign(metadata, subs) == expected

    # The dynamic member is replaced by another one.
    del subs["consumer4"]
    subs["consumer5"] = Subscription(TWO_TOPICS)
    expected["consumer5"] = expected.pop("consumer4")
    assert assign(metadata, subs) == expected


def test_static_member_round_robin_assignment_persistent_after_member_id_changes() -> None:
    # Kafka: RoundRobinAssignorTest
    #   .testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges
    metadata = ClusterMetadata({"topic1": 5, "topic2": 5})
    subs = {
        "consumer1": Subscription(TWO_TOPICS, group_instance_id="instance1"),
        "consumer2": Subscription(TWO_TOPICS, group_instance_id="instance2"),
        "consumer3": Subscription(TWO_TOPICS, group_instance_id="instance3"),
    }
    expected = {
        "instance1": [tp("topic1", 0), tp("topic1", 3), tp("topic2", 1), tp("topic2", 4)],
        "instance2": [tp("topic1", 1), tp("topic1", 4), tp("topic2", 2)],
        "instance3": [tp("topic1", 2), tp("topic2", 0), tp("topic2", 3)],
    }
    assert by_instance(assign(metadata, subs), subs) == expected

    subs["consumer4"] = subs.pop("consumer3")
    subs["consumer5"] = subs.pop("consumer2")
    assert by_instance(assign(metadata, subs), subs) == expected


# --- The RoundRobinAssignor javadoc --------------------------------------------------------------


def test_javadoc_example_identical_subscriptions() -> None:
    metadata = ClusterMetadata({"t0": 3, "t1": 3})
    subs = {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    assert assign(metadata, subs) == {
        "C0": [tp("t0", 0), tp("t0", 2), tp("t1", 1)],
        "C1": [tp("t0", 1), tp("t1", 0), tp("t1", 2)],
    }


def test_javadoc_example_different_subscriptions() -> None:
    metadata = ClusterMetadata({"t0": 1, "t1": 2, "t2": 3})
    subs = {
        "C0": Subscription(["t0"]),
        "C1": Subscription(["t0", "t1"]),
        "C2": Subscription(["t0", "t1", "t2"]),
    }
    assert assign(metadata, subs) == {
        "C0": [tp("t0", 0)],
        "C1": [tp("t1", 0)],
        "C2": [tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)],
    }


# --- Further fixed cases -------------------------------------------------------------------------


def test_interface() -> None:
    assignor = RoundRobinAssignor()
    assert assignor.name == "roundrobin"
    assert assignor.supported_protocols() == (RebalanceProtocol.EAGER,)
    assert assignor.version() == 0
    assert assignor.subscription_user_data({"t"}) is None


def test_iterator_is_not_reset_between_topics() -> None:
    # 3 members, topics of 2 partitions: topic b starts where topic a stopped.
    metadata = ClusterMetadata({"a": 2, "b": 2})
    every = ["a", "b"]
    subs = {"m1": Subscription(every), "m2": Subscription(every), "m3": Subscription(every)}
    assert assign(metadata, subs) == {
        "m1": [tp("a", 0), tp("b", 1)],
        "m2": [tp("a", 1)],
        "m3": [tp("b", 0)],
    }


def test_topics_are_taken_in_name_order_not_subscription_order() -> None:
    metadata = ClusterMetadata({"z": 1, "a": 1})
    subs = {"m1": Subscription(["z", "a"]), "m2": Subscription(["z", "a"])}
    assert assign(metadata, subs) == {"m1": [tp("a", 0)], "m2": [tp("z", 0)]}


def test_racks_are_ignored() -> None:
    # RoundRobinAssignor is not rack-aware (KIP-881 covered range and the sticky assignors).
    racks = [frozenset({"a"}), frozenset({"b"}), frozenset({"a"}), frozenset({"b"})]
    with_racks = ClusterMetadata({"t": 4}, {"t": racks})
    subs = {"m1": Subscription(["t"], rack_id="b"), "m2": Subscription(["t"], rack_id="a")}
    assert assign(with_racks, subs) == {
        "m1": [tp("t", 0), tp("t", 2)],
        "m2": [tp("t", 1), tp("t", 3)],
    }


def test_zero_partition_topics_and_empty_group() -> None:
    metadata = ClusterMetadata({"empty": 0, "t": 1})
    assert assign(metadata, {"m": Subscription(["empty", "t"])}) == {"m": [tp("t", 0)]}
    assert RoundRobinAssignor().assign(metadata, GroupSubscription({})).assignments == {}


# --- A literal transcription of Kafka's RoundRobinAssignor, for differential tests ---------------


def kafka_round_robin_reference(
    metadata: ClusterMetadata, subscriptions: Mapping[str, Subscription]
) -> dict[str, list[TopicPartition]]:
    """``RoundRobinAssignor.assign`` with a literal circular iterator (peek/next)."""
    result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
    if not subscriptions:
        return result
    members = cycle(sorted_members(subscriptions))
    current = next(members)  # the CircularIterator's peeked value
    for topic in sorted({t for s in subscriptions.values() for t in s.topics}):
        for partition in range(metadata.partition_count(topic)):
            while topic not in subscriptions[current].topics:
                current = next(members)
            result[current].append(tp(topic, partition))
            current = next(members)
    return result


TOPICS = ("t0", "t1", "t2", "t3", "t4", "t5")


@st.composite
def groups(
    draw: st.DrawFn, identical: bool = False
) -> tuple[ClusterMetadata, dict[str, Subscription]]:
    counts = {t: draw(st.integers(0, 9)) for t in TOPICS if draw(st.booleans()) or t == "t0"}
    member_count = draw(st.integers(1, 7))
    ids = draw(
        st.lists(
            st.text("abcxyz-", min_size=1, max_size=4),
            min_size=member_count,
            max_size=member_count,
            unique=True,
        )
    )
    instances = iter(draw(st.permutations([f"i{k}" for k in range(member_count)])))
    shared = draw(st.lists(st.sampled_from(TOPICS), max_size=7)) if identical else None
    subscriptions = {}
    for member_id in ids:
        topics = (
            shared if shared is not None else draw(st.lists(st.sampled_from(TOPICS), max_size=7))
        )
        instance = next(instances) if draw(st.booleans()) else None
        rack = draw(st.sampled_from([None, "a", "b"]))
        subscriptions[member_id] = Subscription(topics, rack_id=rack, group_instance_id=instance)
    return ClusterMetadata(counts), subscriptions


@settings(max_examples=300, deadline=None)
@given(st.one_of(groups(), groups(identical=True)))
def test_matches_kafka_transcription(
    group: tuple[ClusterMetadata, dict[str, Subscription]],
) -> None:
    metadata, subscriptions = group
    assert assign(metadata, subscriptions) == kafka_round_robin_reference(metadata, subscriptions)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python's import
@settings(max_examples=150, deadline=None)
@given(groups(identical=True))
def test_matches_kafka_python_for_identical_dynamic_members(
    group: tuple[ClusterMetadata, dict[str, Subscription]],
) -> None:
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    metadata, subscriptions = group
    # kafka-python orders mixed static/dynamic members differently, and its loop that skips
    # unsubscribed members breaks (3.0.12 rebinds the member id to a tuple): compare dynamic
    # members with identical subscriptions only.
    dynamic = {m: Subscription(sorted(set(s.topics))) for m, s in subscriptions.items()}
    counts = metadata.partitions_per_topic
    cluster = SimpleNamespace(
        partitions_for_topic=lambda t: set(range(counts[t])) if t in counts else None
    )
    members = [
        SimpleNamespace(
            member_id=m, group_instance_id=None, metadata=SimpleNamespace(topics=s.topics)
        )
        for m, s in dynamic.items()
    ]
    theirs = RoundRobinPartitionAssignor.assign(cluster, members)
    expected = {
        m: sorted(tp(t, p) for t, ps in a.assigned_partitions for p in ps)
        for m, a in theirs.items()
    }
    assert assign(metadata, dynamic) == expected


@settings(max_examples=200, deadline=None)
@given(groups())
def test_valid_and_complete(group: tuple[ClusterMetadata, dict[str, Subscription]]) -> None:
    metadata, subscriptions = group
    result = assign(metadata, subscriptions)
    assert set(result) == set(subscriptions)
    everything = [p for parts in result.values() for p in parts]
    assert len(everything) == len(set(everything))
    for member, parts in result.items():
        assert parts == sorted(parts)
        for p in parts:
            assert p.topic in subscriptions[member].topics
            assert 0 <= p.partition < metadata.partition_count(p.topic)
    subscribed = {t for s in subscriptions.values() for t in s.topics}
    assert set(everything) == {
        tp(t, p) for t in subscribed for p in range(metadata.partition_count(t))
    }


@settings(max_examples=200, deadline=None)
@given(groups(identical=True))
def test_balanced_with_identical_subscriptions(
    group: tuple[ClusterMetadata, dict[str, Subscription]],
) -> None:
    metadata, subscriptions = group
    sizes = [len(parts) for parts in assign(metadata, subscriptions).values()]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=100, deadline=None)
@given(groups())
def test_deterministic_and_independent_of_member_order_in_the_input(
    group: tuple[ClusterMetadata, dict[str, Subscription]],
) -> None:
    metadata, subscriptions = group
    first = assign(metadata, subscriptions)
    assert assign(metadata, subscriptions) == first
    assert assign(metadata, dict(reversed(list(subscriptions.items())))) == first


@settings(max_examples=150, deadline=None)
@given(groups())
def test_static_members_keep_their_partitions_when_member_ids_change(
    group: tuple[ClusterMetadata, dict[str, Subscription]],
) -> None:
    metadata, subscriptions = group
    before = by_instance(assign(metadata, subscriptions), subscriptions)
    renamed = {
        (f"restarted-{s.group_instance_id}" if s.group_instance_id is not None else m): s
        for m, s in subscriptions.items()
    }
    assert by_instance(assign(metadata, renamed), renamed) == before


@pytest.mark.parametrize("seed", range(4))
def test_matches_kafka_transcription_on_larger_groups(seed: int) -> None:
    # Larger than hypothesis draws: 60 members, 20 topics, a few shared subscriptions.
    rnd = random.Random(seed)
    counts = {f"topic-{k:02d}": rnd.choice([0, 1, 7, 20, 64]) for k in range(20)}
    patterns = [sorted(rnd.sample(sorted(counts), rnd.randint(1, 20))) for _ in range(4)]
    subscriptions = {
        f"member-{rnd.randrange(10**6):06d}-{k}": Subscription(
            rnd.choice(patterns),
            group_instance_id=f"instance-{k}" if rnd.random() < 0.3 else None,
        )
        for k in range(60)
    }
    metadata = ClusterMetadata(counts)
    assert assign(metadata, subscriptions) == kafka_round_robin_reference(metadata, subscriptions)
