"""Tests of the classic ``range`` assignor against Apache Kafka's behaviour.

Every case of Kafka's ``RangeAssignorTest`` (clients/src/test/java/org/apache/
kafka/clients/consumer/) is re-expressed here, including its rack-aware and
static-member cases, with the rack layouts its helpers in
``AbstractPartitionAssignorTest`` build; then the examples of the
``RangeAssignor`` javadoc; then property tests, among them a differential test
against a plain, scan-everything transcription of Kafka's algorithm and
against kafka-python's own ``RangePartitionAssignor``.
"""

from __future__ import annotations

import enum
import gc
import random
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.assignors.classic._range_racks import _needs_rack_awareness
from regroup.assignors.classic.api import (
    ClusterMetadata,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
)
from regroup.assignors.classic.member_order import sorted_members
from regroup.assignors.classic.range_assignor import RangeAssignor
from regroup.model import TopicPartition
from regroup.model.metadata import replica_racks as model_replica_racks
from tests.assignors.classic.classic_assign_json import assign_via_json

ALL_RACKS = ("a", "b", "c", "d", "e", "f")
NO_RACKS: frozenset[str] = frozenset()


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def assign(
    assignor: RangeAssignor, metadata: ClusterMetadata, subscriptions: Mapping[str, Subscription]
) -> dict[str, list[TopicPartition]]:
    result = assignor.assign(metadata, GroupSubscription(dict(subscriptions)))
    return {member: list(a.partitions) for member, a in result.assignments.items()}


# --- Kafka's test fixtures (AbstractPartitionAssignorTest), re-expressed -------------------------


def broker_racks_per_partition(
    partitions: int,
    replication_factor: int,
    broker_racks: Sequence[str | None],
    next_node: int = 0,
) -> list[list[str | None]]:
    """The racks of each partition's replica brokers, ``None`` for a broker without a rack:
    replica j of partition i sits on broker (i + j + next_node) mod #brokers, as in
    Kafka's ``partitionInfos`` helper."""
    brokers = len(broker_racks)
    return [
        [broker_racks[(i + j + next_node) % brokers] for j in range(replication_factor)]
        for i in range(partitions)
    ]


def replica_racks(
    partitions: int,
    replication_factor: int,
    broker_racks: Sequence[str | None],
    next_node: int = 0,
) -> list[frozenset[str]]:
    """What the assignor sees: brokers without a rack contribute nothing (``null`` racks)."""
    return list(
        model_replica_racks(
            broker_racks_per_partition(partitions, replication_factor, broker_racks, next_node)
        )
    )


def broker_racks_for(num_broker_racks: int, replication_factor: int) -> list[str | None]:
    """Kafka's ``partitionInfos(topic, n, rf, numBrokerRacks, next)`` broker layout."""
    if num_broker_racks <= 0:
        return [None] * replication_factor
    return [ALL_RACKS[i % num_broker_racks] for i in range(num_broker_racks * replication_factor)]


def racks(count: int) -> list[str | None]:
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(count)]


def null_racks(count: int) -> list[str | None]:
    return [None] * count


def verify_rack_assignment(
    assignor: RangeAssignor,
    partitions_per_topic: dict[str, int],
    replication_factor: int,
    broker_racks: Sequence[str | None],
    consumer_racks: Sequence[str | None],
    consumer_topics: Sequence[Sequence[str]],
    expected: Sequence[str],
    partitions_with_rack_mismatch: int,
) -> None:
    """Kafka's ``AbstractPartitionAssignorTest.verifyRackAssignment``: members
    consumer0..N-1; replica placement continues from topic to topic in the
    insertion order of ``partitions_per_topic``."""
    topic_racks: dict[str, list[frozenset[str]]] = {}
    raw_racks: dict[str, list[list[str | None]]] = {}
    next_node = 0
    for topic, count in partitions_per_topic.items():
        raw_racks[topic] = broker_racks_per_partition(
            count, replication_factor, broker_racks, next_node
        )
        topic_racks[topic] = list(model_replica_racks(raw_racks[topic]))
        next_node += count
    metadata = ClusterMetadata(dict(partitions_per_topic), topic_racks)
    subscriptions = {
        f"consumer{i}": Subscription(list(topics), rack_id=consumer_racks[i])
        for i, topics in enumerate(consumer_topics)
    }
    result = assign(assignor, metadata, subscriptions)
    actual = {member: ", ".join(sorted(str(p) for p in parts)) for member, parts in result.items()}
    assert actual == {f"consumer{i}": text for i, text in enumerate(expected)}
    if not assignor.prefer_rack_aware_logic:
        # The same input through ``regroup assign``, null broker racks and all.
        via_json = assign_via_json("range", partitions_per_topic, raw_racks, subscriptions)
        assert {m: sorted(p) for m, p in result.items()} == via_json
    if partitions_with_rack_mismatch >= 0:
        mismatched = [
            p
            for i, rack in enumerate(consumer_racks)
            if rack is not None
            for p in result[f"consumer{i}"]
            if rack not in topic_racks[p.topic][p.partition]
        ]
        assert len(mismatched) == partitions_with_rack_mismatch, mismatched


class RackConfig(enum.Enum):
    NO_BROKER_RACK = 1
    NO_CONSUMER_RACK = 2
    BROKER_AND_CONSUMER_RACK = 3


