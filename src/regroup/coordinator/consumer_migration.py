"""Online migration of a group between the classic protocol and KIP-848 (both ways).

Kafka 3.8+ (the KIP-848 follow-up "online upgrade/downgrade", broker config
``group.consumer.migration.policy``, default BIDIRECTIONAL): a group id keeps its
members while it changes type.

Upgrade (Kafka ``GroupMetadataManager.validateOnlineUpgrade`` and
``convertToConsumerGroup``, ``ConsumerGroup.fromClassicGroup`` and
``createConsumerGroupRecords``): a ConsumerGroupHeartbeat that joins a group id
held by a non-empty classic group converts that group when

* the policy allows upgrades (BIDIRECTIONAL or UPGRADE),
* the group uses the consumer embedded protocol (protocol type ``consumer``),
* it has no more members than ``group.consumer.max.size``;

otherwise the heartbeat gets GROUP_ID_NOT_FOUND "Group <id> is not a consumer
group." (Kafka's ``getOrMaybeCreatePersistedConsumerGroup``). Every classic
member becomes a consumer group member that still speaks the classic protocol:
its epoch (and previous epoch) is the generation, it is STABLE, its assigned
partitions and its target are its classic assignment, its subscription and
rack come from its Subscription bytes, and its session timeout and supported
protocols are kept as ``ClassicMemberMetadata``. The group epoch and the
assignment epoch are the generation. Records, in Kafka's order: the classic
group's tombstone; every member's metadata; the group epoch; every member's
target; the assignment epoch; every member's current assignment. Parked
JoinGroup / SyncGroup requests of the classic group are answered
REBALANCE_IN_PROGRESS so those members rejoin, into the consumer group. The
joining KIP-848 member then bumps the epoch as any new member does (writing the
subscription metadata with it, as Kafka's heartbeat does).

Downgrade (Kafka ``validateOnlineDowngradeWithFencedMember``,
``convertToClassicGroup``, ``ClassicGroup.fromConsumerGroup``): when a member
that uses the KIP-848 protocol leaves or is fenced and every other member uses
the classic protocol, the group has other members, the policy allows
downgrades (BIDIRECTIONAL or DOWNGRADE) and the rest fits ``group.max.size``,
the consumer group's records are tombstoned and a classic group is written in
their place: generation = group epoch, protocol type ``consumer``, the protocol
every member votes for, each member's assignment its *target* encoded in the
ConsumerProtocol Assignment version of its Subscription. Then, as Kafka does,
the classic group prepares a rebalance ("Downgrade group <id> from consumer to
classic.").

Downgrade by static replacement (Kafka 4.x ``validateOnlineDowngradeWithReplacedMember``
in ``classicGroupJoinToConsumerGroup``): a static member that joins with the classic
protocol and takes the place of the group's last member using the KIP-848 protocol
downgrades the group the same way, under the same policy and size conditions, once the
joining member has taken over the replaced member's assignment. Nobody left, so no
rebalance is prepared, unless the joining member's subscription differs from the replaced
member's ("... for static member replacement with different subscription."); the joining
member's JoinGroup is answered at once, and its SyncGroup then goes to the classic group.

Departures from Kafka (each said where it happens): empty assignment bytes (a
classic member that has not synced yet) convert to no partitions, where Kafka
would fail to parse them; when the classic group never chose a protocol, the
member's first protocol is read. A classic member is not a consumer group
"member" in regroup's events until then: conversion emits no member_joined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from regroup.assignors.classic.api import Assignment as ClassicAssignment
from regroup.assignors.classic.api import Subscription
from regroup.classic import protocol as consumer_protocol
from regroup.classic.group import ClassicGroup
from regroup.classic.group_member import ClassicGroupMember
from regroup.classic.group_state import ClassicGroupState
from regroup.consumer.group import ConsumerGroup
from regroup.consumer.group_member import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
)
from regroup.coordinator import consumer_records as rec
from regroup.coordinator.classic.rebalance import (
    heartbeat_key,
    join_key,
    prepare_rebalance,
    schedule_heartbeat,
    sync_key,
)
from regroup.coordinator.classic.records import group_metadata_record, group_tombstone
from regroup.coordinator.consumer_txn import ConsumerTxn
from regroup.coordinator.result import CoordinatorResult
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import JoinGroupResponse, SyncGroupResponse
from regroup.model.topic_partition import TopicPartition
from regroup.model.uuid import Uuid

if TYPE_CHECKING:
    from regroup.coordinator.consumer_manager import ConsumerGroupManager

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "PendingUpgrade",
    "convert_to_classic_group",
    "convert_to_consumer_group",
    "decode_subscription",
    "finish_upgrade",
    "maybe_downgrade",
    "maybe_downgrade_on_replacement",
    "partitions_to_assignment",
    "validate_online_upgrade",
]

#: Kafka ``ConsumerProtocol.PROTOCOL_TYPE``.
CONSUMER_PROTOCOL_TYPE = "consumer"


def upgrade_enabled(policy: str) -> bool:
    """Kafka ``ConsumerGroupMigrationPolicy.isUpgradeEnabled``."""
    return policy in ("BIDIRECTIONAL", "UPGRADE")


def downgrade_enabled(policy: str) -> bool:
    """Kafka ``ConsumerGroupMigrationPolicy.isDowngradeEnabled``."""
    return policy in ("BIDIRECTIONAL", "DOWNGRADE")


def validate_online_upgrade(manager: ConsumerGroupManager, group: ClassicGroup) -> bool:
    """Kafka ``validateOnlineUpgrade`` (the reasons are Kafka's log lines)."""
    config = manager.state.config
    if not upgrade_enabled(config.group_consumer_migration_policy):
        return False
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    return len(group.members) <= int(config.group_consumer_max_size)


def decode_subscription(metadata: bytes) -> Subscription:
    """The member's ConsumerProtocol Subscription; malformed bytes are GROUP_ID_NOT_FOUND.

    Kafka throws ``GroupIdNotFoundException`` when a conversion meets a malformed
    embedded protocol (``convertToConsumerGroup``); a JoinGroup into a consumer
    group with a malformed Subscription is refused INCONSISTENT_GROUP_PROTOCOL by
    the caller.
    """
    try:
        return consumer_protocol.decode_subscription(metadata)
    except Exception as exc:
        raise KafkaProtocolError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot read the embedded consumer protocol: {exc}",
        ) from None


