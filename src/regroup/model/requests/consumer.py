"""The consumer group protocol's RPCs (KIP-848).

ConsumerGroupHeartbeat: request fields that are ``None`` (or ``-1`` for
``rebalance_timeout_ms``) mean "unchanged since the last heartbeat" (KIP-848,
"ConsumerGroupHeartbeat API"). Topic partitions are keyed by topic id, as on
the wire.

Client-side assignors (KIP-848, "Client-Side Assignor"; Apache Kafka removed
them before release, the spec keeps them and so do we): the heartbeat carries
``client_assignors``; the coordinator answers COMPUTE_ASSIGNMENT to one member,
which calls ConsumerGroupPrepareAssignment (schema from the KIP) and then
ConsumerGroupInstallAssignment. The KIP leaves the install schema as TODO;
ours carries the group epoch the assignment was computed at (so the
coordinator can tell a stale one), an assignor error code, and each member's
partitions.

ConsumerGroupDescribe (API key 69) follows Kafka 4.x's schema. Group configs
(KIP-848, "Dynamic Group Configuration") are IncrementalAlterConfigs and
DescribeConfigs restricted to one resource of type GROUP, whose name is the
group id: ``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from regroup.model.errors import ErrorCode
from regroup.model.uuid import Uuid

__all__ = [
    "CONFIG_OP_DELETE",
    "CONFIG_OP_SET",
    "AlterableGroupConfig",
    "ClientAssignor",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatAssignment",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupInstallAssignmentMember",
    "ConsumerGroupInstallAssignmentRequest",
    "ConsumerGroupInstallAssignmentResponse",
    "ConsumerGroupPrepareAssignmentMember",
    "ConsumerGroupPrepareAssignmentRequest",
    "ConsumerGroupPrepareAssignmentResponse",
    "DescribeGroupConfigsRequest",
    "DescribeGroupConfigsResponse",
    "DescribedAssignment",
    "DescribedGroup",
    "DescribedGroupConfig",
    "DescribedGroupMember",
    "DescribedTopicPartitions",
    "IncrementalAlterGroupConfigsRequest",
    "IncrementalAlterGroupConfigsResponse",
    "PartitionMetadata",
    "TopicPartitions",
]


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic_id: Uuid
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ClientAssignor:
    """One client-side assignor a member supports, with its metadata (KIP-848 ``Assignor``)."""

    name: str
    minimum_version: int
    maximum_version: int
    version: int = 0
    reason: int = 0
    metadata: bytes = b""


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: KIP-848 client-side assignors; never together with ``server_assignor``.
    client_assignors: tuple[ClientAssignor, ...] | None = None
    #: The partitions the member owns now; ``None`` = not reported in this heartbeat.
    topic_partitions: tuple[TopicPartitions, ...] | None = None
    client_id: str = ""
    client_host: str = ""
    #: ConsumerGroupHeartbeat v1+ (KIP-1082): the client always generates its member id.
    client_generates_member_id: bool = True
    #: What the coordinator uses of Kafka's request context (the
    #: ``AuthorizableRequestContext`` that ``GroupMetadataManager.refreshRegularExpressions``
    #: authorizes with): whether the requesting principal may DESCRIBE a topic. Set by a
    #: driver with an authorizer; ``None`` without one. Not part of the wire request.
    may_describe_topic: Callable[[str], bool] | None = field(
        default=None, compare=False, repr=False
    )


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatAssignment:
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    error_code: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    #: Present only when the member must (re)learn its assignment.
    assignment: ConsumerGroupHeartbeatAssignment | None = None
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupPrepareAssignmentRequest:
    group_id: str
    member_id: str
    member_epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupPrepareAssignmentMember:
    member_id: str
    member_epoch: int
    instance_id: str | None
    subscriptions: tuple[Uuid, ...]
    assignor_version: int
    assignor_reason: int
    assignor_metadata: bytes
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    topic_id: Uuid
    num_partitions: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupPrepareAssignmentResponse:
    error_code: ErrorCode
    error_message: str | None = None
    group_epoch: int = -1
    client_assignor_name: str = ""
    members: tuple[ConsumerGroupPrepareAssignmentMember, ...] = ()
    partition_metadata: tuple[PartitionMetadata, ...] = ()
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupInstallAssignmentMember:
    member_id: str
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupInstallAssignmentRequest:
    group_id: str
    member_id: str
    member_epoch: int
    #: The group epoch the assignment was computed for (from PrepareAssignment).
    group_epoch: int
    #: The client assignor's error (0: none); on error the current target is kept.
    error_code: int = 0
    members: tuple[ConsumerGroupInstallAssignmentMember, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupInstallAssignmentResponse:
    error_code: ErrorCode
    error_message: str | None = None
    throttle_time_ms: int = 0


# -- ConsumerGroupDescribe (API key 69) -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeRequest:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True)
class DescribedTopicPartitions:
    """Describe's partitions carry the topic name as well as its id (Kafka 4.x)."""

    topic_id: Uuid
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DescribedAssignment:
    topic_partitions: tuple[DescribedTopicPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribedGroupMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: DescribedAssignment
    target_assignment: DescribedAssignment
    #: v1: -1 unknown, 0 classic, 1 consumer.
    member_type: int = 1


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error_code: ErrorCode
    group_id: str
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor_name: str = ""
    members: tuple[DescribedGroupMember, ...] = ()
    authorized_operations: int = -(2**31)


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeResponse:
    groups: tuple[DescribedGroup, ...]
    throttle_time_ms: int = 0


# -- group configs (KIP-848 "Dynamic Group Configuration": the GROUP config resource) -------


#: Kafka ``AlterConfigOp.OpType`` values.
CONFIG_OP_SET = 0
CONFIG_OP_DELETE = 1


@dataclass(frozen=True, slots=True)
class AlterableGroupConfig:
    """IncrementalAlterConfigs' ``AlterableConfig`` for the GROUP resource."""

    name: str
    config_operation: int = CONFIG_OP_SET
    value: str | None = None


@dataclass(frozen=True, slots=True)
class IncrementalAlterGroupConfigsRequest:
    """IncrementalAlterConfigs for one resource of type GROUP (``resource_name`` = group id)."""

    resource_name: str
    configs: tuple[AlterableGroupConfig, ...]
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class IncrementalAlterGroupConfigsResponse:
    error_code: ErrorCode
    resource_name: str
    error_message: str | None = None
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class DescribeGroupConfigsRequest:
    """DescribeConfigs for one resource of type GROUP."""

    resource_name: str


@dataclass(frozen=True, slots=True)
class DescribedGroupConfig:
    name: str
    value: str
    #: True when the group has no override and the broker's value applies.
    is_default: bool


@dataclass(frozen=True, slots=True)
class DescribeGroupConfigsResponse:
    error_code: ErrorCode
    resource_name: str
    error_message: str | None = None
    configs: tuple[DescribedGroupConfig, ...] = ()
    throttle_time_ms: int = 0
