"""ConsumerGroupHeartbeat: join, heartbeat, leave (KIP-848, "ConsumerGroupHeartbeat API").

Kafka: ``GroupMetadataManager.consumerGroupHeartbeat``. The steps, in Kafka's
order:

1. validate the request (``validate_request``; INVALID_REQUEST, then
   UNSUPPORTED_ASSIGNOR);
2. epoch -1 / -2: leave (``_leave``);
3. find the group (GROUP_ID_NOT_FOUND unless joining) and check its size
   (GROUP_MAX_SIZE_REACHED: never for a member already in the group);
4. find or make the member, with the fencing rules: UNKNOWN_MEMBER_ID,
   FENCED_MEMBER_EPOCH (and KIP-848's lost-response exception: the previous epoch
   is accepted when the owned partitions are a subset of the current ones),
   static members (UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, replacement);
5. apply the request's non-null fields; write the member's metadata; bump the
   group epoch when the group is new, a member joined, a subscription or assignor
   changed (KIP-848, "Group Epoch - Trigger a rebalance");
6. when the group epoch is ahead of the assignment epoch, compute the new target
   (server-side assignor), or choose the member to compute it (client-side);
7. reconcile this member one step (``regroup.consumer.group.reconciliation``); arm the
   rebalance timer while it revokes;
8. re-arm the session timer; answer with the member epoch, the heartbeat
   interval and, when the member needs it, the partitions it may use now.

Where KIP-848 as designed and Apache Kafka 4.0 differ, the group's
``regroup.consumer.semantics`` decides (``ConsumerSemantics``; default ``kafka``;
docs/kafka-differences.md has the table):

* a member blocked on partitions others still hold: ``kip-848`` keeps its epoch
  (KIP case study; Rule 5 of ``reconciliation``), ``kafka`` moves it to the
  target epoch with the unreleased partitions withheld. Under ``kip-848`` a new
  member may therefore keep sending epoch 0: the "first request" checks of step
  1 (rebalance timeout, subscription, empty owned partitions) apply to members
  the group does not yet hold at epoch 0 (or has just moved from epoch 0), as the
  KIP words them ("in the first heartbeat request");
* the previous member epoch: ``kafka`` shifts it in every reconciliation step
  (Rule 6), so a heartbeat at the epoch before a same-epoch step is fenced;
* a change of ServerAssignor bumps the group epoch under ``kip-848`` (the KIP:
  "A member updates its assignors"); Kafka 4.0 only writes the member record
  (4.4 bumps for a change of the preferred assignor, KAFKA-20434);
* a new regular expression: ``kip-848`` resolves it in the heartbeat that
  subscribes and bumps the epoch there; ``kafka`` checks that it compiles and
  resolves it asynchronously (``regex_refresh``), bumping the epoch when the
  resolution lands; and a member joining bumps the epoch under ``kafka`` only
  when it subscribes to topic names (a regex-only member does not);
* SubscribedTopicNames and SubscribedTopicRegex: ``kip-848`` refuses both
  non-empty in one request and lets each replace the other; ``kafka`` applies
  every non-null field and subscribes to their union;
* when the response carries the assignment. Kafka 4.0
  (``GroupMetadataManager.consumerGroupHeartbeat``): when the member's assigned
  partitions changed in this heartbeat, or the request was full (epoch 0, or
  RebalanceTimeoutMs, a subscription and TopicPartitions all set); nothing
  else (3.7/3.8 also answered every request that reported TopicPartitions).
  ``kip-848`` also sends it when the member epoch moved, while the member is
  below the assignment epoch (KIP: "only set the Assignment field when the
  member epoch is smaller than the target assignment epoch"), and when the
  partitions the member reports differ from its assignment (it is out of step,
  e.g. after a lost response).

In both semantics (no switch):

* epoch 0 from a member the group holds at a positive epoch is a rejoin (Kafka
  4.2+, KAFKA-19233, a fix of 4.0's endless fencing of such a member): its
  current assignment is reset (it lost its partitions); the lost-join-response
  case (previous epoch 0) keeps it (Kafka 4.0);
* ClientAssignors (the KIP's client-side assignors, which Kafka never shipped)
  are accepted, and a change of them bumps the group epoch;
* a ClientId/ClientHost of ``""`` in the request means unchanged (regroup's
  requests carry them; Kafka takes them from the connection).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace

from regroup.assignors.errors import PartitionAssignorError
from regroup.classic.group.group import ClassicGroup
from regroup.consumer.group import client_assignors as ca
from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.group_member import (
    Assignment,
    ConsumerGroupMember,
    MemberState,
    assignment_from_topic_partitions,
    assignment_to_topic_partitions,
)
from regroup.consumer.group.reconciliation import reconcile
from regroup.consumer.group.subscription import InvalidRegexError, compile_regex
from regroup.coordinator.config import ConsumerSemantics
from regroup.coordinator.consumer import records
from regroup.coordinator.consumer.client_assignors import new_target, notify_selected
from regroup.coordinator.consumer.fencing import (
    fence_member,
    replace_static_member,
    schedule_rebalance,
    schedule_session,
    throw_if_instance_id_is_fenced,
)
from regroup.coordinator.consumer.group_configs import group_config
from regroup.coordinator.consumer.rebalance import (
    bump_epoch,
    configured_assignors,
    drop_in_flight,
    emit_assignment_changed,
    resolve,
    subscription_metadata_changed,
)
from regroup.coordinator.consumer.regex_refresh import maybe_schedule_refresh
from regroup.coordinator.consumer.timers import rebalance_key
from regroup.coordinator.consumer.txn import ConsumerTxn
from regroup.coordinator.consumer.upgrade import finish_upgrade, take_over
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.events.schema import MemberJoined
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.member import new_consumer_member_id
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

__all__ = ["handle", "validate_request"]

LEAVE = -1
STATIC_LEAVE = -2


def _invalid(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_REQUEST, message)


def validate_request(
    req: ConsumerGroupHeartbeatRequest,
    supported_assignors: tuple[str, ...],
    rejoining: bool,
    holder: ConsumerGroup | None = None,
    semantics: ConsumerSemantics = ConsumerSemantics.KAFKA,
) -> None:
    """Kafka ``throwIfConsumerGroupHeartbeatRequestIsInvalid``, plus the KIP's own rules.

    ``rejoining`` is False when the group holds this member at epoch 0 (a blocked
    new member) or just moved it from epoch 0 (its answer may have been lost):
    then the first-request checks are skipped. ``holder`` is the group, if it
    exists: a bare epoch-0 heartbeat (no rebalance timeout, no subscription) that
    the group cannot take as a blocked member's comes from a member it dropped
    (UNKNOWN_MEMBER_ID) or moved on (FENCED_MEMBER_EPOCH); either way the client
    rejoins with a full request. ``semantics``: the group's (the KIP refuses
    names and a regex together; Kafka accepts them).
    """
    epoch = req.member_epoch
    if not req.member_id and (req.client_generates_member_id or epoch > 0 or epoch == LEAVE):
        raise _invalid("MemberId can't be empty.")
    if not req.group_id.strip():
        raise _invalid("GroupId can't be empty.")
    if req.instance_id is not None and not req.instance_id.strip():
        raise _invalid("InstanceId can't be empty.")
    if req.rack_id is not None and not req.rack_id.strip():
        raise _invalid("RackId can't be empty.")
    if epoch == 0 and rejoining:
        bare = (
            req.rebalance_timeout_ms == -1
            and req.subscribed_topic_names is None
            and req.subscribed_topic_regex is None
        )
        if bare and holder is not None and not semantics.is_kafka:
            if req.member_id in holder.members:
                raise KafkaProtocolError(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    "The member is no longer at epoch 0 and must rejoin.",
                )
            raise KafkaProtocolError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        if req.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise _invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                "(re-)joining."
            )
    elif epoch == STATIC_LEAVE:
        if req.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < STATIC_LEAVE:
        raise _invalid("MemberEpoch is invalid.")
    if (
        semantics.names_and_regex_exclusive
        and req.subscribed_topic_names
        and req.subscribed_topic_regex
    ):
        raise _invalid("SubscribedTopicNames and SubscribedTopicRegex cannot be used together.")
    if req.client_assignors is not None:
        if req.server_assignor is not None:
            raise _invalid("ServerAssignor and ClientAssignors cannot be used together.")
        ca.validate_client_assignors(req.client_assignors)
    if req.server_assignor is not None and req.server_assignor not in supported_assignors:
        raise KafkaProtocolError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(supported_assignors)}.",
        )


def handle(
    state: GroupCoordinatorState,
    token: Hashable,
    req: ConsumerGroupHeartbeatRequest,
    now_ms: int,
) -> CoordinatorResult:
    txn = ConsumerTxn(state, req.group_id, now_ms)
    txn.may_describe_topic = req.may_describe_topic
    try:
        response = _heartbeat(txn, req)
    except KafkaProtocolError as exc:
        txn.rollback()
        finish_upgrade(state, req.group_id, False, now_ms, txn.result)
        return txn.finish().reply(
            token,
            ConsumerGroupHeartbeatResponse(error_code=exc.code, error_message=exc.message),
        )
    except PartitionAssignorError:
        # Kafka: updateTargetAssignment turns PartitionAssignorException into an
        # UnknownServerException (logged on the broker), and handleOperationException
        # answers UNKNOWN_SERVER_ERROR with no error message; the write is dropped.
        txn.rollback()
        finish_upgrade(state, req.group_id, False, now_ms, txn.result)
        return txn.finish().reply(
            token, ConsumerGroupHeartbeatResponse(error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
        )
    finish_upgrade(state, req.group_id, True, now_ms, txn.result)
    return txn.finish().reply(token, response)


def _group_or_error(txn: ConsumerTxn, create: bool) -> ConsumerGroup | None:
    """Kafka ``getOrMaybeCreatePersistedConsumerGroup``, with the online upgrade.

    A joining member (``create``) may take over a classic group (``upgrade``); any
    other classic group is GROUP_ID_NOT_FOUND.
    """
    group_id = txn.group_id
    existing = txn.state.groups.get(group_id)
    if isinstance(existing, ClassicGroup) and create and take_over(txn, existing):
        return txn.group
    if existing is not None and not isinstance(existing, ConsumerGroup):
        raise KafkaProtocolError(
            ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
        )
    if existing is None and not create:
        raise KafkaProtocolError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    return existing


def _heartbeat(
    txn: ConsumerTxn, req: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    state = txn.state
    existing = state.groups.get(req.group_id)
    known = existing.member(req.member_id) if isinstance(existing, ConsumerGroup) else None
    config = group_config(state, req.group_id)
    semantics = config.semantics
    validate_request(
        req,
        configured_assignors(state),
        rejoining=known is None or 0 not in (known.member_epoch, known.previous_member_epoch),
        holder=existing if isinstance(existing, ConsumerGroup) else None,
        semantics=semantics,
    )
    if req.member_epoch in (LEAVE, STATIC_LEAVE):
        return _leave(txn, req)

    group = _group_or_error(txn, create=req.member_epoch == 0)
    member_id = req.member_id or new_consumer_member_id(state.rng)
    max_size = state.config.group_consumer_max_size
    if group is not None and len(group.members) >= max_size and member_id not in group.members:
        raise KafkaProtocolError(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {max_size} members.",
        )
    member, replaced = _find_member(group, member_id, req)
    updated = _apply_request(member, req, semantics)
    if req.client_assignors is not None:
        others = [] if group is None else [m for m in group.members.values() if m is not replaced]
        ca.check_version_overlap(member_id, req.client_assignors, others)
    if updated.subscribed_topic_regex and updated.subscribed_topic_regex != (
        member.subscribed_topic_regex
    ):
        try:
            compile_regex(updated.subscribed_topic_regex)
        except InvalidRegexError as exc:
            raise KafkaProtocolError(ErrorCode.INVALID_REGULAR_EXPRESSION, str(exc)) from None

    is_new = group is None or member_id not in group.members
    reason = _write_member(txn, member, updated, replaced, is_new, semantics)
    group = txn.group
    if group is None:  # a brand-new group with nothing written yet
        txn.write(records.epoch_record(req.group_id, 0))
        group = txn.group
    assert group is not None
    if group.group_epoch == 0 and reason is None:
        reason = "group_created"
    if reason is not None:
        bump_epoch(txn, reason)

    if group.group_epoch > group.assignment_epoch:
        new_target(txn)

    current = group.members[member_id]
    before = current
    if not current.is_reconciled_to(group.assignment_epoch):
        current = reconcile(
            current,
            group.assignment_epoch,
            group.target_of(member_id),
            group.current_partition_epoch,
            req.topic_partitions,
            blocked_takes_target_epoch=semantics.blocked_member_takes_target_epoch,
            previous_epoch_always_shifts=semantics.previous_epoch_always_shifts,
        )
        if not current.assignment_equals(before):
            txn.write(records.current_assignment_record(req.group_id, current))
            emit_assignment_changed(txn, current)
            if current.state is MemberState.UNREVOKED_PARTITIONS:
                schedule_rebalance(state, req.group_id, current, txn.now_ms)
            else:
                state.timer.cancel(rebalance_key(req.group_id, member_id))
    schedule_session(state, req.group_id, member_id, txn.now_ms, config.session_timeout_ms)

    error = ErrorCode.NONE
    if notify_selected(state, req.group_id, current, txn.now_ms):
        error = ErrorCode.COMPUTE_ASSIGNMENT

    full = (
        req.rebalance_timeout_ms != -1
        and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
        and req.topic_partitions is not None
    )
    # Kafka 4.0: a full request (epoch 0 counts as one), or assigned partitions that
    # changed in this heartbeat (against the member as the request found it, i.e.
    # after a static replacement or a rejoin's reset).
    send_assignment = (
        req.member_epoch == 0 or full or current.assigned_partitions != member.assigned_partitions
    )
    if not semantics.is_kafka:
        send_assignment = send_assignment or (
            current.member_epoch != member.member_epoch
            or current.member_epoch < group.assignment_epoch
            or (
                req.topic_partitions is not None
                and assignment_from_topic_partitions(req.topic_partitions)
                != dict(current.assigned_partitions)
            )
        )
    return ConsumerGroupHeartbeatResponse(
        error_code=error,
        member_id=member_id,
        member_epoch=current.member_epoch,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
        assignment=(
            ConsumerGroupHeartbeatAssignment(
                assignment_to_topic_partitions(current.assigned_partitions)
            )
            if send_assignment
            else None
        ),
    )


def _find_member(
    group: ConsumerGroup | None, member_id: str, req: ConsumerGroupHeartbeatRequest
) -> tuple[ConsumerGroupMember, ConsumerGroupMember | None]:
    """The member this heartbeat is from, and the static member it replaces (if any)."""
    if req.member_epoch == 0:
        if req.instance_id is not None and group is not None:
            holder = group.static_member(req.instance_id)
            if holder is not None and holder.member_id != member_id:
                # Kafka 3.8+: a holder that uses the classic protocol (online migration)
                # is replaced without having left first.
                if holder.member_epoch != STATIC_LEAVE and not holder.use_classic_protocol:
                    raise KafkaProtocolError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {req.instance_id} cannot "
                        f"join the group because the instance id is owned by "
                        f"{holder.member_id} member.",
                    )
                # KIP-848 "Static Membership": the new member takes over where the old left.
                copy = replace(holder, member_id=member_id, member_epoch=0, previous_member_epoch=0)
                return copy, holder
        existing = None if group is None else group.members.get(member_id)
        if existing is None:
            return ConsumerGroupMember(member_id), None
        if existing.member_epoch == 0:
            return existing, None
        if existing.member_epoch == STATIC_LEAVE:
            return replace(existing, member_epoch=0, previous_member_epoch=0), None
        owned = assignment_from_topic_partitions(req.topic_partitions)
        if existing.previous_member_epoch == 0 and _is_subset(owned, existing):
            return existing, None  # the join response was lost (Kafka 4.0 rule)
        reset = replace(
            existing,
            member_epoch=0,
            previous_member_epoch=-1,
            state=MemberState.STABLE,
            assigned_partitions={},
            partitions_pending_revocation={},
        )
        return reset, None
    assert group is not None
    if req.instance_id is not None:
        found = group.static_member(req.instance_id)
        if found is None:
            raise KafkaProtocolError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Instance id {req.instance_id} is unknown.",
            )
        throw_if_instance_id_is_fenced(found, member_id, req.instance_id)
    else:
        found = group.members.get(member_id)
        if found is None:
            raise KafkaProtocolError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
    _check_epoch(found, req)
    return found, None


def _is_subset(owned: Assignment, member: ConsumerGroupMember) -> bool:
    return all(
        partitions <= member.assigned_partitions.get(topic_id, frozenset())
        for topic_id, partitions in owned.items()
    )


def _check_epoch(member: ConsumerGroupMember, req: ConsumerGroupHeartbeatRequest) -> None:
    """Kafka ``throwIfConsumerGroupMemberEpochIsInvalid`` (KIP-848 "Request Handling" 3)."""
    received = req.member_epoch
    if received > member.member_epoch:
        raise KafkaProtocolError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            f"all its partitions and rejoin.",
        )
    if received < member.member_epoch:
        owned = (
            None
            if req.topic_partitions is None
            else assignment_from_topic_partitions(req.topic_partitions)
        )
        if (
            received != member.previous_member_epoch
            or owned is None
            or not _is_subset(owned, member)
        ):
            raise KafkaProtocolError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({received}) than the "
                f"one known by the group coordinator ({member.member_epoch}). The member must "
                f"abandon all its partitions and rejoin.",
            )


def _apply_request(
    member: ConsumerGroupMember, req: ConsumerGroupHeartbeatRequest, semantics: ConsumerSemantics
) -> ConsumerGroupMember:
    """Every non-null field of the request replaces the member's (null/-1: unchanged).

    Under the KIP's semantics a non-empty subscription by names clears the regex
    and the reverse; Kafka (``ConsumerGroupMember.Builder.maybeUpdate*``) keeps
    the field the request leaves null.
    """
    exclusive = semantics.names_and_regex_exclusive
    changes: dict[str, object] = {}
    if req.instance_id is not None:
        changes["instance_id"] = req.instance_id
    if req.rack_id is not None:
        changes["rack_id"] = req.rack_id
    if req.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.server_assignor is not None:
        changes["server_assignor"] = req.server_assignor
        changes["client_assignors"] = ()
    if req.client_assignors is not None:
        changes["client_assignors"] = tuple(req.client_assignors)
        if req.client_assignors:
            changes["server_assignor"] = None
    if req.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = frozenset(req.subscribed_topic_names)
        if exclusive and req.subscribed_topic_names and req.subscribed_topic_regex is None:
            changes["subscribed_topic_regex"] = ""
    if req.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = req.subscribed_topic_regex
        if exclusive and req.subscribed_topic_regex and req.subscribed_topic_names is None:
            changes["subscribed_topic_names"] = frozenset()
    if req.client_id:
        changes["client_id"] = req.client_id
    if req.client_host:
        changes["client_host"] = req.client_host
    if member.classic_member_metadata is not None:
        # A heartbeat speaks the KIP-848 protocol (Kafka ``setClassicMemberMetadata(null)``).
        changes["classic_member_metadata"] = None
    # Only what differs: a steady heartbeat that repeats its fields makes no new member.
    changes = {name: value for name, value in changes.items() if getattr(member, name) != value}
    return replace(member, **changes) if changes else member  # type: ignore[arg-type]


def _write_member(
    txn: ConsumerTxn,
    member: ConsumerGroupMember,
    updated: ConsumerGroupMember,
    replaced: ConsumerGroupMember | None,
    is_new: bool,
    semantics: ConsumerSemantics,
) -> str | None:
    """Write the member's records; the reason to bump the group epoch, or ``None``."""
    gid = txn.group_id
    reason: str | None = None
    if replaced is not None:
        # Kafka ``replaceStaticMember`` writes the replaced member as it was, under the
        # new member id; then the request's changes are an ordinary update of it
        # (``testStaticMemberRejoinsWithNewSubscribedTopics``: two member records).
        replace_static_member(txn, replaced, member, "consumer")
        if not updated.metadata_equals(member):
            txn.write(records.member_metadata_record(gid, updated))
    elif is_new or not updated.metadata_equals(member):
        txn.write(records.member_metadata_record(gid, updated))
        names_changed = updated.subscribed_topic_names != member.subscribed_topic_names
        if is_new and (semantics.every_join_bumps_epoch or names_changed):
            reason = "member_joined"
    if not is_new and not member.assignment_equals(updated):
        # Rejoin with epoch 0 (reset) or a static member back from epoch -2.
        txn.write(records.current_assignment_record(gid, updated))
    if is_new:
        txn.emit(
            MemberJoined(
                ts_ms=txn.now_ms,
                group_id=gid,
                member_id=updated.member_id,
                group_protocol="consumer",
                instance_id=updated.instance_id,
                client_id=updated.client_id,
            )
        )
    regex_bumps = _write_regex(txn, member, updated, semantics)
    if reason is None:
        if updated.subscribed_topic_names != member.subscribed_topic_names or regex_bumps:
            reason = "subscription_changed"
        elif updated.client_assignors != member.client_assignors or (
            semantics.assignor_change_bumps_epoch
            and updated.server_assignor != member.server_assignor
        ):
            reason = "assignor_changed"
    return reason


