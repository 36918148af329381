"""Small builders shared by the KIP-848 server-side assignor tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from regroup.assignors.consumer.api import (
    GroupAssignment,
    GroupSpec,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
    SubscriptionType,
    TopicMetadata,
)
from regroup.model import Uuid

# The topic ids of Kafka's UniformHomogeneous/HeterogeneousAssignmentBuilderTest.
T1 = Uuid.from_string("T1-A4s3VTwiI5CTbEp6POw")
T2 = Uuid.from_string("T2-B4s3VTwiI5YHbPp6YUe")
T3 = Uuid.from_string("T3-CU8fVTLCz5YMkLoDQsa")
T4 = Uuid.from_string("T4-Tw9fVTLCz5HbPp6YQsa")

Plain = dict[str, dict[Uuid, set[int]]]


def member(
    topics: Iterable[Uuid],
    *owned: tuple[Uuid, Iterable[int]],
    instance_id: str | None = None,
) -> MemberSubscriptionSpec:
    """A member subscribed to ``topics`` whose current target is ``owned`` (in that order)."""
    return MemberSubscriptionSpec(
        subscribed_topic_ids=frozenset(topics),
        instance_id=instance_id,
        assigned_partitions={topic: frozenset(parts) for topic, parts in owned},
    )


def group(
    members: Mapping[str, MemberSubscriptionSpec], kind: SubscriptionType | None = None
) -> GroupSpec:
    if kind is None:
        return GroupSpec.of(members)
    return GroupSpec(members=members, subscription_type=kind)


def topics(partitions: Mapping[Uuid, int]) -> SubscribedTopicDescriber:
    return SubscribedTopicDescriber(
        [TopicMetadata(topic, f"topic-{topic}", count) for topic, count in partitions.items()]
    )


def plain(assignment: GroupAssignment) -> Plain:
    """The assignment as plain dicts of sets, for equality assertions."""
    return {
        member_id: {topic: set(parts) for topic, parts in target.partitions.items()}
        for member_id, target in assignment.members.items()
    }
