"""How a member leaves a KIP-848 group: leaving, fencing, static replacement, and its timers.

KIP-848, "Member Fencing" and "Static Membership"; Kafka
``GroupMetadataManager.consumerGroupFenceMember``, ``removeMember``,
``replaceStaticMember``, ``scheduleConsumerGroupSessionTimeout``,
``scheduleConsumerGroupRebalanceTimeout``, ``scheduleConsumerGroupJoinTimeout``
and ``scheduleConsumerGroupSyncTimeout``.

* ``remove_member``: the member's three records are tombstoned (current
  assignment, target, metadata), its timers cancelled, ``member_left`` emitted.
* ``fence_member``: a member leaves for good (epoch -1) or a timer fences it:
  removed, its regular expression tombstoned when nobody else uses it, and the
  group epoch bumped so that the others rebalance. Or, when it was the last
  member speaking KIP-848 among classic ones, the online downgrade instead
  (``downgrade``).
* ``throw_if_instance_id_is_fenced``: a static member replaced by a newer
  instance of itself is fenced (FENCED_INSTANCE_ID).
* ``replace_static_member``: a static member back under a new member id takes
  the old member's target and current assignment, so nothing moves (KIP-345).
* The timers (keys in ``timers``): a session timer per member, re-armed by each
  heartbeat (a member using the classic protocol expires by its own session
  timeout); a rebalance timer while the member revokes, which fences it if it
  still revokes at the same epoch; a join and a sync timer for a member using
  the classic protocol. ``on_loaded`` arms them for groups rebuilt from records
  (timers are not records).
"""

from __future__ import annotations

from regroup.consumer.group.group_member import ConsumerGroupMember, MemberState
from regroup.coordinator.consumer import records
from regroup.coordinator.consumer.downgrade import maybe_downgrade
from regroup.coordinator.consumer.group_configs import consumer_semantics, session_timeout_ms
from regroup.coordinator.consumer.rebalance import bump_epoch, drop_in_flight
from regroup.coordinator.consumer.regex_refresh import maybe_schedule_refresh
from regroup.coordinator.consumer.timers import (
    cancel_member_timers,
    rebalance_key,
    session_key,
)
from regroup.coordinator.consumer.txn import ConsumerTxn, after_operation
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.events.schema import MemberLeft
from regroup.model.errors import ErrorCode, KafkaProtocolError

__all__ = [
    "fence_member",
    "on_loaded",
    "remove_member",
    "replace_static_member",
    "schedule_classic_timeout",
    "schedule_rebalance",
    "schedule_session",
    "throw_if_instance_id_is_fenced",
]


def remove_member(
    txn: ConsumerTxn,
    member: ConsumerGroupMember,
    group_protocol: str,
    reason: str,
    *,
    client_reason: str | None = None,
    member_epoch: int | None = None,
    rebalance_timeout_ms: int | None = None,
) -> None:
    """Kafka ``removeMember`` + ``cancelTimers``: three tombstones, no timers, ``member_left``.

    ``group_protocol``: the protocol the event names (``consumer`` or ``classic``);
    ``client_reason`` (a LeaveGroup's), ``member_epoch`` and ``rebalance_timeout_ms`` (a
    rebalance timeout's) go into the event as Kafka's log lines name them.
    """
    gid = txn.group_id
    txn.write(
        records.current_assignment_tombstone(gid, member.member_id),
        records.target_member_tombstone(gid, member.member_id),
        records.member_metadata_tombstone(gid, member.member_id),
    )
    cancel_member_timers(txn.state, gid, member.member_id)
    txn.emit(
        MemberLeft(
            ts_ms=txn.now_ms,
            group_id=gid,
            member_id=member.member_id,
            group_protocol=group_protocol,
            reason=reason,
            instance_id=member.instance_id,
            reason_text=client_reason,
            member_epoch=member_epoch,
            rebalance_timeout_ms=rebalance_timeout_ms,
        )
    )


def fence_member(
    txn: ConsumerTxn,
    member: ConsumerGroupMember,
    reason: str,
    *,
    member_epoch: int | None = None,
    rebalance_timeout_ms: int | None = None,
) -> None:
    """Kafka ``consumerGroupFenceMember``: remove the member and bump the group epoch.

    Or, when the member is the last one using the KIP-848 protocol among classic
    ones, the online downgrade instead (``downgrade``).
    """
    group = txn.group
    assert group is not None
    if maybe_downgrade(txn, member, reason):
        return
    remove_member(
        txn,
        member,
        "consumer",
        reason,
        member_epoch=member_epoch,
        rebalance_timeout_ms=rebalance_timeout_ms,
    )
    regex = member.subscribed_topic_regex
    if regex and regex in group.resolved_regexes and group.regex_subscribers(regex) == 0:
        txn.write(records.regex_tombstone(txn.group_id, regex))
    bump_epoch(txn, f"member_left:{reason}")
    drop_in_flight(txn.state, txn.group_id, member.member_id)


def throw_if_instance_id_is_fenced(
    found: ConsumerGroupMember, member_id: str, instance_id: str
) -> None:
    """Kafka ``throwIfInstanceIdIsFenced``: the static member the group holds under
    ``instance_id`` must be the one asking (``member_id``); a newer instance of it replaced
    this one, which is FENCED_INSTANCE_ID (KIP-345). For ConsumerGroupHeartbeat and for a
    classic member of a consumer group alike."""
    if found.member_id != member_id:
        raise KafkaProtocolError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} was fenced by "
            f"member {found.member_id}.",
        )