class RangeFixture:
    """The per-test state of Kafka's ``RangeAssignorTest`` (``initializeRacks`` etc.)."""

    def __init__(self, rack_config: RackConfig, max_consumers: int = 3) -> None:
        self.replication_factor = max_consumers
        self.num_broker_racks = max_consumers if rack_config != RackConfig.NO_BROKER_RACK else 0
        self.has_consumer_rack = rack_config != RackConfig.NO_CONSUMER_RACK
        # Kafka's initializeRacks always turns preferRackAwareLogic on.
        self.assignor = RangeAssignor(prefer_rack_aware_logic=True)

    def metadata(self, **counts: int) -> ClusterMetadata:
        brokers = broker_racks_for(self.num_broker_racks, self.replication_factor)
        return ClusterMetadata(
            dict(counts),
            {t: replica_racks(n, self.replication_factor, brokers) for t, n in counts.items()},
        )

    def subscription(
        self, topics: Sequence[str], index: int, instance: str | None = None
    ) -> Subscription:
        num_racks = self.num_broker_racks if self.num_broker_racks > 0 else len(ALL_RACKS)
        rack = ALL_RACKS[index % num_racks] if self.has_consumer_rack else None
        return Subscription(list(topics), rack_id=rack, group_instance_id=instance)

    def assign(
        self, metadata: ClusterMetadata, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        return assign(self.assignor, metadata, subscriptions)


ALL_CONFIGS = list(RackConfig)


def by_instance(
    result: Mapping[str, list[TopicPartition]], subscriptions: Mapping[str, Subscription]
) -> dict[str, list[TopicPartition]]:
    return {
        s.group_instance_id: result[m]
        for m, s in subscriptions.items()
        if s.group_instance_id is not None
    }


# --- RangeAssignorTest ---------------------------------------------------------------------------


@pytest.mark.parametrize("has_consumer_rack", [True, False])
def test_one_consumer_no_topic(has_consumer_rack: bool) -> None:
    # Kafka: RangeAssignorTest.testOneConsumerNoTopic
    f = RangeFixture(
        RackConfig.BROKER_AND_CONSUMER_RACK if has_consumer_rack else RackConfig.NO_CONSUMER_RACK
    )
    result = f.assign(ClusterMetadata({}), {"consumer1": f.subscription([], 0)})
    assert result == {"consumer1": []}


@pytest.mark.parametrize("has_consumer_rack", [True, False])
def test_one_consumer_nonexistent_topic(has_consumer_rack: bool) -> None:
    # Kafka: RangeAssignorTest.testOneConsumerNonexistentTopic
    f = RangeFixture(
        RackConfig.BROKER_AND_CONSUMER_RACK if has_consumer_rack else RackConfig.NO_CONSUMER_RACK
    )
    result = f.assign(ClusterMetadata({}), {"consumer1": f.subscription(["topic1"], 0)})
    assert result == {"consumer1": []}


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_one_consumer_one_topic(rack_config: RackConfig) -> None:
    # Kafka: RangeAssignorTest.testOneConsumerOneTopic
    f = RangeFixture(rack_config)
    result = f.assign(f.metadata(topic1=3), {"consumer1": f.subscription(["topic1"], 0)})
    assert result == {"consumer1": [tp("topic1", 0), tp("topic1", 1), tp("topic1", 2)]}


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_only_assigns_partitions_from_subscribed_topics(rack_config: RackConfig) -> None:
    # Kafka: RangeAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics
    f = RangeFixture(rack_config)
    result = f.assign(f.metadata(topic1=3, other=3), {"consumer1": f.subscription(["topic1"], 0)})
    assert result == {"consumer1": [tp("topic1", 0), tp("topic1", 1), tp("topic1", 2)]}


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_one_consumer_multiple_topics(rack_config: RackConfig) -> None:
    # Kafka: RangeAssignorTest.testOneConsumerMultipleTopics
    f = RangeFixture(rack_config)
    result = f.assign(
        f.metadata(topic1=1, topic2=2), {"consumer1": f.subscription(["topic1", "topic2"], 0)}
    )
    assert result == {"consumer1": [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)]}


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_two_consumers_one_topic_one_partition(rack_config: RackConfig) -> None:
    # Kafka: RangeAssignorTest.testTwoConsumersOneTopicOnePartition
    f = RangeFixture(rack_config)
    subs = {
        "consumer1": f.subscription(["topic1"], 0),
        "consumer2": f.subscription(["topic1"], 1),
    }
    assert f.assign(f.metadata(topic1=1), subs) == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [],
    }


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_two_consumers_one_topic_two_partitions(rack_config: RackConfig) -> None:
    # Kafka: RangeAssignorTest.testTwoConsumersOneTopicTwoPartitions
    f = RangeFixture(rack_config)
    subs = {
        "consumer1": f.subscription(["topic1"], 0),
        "consumer2": f.subscription(["topic1"], 1),
    }
    assert f.assign(f.metadata(topic1=2), subs) == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1)],
    }


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_multiple_consumers_mixed_topics(rack_config: RackConfig) -> None:
    # Kafka: RangeAssignorTest.testMultipleConsumersMixedTopics
    f = RangeFixture(rack_config)
    subs = {
        "consumer1": f.subscription(["topic1"], 0),
        "consumer2": f.subscription(["topic1", "topic2"], 1),
        "consumer3": f.subscription(["topic1"], 2),
    }
    assert f.assign(f.metadata(topic1=3, topic2=2), subs) == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer3": [tp("topic1", 2)],
    }


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_two_consumers_two_topics_six_partitions(rack_config: RackConfig) -> None:
    # Kafka: RangeAssignorTest.testTwoConsumersTwoTopicsSixPartitions
    f = RangeFixture(rack_config)
    subs = {
        "consumer1": f.subscription(["topic1", "topic2"], 0),
        "consumer2": f.subscription(["topic1", "topic2"], 1),
    }
    assert f.assign(f.metadata(topic1=3, topic2=3), subs) == {
        "consumer1": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer2": [tp("topic1", 2), tp("topic2", 2)],
    }


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_two_static_consumers_two_topics_six_partitions(rack_config: RackConfig) -> None:
    # Kafka: RangeAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions
    # "consumer-a" sorts before "consumer-b", but instance ids decide.
    f = RangeFixture(rack_config)
    subs = {
        "consumer-b": f.subscription(["topic1", "topic2"], 0, instance="instance1"),
        "consumer-a": f.subscription(["topic1", "topic2"], 1, instance="instance2"),
    }
    assert f.assign(f.metadata(topic1=3, topic2=3), subs) == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 2), tp("topic2", 2)],
    }


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_one_static_consumer_and_one_dynamic_consumer_two_topics_six_partitions(
    rack_config: RackConfig,
) -> None:
    # Kafka: RangeAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions
    # The static member comes first although its member id sorts last.
    f = RangeFixture(rack_config)
    subs = {
        "consumer-b": f.subscription(["topic1", "topic2"], 0, instance="instance1"),
        "consumer-a": f.subscription(["topic1", "topic2"], 1),
    }
    assert f.assign(f.metadata(topic1=3, topic2=3), subs) == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 2), tp("topic2", 2)],
    }


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_static_member_range_assignment_persistent(rack_config: RackConfig) -> None:
    # Kafka: RangeAssignorTest.testStaticMemberRangeAssignmentPersistent
    f = RangeFixture(rack_config, max_consumers=5)
    metadata = f.metadata(topic1=5, topic2=4)
    both = ["topic1", "topic2"]
    subs = {
        "consumer1": f.subscription(both, 0, instance="instance1"),
        "consumer2": f.subscription(both, 1, instance="instance2"),
        "consumer3": f.subscription(both, 2, instance="instance3"),
        "consumer4": f.subscription(both, 3),  # dynamic
    }
    expected = {
        "consumer1": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0)],
        "consumer2": [tp("topic1", 2), tp("topic2", 1)],
        "consumer3": [tp("topic1", 3), tp("topic2", 2)],
        "consumer4": [tp("topic1", 4), tp("topic2", 3)],
    }
    assert f.assign(metadata, subs) == expected

    # The dynamic member is replaced by another one.
    del subs["consumer4"]
    subs["consumer5"] = f.subscription(both, 4)
    expected["consumer5"] = expected.pop("consumer4")
    assert f.assign(metadata, subs) == expected


