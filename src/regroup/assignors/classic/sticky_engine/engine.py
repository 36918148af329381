"""The sticky assignment, end to end (Kafka: ``AbstractStickyAssignor.assignPartitions``).

Order of work, as in Kafka:

1. Topics: those some member subscribes to that have metadata and partitions
   (``AbstractPartitionAssignor.assign``).
2. Members are walked in the iteration order of Kafka's ``HashMap<String,
   Subscription>`` (the leader fills it in JoinGroup member order), computed
   with ``java_hashmap_order``. That order decides generation conflicts, the
   constrained retain pass (who keeps ``maxQuota``) and ties in
   ``prevAssignment``. The same order holds for ``consumerToOwnedPartitions``,
   which Kafka fills while iterating the subscriptions.
3. Previous ownership validated by generation (``member_data``).
4. All subscriptions equal -> constrained path, else the general path.
5. ``cooperative-sticky`` then withholds every partition its current owner must
   revoke first (``cooperative``).

Deviations, all on inputs where Kafka misbehaves: ``maxGeneration`` is
computed per call (Kafka keeps it in the assignor instance across calls, which
only matters if generations go backwards); a member with an empty
subscription makes the subscriptions unequal (Kafka's check treats leading
empty subscriptions as equal to anything and would then give such a member
partitions it never subscribed to); owned partitions with a partition number
the topic does not have are ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from regroup.assignors.classic.api import ClusterMetadata, Subscription
from regroup.assignors.classic.sticky_engine.constrained import constrained_assign
from regroup.assignors.classic.sticky_engine.cooperative import (
    transfers_from_owned,
    withhold_transfers,
)
from regroup.assignors.classic.sticky_engine.general import GeneralInput, general_assign
from regroup.assignors.classic.sticky_engine.indexing import (
    IntArray,
    PartitionList,
    TopicIndex,
    java_string_key,
)
from regroup.assignors.classic.sticky_engine.member_data import MemberData, validate_ownership
from regroup.assignors.classic.sticky_engine.racks import RackInfo
from regroup.assignors.classic.sticky_engine.user_data import DEFAULT_GENERATION
from regroup.assignors.java_order import java_hashmap_order, java_string_hash
from regroup.model import TopicPartition

__all__ = ["StickyResult", "sticky_assign"]

#: ``String.hashCode`` of member ids, remembered: the same ids come back every rebalance and
#: the hash walks every UTF-16 unit in Python. Pure, so a remembered value is exact.
_member_id_hash = lru_cache(maxsize=16384)(java_string_hash)


@dataclass(frozen=True, slots=True)
class StickyResult:
    """The assignment plus what Kafka's tests inspect.

    ``partitions_transferring_ownership``: Kafka's map of the same name,
    computed by the constrained path only (``None`` after the general path).
    ``general_path``: which builder ran. ``sticky``: Kafka's ``isSticky()`` —
    no topic had partitions moving both ways between two members.
    """

    assignment: dict[str, PartitionList]
    partitions_transferring_ownership: dict[TopicPartition, str] | None
    general_path: bool = False
    sticky: bool = True
    topic_index: TopicIndex | None = field(default=None, repr=False)


def _subscribed_topics(
    metadata: ClusterMetadata, subscriptions: Mapping[str, Subscription]
) -> dict[str, int]:
    topics: dict[str, int] = {}
    seen: set[int] = set()
    for subscription in subscriptions.values():
        if id(subscription.topics) in seen:
            continue
        seen.add(id(subscription.topics))
        for topic in subscription.topics:
            if topic not in topics:
                topics[topic] = metadata.partition_count(topic)
    return {t: n for t, n in topics.items() if n > 0}


def _all_subscriptions_equal(
    order: Sequence[str], subscriptions: Mapping[str, Subscription]
) -> bool:
    """Kafka's test in ``allSubscriptionsEqual`` (sizes and ``containsAll``)."""
    reference: set[str] = set()
    reference_list: list[str] | None = None
    reference_obj: object = None
    any_empty = False
    all_empty = True
    equal = True
    for member in order:
        topics = subscriptions[member].topics
        if len(topics) == 0:
            any_empty = True
        else:
            all_empty = False
        if not reference:
            reference = set(topics)
            reference_list = list(topics)
            reference_obj = topics
        elif equal and topics is not reference_obj:
            as_list = list(topics)
            if as_list == reference_list:
                continue
            if not (len(as_list) == len(reference) and reference.issuperset(as_list)):
                equal = False
    return equal and (all_empty or not any_empty)