def partitions_to_assignment(
    partitions: object, image: MetadataImage
) -> dict[Uuid, frozenset[int]]:
    """Topic-name partitions to an assignment by topic id; unknown topics are dropped.

    Kafka ``topicPartitionMapFromList`` (upgrade) / ``toTopicPartitions``: a topic
    the metadata image does not know has no id, and is left out.
    """
    by_topic: dict[Uuid, set[int]] = {}
    for tp in partitions:  # type: ignore[attr-defined]
        assert isinstance(tp, TopicPartition)
        topic = image.topic(tp.topic)
        if topic is not None:
            by_topic.setdefault(topic.topic_id, set()).add(tp.partition)
    return {topic_id: frozenset(ps) for topic_id, ps in by_topic.items()}


def _assignment_of(member: ClassicGroupMember, image: MetadataImage) -> Assignment:
    if not member.assignment:
        return {}  # not synced yet (Kafka would fail to parse empty bytes)
    try:
        decoded = consumer_protocol.decode_assignment(member.assignment)
    except Exception as exc:
        raise KafkaProtocolError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade the classic group because the embedded consumer protocol is "
            f"malformed: {exc}",
        ) from None
    return partitions_to_assignment(decoded.partitions, image)


@dataclass(slots=True)
class PendingUpgrade:
    """A conversion written in an operation not yet finished: the classic group it replaced."""

    classic: ClassicGroup


