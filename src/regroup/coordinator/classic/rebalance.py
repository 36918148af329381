"""The classic rebalance barrier every classic handler drives: join phase, sync phase, timers.

Kafka: the classic half of ``GroupMetadataManager`` (``prepareRebalance``,
``completeClassicGroupJoin``, ``propagateAssignment``, the heartbeat, join and
sync timeouts). The handlers (``join``, ``sync``, ``membership``) call these
steps with the coordinator's state; nothing here knows a request.

Theory of operation
-------------------

A JoinGroup or SyncGroup that must wait is *parked*: its token is stored on
the member and answered in a later ``CoordinatorResult`` (the one of the
request or timer that completes the phase). Timers, keyed per group and
member, are the only other source of change:

* ``classic-heartbeat/<group>/<member>``: the session timeout (the new-member
  join timeout, 300000 ms, for a member added in this join phase); on expiry
  a member that is not satisfied (Kafka: ``hasSatisfiedHeartbeat``) is removed;
* ``classic-join/<group>``: the initial rebalance delay of an Empty group, then
  the join phase's rebalance timeout (the largest member rebalance timeout);
* ``classic-sync/<group>``: the rebalance timeout after a join phase; members
  that have not sent SyncGroup by then are removed and the group rebalances.

Records (``records``) are written where Kafka writes them: a new group (empty
record), a join phase that ends Empty, the leader's assignment, a static member
replaced without a rebalance, a deleted group (tombstone). Replaying them
rebuilds the group in Stable or Empty. Events are emitted for every observable
step, with ``group_protocol`` ``classic``.
"""

from __future__ import annotations

from typing import Final

from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_member import ClassicGroupMember
from regroup.classic.group.group_state import ClassicGroupState
from regroup.coordinator.classic.records import group_metadata_record, group_tombstone
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.events.schema import (
    GenerationBumped,
    GroupStateChanged,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
)
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.classic import JoinGroupResponse, SyncGroupResponse

__all__ = [
    "GROUP_PROTOCOL",
    "TIMER_TICK_MS",
    "answer_join",
    "answer_sync",
    "cancel_heartbeat",
    "check_deletable",
    "complete_join",
    "create_group",
    "delete_group",
    "heartbeat_key",
    "join_key",
    "maybe_complete_join_phase",
    "maybe_prepare_rebalance_or_complete_join",
    "member_joined",
    "member_left",
    "on_loaded",
    "prepare_rebalance",
    "propagate_assignment",
    "remove_member_and_update",
    "remove_pending_sync_member",
    "schedule_heartbeat",
    "schedule_pending_member_heartbeat",
    "sync_key",
    "transition",
]

#: ``group_protocol`` of the events of classic groups.
GROUP_PROTOCOL: Final = "classic"


#: The resolution of Kafka's timer wheel (``SystemTimer``'s ``tickMs``): the least
#: time a re-armed join phase waits.
TIMER_TICK_MS: Final = 1


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"classic-heartbeat/{group_id}/{member_id}"


def join_key(group_id: str) -> str:
    return f"classic-join/{group_id}"


def sync_key(group_id: str) -> str:
    return f"classic-sync/{group_id}"


# -- groups ----------------------------------------------------------------------------


def create_group(state: GroupCoordinatorState, group_id: str, now_ms: int) -> ClassicGroup:
    """A new Empty classic group (Kafka: ``getOrMaybeCreateClassicGroup(id, true)``)."""
    group = ClassicGroup(group_id, now_ms)
    state.groups[group_id] = group
    return group


def delete_group(state: GroupCoordinatorState, group_id: str, now_ms: int) -> CoordinatorResult:
    """Delete an Empty classic group (Kafka DeleteGroups): Dead, tombstone, no more group.

    Raises ``KafkaProtocolError`` GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP. Its
    offsets are deleted apart (``offsets.delete_group_offsets``).
    """
    group = state.classic_group(group_id)
    if group is None:
        raise KafkaProtocolError(ErrorCode.GROUP_ID_NOT_FOUND)
    check_deletable(group)
    out = CoordinatorResult()
    transition(group, ClassicGroupState.DEAD, now_ms, out)
    state.timer.cancel(join_key(group_id))
    state.timer.cancel(sync_key(group_id))
    del state.groups[group_id]
    out.records.append(group_tombstone(group_id))
    return out


