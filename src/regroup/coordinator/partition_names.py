"""Assignments by topic id, named: the partitions events and classic Assignment bytes carry.

KIP-848 groups keep assignments by topic id (``Assignment``); the events
(``member_assignment_changed``, ``target_assignment_computed``) and the
ConsumerProtocol Assignment bytes of classic members name topics. A topic id
is named by the group's subscription metadata first, then by the metadata
image; an id neither knows keeps its string form.

Converting costs O(partitions), and a heartbeat that moves a member's epoch
converts its whole assignment, so ``PartitionNames`` (one per coordinator)
remembers:

* one shared ``TopicPartition`` per partition, by topic name;
* for the current subscription metadata and image, the names of their topic
  ids, and the converted form of one-topic assignments (most of them);
* per group, each member's converted target, kept while the member's target
  map is the same object (a group stores a new map only when a target record
  changes it), and the member ids sorted between epochs (a rolling bounce swaps
  one member per epoch; sorting every id each time would cost more than the
  rest).

The subscription metadata and the image are replaced, never changed in place,
so identity tells whether a memo still holds.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Mapping
from itertools import chain

from regroup.assignors.consumer.api import TopicMetadata
from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.group_member import Assignment
from regroup.model.metadata import MetadataImage
from regroup.model.topic_partition import TopicPartition, topic_partition
from regroup.model.uuid import Uuid

__all__ = ["NamedTargets", "PartitionNames"]

#: Entries of ``_TopicNames.single`` kept at most (emptied when full).
_SINGLE_TOPIC_MEMO_LIMIT = 1 << 16


class _TopicNames:
    """Topic id -> name for one subscription metadata and one image, and one-topic conversions."""

    __slots__ = ("image", "metadata", "names", "single")

    def __init__(self, metadata: Mapping[str, TopicMetadata], image: MetadataImage) -> None:
        self.metadata = metadata
        self.image = image
        self.names: dict[Uuid, str] = {t.topic_id: name for name, t in metadata.items()}
        self.single: dict[tuple[Uuid, frozenset[int]], tuple[TopicPartition, ...]] = {}


#: A target nobody has converted yet (never the same object as a real target).
_UNCONVERTED: tuple[Assignment, tuple[TopicPartition, ...]] = ({}, ())


class NamedTargets:
    """One group's targets by topic name, kept between epochs.

    Valid for one subscription metadata and one image (names come from them).
    ``ids`` is the target's member ids, sorted; ``named`` maps each to the target
    map it was converted from and the result.
    """

    __slots__ = ("ids", "image", "metadata", "named")

    def __init__(self, metadata: object, image: object) -> None:
        self.metadata = metadata
        self.image = image
        self.ids: list[str] = []
        self.named: dict[str, tuple[Assignment, tuple[TopicPartition, ...]]] = {}

    def sync_ids(self, targets: Mapping[str, Assignment]) -> None:
        """Make ``ids`` the sorted keys of ``targets``, moving only what changed."""
        named = self.named
        if len(named) == len(targets) and named.keys() == targets.keys():
            return
        gone = named.keys() - targets.keys()
        for member_id in gone:
            del named[member_id]
        added = [m for m in targets if m not in named]
        if len(gone) + len(added) > 8:
            self.ids = sorted(targets)
        else:
            ids = self.ids
            for member_id in gone:
                del ids[bisect_left(ids, member_id)]
            for member_id in added:
                insort(ids, member_id)
        for member_id in added:
            named[member_id] = _UNCONVERTED


class PartitionNames:
    """Assignments by topic id to sorted ``TopicPartition`` tuples, memoised (module doc)."""

    __slots__ = ("_names", "_targets", "_topic_partitions")

    def __init__(self) -> None:
        #: One ``TopicPartition`` per partition number, by topic name.
        self._topic_partitions: dict[str, list[TopicPartition]] = {}
        #: Topic names of the last subscription metadata and image seen.
        self._names = _TopicNames({}, MetadataImage())
        #: Per group, each member's target converted to names.
        self._targets: dict[str, NamedTargets] = {}

    def forget(self, group_id: str) -> None:
        """Drop what is kept for a group that is gone."""
        self._targets.pop(group_id, None)

    def targets_by_name(
        self, group: ConsumerGroup, image: MetadataImage
    ) -> dict[str, tuple[TopicPartition, ...]]:
        """Every member's target by topic name, by member id in order."""
        targets = group.target_assignment
        metadata = group.subscription_metadata
        cache = self._targets.get(group.group_id)
        if cache is None or cache.metadata is not metadata or cache.image is not image:
            cache = NamedTargets(metadata, image)
            self._targets[group.group_id] = cache
        cache.sync_ids(targets)
        named = cache.named
        assignment: dict[str, tuple[TopicPartition, ...]] = {}
        for member_id in cache.ids:
            target = targets[member_id]
            hit = named.get(member_id)
            if hit is None or hit[0] is not target:
                hit = named[member_id] = (target, self.partitions_by_name(group, image, target))
            assignment[member_id] = hit[1]
        return assignment

    def partitions_by_name(
        self, group: ConsumerGroup, image: MetadataImage, assignment: Assignment
    ) -> tuple[TopicPartition, ...]:
        """Topic ids to names (subscription metadata first, then the image); unknown ids kept.

        Sorted by name then partition (``TopicPartition`` order), built topic by
        topic so that only integers are sorted, from one shared (immutable)
        ``TopicPartition`` per partition.
        """
        if not assignment:
            return ()
        metadata = group.subscription_metadata
        known = self._names
        if known.metadata is not metadata or known.image is not image:
            known = self._names = _TopicNames(metadata, image)
        if len(assignment) == 1:
            ((topic_id, partitions),) = assignment.items()
            if type(partitions) is frozenset:
                hit = known.single.get((topic_id, partitions))
                if hit is None:
                    hit = self._by_name(known, assignment)
                    if len(known.single) >= _SINGLE_TOPIC_MEMO_LIMIT:
                        known.single.clear()
                    known.single[(topic_id, partitions)] = hit
                return hit
        return self._by_name(known, assignment)

    def _by_name(self, known: _TopicNames, assignment: Assignment) -> tuple[TopicPartition, ...]:
        names = known.names
        image = known.image
        by_name: dict[str, list[Iterable[int]]] = {}
        for topic_id, partitions in assignment.items():
            name = names.get(topic_id)
            if name is None:
                topic = image.topic_by_id(topic_id)
                name = topic.name if topic is not None else str(topic_id)
            by_name.setdefault(name, []).append(partitions)
        result: list[TopicPartition] = []
        for name in sorted(by_name):
            ordered = sorted(chain.from_iterable(by_name[name]))
            shared = self._topic_partitions.get(name)
            if shared is None:
                shared = self._topic_partitions[name] = []
            if ordered and ordered[-1] >= len(shared):
                shared.extend(topic_partition(name, p) for p in range(len(shared), ordered[-1] + 1))
            if ordered and ordered[0] < 0:  # not a partition number: no sharing
                result.extend(topic_partition(name, p) for p in ordered)
            else:
                result.extend(map(shared.__getitem__, ordered))
        return tuple(result)
