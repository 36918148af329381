"""The uniform assignor for a group whose members subscribe to different topics.

Kafka: ``UniformHeterogeneousAssignmentBuilder`` (group coordinator, 4.0,
reworked by KAFKA-17710). Members are numbered in Kafka's member order; the
number breaks every tie. Three steps:

1. **Keep**: each member keeps everything it holds of the topics it still
   subscribes to, and drops the rest.
2. **Fill**: the partitions nobody holds are dealt topic by topic -- topics
   sorted by partitions per subscriber (descending), then subscriber count
   (ascending), then topic id (``Uuid`` order: signed most significant half,
   then signed least significant half) -- each partition, in ascending order,
   to the subscriber with the fewest partitions, level by level
   (``MemberBalancer``).
3. **Balance**: for the topics with two or more subscribers, in the same topic
   order, the most loaded subscribers give their highest-numbered partitions of
   the topic to the least loaded until the counts differ by at most one; passes
   over the topics repeat until one full pass moves nothing, at most 16 times.
   With partially overlapping subscriptions the result is near-balanced only,
   as in Kafka.

Internally partitions are numbered globally (topic offset + partition) and held
in numpy arrays: ``owner[g]`` is the member index holding partition ``g`` or -1.

Deviations on inputs Kafka's coordinator never produces: a held partition
number at or above the topic's partition count is dropped (Kafka would fail
with an index error); a partition held by two members ends with the later
member in member order, and the earlier keeps its stale copy only if nothing
else about its assignment changes (Kafka keeps the stale copy in all cases).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np

from regroup.assignors.consumer.api import (
    GroupAssignment,
    MemberAssignment,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
)
from regroup.assignors.consumer.member_balancer import MemberBalancer
from regroup.assignors.consumer.topic_index import TopicIndex, uuid_sort_key
from regroup.assignors.errors import PartitionAssignorError
from regroup.model import Uuid

__all__ = ["MAX_ITERATION_COUNT", "assign_heterogeneous", "deal"]

#: Kafka: ``UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT``.
MAX_ITERATION_COUNT = 16


def assign_heterogeneous(
    member_order: Sequence[str],
    members: Mapping[str, MemberSubscriptionSpec],
    describer: SubscribedTopicDescriber,
) -> GroupAssignment:
    """Kafka's heterogeneous uniform assignment; ``member_order`` is Kafka's member order.

    Returns no members at all when nobody subscribes to anything.
    """
    return _Builder(member_order, members, describer).build()


def deal(ranked: list[int], loads: list[int], wanted: int) -> list[int]:
    """Who receives each of ``wanted`` partitions, in order (water-filling).

    ``ranked`` are members sorted by (load, index) and ``loads`` their loads.
    Equivalent to ``wanted`` calls of ``MemberBalancer.next_least_loaded``
    with each receiver's load raised as it receives: every pass deals one
    partition to each member of the least loaded range, then the range's level
    rises by one and it absorbs the members at the new level.
    """
    recipients: list[int] = []
    level = loads[0] if loads else 0
    range_end = 0
    while len(recipients) < wanted:
        range_end = bisect_right(loads, level, range_end)
        recipients.extend(ranked[: min(range_end, wanted - len(recipients))])
        level += 1
    return recipients


class _Builder:
    """One run of the heterogeneous algorithm."""

    def __init__(
        self,
        member_order: Sequence[str],
        members: Mapping[str, MemberSubscriptionSpec],
        describer: SubscribedTopicDescriber,
    ) -> None:
        self.member_order = list(member_order)
        self.members = members
        member_count = len(self.member_order)

        # Group members by identical subscription, so each distinct set is walked once.
        groups: dict[frozenset[Uuid], list[int]] = {}
        for index, member_id in enumerate(self.member_order):
            groups.setdefault(members[member_id].subscribed_topic_ids, []).append(index)
        subscribers: dict[Uuid, list[np.ndarray]] = {}
        for topic_set, indices in groups.items():
            group_array = np.asarray(indices, dtype=np.int64)
            for topic_id in topic_set:
                subscribers.setdefault(topic_id, []).append(group_array)

        # Topics are numbered in Uuid order, so that outputs list them in that order.
        self.index = TopicIndex(sorted(subscribers, key=uuid_sort_key))
        self.topics = self.index.topics
        counts: list[int] = []
        for topic_id in self.topics:
            count = describer.number_of_partitions(topic_id)
            if count == -1:
                raise PartitionAssignorError(
                    f"Members are subscribed to topic {topic_id} which doesn't exist in the "
                    "topic metadata."
                )
            counts.append(count)
        self.counts = counts
        self.offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.offsets[1:])
        #: Subscriber member indices of each topic, ascending.
        self.subscribers: list[np.ndarray] = []
        for topic_id in self.topics:
            arrays = subscribers[topic_id]
            if len(arrays) == 1:
                self.subscribers.append(arrays[0])
            else:
                self.subscribers.append(np.sort(np.concatenate(arrays)))
        #: Each member's subscribed topic numbers (one shared set per distinct subscription).
        self.subscribed_numbers: list[frozenset[int]] = [frozenset()] * member_count
        for topic_set, indices in groups.items():
            numbers = frozenset(map(self.index.number, topic_set))
            for index in indices:
                self.subscribed_numbers[index] = numbers

        total = int(self.offsets[-1])
        self.owner = np.full(total, -1, dtype=np.int64)
        self.sizes = np.zeros(member_count, dtype=np.int64)
        #: Members whose target differs from their current one.
        self.dirty = np.zeros(member_count, dtype=bool)

    # -- the three steps --------------------------------------------------------------

    def build(self) -> GroupAssignment:
        if not self.topics:
            return GroupAssignment(members={})
        self._keep_subscribed()
        self._fill_unassigned()
        self._balance()
        return self._result()

    def _keep_subscribed(self) -> None:
        """Step 1 (Kafka: ``maybeRevokePartitions``)."""
        by_identity = self.index.by_identity
        by_value = self.index.by_value
        holders: list[int] = []  # members with kept pairs
        holder_pairs: list[int] = []  # how many pairs each of them has
        pair_topics: list[int] = []
        pair_sets: list[frozenset[int]] = []
        for index, member_id in enumerate(self.member_order):
            old = self.members[member_id].assigned_partitions
            if not old:
                continue
            subscribed = self.subscribed_numbers[index]
            first_pair = len(pair_sets)
            for topic_id, partitions in old.items():
                topic = by_identity.get(id(topic_id))
                if topic is None:
                    topic = by_value.get(topic_id)
                if topic is not None and topic in subscribed:
                    pair_topics.append(topic)
                    pair_sets.append(partitions)
                else:
                    # Dropped: the target is rebuilt from the owners of the kept topics.
                    self.dirty[index] = True
            if len(pair_sets) > first_pair:
                holders.append(index)
                holder_pairs.append(len(pair_sets) - first_pair)
        if not pair_sets:
            return
        lengths = np.fromiter(map(len, pair_sets), dtype=np.int64, count=len(pair_sets))
        numbers = np.fromiter(
            chain.from_iterable(pair_sets), dtype=np.int64, count=int(lengths.sum())
        )
        pair_members = np.repeat(np.asarray(holders, dtype=np.int64), holder_pairs)
        who = np.repeat(pair_members, lengths)
        topics = np.repeat(np.asarray(pair_topics, dtype=np.int64), lengths)
        limits = np.asarray(self.counts, dtype=np.int64)[topics]
        valid = (numbers >= 0) & (numbers < limits)
        if not valid.all():
            # Partition numbers the topic does not have: their holders lose them.
            self.dirty[who[~valid]] = True
            numbers, who, topics = numbers[valid], who[valid], topics[valid]
        self.owner[self.offsets[topics] + numbers] = who
        np.add.at(self.sizes, who, 1)

    def _topic_order_key(self, topic: int) -> tuple[float, int, int]:
        """Kafka's ``topicComparator`` as a sort key (double division, as in Java).

        Topics are numbered in ``Uuid`` order, so the number stands for the id.
        """
        subscriber_count = len(self.subscribers[topic])
        return (-(self.counts[topic] / subscriber_count), subscriber_count, topic)

    def _fill_unassigned(self) -> None:
        """Step 2 (Kafka: ``assignRemainingPartitions``), water-filling each topic.

        Within one topic only members of the least loaded range gain partitions,
        so the counts of the members beyond it are those of the sorted snapshot
        and the range can grow by bisection; each pass deals one partition to
        every member of the range, in rank order.
        """
        free = np.flatnonzero(self.owner == -1)
        if len(free) == 0:
            return
        topic_of_free = np.searchsorted(self.offsets, free, side="right") - 1
        bounds = np.flatnonzero(np.diff(topic_of_free)) + 1
        starts = np.concatenate([[0], bounds]).tolist()
        ends = np.concatenate([bounds, [len(free)]]).tolist()
        topics_with_free = topic_of_free[starts].tolist()
        run_of = dict(zip(topics_with_free, zip(starts, ends, strict=True), strict=True))
        sizes = self.sizes
        for topic in sorted(topics_with_free, key=self._topic_order_key):
            start, end = run_of[topic]
            wanted = end - start
            subscribers = self.subscribers[topic]
            loads = sizes[subscribers]
            # Every pass deals to a prefix no longer than what is left to deal, so
            # only the first `wanted` ranked members can receive anything.
            order = np.argsort(loads, kind="stable")[:wanted]
            recipients = deal(subscribers[order].tolist(), loads[order].tolist(), wanted)
            gainers = np.asarray(recipients, dtype=np.int64)
            self.owner[free[start:end]] = gainers
            np.add.at(sizes, gainers, 1)
            self.dirty[gainers] = True

    def _balance(self) -> None:
        """Step 3 (Kafka: ``balance`` / ``balanceTopics``)."""
        movable = [t for t in range(len(self.topics)) if len(self.subscribers[t]) >= 2]
        if not movable:
            return
        ordered = sorted(movable, key=self._topic_order_key)
        live_sizes: list[int] = self.sizes.tolist()
        balancer = MemberBalancer(live_sizes)
        last_rebalanced = -1
        for _ in range(MAX_ITERATION_COUNT):
            for position, topic in enumerate(ordered):
                if position == last_rebalanced:
                    return
                moved = self._balance_topic(topic, balancer, live_sizes)
                if moved > 0 or last_rebalanced == -1:
                    last_rebalanced = position

    def _balance_topic(self, topic: int, balancer: MemberBalancer, live_sizes: list[int]) -> int:
        """Move partitions of one topic from its most to its least loaded subscribers."""
        subscribers = self.subscribers[topic]
        loads = self.sizes[subscribers]
        if int(loads.max()) - int(loads.min()) <= 1:
            return 0
        balancer.initialize_sorted(subscribers[np.argsort(loads, kind="stable")].tolist())
        base = int(self.offsets[topic])
        owners = self.owner[base : int(self.offsets[topic + 1])].tolist()
        # Each member's partitions of the topic, ascending; moved ones are not re-added.
        held: dict[int, list[int]] = {}
        for partition, member in enumerate(owners):
            held.setdefault(member, []).append(partition)
        moved = 0
        while not balancer.is_balanced():
            while True:
                giver = balancer.next_most_loaded()
                if giver == -1 or held.get(giver):
                    break
                balancer.exclude_most_loaded()
            if giver == -1:
                break
            partition = held[giver].pop()
            taker = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.owner[base + partition] = taker
            live_sizes[giver] -= 1
            live_sizes[taker] += 1
            self.sizes[giver] -= 1
            self.sizes[taker] += 1
            self.dirty[giver] = True
            self.dirty[taker] = True
            moved += 1
        return moved

    # -- output -----------------------------------------------------------------------

    def _result(self) -> GroupAssignment:
        """Every member's target; unchanged members keep their very mapping object."""
        targets: dict[str, MemberAssignment] = {}
        rebuilt = self._rebuilt_targets()
        for index, member_id in enumerate(self.member_order):
            partitions: Mapping[Uuid, frozenset[int]] | None = rebuilt.get(index)
            if partitions is None:
                partitions = self.members[member_id].assigned_partitions
            targets[member_id] = MemberAssignment(partitions)
        return GroupAssignment(members=targets)

    def _rebuilt_targets(self) -> dict[int, dict[Uuid, frozenset[int]]]:
        """The targets of the dirty members, read back from ``owner``.

        Topics the member does not subscribe to were dropped; every other topic
        of the target is covered by ``owner``.
        """
        dirty = self.dirty
        rebuilt: dict[int, dict[Uuid, frozenset[int]]] = {
            int(index): {} for index in np.flatnonzero(dirty).tolist()
        }
        if not rebuilt:
            return rebuilt
        owner = self.owner
        held = np.flatnonzero(owner >= 0)
        held = held[dirty[owner[held]]]
        if len(held) == 0:
            return rebuilt
        by_member = held[np.argsort(owner[held], kind="stable")]
        members_sorted = owner[by_member]
        topic = np.searchsorted(self.offsets, by_member, side="right") - 1
        partition = (by_member - self.offsets[topic]).tolist()
        # Runs of (member, topic): one frozenset each.
        change = np.flatnonzero((np.diff(members_sorted) != 0) | (np.diff(topic) != 0)) + 1
        run_starts = np.concatenate([[0], change]).tolist()
        run_ends = np.concatenate([change, [len(by_member)]]).tolist()
        run_members = members_sorted[run_starts].tolist()
        run_topics = topic[run_starts].tolist()
        topics = self.topics
        singletons: dict[int, frozenset[int]] = {}  # shared: frozensets are immutable
        for member, topic_no, start, end in zip(
            run_members, run_topics, run_starts, run_ends, strict=True
        ):
            if end - start == 1:
                number = partition[start]
                partitions = singletons.get(number)
                if partitions is None:
                    partitions = singletons[number] = frozenset((number,))
            else:
                partitions = frozenset(partition[start:end])
            rebuilt[member][topics[topic_no]] = partitions
        return rebuilt