def check_deletable(group: ClassicGroup) -> None:
    """Kafka ``ClassicGroup.validateDeleteGroup``: only an Empty group (and, in regroup,
    one with no pending member) may go; a Dead one is GROUP_ID_NOT_FOUND, any other
    NON_EMPTY_GROUP."""
    if group.is_in(ClassicGroupState.DEAD):
        raise KafkaProtocolError(ErrorCode.GROUP_ID_NOT_FOUND)
    if not group.is_in(ClassicGroupState.EMPTY) or group.pending_members:
        raise KafkaProtocolError(ErrorCode.NON_EMPTY_GROUP)


def on_loaded(
    state: GroupCoordinatorState, now_ms: int, only: str | None = None
) -> CoordinatorResult:
    """After a replay: arm every member's session timer (Kafka ``onLoaded``).

    ``only``: the one group rebuilt (``regroup.coordinator.guard``), not all.

    Records carry no timers, so a rebuilt group would never expire a member;
    like Kafka, every member of a loaded group gets a fresh session timeout, and
    a group above ``group.max.size`` (the limit may have been lowered)
    rebalances at once.
    """
    out = CoordinatorResult()
    for group_id in list(state.groups) if only is None else [only]:
        group = state.classic_group(group_id)
        if group is None or not group.members:
            continue
        for member in group:
            schedule_heartbeat(state, group, member, now_ms)
        if len(group) > state.config.group_max_size and group.can_rebalance():
            prepare_rebalance(
                state,
                group,
                f"Freshly-loaded group {group_id} (size {len(group)}) is over capacity "
                f"{state.config.group_max_size}. Rebalancing in order to give a chance for "
                "consumers to commit offsets",
                now_ms,
                out,
            )
    return out


# -- events ----------------------------------------------------------------------------


def transition(
    group: ClassicGroup, new_state: ClassicGroupState, now_ms: int, out: CoordinatorResult
) -> None:
    old = group.state
    group.transition_to(new_state, now_ms)
    state_changed(group, old, now_ms, out)


def state_changed(
    group: ClassicGroup, old: ClassicGroupState, now_ms: int, out: CoordinatorResult
) -> None:
    if old is not group.state:
        out.events.append(
            GroupStateChanged(
                ts_ms=now_ms,
                group_id=group.group_id,
                group_protocol=GROUP_PROTOCOL,
                old_state=old.value,
                new_state=group.state.value,
            )
        )


def member_joined(
    group: ClassicGroup, member: ClassicGroupMember, now_ms: int, out: CoordinatorResult
) -> None:
    out.events.append(
        MemberJoined(
            ts_ms=now_ms,
            group_id=group.group_id,
            member_id=member.member_id,
            group_protocol=GROUP_PROTOCOL,
            instance_id=member.group_instance_id,
            client_id=member.client_id,
        )
    )


def member_left(
    group: ClassicGroup,
    member: ClassicGroupMember,
    reason: str,
    now_ms: int,
    out: CoordinatorResult,
    *,
    client_reason: str | None = None,
) -> None:
    out.events.append(
        MemberLeft(
            ts_ms=now_ms,
            group_id=group.group_id,
            member_id=member.member_id,
            group_protocol=GROUP_PROTOCOL,
            reason=reason,
            instance_id=member.group_instance_id,
            reason_text=client_reason,
        )
    )


# -- session timers ----------------------------------------------------------------------


def schedule_heartbeat(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    member: ClassicGroupMember,
    now_ms: int,
    timeout_ms: int | None = None,
) -> None:
    """(Re)arm a member's session timer (Kafka: ``rescheduleClassicGroupMemberHeartbeat``)."""
    timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
    schedule_pending_member_heartbeat(state, group, member.member_id, timeout, now_ms)


