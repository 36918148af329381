"""DescribeGroups: the classic groups a request names (Kafka ``ClassicGroup.describe``).

An unknown group is described as Dead with no error; a classic group in Stable
lists its members with their Subscription bytes for the selected protocol and
their assignment, and names the protocol; in any other state the members come
without bytes and without a protocol. A KIP-848 group is not a classic group, so,
as in Kafka (``classicGroup(id)`` throws GroupIdNotFound), it is described as
Dead; ConsumerGroupDescribe describes it.
"""

from __future__ import annotations

from collections.abc import Hashable

from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_state import ClassicGroupState
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.errors import ErrorCode
from regroup.model.requests.admin import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)

__all__ = ["handle_describe_groups"]


def handle_describe_groups(
    state: GroupCoordinatorState, token: Hashable, request: DescribeGroupsRequest, now_ms: int
) -> CoordinatorResult:
    del now_ms
    described = []
    for group_id in request.groups:
        group = state.classic_group(group_id)
        if group is None:
            described.append(DescribedGroup(ErrorCode.NONE, group_id, ClassicGroupState.DEAD.value))
        else:
            described.append(_describe(group))
    return CoordinatorResult().reply(token, DescribeGroupsResponse(tuple(described)))


def _describe(group: ClassicGroup) -> DescribedGroup:
    stable = group.is_in(ClassicGroupState.STABLE) and group.protocol_name is not None
    members = []
    for member in group:
        members.append(
            DescribedGroupMember(
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
                member_metadata=member.metadata(group.protocol_name)
                if stable and group.protocol_name
                else b"",
                member_assignment=member.assignment if stable else b"",
            )
        )
    return DescribedGroup(
        error_code=ErrorCode.NONE,
        group_id=group.group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=tuple(members),
    )
