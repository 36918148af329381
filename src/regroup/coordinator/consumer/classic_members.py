"""Classic members inside a consumer group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Kafka 3.8+ (online migration): once a group is a consumer group, members that
still speak the classic protocol are served by it, with no group-wide barrier.
Kafka: ``GroupMetadataManager.classicGroupJoinToConsumerGroup``,
``classicGroupSyncToConsumerGroup``, ``classicGroupHeartbeatToConsumerGroup`` and
``classicGroupLeaveToConsumerGroup``.

JoinGroup: admission (GROUP_MAX_SIZE_REACHED; INCONSISTENT_GROUP_PROTOCOL unless
the protocol type is ``consumer`` and one of the member's protocols is supported
by every classic member, Kafka ``supportsClassicProtocols``); a new dynamic
member first gets MEMBER_ID_REQUIRED with its id (KIP-394); then the member is
created or updated from its Subscription (topics, rack) and its JoinGroup
(timeouts, protocols: ``ClassicMemberMetadata``); a new member or a changed
subscription bumps the group epoch; the target is recomputed when the group
epoch is ahead; the member reconciles one step with the partitions its
Subscription says it owns, through the same ``reconcile`` as KIP-848 members.
The response carries generation = the member epoch, the member's first
protocol, and no leader and no members: every classic member is a follower
whose assignment comes from the coordinator. Its session timer (its own
session timeout) and a sync timer (its rebalance timeout) are armed, unless the
member is static and replaced the group's last KIP-848 member: then the group is
downgraded to a classic group on the spot (``downgrade``).

SyncGroup: UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID for a
member that does not use the classic protocol, ILLEGAL_GENERATION unless the
generation is the member epoch, INCONSISTENT_GROUP_PROTOCOL, then
REBALANCE_IN_PROGRESS when the group epoch is ahead of the member and the member
is not revoking (Kafka ``throwIfRebalanceInProgress``); else the member's
assigned partitions (never those pending revocation) as a ConsumerProtocol
Assignment of the version of its Subscription.

Heartbeat: the same validation; REBALANCE_IN_PROGRESS when the member is behind
the group epoch, must revoke, or waits on partitions that are now free; the
join timer (its rebalance timeout) is then armed if it is not already.

LeaveGroup: each member (or static member named by instance id) is removed; then
one group epoch bump for all of them.

Where regroup departs from Kafka: a classic member that reconciliation leaves
waiting on partitions others still hold (UNRELEASED_PARTITIONS) is moved to the
target epoch with the partitions it keeps, which is what Kafka does for every
member; regroup's KIP-848 members keep their epoch instead (KIP case study, Rule
5 of ``regroup.consumer.group.reconciliation``), which would make a classic member,
whose generation must catch up with the group epoch, rejoin in a loop.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import replace

from regroup.assignors.errors import PartitionAssignorError
from regroup.classic import protocol
from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.group_member import (
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
    assignment_to_topic_partitions,
)
from regroup.consumer.group.reconciliation import reconcile
from regroup.coordinator.classic import join as classic_join
from regroup.coordinator.consumer import records
from regroup.coordinator.consumer.client_assignors import new_target
from regroup.coordinator.consumer.downgrade import maybe_downgrade_on_replacement
from regroup.coordinator.consumer.embedded import (
    CONSUMER_PROTOCOL_TYPE,
    assignment_bytes,
    partitions_to_assignment,
)
from regroup.coordinator.consumer.fencing import (
    remove_member,
    replace_static_member,
    schedule_classic_timeout,
    schedule_session,
    throw_if_instance_id_is_fenced,
)
from regroup.coordinator.consumer.group_configs import consumer_semantics
from regroup.coordinator.consumer.rebalance import bump_epoch, emit_assignment_changed
from regroup.coordinator.consumer.timers import (
    cancel_classic_timers,
    classic_join_key,
    classic_sync_key,
)
from regroup.coordinator.consumer.txn import ConsumerTxn, delete_group
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.events.schema import MemberJoined
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.member import new_consumer_member_id
from regroup.model.requests.classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMember,
    SyncGroupRequest,
    SyncGroupResponse,
)
from regroup.model.topic_partition import TopicPartition

__all__ = ["handle_heartbeat", "handle_join_group", "handle_leave", "handle_sync"]

#: ``group_protocol`` of the events about these members.
GROUP_PROTOCOL = "classic"


def _error(code: ErrorCode, message: str) -> KafkaProtocolError:
    return KafkaProtocolError(code, message)


# -- JoinGroup -------------------------------------------------------------------------------


def handle_join_group(
    state: GroupCoordinatorState, token: Hashable, req: JoinGroupRequest, now_ms: int
) -> CoordinatorResult:
    """A JoinGroup whose id names a consumer group (the service routes it here).

    The request checks every JoinGroup gets come first; an empty consumer group
    makes way for a classic one (Kafka ``maybeDeleteEmptyConsumerGroup``): it is
    deleted, and the JoinGroup is the classic group's first.
    """
    invalid = classic_join.check_join_request(state.config, req)
    if invalid is not None:
        return CoordinatorResult().reply(
            token, JoinGroupResponse(error_code=invalid, member_id=req.member_id)
        )
    txn = ConsumerTxn(state, req.group_id, now_ms)
    group = txn.group
    assert group is not None
    if group.is_empty():
        delete_group(txn)
        out = txn.finish()
        return out.extend(classic_join.handle_join_group(state, token, req, now_ms))
    try:
        response = _join(txn, req)
    except KafkaProtocolError as exc:
        txn.rollback()
        return txn.finish().reply(token, JoinGroupResponse(exc.code, member_id=req.member_id))
    except PartitionAssignorError:
        txn.rollback()
        return txn.finish().reply(
            token, JoinGroupResponse(ErrorCode.UNKNOWN_SERVER_ERROR, member_id=req.member_id)
        )
    return txn.finish().reply(token, response)


def _check_protocols(group: ConsumerGroup, member_id: str, req: JoinGroupRequest) -> None:
    """Kafka ``throwIfClassicProtocolIsNotSupported`` (``supportsClassicProtocols``): one of
    the member's protocols is supported by every classic member, itself included (a
    member that rejoins with other protocols is refused unless the others have them)."""
    names = {p.name for p in req.protocols}
    metas = [
        m.classic_member_metadata
        for m in group.members.values()
        if m.classic_member_metadata is not None
    ]
    supported = req.protocol_type == CONSUMER_PROTOCOL_TYPE and any(
        all(name in {p.name for p in meta.supported_protocols} for meta in metas) for name in names
    )
    if not req.protocols or not supported:
        raise _error(
            ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            f"Member {member_id}'s protocols are not supported.",
        )


def _find_member(
    group: ConsumerGroup, member_id: str, req: JoinGroupRequest
) -> tuple[ConsumerGroupMember, ConsumerGroupMember | None]:
    """The joining member, and the static member it replaces (Kafka
    ``getOrMaybeSubscribeDynamicConsumerGroupMember`` / ``...StaticConsumerGroupMember``)."""
    if req.group_instance_id is not None:
        holder = group.static_member(req.group_instance_id)
        if holder is not None and holder.member_id != member_id:
            if req.member_id:
                raise _error(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {req.group_instance_id} "
                    f"was fenced by member {holder.member_id}.",
                )
            return replace(holder, member_id=member_id), holder
    existing = group.members.get(member_id)
    return (existing if existing is not None else ConsumerGroupMember(member_id)), None


def _join(txn: ConsumerTxn, req: JoinGroupRequest) -> JoinGroupResponse:
    group = txn.group
    assert group is not None
    state = txn.state
    member_id = req.member_id or new_consumer_member_id(state.rng)
    max_size = state.config.group_consumer_max_size
    if len(group.members) >= max_size and member_id not in group.members:
        raise _error(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {max_size} members.",
        )
    _check_protocols(group, member_id, req)
    if not req.member_id and req.group_instance_id is None and req.require_known_member_id:
        return JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
    try:
        subscription = protocol.decode_subscription(req.protocols[0].metadata)
    except Exception:
        raise _error(
            ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            "Malformed embedded consumer protocol in subscription deserialization.",
        ) from None
    member, replaced = _find_member(group, member_id, req)
    changes: dict[str, object] = {
        "subscribed_topic_names": frozenset(subscription.topics),
        "classic_member_metadata": ClassicMemberMetadata(req.session_timeout_ms, req.protocols),
    }
    if req.group_instance_id is not None:
        changes["instance_id"] = req.group_instance_id
    if subscription.rack_id is not None:
        changes["rack_id"] = subscription.rack_id
    if req.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.client_id:
        changes["client_id"] = req.client_id
    if req.client_host:
        changes["client_host"] = req.client_host
    updated = replace(member, **changes)  # type: ignore[arg-type]
    is_new = member_id not in group.members
    reason = _write_member(txn, member, updated, replaced, is_new)
    if reason is not None:
        bump_epoch(txn, reason)
    if group.group_epoch > group.assignment_epoch:
        new_target(txn)
    current = _reconcile(txn, group.members[member_id], subscription.owned_partitions)
    cancel_classic_timers(state, txn.group_id, member_id)
    response = JoinGroupResponse(
        ErrorCode.NONE,
        generation_id=current.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=req.protocols[0].name,
        leader="",
        member_id=member_id,
    )
    if replaced is not None and maybe_downgrade_on_replacement(
        txn, replaced, subscription_changed=reason == "subscription_changed"
    ):
        return response  # a classic group now: its own timers run (``downgrade``)
    schedule_session(state, txn.group_id, member_id, txn.now_ms, req.session_timeout_ms)
    schedule_classic_timeout(
        state,
        classic_sync_key(txn.group_id, member_id),
        txn.group_id,
        member_id,
        req.rebalance_timeout_ms,
        txn.now_ms,
        "sync_timeout",
    )
    return response


def _write_member(
    txn: ConsumerTxn,
    member: ConsumerGroupMember,
    updated: ConsumerGroupMember,
    replaced: ConsumerGroupMember | None,
    is_new: bool,
) -> str | None:
    """The member's records and events; the reason to bump the group epoch, or ``None``."""
    gid = txn.group_id
    if replaced is not None:
        replace_static_member(txn, replaced, updated, GROUP_PROTOCOL)
    elif is_new or not updated.metadata_equals(member):
        txn.write(records.member_metadata_record(gid, updated))
    if is_new:
        txn.emit(
            MemberJoined(
                ts_ms=txn.now_ms,
                group_id=gid,
                member_id=updated.member_id,
                group_protocol=GROUP_PROTOCOL,
                instance_id=updated.instance_id,
                client_id=updated.client_id,
            )
        )
    if is_new and replaced is None:
        return "member_joined"
    if updated.subscribed_topic_names != member.subscribed_topic_names:
        return "subscription_changed"
    return None