def schedule_pending_member_heartbeat(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    member_id: str,
    session_timeout_ms: int,
    now_ms: int,
) -> None:
    """The session timer of a member id, known or only pending (KIP-394)."""
    group_id = group.group_id
    state.timer.schedule(
        heartbeat_key(group_id, member_id),
        now_ms + session_timeout_ms,
        lambda now: _expire_heartbeat(state, group_id, member_id, now),
        owner=group_id,
    )


def cancel_heartbeat(state: GroupCoordinatorState, group: ClassicGroup, member_id: str) -> None:
    state.timer.cancel(heartbeat_key(group.group_id, member_id))


def _expire_heartbeat(
    state: GroupCoordinatorState, group_id: str, member_id: str, now_ms: int
) -> CoordinatorResult:
    """Session (or new-member join) timeout (Kafka: ``expireClassicGroupMemberHeartbeat``)."""
    out = CoordinatorResult()
    group = state.classic_group(group_id)
    if group is None or group.is_in(ClassicGroupState.DEAD):
        return out
    if group.is_pending_member(member_id):
        group.remove(member_id)
        if group.is_in(ClassicGroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            complete_join(state, group, now_ms, out)
        return out
    member = group.members.get(member_id)
    if member is None:
        return out
    if member.is_new:
        remove_member_and_update(state, group, member, "join_timeout", now_ms, out)
    elif not (member.is_awaiting_join or member.is_awaiting_sync):
        remove_member_and_update(state, group, member, "session_timeout", now_ms, out)
    return out


# -- the join phase ----------------------------------------------------------------------


def prepare_rebalance(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    reason: str,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    """Enter the join phase (Kafka: ``prepareRebalance``).

    Parked SyncGroups of CompletingRebalance are answered REBALANCE_IN_PROGRESS;
    the sync timer stops. From Empty, the initial rebalance delay starts
    (``group.initial.rebalance.delay.ms``); otherwise the join phase may
    complete at once, or waits up to the group's rebalance timeout.
    """
    if group.is_in(ClassicGroupState.COMPLETING_REBALANCE):
        for member in group:
            member.assignment = b""
        propagate_assignment(state, group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms, out)
    state.timer.cancel(sync_key(group.group_id))
    initial = group.is_in(ClassicGroupState.EMPTY)
    if initial:
        delay = state.config.group_initial_rebalance_delay_ms
        remaining = max(group.rebalance_timeout_ms() - delay, 0)
        _schedule_initial_delay(state, group, delay, remaining, now_ms)
    transition(group, ClassicGroupState.PREPARING_REBALANCE, now_ms, out)
    out.events.append(
        RebalanceStarted(
            ts_ms=now_ms, group_id=group.group_id, generation=group.generation_id, reason=reason
        )
    )
    if not initial:
        if group.has_all_members_joined():
            complete_join(state, group, now_ms, out)
        else:
            _schedule_join_timeout(state, group, now_ms)


def _schedule_initial_delay(
    state: GroupCoordinatorState, group: ClassicGroup, delay: int, remaining: int, now_ms: int
) -> None:
    group_id = group.group_id
    state.timer.schedule(
        join_key(group_id),
        now_ms + delay,
        lambda now: _initial_delay_expired(state, group_id, delay, remaining, now),
        owner=group_id,
    )


def _initial_delay_expired(
    state: GroupCoordinatorState, group_id: str, delay: int, remaining: int, now_ms: int
) -> CoordinatorResult:
    """Kafka ``tryCompleteInitialRebalanceElseSchedule``: wait again while members arrive."""
    out = CoordinatorResult()
    group = state.classic_group(group_id)
    if group is None or not group.is_in(ClassicGroupState.PREPARING_REBALANCE):
        return out
    if group.new_member_added and remaining != 0:
        group.new_member_added = False
        new_delay = min(state.config.group_initial_rebalance_delay_ms, remaining)
        new_remaining = max(remaining - delay, 0)
        _schedule_initial_delay(state, group, new_delay, new_remaining, now_ms)
    else:
        complete_join(state, group, now_ms, out)
    return out


def _schedule_join_timeout(
    state: GroupCoordinatorState, group: ClassicGroup, now_ms: int, *, at_least_ms: int = 0
) -> None:
    group_id = group.group_id
    state.timer.schedule(
        join_key(group_id),
        now_ms + max(group.rebalance_timeout_ms(), at_least_ms),
        lambda now: _join_timeout_expired(state, group_id, now),
        owner=group_id,
    )


def _join_timeout_expired(
    state: GroupCoordinatorState, group_id: str, now_ms: int
) -> CoordinatorResult:
    out = CoordinatorResult()
    group = state.classic_group(group_id)
    if group is not None and group.is_in(ClassicGroupState.PREPARING_REBALANCE):
        complete_join(state, group, now_ms, out)
    return out


def maybe_complete_join_phase(
    state: GroupCoordinatorState, group: ClassicGroup, now_ms: int, out: CoordinatorResult
) -> None:
    """Kafka ``maybeCompleteJoinPhase``: never early while the initial delay runs."""
    if (
        group.is_in(ClassicGroupState.PREPARING_REBALANCE)
        and group.has_all_members_joined()
        and group.previous_state is not ClassicGroupState.EMPTY
    ):
        complete_join(state, group, now_ms, out)


def maybe_prepare_rebalance_or_complete_join(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    reason: str,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    if group.can_rebalance():
        prepare_rebalance(state, group, reason, now_ms, out)
    else:
        maybe_complete_join_phase(state, group, now_ms, out)


def complete_join(
    state: GroupCoordinatorState, group: ClassicGroup, now_ms: int, out: CoordinatorResult
) -> None:
    """End the join phase (Kafka: ``completeClassicGroupJoin``).

    Dynamic members that did not rejoin are removed (static ones stay and
    must sync in time); the leader must have rejoined (else a member that
    did leads; if nobody did, the phase waits another rebalance timeout);
    the generation is bumped, the protocol voted; every parked JoinGroup is
    answered, the member list going to the leader only.
    """
    state.timer.cancel(join_key(group.group_id))
    if group.is_in(ClassicGroupState.DEAD):
        return
    for member in group:
        if not member.is_awaiting_join and not member.is_static:
            group.remove(member.member_id)
            cancel_heartbeat(state, group, member.member_id)
            member_left(group, member, "rebalance_timeout", now_ms, out)
    if not group.maybe_elect_new_joined_leader() and group.members:
        # Nobody rejoined: wait another rebalance timeout, until a member rejoins or the
        # session timeouts remove the static members that never will. A rebalance timeout
        # of 0 or less (JoinGroup accepts any; only the session timeout is checked) makes
        # Kafka re-queue this check at once, on and on, as new events on its coordinator
        # loop while the clock runs; here it waits one tick of Kafka's timer wheel (1 ms,
        # ``SystemTimer``), which reaches the same end without spinning at one instant.
        _schedule_join_timeout(state, group, now_ms, at_least_ms=TIMER_TICK_MS)
        return
    old = group.state
    group.init_next_generation(now_ms)
    state_changed(group, old, now_ms, out)
    out.events.append(
        GenerationBumped(
            ts_ms=now_ms,
            group_id=group.group_id,
            generation=group.generation_id,
            protocol_name=group.protocol_name,
            leader_id=group.leader_id or "",
            member_ids=tuple(group.members),
        )
    )
    if group.is_in(ClassicGroupState.EMPTY):
        out.records.append(group_metadata_record(group))
        return
    leader_members = group.current_members_metadata()
    for member in group:
        token = member.awaiting_join
        if token is not None:
            member.awaiting_join = None
            out.reply(
                token,
                JoinGroupResponse(
                    error_code=ErrorCode.NONE,
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=group.leader_id or "",
                    member_id=member.member_id,
                    members=leader_members if group.is_leader(member.member_id) else (),
                ),
            )
        schedule_heartbeat(state, group, member, now_ms)
        member.is_new = False
        group.pending_sync_members.add(member.member_id)
    _schedule_pending_sync(state, group, now_ms)


# -- the sync phase ----------------------------------------------------------------------


def _schedule_pending_sync(state: GroupCoordinatorState, group: ClassicGroup, now_ms: int) -> None:
    group_id, generation = group.group_id, group.generation_id
    state.timer.schedule(
        sync_key(group_id),
        now_ms + group.rebalance_timeout_ms(),
        lambda now: _expire_pending_sync(state, group_id, generation, now),
        owner=group_id,
    )


def _expire_pending_sync(
    state: GroupCoordinatorState, group_id: str, generation: int, now_ms: int
) -> CoordinatorResult:
    """Kafka ``expirePendingSync``: remove members that never sent SyncGroup, rebalance."""
    out = CoordinatorResult()
    group = state.classic_group(group_id)
    if group is None or group.generation_id != generation:
        return out
    if (
        not group.is_in(ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.STABLE)
        or not group.pending_sync_members
    ):
        return out
    late = [group.members[m] for m in group.members if m in group.pending_sync_members]
    for member in late:
        answer_join(member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), out)
        answer_sync(member, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), out)
        group.remove(member.member_id)
        cancel_heartbeat(state, group, member.member_id)
        member_left(group, member, "sync_timeout", now_ms, out)
    group.pending_sync_members.clear()
    prepare_rebalance(
        state,
        group,
        f"Removing [{', '.join(m.member_id for m in late)}] on pending sync request expiration",
        now_ms,
        out,
    )
    return out


def remove_pending_sync_member(
    state: GroupCoordinatorState, group: ClassicGroup, member_id: str
) -> None:
    group.pending_sync_members.discard(member_id)
    if not group.pending_sync_members:
        state.timer.cancel(sync_key(group.group_id))


# -- answering parked requests, removing members -------------------------------------------


def answer_join(
    member: ClassicGroupMember, response: JoinGroupResponse, out: CoordinatorResult
) -> None:
    """Answer the member's parked JoinGroup, if it has one."""
    if member.awaiting_join is not None:
        out.reply(member.awaiting_join, response)
        member.awaiting_join = None


def answer_sync(
    member: ClassicGroupMember, response: SyncGroupResponse, out: CoordinatorResult
) -> None:
    """Answer the member's parked SyncGroup, if it has one."""
    if member.awaiting_sync is not None:
        out.reply(member.awaiting_sync, response)
        member.awaiting_sync = None


def propagate_assignment(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    error: ErrorCode,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    """Answer every parked SyncGroup (Kafka: ``propagateAssignment``); re-arm their sessions."""
    for member in group:
        if member.awaiting_sync is None:
            continue
        answer_sync(
            member,
            SyncGroupResponse(
                error_code=error,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                assignment=member.assignment,
            ),
            out,
        )
        schedule_heartbeat(state, group, member, now_ms)


def remove_member_and_update(
    state: GroupCoordinatorState,
    group: ClassicGroup,
    member: ClassicGroupMember,
    reason: str,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    """Kafka ``removeMemberAndUpdateClassicGroup``: drop; rebalance or finish the join phase."""
    answer_join(member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), out)
    answer_sync(member, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), out)
    group.remove(member.member_id)
    cancel_heartbeat(state, group, member.member_id)
    member_left(group, member, reason, now_ms, out)
    if group.is_in(ClassicGroupState.STABLE, ClassicGroupState.COMPLETING_REBALANCE):
        # Kafka's reason for both callers (a session or a new member's join timeout).
        prepare_rebalance(
            state,
            group,
            f"removing member {member.member_id} on heartbeat expiration.",
            now_ms,
            out,
        )
    elif group.is_in(ClassicGroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
        complete_join(state, group, now_ms, out)
