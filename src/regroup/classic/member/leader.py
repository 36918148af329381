"""The leader's step: run the selected assignor over every member's subscription.

KIP-429, "Consumer Coordinator Algorithm", step 2 (as leader), the way Kafka's
``ConsumerCoordinator.onLeaderElected`` does it:

* 2.a: decode each member's Subscription (the leader adds the member's
  ``group.instance.id`` from the JoinGroup member list); the owned partitions
  it claims are the *owned-partitions*;
* 2.b: call the assignor the group selected, over the cluster metadata, to get
  the *assigned-partitions*;
* 2.c-2.f: the split into maybe-revoking / ready-to-migrate /
  unknown-but-owned partitions and the rule "a partition whose owner changes
  is not handed to its new owner in this round" is the cooperative
  assignor's job (KIP-429, "CooperativeStickyAssignor and custom COOPERATIVE
  Assignors"); the leader *checks* it. Kafka's
  ``validateCooperativeAssignment``: under COOPERATIVE, the union of
  (assigned - owned) over members must not meet the union of
  (owned - assigned), else ``IllegalStateException("Assignor supporting the
  COOPERATIVE protocol violates its requirements")``. Kafka skips the check
  for ``cooperative-sticky`` itself, which considers the generation of each
  claim (a stale claim may be handed over at once).

The result is the SyncGroup assignment bytes per member.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from regroup.assignors.classic.api import (
    Assignment,
    ClusterMetadata,
    ConsumerPartitionAssignor,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
)
from regroup.classic.protocol import decode_subscription, encode_assignment
from regroup.model import TopicPartition
from regroup.model.metadata import MetadataImage
from regroup.model.requests.classic import JoinGroupResponseMember

__all__ = [
    "COOPERATIVE_STICKY",
    "CooperativeAssignmentViolation",
    "LeaderAssignment",
    "cluster_metadata",
    "run_leader_assignment",
    "validate_cooperative_assignment",
]

#: Kafka: ``COOPERATIVE_STICKY_ASSIGNOR_NAME``; the leader trusts it without validating.
COOPERATIVE_STICKY = "cooperative-sticky"


class CooperativeAssignmentViolation(RuntimeError):
    """Kafka's ``IllegalStateException`` from ``validateCooperativeAssignment``."""

    def __init__(self, partitions: Sequence[TopicPartition]) -> None:
        super().__init__("Assignor supporting the COOPERATIVE protocol violates its requirements")
        #: The partitions revoked from one member and assigned to another in the same round.
        self.partitions = tuple(sorted(partitions))


class LeaderAssignment:
    """What the leader computed: assignments by member, and the metadata it used."""

    __slots__ = ("assignments", "encoded", "subscribed_topics", "topic_partition_counts")

    def __init__(
        self,
        assignments: Mapping[str, Assignment],
        encoded: Mapping[str, bytes],
        subscribed_topics: frozenset[str],
        topic_partition_counts: Mapping[str, int],
    ) -> None:
        self.assignments = dict(assignments)
        self.encoded = dict(encoded)
        self.subscribed_topics = subscribed_topics
        #: Kafka's ``assignmentSnapshot``: partition counts of every topic the group
        #: subscribes to, as the leader saw them (a change makes the leader rejoin).
        self.topic_partition_counts = dict(topic_partition_counts)


def cluster_metadata(image: MetadataImage, topics: frozenset[str] | None = None) -> ClusterMetadata:
    """The assignor's view of ``image`` (all topics, or only ``topics``)."""
    counts: dict[str, int] = {}
    racks: dict[str, Sequence[frozenset[str]]] = {}
    for name, topic in image.topics_by_name.items():
        if topics is not None and name not in topics:
            continue
        counts[name] = topic.partitions
        if topic.partition_racks:
            racks[name] = topic.partition_racks
    return ClusterMetadata(counts, racks)


def partition_counts(image: MetadataImage, topics: frozenset[str]) -> dict[str, int]:
    """Partition count per topic (-1: the topic does not exist) -- the metadata snapshot."""
    out: dict[str, int] = {}
    for name in topics:
        topic = image.topic(name)
        out[name] = -1 if topic is None else topic.partitions
    return out


def validate_cooperative_assignment(
    owned: Mapping[str, Sequence[TopicPartition]], assignments: Mapping[str, Assignment]
) -> None:
    """Kafka's ``validateCooperativeAssignment`` (see the module docstring)."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member_id, assignment in assignments.items():
        mine = set(owned.get(member_id, ()))
        new = set(assignment.partitions)
        added |= new - mine
        revoked |= mine - new
    both = added & revoked
    if both:
        raise CooperativeAssignmentViolation(sorted(both))


def group_subscribed_topics(members: Sequence[JoinGroupResponseMember]) -> frozenset[str]:
    """Every topic the members' subscriptions name (what the leader watches for changes)."""
    topics: set[str] = set()
    for member in members:
        topics.update(decode_subscription(member.metadata).topics)
    return frozenset(topics)


def run_leader_assignment(
    assignor: ConsumerPartitionAssignor,
    protocol: RebalanceProtocol,
    members: Sequence[JoinGroupResponseMember],
    metadata: MetadataImage,
) -> LeaderAssignment:
    """KIP-429 step 2 for the leader; raises what the assignor or the check raises."""
    subscriptions: dict[str, Subscription] = {}
    owned: dict[str, Sequence[TopicPartition]] = {}
    topics: set[str] = set()
    for member in members:
        decoded = decode_subscription(member.metadata)
        # The bytes carry no instance id; a dynamic member's decoded subscription is complete.
        subscription = (
            decoded
            if member.group_instance_id is None
            else replace(decoded, group_instance_id=member.group_instance_id)
        )
        subscriptions[member.member_id] = subscription
        owned[member.member_id] = subscription.owned_partitions
        topics.update(subscription.topics)
    subscribed = frozenset(topics)
    result = assignor.assign(
        cluster_metadata(metadata, subscribed), GroupSubscription(subscriptions)
    )
    assignments = dict(result.assignments)
    if protocol is RebalanceProtocol.COOPERATIVE and assignor.name != COOPERATIVE_STICKY:
        validate_cooperative_assignment(owned, assignments)
    encoded = {member_id: encode_assignment(a) for member_id, a in assignments.items()}
    return LeaderAssignment(
        assignments, encoded, subscribed, partition_counts(metadata, subscribed)
    )