def _reconcile(
    txn: ConsumerTxn, member: ConsumerGroupMember, owned_partitions: Iterable[TopicPartition]
) -> ConsumerGroupMember:
    """One reconciliation step with the partitions the Subscription reports (Kafka
    ``maybeReconcile``; no rebalance timer for a classic member, its join and sync
    timers stand for it)."""
    group = txn.group
    assert group is not None
    epoch = group.assignment_epoch
    if member.is_reconciled_to(epoch):
        return member
    owned = assignment_to_topic_partitions(
        partitions_to_assignment(owned_partitions, txn.state.metadata)
    )
    # Kafka moves a member waiting on others' partitions to the target epoch.
    current = reconcile(
        member,
        epoch,
        group.target_of(member.member_id),
        group.current_partition_epoch,
        owned,
        blocked_takes_target_epoch=True,
        previous_epoch_always_shifts=consumer_semantics(
            txn.state, txn.group_id
        ).previous_epoch_always_shifts,
    )
    if not current.assignment_equals(member):
        txn.write(records.current_assignment_record(txn.group_id, current))
        emit_assignment_changed(txn, current)
    return current


# -- validation shared by SyncGroup, Heartbeat ----------------------------------------------


def _member(
    state: GroupCoordinatorState, group_id: str, member_id: str, instance_id: str | None
) -> tuple[ConsumerGroup, ConsumerGroupMember]:
    """Kafka ``validateConsumerGroupMember`` + ``throwIfMemberDoesNotUseClassicProtocol``."""
    group = state.consumer_group(group_id)
    if group is None:
        raise _error(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {group_id} not found.")
    if instance_id is None:
        found = group.members.get(member_id)
        if found is None:
            raise _error(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group_id}.",
            )
    else:
        found = group.static_member(instance_id)
        if found is None:
            raise _error(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member with instance id {instance_id} is not a member of group {group_id}.",
            )
        throw_if_instance_id_is_fenced(found, member_id, instance_id)
    if found.classic_member_metadata is None:
        raise _error(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol."
        )
    return group, found