@pytest.mark.parametrize("rack_config", ALL_CONFIGS)
def test_static_member_range_assignment_persistent_after_member_id_changes(
    rack_config: RackConfig,
) -> None:
    # Kafka: RangeAssignorTest.testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges
    f = RangeFixture(rack_config)
    metadata = f.metadata(topic1=5, topic2=5)
    both = ["topic1", "topic2"]
    subs = {
        "consumer1": f.subscription(both, 0, instance="instance1"),
        "consumer2": f.subscription(both, 1, instance="instance2"),
        "consumer3": f.subscription(both, 2, instance="instance3"),
    }
    expected = {
        "instance1": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "instance2": [tp("topic1", 2), tp("topic1", 3), tp("topic2", 2), tp("topic2", 3)],
        "instance3": [tp("topic1", 4), tp("topic2", 4)],
    }
    assert by_instance(f.assign(metadata, subs), subs) == expected

    subs["consumer4"] = subs.pop("consumer3")
    subs["consumer5"] = subs.pop("consumer2")
    assert by_instance(f.assign(metadata, subs), subs) == expected


def test_rack_aware_static_member_range_assignment_persistent_after_member_id_changes() -> None:
    # Kafka: RangeAssignorTest
    #   .testRackAwareStaticMemberRangeAssignmentPersistentAfterMemberIdChanges
    f = RangeFixture(RackConfig.BROKER_AND_CONSUMER_RACK)
    brokers = broker_racks_for(3, 2)
    metadata = ClusterMetadata(
        {"topic1": 5, "topic2": 5},
        {"topic1": replica_racks(5, 2, brokers), "topic2": replica_racks(5, 2, brokers)},
    )
    both = ["topic1", "topic2"]
    subs = {
        "consumer1": f.subscription(both, 0, instance="instance1"),
        "consumer2": f.subscription(both, 1, instance="instance2"),
        "consumer3": f.subscription(both, 2, instance="instance3"),
    }
    expected = {
        "instance1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 0), tp("topic2", 2)],
        "instance2": [tp("topic1", 1), tp("topic1", 3), tp("topic2", 1), tp("topic2", 3)],
        "instance3": [tp("topic1", 4), tp("topic2", 4)],
    }
    assert by_instance(f.assign(metadata, subs), subs) == expected

    subs["consumer4"] = subs.pop("consumer3")
    subs["consumer5"] = subs.pop("consumer2")
    assert by_instance(f.assign(metadata, subs), subs) == expected


