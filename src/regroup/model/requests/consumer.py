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
"""

from __future__ import annotations

from dataclasses import dataclass

from regroup.model.errors import ErrorCode
from regroup.model.uuid import Uuid

__all__ = [
    "ClientAssignor",
    "ConsumerGroupHeartbeatAssignment",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupInstallAssignmentMember",
    "ConsumerGroupInstallAssignmentRequest",
    "ConsumerGroupInstallAssignmentResponse",
    "ConsumerGroupPrepareAssignmentMember",
    "ConsumerGroupPrepareAssignmentRequest",
    "ConsumerGroupPrepareAssignmentResponse",
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
