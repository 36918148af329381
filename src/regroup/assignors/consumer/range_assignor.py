"""KIP-848's server-side ``range`` assignor: contiguous, co-partitioned ranges.

Kafka: ``org.apache.kafka.coordinator.group.assignor.RangeAssignor`` as
rewritten for 4.0 (KAFKA-16944). It is *not* sticky: the output depends only on
the members' ids, instance ids and subscriptions and on the partition counts,
never on the current target.

* Members are sorted static first, by ``group.instance.id``, then the dynamic
  ones by member id (Java ``String.compareTo``: UTF-16 code units), so a static
  member that rejoins under a new member id gets its old ranges back.
* For each topic with ``n`` partitions and ``k`` subscribers, the subscribers
  in that order take contiguous ranges of ``n // k`` partitions, the first
  ``n % k`` of them one more. Subscribers beyond the partition count get none of
  the topic, so co-partitioned topics (same subscribers, same partition count)
  line up: each member gets the same partition numbers of every one of them.
* HOMOGENEOUS groups use the first sorted member's topics for everybody, as
  Kafka does; HETEROGENEOUS groups count each topic's own subscribers.

Every member appears in the output, possibly with an empty assignment; an empty
group gives an empty output; a subscribed topic missing from the metadata raises
``PartitionAssignorError``. Racks are ignored (as in Kafka 4.0).

Cost: only the members that receive something are visited per topic, so the
work is bounded by the partition count, not members x topics; identical ranges
share one frozenset.
"""

from __future__ import annotations

from collections.abc import Mapping

from regroup.assignors.consumer.api import (
    ConsumerGroupPartitionAssignor,
    GroupAssignment,
    GroupSpec,
    MemberAssignment,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
    SubscriptionType,
)
from regroup.assignors.errors import PartitionAssignorError
from regroup.model import Uuid

__all__ = ["RangeAssignor", "sorted_member_ids"]


def _java_string_key(text: str) -> str | bytes:
    return text


def _utf16_key(text: str) -> str | bytes:
    return text.encode("utf-16-be")


def sorted_member_ids(members: Mapping[str, MemberSubscriptionSpec]) -> list[str]:
    """Kafka's ``RangeAssignor.sortMemberIds``: static members by instance id, then the rest.

    Java compares strings by UTF-16 code unit, which differs from Python's code
    point order only when characters beyond the Basic Multilingual Plane are
    involved; then the UTF-16 encodings are compared instead.
    """
    static: list[tuple[str, str]] = []
    dynamic: list[str] = []
    for member_id, spec in members.items():
        if spec.instance_id is not None:
            static.append((spec.instance_id, member_id))
        else:
            dynamic.append(member_id)
    texts = [instance for instance, _ in static] + dynamic
    wide = any(ord(max(text)) > 0xFFFF for text in texts if text)
    key = _utf16_key if wide else _java_string_key
    # Java's sort is stable; equal instance ids keep their member-map order.
    static.sort(key=lambda pair: key(pair[0]))
    dynamic.sort(key=key)
    return [member_id for _, member_id in static] + dynamic


class RangeAssignor(ConsumerGroupPartitionAssignor):
    """Kafka's server-side ``RangeAssignor`` (``group.consumer.assignors`` name ``range``)."""

    name = "range"

    def assign(
        self, group_spec: GroupSpec, subscribed_topic_describer: SubscribedTopicDescriber
    ) -> GroupAssignment:
        members = group_spec.members
        if not members:
            return GroupAssignment(members={})
        ordered = sorted_member_ids(members)
        targets: list[dict[Uuid, frozenset[int]]] = [{} for _ in ordered]
        if group_spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            everybody = [list(range(len(ordered)))]
            topics = members[ordered[0]].subscribed_topic_ids
            groups = {topic_id: everybody for topic_id in topics}
        else:
            groups = _subscriber_groups(ordered, members)
        ranges: dict[tuple[int, int], frozenset[int]] = {}
        for topic_id in sorted(groups):
            count = subscribed_topic_describer.number_of_partitions(topic_id)
            if count == -1:
                raise PartitionAssignorError("Member is subscribed to a non-existent topic")
            _assign_topic(topic_id, count, groups[topic_id], targets, ranges)
        return GroupAssignment(
            members={
                member_id: MemberAssignment(partitions)
                for member_id, partitions in zip(ordered, targets, strict=True)
            }
        )


def _subscriber_groups(
    ordered: list[str], members: Mapping[str, MemberSubscriptionSpec]
) -> dict[Uuid, list[list[int]]]:
    """Each topic's subscribers: ascending lists of ranks, one per distinct subscription."""
    by_subscription: dict[frozenset[Uuid], list[int]] = {}
    for rank, member_id in enumerate(ordered):
        by_subscription.setdefault(members[member_id].subscribed_topic_ids, []).append(rank)
    groups: dict[Uuid, list[list[int]]] = {}
    for topics, ranks in by_subscription.items():
        for topic_id in topics:
            groups.setdefault(topic_id, []).append(ranks)
    return groups


def _assign_topic(
    topic_id: Uuid,
    count: int,
    groups: list[list[int]],
    targets: list[dict[Uuid, frozenset[int]]],
    ranges: dict[tuple[int, int], frozenset[int]],
) -> None:
    """Kafka: ``RangeAssignor.addPartitionsToAssignment`` for every subscriber of one topic.

    ``groups`` hold the subscribers' ranks in the sorted member order, each
    list ascending. Only the first ``count`` subscribers can receive anything,
    so only they are merged.
    """
    subscriber_count = sum(len(ranks) for ranks in groups)
    quota, extra = divmod(count, subscriber_count)
    needed = subscriber_count if quota > 0 else extra
    if len(groups) == 1:
        receivers = groups[0][:needed]
    else:
        receivers = sorted(rank for ranks in groups for rank in ranks[:needed])[:needed]
    start = 0
    for position, rank in enumerate(receivers):
        end = start + quota + (1 if position < extra else 0)
        bounds = (start, end)
        partitions = ranges.get(bounds)
        if partitions is None:
            partitions = ranges[bounds] = frozenset(range(start, end))
        targets[rank][topic_id] = partitions
        start = end
