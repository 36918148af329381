"""One member of a KIP-848 consumer group as the coordinator sees it (immutable).

KIP-848, "Data Model": a member has its subscription (topic names and/or a
regular expression), the assignors it asks for, and its *current assignment*:
its member epoch and the partitions it owns now. Kafka 4.x adds the
reconciliation state (``MemberState``), the previous member epoch (for the
lost-response rule of "Request Handling" step 3) and the partitions it still
has to revoke (Kafka: ``ConsumerGroupMember``).

Every change makes a new member (``dataclasses.replace``); the group swaps it
in when a record is replayed. Partitions are keyed by topic id, as in Kafka's
records.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from operator import itemgetter

from regroup.model.requests.classic import JoinGroupRequestProtocol
from regroup.model.requests.consumer import ClientAssignor, TopicPartitions
from regroup.model.uuid import Uuid

__all__ = [
    "Assignment",
    "ClassicMemberMetadata",
    "ConsumerGroupMember",
    "MemberState",
    "assignment_from_topic_partitions",
    "assignment_size",
    "assignment_to_topic_partitions",
    "merge_assignments",
    "subtract_assignments",
]

#: Partitions by topic id; an immutable view (never mutated once built).
Assignment = Mapping[Uuid, frozenset[int]]

_EMPTY: Assignment = {}


class MemberState(enum.IntEnum):
    """Kafka's ``MemberState`` (record value ``state``): where a member is in its reconciliation.

    See ``regroup.consumer.group.reconciliation`` for the transition table.
    """

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member that speaks the classic protocol inside a consumer group adds.

    Kafka: ``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata`` (Kafka 3.8+,
    online migration): the session timeout the member sent in its JoinGroup (the
    coordinator expires it by that timeout, not the group's) and the protocols it
    supports (assignor names with their Subscription bytes), in its own order.
    A member with this set "uses the classic protocol" (Kafka ``useClassicProtocol``).
    """

    session_timeout_ms: int
    supported_protocols: tuple[JoinGroupRequestProtocol, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """A member: subscription and assignors (metadata) plus its current assignment."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    #: ``-1`` until the member tells; the Java client sends ``max.poll.interval.ms``.
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    #: ``""``: no regular expression.
    subscribed_topic_regex: str = ""
    server_assignor: str | None = None
    client_assignors: tuple[ClientAssignor, ...] = ()
    # -- current assignment (record 8) --
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    # -- online migration (record 5) --
    #: Set for a member that joined with JoinGroup (Kafka ``classicMemberMetadata``).
    classic_member_metadata: ClassicMemberMetadata | None = None

    @property
    def use_classic_protocol(self) -> bool:
        """Kafka ``ConsumerGroupMember.useClassicProtocol``."""
        return self.classic_member_metadata is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        """Kafka ``isReconciledTo``: STABLE and at the target epoch."""
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        """Kafka ``updateMemberEpoch``: the old epoch becomes the previous one."""
        return replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)

    def with_current_assignment(
        self,
        state: MemberState,
        member_epoch: int,
        previous_member_epoch: int,
        assigned_partitions: Assignment,
        partitions_pending_revocation: Assignment,
    ) -> ConsumerGroupMember:
        """This member with another current assignment (record 8), the metadata kept.

        The same as ``dataclasses.replace`` with those five fields, built directly:
        the coordinator makes one such copy per heartbeat that moves a member, and
        ``replace`` costs several times more (it walks the fields by name).
        """
        return ConsumerGroupMember(
            self.member_id,
            self.instance_id,
            self.rack_id,
            self.rebalance_timeout_ms,
            self.client_id,
            self.client_host,
            self.subscribed_topic_names,
            self.subscribed_topic_regex,
            self.server_assignor,
            self.client_assignors,
            state,
            member_epoch,
            previous_member_epoch,
            assigned_partitions,
            partitions_pending_revocation,
            self.classic_member_metadata,
        )

    def metadata_equals(self, other: ConsumerGroupMember) -> bool:
        """Same member metadata (record 5), whatever the current assignments."""
        return other is self or (
            self.instance_id == other.instance_id
            and self.rack_id == other.rack_id
            and self.rebalance_timeout_ms == other.rebalance_timeout_ms
            and self.client_id == other.client_id
            and self.client_host == other.client_host
            and self.subscribed_topic_names == other.subscribed_topic_names
            and self.subscribed_topic_regex == other.subscribed_topic_regex
            and self.server_assignor == other.server_assignor
            and self.client_assignors == other.client_assignors
            and self.classic_member_metadata == other.classic_member_metadata
        )

    def assignment_equals(self, other: ConsumerGroupMember) -> bool:
        """Same current assignment (record 8)."""
        return other is self or (
            self.state is other.state
            and self.member_epoch == other.member_epoch
            and self.previous_member_epoch == other.previous_member_epoch
            and self.assigned_partitions == other.assigned_partitions
            and self.partitions_pending_revocation == other.partitions_pending_revocation
        )

    def owned_partitions(self) -> Iterable[tuple[Uuid, int]]:
        """Assigned and still-to-revoke partitions: every partition this member holds."""
        for assignment in (self.assigned_partitions, self.partitions_pending_revocation):
            for topic_id, partitions in assignment.items():
                for partition in partitions:
                    yield topic_id, partition


def assignment_from_topic_partitions(
    topic_partitions: Iterable[TopicPartitions] | None,
) -> Assignment:
    """Wire/record form to an assignment; empty partition lists are dropped."""
    result: dict[Uuid, frozenset[int]] = {}
    for entry in topic_partitions or ():
        partitions = entry.partitions
        if partitions:
            topic_id = entry.topic_id
            seen = result.get(topic_id)
            result[topic_id] = frozenset(partitions) if seen is None else seen.union(partitions)
    return result


def assignment_to_topic_partitions(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    """A canonical wire/record form: topics by id order, partitions sorted, none empty."""
    if not assignment:
        return ()
    if len(assignment) == 1:  # the usual case, without hashing the topic id
        ((topic_id, partitions),) = assignment.items()
        return (TopicPartitions(topic_id, tuple(sorted(partitions))),) if partitions else ()
    return tuple(
        TopicPartitions(topic_id, tuple(sorted(partitions)))
        for topic_id, partitions in sorted(assignment.items(), key=itemgetter(0))
        if partitions
    )


def merge_assignments(a: Assignment, b: Assignment) -> Assignment:
    result = dict(a)
    for topic_id, partitions in b.items():
        merged = result.get(topic_id, frozenset()) | partitions
        if merged:
            result[topic_id] = merged
    return result


def subtract_assignments(a: Assignment, b: Assignment) -> Assignment:
    result: dict[Uuid, frozenset[int]] = {}
    for topic_id, partitions in a.items():
        remaining = partitions - b.get(topic_id, frozenset())
        if remaining:
            result[topic_id] = remaining
    return result


def assignment_size(assignment: Assignment) -> int:
    return sum(len(p) for p in assignment.values())


def normalize(assignment: Assignment) -> Assignment:
    """Drop empty topics so equal assignments compare equal."""
    return {t: frozenset(p) for t, p in assignment.items() if p} if assignment else _EMPTY