def _write_regex(
    txn: ConsumerTxn,
    member: ConsumerGroupMember,
    updated: ConsumerGroupMember,
    semantics: ConsumerSemantics,
) -> bool:
    """The regex records of a subscription change; whether it bumps the group epoch.

    KIP-848's semantics: a new regex is resolved here, and any regex change bumps.
    Kafka's (``maybeUpdateRegularExpressions``): a regex new to the group is only
    checked here and resolved asynchronously (``regex_refresh``); the change bumps
    the epoch now only when the new regex is already resolved, or when the
    subscribed topics that exist changed (the old regex's topics are gone).
    """
    old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
    group = txn.group
    if group is None:
        return False
    if old and old != new and old in group.resolved_regexes and group.regex_subscribers(old) == 0:
        txn.write(records.regex_tombstone(txn.group_id, old))
    if semantics.regex_resolved_at_once:
        if new and new not in group.resolved_regexes:
            fresh = resolve(txn.state, new, txn.now_ms, txn.may_describe_topic)
            txn.write(records.regex_record(txn.group_id, new, fresh))
        elif new and _stale_under_authorization(txn, group.resolved_regexes[new].version):
            # Under an authorizer a metadata update leaves the regex to the next heartbeat
            # (``rebalance.on_metadata_update``): resolve it again here, under its context.
            before = group.resolved_regexes[new].topics
            fresh = resolve(txn.state, new, txn.now_ms, txn.may_describe_topic)
            txn.write(records.regex_record(txn.group_id, new, fresh))
            return old != new or fresh.topics != before
        return old != new
    context = txn.may_describe_topic
    if old == new:
        maybe_schedule_refresh(txn.state, txn.group_id, txn.now_ms, context=context)
        return False
    new_is_new = bool(new) and new not in group.resolved_regexes
    maybe_schedule_refresh(
        txn.state, txn.group_id, txn.now_ms, required=new_is_new, context=context
    )
    if new and not new_is_new:
        return True
    return subscription_metadata_changed(txn.state, group)