def convert_to_consumer_group(
    manager: ConsumerGroupManager, txn: ConsumerTxn, classic: ClassicGroup
) -> None:
    """Write the records that turn ``classic`` into a consumer group (Kafka order).

    The classic group's tombstone is appended to the result and the classic group
    is dropped from the coordinator directly (classic groups change by their
    handlers, not by replay, in regroup as in Kafka); the consumer group records
    are written and replayed as every consumer group change is. The parked
    requests of the classic group are answered by ``finish_upgrade``, once the
    operation has succeeded.
    """
    image: MetadataImage = manager.state.metadata
    gid = classic.group_id
    generation = classic.generation_id
    members: list[ConsumerGroupMember] = []
    for old in classic.members.values():
        protocol_name = classic.protocol_name or old.supported_protocols[0].name
        subscription = decode_subscription(old.metadata(protocol_name))
        assigned = _assignment_of(old, image)
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
    del manager.state.groups[gid]
    manager.pending_upgrades[gid] = PendingUpgrade(classic)
    for member in members:
        txn.write(rec.member_metadata_record(gid, member))
    txn.write(rec.epoch_record(gid, generation))
    for member in members:
        txn.write(rec.target_member_record(gid, member.member_id, member.assigned_partitions))
    txn.write(rec.target_metadata_record(gid, generation))
    for member in members:
        txn.write(rec.current_assignment_record(gid, member))


