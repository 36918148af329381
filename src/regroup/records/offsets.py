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


@dataclass(frozen=True, slots=True)
class OffsetCommitKey(RecordKey):
    group: str
    topic: str
    partition: int


register_record_type(OffsetCommitKey, 1, "OffsetCommit", OffsetCommitValue)
