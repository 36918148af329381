"""Kafka's ``AbstractStickyAssignorTest``, ported, run against both sticky assignors.

Each test names the Kafka test it re-expresses. Kafka runs the abstract suite
once for ``StickyAssignor`` and once for ``CooperativeStickyAssignor``, and
most cases once per ``RackConfig`` (no broker racks, no consumer racks, both
with rack-aware logic forced on); so does this module. As in Kafka, the
cooperative variant of ``verify`` runs follow-up rebalances until no
partition is revoked (at most 4) before checking validity and balance, and the
assertions after it look at that final assignment.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from regroup.assignors.classic.api import (
    Assignment,
    ClusterMetadata,
    ConsumerGroupMetadata,
    GroupSubscription,
    Subscription,
)
from regroup.assignors.classic.cooperative_sticky import CooperativeStickyAssignor
from regroup.assignors.classic.sticky import StickyAssignor
from regroup.assignors.classic.sticky_engine import StickyResult
from regroup.assignors.classic.sticky_engine.user_data import encode_sticky_user_data
from regroup.model import TopicPartition
from regroup.model.metadata import replica_racks
from tests.assignors.classic.classic_assign_json import assign_via_json

ALL_RACKS = ("a", "b", "c", "d", "e", "f")
RACK_CONFIGS = ("NO_BROKER_RACK", "NO_CONSUMER_RACK", "BROKER_AND_CONSUMER_RACK")
KINDS = ("sticky", "cooperative")

AssignmentMap = dict[str, list[TopicPartition]]


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def canonical(prefix: str, i: int, max_num: int) -> str:
    """Kafka's ``getCanonicalName``: zero-padded to the width of ``max_num``."""
    return prefix + str(i).zfill(len(str(max_num)))


class Harness:
    """The state of Kafka's test class: assignor, racks, partition metadata."""

    def __init__(self, kind: str, rack_config: str | None = None) -> None:
        self.kind = kind
        self.assignor: StickyAssignor | CooperativeStickyAssignor = (
            StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()
        )
        self.num_broker_racks = 0
        self.has_consumer_rack = False
        self.replication_factor = 2
        self.next_partition_index = 0
        self.partitions_per_topic: dict[str, int] = {}
        self.partition_racks: dict[str, list[frozenset[str]]] = {}
        self.broker_racks: dict[str, list[list[str | None]]] = {}
        if rack_config is not None:
            self.initialize_racks(rack_config)

    # Kafka: initializeRacks
    def initialize_racks(self, rack_config: str) -> None:
        self.replication_factor = 3
        self.num_broker_racks = 0 if rack_config == "NO_BROKER_RACK" else 3
        self.has_consumer_rack = rack_config != "NO_CONSUMER_RACK"
        self.assignor.prefer_rack_aware_logic = True

    # Kafka: partitionInfos(topic, n) -> AbstractPartitionAssignorTest.partitionInfos
    def add_topic(self, topic: str, partitions: int) -> None:
        next_index = self.next_partition_index
        self.next_partition_index += 1
        rf = self.replication_factor
        brokers = rf if self.num_broker_racks <= 0 else self.num_broker_racks * rf
        broker_racks = [
            None if self.num_broker_racks <= 0 else ALL_RACKS[i % self.num_broker_racks]
            for i in range(brokers)
        ]
        self.partitions_per_topic[topic] = partitions
        # The racks of each replica's broker, None for a broker without a rack.
        self.broker_racks[topic] = [
            [broker_racks[(i + j + next_index) % brokers] for j in range(rf)]
            for i in range(partitions)
        ]
        self.partition_racks[topic] = list(replica_racks(self.broker_racks[topic]))

    def remove_topic(self, topic: str) -> None:
        del self.partitions_per_topic[topic]

    def consumer_rack(self, index: int) -> str | None:
        num_racks = self.num_broker_racks if self.num_broker_racks > 0 else len(ALL_RACKS)
        return ALL_RACKS[index % num_racks] if self.has_consumer_rack else None

    # Kafka: subscription(topics, consumerIndex)
    def subscription(self, topics: Sequence[str], index: int) -> Subscription:
        return Subscription(list(topics), rack_id=self.consumer_rack(index))

    # Kafka: buildSubscriptionV2Above (per assignor)
    def v2(
        self, topics: Sequence[str], owned: Sequence[TopicPartition], generation: int, index: int
    ) -> Subscription:
        if self.kind == "sticky":
            # As a real EAGER member sends it (ConsumerCoordinator.metadata after
            # onJoinPrepare revoked everything): the previous assignment and its generation
            # only in the user data, no ownedPartitions, and the member's generation in
            # the Subscription (which Kafka reads for the *other* claimant of a partition).
            return Subscription(
                list(topics),
                user_data=encode_sticky_user_data(owned, generation),
                generation_id=generation,
            )
        return Subscription(
            list(topics),
            user_data=self.assignor.subscription_user_data(set(topics)),
            owned_partitions=list(owned),
            generation_id=generation,
            rack_id=self.consumer_rack(index),
        )

    def metadata(self) -> ClusterMetadata:
        return ClusterMetadata(dict(self.partitions_per_topic), dict(self.partition_racks))

    def assign(self, subscriptions: dict[str, Subscription]) -> tuple[AssignmentMap, StickyResult]:
        result = self.assignor.assign_with_details(
            self.metadata(), GroupSubscription(dict(subscriptions))
        )
        assignment = {m: list(p) for m, p in result.assignment.items()}
        if self.num_broker_racks == 0:
            # Kafka's NO_BROKER_RACK: the same input through ``regroup assign``, every
            # replica's rack null. (With broker racks, Kafka's tests force the rack-aware
            # logic on, which the JSON cannot ask for.)
            via_json = assign_via_json(
                self.assignor.name, self.partitions_per_topic, self.broker_racks, subscriptions
            )
            assert {m: sorted(p) for m, p in assignment.items()} == via_json
        return assignment, result

    # Kafka: verifyValidityAndBalance (cooperative variant first settles revocations)
    def verify(
        self, subscriptions: dict[str, Subscription], assignment: AssignmentMap
    ) -> AssignmentMap:
        if self.kind == "cooperative":
            rebalances = 0
            while _cooperative_revocations(subscriptions, assignment):
                for member, partitions in assignment.items():
                    old = subscriptions[member]
                    rack_index = ALL_RACKS.index(old.rack_id) if old.rack_id else -1
                    subscriptions[member] = self.v2(old.topics, partitions, 1, rack_index)
                assignment, _ = self.assign(subscriptions)
                rebalances += 1
                assert rebalances <= 4
        verify_validity_and_balance(subscriptions, assignment)
        return assignment


