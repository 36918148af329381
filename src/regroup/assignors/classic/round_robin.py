"""Kafka's ``roundrobin`` assignor (``org.apache.kafka.clients.consumer.RoundRobinAssignor``).

Kafka lays out every partition of every subscribed topic, topics sorted by
name and partitions ascending, and walks them with **one** circular iterator
over the members in ``MemberInfo`` order (static members first by
``group.instance.id``, then dynamic members by member id). For each partition
the iterator first skips members not subscribed to its topic, then hands the
partition to the member it stands on and moves one step further. The iterator
is never reset between topics, so where one topic ends decides who gets the
first partition of the next.

With identical subscriptions this deals partitions out like cards: member
counts differ by at most one. With different subscriptions it can be badly
unbalanced; Kafka's javadoc example has three consumers C0 [t0], C1 [t0, t1],
C2 [t0, t1, t2] and topics of 1, 2 and 3 partitions, giving C0 [t0-0],
C1 [t1-0] and C2 [t1-1, t2-0, t2-1, t2-2].

Rack awareness: KIP-881 made ``range`` and the two sticky assignors
rack-aware; ``RoundRobinAssignor`` was left as it was. It still overrides only
the rack-less ``assign(partitionsPerTopic, subscriptions)`` of
``AbstractPartitionAssignor``, so consumer racks (``client.rack``) and replica
racks are ignored entirely, and so they are here.

How it is computed: for a topic whose subscribers (in member order) are
``s[0..k-1]``, the iterator starts on the first subscriber at or after its
current position, ``s[j]``, and partition ``i`` goes to ``s[(j + i) % k]``;
afterwards it stands just past ``s[(j + n - 1) % k]``. That is a few
operations per topic in Python, and one vectorised expression over all
partitions, instead of a Python step per partition. Kafka throws when asked
to assign with no members at all (its circular iterator rejects an empty
list); this returns an empty assignment instead.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from regroup.assignors.classic._range_layout import (
    build_layout,
    concatenated_groups,
    member_partition_lists,
)
from regroup.assignors.classic.api import (
    Assignment,
    ClusterMetadata,
    ConsumerPartitionAssignor,
    GroupAssignment,
    GroupSubscription,
)

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(ConsumerPartitionAssignor):
    """Kafka's ``RoundRobinAssignor``: ``name() == "roundrobin"``, EAGER only, no user data."""

    name = "roundrobin"

    def assign(
        self, metadata: ClusterMetadata, group_subscription: GroupSubscription
    ) -> GroupAssignment:
        """Kafka: ``RoundRobinAssignor.assign`` behind ``AbstractPartitionAssignor.assign``."""
        subscriptions = group_subscription.subscriptions
        layout = build_layout(metadata, subscriptions)

        # Where the circular iterator starts each topic (index into its subscribers).
        first_subscriber: list[int] = []
        position = 0  # rank of the member the iterator stands on
        for count, group_index in zip(layout.partition_counts, layout.topic_group, strict=True):
            subscribers = layout.subscriber_groups[group_index]
            start = bisect_left(subscribers, position)
            if start == len(subscribers):
                start = 0
            first_subscriber.append(start)
            position = subscribers[(start + count - 1) % len(subscribers)] + 1

        flat_members, group_offsets = concatenated_groups(layout)
        topic_group = np.asarray(layout.topic_group, dtype=np.int64)
        sizes = np.asarray([len(group) for group in layout.subscriber_groups], dtype=np.int64)

        topic_index = layout.partition_topic_index()
        partition_number = layout.partition_numbers(topic_index)
        if topic_index.size:
            topic_offsets = group_offsets[topic_group][topic_index]
            topic_sizes = sizes[topic_group][topic_index]
            topic_first = np.asarray(first_subscriber, dtype=np.int64)[topic_index]
            owner = flat_members[topic_offsets + (topic_first + partition_number) % topic_sizes]
        else:
            owner = np.zeros(0, dtype=np.int64)

        lists = member_partition_lists(layout, topic_index, partition_number, owner)
        rank = {member_id: index for index, member_id in enumerate(layout.members)}
        return GroupAssignment(
            {member_id: Assignment(lists[rank[member_id]]) for member_id in subscriptions}
        )
