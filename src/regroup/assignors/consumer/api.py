"""The server-side assignor interface of KIP-848, shaped like Kafka's assignor SPI.

KIP-848, "Assignors" / "Server-Side Assignor": the coordinator hands the
assignor a description of the group (each member's subscribed topic ids, rack,
instance id and current target assignment) and of the subscribed topics
(partition counts, replica racks); the assignor returns each member's new
target assignment. Kafka 4.x names these ``GroupSpec``,
``MemberSubscription``, ``SubscribedTopicDescriber``, ``GroupAssignment`` and
``MemberAssignment`` (group-coordinator-api, package
``org.apache.kafka.coordinator.group.api.assignor``); the names here follow them
in snake_case.

Assignments are keyed by topic id (a Kafka ``Uuid``), as on the wire.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import ClassVar

from regroup.model import Uuid

__all__ = [
    "ConsumerGroupPartitionAssignor",
    "GroupAssignment",
    "GroupSpec",
    "MemberAssignment",
    "MemberSubscriptionSpec",
    "SubscribedTopicDescriber",
    "SubscriptionType",
    "TopicMetadata",
]

_NO_RACKS: frozenset[str] = frozenset()


class SubscriptionType(enum.Enum):
    """Kafka's ``SubscriptionType``: whether every member subscribes to the same topics."""

    HOMOGENEOUS = "HOMOGENEOUS"
    HETEROGENEOUS = "HETEROGENEOUS"


@dataclass(frozen=True, slots=True)
class MemberSubscriptionSpec:
    """One member as the assignor sees it (Kafka: ``MemberSubscription`` + current target)."""

    subscribed_topic_ids: frozenset[Uuid]
    rack_id: str | None = None
    instance_id: str | None = None
    #: The member's current *target* assignment: topic id -> partitions.
    assigned_partitions: Mapping[Uuid, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """The whole group: members by member id, and the subscription type.

    ``members`` keeps the caller's order; assignors that must reproduce Kafka's
    Java ``HashMap`` iteration order derive it themselves from the member ids.
    """

    members: Mapping[str, MemberSubscriptionSpec]
    subscription_type: SubscriptionType

    @classmethod
    def of(cls, members: Mapping[str, MemberSubscriptionSpec]) -> GroupSpec:
        """A spec whose subscription type is derived as Kafka derives it.

        HOMOGENEOUS iff every member subscribes to exactly the same topics
        (an empty group counts as homogeneous).
        """
        topic_sets = {spec.subscribed_topic_ids for spec in members.values()}
        kind = (
            SubscriptionType.HOMOGENEOUS if len(topic_sets) <= 1 else SubscriptionType.HETEROGENEOUS
        )
        return cls(members=members, subscription_type=kind)

    def is_partition_assigned(self, topic_id: Uuid, partition: int) -> bool:
        """True when some member's current target holds the partition."""
        return any(
            partition in spec.assigned_partitions.get(topic_id, ())
            for spec in self.members.values()
        )


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """One topic as the assignor sees it: id, name, partition count, replica racks."""

    topic_id: Uuid
    name: str
    partitions: int
    #: Racks of each partition's replicas, indexed by partition; may be empty.
    partition_racks: tuple[frozenset[str], ...] = ()


class SubscribedTopicDescriber:
    """Kafka's ``SubscribedTopicDescriber``: partition counts and racks by topic id."""

    __slots__ = ("_topics",)

    def __init__(
        self, topics: Mapping[Uuid, TopicMetadata] | Set[TopicMetadata] | list[TopicMetadata]
    ) -> None:
        if isinstance(topics, Mapping):
            self._topics: dict[Uuid, TopicMetadata] = dict(topics)
        else:
            self._topics = {topic.topic_id: topic for topic in topics}

    @property
    def topics(self) -> Mapping[Uuid, TopicMetadata]:
        return self._topics

    def number_of_partitions(self, topic_id: Uuid) -> int:
        """The topic's partition count, or -1 when the topic is unknown (as Kafka answers)."""
        topic = self._topics.get(topic_id)
        return -1 if topic is None else topic.partitions

    def racks_for_partition(self, topic_id: Uuid, partition: int) -> frozenset[str]:
        topic = self._topics.get(topic_id)
        if topic is None or partition >= len(topic.partition_racks):
            return _NO_RACKS
        return topic.partition_racks[partition]


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """One member's target: topic id -> partitions."""

    partitions: Mapping[Uuid, frozenset[int]]


@dataclass(frozen=True, slots=True)
class GroupAssignment:
    """The target assignment of every member the assignor lists, by member id."""

    members: Mapping[str, MemberAssignment]


class ConsumerGroupPartitionAssignor(abc.ABC):
    """Kafka's ``ConsumerGroupPartitionAssignor``: a named, pure server-side assignor."""

    #: The name members ask for in ``ServerAssignor`` (``uniform``, ``range``).
    name: ClassVar[str]

    @abc.abstractmethod
    def assign(
        self, group_spec: GroupSpec, subscribed_topic_describer: SubscribedTopicDescriber
    ) -> GroupAssignment:
        """Compute every member's target; raise ``PartitionAssignorError`` when impossible."""