def verify_non_rack_aware_assignment(
    topics: dict[str, int], consumer_topics: list[list[str]], expected: list[str]
) -> None:
    """Kafka: ``RangeAssignorTest.verifyNonRackAwareAssignment``: every rack
    combination where the rack-aware logic is off, or changes nothing."""
    assignor = RangeAssignor()
    verify_rack_assignment(
        assignor, topics, 3, null_racks(3), racks(3), consumer_topics, expected, -1
    )
    verify_rack_assignment(
        assignor, topics, 3, racks(3), null_racks(3), consumer_topics, expected, -1
    )
    verify_rack_assignment(assignor, topics, 3, racks(3), racks(3), consumer_topics, expected, 0)
    verify_rack_assignment(assignor, topics, 4, racks(4), racks(3), consumer_topics, expected, 0)
    verify_rack_assignment(
        assignor, topics, 3, racks(3), ["d", "e", "f"], consumer_topics, expected, -1
    )
    verify_rack_assignment(
        assignor, topics, 3, racks(3), [None, "e", "f"], consumer_topics, expected, -1
    )
    preferring = RangeAssignor(prefer_rack_aware_logic=True)
    verify_rack_assignment(preferring, topics, 3, racks(3), racks(3), consumer_topics, expected, 0)


def test_rack_aware_assignment_with_uniform_subscription() -> None:
    # Kafka: RangeAssignorTest.testRackAwareAssignmentWithUniformSubscription
    topics = {"t1": 6, "t2": 7, "t3": 2}
    every = ["t1", "t2", "t3"]
    consumer_topics = [every, every, every]
    verify_non_rack_aware_assignment(
        topics,
        consumer_topics,
        [
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
            "t1-2, t1-3, t2-3, t2-4, t3-1",
            "t1-4, t1-5, t2-5, t2-6",
        ],
    )
    assignor = RangeAssignor()
    verify_rack_assignment(
        assignor,
        topics,
        1,
        racks(3),
        racks(3),
        consumer_topics,
        [
            "t1-0, t1-3, t2-0, t2-3, t2-6",
            "t1-1, t1-4, t2-1, t2-4, t3-0",
            "t1-2, t1-5, t2-2, t2-5, t3-1",
        ],
        0,
    )
    verify_rack_assignment(
        assignor,
        topics,
        2,
        racks(3),
        racks(3),
        consumer_topics,
        [
            "t1-0, t1-2, t2-0, t2-2, t2-3, t3-1",
            "t1-1, t1-3, t2-1, t2-4, t3-0",
            "t1-4, t1-5, t2-5, t2-6",
        ],
        1,
    )
    # One consumer on a rack without partitions.
    verify_rack_assignment(
        assignor,
        topics,
        3,
        racks(2),
        racks(3),
        consumer_topics,
        [
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
            "t1-2, t1-3, t2-3, t2-4, t3-1",
            "t1-4, t1-5, t2-5, t2-6",
        ],
        4,
    )


def test_rack_aware_assignment_with_non_equal_subscription() -> None:
    # Kafka: RangeAssignorTest.testRackAwareAssignmentWithNonEqualSubscription
    topics = {"t1": 6, "t2": 7, "t3": 2}
    every = ["t1", "t2", "t3"]
    consumer_topics = [every, every, ["t1", "t3"]]
    verify_non_rack_aware_assignment(
        topics,
        consumer_topics,
        [
            "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
            "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
            "t1-4, t1-5",
        ],
    )
    assignor = RangeAssignor()
    verify_rack_assignment(
        assignor,
        topics,
        1,
        racks(3),
        racks(3),
        consumer_topics,
        [
            "t1-0, t1-3, t2-0, t2-2, t2-3, t2-6",
            "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0",
            "t1-2, t1-5, t3-1",
        ],
        2,
    )
    verify_rack_assignment(
        assignor,
        topics,
        2,
        racks(3),
        racks(3),
        consumer_topics,
        [
            "t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1",
            "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0",
            "t1-4, t1-5",
        ],
        0,
    )
    verify_rack_assignment(
        assignor,
        topics,
        3,
        racks(2),
        racks(3),
        consumer_topics,
        [
            "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
            "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
            "t1-4, t1-5",
        ],
        2,
    )


def test_rack_aware_assignment_with_uniform_partitions() -> None:
    # Kafka: RangeAssignorTest.testRackAwareAssignmentWithUniformPartitions
    # Co-partitioning wins over rack alignment.
    topics = {"t1": 5, "t2": 5, "t3": 5}
    every = ["t1", "t2", "t3"]
    consumer_topics = [every, every, every]
    plain = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t3-1",
        "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
        "t1-4, t2-4, t3-4",
    ]
    verify_non_rack_aware_assignment(topics, consumer_topics, plain)
    assignor = RangeAssignor()
    verify_rack_assignment(assignor, topics, 1, racks(3), racks(3), consumer_topics, plain, 10)
    verify_rack_assignment(assignor, topics, 2, racks(3), racks(3), consumer_topics, plain, 5)
    verify_rack_assignment(assignor, topics, 3, racks(2), racks(3), consumer_topics, plain, 3)


def test_rack_aware_assignment_with_uniform_partitions_non_equal_subscription() -> None:
    # Kafka: RangeAssignorTest.testRackAwareAssignmentWithUniformPartitionsNonEqualSubscription
    topics = {"t1": 5, "t2": 5, "t3": 5}
    every = ["t1", "t2", "t3"]
    consumer_topics = [every, every, ["t1", "t3"]]
    verify_non_rack_aware_assignment(
        topics,
        consumer_topics,
        [
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
            "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
            "t1-4, t3-4",
        ],
    )
    assignor = RangeAssignor()
    verify_rack_assignment(
        assignor,
        topics,
        1,
        racks(3),
        racks(3),
        consumer_topics,
        [
            "t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1",
            "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
            "t1-4, t3-4",
        ],
        9,
    )
    verify_rack_assignment(
        assignor,
        topics,
        2,
        racks(3),
        racks(3),
        consumer_topics,
        [
            "t1-2, t2-0, t2-1, t2-3, t3-2",
            "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3",
            "t1-1, t1-4, t3-1, t3-4",
        ],
        0,
    )
    verify_rack_assignment(
        assignor,
        topics,
        3,
        racks(2),
        racks(3),
        consumer_topics,
        [
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
            "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
            "t1-4, t3-4",
        ],
        2,
    )


