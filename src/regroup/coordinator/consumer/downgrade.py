"""Online downgrade: a consumer group whose members all speak the classic protocol becomes classic.

Kafka 3.8+ (``group.consumer.migration.policy``, default BIDIRECTIONAL;
``validateOnlineDowngradeWithFencedMember``, ``convertToClassicGroup``,
``ClassicGroup.fromConsumerGroup``).

When a member that uses the KIP-848 protocol leaves or is fenced
(``fencing.fence_member``), and every other member uses the classic protocol,
the group has other members, the policy allows downgrades (BIDIRECTIONAL or
DOWNGRADE) and the rest fits ``group.max.size``, the consumer group's records
are tombstoned and a classic group is written in their place: generation =
group epoch, protocol type ``consumer``, the protocol every member votes for,
each member's assignment its *target* encoded in the ConsumerProtocol
Assignment version of its Subscription. Then, as Kafka does, the classic group
prepares a rebalance ("Downgrade group <id> from consumer to classic.").

By static replacement (Kafka 4.x ``validateOnlineDowngradeWithReplacedMember``
in ``classicGroupJoinToConsumerGroup``): a static member that joins with the
classic protocol and takes the place of the group's last member using the
KIP-848 protocol downgrades the group the same way, under the same policy and
size conditions, once the joining member has taken over the replaced member's
assignment. Nobody left, so no rebalance is prepared, unless the joining
member's subscription differs from the replaced member's ("... for static
member replacement with different subscription."); the joining member's
JoinGroup is answered at once, and its SyncGroup then goes to the classic group.

The classic group is put in place directly, not by replay (classic groups
change by their handlers, in regroup as in Kafka); its record is written for a
restart, and its members' session timers are armed by the classic protocol's
own steps (``classic.rebalance``).
"""

from __future__ import annotations

from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_member import ClassicGroupMember
from regroup.classic.group.group_state import ClassicGroupState
from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.group_member import ConsumerGroupMember
from regroup.coordinator.classic.rebalance import prepare_rebalance, schedule_heartbeat
from regroup.coordinator.classic.records import group_metadata_record
from regroup.coordinator.consumer import records
from regroup.coordinator.consumer.embedded import CONSUMER_PROTOCOL_TYPE, assignment_bytes
from regroup.coordinator.consumer.rebalance import drop_in_flight
from regroup.coordinator.consumer.timers import cancel_member_timers
from regroup.coordinator.consumer.txn import ConsumerTxn
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.events.schema import GroupStateChanged, MemberLeft

__all__ = ["maybe_downgrade", "maybe_downgrade_on_replacement"]


def _valid_with_fenced_member(
    state: GroupCoordinatorState, group: ConsumerGroup, leaving: ConsumerGroupMember
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
    if not state.config.migration_policy.is_downgrade_enabled:
        return False
    return len(group.members) - 1 <= state.config.group_max_size


def maybe_downgrade(txn: ConsumerTxn, leaving: ConsumerGroupMember, reason: str) -> bool:
    """Convert instead of removing ``leaving`` when that is a valid downgrade; True if done."""
    group = txn.group
    if group is None or not _valid_with_fenced_member(txn.state, group, leaving):
        return False
    _convert_to_classic_group(
        txn,
        group,
        leaving,
        reason,
        rebalance=f"Downgrade group {group.group_id} from consumer to classic.",
    )
    return True


def maybe_downgrade_on_replacement(
    txn: ConsumerTxn, replaced: ConsumerGroupMember, subscription_changed: bool
) -> bool:
    """Kafka ``validateOnlineDowngradeWithReplacedMember``, after a classic static member
    took ``replaced``'s place (``fencing.replace_static_member``): downgrade if ``replaced``
    was the last member using the KIP-848 protocol. True if the group is now classic."""
    group = txn.group
    if group is None or replaced.use_classic_protocol:
        return False
    # The replacement is already written, so "every member but the replaced one" is
    # every member now; the count is the same as before it.
    if not all(m.use_classic_protocol for m in group.members.values()):
        return False
    if not txn.state.config.migration_policy.is_downgrade_enabled:
        return False
    if len(group.members) > txn.state.config.group_max_size:
        return False
    gid = group.group_id
    _convert_to_classic_group(
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


def _convert_to_classic_group(
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
    state = txn.state
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
        classic_member.assignment = assignment_bytes(
            state,
            group,
            group.target_of(classic_member.member_id),
            classic_member.metadata(classic.protocol_name),
        )
    classic.state = ClassicGroupState.STABLE
    # The consumer group's tombstones (Kafka ``ConsumerGroup.createGroupTombstoneRecords``).
    for member_id in list(group.members):
        txn.write(records.current_assignment_tombstone(gid, member_id))
    for member_id in list(group.target_assignment):
        txn.write(records.target_member_tombstone(gid, member_id))
    txn.write(records.target_metadata_tombstone(gid))
    for member_id in list(group.members):
        txn.write(records.member_metadata_tombstone(gid, member_id))
    for regex in sorted(group.resolved_regexes):
        txn.write(records.regex_tombstone(gid, regex))
    txn.write(records.partition_metadata_tombstone(gid))
    txn.write(records.group_tombstone(gid))
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
        cancel_member_timers(state, gid, member_id)
    drop_in_flight(state, gid)
    # The classic group goes in place directly, not by replay: the rebalance below needs
    # the object; its record is written for a restart.
    txn.result.records.append(group_metadata_record(classic))
    state.groups[gid] = classic
    out = CoordinatorResult()
    for classic_member in classic.members.values():
        schedule_heartbeat(state, classic, classic_member, now)
    out.events.append(
        GroupStateChanged(
            ts_ms=now, group_id=gid, group_protocol="classic", old_state="Empty", new_state="Stable"
        )
    )
    if rebalance is not None:
        prepare_rebalance(state, classic, rebalance, now, out)
    txn.result.extend(out)
