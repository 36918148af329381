"""The records of a KIP-848 consumer group, in Kafka's vocabulary and with Kafka's type ids.

Kafka's group coordinator writes these to ``__consumer_offsets`` (record JSON
schemas ``ConsumerGroup*Key/Value.json`` in ``group-coordinator``); a value of
``None`` is a tombstone. The key's ``record_type`` is Kafka's "version" of the
key:

====  =========================================  ===================================================
id    record                                     tombstone means
====  =========================================  ===================================================
3     ConsumerGroupMetadata (group epoch)         the group is deleted
4     ConsumerGroupPartitionMetadata              no subscribed topic metadata
5     ConsumerGroupMemberMetadata                 the member is removed
6     ConsumerGroupTargetAssignmentMetadata       assignment epoch back to -1 (no target)
7     ConsumerGroupTargetAssignmentMember         the member has no target
8     ConsumerGroupCurrentMemberAssignment        member epochs back to -1, no partitions
16    ConsumerGroupRegularExpression              the resolved regular expression is dropped
900   ConsumerGroupConfig (regroup extension)     the group's config overrides are dropped
====  =========================================  ===================================================

Type 900 is regroup's own: Kafka keeps group configs (``consumer.session.timeout.ms``,
``consumer.heartbeat.interval.ms``) in the controller's metadata log as
``ConfigRecord``s of the GROUP resource; KIP-848 ("Dynamic Group Configuration")
wants them tied to the group's lifecycle, so regroup keeps them with the group's
records, under an id far from Kafka's range.

KIP-848's member model also lists the client-side assignors a member supports
("Client Assignors"); Kafka dropped them, regroup keeps them in the member
metadata value (``client_assignors``), as the KIP's data model has them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from regroup.model.requests.consumer import ClientAssignor, TopicPartitions
from regroup.model.uuid import Uuid
from regroup.records.base import RecordKey, RecordValue, register_record_type

__all__ = [
    "ClassicMemberMetadata",
    "ClassicProtocol",
    "ConsumerGroupConfigKey",
    "ConsumerGroupConfigValue",
    "ConsumerGroupCurrentMemberAssignmentKey",
    "ConsumerGroupCurrentMemberAssignmentValue",
    "ConsumerGroupMemberMetadataKey",
    "ConsumerGroupMemberMetadataValue",
    "ConsumerGroupMetadataKey",
    "ConsumerGroupMetadataValue",
    "ConsumerGroupPartitionMetadataKey",
    "ConsumerGroupPartitionMetadataValue",
    "ConsumerGroupRegularExpressionKey",
    "ConsumerGroupRegularExpressionValue",
    "ConsumerGroupTargetAssignmentMemberKey",
    "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupTargetAssignmentMetadataKey",
    "ConsumerGroupTargetAssignmentMetadataValue",
    "GroupConfigEntry",
    "PartitionMetadataTopic",
]


# -- 3: group epoch ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue(RecordValue):
    epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey(RecordKey):
    group_id: str


register_record_type(
    ConsumerGroupMetadataKey, 3, "ConsumerGroupMetadata", ConsumerGroupMetadataValue
)


# -- 4: subscription metadata ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionMetadataTopic:
    """One subscribed topic as the group saw it (Kafka: ``TopicMetadata`` of the record)."""

    topic_id: Uuid
    topic_name: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue(RecordValue):
    topics: tuple[PartitionMetadataTopic, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey(RecordKey):
    group_id: str


register_record_type(
    ConsumerGroupPartitionMetadataKey,
    4,
    "ConsumerGroupPartitionMetadata",
    ConsumerGroupPartitionMetadataValue,
)


# -- 5: member metadata ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    """One protocol of a classic member (Kafka: ``ClassicMemberMetadata.ClassicProtocol``)."""

    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """Kafka ``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata`` (3.8+, migration)."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue(RecordValue):
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    client_assignors: tuple[ClientAssignor, ...] = ()
    #: Set for a member that uses the classic protocol (Kafka 3.8+, online migration;
    #: a tagged field in Kafka's schema).
    classic_member_metadata: ClassicMemberMetadata | None = None

    tagged_fields: ClassVar[tuple[str, ...]] = ("classic_member_metadata",)


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey(RecordKey):
    group_id: str
    member_id: str


register_record_type(
    ConsumerGroupMemberMetadataKey,
    5,
    "ConsumerGroupMemberMetadata",
    ConsumerGroupMemberMetadataValue,
)


# -- 6: target assignment epoch ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue(RecordValue):
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey(RecordKey):
    group_id: str


register_record_type(
    ConsumerGroupTargetAssignmentMetadataKey,
    6,
    "ConsumerGroupTargetAssignmentMetadata",
    ConsumerGroupTargetAssignmentMetadataValue,
)


# -- 7: one member's target --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue(RecordValue):
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey(RecordKey):
    group_id: str
    member_id: str


register_record_type(
    ConsumerGroupTargetAssignmentMemberKey,
    7,
    "ConsumerGroupTargetAssignmentMember",
    ConsumerGroupTargetAssignmentMemberValue,
)


# -- 8: one member's current assignment -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue(RecordValue):
    member_epoch: int
    previous_member_epoch: int
    #: Kafka's ``MemberState`` value: 0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS.
    state: int
    assigned_partitions: tuple[TopicPartitions, ...]
    partitions_pending_revocation: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey(RecordKey):
    group_id: str
    member_id: str


register_record_type(
    ConsumerGroupCurrentMemberAssignmentKey,
    8,
    "ConsumerGroupCurrentMemberAssignment",
    ConsumerGroupCurrentMemberAssignmentValue,
)


# -- 16: a resolved regular expression -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue(RecordValue):
    topics: tuple[str, ...]
    #: Kafka: the metadata image offset the regex was resolved against; regroup: the
    #: number of metadata images the coordinator has seen.
    version: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey(RecordKey):
    group_id: str
    regular_expression: str


register_record_type(
    ConsumerGroupRegularExpressionKey,
    16,
    "ConsumerGroupRegularExpression",
    ConsumerGroupRegularExpressionValue,
)


# -- 900: group config overrides (regroup extension) -------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupConfigEntry:
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfigValue(RecordValue):
    configs: tuple[GroupConfigEntry, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfigKey(RecordKey):
    group_id: str


register_record_type(ConsumerGroupConfigKey, 900, "ConsumerGroupConfig", ConsumerGroupConfigValue)
