"""ConsumerGroupDescribe (KIP-848; Kafka ``GroupMetadataManager.consumerGroupDescribe``).

Per group id: the state, epochs, the assignor at work (the client-side one a
member runs, else the server-side one most members ask for, else the default),
and each member with its current and target assignment; topics carry their
names, and topics no longer in the metadata are left out. Members that use the
classic protocol are ``member_type`` 0 (ConsumerGroupDescribe v1, KIP-1099). An
empty group id answers INVALID_GROUP_ID; a missing group or a classic group
GROUP_ID_NOT_FOUND ("Group X is not a consumer group.").
"""

from __future__ import annotations

from collections.abc import Hashable

from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.group_member import Assignment
from regroup.coordinator.consumer.rebalance import server_assignor_name
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedAssignment,
    DescribedGroup,
    DescribedGroupMember,
    DescribedTopicPartitions,
)

__all__ = ["describe_group", "handle_describe"]


def handle_describe(
    state: GroupCoordinatorState, token: Hashable, req: ConsumerGroupDescribeRequest, now_ms: int
) -> CoordinatorResult:
    groups = tuple(describe_group(state, group_id) for group_id in req.group_ids)
    return CoordinatorResult().reply(token, ConsumerGroupDescribeResponse(groups))


def describe_group(state: GroupCoordinatorState, group_id: str) -> DescribedGroup:
    """One group of a ConsumerGroupDescribe response (``regroup replay`` prints it too)."""
    if not group_id:
        return DescribedGroup(ErrorCode.INVALID_GROUP_ID, group_id, "The group id is empty.")
    group = state.consumer_group(group_id)
    if group is None:
        return DescribedGroup(
            ErrorCode.GROUP_ID_NOT_FOUND, group_id, f"Group {group_id} is not a consumer group."
        )
    members = tuple(
        DescribedGroupMember(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
            subscribed_topic_regex=m.subscribed_topic_regex or None,
            assignment=_described(state, m.assigned_partitions),
            target_assignment=_described(state, group.target_of(m.member_id)),
            # ConsumerGroupDescribe v1 (Kafka 4.0, KIP-1099): 0 classic, 1 consumer.
            member_type=0 if m.use_classic_protocol else 1,
        )
        for m in (group.members[mid] for mid in sorted(group.members))
    )
    return DescribedGroup(
        error_code=ErrorCode.NONE,
        group_id=group_id,
        group_state=group.state_name(),
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=_assignor_name(state, group),
        members=members,
    )


def _assignor_name(state: GroupCoordinatorState, group: ConsumerGroup) -> str:
    in_flight = state.consumer.in_flight.get(group.group_id)
    if in_flight is not None:
        return in_flight.assignor
    return server_assignor_name(state, group)


def _described(state: GroupCoordinatorState, assignment: Assignment) -> DescribedAssignment:
    image = state.metadata
    topics = []
    for topic_id in sorted(assignment):
        topic = image.topic_by_id(topic_id)
        if topic is None or not assignment[topic_id]:
            continue
        topics.append(
            DescribedTopicPartitions(topic_id, topic.name, tuple(sorted(assignment[topic_id])))
        )
    return DescribedAssignment(tuple(topics))
