"""What the group coordinator holds between two calls: one typed state that every handler receives.

Kafka: the fields of ``GroupCoordinatorShard`` and of the managers it drives,
``GroupMetadataManager`` (groups of both types by id, the metadata image, the
timer, the server-side assignors, group configs) and ``OffsetMetadataManager``
(committed offsets), without the runtime around them. What only KIP-848 groups
need beside their groups is ``ConsumerProtocolState`` (``state.consumer``).

Rules:

1. Every handler takes this state as its first argument, and every change a
   request or a timer makes is a change of it. No handler keeps a group, a timer
   or a setting of its own, and none imports the service that calls it.
2. The state is data and lookups; what a request does to a group is the code of
   the group's type (``classic/``, ``consumer/``) and of the offsets
   (``offsets``).
3. One group id names one group, of either type (a ``GroupType``), as in Kafka.
4. Timers are the only deferred work. An operation scheduled on ``timer`` gets
   the time it fires at and returns the ``CoordinatorResult`` of what it did; it
   looks its group up again by id, since the group may be gone or replaced.
5. Records, events and responses are not kept here: each handler builds the
   ``CoordinatorResult`` of its one request (or timer) and returns it, in order,
   as Kafka's handlers return a ``CoordinatorResult(records, response)``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from regroup.assignors.consumer.api import ConsumerGroupPartitionAssignor
from regroup.classic.group.group import ClassicGroup
from regroup.consumer.group.client_assignors import ClientAssignmentInFlight
from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.target_assignment import SpecCache
from regroup.coordinator.config import EffectiveGroupConfig, GroupCoordinatorConfig
from regroup.coordinator.group import Group, GroupType
from regroup.coordinator.partition_names import PartitionNames
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.timer import Timer
from regroup.model.metadata import MetadataImage
from regroup.model.topic_partition import TopicPartition

__all__ = ["CommittedOffset", "CommittedOffsets", "ConsumerProtocolState", "GroupCoordinatorState"]


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """One partition's committed offset (Kafka ``OffsetAndMetadata``)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = 0


@dataclass(slots=True, eq=False)
class CommittedOffsets:
    """The committed offsets of every group (Kafka ``OffsetMetadataManager``'s ``offsets``)."""

    #: group id -> partition -> committed offset; a group with none has no entry.
    by_group: dict[str, dict[TopicPartition, CommittedOffset]] = field(default_factory=dict)

    def committed(self, group_id: str, partition: TopicPartition) -> CommittedOffset | None:
        return self.by_group.get(group_id, {}).get(partition)

    def group_offsets(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        """A copy of one group's offsets."""
        return dict(self.by_group.get(group_id, {}))

    def put(self, group_id: str, partition: TopicPartition, offset: CommittedOffset | None) -> None:
        """Store ``offset``, or (``None``) forget the partition's."""
        if offset is not None:
            self.by_group.setdefault(group_id, {})[partition] = offset
            return
        stored = self.by_group.get(group_id)
        if stored is not None:
            stored.pop(partition, None)
            if not stored:
                del self.by_group[group_id]


def server_assignor(name: str) -> ConsumerGroupPartitionAssignor:
    """The server-side assignor of that name (``group.consumer.assignors``)."""
    # Imported here, not at the top: the registry imports every assignor implementation.
    from regroup.assignors.consumer.registry import create_server_assignor

    return create_server_assignor(name)


@dataclass(slots=True, eq=False)
class ConsumerProtocolState:
    """What the KIP-848 side keeps beside its groups."""

    #: Group config overrides by group id (the ConsumerGroupConfig record).
    group_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Those overrides over the broker's configs, parsed (``group_configs.group_config``;
    #: a cache: dropped with the group).
    effective_configs: dict[str, EffectiveGroupConfig] = field(default_factory=dict)
    #: name -> server-side assignor (tests and scripts may replace it).
    assignor_resolver: Callable[[str], ConsumerGroupPartitionAssignor] = server_assignor
    #: Scripted assignor results, used (once each) by the next target computations.
    scripted: dict[str, list[ConsumerGroupPartitionAssignor]] = field(default_factory=dict)
    #: The client-side assignment each group waits for (transient, KIP-848 Rule 5).
    in_flight: dict[str, ClientAssignmentInFlight] = field(default_factory=dict)
    #: How many metadata images were seen (the "version" of resolved regexes).
    metadata_version: int = 0
    #: The driver has an authorizer: a regex resolves only to the topics the principal of
    #: the heartbeat that asked for the resolution may DESCRIBE (``regex_refresh``).
    topic_authorization: bool = False
    #: The classic group that a conversion under way replaced, by id (``consumer.upgrade``).
    pending_upgrades: dict[str, ClassicGroup] = field(default_factory=dict)
    #: Assignments named for events and classic members' bytes (memoised).
    names: PartitionNames = field(default_factory=PartitionNames)
    #: Per group, the assignor's member specs (``build_target_assignment``).
    spec_cache: dict[str, SpecCache] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class GroupCoordinatorState:
    """Groups, timers, configuration and metadata of one coordinator (see the module rules)."""

    config: GroupCoordinatorConfig
    #: The topic metadata image that KIP-848 groups derive their subscriptions from.
    metadata: MetadataImage
    #: Injected randomness (member ids).
    rng: random.Random
    #: Keyed deadlines; each operation returns what it did.
    timer: Timer[CoordinatorResult] = field(default_factory=Timer)
    #: Every group by id, classic or consumer.
    groups: dict[str, Group] = field(default_factory=dict)
    #: The committed offsets of every group.
    offsets: CommittedOffsets = field(default_factory=CommittedOffsets)
    #: What only KIP-848 groups need beside their groups.
    consumer: ConsumerProtocolState = field(default_factory=ConsumerProtocolState)

    def group_type(self, group_id: str) -> GroupType | None:
        """The type of the group ``group_id`` names, or ``None`` when there is none."""
        group = self.groups.get(group_id)
        if isinstance(group, ClassicGroup):
            return GroupType.CLASSIC
        if isinstance(group, ConsumerGroup):
            return GroupType.CONSUMER
        return None

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None
