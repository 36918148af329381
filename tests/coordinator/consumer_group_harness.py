"""The KIP-848 coordinator tests' context: ``regroup.testing``'s, with this suite's defaults.

``Harness`` is a ``CoordinatorTestContext`` (one ``GroupCoordinator``, a manual
clock, every record and event) whose topics default to ``foo`` (3 partitions),
whose config may be given as field names (``Harness(group_consumer_max_size=1)``),
and whose heartbeats default to group ``g`` and name owned ``foo`` partitions
by number.
"""

from __future__ import annotations

import random
from typing import Any

from regroup.consumer.group.group import ConsumerGroup
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.model.requests.consumer import ConsumerGroupHeartbeatResponse
from regroup.records import CoordinatorRecord
from regroup.testing import ConfigLike, CoordinatorTestContext, ManualClock, TopicsLike

__all__ = ["Harness", "response_parts"]

Owned = dict[str, list[int]] | list[int] | None


class Harness(CoordinatorTestContext):
    """A coordinator test context with the consumer-group suite's shorthand."""

    def __init__(
        self,
        config: ConfigLike = None,
        *,
        topics: TopicsLike = None,
        rng: random.Random | None = None,
        clock: ManualClock | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(
            GroupCoordinatorConfig(**fields) if fields else config,
            topics=topics if topics is not None else {"foo": 3},
            rng=rng,
            clock=clock,
        )

    @property
    def last_records(self) -> list[CoordinatorRecord]:
        """The records the last request wrote."""
        return self.last_result.records

    def hb(
        self, member: str, epoch: int, owned: Owned = None, group: str = "g", **fields: Any
    ) -> ConsumerGroupHeartbeatResponse:
        """A heartbeat; ``owned`` as ``foo``'s partition numbers or partitions by topic."""
        if isinstance(owned, list):
            owned = {"foo": owned} if owned else {}
        return self.consumer_group_heartbeat(group, member, epoch, owned=owned, **fields)

    def join(
        self, member: str, topics: tuple[str, ...] = ("foo",), group: str = "g", **fields: Any
    ) -> ConsumerGroupHeartbeatResponse:
        """A first heartbeat (epoch 0, owning nothing), subscribed to ``topics``."""
        fields.setdefault("rebalance_timeout_ms", 300000)
        if "subscribed_topic_regex" not in fields:
            fields.setdefault("subscribed_topic_names", topics)
        return self.hb(member, 0, [], group=group, **fields)

    def group(self, group_id: str = "g") -> ConsumerGroup:
        return self.consumer_group(group_id)

    def parts(self, member: str, group: str = "g") -> list[int]:
        m = self.group(group).members[member]
        return sorted(p for ps in m.assigned_partitions.values() for p in ps)

    def rebuilt(self, group_id: str = "g") -> ConsumerGroup | None:
        """The group as a coordinator rebuilt from the records has it."""
        group = self.replay_into_new().groups.get(group_id)
        assert group is None or isinstance(group, ConsumerGroup)
        return group

    def stabilize(self, members: list[str], rounds: int = 6) -> None:
        """Heartbeat every member with what it was last told, until nothing changes."""
        for _ in range(rounds):
            for m in members:
                member = self.group().members[m]
                self.hb(m, member.member_epoch, self.parts(m))


def response_parts(response: ConsumerGroupHeartbeatResponse) -> list[int] | None:
    if response.assignment is None:
        return None
    return sorted(p for tp in response.assignment.topic_partitions for p in tp.partitions)
