"""A KIP-848 coordinator harness for the consumer-group tests of this folder.

One ``GroupCoordinator``, a clock, and every record written (so a test can
rebuild the group from its records and compare it with the live one).
"""

from __future__ import annotations

from typing import Any

from regroup.consumer.group import ConsumerGroup
from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.service import GroupCoordinator
from regroup.events import Event
from regroup.model.metadata import MetadataImage, TopicImage
from regroup.model.requests.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from regroup.model.uuid import Uuid
from regroup.records import CoordinatorRecord

__all__ = ["Harness", "response_parts"]


class Harness:
    """One coordinator, a clock, and every record written (to rebuild the group)."""

    def __init__(self, topics: dict[str, int] | None = None, **config: Any) -> None:
        self.image = MetadataImage.from_partition_counts(topics or {"foo": 3})
        self.coordinator = GroupCoordinator(GroupCoordinatorConfig(**config), metadata=self.image)
        self.now = 0
        self.records: list[CoordinatorRecord] = []
        self.events: list[Event] = []
        self.last_records: list[CoordinatorRecord] = []

    def tid(self, name: str) -> Any:
        return self.coordinator.metadata.topics_by_name[name].topic_id

    def owned(self, parts: dict[str, list[int]] | list[int] | None) -> Any:
        if parts is None:
            return None
        if isinstance(parts, list):
            parts = {"foo": parts} if parts else {}
        return tuple(TopicPartitions(self.tid(t), tuple(p)) for t, p in parts.items())

    def send(self, request: object) -> Any:
        result = self.coordinator.handle("t", request, self.now)
        self.records.extend(result.records)
        self.events.extend(result.events)
        self.last_records = list(result.records)
        return result.response_for("t")

    def hb(
        self,
        member: str,
        epoch: int,
        owned: dict[str, list[int]] | list[int] | None = None,
        group: str = "g",
        **fields: Any,
    ) -> ConsumerGroupHeartbeatResponse:
        response = self.send(
            ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id=member,
                member_epoch=epoch,
                topic_partitions=self.owned(owned),
                **fields,
            )
        )
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    def join(
        self, member: str, topics: tuple[str, ...] = ("foo",), group: str = "g", **fields: Any
    ) -> ConsumerGroupHeartbeatResponse:
        fields.setdefault("rebalance_timeout_ms", 300000)
        if "subscribed_topic_regex" not in fields:
            fields.setdefault("subscribed_topic_names", topics)
        return self.hb(member, 0, [], group=group, **fields)

    def advance(self, ms: int) -> None:
        self.now += ms
        result = self.coordinator.on_timer(self.now)
        self.records.extend(result.records)
        self.events.extend(result.events)

    def set_topics(self, topics: dict[str, int]) -> None:
        image = self.coordinator.metadata
        for name, count in topics.items():
            existing = image.topic(name)
            image = image.with_topic(
                TopicImage(existing.topic_id if existing else Uuid.for_name(name), name, count)
            )
        result = self.coordinator.update_metadata(image, self.now)
        self.records.extend(result.records)
        self.events.extend(result.events)

    def group(self, group_id: str = "g") -> ConsumerGroup:
        group = self.coordinator.groups[group_id]
        assert isinstance(group, ConsumerGroup)
        return group

    def parts(self, member: str, group: str = "g") -> list[int]:
        m = self.group(group).members[member]
        return sorted(p for ps in m.assigned_partitions.values() for p in ps)

    def rebuilt(self, group_id: str = "g") -> ConsumerGroup | None:
        fresh = GroupCoordinator(self.coordinator.config, metadata=self.coordinator.metadata)
        for record in self.records:
            fresh.replay(record)
        group = fresh.groups.get(group_id)
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
