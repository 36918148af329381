"""Kafka's OffsetCommit record (type 1): one committed offset of one partition of one group.

Kafka: ``OffsetCommitKey`` / ``OffsetCommitValue`` (``__consumer_offsets``
record type 1). Key: group, topic, partition. Value: the offset, its leader
epoch (-1: unknown), the client's metadata string and the commit timestamp.
A tombstone deletes the offset (OffsetDelete, group deletion, expiry).
"""

from __future__ import annotations

from dataclasses import dataclass

from regroup.records.base import RecordKey, RecordValue, register_record_type

__all__ = ["OffsetCommitKey", "OffsetCommitValue"]


@dataclass(frozen=True, slots=True)
class OffsetCommitValue(RecordValue):
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0

    def __init__(
        self,
        offset: int,
        leader_epoch: int = -1,
        metadata: str = "",
        commit_timestamp: int = 0,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "leader_epoch", leader_epoch)
        object.__setattr__(self, "metadata", metadata)
        object.__setattr__(self, "commit_timestamp", commit_timestamp)


@dataclass(frozen=True, slots=True)
class OffsetCommitKey(RecordKey):
    group: str
    topic: str
    partition: int

    def __init__(
        self,
        group: str,
        topic: str,
        partition: int,
    ) -> None:
        # Written out, not generated: compiled, each line is a direct slot store (regroup.native).
        object.__setattr__(self, "group", group)
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "partition", partition)


register_record_type(OffsetCommitKey, 1, "OffsetCommit", OffsetCommitValue)
