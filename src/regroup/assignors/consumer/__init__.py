"""The server-side assignors of KIP-848: ``uniform`` and ``range``.

Use ``create_server_assignor`` to get one by name.
"""

from regroup.assignors.consumer.api import (
    ConsumerGroupPartitionAssignor,
    GroupAssignment,
    GroupSpec,
    MemberAssignment,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
    SubscriptionType,
    TopicMetadata,
)
from regroup.assignors.consumer.registry import SERVER_ASSIGNOR_NAMES, create_server_assignor

__all__ = [
    "SERVER_ASSIGNOR_NAMES",
    "ConsumerGroupPartitionAssignor",
    "GroupAssignment",
    "GroupSpec",
    "MemberAssignment",
    "MemberSubscriptionSpec",
    "SubscribedTopicDescriber",
    "SubscriptionType",
    "TopicMetadata",
    "create_server_assignor",
]
