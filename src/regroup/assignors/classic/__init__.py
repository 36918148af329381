"""The classic protocol's client-side assignors (KIP-429 interface).

``range``, ``roundrobin``, ``sticky`` and ``cooperative-sticky``, giving the
same output as Apache Kafka's assignors for the same input. Use
``create_classic_assignor`` to get one by its protocol name or by Kafka's class
name (``org.apache.kafka.clients.consumer.CooperativeStickyAssignor``).
"""

from regroup.assignors.classic.api import (
    Assignment,
    ClusterMetadata,
    ConsumerGroupMetadata,
    ConsumerPartitionAssignor,
    GroupAssignment,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
)
from regroup.assignors.classic.registry import (
    CLASSIC_ASSIGNOR_NAMES,
    KAFKA_CLASS_NAMES,
    create_classic_assignor,
    resolve_classic_assignor_name,
)

__all__ = [
    "CLASSIC_ASSIGNOR_NAMES",
    "KAFKA_CLASS_NAMES",
    "Assignment",
    "ClusterMetadata",
    "ConsumerGroupMetadata",
    "ConsumerPartitionAssignor",
    "GroupAssignment",
    "GroupSubscription",
    "RebalanceProtocol",
    "Subscription",
    "create_classic_assignor",
    "resolve_classic_assignor_name",
]
