"""The classic groups of a coordinator: handlers, the rebalance barrier, timers, records, events.

Kafka: the classic half of ``GroupMetadataManager``. This module holds the
manager and the steps every handler shares (prepare a rebalance, complete the
join phase, propagate the assignment, remove a member, the timers); the
handlers live in ``classic_join`` (JoinGroup), ``classic_sync`` (SyncGroup),
``classic_membership`` (Heartbeat, LeaveGroup) and ``classic_admin``
(ListGroups, DescribeGroups).

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

Records (``regroup.records.classic``) are written where Kafka writes them: a
new group (empty record), a join phase that ends Empty, the leader's
assignment, a static member replaced without a rebalance, a deleted group
(tombstone). Replaying them rebuilds the group in Stable or Empty. Events are
emitted for every observable step.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Final

from regroup.classic.group import ClassicGroup
from regroup.classic.group_member import ClassicGroupMember
from regroup.classic.group_state import ClassicGroupState
from regroup.coordinator import classic_admin, classic_join, classic_membership, classic_sync
from regroup.coordinator.classic_records import (
    group_from_value,
    group_metadata_record,
    group_tombstone,
)
from regroup.coordinator.result import CoordinatorResult
from regroup.events import Event
from regroup.events.schema import (
    GenerationBumped,
    GroupStateChanged,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
)
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.admin import DescribeGroupsRequest, ListGroupsRequest
from regroup.model.requests.classic import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from regroup.records import CoordinatorRecord
from regroup.records.classic import GroupMetadataKey, GroupMetadataValue

__all__ = ["GROUP_PROTOCOL", "ClassicGroupManager"]

#: ``group_protocol`` of the events this manager emits.
GROUP_PROTOCOL: Final = "classic"

Handler = Callable[[Hashable, Any, int], CoordinatorResult]


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"classic-heartbeat/{group_id}/{member_id}"


def join_key(group_id: str) -> str:
    return f"classic-join/{group_id}"


def sync_key(group_id: str) -> str:
    return f"classic-sync/{group_id}"


class ClassicGroupManager:
    """Every classic group of one coordinator (Kafka: ``GroupMetadataManager``, classic part)."""

    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator

    # -- the manager contract ----------------------------------------------------------

    def handlers(self) -> dict[type, Handler]:
        return {
            JoinGroupRequest: lambda t, r, now: classic_join.handle_join_group(self, t, r, now),
            SyncGroupRequest: lambda t, r, now: classic_sync.handle_sync_group(self, t, r, now),
            HeartbeatRequest: lambda t, r, now: classic_membership.handle_heartbeat(
                self, t, r, now
            ),
            LeaveGroupRequest: lambda t, r, now: classic_membership.handle_leave_group(
                self, t, r, now
            ),
            ListGroupsRequest: lambda t, r, now: classic_admin.handle_list_groups(self, t, r, now),
            DescribeGroupsRequest: lambda t, r, now: classic_admin.handle_describe_groups(
                self, t, r, now
            ),
        }

    def replay(self, record: CoordinatorRecord) -> bool:
        """Apply a GroupMetadata record (Kafka: ``GroupMetadataManager.replay``)."""
        if not isinstance(record.key, GroupMetadataKey):
            return False
        group_id = record.key.group
        if record.value is None:
            existing = self.classic_group(group_id)
            if existing is not None:
                existing.state = ClassicGroupState.DEAD
                del self.coordinator.groups[group_id]
            return True
        assert isinstance(record.value, GroupMetadataValue)
        self.coordinator.groups[group_id] = group_from_value(group_id, record.value)
        return True

    def on_loaded(self, now_ms: int) -> CoordinatorResult:
        """After a replay: arm every member's session timer (Kafka ``onLoaded``).

        Records carry no timers, so a rebuilt group would never expire a
        member; like Kafka, every member of a loaded group gets a fresh
        session timeout, and a group above ``group.max.size`` (the limit may
        have been lowered) rebalances at once.
        """
        out = CoordinatorResult()
        for group_id in list(self.coordinator.groups):
            group = self.classic_group(group_id)
            if group is None or not group.members:
                continue
            for member in group:
                self.schedule_heartbeat(group, member, now_ms)
            if len(group) > self.config.group_max_size and group.can_rebalance():
                self.prepare_rebalance(group, "freshly-loaded group is over capacity", now_ms, out)
        return out

    # -- lookups -----------------------------------------------------------------------

    @property
    def config(self) -> Any:
        return self.coordinator.config

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        group = self.coordinator.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    def create_group(self, group_id: str, now_ms: int) -> ClassicGroup:
        """A new Empty classic group (Kafka: ``getOrMaybeCreateClassicGroup(id, true)``)."""
        group = ClassicGroup(group_id, now_ms)
        self.coordinator.groups[group_id] = group
        return group

    def delete_group(self, group_id: str, now_ms: int) -> CoordinatorResult:
        """Delete an Empty classic group (Kafka DeleteGroups): Dead, tombstone, no more group.

        Raises ``KafkaProtocolError`` GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP.
        Its offsets are the offset manager's (``OffsetManager.delete_group_offsets``).
        """
        group = self.classic_group(group_id)
        if group is None:
            raise KafkaProtocolError(ErrorCode.GROUP_ID_NOT_FOUND)
        if not group.is_in(ClassicGroupState.EMPTY) or group.pending_members:
            raise KafkaProtocolError(ErrorCode.NON_EMPTY_GROUP)
        out = CoordinatorResult()
        self.transition(group, ClassicGroupState.DEAD, now_ms, out)
        self.coordinator.timer.cancel(join_key(group_id))
        self.coordinator.timer.cancel(sync_key(group_id))
        del self.coordinator.groups[group_id]
        out.records.append(group_tombstone(group_id))
        return out

    # -- events and records ------------------------------------------------------------

    def emit(self, out: CoordinatorResult, event: Event) -> None:
        out.events.append(event)

    def persist(self, group: ClassicGroup, out: CoordinatorResult) -> None:
        out.records.append(group_metadata_record(group))

    def transition(
        self, group: ClassicGroup, new_state: ClassicGroupState, now_ms: int, out: CoordinatorResult
    ) -> None:
        old = group.state
        group.transition_to(new_state, now_ms)
        self.state_changed(group, old, now_ms, out)

    def state_changed(
        self, group: ClassicGroup, old: ClassicGroupState, now_ms: int, out: CoordinatorResult
    ) -> None:
        if old is not group.state:
            self.emit(
                out,
                GroupStateChanged(
                    ts_ms=now_ms,
                    group_id=group.group_id,
                    group_protocol=GROUP_PROTOCOL,
                    old_state=old.value,
                    new_state=group.state.value,
                ),
            )

    def member_joined(
        self, group: ClassicGroup, member: ClassicGroupMember, now_ms: int, out: CoordinatorResult
    ) -> None:
        self.emit(
            out,
            MemberJoined(
                ts_ms=now_ms,
                group_id=group.group_id,
                member_id=member.member_id,
                group_protocol=GROUP_PROTOCOL,
                instance_id=member.group_instance_id,
                client_id=member.client_id,
            ),
        )

    def member_left(
        self,
        group: ClassicGroup,
        member: ClassicGroupMember,
        reason: str,
        now_ms: int,
        out: CoordinatorResult,
    ) -> None:
        self.emit(
            out,
            MemberLeft(
                ts_ms=now_ms,
                group_id=group.group_id,
                member_id=member.member_id,
                group_protocol=GROUP_PROTOCOL,
                reason=reason,
                instance_id=member.group_instance_id,
            ),
        )

    # -- timers ------------------------------------------------------------------------

    def schedule_heartbeat(
        self,
        group: ClassicGroup,
        member: ClassicGroupMember,
        now_ms: int,
        timeout_ms: int | None = None,
    ) -> None:
        """(Re)arm a member's session timer (Kafka: ``rescheduleClassicGroupMemberHeartbeat``)."""
        group_id, member_id = group.group_id, member.member_id
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self.coordinator.timer.schedule(
            heartbeat_key(group_id, member_id),
            now_ms + timeout,
            lambda now: self.expire_heartbeat(group_id, member_id, now),
        )

    def schedule_pending_member_heartbeat(
        self, group: ClassicGroup, member_id: str, session_timeout_ms: int, now_ms: int
    ) -> None:
        group_id = group.group_id
        self.coordinator.timer.schedule(
            heartbeat_key(group_id, member_id),
            now_ms + session_timeout_ms,
            lambda now: self.expire_heartbeat(group_id, member_id, now),
        )

    def cancel_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        self.coordinator.timer.cancel(heartbeat_key(group.group_id, member_id))

    def expire_heartbeat(self, group_id: str, member_id: str, now_ms: int) -> CoordinatorResult:
        """Session (or new-member join) timeout (Kafka: ``expireClassicGroupMemberHeartbeat``)."""
        out = CoordinatorResult()
        group = self.classic_group(group_id)
        if group is None or group.is_in(ClassicGroupState.DEAD):
            return out
        if group.is_pending_member(member_id):
            group.remove(member_id)
            if (
                group.is_in(ClassicGroupState.PREPARING_REBALANCE)
                and group.has_all_members_joined()
            ):
                self.complete_join(group, now_ms, out)
            return out
        member = group.members.get(member_id)
        if member is None:
            return out
        if member.is_new:
            self.remove_member_and_update(group, member, "join_timeout", now_ms, out)
        elif not (member.is_awaiting_join or member.is_awaiting_sync):
            self.remove_member_and_update(group, member, "session_timeout", now_ms, out)
        return out

    # -- the rebalance barrier ---------------------------------------------------------

    def prepare_rebalance(
        self, group: ClassicGroup, reason: str, now_ms: int, out: CoordinatorResult
    ) -> None:
        """Enter the join phase (Kafka: ``prepareRebalance``).

        Parked SyncGroups of CompletingRebalance are answered REBALANCE_IN_PROGRESS;
        the sync timer stops. From Empty, the initial rebalance delay starts
        (``group.initial.rebalance.delay.ms``); otherwise the join phase may
        complete at once, or waits up to the group's rebalance timeout.
        """
        if group.is_in(ClassicGroupState.COMPLETING_REBALANCE):
            self.reset_and_propagate_with_error(group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms, out)
        self.coordinator.timer.cancel(sync_key(group.group_id))
        initial = group.is_in(ClassicGroupState.EMPTY)
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_delay(group, delay, remaining, now_ms)
        self.transition(group, ClassicGroupState.PREPARING_REBALANCE, now_ms, out)
        self.emit(
            out,
            RebalanceStarted(
                ts_ms=now_ms, group_id=group.group_id, generation=group.generation_id, reason=reason
            ),
        )
        if not initial:
            self.maybe_complete_join_else_schedule(group, now_ms, out)

    def _schedule_initial_delay(
        self, group: ClassicGroup, delay: int, remaining: int, now_ms: int
    ) -> None:
        group_id = group.group_id
        self.coordinator.timer.schedule(
            join_key(group_id),
            now_ms + delay,
            lambda now: self.initial_delay_expired(group_id, delay, remaining, now),
        )

    def initial_delay_expired(
        self, group_id: str, delay: int, remaining: int, now_ms: int
    ) -> CoordinatorResult:
        """Kafka ``tryCompleteInitialRebalanceElseSchedule``: wait again while members arrive."""
        out = CoordinatorResult()
        group = self.classic_group(group_id)
        if group is None or not group.is_in(ClassicGroupState.PREPARING_REBALANCE):
            return out
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self._schedule_initial_delay(group, new_delay, new_remaining, now_ms)
        else:
            self.complete_join(group, now_ms, out)
        return out

    def maybe_complete_join_else_schedule(
        self, group: ClassicGroup, now_ms: int, out: CoordinatorResult
    ) -> None:
        if group.is_in(ClassicGroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self.complete_join(group, now_ms, out)
        else:
            self._schedule_join_timeout(group, now_ms)

    def _schedule_join_timeout(self, group: ClassicGroup, now_ms: int) -> None:
        group_id = group.group_id

        def expire(now: int) -> CoordinatorResult:
            result = CoordinatorResult()
            current = self.classic_group(group_id)
            if current is not None and current.is_in(ClassicGroupState.PREPARING_REBALANCE):
                self.complete_join(current, now, result)
            return result

        self.coordinator.timer.schedule(
            join_key(group_id), now_ms + group.rebalance_timeout_ms(), expire
        )

    def maybe_complete_join_phase(
        self, group: ClassicGroup, now_ms: int, out: CoordinatorResult
    ) -> None:
        """Kafka ``maybeCompleteJoinPhase``: never early while the initial delay runs."""
        if (
            group.is_in(ClassicGroupState.PREPARING_REBALANCE)
            and group.has_all_members_joined()
            and group.previous_state is not ClassicGroupState.EMPTY
        ):
            self.complete_join(group, now_ms, out)

    def maybe_prepare_rebalance_or_complete_join(
        self, group: ClassicGroup, reason: str, now_ms: int, out: CoordinatorResult
    ) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, reason, now_ms, out)
        else:
            self.maybe_complete_join_phase(group, now_ms, out)

    def complete_join(self, group: ClassicGroup, now_ms: int, out: CoordinatorResult) -> None:
        """End the join phase (Kafka: ``completeClassicGroupJoin``).

        Dynamic members that did not rejoin are removed (static ones stay and
        must sync in time); the leader must have rejoined (else a member that
        did leads; if nobody did, the phase waits another rebalance timeout);
        the generation is bumped, the protocol voted; every parked JoinGroup is
        answered, the member list going to the leader only.
        """
        self.coordinator.timer.cancel(join_key(group.group_id))
        if group.is_in(ClassicGroupState.DEAD):
            return
        for member in group:
            if not member.is_awaiting_join and not member.is_static:
                group.remove(member.member_id)
                self.cancel_heartbeat(group, member.member_id)
                self.member_left(group, member, "rebalance_timeout", now_ms, out)
        if not group.maybe_elect_new_joined_leader() and group.members:
            self._schedule_join_timeout(group, now_ms)
            return
        old = group.state
        group.init_next_generation(now_ms)
        self.state_changed(group, old, now_ms, out)
        self.emit(
            out,
            GenerationBumped(
                ts_ms=now_ms,
                group_id=group.group_id,
                generation=group.generation_id,
                protocol_name=group.protocol_name,
                leader_id=group.leader_id or "",
                member_ids=tuple(group.members),
            ),
        )
        if group.is_in(ClassicGroupState.EMPTY):
            self.persist(group, out)
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
            self.schedule_heartbeat(group, member, now_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._schedule_pending_sync(group, now_ms)

    def _schedule_pending_sync(self, group: ClassicGroup, now_ms: int) -> None:
        group_id, generation = group.group_id, group.generation_id
        self.coordinator.timer.schedule(
            sync_key(group_id),
            now_ms + group.rebalance_timeout_ms(),
            lambda now: self.expire_pending_sync(group_id, generation, now),
        )

    def expire_pending_sync(self, group_id: str, generation: int, now_ms: int) -> CoordinatorResult:
        """Kafka ``expirePendingSync``: remove members that never sent SyncGroup, rebalance."""
        out = CoordinatorResult()
        group = self.classic_group(group_id)
        if group is None or group.generation_id != generation:
            return out
        if (
            not group.is_in(ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.STABLE)
            or not group.pending_sync_members
        ):
            return out
        late = [group.members[m] for m in group.members if m in group.pending_sync_members]
        for member in late:
            self._answer_join(member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), out)
            self._answer_sync(member, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), out)
            group.remove(member.member_id)
            self.cancel_heartbeat(group, member.member_id)
            self.member_left(group, member, "sync_timeout", now_ms, out)
        group.pending_sync_members.clear()
        self.prepare_rebalance(
            group, f"removing {[m.member_id for m in late]} on pending sync expiration", now_ms, out
        )
        return out

    def remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self.coordinator.timer.cancel(sync_key(group.group_id))

    # -- answering parked requests ------------------------------------------------------

    @staticmethod
    def _answer_join(
        member: ClassicGroupMember, response: JoinGroupResponse, out: CoordinatorResult
    ) -> None:
        if member.awaiting_join is not None:
            out.reply(member.awaiting_join, response)
            member.awaiting_join = None

    @staticmethod
    def _answer_sync(
        member: ClassicGroupMember, response: SyncGroupResponse, out: CoordinatorResult
    ) -> None:
        if member.awaiting_sync is not None:
            out.reply(member.awaiting_sync, response)
            member.awaiting_sync = None

    def answer_join(
        self, member: ClassicGroupMember, response: JoinGroupResponse, out: CoordinatorResult
    ) -> None:
        self._answer_join(member, response, out)

    def answer_sync(
        self, member: ClassicGroupMember, response: SyncGroupResponse, out: CoordinatorResult
    ) -> None:
        self._answer_sync(member, response, out)

    def propagate_assignment(
        self, group: ClassicGroup, error: ErrorCode, now_ms: int, out: CoordinatorResult
    ) -> None:
        """Answer every parked SyncGroup (Kafka: ``propagateAssignment``); re-arm their sessions."""
        for member in group:
            if member.awaiting_sync is None:
                continue
            self._answer_sync(
                member,
                SyncGroupResponse(
                    error_code=error,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    assignment=member.assignment,
                ),
                out,
            )
            self.schedule_heartbeat(group, member, now_ms)

    def reset_and_propagate_with_error(
        self, group: ClassicGroup, error: ErrorCode, now_ms: int, out: CoordinatorResult
    ) -> None:
        for member in group:
            member.assignment = b""
        self.propagate_assignment(group, error, now_ms, out)

    def remove_member_and_update(
        self,
        group: ClassicGroup,
        member: ClassicGroupMember,
        reason: str,
        now_ms: int,
        out: CoordinatorResult,
    ) -> None:
        """Kafka ``removeMemberAndUpdateClassicGroup``: drop; rebalance or finish the join phase."""
        self._answer_join(member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), out)
        self._answer_sync(member, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID), out)
        group.remove(member.member_id)
        self.cancel_heartbeat(group, member.member_id)
        self.member_left(group, member, reason, now_ms, out)
        if group.is_in(ClassicGroupState.STABLE, ClassicGroupState.COMPLETING_REBALANCE):
            self.prepare_rebalance(
                group, f"removing member {member.member_id} ({reason})", now_ms, out
            )
        elif group.is_in(ClassicGroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self.complete_join(group, now_ms, out)
