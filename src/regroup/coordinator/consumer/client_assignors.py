"""KIP-848 client-side assignors, coordinator side: COMPUTE_ASSIGNMENT, Prepare, Install.

KIP-848, "Client Side Mode": when the group needs a new target and uses a
client-side assignor, the coordinator chooses one member (rules in
``regroup.consumer.group.client_assignors``) and tells it COMPUTE_ASSIGNMENT in its
next heartbeat response. The member calls ConsumerGroupPrepareAssignment (the
group's members, subscriptions, assignor metadata and current target, and the
partition counts), runs its assignor, and calls ConsumerGroupInstallAssignment.
The coordinator validates the assignment against what it prepared and installs
it as the target at the prepared group epoch.

Errors of both RPCs: GROUP_ID_NOT_FOUND (no such consumer group),
UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (epoch is not the member's current
epoch), INVALID_REQUEST (the member was not asked, Install before Prepare, or a
group epoch other than the prepared one), INVALID_ASSIGNMENT (Install only).

The chosen member has its rebalance timeout, from the moment it is told, to
install; then another member is chosen (timer ``consumer-client-assign-<group>``).

``new_target`` is where a heartbeat that finds the group epoch ahead of the
assignment epoch asks for a new target: from a member, in client-side mode,
else from the server-side assignor (``rebalance.compute_target``).
"""

from __future__ import annotations

from collections.abc import Hashable

from regroup.consumer.group import client_assignors as ca
from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.group_member import (
    Assignment,
    ConsumerGroupMember,
    assignment_from_topic_partitions,
    assignment_to_topic_partitions,
)
from regroup.coordinator.consumer import records
from regroup.coordinator.consumer.rebalance import compute_target, drop_in_flight, install_target
from regroup.coordinator.consumer.timers import client_assign_key
from regroup.coordinator.consumer.txn import ConsumerTxn
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.consumer import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentMember,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    PartitionMetadata,
)

__all__ = ["handle_install", "handle_prepare", "new_target", "notify_selected"]


def new_target(txn: ConsumerTxn) -> None:
    """The group epoch is ahead of the assignment epoch: have a new target computed."""
    group = txn.group
    assert group is not None
    if ca.is_client_side_mode(group.members.values()) and _ensure_selected(txn.state, group):
        return
    compute_target(txn)


def _ensure_selected(state: GroupCoordinatorState, group: ConsumerGroup) -> bool:
    """Choose the member to compute the next target, unless one is at work.

    ``False`` when no member can (no assignor common to all): the caller then uses
    the default server-side assignor.
    """
    gid = group.group_id
    in_flight = state.consumer.in_flight.get(gid)
    if in_flight is not None:
        chosen = group.members.get(in_flight.member_id)
        if chosen is not None and chosen.member_epoch >= 0:
            return True
        drop_in_flight(state, gid)
    return _select(state, group, set() if in_flight is None else in_flight.timed_out)


def _select(state: GroupCoordinatorState, group: ConsumerGroup, timed_out: set[str]) -> bool:
    active = [m for m in group.members.values() if m.member_epoch >= 0]
    assignor = ca.select_client_assignor(active)
    if assignor is None:
        return False
    member_id = ca.select_member(active, assignor, timed_out)
    if member_id is None:
        timed_out = set()
        member_id = ca.select_member(active, assignor)
    if member_id is None:
        return False
    state.consumer.in_flight[group.group_id] = ca.ClientAssignmentInFlight(
        member_id, assignor, timed_out=set(timed_out)
    )
    return True


def notify_selected(
    state: GroupCoordinatorState, group_id: str, member: ConsumerGroupMember, now_ms: int
) -> bool:
    """If ``member`` is the chosen one and not told yet, it is told now (COMPUTE_ASSIGNMENT in
    its heartbeat response): its rebalance timeout starts (KIP: "when notified")."""
    in_flight = state.consumer.in_flight.get(group_id)
    if in_flight is None or in_flight.member_id != member.member_id or in_flight.notified:
        return False
    in_flight.notified = True
    in_flight.deadline_ms = now_ms + max(member.rebalance_timeout_ms, 0)
    member_id = member.member_id
    state.timer.schedule(
        client_assign_key(group_id),
        in_flight.deadline_ms,
        lambda now: _timed_out(state, group_id, member_id, now),
        owner=group_id,
    )
    return True


def _timed_out(
    state: GroupCoordinatorState, group_id: str, member_id: str, now_ms: int
) -> CoordinatorResult:
    in_flight = state.consumer.in_flight.get(group_id)
    group = state.consumer_group(group_id)
    if in_flight is None or in_flight.member_id != member_id:
        return CoordinatorResult()
    drop_in_flight(state, group_id)
    if group is None or group.group_epoch <= group.assignment_epoch:
        return CoordinatorResult()
    _select(state, group, in_flight.timed_out | {member_id})
    return CoordinatorResult()


