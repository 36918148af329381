"""SyncGroup on a classic group or on no group (Kafka ``classicGroupSync``).

Validation first (Kafka ``validateSyncGroup``): empty group id:
INVALID_GROUP_ID; unknown group or member:
UNKNOWN_MEMBER_ID; a stale instance id: FENCED_INSTANCE_ID; a generation
other than the group's: ILLEGAL_GENERATION; a protocol type or name that
differs from the group's (when both are known): INCONSISTENT_GROUP_PROTOCOL.
Then by state: Empty: UNKNOWN_MEMBER_ID; PreparingRebalance:
REBALANCE_IN_PROGRESS; CompletingRebalance: park; the leader's SyncGroup
installs the assignment (members it left out get empty bytes), persists the
group, answers every parked SyncGroup and moves the group to Stable; Stable:
the member's stored assignment at once; Dead: COORDINATOR_NOT_AVAILABLE.
A group id held by a consumer group: the service routes the SyncGroup to
``consumer.classic_members`` (a classic member inside it, online migration).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from regroup.assignors.classic.api import Assignment
from regroup.classic import protocol
from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_state import ClassicGroupState
from regroup.coordinator.classic.rebalance import (
    answer_sync,
    propagate_assignment,
    remove_pending_sync_member,
    schedule_heartbeat,
    transition,
)
from regroup.coordinator.classic.records import group_metadata_record
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.events.schema import RebalanceCompleted
from regroup.model import TopicPartition
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.classic import SyncGroupRequest, SyncGroupResponse

__all__ = ["decoded_assignment", "handle_sync_group"]


def handle_sync_group(
    state: GroupCoordinatorState, token: Hashable, request: SyncGroupRequest, now_ms: int
) -> CoordinatorResult:
    out = CoordinatorResult()
    if not request.group_id:
        out.reply(token, SyncGroupResponse(ErrorCode.INVALID_GROUP_ID))
        return out
    group = state.classic_group(request.group_id)
    if group is None:
        out.reply(token, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        return out
    error = _validate(group, request)
    if error is not None:
        out.reply(token, SyncGroupResponse(error))
        return out
    member_id = request.member_id
    if group.is_in(ClassicGroupState.EMPTY):
        out.reply(token, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    elif group.is_in(ClassicGroupState.PREPARING_REBALANCE):
        out.reply(token, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    elif group.is_in(ClassicGroupState.COMPLETING_REBALANCE):
        member = group.member(member_id)
        if member.awaiting_sync is not None and member.awaiting_sync != token:
            answer_sync(member, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS), out)
        member.awaiting_sync = token
        remove_pending_sync_member(state, group, member_id)
        if group.is_leader(member_id):
            assignment = {a.member_id: a.assignment for a in request.assignments}
            for m in group:
                m.assignment = assignment.get(m.member_id, b"")
            transition(group, ClassicGroupState.STABLE, now_ms, out)
            out.records.append(group_metadata_record(group))
            propagate_assignment(state, group, ErrorCode.NONE, now_ms, out)
            out.events.append(
                RebalanceCompleted(
                    ts_ms=now_ms,
                    group_id=group.group_id,
                    generation=group.generation_id,
                    assignment=decoded_assignment(group.protocol_type, group.group_assignment()),
                ),
            )
    elif group.is_in(ClassicGroupState.STABLE):
        remove_pending_sync_member(state, group, member_id)
        member = group.member(member_id)
        schedule_heartbeat(state, group, member, now_ms)
        out.reply(
            token,
            SyncGroupResponse(
                ErrorCode.NONE,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                assignment=member.assignment,
            ),
        )
    else:
        out.reply(token, SyncGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    return out


def _validate(group: ClassicGroup, request: SyncGroupRequest) -> ErrorCode | None:
    if group.is_in(ClassicGroupState.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    try:
        group.validate_member(request.member_id, request.group_instance_id)
    except KafkaProtocolError as exc:
        return exc.code
    if request.generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if _inconsistent(request.protocol_type, group.protocol_type) or _inconsistent(
        request.protocol_name, group.protocol_name
    ):
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    return None


def _inconsistent(sent: str | None, current: str | None) -> bool:
    return sent is not None and current is not None and sent != current


def decoded_assignment(
    protocol_type: str | None, assignment: Mapping[str, bytes]
) -> dict[str, tuple[TopicPartition, ...]]:
    """The partitions of each member, when the bytes are the consumer protocol's.

    Uses ``regroup.classic.protocol.decode_assignment``; a group of another
    protocol type (Connect, Streams) or bytes that do not decode give ``{}``
    (the event then carries no assignment; the broker never needs to read it).
    """
    if protocol_type != "consumer":
        return {}
    decoded: dict[str, tuple[TopicPartition, ...]] = {}
    for member_id, data in assignment.items():
        if not data:
            decoded[member_id] = ()
            continue
        try:
            parsed: Assignment = protocol.decode_assignment(data)
        except Exception:
            return {}
        decoded[member_id] = tuple(parsed.partitions)
    return decoded
