"""Online upgrade: a ConsumerGroupHeartbeat that joins a classic group's id converts the group.

Kafka 3.8+ (``group.consumer.migration.policy``, default BIDIRECTIONAL;
``GroupMetadataManager.validateOnlineUpgrade``, ``convertToConsumerGroup``,
``ConsumerGroup.fromClassicGroup``, ``createConsumerGroupRecords``): a group id
keeps its members while it changes type.

A joining member (epoch 0) whose group id names a classic group takes it over
(``take_over``):

* an empty classic group makes way: its GroupMetadata tombstone is written and
  the id is free (Kafka ``getOrMaybeCreateConsumerGroup`` calls
  ``maybeDeleteEmptyClassicGroup``, which writes ``ClassicGroup.createGroupTombstoneRecords``
  for every empty classic group, a "simple" group that only stores offsets and
  was never written too; replaying that tombstone removes the group, as Kafka's
  ``replay(GroupMetadataKey, null)`` removes whatever group holds the id);
* a classic group with members is converted when the policy allows upgrades
  (BIDIRECTIONAL or UPGRADE), the group uses the consumer embedded protocol
  (protocol type ``consumer``) and it has no more members than
  ``group.consumer.max.size``;
* otherwise the heartbeat gets GROUP_ID_NOT_FOUND "Group <id> is not a consumer
  group." (Kafka's ``getOrMaybeCreatePersistedConsumerGroup``).

Every classic member becomes a consumer group member that still speaks the
classic protocol: its epoch (and previous epoch) is the generation, it is
STABLE, its assigned partitions and its target are its classic assignment, its
subscription and rack come from its Subscription bytes, and its session timeout
and supported protocols are kept as ``ClassicMemberMetadata``. The group epoch
and the assignment epoch are the generation. Records, in Kafka's order: the
classic group's tombstone; every member's metadata; the group epoch; every
member's target; the assignment epoch; every member's current assignment. The
joining KIP-848 member then bumps the epoch as any new member does.

The heartbeat may still fail after the conversion; ``finish_upgrade`` then puts
the classic group back, untouched (Kafka rolls the conversion back with the
failed write). When it succeeds, the parked JoinGroup / SyncGroup requests of the
classic group are answered REBALANCE_IN_PROGRESS so those members rejoin, into
the consumer group. A classic member is not a consumer group "member" in
regroup's events until then: conversion emits no ``member_joined``. When the
classic group never chose a protocol, the member's first protocol is read.
"""

from __future__ import annotations

from regroup.classic.group.group import ClassicGroup
from regroup.consumer.group.group_member import (
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
)
from regroup.coordinator.classic.rebalance import (
    answer_join,
    answer_sync,
    heartbeat_key,
    join_key,
    sync_key,
)
from regroup.coordinator.classic.records import group_tombstone
from regroup.coordinator.consumer import records
from regroup.coordinator.consumer.embedded import (
    CONSUMER_PROTOCOL_TYPE,
    assignment_from_bytes,
    subscription_of,
)
from regroup.coordinator.consumer.fencing import schedule_session
from regroup.coordinator.consumer.txn import ConsumerTxn
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import JoinGroupResponse, SyncGroupResponse

__all__ = ["finish_upgrade", "take_over"]


def _valid(state: GroupCoordinatorState, group: ClassicGroup) -> bool:
    """Kafka ``validateOnlineUpgrade`` (the reasons are Kafka's log lines)."""
    if not state.config.migration_policy.is_upgrade_enabled:
        return False
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    return len(group.members) <= state.config.group_consumer_max_size


def take_over(txn: ConsumerTxn, classic: ClassicGroup) -> bool:
    """A joining member meets ``classic`` under its group id; True when the id is now free
    or a consumer group's (the classic group is kept for ``finish_upgrade``)."""
    state = txn.state
    group_id = classic.group_id
    if not classic.members and not classic.pending_members:
        txn.result.records.append(group_tombstone(group_id))
        del state.groups[group_id]
        state.consumer.pending_upgrades[group_id] = classic
        return True
    if classic.members and _valid(state, classic):
        _convert_to_consumer_group(txn, classic)
        return True
    return False


def _convert_to_consumer_group(txn: ConsumerTxn, classic: ClassicGroup) -> None:
    """Write the records that turn ``classic`` into a consumer group (Kafka order).

    The classic group's tombstone is appended to the result and the classic group
    is dropped from the state directly (classic groups change by their handlers,
    not by replay); the consumer group records are written and replayed as every
    consumer group change is.
    """
    state = txn.state
    image = state.metadata
    gid = classic.group_id
    generation = classic.generation_id
    members: list[ConsumerGroupMember] = []
    for old in classic.members.values():
        protocol_name = classic.protocol_name or old.supported_protocols[0].name
        subscription = subscription_of(old.metadata(protocol_name))
        assigned = assignment_from_bytes(old.assignment, image)
        members.append(
            ConsumerGroupMember(
                member_id=old.member_id,
                instance_id=old.group_instance_id,
                rack_id=subscription.rack_id,
                rebalance_timeout_ms=old.rebalance_timeout_ms,
                client_id=old.client_id,
                client_host=old.client_host,
                subscribed_topic_names=frozenset(subscription.topics),
                state=MemberState.STABLE,
                member_epoch=generation,
                previous_member_epoch=generation,
                assigned_partitions=assigned,
                classic_member_metadata=ClassicMemberMetadata(
                    old.session_timeout_ms, old.supported_protocols
                ),
            )
        )
    txn.result.records.append(group_tombstone(gid))
    del state.groups[gid]
    state.consumer.pending_upgrades[gid] = classic
    for member in members:
        txn.write(records.member_metadata_record(gid, member))
    txn.write(records.epoch_record(gid, generation))
    for member in members:
        txn.write(records.target_member_record(gid, member.member_id, member.assigned_partitions))
    txn.write(records.target_metadata_record(gid, generation))
    for member in members:
        txn.write(records.current_assignment_record(gid, member))


def finish_upgrade(
    state: GroupCoordinatorState,
    group_id: str,
    succeeded: bool,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    """After the heartbeat that took a classic group over: answer it, or put it back.

    Succeeded: the parked JoinGroup / SyncGroup requests of the classic group get
    REBALANCE_IN_PROGRESS (Kafka ``completeAllJoinFutures`` /
    ``completeAllSyncFutures``), its timers stop, and every converted member gets
    a session timer of its own classic session timeout. Failed: the classic group
    is put back.
    """
    classic = state.consumer.pending_upgrades.pop(group_id, None)
    if classic is None:
        return
    if not succeeded:
        state.groups[group_id] = classic
        return
    for member in classic.members.values():
        answer_join(member, JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS), out)
        answer_sync(member, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS), out)
        state.timer.cancel(heartbeat_key(group_id, member.member_id))
    for pending_id in classic.pending_members:
        state.timer.cancel(heartbeat_key(group_id, pending_id))
    state.timer.cancel(join_key(group_id))
    state.timer.cancel(sync_key(group_id))
    group = state.consumer_group(group_id)
    if group is None:
        return
    for member_id in classic.members:
        converted = group.members.get(member_id)
        if converted is not None and converted.classic_member_metadata is not None:
            schedule_session(
                state,
                group_id,
                member_id,
                now_ms,
                converted.classic_member_metadata.session_timeout_ms,
            )