def _cooperative_revocations(
    subscriptions: dict[str, Subscription], assignment: AssignmentMap
) -> bool:
    """Kafka: ``verifyCooperativeValidity``; True if partitions are being revoked."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member, partitions in assignment.items():
        owned = set(subscriptions[member].owned_partitions)
        revoked |= owned - set(partitions)
        added |= set(partitions) - owned
    assert not (added & revoked), f"revoked and reassigned in one rebalance: {added & revoked}"
    return bool(revoked)


def verify_validity_and_balance(
    subscriptions: dict[str, Subscription], assignment: AssignmentMap
) -> None:
    """Kafka: ``AbstractStickyAssignorTest.verifyValidityAndBalance``."""
    assert set(subscriptions) == set(assignment)
    consumers = sorted(assignment)
    for i, consumer in enumerate(consumers):
        partitions = assignment[consumer]
        for partition in partitions:
            assert partition.topic in subscriptions[consumer].topics
        for other in consumers[i + 1 :]:
            other_partitions = assignment[other]
            assert not set(partitions) & set(other_partitions)
            if abs(len(partitions) - len(other_partitions)) <= 1:
                continue
            topics = {p.topic for p in partitions}
            other_topics = {p.topic for p in other_partitions}
            assert not topics & other_topics, f"{consumer} and {other} could be balanced"


def fully_balanced(assignment: AssignmentMap) -> bool:
    sizes = [len(p) for p in assignment.values()]
    return max(sizes) - min(sizes) <= 1


both_kinds = pytest.mark.parametrize("kind", KINDS)
rack_configs = pytest.mark.parametrize("rack_config", RACK_CONFIGS)
consumer_rack = pytest.mark.parametrize("has_rack", [False, True])


def harness_for_consumer_rack(kind: str, has_rack: bool) -> Harness:
    return Harness(kind, "BROKER_AND_CONSUMER_RACK" if has_rack else "NO_CONSUMER_RACK")


@both_kinds
@consumer_rack
def test_one_consumer_no_topic(kind: str, has_rack: bool) -> None:
    # Kafka: testOneConsumerNoTopic
    h = harness_for_consumer_rack(kind, has_rack)
    subs = {"consumer": h.subscription([], 0)}
    assignment, result = h.assign(subs)
    assert assignment == {"consumer": []}
    assert result.partitions_transferring_ownership == {}


@both_kinds
@consumer_rack
def test_one_consumer_nonexistent_topic(kind: str, has_rack: bool) -> None:
    # Kafka: testOneConsumerNonexistentTopic
    h = harness_for_consumer_rack(kind, has_rack)
    subs = {"consumer": h.subscription(["topic"], 0)}
    assignment, result = h.assign(subs)
    assert assignment == {"consumer": []}
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_one_consumer_one_topic(kind: str, rack_config: str) -> None:
    # Kafka: testOneConsumerOneTopic
    h = Harness(kind, rack_config)
    h.add_topic("topic", 3)
    subs = {"consumer": h.subscription(["topic"], 0)}
    assignment, result = h.assign(subs)
    assert assignment["consumer"] == [tp("topic", 0), tp("topic", 1), tp("topic", 2)]
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_only_assigns_partitions_from_subscribed_topics(kind: str, rack_config: str) -> None:
    # Kafka: testOnlyAssignsPartitionsFromSubscribedTopics
    h = Harness(kind, rack_config)
    h.add_topic("topic", 2)
    owned = [tp("topic", 0), tp("topic", 1), tp("other", 0), tp("other", 1)]
    subs = {"consumer": h.v2(["topic"], owned, 1, 0)}
    assignment, result = h.assign(subs)
    assert assignment["consumer"] == [tp("topic", 0), tp("topic", 1)]
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_one_consumer_multiple_topics(kind: str, rack_config: str) -> None:
    # Kafka: testOneConsumerMultipleTopics
    h = Harness(kind, rack_config)
    h.add_topic("topic1", 1)
    h.add_topic("topic2", 2)
    subs = {"consumer": h.subscription(["topic1", "topic2"], 0)}
    assignment, _ = h.assign(subs)
    assert assignment["consumer"] == [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)]


@both_kinds
@rack_configs
def test_two_consumers_one_topic_one_partition(kind: str, rack_config: str) -> None:
    # Kafka: testTwoConsumersOneTopicOnePartition
    h = Harness(kind, rack_config)
    h.add_topic("topic", 1)
    subs = {"consumer1": h.subscription(["topic"], 0), "consumer2": h.subscription(["topic"], 1)}
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    assert fully_balanced(h.verify(subs, assignment))


@both_kinds
@rack_configs
def test_two_consumers_one_topic_two_partitions(kind: str, rack_config: str) -> None:
    # Kafka: testTwoConsumersOneTopicTwoPartitions
    h = Harness(kind, rack_config)
    h.add_topic("topic", 2)
    subs = {"consumer1": h.subscription(["topic"], 0), "consumer2": h.subscription(["topic"], 1)}
    assignment, result = h.assign(subs)
    assert assignment == {"consumer1": [tp("topic", 0)], "consumer2": [tp("topic", 1)]}
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_multiple_consumers_mixed_topic_subscriptions(kind: str, rack_config: str) -> None:
    # Kafka: testMultipleConsumersMixedTopicSubscriptions
    h = Harness(kind, rack_config)
    h.add_topic("topic1", 3)
    h.add_topic("topic2", 2)
    subs = {
        "consumer1": h.subscription(["topic1"], 0),
        "consumer2": h.subscription(["topic1", "topic2"], 1),
        "consumer3": h.subscription(["topic1"], 2),
    }
    assignment, result = h.assign(subs)
    assert assignment == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2)],
        "consumer2": [tp("topic2", 0), tp("topic2", 1)],
        "consumer3": [tp("topic1", 1)],
    }
    assert result.partitions_transferring_ownership is None
    assert fully_balanced(h.verify(subs, assignment))


@both_kinds
@rack_configs
def test_two_consumers_two_topics_six_partitions(kind: str, rack_config: str) -> None:
    # Kafka: testTwoConsumersTwoTopicsSixPartitions
    h = Harness(kind, rack_config)
    h.add_topic("topic1", 3)
    h.add_topic("topic2", 3)
    both = ["topic1", "topic2"]
    subs = {"consumer1": h.subscription(both, 0), "consumer2": h.subscription(both, 1)}
    assignment, result = h.assign(subs)
    assert assignment == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_consumer_owning_min_quota_expected_max_quota(kind: str, rack_config: str) -> None:
    # Kafka: testConsumerOwningMinQuotaExpectedMaxQuota
    h = Harness(kind, rack_config)
    h.add_topic("topic1", 2)
    h.add_topic("topic2", 3)
    both = ["topic1", "topic2"]
    subs = {
        "consumer1": h.v2(both, [tp("topic1", 0), tp("topic2", 1)], 1, 0),
        "consumer2": h.v2(both, [tp("topic1", 1), tp("topic2", 2)], 1, 1),
    }
    assignment, result = h.assign(subs)
    assert assignment == {
        "consumer1": [tp("topic1", 0), tp("topic2", 1), tp("topic2", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 2)],
    }
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_max_quota_consumer_more_than_num_expected_max_capacity_members(
    kind: str, rack_config: str
) -> None:
    # Kafka: testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers. The result depends
    # on Java HashMap order: consumer3, consumer2, consumer1 — consumer2 keeps maxQuota.
    h = Harness(kind, rack_config)
    h.add_topic("topic1", 2)
    h.add_topic("topic2", 2)
    both = ["topic1", "topic2"]
    subs = {
        "consumer1": h.v2(both, [tp("topic1", 0), tp("topic2", 0)], 1, 0),
        "consumer2": h.v2(both, [tp("topic1", 1), tp("topic2", 1)], 1, 1),
        "consumer3": h.v2(both, [], 1, 2),
    }
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {tp("topic2", 0): "consumer3"}
    assignment = h.verify(subs, assignment)
    assert assignment == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 1)],
        "consumer3": [tp("topic2", 0)],
    }


@both_kinds
@rack_configs
def test_all_consumers_are_under_min_quota(kind: str, rack_config: str) -> None:
    # Kafka: testAllConsumersAreUnderMinQuota
    h = Harness(kind, rack_config)
    h.add_topic("topic1", 2)
    h.add_topic("topic2", 3)
    both = ["topic1", "topic2"]
    subs = {
        "consumer1": h.v2(both, [tp("topic1", 0)], 1, 0),
        "consumer2": h.v2(both, [tp("topic1", 1)], 1, 1),
        "consumer3": h.v2(both, [], 1, 2),
    }
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    assert h.verify(subs, assignment) == {
        "consumer1": [tp("topic1", 0), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 2)],
        "consumer3": [tp("topic2", 0)],
    }


@both_kinds
@rack_configs
def test_add_remove_consumer_one_topic(kind: str, rack_config: str) -> None:
    # Kafka: testAddRemoveConsumerOneTopic
    h = Harness(kind, rack_config)
    h.add_topic("topic", 3)
    subs = {"consumer1": h.subscription(["topic"], 0)}
    assignment, _ = h.assign(subs)
    assert assignment["consumer1"] == [tp("topic", 0), tp("topic", 1), tp("topic", 2)]
    assignment = h.verify(subs, assignment)

    subs["consumer1"] = h.v2(["topic"], assignment["consumer1"], 1, 0)
    subs["consumer2"] = h.v2(["topic"], [], 1, 1)
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {tp("topic", 2): "consumer2"}
    assignment = h.verify(subs, assignment)
    assert assignment["consumer1"] == [tp("topic", 0), tp("topic", 1)]
    assert assignment["consumer2"] == [tp("topic", 2)]

    del subs["consumer1"]
    subs["consumer2"] = h.v2(["topic"], assignment["consumer2"], 1, 1)
    assignment, result = h.assign(subs)
    assert set(assignment["consumer2"]) == {tp("topic", 0), tp("topic", 1), tp("topic", 2)}
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_topic_balance_after_reassignment(kind: str, rack_config: str) -> None:
    # Kafka: testTopicBalanceAfterReassignment
    h = Harness(kind, rack_config)
    both = ["topic1", "topic2"]
    h.add_topic("topic1", 12)
    h.add_topic("topic2", 12)

    def per_topic(assignment: AssignmentMap, expected: int) -> None:
        for partitions in assignment.values():
            assert sum(p.topic == "topic1" for p in partitions) == expected
            assert sum(p.topic == "topic2" for p in partitions) == expected

    subs = {"consumer1": h.subscription(both, 0)}
    assignment, _ = h.assign(subs)
    assignment = h.verify(subs, assignment)
    per_topic(assignment, 12)

    subs["consumer1"] = h.v2(both, assignment["consumer1"], 1, 0)
    subs["consumer2"] = h.v2(both, [], 1, 1)
    assignment = h.verify(subs, h.assign(subs)[0])
    per_topic(assignment, 6)

    subs["consumer1"] = h.v2(both, assignment["consumer1"], 1, 0)
    subs["consumer2"] = h.v2(both, assignment["consumer2"], 1, 1)
    subs["consumer3"] = h.v2(both, [], 1, 2)
    subs["consumer4"] = h.v2(both, [], 1, 3)
    assignment = h.verify(subs, h.assign(subs)[0])
    per_topic(assignment, 3)

    del subs["consumer1"], subs["consumer2"]
    subs["consumer3"] = h.v2(both, assignment["consumer3"], 1, 2)
    subs["consumer4"] = h.v2(both, assignment["consumer4"], 1, 3)
    assignment, result = h.assign(subs)
    assignment = h.verify(subs, assignment)
    per_topic(assignment, 6)
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_add_remove_two_consumers_two_topics(kind: str, rack_config: str) -> None:
    # Kafka: testAddRemoveTwoConsumersTwoTopics
    h = Harness(kind, rack_config)
    both = ["topic1", "topic2"]
    h.add_topic("topic1", 3)
    h.add_topic("topic2", 4)
    subs = {"consumer1": h.subscription(both, 0), "consumer2": h.subscription(both, 1)}
    assignment, result = h.assign(subs)
    assert assignment == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1), tp("topic2", 3)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }
    assert result.partitions_transferring_ownership == {}
    assignment = h.verify(subs, assignment)

    subs["consumer1"] = h.v2(both, assignment["consumer1"], 1, 0)
    subs["consumer2"] = h.v2(both, assignment["consumer2"], 1, 1)
    subs["consumer3"] = h.v2(both, [], 1, 2)
    subs["consumer4"] = h.v2(both, [], 1, 3)
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {
        tp("topic1", 2): "consumer3",
        tp("topic2", 3): "consumer3",
        tp("topic2", 2): "consumer4",
    }
    assignment = h.verify(subs, assignment)
    assert assignment == {
        "consumer1": [tp("topic1", 0), tp("topic2", 1)],
        "consumer2": [tp("topic2", 0), tp("topic1", 1)],
        "consumer3": [tp("topic1", 2), tp("topic2", 3)],
        "consumer4": [tp("topic2", 2)],
    }

    del subs["consumer1"], subs["consumer2"]
    subs["consumer3"] = h.v2(both, assignment["consumer3"], 1, 2)
    subs["consumer4"] = h.v2(both, assignment["consumer4"], 1, 3)
    assignment, result = h.assign(subs)
    assert assignment == {
        "consumer3": [tp("topic1", 2), tp("topic2", 3), tp("topic1", 0), tp("topic2", 1)],
        "consumer4": [tp("topic2", 2), tp("topic1", 1), tp("topic2", 0)],
    }
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_poor_round_robin_assignment_scenario(kind: str, rack_config: str) -> None:
    # Kafka: testPoorRoundRobinAssignmentScenario
    h = Harness(kind, rack_config)
    for i in range(1, 6):
        h.add_topic(f"topic{i}", i % 2 + 1)
    five = ["topic1", "topic2", "topic3", "topic4", "topic5"]
    three = ["topic1", "topic3", "topic5"]
    subs = {
        "consumer1": h.subscription(five, 0),
        "consumer2": h.subscription(three, 1),
        "consumer3": h.subscription(three, 2),
        "consumer4": h.subscription(five, 3),
    }
    h.verify(subs, h.assign(subs)[0])


@both_kinds
@rack_configs
def test_add_remove_topic_two_consumers(kind: str, rack_config: str) -> None:
    # Kafka: testAddRemoveTopicTwoConsumers
    h = Harness(kind, rack_config)
    h.add_topic("topic", 3)
    subs = {"consumer1": h.subscription(["topic"], 0), "consumer2": h.subscription(["topic"], 1)}
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    assignment = h.verify(subs, assignment)
    first1, first2 = assignment["consumer1"], assignment["consumer2"]
    assert sorted([len(first1), len(first2)]) == [1, 2]

    h.add_topic("topic2", 3)
    subs["consumer1"] = h.v2(["topic", "topic2"], first1, 1, 0)
    subs["consumer2"] = h.v2(["topic", "topic2"], first2, 1, 1)
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    assignment = h.verify(subs, assignment)
    second1, second2 = assignment["consumer1"], assignment["consumer2"]
    assert len(second1) == 3 and len(second2) == 3
    assert set(first1) <= set(second1) and set(first2) <= set(second2)

    h.remove_topic("topic")
    subs["consumer1"] = h.v2(["topic2"], second1, 1, 0)
    subs["consumer2"] = h.v2(["topic2"], second2, 1, 1)
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    assignment = h.verify(subs, assignment)
    third1, third2 = assignment["consumer1"], assignment["consumer2"]
    assert sorted([len(third1), len(third2)]) == [1, 2]
    assert set(third1) <= set(second1) and set(third2) <= set(second2)


@both_kinds
@rack_configs
def test_reassignment_after_one_consumer_leaves(kind: str, rack_config: str) -> None:
    # Kafka: testReassignmentAfterOneConsumerLeaves
    h = Harness(kind, rack_config)
    for i in range(1, 20):
        h.add_topic(canonical("t", i, 20), i)
    subs: dict[str, Subscription] = {}
    for i in range(1, 20):
        topics = [canonical("t", j, 20) for j in range(1, i + 1)]
        subs[canonical("c", i, 20)] = h.subscription(topics, i)
    assignment = h.verify(subs, h.assign(subs)[0])
    for i in range(1, 20):
        consumer = canonical("c", i, 20)
        subs[consumer] = h.v2(subs[consumer].topics, assignment[consumer], 1, i)
    del subs["c10"]
    assignment, result = h.assign(subs)
    h.verify(subs, assignment)
    assert result.sticky


@both_kinds
@rack_configs
def test_reassignment_after_one_consumer_added(kind: str, rack_config: str) -> None:
    # Kafka: testReassignmentAfterOneConsumerAdded
    h = Harness(kind, rack_config)
    h.add_topic("topic", 20)
    subs = {canonical("c", i, 10): h.subscription(["topic"], i) for i in range(1, 10)}
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    h.verify(subs, assignment)
    subs[canonical("c", 10, 10)] = h.subscription(["topic"], 10)
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    h.verify(subs, assignment)


@both_kinds
@rack_configs
def test_same_subscriptions(kind: str, rack_config: str) -> None:
    # Kafka: testSameSubscriptions
    h = Harness(kind, rack_config)
    for i in range(1, 15):
        h.add_topic(canonical("t", i, 15), i)
    topics = [canonical("t", j, 15) for j in range(1, 15)]
    subs = {canonical("c", i, 9): h.subscription(topics, i) for i in range(1, 9)}
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    assignment = h.verify(subs, assignment)
    for i in range(1, 9):
        consumer = canonical("c", i, 9)
        subs[consumer] = h.v2(topics, assignment[consumer], 1, i)
    del subs[canonical("c", 5, 9)]
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    h.verify(subs, assignment)


@both_kinds
def test_subscription_not_equal_and_assign_same_partition_with_3_generation(kind: str) -> None:
    # Kafka: testSubscriptionNotEqualAndAssignSamePartitionWith3Generation
    h = Harness(kind)
    h.add_topic("topic", 6)
    h.add_topic("topic1", 1)
    for g1, g2, g3 in [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)]:
        subs = {
            "consumer1": h.v2(["topic"], [tp("topic", 0), tp("topic", 2)], g1, 0),
            "consumer2": h.v2(["topic"], [tp("topic", 1), tp("topic", 2), tp("topic", 3)], g2, 1),
            "consumer3": h.v2(["topic"], [tp("topic", 2), tp("topic", 4), tp("topic", 5)], g3, 2),
            "consumer4": h.v2(["topic1"], [tp("topic1", 0)], 2, 3),
        }
        assignment, _ = h.assign(subs)
        everything = [p for partitions in assignment.values() for p in partitions]
        assert len(everything) == len(set(everything))
        assert all(1 <= len(p) <= 2 for p in assignment.values())


@both_kinds
@rack_configs
def test_new_subscription(kind: str, rack_config: str) -> None:
    # Kafka: testNewSubscription
    h = Harness(kind, rack_config)
    for i in range(1, 5):
        h.add_topic(canonical("t", i, 5), 1)
    subs: dict[str, Subscription] = {}
    for i in range(3):
        topics = [canonical("t", j, 5) for j in range(i, 3 * i - 1)]
        subs[canonical("c", i, 3)] = h.subscription(topics, i)
    h.verify(subs, h.assign(subs)[0])
    old = subs["c0"]
    subs["c0"] = Subscription([*old.topics, canonical("t", 1, 5)], rack_id=old.rack_id)
    assignment, result = h.assign(subs)
    h.verify(subs, assignment)
    assert result.sticky


@both_kinds
@rack_configs
def test_move_existing_assignments(kind: str, rack_config: str) -> None:
    # Kafka: testMoveExistingAssignments
    h = Harness(kind, rack_config)
    for i in range(1, 7):
        h.add_topic(f"topic{i}", 1)
    subs = {
        "consumer1": h.v2(["topic1", "topic2"], [tp("topic1", 0)], 1, 0),
        "consumer2": h.v2(
            ["topic1", "topic2", "topic3", "topic4"], [tp("topic2", 0), tp("topic3", 0)], 1, 1
        ),
        "consumer3": h.v2(
            ["topic2", "topic3", "topic4", "topic5", "topic6"],
            [tp("topic4", 0), tp("topic5", 0), tp("topic6", 0)],
            1,
            2,
        ),
    }
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership is None
    h.verify(subs, assignment)


@both_kinds
@rack_configs
def test_stickiness(kind: str, rack_config: str) -> None:
    # Kafka: testStickiness
    h = Harness(kind, rack_config)
    h.add_topic("topic1", 3)
    subs = {f"consumer{i + 1}": h.subscription(["topic1"], i) for i in range(4)}
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    assignment = h.verify(subs, assignment)
    assert all(len(p) <= 1 for p in assignment.values())
    first = {c: p[0] for c, p in assignment.items() if p}

    del subs["consumer1"]
    for i in (2, 3, 4):
        subs[f"consumer{i}"] = h.v2(["topic1"], assignment[f"consumer{i}"], 1, i - 1)
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    assignment = h.verify(subs, assignment)
    for consumer, partitions in assignment.items():
        assert len(partitions) == 1
        assert consumer not in first or first[consumer] in partitions


@both_kinds
@rack_configs
def test_assignment_updated_for_deleted_topic(kind: str, rack_config: str) -> None:
    # Kafka: testAssignmentUpdatedForDeletedTopic
    h = Harness(kind, rack_config)
    h.add_topic("topic1", 1)
    h.add_topic("topic3", 100)
    subs = {"consumer": h.subscription(["topic1", "topic2", "topic3"], 0)}
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    assert len(assignment["consumer"]) == 101


@both_kinds
@rack_configs
def test_no_exception_thrown_when_only_subscribed_topic_deleted(
    kind: str, rack_config: str
) -> None:
    # Kafka: testNoExceptionThrownWhenOnlySubscribedTopicDeleted
    h = Harness(kind, rack_config)
    h.add_topic("topic", 3)
    subs = {"consumer": h.subscription(["topic"], 0)}
    assignment, _ = h.assign(subs)
    subs["consumer"] = h.v2(["topic"], assignment["consumer"], 1, 0)
    h.remove_topic("topic")
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {}
    assert assignment == {"consumer": []}


@both_kinds
@rack_configs
def test_reassignment_with_random_subscriptions_and_changes(kind: str, rack_config: str) -> None:
    # Kafka: testReassignmentWithRandomSubscriptionsAndChanges (seeded, 8 rounds instead of 100)
    rng = random.Random(f"{kind}-{rack_config}")

    def random_sublist(items: list[str]) -> list[str]:
        selected = list(items)
        for _ in range(rng.randrange(len(items))):
            selected.pop(rng.randrange(len(selected)))
        return sorted(selected)

    for _ in range(8):
        h = Harness(kind, rack_config)
        num_topics = 10 + rng.randrange(10)
        topics = [canonical("t", i, 20) for i in range(num_topics)]
        for i, topic in enumerate(topics):
            h.add_topic(topic, i + 1)
        num_consumers = 20 + rng.randrange(20)
        subs = {
            canonical("c", i, 40): h.subscription(random_sublist(topics), i)
            for i in range(num_consumers)
        }
        assignment = h.verify(subs, h.assign(subs)[0])
        subs = {
            canonical("c", i, 40): h.v2(
                random_sublist(topics), assignment[canonical("c", i, 40)], 1, i
            )
            for i in range(num_consumers)
        }
        assignment, result = h.assign(subs)
        h.verify(subs, assignment)
        assert result.sticky


@both_kinds
@rack_configs
def test_all_consumers_reach_expected_quota_and_are_considered_filled(
    kind: str, rack_config: str
) -> None:
    # Kafka: testAllConsumersReachExpectedQuotaAndAreConsideredFilled
    h = Harness(kind, rack_config)
    h.add_topic("topic", 4)
    subs = {
        "consumer1": h.v2(["topic"], [tp("topic", 0), tp("topic", 1)], 1, 0),
        "consumer2": h.v2(["topic"], [tp("topic", 2)], 1, 1),
        "consumer3": h.v2(["topic"], [], 1, 2),
    }
    assignment, result = h.assign(subs)
    assert assignment == {
        "consumer1": [tp("topic", 0), tp("topic", 1)],
        "consumer2": [tp("topic", 2)],
        "consumer3": [tp("topic", 3)],
    }
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
@pytest.mark.parametrize("stale", [9, -1])
def test_owned_partitions_are_invalidated_for_consumer_with_stale_or_no_generation(
    kind: str, rack_config: str, stale: int
) -> None:
    # Kafka: testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration (stale = 9)
    # and ...WithNoGeneration (stale = DEFAULT_GENERATION)
    h = Harness(kind, rack_config)
    h.add_topic("topic", 3)
    h.add_topic("topic2", 3)
    both = ["topic", "topic2"]
    owned = [tp("topic", 0), tp("topic", 2), tp("topic2", 1)]
    subs = {"consumer1": h.v2(both, owned, 10, 0), "consumer2": h.v2(both, owned, stale, 1)}
    assignment, result = h.assign(subs)
    assert set(assignment["consumer1"]) == set(owned)
    assert set(assignment["consumer2"]) == {tp("topic", 1), tp("topic2", 0), tp("topic2", 2)}
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_partitions_transferring_ownership_include_multiply_claimed(
    kind: str, rack_config: str
) -> None:
    # Kafka: testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumers
    # InSameGeneration
    h = Harness(kind, rack_config)
    h.add_topic("topic", 3)
    subs = {
        "consumer1": h.v2(["topic"], [tp("topic", 0), tp("topic", 1)], 1, 0),
        "consumer2": h.v2(["topic"], [tp("topic", 0), tp("topic", 2)], 1, 1),
        "consumer3": h.v2(["topic"], [], 1, 2),
    }
    assignment, result = h.assign(subs)
    assert result.partitions_transferring_ownership == {tp("topic", 0): "consumer3"}
    assert h.verify(subs, assignment) == {
        "consumer1": [tp("topic", 1)],
        "consumer2": [tp("topic", 2)],
        "consumer3": [tp("topic", 0)],
    }


@both_kinds
@rack_configs
def test_ensure_partitions_assigned_to_highest_generation(kind: str, rack_config: str) -> None:
    # Kafka: testEnsurePartitionsAssignedToHighestGeneration
    h = Harness(kind, rack_config)
    for topic in ("topic", "topic2", "topic3"):
        h.add_topic(topic, 3)
    three = ["topic", "topic2", "topic3"]
    subs = {
        "consumer1": h.v2(three, [tp("topic", 0), tp("topic2", 0), tp("topic3", 0)], 10, 0),
        "consumer2": h.v2(three, [tp("topic", 1), tp("topic2", 1), tp("topic3", 1)], 9, 1),
        "consumer3": h.v2(three, [tp("topic2", 1), tp("topic3", 0), tp("topic3", 2)], 8, 1),
    }
    assignment, result = h.assign(subs)
    assert set(assignment["consumer1"]) == {tp("topic", 0), tp("topic2", 0), tp("topic3", 0)}
    assert set(assignment["consumer2"]) == {tp("topic", 1), tp("topic2", 1), tp("topic3", 1)}
    assert set(assignment["consumer3"]) == {tp("topic", 2), tp("topic2", 2), tp("topic3", 2)}
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_no_reassignment_on_current_members(kind: str, rack_config: str) -> None:
    # Kafka: testNoReassignmentOnCurrentMembers
    h = Harness(kind, rack_config)
    for topic in ("topic", "topic1", "topic2", "topic3"):
        h.add_topic(topic, 3)
    four = ["topic", "topic2", "topic3", "topic1"]
    subs = {
        "consumer1": h.v2(four, [], -1, 0),
        "consumer2": h.v2(four, [tp("topic", 0), tp("topic2", 0), tp("topic1", 0)], 9, 1),
        "consumer3": h.v2(four, [tp("topic3", 2), tp("topic2", 2), tp("topic1", 1)], 8, 2),
        "consumer4": h.v2(four, [tp("topic3", 1), tp("topic", 1), tp("topic", 2)], 7, 3),
    }
    assignment, result = h.assign(subs)
    assert set(assignment["consumer1"]) == {tp("topic1", 2), tp("topic2", 1), tp("topic3", 0)}
    assert result.partitions_transferring_ownership == {}


@both_kinds
@rack_configs
def test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation(
    kind: str, rack_config: str
) -> None:
    # Kafka: testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration
    h = Harness(kind, rack_config)
    h.add_topic("topic", 3)
    h.add_topic("topic2", 3)
    both = ["topic", "topic2"]
    subs = {
        "consumer1": h.v2(both, [tp("topic", 0), tp("topic2", 1), tp("topic", 1)], 10, 0),
        "consumer2": h.v2(both, [tp("topic", 0), tp("topic2", 1), tp("topic2", 2)], 8, 1),
    }
    assignment, result = h.assign(subs)
    assert set(assignment["consumer1"]) == {tp("topic", 0), tp("topic2", 1), tp("topic", 1)}
    assert set(assignment["consumer2"]) == {tp("topic", 2), tp("topic2", 2), tp("topic2", 0)}
    assert result.partitions_transferring_ownership == {}


@both_kinds
@consumer_rack
def test_large_assignment_with_multiple_consumers_leaving_and_random_subscription(
    kind: str, has_rack: bool
) -> None:
    # Kafka: testLargeAssignmentWithMultipleConsumersLeavingAndRandomSubscription (seeded)
    rng = random.Random(f"{kind}-{has_rack}")
    h = harness_for_consumer_rack(kind, has_rack)
    for i in range(40):
        h.add_topic(canonical("t", i, 40), rng.randrange(10) + 1)
    subs: dict[str, Subscription] = {}
    for i in range(200):
        topics = [canonical("t", rng.randrange(40), 40) for _ in range(rng.randrange(20))]
        subs[canonical("c", i, 200)] = h.subscription(topics, i)
    assignment = h.verify(subs, h.assign(subs)[0])
    for i in range(1, 200):
        consumer = canonical("c", i, 200)
        subs[consumer] = h.v2(subs[consumer].topics, assignment[consumer], 1, i)
    for _ in range(50):
        subs.pop(canonical("c", rng.randrange(200), 200), None)
    assignment, result = h.assign(subs)
    h.verify(subs, assignment)
    assert result.sticky


# --- StickyAssignorTest / CooperativeStickyAssignorTest specifics ---------------------


@both_kinds
@rack_configs
@pytest.mark.parametrize("partitions", [3, 4])
def test_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation(
    kind: str, rack_config: str, partitions: int
) -> None:
    # Kafka: {Sticky,CooperativeSticky}AssignorTest.testAllConsumersHaveOwnedPartitionInvalidated
    # WhenClaimedByMultipleConsumersInSameGenerationWith{Equal,Unequal}PartitionsPerConsumer
    h = Harness(kind, rack_config)
    h.add_topic("topic", partitions)
    subs = {
        "consumer1": h.v2(["topic"], [tp("topic", 0), tp("topic", 1)], 1, 0),
        "consumer2": h.v2(["topic"], [tp("topic", 0), tp("topic", 2)], 1, 1),
        "consumer3": h.v2(["topic"], [], 1, 2),
    }
    assignment, _ = h.assign(subs)
    expected_c1 = [tp("topic", 1)] if partitions == 3 else [tp("topic", 1), tp("topic", 3)]
    assert assignment["consumer1"] == expected_c1
    assert assignment["consumer2"] == [tp("topic", 2)]
    # cooperative: topic-0 stays unassigned until both claimants have revoked it
    assert assignment["consumer3"] == ([tp("topic", 0)] if kind == "sticky" else [])
    assert fully_balanced(h.verify(subs, assignment))


@rack_configs
@pytest.mark.parametrize("all_equal", [True, False])
def test_sticky_assignment_with_multiple_generations_1(rack_config: str, all_equal: bool) -> None:
    # Kafka: StickyAssignorTest.testAssignmentWithMultipleGenerations1
    h = Harness("sticky", rack_config)
    both = ["topic", "topic2"]
    c2_topics = both if all_equal else ["topic"]
    h.add_topic("topic", 6)
    h.add_topic("topic2", 6)
    subs = {
        "consumer1": h.subscription(both, 0),
        "consumer2": h.subscription(c2_topics, 1),
        "consumer3": h.subscription(both, 2),
    }
    assignment = h.verify(subs, h.assign(subs)[0])
    r1 = dict(assignment)
    assert [len(r1[c]) for c in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]

    subs["consumer1"] = h.v2(both, r1["consumer1"], 1, 0)
    subs["consumer2"] = h.v2(c2_topics, r1["consumer2"], 1, 1)
    del subs["consumer3"]
    r2 = h.verify(subs, h.assign(subs)[0])
    assert len(r2["consumer1"]) == 6 and len(r2["consumer2"]) == 6
    if all_equal:
        assert set(r1["consumer1"]) <= set(r2["consumer1"])
    assert set(r1["consumer2"]) <= set(r2["consumer2"])
    assert set(r2["consumer2"]) & set(r1["consumer3"])

    del subs["consumer1"]
    subs["consumer2"] = h.v2(c2_topics, r2["consumer2"], 2, 1)
    subs["consumer3"] = h.v2(both, r1["consumer3"], 1, 2)
    r3 = h.verify(subs, h.assign(subs)[0])
    assert len(r3["consumer2"]) == 6 and len(r3["consumer3"]) == 6
    assert not set(r3["consumer2"]) & set(r3["consumer3"])


@rack_configs
@pytest.mark.parametrize("all_equal", [True, False])
def test_sticky_assignment_with_multiple_generations_2(rack_config: str, all_equal: bool) -> None:
    # Kafka: StickyAssignorTest.testAssignmentWithMultipleGenerations2
    h = Harness("sticky", rack_config)
    three = ["topic", "topic2", "topic3"]
    c1_topics = three if all_equal else ["topic"]
    c3_topics = three if all_equal else ["topic", "topic2"]
    for topic in three:
        h.add_topic(topic, 4)
    subs = {
        "consumer1": h.subscription(c1_topics, 0),
        "consumer2": h.subscription(three, 1),
        "consumer3": h.subscription(c3_topics, 2),
    }
    r1 = h.verify(subs, h.assign(subs)[0])
    assert all(len(p) == 4 for p in r1.values())

    del subs["consumer1"], subs["consumer3"]
    subs["consumer2"] = h.v2(three, r1["consumer2"], 1, 1)
    r2 = h.verify(subs, h.assign(subs)[0])
    assert len(r2["consumer2"]) == 12 and set(r1["consumer2"]) <= set(r2["consumer2"])

    subs["consumer1"] = h.v2(c1_topics, r1["consumer1"], 1, 0)
    subs["consumer2"] = h.v2(three, r2["consumer2"], 2, 1)
    subs["consumer3"] = h.v2(c3_topics, r1["consumer3"], 1, 2)
    r3 = h.verify(subs, h.assign(subs)[0])
    assert all(len(p) == 4 for p in r3.values())


@rack_configs
@pytest.mark.parametrize("all_equal", [True, False])
def test_sticky_assignment_with_conflicting_previous_generations(
    rack_config: str, all_equal: bool
) -> None:
    # Kafka: StickyAssignorTest.testAssignmentWithConflictingPreviousGenerations
    h = Harness("sticky", rack_config)
    three = ["topic", "topic2", "topic3"]
    for topic in three:
        h.add_topic(topic, 4)
    c1_topics = three if all_equal else ["topic"]
    c2_topics = three if all_equal else ["topic", "topic2"]
    t = [tp("topic", p) for p in range(4)]
    t2 = [tp("topic2", p) for p in range(4)]
    t3 = [tp("topic3", p) for p in range(4)]
    c1_owned = [t[0], t[1], t[2], t2[2], t2[3], t3[0]] if all_equal else t
    c2_owned = [t[0], t[1], *t2]
    c3_owned = [t[2], t[3], *t3]
    subs = {
        "consumer1": h.v2(c1_topics, c1_owned, 1, 0),
        "consumer2": h.v2(c2_topics, c2_owned, 2, 1),
        "consumer3": h.v2(three, c3_owned, 2, 2),
    }
    assignment, _ = h.assign(subs)
    assert all(len(p) == 4 for p in assignment.values())
    assert set(assignment["consumer2"]) <= set(c2_owned)
    assert set(assignment["consumer3"]) <= set(c3_owned)
    assert fully_balanced(h.verify(subs, assignment))


@rack_configs
def test_sticky_schema_backward_compatibility(rack_config: str) -> None:
    # Kafka: StickyAssignorTest.testSchemaBackwardCompatibility (V0 user data, no generation)
    h = Harness("sticky", rack_config)
    h.add_topic("topic", 3)
    subs = {
        "consumer1": h.v2(["topic"], [tp("topic", 0), tp("topic", 2)], 1, 0),
        "consumer2": Subscription(
            ["topic"], encode_sticky_user_data([tp("topic", 1)], None), rack_id=h.consumer_rack(1)
        ),
        "consumer3": h.subscription(["topic"], 2),
    }
    assignment, _ = h.assign(subs)
    assert all(len(p) == 1 for p in assignment.values())
    assert set(assignment["consumer1"]) <= {tp("topic", 0), tp("topic", 2)}
    assert assignment["consumer2"] == [tp("topic", 1)]


@both_kinds
def test_assignor_with_old_version_subscriptions(kind: str) -> None:
    # Kafka: {Sticky,CooperativeSticky}AssignorTest.testAssignorWithOldVersionSubscriptions
    h = Harness(kind)
    h.add_topic("topic1", 3)
    if kind == "sticky":
        # V0: user data only; V1: user data + owned partitions, no generation
        c1 = Subscription(["topic1"], encode_sticky_user_data([tp("topic1", 0)], 1))
        c2 = Subscription(
            ["topic1"], encode_sticky_user_data([tp("topic1", 1)], 1), [tp("topic1", 1)]
        )
    else:
        # V1: owned partitions, generation in the user data
        coop = CooperativeStickyAssignor()
        coop.on_assignment(Assignment([]), ConsumerGroupMetadata("group", 1, "consumer1"))
        user_data = coop.subscription_user_data({"topic1"})
        c1 = Subscription(["topic1"], user_data, [tp("topic1", 0)])
        c2 = Subscription(["topic1"], user_data, [tp("topic1", 1)])
    subs = {"consumer1": c1, "consumer2": c2, "consumer3": h.v2(["topic1"], [], 1, 2)}
    assignment, _ = h.assign(subs)
    assert assignment == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1)],
        "consumer3": [tp("topic1", 2)],
    }


# --- Javadoc examples ----------------------------------------------------------------


def test_sticky_javadoc_example_1() -> None:
    # Kafka: StickyAssignor javadoc, example 1. Fresh: C0 [t0p0, t1p1, t3p0],
    # C1 [t0p1, t2p0, t3p1], C2 [t1p0, t2p1] as the javadoc says. After C1 leaves, the
    # javadoc's C0 [t0p0, t1p1, t3p0, t2p0] / C2 [t1p0, t2p1, t0p1, t3p1] predates the
    # constrained algorithm; Kafka's code now gives C0 +t0p1, C2 +t2p0, +t3p1.
    h = Harness("sticky")
    topics = ["t0", "t1", "t2", "t3"]
    for topic in topics:
        h.add_topic(topic, 2)
    subs = {c: h.subscription(topics, i) for i, c in enumerate(["C0", "C1", "C2"])}
    assignment, _ = h.assign(subs)
    assert {c: sorted(p) for c, p in assignment.items()} == {
        "C0": [tp("t0", 0), tp("t1", 1), tp("t3", 0)],
        "C1": [tp("t0", 1), tp("t2", 0), tp("t3", 1)],
        "C2": [tp("t1", 0), tp("t2", 1)],
    }
    subs = {c: h.v2(topics, assignment[c], 1, 0) for c in ("C0", "C2")}
    assignment, _ = h.assign(subs)
    assert {c: sorted(p) for c, p in assignment.items()} == {
        "C0": [tp("t0", 0), tp("t0", 1), tp("t1", 1), tp("t3", 0)],
        "C2": [tp("t1", 0), tp("t2", 0), tp("t2", 1), tp("t3", 1)],
    }


@both_kinds
def test_sticky_javadoc_example_2(kind: str) -> None:
    # Kafka: StickyAssignor javadoc, example 2 (differing subscriptions: the general path)
    h = Harness(kind)
    h.add_topic("t0", 1)
    h.add_topic("t1", 2)
    h.add_topic("t2", 3)
    subs = {
        "C0": h.subscription(["t0"], 0),
        "C1": h.subscription(["t0", "t1"], 1),
        "C2": h.subscription(["t0", "t1", "t2"], 2),
    }
    assignment, _ = h.assign(subs)
    assert {c: sorted(p) for c, p in assignment.items()} == {
        "C0": [tp("t0", 0)],
        "C1": [tp("t1", 0), tp("t1", 1)],
        "C2": [tp("t2", 0), tp("t2", 1), tp("t2", 2)],
    }
    del subs["C0"]
    for i, c in ((1, "C1"), (2, "C2")):
        subs[c] = h.v2(subs[c].topics, assignment[c], 1, i)
    assignment, _ = h.assign(subs)
    assignment = h.verify(subs, assignment)
    assert {c: sorted(p) for c, p in assignment.items()} == {
        "C1": [tp("t0", 0), tp("t1", 0), tp("t1", 1)],
        "C2": [tp("t2", 0), tp("t2", 1), tp("t2", 2)],
    }
