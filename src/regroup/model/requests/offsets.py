"""OffsetCommit and OffsetFetch, for members of both group types.

``generation_id_or_member_epoch`` is Kafka's field name since OffsetCommit v9:
a classic member sends its generation, a KIP-848 member its member epoch;
``-1`` with an empty member id is a commit from outside the group (admin or a
consumer using ``assign()``).
"""

from __future__ import annotations

from dataclasses import dataclass

from regroup.model.errors import ErrorCode

__all__ = [
    "OffsetCommitRequest",
    "OffsetCommitRequestPartition",
    "OffsetCommitRequestTopic",
    "OffsetCommitResponse",
    "OffsetCommitResponsePartition",
    "OffsetCommitResponseTopic",
    "OffsetFetchRequest",
    "OffsetFetchRequestTopic",
    "OffsetFetchResponse",
    "OffsetFetchResponsePartition",
    "OffsetFetchResponseTopic",
]


@dataclass(frozen=True, slots=True)
class OffsetCommitRequestPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitRequestTopic:
    name: str
    partitions: tuple[OffsetCommitRequestPartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    topics: tuple[OffsetCommitRequestTopic, ...]
    group_instance_id: str | None = None
    #: OffsetCommit v9+: the only versions a KIP-848 member may commit with.
    supports_member_epoch: bool = True


@dataclass(frozen=True, slots=True)
class OffsetCommitResponsePartition:
    partition_index: int
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class OffsetCommitResponseTopic:
    name: str
    partitions: tuple[OffsetCommitResponsePartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    topics: tuple[OffsetCommitResponseTopic, ...]
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class OffsetFetchRequestTopic:
    name: str
    partition_indexes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    #: ``None``: every partition the group has committed.
    topics: tuple[OffsetFetchRequestTopic, ...] | None
    #: OffsetFetch v9+: a KIP-848 member identifies itself; ``None``/-1 from others.
    member_id: str | None = None
    member_epoch: int = -1
    require_stable: bool = False


@dataclass(frozen=True, slots=True)
class OffsetFetchResponsePartition:
    partition_index: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str | None = None
    error_code: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class OffsetFetchResponseTopic:
    name: str
    partitions: tuple[OffsetFetchResponsePartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error_code: ErrorCode
    topics: tuple[OffsetFetchResponseTopic, ...] = ()
    throttle_time_ms: int = 0
