"""Heartbeat and LeaveGroup on a classic group (Kafka ``classicGroupHeartbeat``, ``...Leave``).

Heartbeat: empty group id: INVALID_GROUP_ID (Kafka checks it in
``GroupCoordinatorService``, as for every group RPC); unknown group:
UNKNOWN_MEMBER_ID; Dead: COORDINATOR_NOT_AVAILABLE;
unknown member / stale instance id: UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID;
another generation: ILLEGAL_GENERATION; then Empty: UNKNOWN_MEMBER_ID;
PreparingRebalance: REBALANCE_IN_PROGRESS, and the session timer is still
reset (the member is alive, it has just not rejoined yet); CompletingRebalance
and Stable: NONE, timer reset.

A group id held by a consumer group: the service routes the request to
``consumer.classic_members`` (a classic member inside it, online migration).

LeaveGroup (v3+ batches members): each entry is answered on its own. An entry
with an empty member id and a ``group.instance.id`` is the admin removal of
that static member (UNKNOWN_MEMBER_ID if there is none); a pending member
(KIP-394) is just forgotten; a member is validated like a heartbeat, its
parked JoinGroup answered UNKNOWN_MEMBER_ID, and removed. If anyone left:
Stable / CompletingRebalance rebalance, PreparingRebalance may complete its
join phase. The top-level error is NONE unless the group is unknown
(UNKNOWN_MEMBER_ID) or Dead (COORDINATOR_NOT_AVAILABLE).
"""

from __future__ import annotations

from collections.abc import Hashable

from regroup.classic.group.group_state import ClassicGroupState
from regroup.coordinator.classic.rebalance import (
    answer_join,
    answer_sync,
    cancel_heartbeat,
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    member_left,
    schedule_heartbeat,
)
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMember,
    SyncGroupResponse,
)

__all__ = ["handle_heartbeat", "handle_leave_group"]


def handle_heartbeat(
    state: GroupCoordinatorState, token: Hashable, request: HeartbeatRequest, now_ms: int
) -> CoordinatorResult:
    out = CoordinatorResult()
    if not request.group_id:
        return out.reply(token, HeartbeatResponse(ErrorCode.INVALID_GROUP_ID))
    group = state.classic_group(request.group_id)
    if group is None:
        return out.reply(token, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    if group.is_in(ClassicGroupState.DEAD):
        return out.reply(token, HeartbeatResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    try:
        group.validate_member(request.member_id, request.group_instance_id)
    except KafkaProtocolError as exc:
        return out.reply(token, HeartbeatResponse(exc.code))
    if request.generation_id != group.generation_id:
        return out.reply(token, HeartbeatResponse(ErrorCode.ILLEGAL_GENERATION))
    if group.is_in(ClassicGroupState.EMPTY):
        return out.reply(token, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    member = group.member(request.member_id)
    schedule_heartbeat(state, group, member, now_ms)
    if group.is_in(ClassicGroupState.PREPARING_REBALANCE):
        return out.reply(token, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    return out.reply(token, HeartbeatResponse(ErrorCode.NONE))


def handle_leave_group(
    state: GroupCoordinatorState, token: Hashable, request: LeaveGroupRequest, now_ms: int
) -> CoordinatorResult:
    out = CoordinatorResult()
    if not request.group_id:
        return out.reply(token, LeaveGroupResponse(ErrorCode.INVALID_GROUP_ID))
    group = state.classic_group(request.group_id)
    if group is None:
        return out.reply(token, LeaveGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    if group.is_in(ClassicGroupState.DEAD):
        return out.reply(token, LeaveGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    answers: list[LeaveGroupResponseMember] = []
    left: list[str] = []
    for identity in request.members:
        code = ErrorCode.NONE
        member_id = identity.member_id
        if not member_id:
            static_id = group.static_member_id(identity.group_instance_id)
            if static_id is None:
                code = ErrorCode.UNKNOWN_MEMBER_ID
            else:
                _remove_current_member(
                    state,
                    group_id=request.group_id,
                    member_id=static_id,
                    client_reason=identity.reason,
                    now_ms=now_ms,
                    out=out,
                )
                left.append(member_id)
        elif group.is_pending_member(member_id):
            group.remove(member_id)
            cancel_heartbeat(state, group, member_id)
            left.append(member_id)
        else:
            try:
                group.validate_member(member_id, identity.group_instance_id)
            except KafkaProtocolError as exc:
                code = exc.code
            else:
                _remove_current_member(
                    state,
                    group_id=request.group_id,
                    member_id=member_id,
                    client_reason=identity.reason,
                    now_ms=now_ms,
                    out=out,
                )
                left.append(member_id)
        answers.append(LeaveGroupResponseMember(member_id, identity.group_instance_id, code))
    if left:
        # Kafka's words, naming each member id as the request did (empty for an entry
        # that named only a group.instance.id).
        reason = f"explicit `LeaveGroup` request for ({', '.join(left)}) members."
        if group.is_in(ClassicGroupState.STABLE, ClassicGroupState.COMPLETING_REBALANCE):
            maybe_prepare_rebalance_or_complete_join(state, group, reason, now_ms, out)
        elif group.is_in(ClassicGroupState.PREPARING_REBALANCE):
            maybe_complete_join_phase(state, group, now_ms, out)
    return out.reply(token, LeaveGroupResponse(ErrorCode.NONE, tuple(answers)))


def _remove_current_member(
    state: GroupCoordinatorState,
    *,
    group_id: str,
    member_id: str,
    client_reason: str | None,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    """Kafka ``removeCurrentMemberFromClassicGroup``: answer its parked requests, drop it."""
    group = state.classic_group(group_id)
    assert group is not None
    member = group.member(member_id)
    cancel_heartbeat(state, group, member_id)
    answer_join(member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), out)
    answer_sync(member, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), out)
    group.remove(member_id)
    member_left(group, member, "leave", now_ms, out, client_reason=client_reason)
