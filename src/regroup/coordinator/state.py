"""What the group coordinator holds between two calls: one typed state that every handler receives.

Kafka: the fields of ``GroupCoordinatorShard`` and of the managers it drives,
``GroupMetadataManager`` (groups of both types by id, the metadata image, the
timer) and ``OffsetMetadataManager`` (committed offsets), without the runtime
around them.

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
from dataclasses import dataclass, field

from regroup.classic.group import ClassicGroup
from regroup.consumer.group import ConsumerGroup
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.group import Group, GroupType
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.timer import Timer
from regroup.model.metadata import MetadataImage

__all__ = ["GroupCoordinatorState"]


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
