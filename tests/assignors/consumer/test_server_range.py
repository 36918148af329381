"""The KIP-848 server-side range assignor: Kafka 4.0's cases, exact outputs.

Ported from Kafka's group-coordinator ``RangeAssignorTest`` (4.0, after the
KAFKA-16944 rewrite). Kafka draws its topic ids at random there; the outputs do
not depend on them.
"""

from __future__ import annotations

import pytest

from regroup.assignors.consumer.api import MemberSubscriptionSpec, SubscriptionType
from regroup.assignors.consumer.range_assignor import RangeAssignor, sorted_member_ids
from regroup.assignors.errors import PartitionAssignorError
from regroup.model import Uuid
from tests.assignors.consumer.consumer_assignor_helpers import (
    T1,
    T2,
    T3,
    Plain,
    group,
    member,
    plain,
    topics,
)

HOMOGENEOUS = SubscriptionType.HOMOGENEOUS
HETEROGENEOUS = SubscriptionType.HETEROGENEOUS
assignor = RangeAssignor()


def run(
    members: dict[str, MemberSubscriptionSpec], partitions: dict[Uuid, int], kind: SubscriptionType
) -> Plain:
    return plain(assignor.assign(group(members, kind), topics(partitions)))


def test_name_and_empty_group() -> None:
    assert assignor.name == "range"
    assert assignor.assign(group({}), topics({T1: 1})).members == {}


def test_one_member_no_topic() -> None:
    # Kafka: testOneMemberNoTopic -- the member is listed, with nothing.
    assert run({"A": member([])}, {T1: 3}, HOMOGENEOUS) == {"A": {}}


def test_one_member_subscribed_to_nonexistent_topic() -> None:
    # Kafka: testOneMemberSubscribedToNonExistentTopic
    with pytest.raises(PartitionAssignorError):
        run({"A": member([T2])}, {T1: 3}, HOMOGENEOUS)
    with pytest.raises(PartitionAssignorError):
        run({"A": member([T1]), "B": member([T2])}, {T1: 3}, HETEROGENEOUS)


def test_first_assignment_two_members_two_topics_same_subscriptions() -> None:
    # Kafka: testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions
    members = {"A": member([T1, T3]), "B": member([T1, T3])}
    assert run(members, {T1: 3, T3: 2}, HOMOGENEOUS) == {
        "A": {T1: {0, 1}, T3: {0}},
        "B": {T1: {2}, T3: {1}},
    }


def test_first_assignment_three_members_three_topics_different_subscriptions() -> None:
    # Kafka: testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions
    members = {"A": member([T1, T2]), "B": member([T3]), "C": member([T2, T3])}
    assert run(members, {T1: 3, T2: 3, T3: 2}, HETEROGENEOUS) == {
        "A": {T1: {0, 1, 2}, T2: {0, 1}},
        "B": {T3: {0}},
        "C": {T2: {2}, T3: {1}},
    }


def test_first_assignment_more_members_than_partitions() -> None:
    # Kafka: testFirstAssignmentNumMembersGreaterThanNumPartitions
    members = {"A": member([T1, T3]), "B": member([T1, T3]), "C": member([T1, T3])}
    assert run(members, {T1: 3, T3: 2}, HOMOGENEOUS) == {
        "A": {T1: {0}, T3: {0}},
        "B": {T1: {1}, T3: {1}},
        "C": {T1: {2}},
    }


def test_static_membership() -> None:
    # Kafka: testStaticMembership -- a static member rejoining under a new member id
    # gets the same partitions.
    before = {
        "A": member([T1], instance_id="instanceA"),
        "B": member([T1], instance_id="instanceB"),
    }
    first = run(before, {T1: 3}, HOMOGENEOUS)
    after = {"B": before["B"], "memberA1": member([T1], instance_id="instanceA")}
    second = run(after, {T1: 3}, HOMOGENEOUS)
    assert second["memberA1"] == first["A"] and second["B"] == first["B"]


def test_mixed_static_membership() -> None:
    # Kafka: testMixedStaticMembership
    before = {
        "A": member([T1], instance_id="instanceA"),
        "C": member([T1], instance_id="instanceC"),
        "B": member([T1]),
    }
    first = run(before, {T1: 5}, HOMOGENEOUS)
    after = {"B": before["B"], "C": before["C"], "memberA1": member([T1], instance_id="instanceA")}
    second = run(after, {T1: 5}, HOMOGENEOUS)
    assert second["memberA1"] == first["A"]
    assert second["B"] == first["B"] and second["C"] == first["C"]
    # Static members first (by instance id), then the dynamic one.
    assert first == {"A": {T1: {0, 1}}, "C": {T1: {2, 3}}, "B": {T1: {4}}}


