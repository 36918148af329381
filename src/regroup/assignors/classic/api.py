"""The client-side assignor interface of the classic protocol (KIP-429).

KIP-429, "ConsumerPartitionAssignor" (public interface changes): an assignor
has a ``name``, the ``supported_protocols`` it can run under (EAGER and/or
COOPERATIVE; Kafka's default is EAGER only), a ``version``, optional
``subscription_user_data`` sent in each member's Subscription, the leader-side
``assign(cluster, group_subscription)``, and the member-side
``on_assignment(assignment, group_metadata)`` callback.

The value types mirror Kafka's ``ConsumerPartitionAssignor.Subscription``,
``Assignment``, ``GroupSubscription`` and ``GroupAssignment``, with Kafka's
field names in snake_case. ``Cluster`` is reduced to what the assignors read:
partition counts per topic and, for rack-aware assignment (KIP-881), the racks
of each partition's replicas.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import ClassVar

from regroup.model import NO_GENERATION, TopicPartition

__all__ = [
    "Assignment",
    "ClusterMetadata",
    "ConsumerGroupMetadata",
    "ConsumerPartitionAssignor",
    "GroupAssignment",
    "GroupSubscription",
    "RebalanceProtocol",
    "Subscription",
]


class RebalanceProtocol(enum.IntEnum):
    """KIP-429's ``RebalanceProtocol``; the ids are Kafka's (EAGER=0, COOPERATIVE=1)."""

    EAGER = 0
    COOPERATIVE = 1


_NO_RACKS: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """What an assignor may know about the cluster.

    ``partitions_per_topic``: the partition count of every topic with metadata
    (topics absent here, or with 0 partitions, are skipped by the assignors as
    Kafka's ``AbstractPartitionAssignor`` skips them).
    ``partition_racks``: for each topic, the set of racks of each partition's
    replicas, indexed by partition number. Absent topics or partitions have no
    known racks (Kafka ignores replicas on brokers without a rack).
    """

    partitions_per_topic: Mapping[str, int]
    partition_racks: Mapping[str, Sequence[frozenset[str]]] = field(default_factory=dict)

    def partition_count(self, topic: str) -> int:
        """The topic's partition count, or 0 when it has no metadata."""
        return self.partitions_per_topic.get(topic, 0)

    def racks(self, topic: str, partition: int) -> frozenset[str]:
        """The racks of the replicas of one partition (empty when unknown)."""
        racks = self.partition_racks.get(topic)
        if racks is None or partition >= len(racks):
            return _NO_RACKS
        return racks[partition]


@dataclass(frozen=True, slots=True)
class Subscription:
    """One member's subscription, as the leader sees it in the JoinGroup response.

    ``generation_id`` is Kafka's ``Optional<Integer> generationId``: negative
    (``NO_GENERATION``) means absent, as when a member speaks Subscription v0/v1.
    ``group_instance_id`` is set by the leader from the JoinGroup member list.
    """

    topics: Sequence[str]
    user_data: bytes | None = None
    owned_partitions: Sequence[TopicPartition] = ()
    generation_id: int = NO_GENERATION
    rack_id: str | None = None
    group_instance_id: str | None = None

    @property
    def has_generation(self) -> bool:
        return self.generation_id >= 0


@dataclass(frozen=True, slots=True)
class GroupSubscription:
    """Every member's subscription, by member id."""

    subscriptions: Mapping[str, Subscription]


@dataclass(frozen=True, slots=True)
class Assignment:
    """One member's assignment: its partitions and the assignor's user data."""

    partitions: Sequence[TopicPartition]
    user_data: bytes | None = None


@dataclass(frozen=True, slots=True)
class GroupAssignment:
    """Every member's assignment, by member id (every subscribed member is present)."""

    assignments: Mapping[str, Assignment]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """What a member knows of its group when ``on_assignment`` is called."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


class ConsumerPartitionAssignor(abc.ABC):
    """KIP-429's ``ConsumerPartitionAssignor``.

    One instance lives in each member (``on_assignment`` may keep state, as the
    ``sticky`` assignor keeps the member's last assignment for its user data);
    ``assign`` itself is a pure function of its arguments.
    """

    #: The name members vote with in JoinGroup (``range``, ``cooperative-sticky``...).
    name: ClassVar[str]

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        """The rebalance protocols this assignor supports; Kafka's default is EAGER only."""
        return (RebalanceProtocol.EAGER,)

    def version(self) -> int:
        """KIP-429, "Looking into the Future: Assignor Version"; the built-ins are 0."""
        return 0

    def subscription_user_data(self, topics: Set[str]) -> bytes | None:
        """User data to put in this member's Subscription (``None``: none)."""
        return None

    @abc.abstractmethod
    def assign(
        self, metadata: ClusterMetadata, group_subscription: GroupSubscription
    ) -> GroupAssignment:
        """The leader's assignment of the subscribed partitions to every member."""

    def on_assignment(self, assignment: Assignment, metadata: ConsumerGroupMetadata) -> None:
        """Called on every member when its assignment arrives (after SyncGroup)."""
        return None
