"""Value types shared by every layer: partitions, topic ids, member ids, error codes.

The bottom layer (docs/architecture.md, "The layers"): it imports nothing but the standard library.
"""

from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.member import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    MemberId,
    new_classic_member_id,
    new_consumer_member_id,
)
from regroup.model.topic_partition import TopicPartition, sorted_partitions, topic_partition
from regroup.model.uuid import Uuid

__all__ = [
    "JOIN_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "NO_GENERATION",
    "UNKNOWN_MEMBER_ID",
    "ErrorCode",
    "KafkaProtocolError",
    "MemberId",
    "TopicPartition",
    "Uuid",
    "new_classic_member_id",
    "new_consumer_member_id",
    "sorted_partitions",
    "topic_partition",
]
