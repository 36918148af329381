"""The cluster's topics as the group coordinator sees them (a metadata image).

Kafka's coordinator reads topic names, ids, partition counts and replica racks
from the broker's ``MetadataImage``; the KIP-848 group derives its
subscription metadata from it and bumps the group epoch when a subscribed
topic changes. Immutable: a change is a new image.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from regroup.model.uuid import Uuid

__all__ = ["MetadataImage", "TopicImage", "replica_racks"]


def replica_racks(per_partition: Iterable[Iterable[str | None]]) -> tuple[frozenset[str], ...]:
    """Each partition's set of replica racks, from the racks of its replicas' brokers.

    A replica on a broker without a rack has a null rack in Kafka's metadata
    (``Node.rack() == null``); Kafka's rack-aware assignors leave it out
    (``RangeAssignor`` and ``AbstractStickyAssignor.RackInfo`` filter with
    ``Objects::nonNull``), so a partition whose replicas all lack a rack has no
    racks, and the rack-aware logic stays off when no partition has one
    (``AbstractPartitionAssignor.useRackAwareAssignment``). ``None`` is that
    null here.
    """
    return tuple(frozenset(rack for rack in racks if rack is not None) for racks in per_partition)


@dataclass(frozen=True, slots=True)
class TopicImage:
    """One topic: its id, name, partition count and each partition's replica racks."""

    topic_id: Uuid
    name: str
    partitions: int
    partition_racks: tuple[frozenset[str], ...] = ()

    def __post_init__(self) -> None:
        if self.partitions < 0:
            raise ValueError(f"topic {self.name!r} cannot have {self.partitions} partitions")


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """Topics by name and by id."""

    topics_by_name: Mapping[str, TopicImage] = field(default_factory=dict)
    topics_by_id: Mapping[Uuid, TopicImage] = field(default_factory=dict)

    @classmethod
    def of(cls, topics: Iterable[TopicImage]) -> MetadataImage:
        by_name: dict[str, TopicImage] = {}
        by_id: dict[Uuid, TopicImage] = {}
        for topic in topics:
            if topic.name in by_name or topic.topic_id in by_id:
                raise ValueError(f"topic {topic.name!r} ({topic.topic_id}) appears twice")
            by_name[topic.name] = topic
            by_id[topic.topic_id] = topic
        return cls(by_name, by_id)

    @classmethod
    def from_partition_counts(cls, counts: Mapping[str, int]) -> MetadataImage:
        """An image with ids derived from the names (``Uuid.for_name``)."""
        return cls.of(TopicImage(Uuid.for_name(name), name, n) for name, n in counts.items())

    def topic(self, name: str) -> TopicImage | None:
        return self.topics_by_name.get(name)

    def topic_by_id(self, topic_id: Uuid) -> TopicImage | None:
        return self.topics_by_id.get(topic_id)

    def with_topic(self, topic: TopicImage) -> MetadataImage:
        """A new image with ``topic`` added or replaced (matched by name)."""
        kept = [t for t in self.topics_by_name.values() if t.name != topic.name]
        return MetadataImage.of([*kept, topic])

    def without_topic(self, name: str) -> MetadataImage:
        return MetadataImage.of(t for t in self.topics_by_name.values() if t.name != name)
