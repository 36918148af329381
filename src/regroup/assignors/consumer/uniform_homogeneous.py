"""The uniform assignor for a group whose members all subscribe to the same topics.

Kafka: ``UniformHomogeneousAssignmentBuilder`` (group coordinator, 4.0 branch,
including KAFKA-18688). Balance comes first, stickiness second:

1. ``T`` partitions over ``M`` members: every member's quota is ``T // M``,
   and ``T % M`` members may hold one extra partition.
2. The partitions nobody holds are listed topic by topic (in the topic set's
   Java iteration order), partition 0 upwards.
3. Members are visited in Kafka's member order. Each keeps what it holds of
   the subscribed topics up to its quota (extra slot included while extra slots
   remain); what exceeds the quota is appended to the unassigned list, and
   topics it no longer subscribes to are dropped. A member that still has room
   gives its tentative extra slot back -- unless it is one of the last members,
   which must take the remaining extra slots (KAFKA-18688: any member may be the
   one with the extra partition, so an already balanced assignment is left
   exactly as it is; Kafka 4.0.0 instead gave the extra slots to the first
   members in order and could move partitions of a balanced group).
4. Members with room take the unassigned partitions in list order.

Inputs Kafka's coordinator never produces are handled so: a held partition
number at or above the topic's partition count is treated as not held (Kafka
would keep it here and fail in the heterogeneous builder); a partition held by
two members is kept by both, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np

from regroup.assignors.consumer.api import (
    GroupAssignment,
    MemberAssignment,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
)
from regroup.assignors.consumer.java_iteration import partition_set_order, topic_set_order
from regroup.assignors.consumer.topic_index import TopicIndex
from regroup.assignors.errors import PartitionAssignorError
from regroup.model import Uuid

__all__ = ["assign_homogeneous"]

Partitions = Mapping[Uuid, frozenset[int]]


def assign_homogeneous(
    member_order: Sequence[str],
    members: Mapping[str, MemberSubscriptionSpec],
    describer: SubscribedTopicDescriber,
) -> GroupAssignment:
    """Kafka's homogeneous uniform assignment; ``member_order`` is Kafka's member order.

    Returns no members at all when the (first member's) subscription is empty.
    """
    index = TopicIndex(topic_set_order(members[member_order[0]].subscribed_topic_ids))
    if not index.topics:
        return GroupAssignment(members={})
    counts: list[int] = []
    for topic_id in index.topics:
        count = describer.number_of_partitions(topic_id)
        if count == -1:
            raise PartitionAssignorError(
                f"Members are subscribed to topic {topic_id} which doesn't exist in the "
                "topic metadata."
            )
        counts.append(count)
    builder = _Builder(member_order, members, index, counts)
    result = builder.build()
    if result is None:
        # Some member holds a partition number its topic does not have: drop those
        # and run again (never happens with a coordinator's own targets).
        cleaned = _without_unknown_partitions(members, index, counts)
        result = _Builder(member_order, cleaned, index, counts).build()
        assert result is not None
    return result


def _without_unknown_partitions(
    members: Mapping[str, MemberSubscriptionSpec], index: TopicIndex, counts: list[int]
) -> dict[str, MemberSubscriptionSpec]:
    cleaned: dict[str, MemberSubscriptionSpec] = {}
    for member_id, spec in members.items():
        assigned: dict[Uuid, frozenset[int]] = {}
        for topic_id, partitions in spec.assigned_partitions.items():
            topic = index.get(topic_id)
            if topic is None:
                assigned[topic_id] = partitions
                continue
            valid = frozenset(p for p in partitions if 0 <= p < counts[topic])
            if valid:
                assigned[topic_id] = valid
        cleaned[member_id] = MemberSubscriptionSpec(
            subscribed_topic_ids=spec.subscribed_topic_ids,
            rack_id=spec.rack_id,
            instance_id=spec.instance_id,
            assigned_partitions=assigned,
        )
    return cleaned


class _Builder:
    """One run of the homogeneous algorithm; partitions are numbered globally.

    Global number = the topic's offset (topics in set order) + partition, so
    ascending global numbers are exactly Kafka's unassigned-list order.
    """

    __slots__ = ("counts", "index", "member_order", "members", "offsets", "total")

    def __init__(
        self,
        member_order: Sequence[str],
        members: Mapping[str, MemberSubscriptionSpec],
        index: TopicIndex,
        counts: list[int],
    ) -> None:
        self.member_order = member_order
        self.members = members
        self.index = index
        self.counts = counts
        self.offsets = [0] * len(counts)
        total = 0
        for topic, count in enumerate(counts):
            self.offsets[topic] = total
            total += count
        self.total = total

    def build(self) -> GroupAssignment | None:
        """The assignment, or None when a held partition number is out of range."""
        member_count = len(self.member_order)
        minimum_quota, remaining_extra = divmod(self.total, member_count)
        # ``TopicIndex.get`` inlined, and the lists' ``append`` bound once: this loop
        # runs once per member for every target assignment of the group.
        by_identity = self.index.by_identity.get
        by_value = self.index.by_value.get
        offsets = self.offsets
        members = self.members

        target: dict[str, Partitions] = {}
        unfilled: list[tuple[str, int]] = []
        revoked: list[int] = []  # global numbers, appended after the initially free ones
        # Every held set of a subscribed topic, for the "held by somebody" flags.
        held_topics: list[int] = []
        held_sets: list[frozenset[int]] = []
        note_topic = held_topics.append
        note_set = held_sets.append

        for member_index, member_id in enumerate(self.member_order):
            old = members[member_id].assigned_partitions
            has_extra = remaining_extra > 0
            quota = minimum_quota + 1 if has_extra else minimum_quota
            new: dict[Uuid, frozenset[int]] | None = None
            for topic_id, partitions in old.items():
                topic = by_identity(id(topic_id))
                if topic is None:
                    topic = by_value(topic_id)
                    if topic is None:
                        if new is None:
                            new = dict(old)
                        del new[topic_id]
                        continue
                note_topic(topic)
                note_set(partitions)
                size = len(partitions)
                if size <= quota:
                    quota -= size
                    continue
                kept: list[int] = []
                base = offsets[topic]
                for partition in partition_set_order(partitions):
                    if quota > 0:
                        quota -= 1
                        kept.append(partition)
                    else:
                        revoked.append(base + partition)
                if new is None:
                    new = dict(old)
                if kept:
                    new[topic_id] = frozenset(kept)
                else:
                    del new[topic_id]
            if quota > 0:
                if has_extra and member_count - member_index > remaining_extra:
                    # Give the extra slot back for a later member to claim (KAFKA-18688).
                    quota -= 1
                    has_extra = False
                if quota > 0:
                    unfilled.append((member_id, quota))
            if has_extra:
                remaining_extra -= 1
            target[member_id] = old if new is None else new

        free = self._initially_free(held_topics, held_sets)
        if free is None:
            return None
        if revoked:
            free = np.concatenate([free, np.asarray(revoked, dtype=np.int64)])
        self._fill(unfilled, free, target)
        return GroupAssignment(
            members={member_id: MemberAssignment(parts) for member_id, parts in target.items()}
        )

    def _initially_free(
        self, held_topics: list[int], held_sets: list[frozenset[int]]
    ) -> np.ndarray | None:
        """Global numbers nobody held at the start, ascending; None if one is out of range.

        Kafka: ``GroupSpec.isPartitionAssigned`` over the inverted target assignment.
        """
        held = np.zeros(self.total, dtype=bool)
        if held_sets:
            lengths = np.fromiter(map(len, held_sets), dtype=np.int64, count=len(held_sets))
            partitions = np.fromiter(
                chain.from_iterable(held_sets), dtype=np.int64, count=int(lengths.sum())
            )
            topics = np.repeat(np.asarray(held_topics, dtype=np.int64), lengths)
            limits = np.asarray(self.counts, dtype=np.int64)[topics]
            if len(partitions) and (partitions.min() < 0 or (partitions >= limits).any()):
                return None
            held[np.asarray(self.offsets, dtype=np.int64)[topics] + partitions] = True
        free: np.ndarray = np.flatnonzero(~held)
        return free

    def _fill(
        self,
        unfilled: list[tuple[str, int]],
        unassigned: np.ndarray,
        target: dict[str, Partitions],
    ) -> None:
        """Hand the unassigned partitions, in order, to the members with room."""
        if len(unassigned) == 0:
            return
        starts = np.asarray(self.offsets, dtype=np.int64)
        topic_number = np.searchsorted(starts, unassigned, side="right") - 1
        partition = (unassigned - starts[topic_number]).tolist()
        # Split the list into runs of one topic; run_end[i] is where i's run stops.
        change = np.flatnonzero(np.diff(topic_number)) + 1
        bounds = np.concatenate([[0], change, [len(unassigned)]])
        run_end = np.repeat(bounds[1:], np.diff(bounds)).tolist()
        topic_at = topic_number.tolist()
        topics = self.index.topics
        available = len(partition)
        position = 0
        for member_id, quota in unfilled:
            if position >= available:
                break
            stop = min(position + quota, available)
            new = dict(target[member_id])
            while position < stop:
                end = min(run_end[position], stop)
                topic_id = topics[topic_at[position]]
                chunk = partition[position:end]
                current = new.get(topic_id)
                new[topic_id] = frozenset(chunk) if current is None else current.union(chunk)
                position = end
            target[member_id] = new
        if position < available:
            raise PartitionAssignorError("Partitions were left unassigned")
