"""Who subscribes to what, and partition owners turned into member lists.

Shared by ``range`` and ``roundrobin``, which both start from the same facts
that Kafka's ``AbstractPartitionAssignor.assign(Cluster, GroupSubscription)``
gathers: the members in ``MemberInfo`` order, the subscribed topics that have
metadata and at least one partition (the others are skipped, as Kafka skips
them), and for each topic the ordered list of its subscribers.

Both assignors then decide, for every partition, the *rank* of the member that
owns it (its index in member order); ``member_partition_lists`` turns that
owner array into one tuple of ``TopicPartition`` per member, sorted by
(topic, partition). This split keeps the per-partition work inside numpy and
a few C-level loops: at Kafka's own scale test (500 topics x 2,000 partitions,
2,000 members) the output alone is a million ``TopicPartition`` objects, and
building them is most of the cost.

Subscriber lists are computed once per distinct *set of subscribers*, not per
topic: members are first grouped by their (deduplicated) topic set, and a
topic's subscribers are the union of the groups that list it. With identical
subscriptions, the common case, every topic shares one subscriber list.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np
import numpy.typing as npt

from regroup.assignors.classic.api import ClusterMetadata, Subscription
from regroup.assignors.classic.member_order import sorted_members
from regroup.model import TopicPartition

__all__ = [
    "Int64Array",
    "TopicLayout",
    "build_layout",
    "concatenated_groups",
    "member_partition_lists",
]

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class TopicLayout:
    """The assignable topics of one assignment and their subscribers.

    ``members``: member ids in Kafka's ``MemberInfo`` order; a member's *rank*
    is its index here.
    ``topics``: the subscribed topics with at least one partition, sorted by
    name (Kafka's topic names are ASCII, so Python's order is Java's).
    ``partition_counts``: per topic, its partition count.
    ``partition_starts``: per topic, the index of its partition 0 in the
    flat, topic-major list of all assignable partitions.
    ``subscriber_groups``: each distinct list of subscribers, as ascending
    member ranks (ascending rank is Kafka's member order).
    ``topic_group``: per topic, the index of its subscriber list.
    """

    members: tuple[str, ...]
    topics: tuple[str, ...]
    partition_counts: tuple[int, ...]
    partition_starts: tuple[int, ...]
    subscriber_groups: tuple[tuple[int, ...], ...]
    topic_group: tuple[int, ...]

    @property
    def total_partitions(self) -> int:
        if not self.topics:
            return 0
        return self.partition_starts[-1] + self.partition_counts[-1]

    def partition_topic_index(self) -> Int64Array:
        """For every partition of the flat list, the index of its topic."""
        return np.repeat(np.arange(len(self.topics), dtype=np.int64), self.partition_counts)

    def partition_numbers(self, topic_index: Int64Array) -> Int64Array:
        """For every partition of the flat list, its partition number."""
        starts = np.asarray(self.partition_starts, dtype=np.int64)
        flat = np.arange(self.total_partitions, dtype=np.int64)
        return flat - starts[topic_index]


def build_layout(
    metadata: ClusterMetadata, subscriptions: Mapping[str, Subscription]
) -> TopicLayout:
    """Collect the members, the assignable topics and each topic's subscribers."""
    members = tuple(sorted_members(subscriptions))

    # Members grouped by their topic set, each group in member order.
    ranks_by_topic_set: dict[frozenset[str], list[int]] = {}
    for rank, member_id in enumerate(members):
        topic_set = frozenset(subscriptions[member_id].topics)
        group = ranks_by_topic_set.get(topic_set)
        if group is None:
            ranks_by_topic_set[topic_set] = [rank]
        else:
            group.append(rank)
    topic_sets = list(ranks_by_topic_set)

    # For each topic, the member groups that subscribe to it.
    groups_of_topic: dict[str, list[int]] = {}
    for set_index, topic_set in enumerate(topic_sets):
        for topic in topic_set:
            holders = groups_of_topic.get(topic)
            if holders is None:
                groups_of_topic[topic] = [set_index]
            else:
                holders.append(set_index)

    counts = metadata.partitions_per_topic
    topics = sorted(topic for topic in groups_of_topic if counts.get(topic, 0) > 0)

    subscriber_groups: list[tuple[int, ...]] = []
    group_by_signature: dict[tuple[int, ...], int] = {}
    topic_group: list[int] = []
    partition_counts: list[int] = []
    partition_starts: list[int] = []
    next_start = 0
    for topic in topics:
        signature = tuple(groups_of_topic[topic])
        group_index = group_by_signature.get(signature)
        if group_index is None:
            parts = [ranks_by_topic_set[topic_sets[i]] for i in signature]
            ranks = (
                tuple(parts[0]) if len(parts) == 1 else tuple(sorted(chain.from_iterable(parts)))
            )
            group_index = len(subscriber_groups)
            subscriber_groups.append(ranks)
            group_by_signature[signature] = group_index
        topic_group.append(group_index)
        count = counts[topic]
        partition_counts.append(count)
        partition_starts.append(next_start)
        next_start += count

    return TopicLayout(
        members=members,
        topics=tuple(topics),
        partition_counts=tuple(partition_counts),
        partition_starts=tuple(partition_starts),
        subscriber_groups=tuple(subscriber_groups),
        topic_group=tuple(topic_group),
    )


def concatenated_groups(layout: TopicLayout) -> tuple[Int64Array, Int64Array]:
    """All subscriber lists end to end, and where each group starts in it."""
    sizes = [len(group) for group in layout.subscriber_groups]
    flat = np.fromiter(
        chain.from_iterable(layout.subscriber_groups), dtype=np.int64, count=sum(sizes)
    )
    offsets = np.zeros(len(sizes), dtype=np.int64)
    if sizes:
        np.cumsum(sizes[:-1], out=offsets[1:])
    return flat, offsets


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small tuples.

    ``TopicPartition`` is a tuple subclass, and CPython keeps every instance
    tracked by the cyclic collector (only exact tuples of atomic values get
    untracked), so creating a million of them triggers collections that cost
    four times the creation itself. They cannot form cycles; pausing changes
    nothing but the time. The previous state is restored on exit.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def member_partition_lists(
    layout: TopicLayout,
    topic_index: Int64Array,
    partition_number: Int64Array,
    owner: Int64Array,
) -> list[tuple[TopicPartition, ...]]:
    """One tuple of partitions per member rank, sorted by (topic, partition).

    ``topic_index``, ``partition_number`` and ``owner`` describe the flat,
    topic-major partition list (so it is already in (topic, partition)
    order); a stable sort by owner keeps that order within each member.
    """
    member_count = len(layout.members)
    if owner.size == 0:
        return [() for _ in range(member_count)]
    # numpy sorts 16-bit integers with a (stable) radix sort.
    keys = owner.astype(np.int16) if member_count <= np.iinfo(np.int16).max else owner
    order = np.argsort(keys, kind="stable")
    topics = layout.topics
    names = map(topics.__getitem__, topic_index[order].tolist())
    numbers = partition_number[order].tolist()
    ends = np.cumsum(np.bincount(owner, minlength=member_count)).tolist()
    lists: list[tuple[TopicPartition, ...]] = []
    with _cyclic_gc_paused():
        # tuple.__new__(TopicPartition, (topic, partition)) runs in C, without
        # the Python-level __new__ a NamedTuple call goes through.
        flat: tuple[TopicPartition, ...] = tuple(
            map(tuple.__new__, repeat(TopicPartition), zip(names, numbers, strict=True))
        )
        begin = 0
        for end in ends:
            lists.append(flat[begin:end])
            begin = end
    return lists