def _stale_under_authorization(txn: ConsumerTxn, version: int) -> bool:
    """A regex resolved before the last metadata update, with a request context to
    resolve it again under (topic authorization on)."""
    consumer = txn.state.consumer
    return (
        consumer.topic_authorization
        and txn.may_describe_topic is not None
        and version < consumer.metadata_version
    )


def _leave(txn: ConsumerTxn, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    """Epoch -1: leave for good; epoch -2: a static member leaves for now (KIP-848, Kafka 4.x)."""
    group = _group_or_error(txn, create=False)
    assert group is not None
    if req.instance_id is not None:
        member = group.static_member(req.instance_id)
        if member is None:
            raise KafkaProtocolError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Instance id {req.instance_id} is unknown.",
            )
        if member.member_id != req.member_id:
            raise KafkaProtocolError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {req.member_id} with instance id {req.instance_id} was fenced "
                f"by member {member.member_id}.",
            )
    else:
        found = group.members.get(req.member_id)
        if found is None:
            raise KafkaProtocolError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {group.group_id}.",
            )
        member = found
    if req.member_epoch == STATIC_LEAVE:
        away = replace(member, member_epoch=STATIC_LEAVE, partitions_pending_revocation={})
        txn.write(records.current_assignment_record(req.group_id, away))
        emit_assignment_changed(txn, away)
        txn.state.timer.cancel(rebalance_key(req.group_id, member.member_id))
        drop_in_flight(txn.state, req.group_id, member.member_id)
    else:
        fence_member(txn, member, "leave")
    return ConsumerGroupHeartbeatResponse(
        error_code=ErrorCode.NONE,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        heartbeat_interval_ms=0,
    )
