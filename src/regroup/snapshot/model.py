"""What a snapshot of a live group holds: plain values, gathered by ``regroup.snapshot.admin``.

Names follow Kafka's Admin API (``ConsumerGroupDescription``, ``MemberDescription``,
``ListOffsetsResultInfo``): a group has a type (``classic`` or ``consumer``, KIP-848), a
state in Kafka's words (``Stable``, ``Empty`` ...), the assignor it runs (the classic
group's protocol name, or the consumer group's server assignor), and members with their
ids, ``group.instance.id`` (static membership, KIP-345), client id, host and assignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ConfigValue", "GroupView", "MemberView", "Sample", "Snapshot", "SnapshotError"]

TopicPartition = tuple[str, int]


class SnapshotError(Exception):
    """The snapshot cannot be taken or turned into a scenario: one line, Kafka's words."""


@dataclass(frozen=True, slots=True)
class MemberView:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]
    #: KIP-848 only: the partitions the coordinator's target gives the member.
    target_assignment: tuple[TopicPartition, ...] | None = None
    #: The member epoch (KIP-848), or the generation a classic member reported in its
    #: Subscription (v2+); ``None`` when not known.
    epoch: int | None = None


@dataclass(frozen=True, slots=True)
class GroupView:
    group_id: str
    #: ``classic`` or ``consumer`` (KIP-848), as ListGroups v5 / ConsumerGroupDescribe say.
    type: str
    #: Kafka's state name: ``Stable``, ``Empty``, ``PreparingRebalance`` ...
    state: str
    #: The classic group's protocol name (``range``, ``cooperative-sticky`` ...) or the
    #: consumer group's server assignor (``uniform``, ``range``); ``""`` when not reported.
    assignor: str
    members: tuple[MemberView, ...]
    #: ``HOST:PORT (ID)`` of the group coordinator.
    coordinator: str
    #: The request that described the group: ``ConsumerGroupDescribe`` or ``DescribeGroups``.
    described_by: str
    #: What the describe left out or got around (a broker's quirk), one line each.
    notes: tuple[str, ...] = ()
    #: KIP-848 only: the group epoch and the target assignment epoch.
    group_epoch: int | None = None
    assignment_epoch: int | None = None

    @property
    def protocol(self) -> str:
        """The scenario protocol this group runs: ``consumer`` for a KIP-848 group;
        ``cooperative`` for a classic group on ``cooperative-sticky`` (KIP-429), else
        ``eager``."""
        if self.type == "consumer":
            return "consumer"
        return "cooperative" if self.assignor == "cooperative-sticky" else "eager"

    def topics(self) -> list[str]:
        """The topics the members own or are to own, sorted."""
        names = {t for m in self.members for t, _ in m.assignment}
        names |= {t for m in self.members for t, _ in m.target_assignment or ()}
        return sorted(names)


@dataclass(frozen=True, slots=True)
class Sample:
    """The end offsets (ListOffsets ``latest``) of the partitions, at one instant."""

    #: Seconds on a monotonic clock, the middle of the request's round trip.
    at_s: float
    end_offsets: Mapping[TopicPartition, int]


@dataclass(frozen=True, slots=True)
class ConfigValue:
    value: str
    #: Kafka's ``ConfigSource`` name: ``DEFAULT_CONFIG``, ``STATIC_BROKER_CONFIG``,
    #: ``DYNAMIC_GROUP_CONFIG`` ...
    source: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    bootstrap: str
    #: ISO-8601 UTC of the first sample.
    taken_at: str
    #: ``client library version`` (librdkafka's) that spoke to the cluster.
    library: str
    group: GroupView
    #: Every partition count of the group's topics (Metadata).
    partitions: Mapping[str, int]
    #: Committed offsets (OffsetFetch) of the group.
    committed: Mapping[TopicPartition, int]
    first: Sample
    second: Sample
    #: The coordinator broker's group configs (DescribeConfigs BROKER), by Kafka name;
    #: ``None`` when the broker did not tell (``configs_note`` says why).
    broker_configs: Mapping[str, ConfigValue] | None = None
    #: The group's own configs (DescribeConfigs GROUP, KIP-848), or ``None``.
    group_configs: Mapping[str, ConfigValue] | None = None
    configs_note: tuple[str, ...] = field(default=())

    @property
    def elapsed_s(self) -> float:
        return self.second.at_s - self.first.at_s

    def rates(self) -> dict[TopicPartition, float]:
        """Records produced per second on each partition sampled twice: the end offsets'
        difference over the time between the two samples."""
        elapsed = self.elapsed_s
        if elapsed <= 0:
            return {}
        return {
            tp: max(0, self.second.end_offsets[tp] - start) / elapsed
            for tp, start in self.first.end_offsets.items()
            if tp in self.second.end_offsets
        }

    def lag(self) -> dict[TopicPartition, int]:
        """Kafka's lag (``ConsumerGroupCommand.getLag``): the second sample's end offset
        minus the committed offset, for every committed partition whose end is known."""
        return {
            tp: max(0, self.second.end_offsets[tp] - offset)
            for tp, offset in self.committed.items()
            if tp in self.second.end_offsets and offset >= 0
        }
