"""``ConsumerRebalanceListener``: the application's callbacks around a rebalance.

KIP-429, "ConsumerRebalanceListener and ConsumerPartitionAssignor Semantics":
``on_partitions_revoked`` (the member gives partitions up cleanly, after
committing), ``on_partitions_assigned`` (new partitions, possibly none), and
``on_partitions_lost`` (the partitions were already taken away: the member was
fenced or its session expired; Kafka's default implementation calls
``on_partitions_revoked``). Both member implementations (classic and KIP-848)
call the same listener. Partition sets are passed sorted by (topic, partition).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from regroup.model.topic_partition import TopicPartition

__all__ = ["ConsumerRebalanceListener", "NoOpRebalanceListener"]


class ConsumerRebalanceListener(Protocol):
    def on_partitions_revoked(self, partitions: Sequence[TopicPartition]) -> None: ...

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None: ...

    def on_partitions_lost(self, partitions: Sequence[TopicPartition]) -> None:
        """Kafka's default: the same as ``on_partitions_revoked``."""
        ...


class NoOpRebalanceListener:
    """A listener that does nothing (a consumer with no listener set)."""

    def on_partitions_revoked(self, partitions: Sequence[TopicPartition]) -> None:
        return None

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        return None

    def on_partitions_lost(self, partitions: Sequence[TopicPartition]) -> None:
        return None