def _check_generation(member: ConsumerGroupMember, generation_id: int) -> None:
    """Kafka ``throwIfGenerationIdUnmatched``."""
    if generation_id != member.member_epoch:
        raise _error(
            ErrorCode.ILLEGAL_GENERATION,
            f"The generation id {generation_id} is not equal to the member epoch "
            f"{member.member_epoch} from the consumer group.",
        )


def _schedule_join_timeout_if_absent(
    state: GroupCoordinatorState, group_id: str, member: ConsumerGroupMember, now_ms: int
) -> None:
    """Kafka ``scheduleConsumerGroupJoinTimeoutIfAbsent``."""
    key = classic_join_key(group_id, member.member_id)
    if not state.timer.is_scheduled(key):
        schedule_classic_timeout(
            state,
            key,
            group_id,
            member.member_id,
            member.rebalance_timeout_ms,
            now_ms,
            "join_timeout",
        )


def _session(
    state: GroupCoordinatorState, group_id: str, member: ConsumerGroupMember, now_ms: int
) -> None:
    """Re-arm the session timer of a classic member: its own session timeout."""
    meta = member.classic_member_metadata
    assert meta is not None
    schedule_session(state, group_id, member.member_id, now_ms, meta.session_timeout_ms)


# -- SyncGroup ------------------------------------------------------------------------------