def test_rack_aware_assignment_with_co_partitioning() -> None:
    # Kafka: RangeAssignorTest.testRackAwareAssignmentWithCoPartitioning
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    consumer_topics = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    consumer_racks = ["a", "b", "b", "a"]
    plain = [
        "t1-0, t1-1, t1-2, t2-0, t2-1, t2-2",
        "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5",
        "t3-0, t4-0",
        "t3-1, t4-1",
    ]
    assignor = RangeAssignor()
    verify_rack_assignment(
        assignor, topics, 3, racks(2), consumer_racks, consumer_topics, plain, -1
    )
    verify_rack_assignment(assignor, topics, 2, racks(2), consumer_racks, consumer_topics, plain, 0)
    verify_rack_assignment(
        assignor,
        topics,
        1,
        racks(2),
        consumer_racks,
        consumer_topics,
        [
            "t1-0, t1-2, t1-4, t2-0, t2-2, t2-4",
            "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5",
            "t3-1, t4-1",
            "t3-0, t4-0",
        ],
        0,
    )

    every = ["t1", "t2", "t3", "t4"]
    consumer_topics = [every, every, every, every]
    plain = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1",
        "t1-4, t2-4",
        "t1-5, t2-5",
    ]
    verify_rack_assignment(
        assignor, topics, 3, racks(2), consumer_racks, consumer_topics, plain, -1
    )
    verify_rack_assignment(assignor, topics, 2, racks(2), consumer_racks, consumer_topics, plain, 0)
    verify_rack_assignment(
        assignor,
        topics,
        1,
        racks(2),
        consumer_racks,
        consumer_topics,
        [
            "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0",
            "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1",
            "t1-5, t2-5",
            "t1-4, t2-4",
        ],
        0,
    )
    verify_rack_assignment(
        assignor,
        topics,
        1,
        racks(3),
        consumer_racks,
        consumer_topics,
        [
            "t1-0, t1-3, t2-0, t2-3, t3-0, t4-0",
            "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
            "t1-2, t2-2",
            "t1-5, t2-5",
        ],
        6,
    )


def test_co_partitioned_assignment_with_same_subscription() -> None:
    # Kafka: RangeAssignorTest.testCoPartitionedAssignmentWithSameSubscription
    # t7..t9 are subscribed but have no metadata.
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    topic_list = ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]
    consumer_topics = [topic_list, topic_list, topic_list]
    consumer_racks = ["a", "b", "c"]
    plain = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
        "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3",
    ]
    verify_rack_assignment(
        RangeAssignor(), topics, 3, null_racks(3), consumer_racks, consumer_topics, plain, -1
    )
    preferring = RangeAssignor(prefer_rack_aware_logic=True)
    verify_rack_assignment(
        preferring, topics, 3, racks(3), consumer_racks, consumer_topics, plain, 0
    )
    verify_rack_assignment(
        preferring,
        topics,
        2,
        racks(3),
        consumer_racks,
        consumer_topics,
        [
            "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1",
            "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
            "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3",
        ],
        0,
    )


def test_rack_gate_with_and_without_prefer_rack_aware_logic() -> None:
    # Kafka: AbstractPartitionAssignorTest.testUseRackAwareAssignment (the gate range uses,
    # including the test-only preferRackAwareLogic switch).
    every = frozenset({"a", "b", "c"})
    two = frozenset({"a", "b"})
    on_all = [every] * 10
    on_subsets = [frozenset({"abc"[i % 3]}) for i in range(10)]
    cases = [
        (frozenset(), [], False, False),
        (frozenset(), on_all, False, False),
        (every, [], False, False),
        (frozenset({"d"}), on_all, False, False),
        (every, on_all, False, True),
        (two, on_all, False, True),
        (frozenset({"a", "d"}), on_all, False, True),
        (every, on_subsets, True, True),
        (two, on_subsets, True, True),
        (frozenset({"a", "d"}), on_subsets, True, True),
    ]
    for consumer_racks, partition_racks, expected, expected_preferring in cases:
        assert _needs_rack_awareness(consumer_racks, partition_racks, False) is expected
        assert _needs_rack_awareness(consumer_racks, partition_racks, True) is expected_preferring


# --- The RangeAssignor javadoc -------------------------------------------------------------------


def test_javadoc_example() -> None:
    metadata = ClusterMetadata({"t0": 3, "t1": 3})
    subs = {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    assert assign(RangeAssignor(), metadata, subs) == {
        "C0": [tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)],
        "C1": [tp("t0", 2), tp("t1", 2)],
    }


def test_javadoc_rolling_bounce_reshuffles_dynamic_members_but_not_static_ones() -> None:
    metadata = ClusterMetadata({"t0": 3, "t1": 3})
    both = ["t0", "t1"]
    # After a rolling bounce C0 rejoins as C3 and C1 as C2: their order flips.
    bounced = {"C3": Subscription(both), "C2": Subscription(both)}
    assert assign(RangeAssignor(), metadata, bounced) == {
        "C3": [tp("t0", 2), tp("t1", 2)],
        "C2": [tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)],
    }
    # With instance ids I0 and I1 the assignment survives the new member ids.
    before = {
        "C0": Subscription(both, group_instance_id="I0"),
        "C1": Subscription(both, group_instance_id="I1"),
    }
    after = {
        "C3": Subscription(both, group_instance_id="I0"),
        "C2": Subscription(both, group_instance_id="I1"),
    }
    expected = {
        "I0": [tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)],
        "I1": [tp("t0", 2), tp("t1", 2)],
    }
    assert by_instance(assign(RangeAssignor(), metadata, before), before) == expected
    assert by_instance(assign(RangeAssignor(), metadata, after), after) == expected


