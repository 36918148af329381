"""Reconciliation of one member towards its target, one step per heartbeat.

Kafka: ``CurrentAssignmentBuilder``. KIP-848, "Member Epoch - Reconciliation of
the group" and the case study at the end of the KIP.

=====================================================================================
Rules
=====================================================================================

Rule 1 (revoke first). A step that takes partitions away gives nothing new: the
    member is told its kept partitions only, and gets new ones in a later step
    (KIP-848: "There should be either revoked partitions or newly assignment
    partitions. The protocol never does both together.").

Rule 2 (old epoch until acknowledged). While partitions wait to be revoked the
    member keeps its old epoch. It acknowledges by reporting the partitions it owns
    without the revoked ones; a heartbeat that does not report its partitions
    (``owned is None``) never acknowledges.

Rule 3 (withhold what others hold). A partition of the target that another member
    still owns (its partition epoch is not -1) is withheld until released, so no
    partition is ever owned by two members.

Rule 4 (epochs move forward only). The member epoch only ever moves to the target
    epoch, except after an acknowledged revocation that is followed by another
    revocation: then it moves one epoch on (Kafka 3.9/4.0:
    ``min(epoch + 1, target epoch)``).

Rule 5 (blocked members keep their epoch; KIP-848 only). A member that can use
    nothing more of its target yet (nothing to revoke, nothing addable, only
    partitions still held by others) stays at its epoch in UNRELEASED_PARTITIONS.
    This is the KIP's case study ("B is blocked at epoch (0) until A moves to
    epoch (2)"; "C ... continues to reply with epoch (0) and no partitions").
    Apache Kafka 4.x instead moves such a member to the target epoch with the
    partitions it keeps (``blocked_takes_target_epoch=True``): what the
    coordinator asks for under ``regroup.consumer.semantics=kafka``, and always
    for classic members of a consumer group (online migration), whose generation
    must reach the group's epoch or they would rejoin in a loop.

Rule 6 (the previous epoch). Kafka's ``ConsumerGroupMember.Builder.updateMemberEpoch``
    sets previous := current and current := new, and every branch of
    ``CurrentAssignmentBuilder.computeNextAssignment`` calls it, even a revocation
    at an unchanged epoch or an unreleased-only step
    (``previous_epoch_always_shifts=True``, regroup.consumer.semantics=kafka). So
    after such a step a heartbeat at the epoch before it is no longer the
    "lost response" the coordinator accepts: it is fenced. Under KIP-848's
    semantics the previous epoch is the epoch before the last epoch *change*
    (the response that moved the epoch is the one that may have been lost), and a
    step that keeps the epoch keeps it too; the design document's case study is
    written with that rule.

=====================================================================================
Theory of operation
=====================================================================================

For every topic of the target or of the current assignment, split the member's
partitions into ``keep`` (assigned and targeted), ``revoke`` (assigned, not
targeted) and ``add`` (targeted, not assigned); remove from ``add`` the
*unreleased* partitions (Rule 3; Kafka KAFKA-19449: a partition this member is
itself revoking does not count as held by another). Then the first matching
line decides (``next_assignment``):

    revoke and the member still owns some  -> UNREVOKED_PARTITIONS (Rules 1, 2)
    add                                    -> target epoch; STABLE, or
                                              UNRELEASED_PARTITIONS if some withheld
    unreleased only                        -> UNRELEASED_PARTITIONS, same epoch (Rule 5)
                                              (Kafka: the target epoch)
    nothing                                -> STABLE at the target epoch

Which member states may follow which is the table ``TRANSITIONS``; each state's
step is ``_STEPS[state]``. An illegal transition raises
``IllegalReconciliationError`` and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from regroup.consumer.group.group_member import (
    Assignment,
    ConsumerGroupMember,
    MemberState,
    assignment_from_topic_partitions,
)
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.requests.consumer import TopicPartitions
from regroup.model.uuid import Uuid

__all__ = [
    "TRANSITIONS",
    "IllegalReconciliationError",
    "PartitionEpochs",
    "reconcile",
]

#: ``(topic id, partition) -> epoch`` of the member owning it now, -1 if free (Kafka
#: ``currentPartitionEpoch``).
PartitionEpochs = Callable[[Uuid, int], int]

S = MemberState

#: Allowed predecessor -> successors. A member never moves *to* UNKNOWN here (Kafka
#: only loads UNKNOWN from records written by a newer version).
TRANSITIONS: Mapping[MemberState, frozenset[MemberState]] = {
    S.STABLE: frozenset({S.STABLE, S.UNREVOKED_PARTITIONS, S.UNRELEASED_PARTITIONS}),
    S.UNREVOKED_PARTITIONS: frozenset({S.STABLE, S.UNREVOKED_PARTITIONS, S.UNRELEASED_PARTITIONS}),
    S.UNRELEASED_PARTITIONS: frozenset({S.STABLE, S.UNREVOKED_PARTITIONS, S.UNRELEASED_PARTITIONS}),
    S.UNKNOWN: frozenset({S.STABLE, S.UNREVOKED_PARTITIONS, S.UNRELEASED_PARTITIONS}),
}


class IllegalReconciliationError(RuntimeError):
    """A step that would break the transition table (a bug, never a client mistake)."""


@dataclass(frozen=True, slots=True)
class _Step:
    """The inputs of one reconciliation step."""

    member: ConsumerGroupMember
    target_epoch: int
    target: Assignment
    partition_epoch: PartitionEpochs
    #: What the member reported owning; ``None``: not reported in this heartbeat.
    owned: Assignment | None
    #: Rule 5 as Kafka 4.x applies it (see the module docstring).
    blocked_takes_target_epoch: bool = False
    #: Rule 6 as Kafka 4.x applies it.
    previous_epoch_always_shifts: bool = False

    def owns_any_of(self, partitions: Assignment) -> bool:
        """Kafka ``ownsRevokedPartitions``: unreported ownership counts as still owning."""
        if self.owned is None:
            return True
        return any(
            partitions.get(topic_id, frozenset()) & owned for topic_id, owned in self.owned.items()
        )


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: PartitionEpochs,
    owned: tuple[TopicPartitions, ...] | None,
    *,
    blocked_takes_target_epoch: bool = False,
    previous_epoch_always_shifts: bool = False,
) -> ConsumerGroupMember:
    """One reconciliation step of ``member`` towards ``target`` at ``target_epoch``.

    The two flags are Rules 5 and 6 as Apache Kafka 4.x applies them (both True
    under ``regroup.consumer.semantics=kafka``; both False is KIP-848's design).
    Returns the member unchanged when there is nothing to do. Raises
    ``KafkaProtocolError(FENCED_MEMBER_EPOCH)`` for a member in UNKNOWN state that
    reports partitions (Kafka: such a member must rejoin).
    """
    if _only_epoch_moves(member, target_epoch, target):
        # The step ``_next_assignment`` would take, without building it: STABLE at the
        # target epoch with the very partitions it holds (every member of a group that
        # bumps its epoch takes this step once, so it is the common one).
        return member.with_current_assignment(
            MemberState.STABLE, target_epoch, member.member_epoch, member.assigned_partitions, {}
        )
    step = _Step(
        member,
        target_epoch,
        target,
        partition_epoch,
        None if owned is None else assignment_from_topic_partitions(owned),
        blocked_takes_target_epoch,
        previous_epoch_always_shifts,
    )
    result = _STEPS[member.state](step)
    if result is not member and result.state not in TRANSITIONS[member.state]:
        raise IllegalReconciliationError(f"{member.state.name} -> {result.state.name}")
    return result


def _only_epoch_moves(member: ConsumerGroupMember, target_epoch: int, target: Assignment) -> bool:
    """A STABLE member behind the target epoch whose partitions are its target exactly.

    Then ``_next_assignment`` keeps everything, revokes and adds nothing, and moves
    the member to the target epoch, STABLE. Empty partition sets are excluded so
    that "exactly" is the same test as ``_next_assignment``'s (which drops them).
    """
    return (
        member.state is MemberState.STABLE
        and member.member_epoch != target_epoch
        and not member.partitions_pending_revocation
        and member.assigned_partitions == target
        and all(target.values())
    )


# -- per-state steps ----------------------------------------------------------------------


def _from_stable(step: _Step) -> ConsumerGroupMember:
    """STABLE.

    action: nothing when already at the target epoch; else compute the next assignment.
    transition: STABLE, UNREVOKED_PARTITIONS or UNRELEASED_PARTITIONS.
    """
    if step.member.member_epoch == step.target_epoch:
        return step.member
    return _next_assignment(step, step.member.member_epoch)


def _from_unrevoked(step: _Step) -> ConsumerGroupMember:
    """UNREVOKED_PARTITIONS: waiting for the member to give partitions up.

    action: nothing while the member may still own a partition pending revocation
        (Rule 2); once it reports them gone, move on towards the target.
    transition: UNREVOKED_PARTITIONS (unchanged, or the next revocation at
        ``min(epoch + 1, target epoch)``), UNRELEASED_PARTITIONS or STABLE.
    """
    if step.owns_any_of(step.member.partitions_pending_revocation):
        return step.member
    return _next_assignment(step, min(step.member.member_epoch + 1, step.target_epoch))


def _from_unreleased(step: _Step) -> ConsumerGroupMember:
    """UNRELEASED_PARTITIONS: waiting for other members to release partitions.

    action: recompute; withheld partitions that are free now are given.
    transition: UNRELEASED_PARTITIONS, STABLE or UNREVOKED_PARTITIONS (new target).
    """
    return _next_assignment(step, step.member.member_epoch)


def _from_unknown(step: _Step) -> ConsumerGroupMember:
    """UNKNOWN: a state this version does not know (Kafka: loaded from a newer version).

    action: a member reporting partitions (or not reporting) is fenced; one that
        reports none restarts from the target.
    transition: STABLE, UNREVOKED_PARTITIONS or UNRELEASED_PARTITIONS.
    """
    if step.owned is None or step.owned:
        raise KafkaProtocolError(
            ErrorCode.FENCED_MEMBER_EPOCH, "The member is in an unknown state and must rejoin."
        )
    return _next_assignment(step, step.target_epoch)


_STEPS: Mapping[MemberState, Callable[[_Step], ConsumerGroupMember]] = {
    S.STABLE: _from_stable,
    S.UNREVOKED_PARTITIONS: _from_unrevoked,
    S.UNRELEASED_PARTITIONS: _from_unreleased,
    S.UNKNOWN: _from_unknown,
}


def _next_assignment(step: _Step, epoch_if_revoking: int) -> ConsumerGroupMember:
    """Kafka ``computeNextAssignment``, with Rule 5 for blocked members."""
    member = step.member
    keep: dict[Uuid, frozenset[int]] = {}
    revoke: dict[Uuid, frozenset[int]] = {}
    add: dict[Uuid, frozenset[int]] = {}
    has_unreleased = False
    for topic_id in set(step.target) | set(member.assigned_partitions):
        target = step.target.get(topic_id, frozenset())
        assigned = member.assigned_partitions.get(topic_id, frozenset())
        pending = member.partitions_pending_revocation.get(topic_id, frozenset())
        kept = assigned & target
        revoked = assigned - target
        addable = frozenset(
            p for p in target - kept if p in pending or step.partition_epoch(topic_id, p) == -1
        )
        if len(addable) < len(target - kept):
            has_unreleased = True
        if kept:
            keep[topic_id] = kept
        if revoked:
            revoke[topic_id] = revoked
        if addable:
            add[topic_id] = addable

    if revoke and step.owns_any_of(revoke):
        # Rules 1 and 2: give up first, keep the old epoch meanwhile.
        return _moved(
            step,
            epoch_if_revoking,
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned_partitions=keep,
            partitions_pending_revocation=revoke,
        )
    if add:
        grown = dict(keep)
        for topic_id, partitions in add.items():
            grown[topic_id] = grown.get(topic_id, frozenset()) | partitions
        state = MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE
        return _moved(
            step,
            step.target_epoch,
            state=state,
            assigned_partitions=grown,
            partitions_pending_revocation={},
        )
    if has_unreleased:
        if step.blocked_takes_target_epoch:
            return _moved(
                step,
                step.target_epoch,
                state=MemberState.UNRELEASED_PARTITIONS,
                assigned_partitions=keep,
                partitions_pending_revocation={},
            )
        # Rule 5: blocked; the member keeps its epoch and what it keeps.
        return replace(
            member,
            state=MemberState.UNRELEASED_PARTITIONS,
            assigned_partitions=keep,
            partitions_pending_revocation={},
        )
    return _moved(
        step,
        step.target_epoch,
        state=MemberState.STABLE,
        assigned_partitions=keep,
        partitions_pending_revocation={},
    )


def _moved(
    step: _Step,
    epoch: int,
    *,
    state: S,
    assigned_partitions: Assignment,
    partitions_pending_revocation: Assignment,
) -> ConsumerGroupMember:
    """The member with this current assignment, at ``epoch``; one copy of the member.

    The old epoch becomes the previous one (Kafka ``updateMemberEpoch``): always
    under Rule 6 as Kafka applies it, else only when the epoch moves.
    """
    member = step.member
    moves = member.member_epoch != epoch or step.previous_epoch_always_shifts
    previous = member.member_epoch if moves else member.previous_member_epoch
    return member.with_current_assignment(
        state, epoch, previous, assigned_partitions, partitions_pending_revocation
    )