def handle_sync(
    state: GroupCoordinatorState, token: Hashable, req: SyncGroupRequest, now_ms: int
) -> CoordinatorResult:
    out = CoordinatorResult()
    try:
        response = _sync(state, req, now_ms)
    except KafkaProtocolError as exc:
        return out.reply(token, SyncGroupResponse(exc.code))
    return out.reply(token, response)


def _sync(state: GroupCoordinatorState, req: SyncGroupRequest, now_ms: int) -> SyncGroupResponse:
    group, member = _member(state, req.group_id, req.member_id, req.group_instance_id)
    _check_generation(member, req.generation_id)
    meta = member.classic_member_metadata
    assert meta is not None
    protocol_name = meta.supported_protocols[0].name
    if req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise _error(
            ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            f"The protocol type {req.protocol_type} from member {member.member_id} request is "
            f"not equal to the group protocol type {CONSUMER_PROTOCOL_TYPE}.",
        )
    if req.protocol_name is not None and req.protocol_name != protocol_name:
        raise _error(
            ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            f"The protocol name {req.protocol_name} from member {member.member_id} request is "
            f"not equal to the protocol name {protocol_name} returned in the join response.",
        )
    if (
        group.group_epoch > member.member_epoch
        and member.state is not MemberState.UNREVOKED_PARTITIONS
    ):
        _schedule_join_timeout_if_absent(state, req.group_id, member, now_ms)
        raise _error(
            ErrorCode.REBALANCE_IN_PROGRESS,
            f"A new rebalance is triggered in group {req.group_id} and member "
            f"{member.member_id} should rejoin to catch up.",
        )
    state.timer.cancel(classic_sync_key(req.group_id, member.member_id))
    _session(state, req.group_id, member, now_ms)
    # Kafka ``prepareAssignment``: in the version of the Subscription of its first protocol.
    assignment = assignment_bytes(
        state, group, member.assigned_partitions, meta.supported_protocols[0].metadata
    )
    return SyncGroupResponse(
        ErrorCode.NONE,
        protocol_type=req.protocol_type or CONSUMER_PROTOCOL_TYPE,
        protocol_name=req.protocol_name or protocol_name,
        assignment=assignment,
    )