# --- Further fixed cases -------------------------------------------------------------------------


def test_interface() -> None:
    assignor = RangeAssignor()
    assert assignor.name == "range"
    assert assignor.supported_protocols() == (RebalanceProtocol.EAGER,)
    assert assignor.version() == 0
    assert assignor.subscription_user_data({"t"}) is None


def test_zero_partition_topic_is_skipped_and_user_data_is_none() -> None:
    metadata = ClusterMetadata({"empty": 0, "t": 2})
    subs = {"m1": Subscription(["empty", "t"]), "m2": Subscription(["empty"])}
    result = RangeAssignor().assign(metadata, GroupSubscription(subs))
    assert {m: list(a.partitions) for m, a in result.assignments.items()} == {
        "m1": [tp("t", 0), tp("t", 1)],
        "m2": [],
    }
    assert all(a.user_data is None for a in result.assignments.values())


def test_duplicate_topics_in_a_subscription_count_once() -> None:
    metadata = ClusterMetadata({"t": 4})
    subs = {"m1": Subscription(["t", "t"]), "m2": Subscription(["t"])}
    assert assign(RangeAssignor(), metadata, subs) == {
        "m1": [tp("t", 0), tp("t", 1)],
        "m2": [tp("t", 2), tp("t", 3)],
    }


def test_empty_group() -> None:
    assert (
        RangeAssignor().assign(ClusterMetadata({"t": 3}), GroupSubscription({})).assignments == {}
    )


def test_extra_partitions_of_every_topic_go_to_the_same_early_members() -> None:
    # The known multi-topic imbalance: 4 topics of 3 partitions and 2 members give 8 vs 4.
    metadata = ClusterMetadata({f"t{i}": 3 for i in range(4)})
    every = [f"t{i}" for i in range(4)]
    result = assign(RangeAssignor(), metadata, {"a": Subscription(every), "b": Subscription(every)})
    assert (len(result["a"]), len(result["b"])) == (8, 4)


def test_empty_rack_id_counts_as_no_rack() -> None:
    # Kafka keeps only non-empty client.rack values; "" must not enable rack awareness.
    metadata = ClusterMetadata({"t": 4}, {"t": [frozenset({"a"})] * 4})
    subs = {"m1": Subscription(["t"], rack_id=""), "m2": Subscription(["t"], rack_id="")}
    assert assign(RangeAssignor(prefer_rack_aware_logic=True), metadata, subs) == {
        "m1": [tp("t", 0), tp("t", 1)],
        "m2": [tp("t", 2), tp("t", 3)],
    }


def test_rack_pass_prefers_rack_local_partitions_within_quota() -> None:
    # One topic with partitions alternately on racks a and b; members on b and a.
    metadata = ClusterMetadata({"t": 4}, {"t": [frozenset({"ab"[p % 2]}) for p in range(4)]})
    subs = {"m1": Subscription(["t"], rack_id="b"), "m2": Subscription(["t"], rack_id="a")}
    assert assign(RangeAssignor(), metadata, subs) == {
        "m1": [tp("t", 1), tp("t", 3)],
        "m2": [tp("t", 0), tp("t", 2)],
    }


def test_gc_state_is_restored() -> None:
    metadata = ClusterMetadata({"t": 10})
    subs = {"m": Subscription(["t"])}
    assert gc.isenabled()
    RangeAssignor().assign(metadata, GroupSubscription(subs))
    assert gc.isenabled()
    gc.disable()
    try:
        RangeAssignor().assign(metadata, GroupSubscription(subs))
        assert not gc.isenabled()
    finally:
        gc.enable()


# --- A plain transcription of Kafka's RangeAssignor, for differential tests ----------------------


