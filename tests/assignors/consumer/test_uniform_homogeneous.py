"""The uniform assignor, homogeneous subscriptions: Kafka 4.0's cases, exact outputs.

Ported from Kafka's ``OptimizedUniformAssignmentBuilderTest`` (the 4.0 test of
``UniformHomogeneousAssignmentBuilder``). Kafka puts the members in a TreeMap;
for the ids A, B, C that order equals the Java HashMap order used here.
Current targets built with Kafka's ``mkOrderedAssignment`` keep their topic
order here (dict order); partitions of a topic iterate in Java HashSet order.
"""

from __future__ import annotations

import pytest

from regroup.assignors.consumer.api import SubscriptionType
from regroup.assignors.consumer.uniform import UniformAssignor
from regroup.assignors.errors import PartitionAssignorError
from regroup.model import Uuid
from tests.assignors.consumer.consumer_assignor_helpers import (
    T1,
    T2,
    T3,
    group,
    member,
    plain,
    topics,
)

HOMOGENEOUS = SubscriptionType.HOMOGENEOUS
assignor = UniformAssignor()


def test_name() -> None:
    assert assignor.name == "uniform"


def test_empty_group_lists_nobody() -> None:
    assert assignor.assign(group({}, HOMOGENEOUS), topics({T1: 3})).members == {}


def test_one_member_no_topic_subscription() -> None:
    # Kafka: testOneMemberNoTopicSubscription
    result = assignor.assign(group({"A": member([])}, HOMOGENEOUS), topics({T1: 3}))
    assert result.members == {}


def test_one_member_subscribed_to_nonexistent_topic() -> None:
    # Kafka: testOneMemberSubscribedToNonexistentTopic
    with pytest.raises(PartitionAssignorError):
        assignor.assign(group({"A": member([T2])}, HOMOGENEOUS), topics({T1: 3}))


def test_first_assignment_two_members_two_topics() -> None:
    # Kafka: testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks. The topic set
    # iterates T3 before T1 (Java HashSet order), and the extra partition goes to
    # the last member.
    members = {"A": member([T1, T3]), "B": member([T1, T3])}
    result = assignor.assign(group(members, HOMOGENEOUS), topics({T1: 3, T3: 2}))
    assert plain(result) == {"A": {T3: {0, 1}}, "B": {T1: {0, 1, 2}}}


def test_first_assignment_more_members_than_partitions() -> None:
    # Kafka: testFirstAssignmentNumMembersGreaterThanTotalNumPartitions
    members = {"A": member([T3]), "B": member([T3]), "C": member([T3])}
    result = assignor.assign(group(members, HOMOGENEOUS), topics({T3: 2}))
    assert plain(result) == {"A": {}, "B": {T3: {0}}, "C": {T3: {1}}}


def test_validity_and_balance_for_large_sample() -> None:
    # Kafka: testValidityAndBalanceForLargeSampleSet (99 topics x 3, 49 members)
    ids = [Uuid(i, i * 7919) for i in range(1, 100)]
    members = {f"member{i}": member(ids) for i in range(1, 50)}
    result = plain(assignor.assign(group(members, HOMOGENEOUS), topics(dict.fromkeys(ids, 3))))
    sizes = [sum(len(p) for p in target.values()) for target in result.values()]
    assert sum(sizes) == 297 and max(sizes) - min(sizes) <= 1
    seen = [(t, p) for target in result.values() for t, parts in target.items() for p in parts]
    assert len(seen) == len(set(seen)) == 297


def test_reassignment_two_members_two_topics_unbalanced() -> None:
    # Kafka: testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment
    members = {
        "A": member([T1, T2], (T1, [0, 1]), (T2, [0, 1])),
        "B": member([T1, T2], (T1, [2]), (T2, [2])),
    }
    result = assignor.assign(group(members, HOMOGENEOUS), topics({T1: 3, T2: 3}))
    assert plain(result) == {"A": {T1: {0, 1}, T2: {0}}, "B": {T1: {2}, T2: {1, 2}}}


def test_reassignment_when_partitions_are_added() -> None:
    # Kafka: testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics
    members = {
        "A": member([T1, T2], (T1, [0, 2]), (T2, [0])),
        "B": member([T1, T2], (T1, [1]), (T2, [1, 2])),
    }
    result = assignor.assign(group(members, HOMOGENEOUS), topics({T1: 6, T2: 5}))
    assert plain(result) == {
        "A": {T1: {0, 2}, T2: {0, 3, 4}},
        "B": {T1: {1, 3, 4, 5}, T2: {1, 2}},
    }


