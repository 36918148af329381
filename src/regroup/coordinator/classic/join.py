"""JoinGroup on a classic group or on no group yet (Kafka ``classicGroupJoin*``).

Admission, in Kafka's order:

1. empty group id: INVALID_GROUP_ID; session timeout outside
   [``group.min.session.timeout.ms``, ``group.max.session.timeout.ms``]:
   INVALID_SESSION_TIMEOUT (Kafka checks both in ``GroupCoordinatorService``);
2. an unknown group with a member id: UNKNOWN_MEMBER_ID; an unknown group
   without one is created (and persisted). (A JoinGroup whose id names a KIP-848
   group is routed to ``consumer.classic_members`` by the service; when that
   group is empty it is deleted and the JoinGroup comes back here.)
3. ``group.max.size`` (Kafka ``acceptJoiningMember``): in PreparingRebalance a
   member is admitted if it is already awaiting join or fewer members are
   awaiting join than the limit; in CompletingRebalance / Stable if it is a
   member or the group is below the limit; GROUP_MAX_SIZE_REACHED otherwise
   (and the refused member is dropped);
4. a new member (no id): Dead: COORDINATOR_NOT_AVAILABLE; protocols not
   compatible: INCONSISTENT_GROUP_PROTOCOL; a static member with a known
   ``group.instance.id`` replaces the old one (KIP-345); a new dynamic member
   first gets MEMBER_ID_REQUIRED with a pending id (KIP-394) when the client
   requires a known member id; otherwise it is added;
5. an existing member: a pending one is added; a known one is validated
   (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) and then, by state:
   PreparingRebalance: update and park; CompletingRebalance: same metadata
   gets the current generation again, new metadata rebalances; Stable: the
   leader always rebalances (it may have seen a metadata change), a follower
   with new metadata rebalances, one with the same metadata gets the current
   generation; Empty: UNKNOWN_MEMBER_ID.
"""

from __future__ import annotations

from collections.abc import Hashable

from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_member import ClassicGroupMember
from regroup.classic.group.group_state import ClassicGroupState
from regroup.coordinator.classic.rebalance import (
    answer_join,
    answer_sync,
    cancel_heartbeat,
    create_group,
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    member_joined,
    member_left,
    prepare_rebalance,
    schedule_heartbeat,
    schedule_pending_member_heartbeat,
)
from regroup.coordinator.classic.records import group_metadata_record, new_group_record
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.events.schema import MemberPending
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.member import new_classic_member_id
from regroup.model.requests.classic import JoinGroupRequest, JoinGroupResponse, SyncGroupResponse
from regroup.records.classic import GroupMetadataKey

__all__ = ["check_join_request", "handle_join_group"]


