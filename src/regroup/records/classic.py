"""Kafka's GroupMetadata record (type 2): one classic group, members and assignments.

Kafka: ``GroupMetadataKey`` / ``GroupMetadataValue`` (``__consumer_offsets``
record type 2). The key is the group id; the value is the group's protocol
type, generation, selected protocol, leader, the timestamp of its current
state, and every member with its identity, timeouts, its Subscription bytes
for the selected protocol and its assignment bytes. A tombstone removes the
group.

Kafka writes this record when a join phase ends with an empty group, when the
leader's SyncGroup installs an assignment, when a static member is replaced
without a rebalance, and (empty) when a JoinGroup creates a group. Loading a
record gives a group in Stable (members) or Empty (none); a rebalance in
flight is not persisted and the members simply rejoin.

Extension (ours, optional): ``supported_protocols`` keeps *every* protocol a
member offered (name, Subscription bytes, assignor version), so a reloaded
group votes exactly as the live one would; Kafka keeps only the selected
protocol's bytes (``subscription``), which is what a reader that ignores the
extension falls back to.
"""

from __future__ import annotations

from dataclasses import dataclass

from regroup.records.base import RecordKey, RecordValue, register_record_type

__all__ = [
    "GroupMetadataKey",
    "GroupMetadataValue",
    "GroupMetadataValueMember",
    "GroupMetadataValueProtocol",
]


@dataclass(frozen=True, slots=True)
class GroupMetadataValueProtocol:
    name: str
    metadata: bytes
    version: int | None = None


@dataclass(frozen=True, slots=True)
class GroupMetadataValueMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes
    supported_protocols: tuple[GroupMetadataValueProtocol, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupMetadataValue(RecordValue):
    protocol_type: str | None
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[GroupMetadataValueMember, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupMetadataKey(RecordKey):
    group: str


register_record_type(GroupMetadataKey, 2, "GroupMetadata", GroupMetadataValue)
