"""Kafka's ``range`` assignor (``org.apache.kafka.clients.consumer.RangeAssignor``).

Per topic, independently: the topic's subscribers in ``MemberInfo`` order
(static members first by ``group.instance.id``, then dynamic members by member
id), ``base = n // c`` partitions each, and the first ``n % c`` subscribers
take one more; every subscriber gets one contiguous block, in order. Kafka's
javadoc example: consumers C0 and C1 subscribed to t0 and t1 of 3 partitions
each get C0 [t0-0, t0-1, t1-0, t1-1] and C1 [t0-2, t1-2]. The extra partition
of *every* topic goes to the same early members, so many topics with few
partitions each can leave members very unequal (a known property of
``range``, kept here).

Static membership (KIP-345) makes this stable across restarts: a restarted
static member gets a new member id but keeps its instance id, hence its place
in the order and its ranges, as long as the members and subscriptions stay
the same (javadoc: without instance ids, members C0/C1 rejoining as C3/C2
swap their ranges).

Rack-aware assignment (KIP-881) runs only when at least one topic passes the
rack gate; it is in ``_range_racks`` and changes which partitions a member gets
(and may move a topic's extra partitions to other members), never the
per-topic balance. When it ran, Kafka sorts each member's list by
(topic, partition); otherwise Kafka's list order follows its topic hash map.
Here every member's partitions always come sorted by (topic, partition).

Plain ranges are computed for all partitions at once (one vectorised
expression over the flat partition list, see ``_contiguous_owners``); only
topics touched by the rack passes are walked in Python.

``prefer_rack_aware_logic`` mirrors Kafka's package-private, test-only
``AbstractPartitionAssignor.preferRackAwareLogic``: it skips the last rule of
the gate (partitions all on the same racks), so Kafka's rack tests can be
replayed. Leave it off otherwise.
"""

from __future__ import annotations

import numpy as np

from regroup.assignors.classic._range_layout import (
    Int64Array,
    TopicLayout,
    build_layout,
    concatenated_groups,
    member_partition_lists,
)
from regroup.assignors.classic._range_racks import rack_aware_owners
from regroup.assignors.classic.api import (
    Assignment,
    ClusterMetadata,
    ConsumerPartitionAssignor,
    GroupAssignment,
    GroupSubscription,
)

__all__ = ["RangeAssignor"]


def _contiguous_owners(
    layout: TopicLayout, topic_index: Int64Array, partition_number: Int64Array
) -> Int64Array:
    """Plain ``range`` for every topic at once: the member rank owning each partition.

    Within a topic with ``n`` partitions and ``c`` subscribers, the first
    ``extra = n % c`` subscribers own blocks of ``base + 1``, the others blocks
    of ``base``; partition p belongs to subscriber ``p // (base + 1)`` below
    ``extra * (base + 1)``, else to ``extra + (p - extra * (base + 1)) // base``.
    """
    flat_members, group_offsets = concatenated_groups(layout)
    topic_group = np.asarray(layout.topic_group, dtype=np.int64)
    sizes = np.asarray([len(group) for group in layout.subscriber_groups], dtype=np.int64)
    counts = np.asarray(layout.partition_counts, dtype=np.int64)
    subscribers = sizes[topic_group]
    base = (counts // subscribers)[topic_index]
    extra = (counts % subscribers)[topic_index]
    long_blocks_end = extra * (base + 1)
    in_long = partition_number < long_blocks_end
    position = np.where(
        in_long,
        partition_number // (base + 1),
        extra + (partition_number - long_blocks_end) // np.maximum(base, 1),
    )
    owner: Int64Array = flat_members[group_offsets[topic_group][topic_index] + position]
    return owner


class RangeAssignor(ConsumerPartitionAssignor):
    """Kafka's ``RangeAssignor``: ``name() == "range"``, EAGER only, no user data."""

    name = "range"

    def __init__(self, *, prefer_rack_aware_logic: bool = False) -> None:
        self.prefer_rack_aware_logic = prefer_rack_aware_logic

    def assign(
        self, metadata: ClusterMetadata, group_subscription: GroupSubscription
    ) -> GroupAssignment:
        """Kafka: ``RangeAssignor.assignPartitions`` behind ``AbstractPartitionAssignor.assign``."""
        subscriptions = group_subscription.subscriptions
        layout = build_layout(metadata, subscriptions)
        topic_index = layout.partition_topic_index()
        partition_number = layout.partition_numbers(topic_index)
        owner = _contiguous_owners(layout, topic_index, partition_number)

        member_racks = [subscriptions[member_id].rack_id or None for member_id in layout.members]
        if any(member_racks):
            touched = rack_aware_owners(
                layout, member_racks, metadata, self.prefer_rack_aware_logic
            )
            for index, owners in touched.items():
                start = layout.partition_starts[index]
                owner[start : start + len(owners)] = owners

        lists = member_partition_lists(layout, topic_index, partition_number, owner)
        rank = {member_id: index for index, member_id in enumerate(layout.members)}
        return GroupAssignment(
            {member_id: Assignment(lists[rank[member_id]]) for member_id in subscriptions}
        )
