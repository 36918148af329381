"""A classic group to and from its GroupMetadata record, and replaying one.

Kafka: ``GroupCoordinatorRecordHelpers`` (builders) and
``GroupMetadataManager.replay`` (the GroupMetadata case).

``group_metadata_record`` writes what Kafka's ``newGroupMetadataRecord``
writes (plus our optional ``supported_protocols``, see
``regroup.records.classic``); ``group_from_value`` is Kafka's
``ClassicGroup.fromRecord``: the loaded group is Stable when it has members and
Empty otherwise, with the stored generation, protocol, leader, state timestamp,
members and assignments.

Classic groups change by their handlers, not by replay (in regroup as in Kafka):
the records are written where Kafka writes them (``rebalance``) and replayed only
to rebuild the groups after a restart.
"""

from __future__ import annotations

from collections.abc import Mapping

from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_member import ClassicGroupMember
from regroup.classic.group.group_state import ClassicGroupState
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.requests.classic import JoinGroupRequestProtocol
from regroup.records import CoordinatorRecord
from regroup.records.classic import (
    GroupMetadataKey,
    GroupMetadataValue,
    GroupMetadataValueMember,
    GroupMetadataValueProtocol,
)

__all__ = [
    "group_from_value",
    "group_metadata_record",
    "group_metadata_value",
    "group_tombstone",
    "new_group_record",
    "replay",
]


def group_metadata_value(
    group: ClassicGroup, assignment: Mapping[str, bytes] | None = None
) -> GroupMetadataValue:
    """The persisted form of ``group``; ``assignment`` overrides the members' stored bytes."""
    members = []
    for member in group.members.values():
        subscription = b""
        if group.protocol_name is not None:
            subscription = member.metadata(group.protocol_name)
        assigned = (
            member.assignment if assignment is None else assignment.get(member.member_id, b"")
        )
        members.append(
            GroupMetadataValueMember(
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
                rebalance_timeout=member.rebalance_timeout_ms,
                session_timeout=member.session_timeout_ms,
                subscription=subscription,
                assignment=assigned,
                supported_protocols=tuple(
                    GroupMetadataValueProtocol(p.name, p.metadata, p.version)
                    for p in member.supported_protocols
                ),
            )
        )
    return GroupMetadataValue(
        protocol_type=group.protocol_type,
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        current_state_timestamp=group.current_state_timestamp_ms,
        members=tuple(members),
    )


def group_metadata_record(
    group: ClassicGroup, assignment: Mapping[str, bytes] | None = None
) -> CoordinatorRecord:
    return CoordinatorRecord(
        GroupMetadataKey(group.group_id), group_metadata_value(group, assignment)
    )


def group_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(GroupMetadataKey(group_id), None)


def new_group_record(group: ClassicGroup, now_ms: int) -> CoordinatorRecord:
    """The empty GroupMetadata record Kafka commits for a group a JoinGroup creates."""
    return CoordinatorRecord(
        GroupMetadataKey(group.group_id),
        GroupMetadataValue(
            protocol_type=group.protocol_type,
            generation=0,
            protocol=None,
            leader=None,
            current_state_timestamp=now_ms,
        ),
    )


def replay(state: GroupCoordinatorState, record: CoordinatorRecord) -> None:
    """Apply a GroupMetadata record: the group as stored, or (a tombstone) no group."""
    assert isinstance(record.key, GroupMetadataKey)
    group_id = record.key.group
    if record.value is None:
        existing = state.classic_group(group_id)
        if existing is not None:
            existing.state = ClassicGroupState.DEAD
            del state.groups[group_id]
        return
    assert isinstance(record.value, GroupMetadataValue)
    state.groups[group_id] = group_from_value(group_id, record.value)


def group_from_value(group_id: str, value: GroupMetadataValue) -> ClassicGroup:
    """Kafka ``ClassicGroup.fromRecord``: Stable with members, Empty without."""
    group = ClassicGroup(group_id, value.current_state_timestamp)
    group.generation_id = value.generation
    group.protocol_type = value.protocol_type
    group.protocol_name = value.protocol
    for stored in value.members:
        if stored.supported_protocols:
            protocols = tuple(
                JoinGroupRequestProtocol(p.name, p.metadata, p.version)
                for p in stored.supported_protocols
            )
        else:
            protocols = (JoinGroupRequestProtocol(value.protocol or "", stored.subscription),)
        group.add(
            ClassicGroupMember(
                member_id=stored.member_id,
                group_instance_id=stored.group_instance_id,
                client_id=stored.client_id,
                client_host=stored.client_host,
                rebalance_timeout_ms=stored.rebalance_timeout,
                session_timeout_ms=stored.session_timeout,
                protocol_type=value.protocol_type or "",
                supported_protocols=protocols,
                assignment=stored.assignment,
            )
        )
    group.protocol_type = value.protocol_type
    group.leader_id = value.leader if value.members else None
    group.state = ClassicGroupState.STABLE if value.members else ClassicGroupState.EMPTY
    group.current_state_timestamp_ms = value.current_state_timestamp
    return group