def _previous_owners(
    total: int,
    claims: Sequence[IntArray],
    generations: Sequence[int | None],
    max_generation: int,
) -> IntArray:
    """Kafka's ``prepopulateCurrentAssignments``: older-generation claimants by partition."""
    owner = np.full(total, -1, dtype=np.int64)
    best = np.full(total, np.iinfo(np.int64).min, dtype=np.int64)
    for member, (partitions, generation) in enumerate(zip(claims, generations, strict=True)):
        if len(partitions) == 0:
            continue
        if generation is not None and generation < max_generation:
            gen = generation
        elif generation is None and max_generation > DEFAULT_GENERATION:
            gen = DEFAULT_GENERATION
        else:
            continue
        better = (owner[partitions] < 0) | (gen > best[partitions])
        chosen = partitions[better]
        owner[chosen] = member
        best[chosen] = gen
    return owner


def sticky_assign(
    metadata: ClusterMetadata,
    subscriptions: Mapping[str, Subscription],
    member_data: Callable[[Subscription], MemberData],
    *,
    cooperative: bool,
    prefer_rack_aware_logic: bool = False,
    member_map_capacity: int = 16,
) -> StickyResult:
    """Assign as ``AbstractStickyAssignor`` (and ``CooperativeStickyAssignor`` when asked).

    ``member_map_capacity``: the initial capacity of the Java map the
    subscriptions came in (16 for the ``HashMap`` Kafka's leader builds).
    """
    if not subscriptions:
        return StickyResult({}, {})
    order = java_hashmap_order(subscriptions, _member_id_hash, member_map_capacity)
    index = TopicIndex(_subscribed_topics(metadata, subscriptions))
    subs = [subscriptions[m] for m in order]
    data = [member_data(s) for s in subs]
    ownership = validate_ownership(
        index, data, [s.generation_id if s.has_generation else DEFAULT_GENERATION for s in subs]
    )
    racks = RackInfo(index, metadata, [s.rack_id for s in subs], prefer_rack_aware_logic)
    by_id = sorted(range(len(order)), key=lambda i: java_string_key(order[i]))
    id_rank = [0] * len(order)
    for rank, member in enumerate(by_id):
        id_rank[member] = rank

    transferring: dict[TopicPartition, str] | None
    sticky = True
    general = not _all_subscriptions_equal(order, subscriptions)
    if not general:
        result = constrained_assign(
            index, order, id_rank, ownership.owned, ownership.multiple_owners, racks
        )
        lists = result.assignment
        transfer_partitions = result.transferring_partitions
        transfer_members = result.transferring_members
        transferring = dict(
            zip(
                index.partitions(transfer_partitions),
                [order[m] for m in transfer_members.tolist()],
                strict=True,
            )
        )
    else:
        position = index.position
        topics = [frozenset(position[t] for t in s.topics if t in position) for s in subs]
        previous = _previous_owners(
            index.total, ownership.claims, [d.generation for d in data], ownership.max_generation
        )
        lists, movements = general_assign(
            GeneralInput(index, id_rank, topics, ownership.owned, previous, racks)
        )
        sticky = not any(
            (b, a) in pairs for pairs in movements.topic_pairs().values() for a, b in pairs
        )
        transferring = None
        if cooperative:
            transfer_partitions = transfers_from_owned(index.total, ownership.claims, lists)
    if cooperative:
        lists = withhold_transfers(index.total, lists, transfer_partitions)
    assignment = {member: PartitionList(index, lists[i]) for i, member in enumerate(order)}
    return StickyResult(assignment, transferring, general, sticky, index)