def _checked(
    state: GroupCoordinatorState, group_id: str, member_id: str, member_epoch: int
) -> tuple[ConsumerGroup, ConsumerGroupMember, ca.ClientAssignmentInFlight]:
    group = state.consumer_group(group_id)
    if group is None:
        raise KafkaProtocolError(
            ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
        )
    member = group.members.get(member_id)
    if member is None:
        raise KafkaProtocolError(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}."
        )
    if member_epoch != member.member_epoch:
        raise KafkaProtocolError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The member epoch {member_epoch} is not the current one ({member.member_epoch}).",
        )
    in_flight = state.consumer.in_flight.get(group_id)
    if in_flight is None or in_flight.member_id != member_id or not in_flight.notified:
        raise KafkaProtocolError(
            ErrorCode.INVALID_REQUEST,
            f"Member {member_id} was not asked to compute the assignment of group {group_id}.",
        )
    return group, member, in_flight


def handle_prepare(
    state: GroupCoordinatorState,
    token: Hashable,
    req: ConsumerGroupPrepareAssignmentRequest,
    now_ms: int,
) -> CoordinatorResult:
    try:
        group, _, in_flight = _checked(state, req.group_id, req.member_id, req.member_epoch)
    except KafkaProtocolError as exc:
        return CoordinatorResult().reply(
            token,
            ConsumerGroupPrepareAssignmentResponse(error_code=exc.code, error_message=exc.message),
        )
    ids_by_name = {name: t.topic_id for name, t in group.subscription_metadata.items()}
    members = []
    for member_id in sorted(group.members):
        member = group.members[member_id]
        entry = next((a for a in member.client_assignors if a.name == in_flight.assignor), None)
        members.append(
            ConsumerGroupPrepareAssignmentMember(
                member_id=member_id,
                member_epoch=member.member_epoch,
                instance_id=member.instance_id,
                subscriptions=tuple(
                    sorted(
                        ids_by_name[n] for n in group.member_topic_names(member) if n in ids_by_name
                    )
                ),
                assignor_version=0 if entry is None else entry.version,
                assignor_reason=0 if entry is None else entry.reason,
                assignor_metadata=b"" if entry is None else entry.metadata,
                topic_partitions=assignment_to_topic_partitions(group.target_of(member_id)),
            )
        )
    partitions = {t.topic_id: t.partitions for t in group.subscription_metadata.values()}
    in_flight.snapshot = ca.PreparedSnapshot(
        group.group_epoch, frozenset(group.members), partitions
    )
    return CoordinatorResult().reply(
        token,
        ConsumerGroupPrepareAssignmentResponse(
            error_code=ErrorCode.NONE,
            group_epoch=group.group_epoch,
            client_assignor_name=in_flight.assignor,
            members=tuple(members),
            partition_metadata=tuple(
                PartitionMetadata(topic_id, count) for topic_id, count in sorted(partitions.items())
            ),
        ),
    )


def handle_install(
    state: GroupCoordinatorState,
    token: Hashable,
    req: ConsumerGroupInstallAssignmentRequest,
    now_ms: int,
) -> CoordinatorResult:
    txn = ConsumerTxn(state, req.group_id, now_ms)
    try:
        group, _, in_flight = _checked(state, req.group_id, req.member_id, req.member_epoch)
        snapshot = in_flight.snapshot
        if snapshot is None:
            raise KafkaProtocolError(
                ErrorCode.INVALID_REQUEST, "ConsumerGroupPrepareAssignment must come first."
            )
        if (
            req.group_epoch != snapshot.group_epoch
            or snapshot.group_epoch <= group.assignment_epoch
        ):
            raise KafkaProtocolError(
                ErrorCode.INVALID_REQUEST,
                f"The assignment for group epoch {req.group_epoch} is not the one prepared "
                f"({snapshot.group_epoch}).",
            )
        if req.error_code != 0:
            # Rule 7: the assignor failed; the current target stays.
            txn.write(records.target_metadata_record(req.group_id, snapshot.group_epoch))
        else:
            assignment: dict[str, Assignment] = {}
            for entry in req.members:
                if entry.member_id in assignment:
                    raise KafkaProtocolError(
                        ErrorCode.INVALID_ASSIGNMENT, f"member {entry.member_id} appears twice"
                    )
                parts = assignment_from_topic_partitions(entry.topic_partitions)
                listed = sum(len(tp.partitions) for tp in entry.topic_partitions)
                if listed != sum(len(p) for p in parts.values()):
                    raise KafkaProtocolError(
                        ErrorCode.INVALID_ASSIGNMENT,
                        f"a partition is assigned twice to member {entry.member_id}",
                    )
                assignment[entry.member_id] = parts
            ca.validate_installed_assignment(assignment, snapshot)
            targets = {mid: assignment.get(mid, {}) for mid in group.members}
            install_target(txn, targets, snapshot.group_epoch, in_flight.assignor)
        drop_in_flight(state, req.group_id)
    except KafkaProtocolError as exc:
        txn.rollback()
        return txn.finish().reply(
            token,
            ConsumerGroupInstallAssignmentResponse(error_code=exc.code, error_message=exc.message),
        )
    return txn.finish().reply(token, ConsumerGroupInstallAssignmentResponse(ErrorCode.NONE))
