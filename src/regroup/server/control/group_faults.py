"""Group-level faults: what only a coordinator can do to a group, done as it would do it.

Each action runs the coordinator's own step for the event it stands for, so it
writes the records and events that event writes, and a restart (or
``regroup replay``) sees the same groups as the live coordinator:

* ``expire_session``: the member's session timer fires now
  (``GroupCoordinator.fire_timer`` runs the operation the coordinator armed: Kafka
  ``expireClassicGroupMemberHeartbeat`` / ``consumerGroupSessionTimeout``).
* ``fence_member``: KIP-848 fencing (Kafka ``consumerGroupFenceMember``):
  the member is removed, the group epoch bumped; the wire layer
  (``faults.RequestFaults.fence``) then answers the member's next heartbeat
  FENCED_MEMBER_EPOCH, as Kafka answers a member whose epoch is stale.
* ``force_rebalance``: a classic group enters PreparingRebalance (Kafka
  ``prepareRebalance``); a consumer group gets a new group epoch (KIP-848,
  "Group Epoch - Trigger a rebalance"), so its target is recomputed.
* ``set_target_assignment``: KIP-848 only, like librdkafka's
  ``rd_kafka_mock_cgrp_consumer_target_assignment``: the next target
  assignment is the given one (a ``ScriptedAssignor`` queued for the group,
  as ``regroup replay``'s ``assignor_result`` step does) and the epoch is bumped
  so the coordinator computes it at once.

Each runs through ``GroupCoordinator.run_operation`` / ``fire_timer``, so it is all
or nothing and its records are noted as a handler's are (``coordinator.guard``).
Every function returns the ``CoordinatorResult`` for the server to apply
(records, events, replies); ``GroupFaultError`` is a request the group cannot
take (no such group or member, wrong group type), with a message for a user.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from regroup.assignors.consumer.api import GroupAssignment, MemberAssignment
from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_state import ClassicGroupState
from regroup.classic.protocol import ConsumerProtocolError, decode_assignment
from regroup.consumer.group.group import ConsumerGroup
from regroup.coordinator.classic.rebalance import heartbeat_key, prepare_rebalance
from regroup.coordinator.consumer.fencing import fence_member as coordinator_fence
from regroup.coordinator.consumer.rebalance import ScriptedAssignor, bump_epoch
from regroup.coordinator.consumer.timers import session_key
from regroup.coordinator.consumer.txn import ConsumerTxn
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.model.uuid import Uuid

__all__ = [
    "GroupFaultError",
    "describe",
    "expire_session",
    "fence_member",
    "force_rebalance",
    "set_target_assignment",
]


class GroupFaultError(ValueError):
    """A group action the named group or member cannot take."""


def _group(coordinator: GroupCoordinator, group_id: str) -> ClassicGroup | ConsumerGroup:
    group = coordinator.group(group_id)
    if not isinstance(group, ClassicGroup | ConsumerGroup):
        raise GroupFaultError(f"no group {group_id!r}")
    return group


def _consumer_group(coordinator: GroupCoordinator, group_id: str, what: str) -> ConsumerGroup:
    group = _group(coordinator, group_id)
    if not isinstance(group, ConsumerGroup):
        raise GroupFaultError(f"{what} needs a KIP-848 (consumer) group; {group_id!r} is classic")
    return group


def expire_session(
    coordinator: GroupCoordinator, group_id: str, member_id: str, now_ms: int
) -> CoordinatorResult:
    """The member's session times out now: it is removed as at a missed session timeout."""
    group = _group(coordinator, group_id)
    if member_id not in group.members:
        raise GroupFaultError(f"group {group_id!r} has no member {member_id!r}")
    key = (
        heartbeat_key(group_id, member_id)
        if isinstance(group, ClassicGroup)
        else session_key(group_id, member_id)
    )
    result = coordinator.fire_timer(key, now_ms)
    if result is None:
        raise GroupFaultError(f"member {member_id!r} of {group_id!r} has no session timer armed")
    return result


def fence_member(
    coordinator: GroupCoordinator, group_id: str, member_id: str, now_ms: int
) -> CoordinatorResult:
    """Fence a KIP-848 member: removed, the epoch bumped (Kafka ``consumerGroupFenceMember``)."""
    group = _consumer_group(coordinator, group_id, "fencing")
    member = group.members.get(member_id)
    if member is None:
        raise GroupFaultError(f"group {group_id!r} has no member {member_id!r}")

    def fence(now: int) -> CoordinatorResult:
        txn = ConsumerTxn(coordinator.state, group_id, now)
        coordinator_fence(txn, member, "fenced")
        return txn.finish()

    return coordinator.run_operation(group_id, fence, now_ms)