def kafka_range_reference(
    metadata: ClusterMetadata,
    subscriptions: Mapping[str, Subscription],
    prefer_rack_aware_logic: bool = False,
) -> dict[str, list[TopicPartition]]:
    """``RangeAssignor.assignPartitions`` step by step, with Kafka's linear scans.

    Written independently of the implementation (no cursors, no shared
    quota state, no numpy), to catch any shortcut that changes the output.
    """
    ordered = sorted_members(subscriptions)
    member_rack = {m: (s.rack_id or None) for m, s in subscriptions.items()}
    subscribed = {t for s in subscriptions.values() for t in s.topics}

    class State:
        def __init__(self, topic: str, count: int) -> None:
            self.topic = topic
            self.consumers = [m for m in ordered if topic in subscriptions[m].topics]
            self.unassigned = [tp(topic, p) for p in range(count)]
            self.assigned = dict.fromkeys(self.consumers, 0)
            self.base = count // len(self.consumers)
            self.extra = count % len(self.consumers)
            rack_set = {member_rack[c] for c in self.consumers if member_rack[c]}
            self.partition_racks: dict[TopicPartition, frozenset[str]] = {}
            union: set[str] = set()
            if rack_set:
                for p in range(count):
                    self.partition_racks[tp(topic, p)] = metadata.racks(topic, p)
                    union |= metadata.racks(topic, p)
            if not rack_set or rack_set.isdisjoint(union):
                self.needs = False
            elif prefer_rack_aware_logic:
                self.needs = True
            else:
                self.needs = any(r != union for r in self.partition_racks.values())

        def max_assignable(self, c: str) -> int:
            return max(0, self.base + (1 if self.extra > 0 else 0) - self.assigned[c])

        def racks_match(self, c: str, p: TopicPartition) -> bool:
            rack = member_rack[c]
            return rack is None or rack in self.partition_racks.get(p, NO_RACKS)

    result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}

    def give(c: str, parts: list[TopicPartition], state: State) -> None:
        result[c].extend(parts)
        state.assigned[c] += len(parts)
        if state.assigned[c] > state.base:
            state.extra -= 1
        state.unassigned = [p for p in state.unassigned if p not in parts]

    def assign_ranges(state: State, may: Callable[[str, TopicPartition], bool]) -> None:
        for c in state.consumers:
            if not state.unassigned:
                break
            parts = [p for p in state.unassigned if may(c, p)][: state.max_assignable(c)]
            if parts:
                give(c, parts, state)

    states = [
        State(t, metadata.partition_count(t))
        for t in sorted(subscribed)
        if metadata.partition_count(t) > 0
    ]
    if any(s.needs for s in states):
        groups: dict[tuple[tuple[str, ...], int], list[State]] = {}
        for s in states:
            groups.setdefault((tuple(s.consumers), len(s.partition_racks)), []).append(s)
        for (consumers, count), group in groups.items():
            if len(group) > 1:
                remaining = list(consumers)
                for p in range(count):
                    match = next(
                        (
                            c
                            for c in remaining
                            if all(
                                s.racks_match(c, tp(s.topic, p)) and s.max_assignable(c) > 0
                                for s in group
                            )
                        ),
                        None,
                    )
                    if match is None:
                        continue
                    for s in group:
                        give(match, [tp(s.topic, p)], s)
                    if all(s.max_assignable(match) == 0 for s in group):
                        remaining.remove(match)
                        if not remaining:
                            break
            elif group[0].needs:
                assign_ranges(group[0], group[0].racks_match)
    for s in states:
        assign_ranges(s, lambda c, p: True)
    return {m: sorted(parts) for m, parts in result.items()}


# --- Property tests ------------------------------------------------------------------------------

TOPICS = ("t0", "t1", "t2", "t3", "t4")
RACK_CHOICES = ("a", "b", "c")


@st.composite
def groups(
    draw: st.DrawFn, with_racks: bool = True, co_partitioned: bool = False
) -> tuple[ClusterMetadata, dict[str, Subscription]]:
    """Random topics (some without metadata or partitions), members (some static,
    some with racks, "" included) and replica racks. ``co_partitioned`` draws
    topics of equal partition counts, mostly subscribed by everyone, so that the
    co-partitioned pre-pass of the rack-aware logic runs."""
    if co_partitioned:
        same = draw(st.integers(1, 8))
        counts = {t: same for t in TOPICS[: draw(st.integers(2, len(TOPICS)))]}
    else:
        counts = {t: draw(st.integers(0, 8)) for t in TOPICS if draw(st.booleans()) or t == "t0"}
    partition_racks: dict[str, list[frozenset[str]]] = {}
    if with_racks:
        for topic, count in counts.items():
            if not co_partitioned and draw(st.integers(0, 4)) == 0:
                continue  # no rack information for this topic
            partition_racks[topic] = [
                frozenset(draw(st.sets(st.sampled_from(RACK_CHOICES), max_size=2)))
                for _ in range(count)
            ]
    member_count = draw(st.integers(1, 6))
    ids = draw(
        st.lists(
            st.text("abcxyz-", min_size=1, max_size=4),
            min_size=member_count,
            max_size=member_count,
            unique=True,
        )
    )
    instances = iter(draw(st.permutations([f"i{k}" for k in range(member_count)])))
    rack_values: list[str | None] = [None, "", *RACK_CHOICES, "z"] if with_racks else [None]
    shared = list(counts) if co_partitioned and draw(st.integers(0, 3)) else None
    subscriptions = {}
    for member_id in ids:
        topics = (
            shared if shared is not None else draw(st.lists(st.sampled_from(TOPICS), max_size=6))
        )
        instance = next(instances) if draw(st.booleans()) else None
        rack = draw(st.sampled_from(rack_values))
        subscriptions[member_id] = Subscription(topics, rack_id=rack, group_instance_id=instance)
    return ClusterMetadata(counts, partition_racks), subscriptions


@settings(max_examples=300, deadline=None)
@given(st.one_of(groups(), groups(co_partitioned=True)), st.booleans())
def test_matches_kafka_transcription(
    group: tuple[ClusterMetadata, dict[str, Subscription]], prefer: bool
) -> None:
    metadata, subscriptions = group
    actual = assign(RangeAssignor(prefer_rack_aware_logic=prefer), metadata, subscriptions)
    assert actual == kafka_range_reference(metadata, subscriptions, prefer)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python's import
