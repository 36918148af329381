"""ListGroups: every group of both types (Kafka ``GroupMetadataManager.listGroups``).

Each group is read through the ``Group`` protocol, filtered by state name and by
type, both case-insensitively; an empty filter keeps everything. The protocol
type is the classic group's (``""`` for a group that only stores offsets) and
``"consumer"`` for a KIP-848 group.
"""

from __future__ import annotations

from collections.abc import Hashable

from regroup.classic.group.group import ClassicGroup
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.errors import ErrorCode
from regroup.model.requests.admin import ListedGroup, ListGroupsRequest, ListGroupsResponse

__all__ = ["handle_list_groups"]


def handle_list_groups(
    state: GroupCoordinatorState, token: Hashable, request: ListGroupsRequest, now_ms: int
) -> CoordinatorResult:
    del now_ms
    states = {s.lower() for s in request.states_filter}
    types = {t.lower() for t in request.types_filter}
    listed = []
    for group_id, group in state.groups.items():
        name = group.state_name()
        if states and name.lower() not in states:
            continue
        if types and group.group_type.lower() not in types:
            continue
        protocol_type = (
            (group.protocol_type or "") if isinstance(group, ClassicGroup) else "consumer"
        )
        listed.append(ListedGroup(group_id, protocol_type, name, group.group_type))
    return CoordinatorResult().reply(token, ListGroupsResponse(ErrorCode.NONE, tuple(listed)))