def force_rebalance(coordinator: GroupCoordinator, group_id: str, now_ms: int) -> CoordinatorResult:
    """A rebalance now: PreparingRebalance (classic), a new group epoch (consumer)."""
    group = _group(coordinator, group_id)
    if isinstance(group, ConsumerGroup):
        return coordinator.run_operation(group_id, _bump(coordinator, group_id, "forced"), now_ms)
    if not group.is_in(ClassicGroupState.STABLE, ClassicGroupState.COMPLETING_REBALANCE):
        raise GroupFaultError(
            f"group {group_id!r} is {group.state_name()}: only a Stable or CompletingRebalance "
            "group can be sent into a rebalance"
        )

    def prepare(now: int) -> CoordinatorResult:
        out = CoordinatorResult()
        prepare_rebalance(coordinator.state, group, "forced", now, out)
        return out

    return coordinator.run_operation(group_id, prepare, now_ms)


def set_target_assignment(
    coordinator: GroupCoordinator,
    group_id: str,
    assignment: Mapping[str, Mapping[str, Sequence[int]]],
    now_ms: int,
) -> CoordinatorResult:
    """The group's next target: ``{member id: {topic: [partitions]}}``; a member not named gets
    nothing. The epoch is bumped so the target is installed on the next heartbeat."""
    _consumer_group(coordinator, group_id, "a target assignment")
    members: dict[str, MemberAssignment] = {}
    for member_id, topics in assignment.items():
        partitions: dict[Uuid, frozenset[int]] = {}
        for name, numbers in topics.items():
            topic = coordinator.metadata.topic(name)
            if topic is None:
                raise GroupFaultError(f"no topic {name!r}")
            bad = [n for n in numbers if not 0 <= n < topic.partitions]
            if bad:
                raise GroupFaultError(f"topic {name!r} has no partition {bad[0]}")
            partitions[topic.topic_id] = frozenset(numbers)
        members[member_id] = MemberAssignment(partitions)
    scripted = coordinator.consumer.scripted.setdefault(group_id, [])
    scripted.append(ScriptedAssignor(GroupAssignment(members)))
    bump = _bump(coordinator, group_id, "target_assignment_set")
    return coordinator.run_operation(group_id, bump, now_ms)


def _bump(
    coordinator: GroupCoordinator, group_id: str, reason: str
) -> Callable[[int], CoordinatorResult]:
    """A new group epoch for a KIP-848 group, as an operation for ``run_operation``."""

    def bump(now: int) -> CoordinatorResult:
        txn = ConsumerTxn(coordinator.state, group_id, now)
        bump_epoch(txn, reason)
        return txn.finish()

    return bump


def describe(coordinator: GroupCoordinator, group_id: str) -> dict[str, Any] | None:
    """What a test waits on, as JSON: the group's state and each member's owned partitions.

    A consumer group's member owns its current assignment and is settled once it
    is Stable at the group epoch; a classic member owns the partitions of the
    Assignment bytes the leader gave it.
    """
    group = coordinator.group(group_id)
    if group is None:
        return None
    members: dict[str, dict[str, Any]] = {}
    if isinstance(group, ConsumerGroup):
        names = coordinator.metadata.topics_by_id
        for member_id, member in sorted(group.members.items()):
            members[member_id] = {
                "client_id": member.client_id,
                "epoch": member.member_epoch,
                "state": member.state.name,
                "assignment": {
                    (names[tid].name if tid in names else str(tid)): sorted(ps)
                    for tid, ps in sorted(member.assigned_partitions.items(), key=str)
                    if ps
                },
            }
        return {
            "group_id": group_id,
            "type": "consumer",
            "state": group.state_name(),
            "epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "members": members,
        }
    assert isinstance(group, ClassicGroup)
    for member_id, cm in sorted(group.members.items()):
        owned: dict[str, list[int]] = {}
        if cm.assignment:
            try:
                for tp in decode_assignment(cm.assignment).partitions:
                    owned.setdefault(tp.topic, []).append(tp.partition)
            except ConsumerProtocolError:
                owned = {}
        members[member_id] = {
            "client_id": cm.client_id,
            "assignment": {t: sorted(ps) for t, ps in sorted(owned.items())},
        }
    return {
        "group_id": group_id,
        "type": "classic",
        "state": group.state_name(),
        "generation": group.generation_id,
        "members": members,
    }