def test_reassignment_when_one_member_added() -> None:
    # Kafka: testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics
    members = {
        "A": member([T1, T2], (T1, [0, 2]), (T2, [0])),
        "B": member([T1, T2], (T1, [1]), (T2, [1, 2])),
        "C": member([T1, T2]),
    }
    result = assignor.assign(group(members, HOMOGENEOUS), topics({T1: 3, T2: 3}))
    assert plain(result) == {
        "A": {T1: {0, 2}},
        "B": {T1: {1}, T2: {1}},
        "C": {T2: {0, 2}},
    }


def test_reassignment_when_one_member_removed() -> None:
    # Kafka: testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics
    members = {
        "A": member([T1, T2], (T1, [0]), (T2, [0])),
        "B": member([T1, T2], (T1, [1]), (T2, [1])),
    }
    result = assignor.assign(group(members, HOMOGENEOUS), topics({T1: 3, T2: 3}))
    assert plain(result) == {"A": {T1: {0}, T2: {0, 2}}, "B": {T1: {1, 2}, T2: {1}}}


def test_reassignment_when_one_subscription_removed() -> None:
    # Kafka: testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics
    members = {
        "A": member([T2], (T1, [0]), (T2, [0])),
        "B": member([T2], (T1, [1]), (T2, [1])),
    }
    result = assignor.assign(group(members, HOMOGENEOUS), topics({T1: 2, T2: 2}))
    assert plain(result) == {"A": {T2: {0}}, "B": {T2: {1}}}


def test_reassignment_stickiness_when_already_balanced() -> None:
    # Kafka: testReassignmentStickinessWhenAlreadyBalanced (KAFKA-18688). The topic
    # set is the first member's ({T1}); A and C hold the two extra partitions and
    # nothing moves.
    members = {
        "A": member([T1], (T1, [0, 3])),
        "B": member([T1, T2], (T1, [1])),
        "C": member([T1, T2], (T1, [2, 4])),
    }
    result = assignor.assign(group(members, HOMOGENEOUS), topics({T1: 5}))
    assert plain(result) == {"A": {T1: {0, 3}}, "B": {T1: {1}}, "C": {T1: {2, 4}}}
    # Copy-on-write, as Kafka: untouched members keep their very mapping.
    for member_id, target in result.members.items():
        assert target.partitions is members[member_id].assigned_partitions


def test_over_quota_member_keeps_its_topics_in_mapping_order() -> None:
    # The member's mapping order plays the Java map's iteration order: with T2
    # first, A keeps all of T2 and one partition of T1.
    members = {
        "A": member([T1, T2], (T2, [0, 1]), (T1, [0, 1])),
        "B": member([T1, T2], (T1, [2]), (T2, [2])),
    }
    result = assignor.assign(group(members, HOMOGENEOUS), topics({T1: 3, T2: 3}))
    assert plain(result) == {"A": {T2: {0, 1}, T1: {0}}, "B": {T1: {1, 2}, T2: {2}}}


def test_over_quota_partitions_trimmed_in_java_hash_set_order() -> None:
    # A HashSet of 3 integers has 16 buckets: 17 sits in bucket 1, before 3 and 20
    # (buckets 3 and 4). With a quota of 2 (24 partitions, 12 members) A keeps the
    # first two in that order and gives up 20.
    members = {"A": member([T1], (T1, [3, 17, 20]))}
    members.update({f"M{i:02d}": member([T1]) for i in range(11)})
    result = assignor.assign(group(members, HOMOGENEOUS), topics({T1: 24}))
    assert plain(result)["A"] == {T1: {3, 17}}


def test_unknown_partition_numbers_are_not_kept() -> None:
    members = {"A": member([T1], (T1, [0, 7])), "B": member([T1], (T1, [1]))}
    result = plain(assignor.assign(group(members, HOMOGENEOUS), topics({T1: 2})))
    assert result == {"A": {T1: {0}}, "B": {T1: {1}}}


def test_member_order_is_java_hash_map_order() -> None:
    # "consumer1".."consumer4" iterate 4, 3, 2, 1 in a Java HashMap: with 3
    # partitions and 4 fresh members, the member iterated first gets nothing.
    members = {f"consumer{i}": member([T1]) for i in range(1, 5)}
    result = plain(assignor.assign(group(members, HOMOGENEOUS), topics({T1: 3})))
    assert result == {
        "consumer4": {},
        "consumer3": {T1: {0}},
        "consumer2": {T1: {1}},
        "consumer1": {T1: {2}},
    }
