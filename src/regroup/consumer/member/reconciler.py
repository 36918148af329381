"""One reconciliation of the member: from the partitions it owns to its target.

KIP-848, "Consumer", "Rebalance Process", and "ConsumerGroupHeartbeat API",
"Response Handling": the member computes the difference between the
partitions it owns and the assignment in the heartbeat response; it revokes
the partitions it lost (commits their offsets, calls
``ConsumerRebalanceListener#onPartitionsRevoked``), then assigns the new ones
(``PartitionAssignor#onAssignment``, then ``onPartitionsAssigned``), then sends
its next heartbeat at once to acknowledge. The coordinator never asks for a
revocation and an assignment in the same step, but the member handles both in
this order anyway (Kafka's ``AbstractMembershipManager.revokeAndAssign``).

Topic ids: the coordinator speaks topic ids; the member's listener speaks
names. ``resolve_target`` maps ids to names through the member's metadata
image and, like Kafka (``assignedTopicNamesCache``), through the names of the
topics the member already owns, so a topic deleted from the metadata can still
be revoked by name. Ids that resolve to nothing wait: the member reconciles
the resolved part only and finishes when metadata for the rest arrives (Kafka:
``findResolvableAssignmentAndTriggerMetadataUpdate``).

The member (``ConsumerMember``) holds one part from here: ``AssignmentTracker``
is the assignment's progress: what the member owns, its current and target
assignments, the partitions being revoked and the reconciliation waiting for
their commit; it plans and records, the member runs the steps (the commit, the
callbacks, the state changes). The listener is called through the
``ListenerInvoker`` both members share (``regroup.members.listener``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from regroup.consumer.member.heartbeat import LocalAssignment
from regroup.model import TopicPartition, Uuid, topic_partition
from regroup.model.metadata import MetadataImage
from regroup.model.requests.consumer import TopicPartitions

__all__ = [
    "NO_ASSIGNMENT",
    "AssignmentTracker",
    "Reconciliation",
    "ReconciliationPlan",
    "ResolvedTarget",
    "plan_reconciliation",
    "resolve_target",
]


@dataclass(frozen=True, slots=True)
class ResolvedTarget:
    """The part of a target assignment whose topic ids have names."""

    by_id: Mapping[Uuid, frozenset[int]]
    partitions: frozenset[TopicPartition]
    names: Mapping[Uuid, str]
    unresolved: frozenset[Uuid]


def resolve_target(
    target: Mapping[Uuid, frozenset[int]],
    metadata: MetadataImage,
    known_names: Mapping[Uuid, str],
) -> ResolvedTarget:
    """Split ``target`` into the part with known topic names and the ids still unknown."""
    by_id: dict[Uuid, frozenset[int]] = {}
    names: dict[Uuid, str] = {}
    partitions: set[TopicPartition] = set()
    unresolved: set[Uuid] = set()
    for topic_id, parts in target.items():
        if not parts:
            continue
        topic = metadata.topic_by_id(topic_id)
        name = topic.name if topic is not None else known_names.get(topic_id)
        if name is None:
            unresolved.add(topic_id)
            continue
        by_id[topic_id] = parts
        names[topic_id] = name
        partitions.update(topic_partition(name, p) for p in parts)
    return ResolvedTarget(by_id, frozenset(partitions), names, frozenset(unresolved))


@dataclass(frozen=True, slots=True)
class ReconciliationPlan:
    """What to revoke and what to add (both sorted in Kafka's callback order).

    ``local_epoch`` is the target's; ``acknowledge_only`` marks Kafka's shortcut
    when only unresolved topics differ from the current assignment: nothing to
    revoke or assign, no callbacks, just acknowledge at the new local epoch.
    """

    revoked: tuple[TopicPartition, ...]
    added: tuple[TopicPartition, ...]
    target: ResolvedTarget
    local_epoch: int = 0
    acknowledge_only: bool = False

    @property
    def changes_partitions(self) -> bool:
        return bool(self.revoked or self.added)


def plan_reconciliation(
    owned: frozenset[TopicPartition], target: ResolvedTarget, local_epoch: int = 0
) -> ReconciliationPlan:
    """Revoked = owned - target; added = target - owned."""
    return ReconciliationPlan(
        revoked=tuple(sorted(owned - target.partitions)),
        added=tuple(sorted(target.partitions - owned)),
        target=target,
        local_epoch=local_epoch,
    )


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """A plan under way, and the member epoch it started at (Kafka: a reconciliation that
    finds the member rejoined meanwhile is dropped, ``maybeAbortReconciliation``)."""

    plan: ReconciliationPlan
    member_epoch: int


#: Kafka's ``LocalAssignment.NONE``: no assignment received since (re)joining.
NO_ASSIGNMENT = LocalAssignment(-1, {})


class AssignmentTracker:
    """The member's assignment: what it owns, and its current and target assignments.

    ``current`` and ``target`` are by topic id with Kafka's local epochs
    (clients ``AbstractMembershipManager``: ``currentAssignment`` and
    ``currentTargetAssignment``): the target's local epoch grows when a
    response brings different partitions, and the member is reconciled when
    both are equal. ``owned`` is by name (what the listener sees); ``names``
    remembers the names of the owned topics (``assignedTopicNamesCache``).

    A reconciliation that revokes partitions may wait for the commit of their
    offsets: ``pending_revocation`` are those partitions (no longer fetched),
    ``waiting`` the reconciliation to finish when the commit is answered.
    """

    def __init__(self) -> None:
        self.owned: frozenset[TopicPartition] = frozenset()
        self.current = NO_ASSIGNMENT
        self.target = NO_ASSIGNMENT
        self.names: dict[Uuid, str] = {}
        self.pending_revocation: frozenset[TopicPartition] = frozenset()
        self.waiting: Reconciliation | None = None

    def clear(self) -> None:
        """Kafka's ``clearAssignment``: after fencing, leaving or a fatal error."""
        self.owned = frozenset()
        self.current = NO_ASSIGNMENT
        self.target = NO_ASSIGNMENT
        self.names = {}
        self.pending_revocation = frozenset()

    def receive(self, topic_partitions: Sequence[TopicPartitions]) -> None:
        """A heartbeat response's assignment becomes the target (Kafka: ``updateWith``)."""
        received: dict[Uuid, set[int]] = {}
        for entry in topic_partitions:
            received.setdefault(entry.topic_id, set()).update(entry.partitions)
        partitions = {t: frozenset(p) for t, p in received.items() if p}
        if self.target.local_epoch < 0 or dict(self.target.partitions) != partitions:
            self.target = LocalAssignment(self.target.local_epoch + 1, partitions)

    @property
    def reconciled(self) -> bool:
        """Kafka's ``targetAssignmentReconciled``."""
        return self.target == self.current

    def plan(self, metadata: MetadataImage) -> ReconciliationPlan | None:
        """The next reconciliation towards the target, or ``None`` when there is none to do."""
        target = self.target
        resolved = resolve_target(target.partitions, metadata, self.names)
        if self.current.local_epoch >= 0 and dict(resolved.by_id) == dict(self.current.partitions):
            if self.current.local_epoch == target.local_epoch:
                return None  # waiting for metadata of the unresolved topics
            return ReconciliationPlan((), (), resolved, target.local_epoch, acknowledge_only=True)
        return plan_reconciliation(self.owned, resolved, target.local_epoch)

    def wait_for_commit(self, reconciliation: Reconciliation) -> None:
        """The revoked partitions' offsets are being committed; finish after the answer."""
        self.waiting = reconciliation

    def stop_waiting(self) -> None:
        """No reconciliation waits any more (its commit was answered, or it was abandoned)."""
        self.waiting = None
        self.pending_revocation = frozenset()

    def apply(self, plan: ReconciliationPlan) -> None:
        """The plan is done: the member owns its target's resolved part."""
        self.pending_revocation = frozenset()
        self.current = LocalAssignment(plan.local_epoch, plan.target.by_id)
        if not plan.acknowledge_only:
            self.owned = plan.target.partitions
            self.names = dict(plan.target.names)
