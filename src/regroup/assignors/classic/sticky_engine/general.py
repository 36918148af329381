"""The general path: members subscribe to different topics.

Kafka: ``AbstractStickyAssignor.GeneralAssignmentBuilder`` — as balanced as
possible first, then as sticky as possible:

1. Keep each member's validated previous partitions, except those of topics
   it no longer subscribes to or (rack-aware) on no rack of its own; dropping
   any of those means "revocation required".
2. Unassigned partitions, ordered by (number of potential consumers of the
   topic, topic, partition), each go to the first member in (partition count,
   member id) order that subscribes to the topic — a rack-matching member
   first when rack-aware.
3. Topics with fewer than two potential consumers, and members that can
   neither gain nor lose a partition, are set aside.
4. Reassignment loop (over the newly assigned partitions first unless a
   revocation was required, then over all): while the assignment is not
   balanced, move a partition back to its previous owner (from an older
   generation) if its current owner has 2+ more partitions, or else to the
   least-loaded subscribed member if some subscriber has 2+ fewer; repeat
   until a pass changes nothing. ``PartitionMovements`` keeps a topic from
   travelling both ways between two members.
5. If this was not a fresh assignment, something moved, and the balance score
   (sum over member pairs of the size difference) did not improve, revert.

Kafka scans a ``TreeSet`` of members and rescans every partition to decide
whether the assignment is balanced; here members with the same potential
topics (and rack) share a heap keyed by (count, member id), so "the first
subscribed member in (count, id) order" is the least key among the heaps of
the topic's subscriber groups, and balance is re-checked only after a move.

Deviations, only where Kafka fails or produces an invalid assignment: a
"previous owner" that no longer takes part in the reassignment is not used
(Kafka throws ``NullPointerException``); a partition that the loop leaves with
a previous owner no longer subscribed to its topic is handed to the first
subscribed member in (count, member id) order (Kafka returns the invalid
assignment). Where Kafka's lists end up holding a partition twice (a
consequence of the same moves), the results differ too.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from regroup.assignors.classic.sticky_engine.indexing import IntArray, TopicIndex
from regroup.assignors.classic.sticky_engine.movements import (
    PartitionMovements,
    partition_hasher,
)
from regroup.assignors.classic.sticky_engine.racks import RackInfo

__all__ = ["GeneralInput", "general_assign"]


@dataclass(frozen=True, slots=True)
class GeneralInput:
    """Everything the general path reads; members by position in Kafka's map order.

    ``topics[i]``: member ``i``'s subscribed topics that exist (topic indices).
    ``owned[i]``: its validated previous partitions. ``prev_owner`` /
    ``prev_generation``: per partition, the highest-generation older claimant
    (Kafka's ``prevAssignment``; -1 for none).
    """

    index: TopicIndex
    id_rank: Sequence[int]
    topics: Sequence[frozenset[int]]
    owned: Sequence[IntArray]
    prev_owner: IntArray
    racks: RackInfo


def _java_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _balance_score(sizes: list[int]) -> int:
    """Kafka's ``getBalanceScore``: sum of |a - b| over member pairs, as a Java int."""
    ordered = sorted(sizes)
    n = len(ordered)
    return _java_int(sum(s * (2 * i - n + 1) for i, s in enumerate(ordered)))


class _Builder:
    def __init__(self, data: GeneralInput) -> None:
        self.data = data
        index = data.index
        self.n_members = n = len(data.topics)
        self.topic_of: list[int] = index.topic_of.tolist()
        self.offsets: list[int] = index.offsets.tolist()
        n_topics = len(index.names)
        self.topic_consumers = [0] * n_topics
        for topics in data.topics:
            for t in topics:
                self.topic_consumers[t] += 1
        self.rank_to_member = [0] * n
        for member, rank in enumerate(data.id_rank):
            self.rank_to_member[rank] = member
        self.owner = [-1] * index.total
        self.stamp = [0] * index.total
        self.next_stamp = 0
        self.counts = [0] * n
        self.revocation_required = False
        # Members sharing potential topics (and rack, when rack-aware) share a heap.
        groups: dict[tuple[frozenset[int], int], int] = {}
        self.group_of = [0] * n
        self.group_rack: list[int] = []
        for member, topics in enumerate(data.topics):
            rack = data.racks.member_bit[member] if data.racks.enabled else -1
            key = (topics, rack)
            group = groups.get(key)
            if group is None:
                group = groups[key] = len(groups)
                self.group_rack.append(rack)
            self.group_of[member] = group
        self.groups_of_topic: list[list[int]] = [[] for _ in range(n_topics)]
        for (topics, _), group in groups.items():
            for t in topics:
                self.groups_of_topic[t].append(group)
        self.heaps: list[list[int]] = [[] for _ in groups]

    # -- the (count, member id) order -------------------------------------------------

    def _push(self, member: int) -> None:
        key = self.counts[member] * self.n_members + self.data.id_rank[member]
        heapq.heappush(self.heaps[self.group_of[member]], key)

    def _top(self, group: int) -> int:
        heap = self.heaps[group]
        n = self.n_members
        counts = self.counts
        rank_to_member = self.rank_to_member
        while heap:
            key = heap[0]
            if counts[rank_to_member[key % n]] == key // n:
                return key
            heapq.heappop(heap)
        return -1

    def _first_member(self, topic: int, partition: int = -1) -> int:
        """The first member in (count, id) order subscribed to ``topic`` (rack-matching
        when ``partition`` is given); -1 if none."""
        best = -1
        masks = self.data.racks.masks
        for group in self.groups_of_topic[topic]:
            if partition >= 0:
                rack = self.group_rack[group]
                if rack >= 0 and not masks[partition] >> rack & 1:
                    continue
            key = self._top(group)
            if key >= 0 and (best < 0 or key < best):
                best = key
        return -1 if best < 0 else self.rank_to_member[best % self.n_members]

    def _min_count(self, topic: int) -> int:
        best = -1
        for group in self.groups_of_topic[topic]:
            key = self._top(group)
            if key >= 0 and (best < 0 or key < best):
                best = key
        return best // self.n_members

    # -- steps --------------------------------------------------------------------

    def keep_owned(self) -> None:
        """Kafka's ``assignOwnedPartitions`` (members that left are already absent)."""
        data = self.data
        topic_of = data.index.topic_of
        for member, claims in enumerate(data.owned):
            if len(claims) == 0:
                continue
            keep = np.isin(topic_of[claims], np.fromiter(data.topics[member], dtype=np.int64))
            if data.racks.enabled:
                keep &= ~data.racks.mismatches(member, claims)
            if not keep.all():
                self.revocation_required = True
            kept = claims[keep].tolist()
            for partition in kept:
                self.owner[partition] = member
                self.stamp[partition] = self.next_stamp
                self.next_stamp += 1
            self.counts[member] += len(kept)

    def sorted_partitions(self) -> list[int]:
        """All partitions by (potential consumers of the topic, topic, partition)."""
        order = sorted(range(len(self.topic_consumers)), key=lambda t: (self.topic_consumers[t], t))
        out: list[int] = []
        for t in order:
            out.extend(range(self.offsets[t], self.offsets[t + 1]))
        return out

    def _assign(self, partition: int, member: int) -> None:
        self.owner[partition] = member
        self.stamp[partition] = self.next_stamp
        self.next_stamp += 1
        self.counts[member] += 1
        self._push(member)

    def maybe_assign(self, partitions: list[int], rack_aware: bool) -> list[int]:
        """Kafka's ``maybeAssign``; returns the partitions left (rack pass only removes)."""
        left: list[int] = []
        topic_of = self.topic_of
        for partition in partitions:
            topic = topic_of[partition]
            member = self._first_member(topic, partition if rack_aware else -1)
            if member >= 0:
                self._assign(partition, member)
            else:
                left.append(partition)
        return left

    def build(self) -> list[IntArray]:
        data = self.data
        self.keep_owned()
        all_sorted = self.sorted_partitions()
        owner = self.owner
        unassigned = [p for p in all_sorted if owner[p] < 0]
        for member in range(self.n_members):
            self._push(member)
        initializing = max(self.counts, default=0) == 0

        if data.racks.enabled:
            self.maybe_assign(self.maybe_assign(unassigned, rack_aware=True), rack_aware=False)
        else:
            self.maybe_assign(unassigned, rack_aware=False)

        movable_topics = [c >= 2 for c in self.topic_consumers]
        topic_of = self.topic_of
        all_sorted = [p for p in all_sorted if movable_topics[topic_of[p]]]
        unassigned = [p for p in unassigned if movable_topics[topic_of[p]]]

        sizes = self.data.index.counts.tolist()
        self.active = [False] * self.n_members
        for member, topics in enumerate(data.topics):
            max_size = sum(sizes[t] for t in topics)
            self.active[member] = self.counts[member] < max_size or any(
                movable_topics[t] for t in topics
            )
        self.active_members = [m for m in range(self.n_members) if self.active[m]]

        snapshot = (list(self.owner), list(self.stamp), list(self.counts))
        pre_score = _balance_score([self.counts[m] for m in self.active_members])
        self.movements = PartitionMovements(partition_hasher(data.index.names, self.offsets))
        self._dirty = True
        self._balanced = False
        self._member_topics: list[dict[int, int]] | None = None
        self._needs_repair = False

        if not self.revocation_required:
            self.perform_reassignments(unassigned)
        performed = self.perform_reassignments(all_sorted)

        if not initializing and performed:
            score = _balance_score([self.counts[m] for m in self.active_members])
            if score >= pre_score:
                self.owner, self.stamp, self.counts = snapshot
                self._needs_repair = False
        if self._needs_repair:
            self.repair()
        return self.result()

    def repair(self) -> None:
        """Give away partitions that a "previous owner" took without subscribing to them.

        Kafka's reassignment loop moves a partition back to its previous owner
        without checking that the owner still subscribes to its topic; if the
        loop does not move it on again, Kafka hands out an invalid assignment
        (the member then rejoins). Here such a partition goes to the first
        subscribed member in (count, member id) order instead.
        """
        topics = self.data.topics
        topic_of = self.topic_of
        for partition, member in enumerate(self.owner):
            if member >= 0 and topic_of[partition] not in topics[member]:
                new = self._first_member(topic_of[partition])
                self.owner[partition] = new
                self.stamp[partition] = self.next_stamp
                self.next_stamp += 1
                self.counts[member] -= 1
                self.counts[new] += 1
                self._push(member)
                self._push(new)

    # -- balance ------------------------------------------------------------------

    def is_balanced(self) -> bool:
        """Kafka's ``isBalanced``, evaluated only after a change."""
        if not self._dirty:
            return self._balanced
        self._dirty = False
        counts = self.counts
        active_counts = [counts[m] for m in self.active_members]
        if not active_counts or min(active_counts) >= max(active_counts) - 1:
            self._balanced = True
            return True
        lowest = min(active_counts)
        if self._member_topics is None:
            self._member_topics = [{} for _ in range(self.n_members)]
            topic_of = self.topic_of
            for partition, member in enumerate(self.owner):
                if member >= 0:
                    per = self._member_topics[member]
                    t = topic_of[partition]
                    per[t] = per.get(t, 0) + 1
        min_sub: dict[int, int] = {}
        for member in self.active_members:
            count = counts[member]
            if count < lowest + 2:
                continue
            for topic in self._member_topics[member]:
                if self.topic_consumers[topic] < 2:
                    continue
                floor = min_sub.get(topic)
                if floor is None:
                    floor = min_sub[topic] = self._min_count(topic)
                if count >= floor + 2:
                    self._balanced = False
                    return False
        self._balanced = True
        return True

    def perform_reassignments(self, partitions: list[int]) -> bool:
        """Kafka's ``performReassignments``."""
        performed = False
        prev_owner = self.data.prev_owner
        has_prev = bool((prev_owner >= 0).any())
        prev = prev_owner.tolist() if has_prev else []
        topic_of = self.topic_of
        active = self.active
        while True:
            modified = False
            for partition in partitions:
                if self.is_balanced():
                    break
                member = self.owner[partition]
                count = self.counts[member]
                topic = topic_of[partition]
                if has_prev:
                    previous = prev[partition]
                    if previous >= 0 and active[previous] and count > self.counts[previous] + 1:
                        self.reassign(partition, previous)
                        performed = modified = True
                        continue
                if self._min_count(topic) < count - 1:
                    self.reassign(partition, self._first_member(topic))
                    performed = modified = True
            if not modified:
                return performed

    def reassign(self, partition: int, new: int) -> None:
        """Kafka's ``reassignPartition`` + ``processPartitionMovement``."""
        topic = self.topic_of[partition]
        actual = self.movements.partition_to_move(partition, topic, self.owner[partition], new)
        old = self.owner[actual]
        if topic not in self.data.topics[new]:
            self._needs_repair = True
        self.movements.move(actual, topic, old, new)
        self.owner[actual] = new
        self.stamp[actual] = self.next_stamp
        self.next_stamp += 1
        self.counts[old] -= 1
        self.counts[new] += 1
        self._push(old)
        self._push(new)
        if self._member_topics is not None:
            old_topics = self._member_topics[old]
            old_topics[topic] -= 1
            if not old_topics[topic]:
                del old_topics[topic]
            new_topics = self._member_topics[new]
            new_topics[topic] = new_topics.get(topic, 0) + 1
        self._dirty = True

    def result(self) -> list[IntArray]:
        owner = np.array(self.owner, dtype=np.int64)
        stamp = np.array(self.stamp, dtype=np.int64)
        assigned = np.flatnonzero(owner >= 0)
        span = int(stamp.max()) + 1 if len(stamp) else 1
        order = assigned[np.argsort(owner[assigned] * span + stamp[assigned], kind="stable")]
        counts = np.bincount(owner[assigned], minlength=self.n_members)
        return np.split(order, np.cumsum(counts)[:-1])


def general_assign(data: GeneralInput) -> tuple[list[IntArray], PartitionMovements]:
    """Run the general builder; returns each member's partitions in Kafka's list order."""
    builder = _Builder(data)
    result = builder.build()
    return result, builder.movements