def finish_upgrade(
    manager: ConsumerGroupManager,
    group_id: str,
    succeeded: bool,
    now_ms: int,
    out: CoordinatorResult,
) -> None:
    """After the heartbeat that converted a group: answer or restore the classic group.

    Succeeded: the parked JoinGroup / SyncGroup requests of the classic group get
    REBALANCE_IN_PROGRESS (Kafka ``completeAllJoinFutures`` /
    ``completeAllSyncFutures``), its timers stop, and every member gets a session
    timer of its own classic session timeout. Failed: the classic group is put
    back, untouched (Kafka rolls the conversion back with the failed write).
    """
    pending = manager.pending_upgrades.pop(group_id, None)
    if pending is None:
        return
    classic = pending.classic
    state = manager.state
    if not succeeded:
        state.groups[group_id] = classic
        return
    for member in classic.members.values():
        if member.awaiting_join is not None:
            out.reply(member.awaiting_join, JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
            member.awaiting_join = None
        if member.awaiting_sync is not None:
            out.reply(member.awaiting_sync, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
            member.awaiting_sync = None
        state.timer.cancel(heartbeat_key(group_id, member.member_id))
    for pending_id in classic.pending_members:
        state.timer.cancel(heartbeat_key(group_id, pending_id))
    state.timer.cancel(join_key(group_id))
    state.timer.cancel(sync_key(group_id))
    group = manager.consumer_group(group_id)
    if group is None:
        return
    for member_id in classic.members:
        converted = group.members.get(member_id)
        if converted is not None and converted.classic_member_metadata is not None:
            manager.schedule_session(
                group_id, member_id, now_ms, converted.classic_member_metadata.session_timeout_ms
            )


# -- downgrade --------------------------------------------------------------------------------


def validate_online_downgrade(
    manager: ConsumerGroupManager, group: ConsumerGroup, leaving: ConsumerGroupMember
) -> bool:
    """Kafka ``validateOnlineDowngradeWithFencedMember``."""
    if leaving.use_classic_protocol:
        return False
    if any(
        not m.use_classic_protocol
        for m in group.members.values()
        if m.member_id != leaving.member_id
    ):
        return False
    if len(group.members) <= 1:
        return False  # Kafka: "Skip downgrading ... because it's empty."
    config = manager.state.config
    if not downgrade_enabled(config.group_consumer_migration_policy):
        return False
    return len(group.members) - 1 <= int(config.group_max_size)


def maybe_downgrade(
    manager: ConsumerGroupManager, txn: ConsumerTxn, leaving: ConsumerGroupMember, reason: str
) -> bool:
    """Convert instead of removing ``leaving`` when that is a valid downgrade; True if done."""
    group = txn.group
    if group is None or not validate_online_downgrade(manager, group, leaving):
        return False
    convert_to_classic_group(
        manager,
        txn,
        group,
        leaving,
        reason,
        rebalance=f"Downgrade group {group.group_id} from consumer to classic.",
    )
    return True


def maybe_downgrade_on_replacement(
    manager: ConsumerGroupManager,
    txn: ConsumerTxn,
    replaced: ConsumerGroupMember,
    subscription_changed: bool,
) -> bool:
    """Kafka ``validateOnlineDowngradeWithReplacedMember``, after a classic static member
    took ``replaced``'s place (``replace_static_member``): downgrade if ``replaced`` was the
    last member using the KIP-848 protocol. True if the group is now a classic group."""
    group = txn.group
    if group is None or replaced.use_classic_protocol:
        return False
    # The replacement is already written, so "every member but the replaced one" is
    # every member now; the count is the same as before it.
    if not all(m.use_classic_protocol for m in group.members.values()):
        return False
    config = manager.state.config
    if not downgrade_enabled(config.group_consumer_migration_policy):
        return False
    if len(group.members) > int(config.group_max_size):
        return False
    gid = group.group_id
    convert_to_classic_group(
        manager,
        txn,
        group,
        None,
        "replaced",
        rebalance=(
            f"Downgrade group {gid} from consumer to classic for static member replacement "
            "with different subscription."
            if subscription_changed
            else None
        ),
    )
    return True


def _target_bytes(
    manager: ConsumerGroupManager, group: ConsumerGroup, member: ClassicGroupMember, protocol: str
) -> bytes:
    target = group.target_of(member.member_id)
    partitions = manager.partitions_by_name(group, target)
    version = consumer_protocol.decode_version(member.metadata(protocol))
    return consumer_protocol.encode_assignment(ClassicAssignment(partitions), version)


def convert_to_classic_group(
    manager: ConsumerGroupManager,
    txn: ConsumerTxn,
    group: ConsumerGroup,
    leaving: ConsumerGroupMember | None,
    reason: str,
    *,
    rebalance: str | None,
) -> None:
    """Kafka ``convertToClassicGroup``: every member but ``leaving`` (``None`` after a static
    replacement, whose records are already written) becomes a classic member; ``reason`` is
    why ``leaving`` left; ``rebalance``, if given, is the reason of the rebalance the classic
    group then prepares."""
    from regroup.events.schema import GroupStateChanged, MemberLeft

    state = manager.state
    gid = group.group_id
    now = txn.now_ms
    classic = ClassicGroup(gid, now)
    classic.generation_id = group.group_epoch
    for member in group.members.values():
        if leaving is not None and member.member_id == leaving.member_id:
            continue
        meta = member.classic_member_metadata
        assert meta is not None
        classic.add(
            ClassicGroupMember(
                member_id=member.member_id,
                group_instance_id=member.instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                session_timeout_ms=meta.session_timeout_ms,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                supported_protocols=meta.supported_protocols,
            )
        )
    classic.protocol_type = CONSUMER_PROTOCOL_TYPE
    classic.protocol_name = classic.select_protocol()
    for classic_member in classic.members.values():
        classic_member.assignment = _target_bytes(
            manager, group, classic_member, classic.protocol_name
        )
    classic.state = ClassicGroupState.STABLE
    # The consumer group's tombstones (Kafka ``ConsumerGroup.createGroupTombstoneRecords``).
    for member_id in list(group.members):
        txn.write(rec.current_assignment_tombstone(gid, member_id))
    for member_id in list(group.target_assignment):
        txn.write(rec.target_member_tombstone(gid, member_id))
    txn.write(rec.target_metadata_tombstone(gid))
    for member_id in list(group.members):
        txn.write(rec.member_metadata_tombstone(gid, member_id))
    for regex in sorted(group.resolved_regexes):
        txn.write(rec.regex_tombstone(gid, regex))
    txn.write(rec.partition_metadata_tombstone(gid))
    txn.write(rec.group_tombstone(gid))
    if leaving is not None:
        txn.emit(
            MemberLeft(
                ts_ms=now,
                group_id=gid,
                member_id=leaving.member_id,
                group_protocol="consumer",
                reason=reason,
                instance_id=leaving.instance_id,
            )
        )
    for member_id in group.members:
        manager.cancel_member_timers(gid, member_id)
        manager.cancel_classic_timers(gid, member_id)
    manager.drop_in_flight(gid)
    # Kafka: the classic group is put in place directly, not by replay, because the
    # rebalance below needs the object; its record is written for a restart.
    txn.result.records.append(group_metadata_record(classic))
    state.groups[gid] = classic
    out = CoordinatorResult()
    for classic_member in classic.members.values():
        schedule_heartbeat(state, classic, classic_member, now)
    out.events.append(
        GroupStateChanged(
            ts_ms=now, group_id=gid, group_protocol="classic", old_state="Empty", new_state="Stable"
        ),
    )
    if rebalance is not None:
        prepare_rebalance(state, classic, rebalance, now, out)
    txn.result.extend(out)