# -- Heartbeat ------------------------------------------------------------------------------


def waiting_on_unreleased_partition(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Kafka ``ConsumerGroup.waitingOnUnreleasedPartition``: a partition of the member's
    target that it does not have yet is still owned by another member."""
    if member.state is not MemberState.UNRELEASED_PARTITIONS:
        return False
    for topic_id, partitions in group.target_of(member.member_id).items():
        mine = member.assigned_partitions.get(topic_id, frozenset())
        for partition in partitions - mine:
            if group.current_partition_epoch(topic_id, partition) != -1:
                return True
    return False


def handle_heartbeat(
    state: GroupCoordinatorState, token: Hashable, req: HeartbeatRequest, now_ms: int
) -> CoordinatorResult:
    out = CoordinatorResult()
    try:
        group, member = _member(state, req.group_id, req.member_id, req.group_instance_id)
        _check_generation(member, req.generation_id)
    except KafkaProtocolError as exc:
        return out.reply(token, HeartbeatResponse(exc.code))
    _session(state, req.group_id, member, now_ms)
    if (
        member.member_epoch < group.group_epoch
        or member.state is MemberState.UNREVOKED_PARTITIONS
        or (
            member.state is MemberState.UNRELEASED_PARTITIONS
            and not waiting_on_unreleased_partition(group, member)
        )
    ):
        _schedule_join_timeout_if_absent(state, req.group_id, member, now_ms)
        return out.reply(token, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    return out.reply(token, HeartbeatResponse(ErrorCode.NONE))


# -- LeaveGroup -----------------------------------------------------------------------------


def handle_leave(
    state: GroupCoordinatorState, token: Hashable, req: LeaveGroupRequest, now_ms: int
) -> CoordinatorResult:
    txn = ConsumerTxn(state, req.group_id, now_ms)
    group = txn.group
    assert group is not None
    answers: list[LeaveGroupResponseMember] = []
    left: list[ConsumerGroupMember] = []
    for identity in req.members:
        member_id = identity.member_id
        try:
            if identity.group_instance_id is None:
                _, member = _member(state, req.group_id, member_id, None)
            else:
                found = group.static_member(identity.group_instance_id)
                if found is None:
                    raise _error(
                        ErrorCode.UNKNOWN_MEMBER_ID,
                        f"Instance id {identity.group_instance_id} is unknown.",
                    )
                # An empty member id: the admin removal of a static member by instance id.
                _, member = _member(
                    state, req.group_id, member_id or found.member_id, identity.group_instance_id
                )
        except KafkaProtocolError as exc:
            answers.append(
                LeaveGroupResponseMember(member_id, identity.group_instance_id, exc.code)
            )
            continue
        remove_member(txn, member, GROUP_PROTOCOL, "leave", client_reason=identity.reason)
        left.append(member)
        answers.append(
            LeaveGroupResponseMember(member_id, identity.group_instance_id, ErrorCode.NONE)
        )
    if left:
        bump_epoch(txn, "member_left:leave")
    return txn.finish().reply(token, LeaveGroupResponse(ErrorCode.NONE, tuple(answers)))
