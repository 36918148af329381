"""KIP-848's default server-side assignor, ``uniform``: balance first, stickiness second.

Kafka: ``org.apache.kafka.coordinator.group.assignor.UniformAssignor`` (4.0).
It picks one of two builders by the group's subscription type:

* HOMOGENEOUS (every member subscribes to the same topics) --
  ``uniform_homogeneous`` (Kafka: ``UniformHomogeneousAssignmentBuilder``);
* HETEROGENEOUS -- ``uniform_heterogeneous`` (Kafka:
  ``UniformHeterogeneousAssignmentBuilder``).

Output shape, as Kafka's: no members at all for an empty group or when no
member subscribes to anything; otherwise every member appears, possibly with an
empty assignment. A subscribed topic missing from the topic metadata raises
``PartitionAssignorError`` (Kafka: ``PartitionAssignorException``).

Copy-on-write, as in Kafka (KAFKA-16864): a member whose target does not
change gets back the very mapping object it came with, so the caller must treat
the mappings in ``assigned_partitions`` as immutable. The iteration order of a
member's mapping stands for the Java map's order where the homogeneous builder
trims an over-quota member (Kafka's own tests pin that order with a
``LinkedHashMap``); partitions within a topic are trimmed in Java ``HashSet``
order.

Member order: both builders visit members in the iteration order of the Java
``HashMap`` Kafka's ``TargetAssignmentBuilder`` builds (see ``java_iteration``),
not in the order of ``GroupSpec.members``; ties (who keeps the extra partition,
who receives a partition first) follow that order, so the output is Kafka's.

Racks: rack-aware assignment is off in Kafka 4.0 -- its
``SubscribedTopicDescriberImpl.racksForPartition`` always answers an empty set
(KAFKA-17578 removed the partition racks from the topic metadata) and neither
builder looks at racks; KAFKA-19909 brings rack awareness back in a later
release. Member and partition racks are therefore ignored here too.
"""

from __future__ import annotations

from regroup.assignors.consumer.api import (
    ConsumerGroupPartitionAssignor,
    GroupAssignment,
    GroupSpec,
    SubscribedTopicDescriber,
    SubscriptionType,
)
from regroup.assignors.consumer.java_iteration import member_iteration_order
from regroup.assignors.consumer.uniform_heterogeneous import assign_heterogeneous
from regroup.assignors.consumer.uniform_homogeneous import assign_homogeneous

__all__ = ["UniformAssignor"]


class UniformAssignor(ConsumerGroupPartitionAssignor):
    """Kafka's ``UniformAssignor`` (``group.consumer.assignors`` name ``uniform``)."""

    name = "uniform"

    def assign(
        self, group_spec: GroupSpec, subscribed_topic_describer: SubscribedTopicDescriber
    ) -> GroupAssignment:
        members = group_spec.members
        if not members:
            return GroupAssignment(members={})
        order = member_iteration_order(members)
        if group_spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            return assign_homogeneous(order, members, subscribed_topic_describer)
        return assign_heterogeneous(order, members, subscribed_topic_describer)