@settings(max_examples=150, deadline=None)
@given(groups(with_racks=False))
def test_matches_kafka_python_for_dynamic_members(
    group: tuple[ClusterMetadata, dict[str, Subscription]],
) -> None:
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    metadata, subscriptions = group
    # kafka-python orders mixed static/dynamic members differently, and counts a topic listed
    # twice twice; compare dynamic members with duplicate-free subscriptions only (a real
    # consumer's subscription is a set).
    dynamic = {m: Subscription(sorted(set(s.topics))) for m, s in subscriptions.items()}
    cluster = SimpleNamespace(
        partitions_for_topic=lambda t: (
            set(range(metadata.partitions_per_topic[t]))
            if t in metadata.partitions_per_topic
            else None
        )
    )
    members = [
        SimpleNamespace(
            member_id=m, group_instance_id=None, metadata=SimpleNamespace(topics=s.topics)
        )
        for m, s in dynamic.items()
    ]
    theirs = RangePartitionAssignor.assign(cluster, members)
    expected = {
        m: sorted(tp(t, p) for t, ps in a.assigned_partitions for p in ps)
        for m, a in theirs.items()
    }
    assert assign(RangeAssignor(), metadata, dynamic) == expected


@settings(max_examples=200, deadline=None)
@given(groups())
def test_valid_complete_and_balanced_per_topic(
    group: tuple[ClusterMetadata, dict[str, Subscription]],
) -> None:
    metadata, subscriptions = group
    result = assign(RangeAssignor(), metadata, subscriptions)
    assert set(result) == set(subscriptions)
    everything = [p for parts in result.values() for p in parts]
    assert len(everything) == len(set(everything))  # each partition at most once
    for member, parts in result.items():
        assert parts == sorted(parts)
        for p in parts:  # only subscribed, existing partitions
            assert p.topic in subscriptions[member].topics
            assert 0 <= p.partition < metadata.partition_count(p.topic)
    subscribed = {t for s in subscriptions.values() for t in s.topics}
    expected_all = {tp(t, p) for t in subscribed for p in range(metadata.partition_count(t))}
    assert set(everything) == expected_all  # complete
    order = sorted_members(subscriptions)
    for topic in subscribed:
        count = metadata.partition_count(topic)
        if count == 0:
            continue
        consumers = [m for m in order if topic in subscriptions[m].topics]
        counts = [sum(1 for p in result[m] if p.topic == topic) for m in consumers]
        base, extra = divmod(count, len(consumers))
        # range's per-topic balance, rack-aware or not: `extra` members get one more (without
        # racks the first ones, see below; the rack pass may hand the extra slots to others).
        assert sorted(counts, reverse=True) == [base + 1] * extra + [base] * (
            len(consumers) - extra
        )


@settings(max_examples=200, deadline=None)
@given(groups(with_racks=False))
def test_without_racks_every_member_gets_contiguous_blocks(
    group: tuple[ClusterMetadata, dict[str, Subscription]],
) -> None:
    metadata, subscriptions = group
    result = assign(RangeAssignor(), metadata, subscriptions)
    order = sorted_members(subscriptions)
    for topic in {t for s in subscriptions.values() for t in s.topics}:
        blocks = [[p.partition for p in result[m] if p.topic == topic] for m in order]
        flat = [p for block in blocks for p in block]
        assert flat == list(range(metadata.partition_count(topic)))


@settings(max_examples=100, deadline=None)
@given(groups())
def test_deterministic_and_independent_of_member_order_in_the_input(
    group: tuple[ClusterMetadata, dict[str, Subscription]],
) -> None:
    metadata, subscriptions = group
    first = assign(RangeAssignor(), metadata, subscriptions)
    assert assign(RangeAssignor(), metadata, subscriptions) == first
    items = list(subscriptions.items())
    items.reverse()
    assert assign(RangeAssignor(), metadata, dict(items)) == first


@settings(max_examples=150, deadline=None)
@given(groups(), st.data())
def test_static_members_keep_their_ranges_when_member_ids_change(
    group: tuple[ClusterMetadata, dict[str, Subscription]], data: st.DataObject
) -> None:
    metadata, subscriptions = group
    static = {m: s for m, s in subscriptions.items() if s.group_instance_id is not None}
    dynamic = {m: s for m, s in subscriptions.items() if s.group_instance_id is None}
    before = by_instance(assign(RangeAssignor(), metadata, subscriptions), subscriptions)
    # Restarted static members come back with fresh member ids.
    renamed = {f"restarted-{s.group_instance_id}-{k}": s for k, s in enumerate(static.values())}
    after_subs = {**renamed, **dynamic}
    if data.draw(st.booleans()):
        after_subs = dict(reversed(list(after_subs.items())))
    after = by_instance(assign(RangeAssignor(), metadata, after_subs), after_subs)
    assert after == before


@pytest.mark.parametrize("seed", range(4))
def test_matches_kafka_transcription_on_larger_groups(seed: int) -> None:
    # Larger than hypothesis draws: 40 members, 12 topics, a few shared subscriptions.
    rnd = random.Random(seed)
    counts = {f"topic-{k:02d}": rnd.choice([0, 6, 12, 12, 30, 45]) for k in range(12)}
    partition_racks = {
        t: [frozenset(rnd.sample("abcd", rnd.randint(0, 2))) for _ in range(n)]
        for t, n in counts.items()
        if rnd.random() < 0.8
    }
    metadata = ClusterMetadata(counts, partition_racks)
    patterns = [sorted(rnd.sample(sorted(counts), rnd.randint(1, 12))) for _ in range(3)]
    subscriptions = {
        f"member-{rnd.randrange(10**6):06d}-{k}": Subscription(
            rnd.choice(patterns),
            rack_id=rnd.choice([None, "a", "b", "c", "d", "e"]),
            group_instance_id=f"instance-{k}" if rnd.random() < 0.3 else None,
        )
        for k in range(40)
    }
    for prefer in (False, True):
        actual = assign(RangeAssignor(prefer_rack_aware_logic=prefer), metadata, subscriptions)
        assert actual == kafka_range_reference(metadata, subscriptions, prefer)
