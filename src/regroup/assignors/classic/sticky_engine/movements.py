"""Partition movements during the general path's reassignment loop.

Kafka: ``AbstractStickyAssignor.PartitionMovements``. Every move is recorded
as (source member -> destination member) per topic; a partition moved twice
keeps its original source, and a partition moved back to its source loses its
record. Before moving a partition from ``a`` to ``b``, Kafka looks for a
partition of the same topic already recorded as moved ``b -> a`` and moves
*that* one back instead, so the same topic does not travel both ways between
two members.

Which partition it takes is "the first" of a ``java.util.HashSet`` of
``TopicPartition``: the element in the lowest hash bucket, earliest inserted
within a bucket. That is reproduced here (``TopicPartition.hashCode`` is
``31 * (31 + partition) + topic.hashCode()``; a ``HashSet`` starts with 16
buckets and doubles past 0.75 load, never shrinking).
"""

from __future__ import annotations

from collections.abc import Callable

from regroup.assignors.java_order import java_string_hash

__all__ = ["PartitionMovements", "topic_partition_hash"]


def topic_partition_hash(topic_hash: int, partition: int) -> int:
    """Java's ``TopicPartition.hashCode()`` as an unsigned 32-bit value."""
    return (31 * (31 + partition) + topic_hash) & 0xFFFFFFFF


class _JavaHashSet:
    """Just enough of ``java.util.HashSet`` to know its first element."""

    __slots__ = ("capacity", "elements", "next_seq")

    def __init__(self) -> None:
        self.capacity = 16
        self.elements: dict[int, tuple[int, int]] = {}
        self.next_seq = 0

    def add(self, partition: int, hash_code: int) -> None:
        if partition in self.elements:
            return
        self.elements[partition] = (hash_code, self.next_seq)
        self.next_seq += 1
        if len(self.elements) > 0.75 * self.capacity:
            self.capacity *= 2

    def remove(self, partition: int) -> None:
        self.elements.pop(partition, None)

    def first(self) -> int:
        mask = self.capacity - 1

        def position(item: tuple[int, tuple[int, int]]) -> tuple[int, int]:
            h, seq = item[1]
            return ((h ^ (h >> 16)) & mask, seq)

        return min(self.elements.items(), key=position)[0]


class PartitionMovements:
    """Movement records by partition and by topic (partitions and members are ints)."""

    __slots__ = ("_by_topic", "_hash_of", "_moves")

    def __init__(self, hash_of: Callable[[int], int]) -> None:
        self._moves: dict[int, tuple[int, int]] = {}
        self._by_topic: dict[int, dict[tuple[int, int], _JavaHashSet]] = {}
        self._hash_of = hash_of

    def _remove_record(self, partition: int, topic: int) -> tuple[int, int]:
        pair = self._moves.pop(partition)
        per_topic = self._by_topic[topic]
        partitions = per_topic[pair]
        partitions.remove(partition)
        if not partitions.elements:
            del per_topic[pair]
        if not per_topic:
            del self._by_topic[topic]
        return pair

    def _add_record(self, partition: int, topic: int, pair: tuple[int, int]) -> None:
        self._moves[partition] = pair
        per_topic = self._by_topic.setdefault(topic, {})
        partitions = per_topic.get(pair)
        if partitions is None:
            partitions = per_topic[pair] = _JavaHashSet()
        partitions.add(partition, self._hash_of(partition))

    def move(self, partition: int, topic: int, old: int, new: int) -> None:
        """Kafka's ``movePartition``."""
        if partition in self._moves:
            source, _ = self._remove_record(partition, topic)
            if source != new:
                self._add_record(partition, topic, (source, new))
        else:
            self._add_record(partition, topic, (old, new))

    def partition_to_move(self, partition: int, topic: int, old: int, new: int) -> int:
        """Kafka's ``getTheActualPartitionToBeMoved``."""
        per_topic = self._by_topic.get(topic)
        if per_topic is None:
            return partition
        previous = self._moves.get(partition)
        if previous is not None:
            old = previous[0]
        reverse = per_topic.get((new, old))
        if reverse is None:
            return partition
        return reverse.first()

    def topic_pairs(self) -> dict[int, set[tuple[int, int]]]:
        """The (source, destination) pairs recorded per topic (for stickiness checks)."""
        return {topic: set(pairs) for topic, pairs in self._by_topic.items()}


def partition_hasher(names: tuple[str, ...], offsets: list[int]) -> Callable[[int], int]:
    """A function from global partition index to Java ``TopicPartition.hashCode``."""
    from bisect import bisect_right

    topic_hashes: dict[int, int] = {}

    def hash_of(index: int) -> int:
        t = bisect_right(offsets, index) - 1
        h = topic_hashes.get(t)
        if h is None:
            h = topic_hashes[t] = java_string_hash(names[t])
        return topic_partition_hash(h, index - offsets[t])

    return hash_of
