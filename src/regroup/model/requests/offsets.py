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

    def __init__(
        self,
        partition_index: int,
        committed_offset: int,
        committed_leader_epoch: int = -1,
        committed_metadata: str | None = None,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "partition_index", partition_index)
        object.__setattr__(self, "committed_offset", committed_offset)
        object.__setattr__(self, "committed_leader_epoch", committed_leader_epoch)
        object.__setattr__(self, "committed_metadata", committed_metadata)


@dataclass(frozen=True, slots=True)
class OffsetCommitRequestTopic:
    name: str
    partitions: tuple[OffsetCommitRequestPartition, ...]

    def __init__(
        self,
        name: str,
        partitions: tuple[OffsetCommitRequestPartition, ...],
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "partitions", partitions)


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    topics: tuple[OffsetCommitRequestTopic, ...]
    group_instance_id: str | None = None
    #: OffsetCommit v9+: the only versions a KIP-848 member may commit with.
    supports_member_epoch: bool = True

    def __init__(
        self,
        group_id: str,
        generation_id_or_member_epoch: int,
        member_id: str,
        topics: tuple[OffsetCommitRequestTopic, ...],
        group_instance_id: str | None = None,
        supports_member_epoch: bool = True,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "group_id", group_id)
        object.__setattr__(self, "generation_id_or_member_epoch", generation_id_or_member_epoch)
        object.__setattr__(self, "member_id", member_id)
        object.__setattr__(self, "topics", topics)
        object.__setattr__(self, "group_instance_id", group_instance_id)
        object.__setattr__(self, "supports_member_epoch", supports_member_epoch)


@dataclass(frozen=True, slots=True)
class OffsetCommitResponsePartition:
    partition_index: int
    error_code: ErrorCode

    def __init__(
        self,
        partition_index: int,
        error_code: ErrorCode,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "partition_index", partition_index)
        object.__setattr__(self, "error_code", error_code)


@dataclass(frozen=True, slots=True)
class OffsetCommitResponseTopic:
    name: str
    partitions: tuple[OffsetCommitResponsePartition, ...]

    def __init__(
        self,
        name: str,
        partitions: tuple[OffsetCommitResponsePartition, ...],
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "partitions", partitions)


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    topics: tuple[OffsetCommitResponseTopic, ...]
    throttle_time_ms: int = 0

    def __init__(
        self,
        topics: tuple[OffsetCommitResponseTopic, ...],
        throttle_time_ms: int = 0,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "topics", topics)
        object.__setattr__(self, "throttle_time_ms", throttle_time_ms)


@dataclass(frozen=True, slots=True)
class OffsetFetchRequestTopic:
    name: str
    partition_indexes: tuple[int, ...]

    def __init__(
        self,
        name: str,
        partition_indexes: tuple[int, ...],
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "partition_indexes", partition_indexes)


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    #: ``None``: every partition the group has committed.
    topics: tuple[OffsetFetchRequestTopic, ...] | None
    #: OffsetFetch v9+: a KIP-848 member identifies itself; ``None``/-1 from others.
    member_id: str | None = None
    member_epoch: int = -1
    require_stable: bool = False

    def __init__(
        self,
        group_id: str,
        topics: tuple[OffsetFetchRequestTopic, ...] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
        require_stable: bool = False,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "group_id", group_id)
        object.__setattr__(self, "topics", topics)
        object.__setattr__(self, "member_id", member_id)
        object.__setattr__(self, "member_epoch", member_epoch)
        object.__setattr__(self, "require_stable", require_stable)


@dataclass(frozen=True, slots=True)
class OffsetFetchResponsePartition:
    partition_index: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str | None = None
    error_code: ErrorCode = ErrorCode.NONE

    def __init__(
        self,
        partition_index: int,
        committed_offset: int = -1,
        committed_leader_epoch: int = -1,
        metadata: str | None = None,
        error_code: ErrorCode = ErrorCode.NONE,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "partition_index", partition_index)
        object.__setattr__(self, "committed_offset", committed_offset)
        object.__setattr__(self, "committed_leader_epoch", committed_leader_epoch)
        object.__setattr__(self, "metadata", metadata)
        object.__setattr__(self, "error_code", error_code)


@dataclass(frozen=True, slots=True)
class OffsetFetchResponseTopic:
    name: str
    partitions: tuple[OffsetFetchResponsePartition, ...]

    def __init__(
        self,
        name: str,
        partitions: tuple[OffsetFetchResponsePartition, ...],
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "partitions", partitions)


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error_code: ErrorCode
    topics: tuple[OffsetFetchResponseTopic, ...] = ()
    throttle_time_ms: int = 0

    def __init__(
        self,
        error_code: ErrorCode,
        topics: tuple[OffsetFetchResponseTopic, ...] = (),
        throttle_time_ms: int = 0,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "error_code", error_code)
        object.__setattr__(self, "topics", topics)
        object.__setattr__(self, "throttle_time_ms", throttle_time_ms)
