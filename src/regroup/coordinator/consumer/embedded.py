"""The embedded consumer protocol of classic members, read and written by a consumer group.

A member that speaks the classic protocol carries its subscription and receives
its assignment as the bytes of Kafka's ``ConsumerProtocol`` (Subscription and
Assignment, ``regroup.classic.protocol``), with topics by name. A consumer group
keeps assignments by topic id. These conversions serve the online migration
both ways (``upgrade``, ``downgrade``) and the classic members of a consumer
group (``classic_members``):

* topics the metadata image does not know have no id and are left out (Kafka
  ``topicPartitionMapFromList`` / ``toTopicPartitions``);
* an Assignment is written in the version of the member's Subscription (Kafka
  ``prepareAssignment`` / ``ClassicGroup.fromConsumerGroup``);
* bytes that do not parse, met while converting a classic group, are
  GROUP_ID_NOT_FOUND (Kafka throws ``GroupIdNotFoundException`` from
  ``convertToConsumerGroup``); empty Assignment bytes (a member that has not
  synced yet) are no partitions, where Kafka would fail to parse them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from regroup.assignors.classic.api import Assignment as ClassicAssignment
from regroup.assignors.classic.api import Subscription
from regroup.classic import protocol
from regroup.consumer.group.group import ConsumerGroup
from regroup.consumer.group.group_member import Assignment
from regroup.coordinator.consumer.rebalance import partitions_by_name
from regroup.coordinator.state import GroupCoordinatorState
from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.model.metadata import MetadataImage
from regroup.model.topic_partition import TopicPartition
from regroup.model.uuid import Uuid

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "assignment_bytes",
    "assignment_from_bytes",
    "partitions_to_assignment",
    "subscription_of",
]

#: Kafka ``ConsumerProtocol.PROTOCOL_TYPE``.
CONSUMER_PROTOCOL_TYPE: Final = "consumer"


def subscription_of(metadata: bytes) -> Subscription:
    """A classic member's Subscription, for a conversion; malformed: GROUP_ID_NOT_FOUND."""
    try:
        return protocol.decode_subscription(metadata)
    except Exception as exc:
        raise KafkaProtocolError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot read the embedded consumer protocol: {exc}",
        ) from None


def partitions_to_assignment(
    partitions: Iterable[TopicPartition], image: MetadataImage
) -> Assignment:
    """Topic-name partitions to an assignment by topic id; unknown topics are dropped."""
    by_topic: dict[Uuid, set[int]] = {}
    for tp in partitions:
        topic = image.topic(tp.topic)
        if topic is not None:
            by_topic.setdefault(topic.topic_id, set()).add(tp.partition)
    return {topic_id: frozenset(ps) for topic_id, ps in by_topic.items()}


def assignment_from_bytes(data: bytes, image: MetadataImage) -> Assignment:
    """A classic member's Assignment bytes by topic id (empty bytes: nothing yet)."""
    if not data:
        return {}
    try:
        decoded = protocol.decode_assignment(data)
    except Exception as exc:
        raise KafkaProtocolError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade the classic group because the embedded consumer protocol is "
            f"malformed: {exc}",
        ) from None
    return partitions_to_assignment(decoded.partitions, image)


def assignment_bytes(
    state: GroupCoordinatorState, group: ConsumerGroup, assignment: Assignment, subscription: bytes
) -> bytes:
    """``assignment`` as Assignment bytes, in the version of the ``subscription`` bytes."""
    partitions = partitions_by_name(state, group, assignment)
    version = protocol.decode_version(subscription)
    return protocol.encode_assignment(ClassicAssignment(partitions), version)
