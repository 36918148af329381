"""The rack-aware passes of Kafka's ``range`` assignor (KIP-881).

Kafka: ``RangeAssignor.assignPartitions`` with ``TopicAssignmentState``,
``assignWithRackMatching``, ``assignCoPartitionedWithRackMatching`` and
``assignRanges``. What it does, in order:

1. **Gate, per topic.** A topic "needs" rack-aware assignment when the gate of
   ``AbstractPartitionAssignor.useRackAwareAssignment`` (``rack.py``) is on
   for the racks of *that topic's* subscribers and the replica racks of its
   partitions. If no topic needs it, nothing here runs and ``range`` is the
   plain contiguous-block assignment.
2. **Co-partitioned topics.** Topics are grouped by their subscriber list and
   then by partition count. (Kafka groups by the size of a per-topic rack map
   that it fills only when some subscriber has a rack, so topics whose
   subscribers have no rack all fall in a group of "0 partitions" where
   nothing happens.) In every group of two or more topics, for p = 0..n-1,
   partition p of *all* of them goes to the first subscriber that still has
   quota and whose rack hosts a replica of partition p of every one of those
   topics (a subscriber without a rack matches everything). This runs for
   such groups even when none of their topics needs rack awareness itself.
3. **Single topics that need it.** Each subscriber in turn takes, up to its
   quota, the still-unassigned partitions (ascending) that have a replica on
   its rack.
4. **Normal fill** (``RangeAssignor`` does this for every topic; here only
   for topics touched above, since on an untouched topic it is exactly the
   contiguous blocks): each subscriber in turn takes up to its quota of the
   lowest still-unassigned partitions.

Quota (``TopicAssignmentState.maxAssignable``): with ``n`` partitions and
``c`` subscribers, ``base = n // c`` plus one while "extra" slots remain
(initially ``n % c``), minus what the subscriber already has; a subscriber
uses up an extra slot each time an assignment leaves it above ``base``.
Rack alignment never costs balance: per topic, ``n % c`` subscribers get
``base + 1`` and the others ``base``, as in plain ``range``, though the rack
passes may hand the extra slots to other subscribers than the first ones.

Kafka finds each match by scanning; here a subscriber's quota never grows
again once it is spent, and every scan takes the *lowest* unassigned matches,
so per-rack queues with forward-only cursors give the same choices in time
linear in partitions and replicas (rather than partitions x consumers).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

from regroup.assignors.classic._range_layout import TopicLayout
from regroup.assignors.classic.api import ClusterMetadata
from regroup.assignors.classic.rack import consumer_racks, use_rack_aware_assignment
from regroup.assignors.errors import PartitionAssignorError

__all__ = ["rack_aware_owners"]

_UNASSIGNED = -1
_NO_RACKS: frozenset[str] = frozenset()


class _Quota:
    """One topic's per-subscriber quota (Kafka: ``TopicAssignmentState``).

    Subscribers are identified by their position in the topic's subscriber
    list. In a co-partitioned group every topic's state evolves identically
    (same subscribers, same partition count, and every step assigns the same
    partition of each topic to the same subscriber), so one ``_Quota`` serves
    the whole group.
    """

    __slots__ = ("assigned", "base", "extra")

    def __init__(self, partitions: int, subscribers: int) -> None:
        self.base = partitions // subscribers
        self.extra = partitions % subscribers
        self.assigned = [0] * subscribers

    def max_assignable(self, position: int) -> int:
        limit = self.base + (1 if self.extra > 0 else 0) - self.assigned[position]
        return limit if limit > 0 else 0

    def on_assigned(self, position: int, count: int) -> None:
        self.assigned[position] += count
        if self.assigned[position] > self.base:
            self.extra -= 1


def _assign_ranges(
    owner: list[int],
    quota: _Quota,
    racks: Sequence[str | None],
    partitions_on_rack: dict[str, list[int]] | None,
) -> None:
    """Kafka's ``assignRanges``: each subscriber in turn takes up to its quota.

    A subscriber takes the lowest still-unassigned partitions, up to its quota
    at its turn. With ``partitions_on_rack`` given, a subscriber with a rack
    takes only partitions with a replica on its rack (Kafka's ``racksMatch``);
    without it, any partition (the normal fill).

    Each list of candidates (all partitions, or those on one rack) is walked
    with a forward-only cursor: every entry before it is already assigned,
    since a walk only ever takes the lowest unassigned entries it sees and
    partitions never become unassigned again.
    """
    remaining = owner.count(_UNASSIGNED)
    all_partitions: Sequence[int] = range(len(owner))
    no_partitions: Sequence[int] = ()
    cursors: dict[str | None, int] = {}
    # The quota arithmetic of _Quota, inlined: this loop runs once per
    # subscriber and topic.
    base = quota.base
    extra = quota.extra
    assigned = quota.assigned
    for position, rack in enumerate(racks):
        if remaining == 0:
            break
        limit = base + (1 if extra > 0 else 0) - assigned[position]
        if limit <= 0:
            continue
        key = None if partitions_on_rack is None else rack
        if key is None or partitions_on_rack is None:
            candidates = all_partitions
        else:
            candidates = partitions_on_rack.get(key, no_partitions)
        index = cursors.get(key, 0)
        end = len(candidates)
        taken = 0
        while taken < limit and index < end:
            partition = candidates[index]
            index += 1
            if owner[partition] == _UNASSIGNED:
                owner[partition] = position
                taken += 1
        cursors[key] = index
        if taken:
            assigned[position] += taken
            if assigned[position] > base:
                extra -= 1
            remaining -= taken
    quota.extra = extra


def _assign_co_partitioned(
    owner: list[int],
    quota: _Quota,
    racks: Sequence[str | None],
    common_racks: Sequence[frozenset[str]],
) -> None:
    """Kafka's ``assignCoPartitionedWithRackMatching`` for one group of topics.

    ``common_racks[p]``: the racks holding a replica of partition p of every
    topic of the group. Partition p goes to the first subscriber (in order)
    with quota left whose rack is among them, or that has no rack.
    """
    rackless: list[int] = []
    by_rack: dict[str, list[int]] = {}
    for position, rack in enumerate(racks):
        if rack is None:
            rackless.append(position)
        else:
            by_rack.setdefault(rack, []).append(position)
    # Forward-only heads of each queue: a spent quota never comes back.
    heads: dict[str | None, int] = dict.fromkeys([None, *by_rack], 0)
    queues: dict[str | None, list[int]] = {None: rackless}
    queues.update(by_rack)

    def head(key: str | None) -> int | None:
        queue = queues[key]
        index = heads[key]
        while index < len(queue) and quota.max_assignable(queue[index]) <= 0:
            index += 1
        heads[key] = index
        return queue[index] if index < len(queue) else None

    for partition, partition_racks in enumerate(common_racks):
        chosen = head(None)
        for rack in partition_racks:
            if rack in by_rack:
                candidate = head(rack)
                if candidate is not None and (chosen is None or candidate < chosen):
                    chosen = candidate
        if chosen is not None:
            owner[partition] = chosen
            quota.on_assigned(chosen, 1)


def _needs_rack_awareness(
    subscriber_racks: frozenset[str],
    racks_per_partition: Sequence[frozenset[str]],
    prefer_rack_aware_logic: bool,
) -> bool:
    """The KIP-881 gate, with Kafka's test-only ``preferRackAwareLogic`` switch.

    With the switch on, the last rule (some partition's racks differ from the
    union) is skipped, as in ``AbstractPartitionAssignor.useRackAwareAssignment``.
    """
    if not prefer_rack_aware_logic:
        return use_rack_aware_assignment(subscriber_racks, racks_per_partition)
    if not subscriber_racks:
        return False
    all_racks: set[str] = set()
    for racks in racks_per_partition:
        all_racks.update(racks)
    return not subscriber_racks.isdisjoint(all_racks)


def rack_aware_owners(
    layout: TopicLayout,
    member_racks: Sequence[str | None],
    metadata: ClusterMetadata,
    prefer_rack_aware_logic: bool = False,
) -> dict[int, list[int]]:
    """Owners of the topics the rack-aware passes touched.

    Returns, for each touched topic (by index in ``layout.topics``), the
    member rank owning each of its partitions; topics not returned get plain
    contiguous ranges. Empty when no topic needs rack-aware assignment.
    ``member_racks``: per member rank, its non-empty ``client.rack`` or None.
    """
    group_racks = [
        consumer_racks(member_racks[rank] for rank in group) for group in layout.subscriber_groups
    ]
    # Only topics whose subscribers have racks can be touched (see module doc).
    candidates: dict[tuple[int, int], list[int]] = {}
    topic_racks: dict[int, list[frozenset[str]]] = {}
    needs: set[int] = set()
    for topic_index, topic in enumerate(layout.topics):
        group_index = layout.topic_group[topic_index]
        subscriber_racks = group_racks[group_index]
        if not subscriber_racks:
            continue
        count = layout.partition_counts[topic_index]
        known = metadata.partition_racks.get(topic, ())
        racks = list(known[:count])
        if len(racks) < count:
            racks.extend(repeat(_NO_RACKS, count - len(racks)))
        topic_racks[topic_index] = racks
        candidates.setdefault((group_index, count), []).append(topic_index)
        if _needs_rack_awareness(subscriber_racks, racks, prefer_rack_aware_logic):
            needs.add(topic_index)
    if not needs:
        return {}

    touched: dict[int, list[int]] = {}
    for (group_index, count), topic_indexes in candidates.items():
        if len(topic_indexes) == 1 and topic_indexes[0] not in needs:
            continue
        subscribers = layout.subscriber_groups[group_index]
        racks_by_position = [member_racks[rank] for rank in subscribers]
        quota = _Quota(count, len(subscribers))
        positions = [_UNASSIGNED] * count
        if len(topic_indexes) > 1:
            common = [
                frozenset.intersection(*(topic_racks[t][partition] for t in topic_indexes))
                for partition in range(count)
            ]
            _assign_co_partitioned(positions, quota, racks_by_position, common)
        else:
            partitions_on_rack: dict[str, list[int]] = {}
            for partition, replica_racks in enumerate(topic_racks[topic_indexes[0]]):
                for rack in replica_racks:
                    partitions_on_rack.setdefault(rack, []).append(partition)
            _assign_ranges(positions, quota, racks_by_position, partitions_on_rack)
        _assign_ranges(positions, quota, racks_by_position, None)
        if _UNASSIGNED in positions:  # cannot happen: the quotas add up to the count
            raise PartitionAssignorError(
                f"range left partitions of {layout.topics[topic_indexes[0]]!r} unassigned"
            )
        owners = [subscribers[position] for position in positions]
        for topic_index in topic_indexes:
            touched[topic_index] = owners
    return touched