def replace_static_member(
    txn: ConsumerTxn,
    replaced: ConsumerGroupMember,
    updated: ConsumerGroupMember,
    group_protocol: str,
) -> None:
    """A static member rejoined under a new member id (KIP-345; Kafka ``replaceStaticMember``).

    The old member is removed and the new one takes over its target and current
    assignment, so nothing moves. ``group_protocol``: the protocol of the new
    member (``consumer`` or ``classic``).
    """
    gid = txn.group_id
    group = txn.group
    assert group is not None
    old_target = group.target_of(replaced.member_id)
    had_target = replaced.member_id in group.target_assignment
    remove_member(txn, replaced, group_protocol, "replaced")
    txn.write(records.member_metadata_record(gid, updated))
    if had_target:
        txn.write(records.target_member_record(gid, updated.member_id, old_target))
    txn.write(records.current_assignment_record(gid, updated))
    drop_in_flight(txn.state, gid, replaced.member_id)


# -- timers -------------------------------------------------------------------------------


def schedule_session(
    state: GroupCoordinatorState,
    group_id: str,
    member_id: str,
    now_ms: int,
    timeout_ms: int | None = None,
) -> None:
    """(Re)arm the session timer; ``timeout_ms``: a classic member's own timeout, or the
    group's session timeout when the caller has read it already (else it is read here)."""
    timeout = session_timeout_ms(state, group_id) if timeout_ms is None else timeout_ms
    state.timer.schedule(
        session_key(group_id, member_id),
        now_ms + timeout,
        lambda now: _session_timed_out(state, group_id, member_id, now),
        owner=group_id,
    )


def schedule_rebalance(
    state: GroupCoordinatorState, group_id: str, member: ConsumerGroupMember, now_ms: int
) -> None:
    """Arm the rebalance timer of a member that must revoke partitions at its epoch."""
    epoch = member.member_epoch
    member_id = member.member_id
    state.timer.schedule(
        rebalance_key(group_id, member_id),
        now_ms + max(member.rebalance_timeout_ms, 0),
        lambda now: _rebalance_timed_out(state, group_id, member_id, epoch, now),
        owner=group_id,
    )


def schedule_classic_timeout(
    state: GroupCoordinatorState,
    key: str,
    group_id: str,
    member_id: str,
    timeout_ms: int,
    now_ms: int,
    reason: str,
) -> None:
    """Kafka ``scheduleConsumerGroupJoinTimeout`` / ``scheduleConsumerGroupSyncTimeout``."""
    state.timer.schedule(
        key,
        now_ms + max(timeout_ms, 0),
        lambda now: _classic_timed_out(state, group_id, member_id, reason, now),
        owner=group_id,
    )


def _session_timed_out(
    state: GroupCoordinatorState, group_id: str, member_id: str, now_ms: int
) -> CoordinatorResult:
    group = state.consumer_group(group_id)
    if group is None or member_id not in group.members:
        return CoordinatorResult()
    txn = ConsumerTxn(state, group_id, now_ms)
    fence_member(txn, group.members[member_id], "session_timeout")
    return txn.finish()


def _rebalance_timed_out(
    state: GroupCoordinatorState, group_id: str, member_id: str, epoch: int, now_ms: int
) -> CoordinatorResult:
    group = state.consumer_group(group_id)
    member = None if group is None else group.members.get(member_id)
    if (
        member is None
        or member.member_epoch != epoch
        or member.state is not MemberState.UNREVOKED_PARTITIONS
    ):
        return CoordinatorResult()
    txn = ConsumerTxn(state, group_id, now_ms)
    fence_member(
        txn,
        member,
        "rebalance_timeout",
        member_epoch=epoch,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
    )
    return txn.finish()


def _classic_timed_out(
    state: GroupCoordinatorState, group_id: str, member_id: str, reason: str, now_ms: int
) -> CoordinatorResult:
    group = state.consumer_group(group_id)
    member = None if group is None else group.members.get(member_id)
    if member is None or not member.use_classic_protocol:
        return CoordinatorResult()
    txn = ConsumerTxn(state, group_id, now_ms)
    fence_member(txn, member, reason)
    return txn.finish()


def on_loaded(state: GroupCoordinatorState, now_ms: int, only: str | None = None) -> None:
    """Arm the timers of groups rebuilt from records (Kafka ``GroupMetadataManager.onLoaded``).

    ``only``: the one group rebuilt (``regroup.coordinator.guard``), not all.

    Every member gets a fresh session timer, every member still revoking a
    rebalance timer, and every EMPTY group its expiration.
    """
    for group_id in sorted(state.groups) if only is None else [only]:
        group = state.consumer_group(group_id)
        if group is None:
            continue
        for member in group.members.values():
            classic = member.classic_member_metadata
            schedule_session(
                state,
                group_id,
                member.member_id,
                now_ms,
                None if classic is None else classic.session_timeout_ms,
            )
            if member.state is MemberState.UNREVOKED_PARTITIONS:
                schedule_rebalance(state, group_id, member, now_ms)
        if consumer_semantics(state, group_id).is_kafka:
            maybe_schedule_refresh(state, group_id, now_ms)
        after_operation(state, group_id, group.state_name(), now_ms)