def handle_join_group(
    state: GroupCoordinatorState, token: Hashable, request: JoinGroupRequest, now_ms: int
) -> CoordinatorResult:
    out = CoordinatorResult()

    def fail(code: ErrorCode, member_id: str = request.member_id) -> CoordinatorResult:
        out.reply(token, JoinGroupResponse(error_code=code, member_id=member_id))
        return out

    config = state.config
    invalid = check_join_request(config, request)
    if invalid is not None:
        return fail(invalid)
    other = state.groups.get(request.group_id)
    if other is not None and not isinstance(other, ClassicGroup):
        # The service sends a consumer group's JoinGroups elsewhere; any other group type
        # cannot take a classic member.
        return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    group = state.classic_group(request.group_id)
    is_new_group = group is None
    if group is None:
        if request.member_id:
            return fail(ErrorCode.UNKNOWN_MEMBER_ID)
        group = create_group(state, request.group_id, now_ms)

    if not _accept_joining_member(group, request.member_id, config.group_max_size):
        refused = group.members.get(request.member_id)
        group.remove(request.member_id)
        cancel_heartbeat(state, group, request.member_id)
        if refused is not None:
            answer_join(refused, JoinGroupResponse(ErrorCode.GROUP_MAX_SIZE_REACHED), out)
            member_left(group, refused, "group_max_size", now_ms, out)
        fail(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    elif not request.member_id:
        _join_new_member(state, group, token, request, now_ms, out)
    else:
        _join_existing_member(state, group, token, request, now_ms, out)

    if is_new_group and not any(isinstance(r.key, GroupMetadataKey) for r in out.records):
        # Kafka: a new group is committed with an empty GroupMetadata record.
        out.records.append(new_group_record(group, now_ms))
    return out


def check_join_request(
    config: GroupCoordinatorConfig, request: JoinGroupRequest
) -> ErrorCode | None:
    """Step 1: INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT, or ``None`` (any group type)."""
    if not request.group_id:
        return ErrorCode.INVALID_GROUP_ID
    if not (
        config.group_min_session_timeout_ms
        <= request.session_timeout_ms
        <= config.group_max_session_timeout_ms
    ):
        return ErrorCode.INVALID_SESSION_TIMEOUT
    return None


def _accept_joining_member(group: ClassicGroup, member_id: str, max_size: int) -> bool:
    """Kafka ``acceptJoiningMember`` (``group.max.size``)."""
    if group.is_in(ClassicGroupState.EMPTY, ClassicGroupState.DEAD):
        return True
    if group.is_in(ClassicGroupState.PREPARING_REBALANCE):
        member = group.members.get(member_id)
        return (
            member is not None and member.is_awaiting_join
        ) or group.num_awaiting_join() < max_size
    return group.has_member(member_id) or len(group) < max_size


def _join_new_member(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    token: Hashable,
    request: JoinGroupRequest,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    if group.is_in(ClassicGroupState.DEAD):
        out.reply(token, JoinGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        return
    if not group.supports_protocols(
        request.protocol_type, tuple(p.name for p in request.protocols)
    ):
        out.reply(token, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        return
    prefix = (
        request.group_instance_id if request.group_instance_id is not None else request.client_id
    )
    new_member_id = new_classic_member_id(prefix, state.rng)
    if request.group_instance_id is not None:
        old_member_id = group.static_member_id(request.group_instance_id)
        if old_member_id is None:
            _add_member_then_rebalance_or_complete_join(
                state, group, token, request, new_member_id, now_ms, out
            )
        else:
            _replace_static_member(
                state, group, token, request, old_member_id, new_member_id, now_ms, out
            )
    elif request.require_known_member_id:
        # KIP-394: hand out the id, keep it pending for one session timeout.
        group.pending_members.add(new_member_id)
        schedule_pending_member_heartbeat(
            state, group, new_member_id, request.session_timeout_ms, now_ms
        )
        out.events.append(
            MemberPending(
                ts_ms=now_ms,
                group_id=group.group_id,
                member_id=new_member_id,
                client_id=request.client_id,
            )
        )
        out.reply(token, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_member_id))
    else:
        _add_member_then_rebalance_or_complete_join(
            state, group, token, request, new_member_id, now_ms, out
        )


def _join_existing_member(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    token: Hashable,
    request: JoinGroupRequest,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    member_id = request.member_id

    def fail(code: ErrorCode) -> None:
        out.reply(token, JoinGroupResponse(error_code=code, member_id=member_id))

    if group.is_in(ClassicGroupState.DEAD):
        return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not group.supports_protocols(
        request.protocol_type, tuple(p.name for p in request.protocols)
    ):
        return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if group.is_pending_member(member_id):
        if request.group_instance_id is not None:
            # Kafka treats this as impossible (a static member is never pending).
            return fail(ErrorCode.UNKNOWN_MEMBER_ID)
        _add_member_then_rebalance_or_complete_join(
            state, group, token, request, member_id, now_ms, out
        )
        return None
    try:
        group.validate_member(member_id, request.group_instance_id)
    except KafkaProtocolError as exc:
        return fail(exc.code)
    member = group.member(member_id)
    reason = request.reason or "not provided"
    if group.is_in(ClassicGroupState.PREPARING_REBALANCE):
        _update_member_then_rebalance_or_complete_join(
            state,
            group,
            member,
            token,
            request,
            f"Member {member_id} is joining group during PreparingRebalance; "
            f"client reason: {reason}",
            now_ms,
            out,
        )
    elif group.is_in(ClassicGroupState.COMPLETING_REBALANCE):
        if member.matches(request.protocols):
            _reply_current_generation(group, member, token, out)
        else:
            _update_member_then_rebalance_or_complete_join(
                state,
                group,
                member,
                token,
                request,
                f"Updating metadata for member {member_id} during CompletingRebalance; "
                f"client reason: {reason}",
                now_ms,
                out,
            )
    elif group.is_in(ClassicGroupState.STABLE):
        if group.is_leader(member_id):
            _update_member_then_rebalance_or_complete_join(
                state,
                group,
                member,
                token,
                request,
                f"Leader {member_id} re-joining group during Stable; client reason: {reason}",
                now_ms,
                out,
            )
        elif not member.matches(request.protocols):
            _update_member_then_rebalance_or_complete_join(
                state,
                group,
                member,
                token,
                request,
                f"Updating metadata for member {member_id} during Stable; client reason: {reason}",
                now_ms,
                out,
            )
        else:
            _reply_current_generation(group, member, token, out)
    else:
        fail(ErrorCode.UNKNOWN_MEMBER_ID)
    return None


def _java(value: str | None) -> str:
    """A nullable string as Java's string concatenation writes it (``null``)."""
    return "null" if value is None else value


def _reply_current_generation(
    group: ClassicGroup, member: ClassicGroupMember, token: Hashable, out: CoordinatorResult
) -> None:
    out.reply(
        token,
        JoinGroupResponse(
            error_code=ErrorCode.NONE,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member.member_id,
            members=group.current_members_metadata() if group.is_leader(member.member_id) else (),
        ),
    )


def _add_member_then_rebalance_or_complete_join(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    token: Hashable,
    request: JoinGroupRequest,
    member_id: str,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    """Kafka ``addMemberThenRebalanceOrCompleteJoin``; new members get the join timeout."""
    member = ClassicGroupMember(
        member_id=member_id,
        group_instance_id=request.group_instance_id,
        client_id=request.client_id,
        client_host=request.client_host,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        session_timeout_ms=request.session_timeout_ms,
        protocol_type=request.protocol_type,
        supported_protocols=tuple(request.protocols),
        is_new=True,
    )
    if (
        group.is_in(ClassicGroupState.PREPARING_REBALANCE)
        and group.previous_state is ClassicGroupState.EMPTY
    ):
        group.new_member_added = True
    group.add(member, token)
    member_joined(group, member, now_ms, out)
    schedule_heartbeat(
        state, group, member, now_ms, state.config.classic_group_new_member_join_timeout_ms
    )
    maybe_prepare_rebalance_or_complete_join(
        state,
        group,
        f"Adding new member {member_id} with group instance id "
        f"{_java(request.group_instance_id)}; client reason: {request.reason or 'not provided'}",
        now_ms,
        out,
    )


def _update_member_then_rebalance_or_complete_join(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    member: ClassicGroupMember,
    token: Hashable,
    request: JoinGroupRequest,
    reason: str,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    """Kafka ``updateMemberThenRebalanceOrCompleteJoin``.

    A member that sends JoinGroup again while one is parked: Kafka replaces
    the parked future silently; we answer the superseded token with
    REBALANCE_IN_PROGRESS so that no driver waits for it forever.
    """
    if member.awaiting_join is not None and member.awaiting_join != token:
        answer_join(
            member,
            JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id),
            out,
        )
    group.update_member(
        member,
        tuple(request.protocols),
        request.rebalance_timeout_ms,
        request.session_timeout_ms,
        token,
    )
    maybe_prepare_rebalance_or_complete_join(state, group, reason, now_ms, out)


def _replace_static_member(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    token: Hashable,
    request: JoinGroupRequest,
    old_member_id: str,
    new_member_id: str,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    """KIP-345 (Kafka ``updateStaticMemberThenRebalanceOrCompleteJoin``).

    The old id's parked JoinGroup / SyncGroup get FENCED_INSTANCE_ID. In
    Stable, when the protocol the group would select does not change, there
    is no rebalance: the group is persisted and the new id gets the current
    generation; a returning leader gets the member list with
    ``skip_assignment`` (JoinGroup v9+) or, on older versions, a follower's
    response naming the old leader id. In CompletingRebalance the replacement
    forces a new rebalance (the leader may be assigning to the old id).
    """
    assert request.group_instance_id is not None
    current_leader = group.leader_id
    old, new = group.replace_static_member(request.group_instance_id, old_member_id, new_member_id)
    answer_join(old, JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id), out)
    answer_sync(old, SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID), out)
    cancel_heartbeat(state, group, old_member_id)
    member_left(group, old, "replaced", now_ms, out)
    member_joined(group, new, now_ms, out)
    schedule_heartbeat(state, group, new, now_ms)
    group.update_member(
        new,
        tuple(request.protocols),
        request.rebalance_timeout_ms,
        request.session_timeout_ms,
        token,
    )
    client_reason = request.reason or "not provided"
    if group.is_in(ClassicGroupState.STABLE):
        if group.select_protocol() == group.protocol_name:
            new.awaiting_join = None
            out.records.append(group_metadata_record(group))
            if group.is_leader(new_member_id) and request.supports_skip_assignment:
                response = JoinGroupResponse(
                    error_code=ErrorCode.NONE,
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=new_member_id,
                    skip_assignment=True,
                    member_id=new_member_id,
                    members=group.current_members_metadata(),
                )
            else:
                response = JoinGroupResponse(
                    error_code=ErrorCode.NONE,
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=current_leader or "",
                    member_id=new_member_id,
                )
            out.reply(token, response)
        else:
            maybe_prepare_rebalance_or_complete_join(
                state,
                group,
                f"Group's selectedProtocol will change because static member {new_member_id} "
                f"with instance id {request.group_instance_id} joined with change of protocol; "
                f"client reason: {client_reason}",
                now_ms,
                out,
            )
    elif group.is_in(ClassicGroupState.COMPLETING_REBALANCE):
        prepare_rebalance(
            state,
            group,
            f"Updating metadata for static member {new_member_id} with instance id "
            f"{request.group_instance_id}; client reason: {client_reason}",
            now_ms,
            out,
        )
    else:
        maybe_complete_join_phase(state, group, now_ms, out)
