"""Integer-indexed topics and partitions for the sticky assignors.

Kafka's ``AbstractStickyAssignor`` works on ``TopicPartition`` objects in hash
maps and lists. At Kafka's own test scale (500 topics x 2,000 partitions) that
is a million Python objects per step, so the engine numbers partitions instead:
topics are sorted the way Java sorts strings (UTF-16 code units) and a
partition's *global index* is ``offset[topic] + partition``. Walking global
indices in ascending order is exactly Kafka's "all topics sorted by name,
partitions ascending" order (``getAllTopicPartitions`` over sorted topics).

``PartitionList`` is the compact result type: a ``Sequence[TopicPartition]``
backed by an array of global indices, which only builds ``TopicPartition``
tuples when somebody reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from regroup.model import TopicPartition

__all__ = ["IntArray", "PartitionList", "TopicIndex", "java_string_key"]

IntArray = npt.NDArray[np.int64]


def java_string_key(text: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


class TopicIndex:
    """The topics of one assignment, sorted as Java sorts them, with partition offsets."""

    __slots__ = (
        "_bounds",
        "_raw_position",
        "_topic_of",
        "counts",
        "names",
        "offsets",
        "position",
        "total",
    )

    def __init__(self, partitions_per_topic: Mapping[str, int]) -> None:
        self.names: tuple[str, ...] = tuple(
            sorted((t for t, n in partitions_per_topic.items() if n > 0), key=java_string_key)
        )
        self.position: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self.counts: IntArray = np.array(
            [partitions_per_topic[name] for name in self.names], dtype=np.int64
        )
        self.offsets: IntArray = np.zeros(len(self.names) + 1, dtype=np.int64)
        np.cumsum(self.counts, out=self.offsets[1:])
        self.total = int(self.offsets[-1])
        self._topic_of: IntArray | None = None
        self._raw_position: dict[bytes, int] | None = None
        #: ``(offsets, counts)`` as Python lists, for per-partition loops (built on demand).
        self._bounds: tuple[list[int], list[int]] | None = None

    def raw_position(self) -> dict[bytes, int]:
        """Topic index by UTF-8 encoded name (to read user data without decoding it)."""
        if self._raw_position is None:
            self._raw_position = {
                name.encode("utf-8", "replace"): i for i, name in enumerate(self.names)
            }
        return self._raw_position

    @property
    def topic_of(self) -> IntArray:
        """For every global index, the index of its topic (built once, on demand)."""
        if self._topic_of is None:
            self._topic_of = np.repeat(np.arange(len(self.names), dtype=np.int64), self.counts)
        return self._topic_of

    def same_as(self, other: TopicIndex) -> bool:
        return other is self or (
            other.names == self.names and bool(np.array_equal(other.counts, self.counts))
        )

    def to_global(self, partitions: Sequence[TopicPartition]) -> IntArray:
        """Global indices of the partitions that exist here, in order; others are dropped.

        Kafka ignores owned partitions of topics without metadata; a partition
        number outside the topic is dropped too (Kafka would keep it and could
        assign a partition that does not exist).
        """
        if isinstance(partitions, PartitionList):
            return partitions.reindexed(self)
        position = self.position
        if self._bounds is None:
            self._bounds = (self.offsets.tolist(), self.counts.tolist())
        offsets, counts = self._bounds
        out: list[int] = []
        append = out.append
        for topic, number in partitions:
            t = position.get(topic)
            if t is not None and 0 <= number < counts[t]:
                append(offsets[t] + number)
        return np.array(out, dtype=np.int64)

    def partition(self, index: int) -> TopicPartition:
        t = int(np.searchsorted(self.offsets, index, side="right")) - 1
        return TopicPartition(self.names[t], index - int(self.offsets[t]))

    def partitions(self, indices: IntArray) -> list[TopicPartition]:
        """``TopicPartition`` tuples for an array of global indices."""
        if len(indices) == 0:
            return []
        topics = np.searchsorted(self.offsets, indices, side="right") - 1
        numbers = (indices - self.offsets[topics]).tolist()
        names = self.names
        return [TopicPartition(names[t], n) for t, n in zip(topics.tolist(), numbers, strict=True)]


class PartitionList(Sequence[TopicPartition]):
    """An immutable ``Sequence[TopicPartition]`` backed by global partition indices.

    Behaves like a tuple of ``TopicPartition``: ``len``, indexing, slicing,
    iteration, ``in``, and equality with any sequence of the same partitions
    in the same order (a list, a tuple or another ``PartitionList``).
    """

    __slots__ = ("_index", "_indices")

    def __init__(self, index: TopicIndex, indices: IntArray) -> None:
        self._index = index
        self._indices = indices
        indices.flags.writeable = False

    @property
    def topic_index(self) -> TopicIndex:
        return self._index

    @property
    def global_indices(self) -> IntArray:
        """The read-only array of global indices (for fast paths in the engine)."""
        return self._indices

    def by_topic(self) -> list[tuple[str, list[int]]]:
        """The partition numbers grouped by topic, topics in order of first appearance and
        numbers in list order: what iterating and grouping the tuples gives, without
        building them (the consumer protocol writes an Assignment in this form)."""
        indices = self._indices
        if len(indices) == 0:
            return []
        index = self._index
        topics = np.searchsorted(index.offsets, indices, side="right") - 1
        numbers = (indices - index.offsets[topics]).tolist()
        first = int(topics[0])
        if bool((topics == first).all()):
            return [(index.names[first], numbers)]
        groups: dict[str, list[int]] = {}
        names = index.names
        for t, n in zip(topics.tolist(), numbers, strict=True):
            groups.setdefault(names[t], []).append(n)
        return list(groups.items())

    def reindexed(self, index: TopicIndex) -> IntArray:
        """These partitions' global indices in another topic index (absent ones dropped)."""
        if index.same_as(self._index):
            return self._indices
        old = self._index
        remap = np.array([index.position.get(name, -1) for name in old.names], dtype=np.int64)
        if len(self._indices) == 0:
            return np.zeros(0, dtype=np.int64)
        topics = np.searchsorted(old.offsets, self._indices, side="right") - 1
        numbers = self._indices - old.offsets[topics]
        new_topics = remap[topics]
        valid = new_topics >= 0
        valid[valid] = numbers[valid] < index.counts[new_topics[valid]]
        return np.asarray(index.offsets[new_topics[valid]] + numbers[valid], dtype=np.int64)

    def __len__(self) -> int:
        return len(self._indices)

    @overload
    def __getitem__(self, item: int) -> TopicPartition: ...

    @overload
    def __getitem__(self, item: slice) -> PartitionList: ...

    def __getitem__(self, item: int | slice) -> TopicPartition | PartitionList:
        if isinstance(item, slice):
            return PartitionList(self._index, self._indices[item].copy())
        return self._index.partition(int(self._indices[item]))

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._index.partitions(self._indices))

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, tuple) or len(value) != 2:
            return False
        topic, number = value
        t = self._index.position.get(topic) if isinstance(topic, str) else None
        if t is None or not isinstance(number, int) or not 0 <= number < self._index.counts[t]:
            return False
        return bool(np.any(self._indices == self._index.offsets[t] + number))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PartitionList) and other._index.same_as(self._index):
            return bool(np.array_equal(self._indices, other._indices))
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and list(self) == list(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"PartitionList({list(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (list(self),))


def _rebuild(partitions: Iterable[TopicPartition]) -> tuple[TopicPartition, ...]:
    return tuple(partitions)
