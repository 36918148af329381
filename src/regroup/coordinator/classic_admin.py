"""ListGroups (groups of both types) and DescribeGroups (classic groups).

ListGroups (Kafka ``GroupMetadataManager.listGroups``): every group, through
the ``Group`` protocol, filtered by state name and by type, both
case-insensitively; an empty filter keeps everything. The protocol type is the
classic group's (``""`` for a group that only stores offsets) and
``"consumer"`` for KIP-848 groups.

DescribeGroups (Kafka ``ClassicGroup.describe``): an unknown group is
described as Dead with no error; a classic group in Stable lists its members
with their Subscription bytes for the selected protocol and their assignment,
and names the protocol; in any other state the members come without bytes
and without a protocol. A KIP-848 group is not a classic group, so, as in
Kafka (``classicGroup(id)`` throws GroupIdNotFound), it is described as Dead;
ConsumerGroupDescribe describes it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from regroup.classic.group import ClassicGroup
from regroup.classic.group_state import ClassicGroupState
from regroup.coordinator.result import CoordinatorResult
from regroup.model.errors import ErrorCode
from regroup.model.requests.admin import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)

if TYPE_CHECKING:
    from regroup.coordinator.classic_manager import ClassicGroupManager

__all__ = ["handle_describe_groups", "handle_list_groups"]


def handle_list_groups(
    mgr: ClassicGroupManager, token: Hashable, request: ListGroupsRequest, now_ms: int
) -> CoordinatorResult:
    del now_ms
    states = {s.lower() for s in request.states_filter}
    types = {t.lower() for t in request.types_filter}
    listed = []
    for group_id, group in mgr.coordinator.groups.items():
        state = group.state_name()
        if states and state.lower() not in states:
            continue
        if types and group.group_type.lower() not in types:
            continue
        protocol_type = (
            (group.protocol_type or "") if isinstance(group, ClassicGroup) else "consumer"
        )
        listed.append(ListedGroup(group_id, protocol_type, state, group.group_type))
    return CoordinatorResult().reply(token, ListGroupsResponse(ErrorCode.NONE, tuple(listed)))


def handle_describe_groups(
    mgr: ClassicGroupManager, token: Hashable, request: DescribeGroupsRequest, now_ms: int
) -> CoordinatorResult:
    del now_ms
    described = []
    for group_id in request.groups:
        group = mgr.coordinator.groups.get(group_id)
        if isinstance(group, ClassicGroup):
            described.append(_describe_classic(group))
        else:
            described.append(DescribedGroup(ErrorCode.NONE, group_id, ClassicGroupState.DEAD.value))
    return CoordinatorResult().reply(token, DescribeGroupsResponse(tuple(described)))


def _describe_classic(group: ClassicGroup) -> DescribedGroup:
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