def test_reassignment_more_members_than_partitions_when_one_member_added() -> None:
    # Kafka: testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded
    members = {
        "A": member([T1, T2], (T1, [0]), (T2, [0])),
        "B": member([T1, T2], (T1, [1]), (T2, [1])),
        "C": member([T1, T2]),
    }
    assert run(members, {T1: 2, T2: 2}, HOMOGENEOUS) == {
        "A": {T1: {0}, T2: {0}},
        "B": {T1: {1}, T2: {1}},
        "C": {},
    }


def test_reassignment_when_one_partition_added() -> None:
    # Kafka: testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics
    members = {
        "A": member([T1, T2], (T1, [0, 1]), (T2, [0, 1])),
        "B": member([T1, T2], (T1, [2]), (T2, [2])),
    }
    assert run(members, {T1: 4, T2: 4}, HOMOGENEOUS) == {
        "A": {T1: {0, 1}, T2: {0, 1}},
        "B": {T1: {2, 3}, T2: {2, 3}},
    }


def test_reassignment_when_one_member_added() -> None:
    # Kafka: testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics
    members = {
        "A": member([T1, T2], (T1, [0, 1]), (T2, [0, 1])),
        "B": member([T1, T2], (T1, [2]), (T2, [2])),
        "C": member([T1, T2]),
    }
    assert run(members, {T1: 3, T2: 3}, HOMOGENEOUS) == {
        "A": {T1: {0}, T2: {0}},
        "B": {T1: {1}, T2: {1}},
        "C": {T1: {2}, T2: {2}},
    }


def test_reassignment_when_one_member_and_one_partition_added() -> None:
    # Kafka: testReassignmentWhenOneMemberAddedAndOnePartitionAfterInitialAssignment
    # WithTwoMembersTwoTopics
    members = {
        "A": member([T1, T2], (T1, [0, 1]), (T2, [0, 1])),
        "B": member([T1, T2], (T1, [2]), (T2, [2])),
        "C": member([T1]),
    }
    assert run(members, {T1: 4, T2: 3}, HETEROGENEOUS) == {
        "A": {T1: {0, 1}, T2: {0, 1}},
        "B": {T1: {2}, T2: {2}},
        "C": {T1: {3}},
    }


def test_reassignment_when_one_member_removed() -> None:
    # Kafka: testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics
    members = {"B": member([T1, T2], (T1, [2]), (T2, [2]))}
    assert run(members, {T1: 3, T2: 3}, HOMOGENEOUS) == {
        "B": {T1: {0, 1, 2}, T2: {0, 1, 2}},
    }


def test_reassignment_when_multiple_subscriptions_removed() -> None:
    # Kafka: testReassignmentWhenMultipleSubscriptionsRemovedAfterInitialAssignment
    # WithThreeMembersTwoTopics
    members = {
        "A": member([T1], (T1, [0, 1, 2]), (T2, [0])),
        "B": member([T1, T2, T3], (T2, [1])),
        "C": member([T2], (T2, [2]), (T3, [0, 1])),
    }
    assert run(members, {T1: 3, T2: 3, T3: 2}, HETEROGENEOUS) == {
        "A": {T1: {0, 1}},
        "B": {T1: {2}, T2: {0, 1}, T3: {0, 1}},
        "C": {T2: {2}},
    }


def test_member_sort_is_static_first_then_java_string_order() -> None:
    members = {
        "m-b": member([], instance_id="i2"),
        "m-z": member([]),
        "m-a": member([], instance_id="i10"),
        "m-\U0001f600": member([]),
        "m-\uffff": member([]),
    }
    # Java compares UTF-16 units: the surrogate pair (0xD83D...) sorts before U+FFFF.
    assert sorted_member_ids(members) == ["m-a", "m-b", "m-z", "m-\U0001f600", "m-\uffff"]


def test_co_partitioned_topics_line_up_in_heterogeneous_groups() -> None:
    members = {"A": member([T1, T2]), "B": member([T1, T2]), "C": member([T3])}
    result = run(members, {T1: 5, T2: 5, T3: 4}, HETEROGENEOUS)
    assert result["A"] == {T1: {0, 1, 2}, T2: {0, 1, 2}}
    assert result["B"] == {T1: {3, 4}, T2: {3, 4}}
    assert result["C"] == {T3: {0, 1, 2, 3}}
