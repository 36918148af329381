"""Expired offsets and empty groups go (Kafka ``GroupMetadataManager.cleanupGroupMetadata``).

Kafka runs this every ``offsets.retention.check.interval.ms`` (the driver
calls ``GroupCoordinator.expire_offsets``); ``offsets.retention.minutes``
(10080, seven days) is how long an offset outlives its base time. Rules, per
group id that has a group or committed offsets:

1. Which offsets may expire (Kafka ``offsetExpirationCondition``): those of an
   empty group, with the time the classic group became Empty as base time when
   it has a protocol type (it was a real group), else each offset's commit
   time (a simple group, an empty KIP-848 group, offsets without a group).
   A group with members keeps its offsets (Kafka would also expire, in a
   Stable group, the offsets of topics no member subscribes to; regroup does
   not).
2. An offset whose base time is at least ``offsets.retention.minutes`` ago gets
   a tombstone and is forgotten (Kafka ``cleanupExpiredOffsets``).
3. An empty group none of whose offsets is left is deleted with its tombstones
   (Kafka ``maybeDeleteGroup``): a classic group becomes Dead, a KIP-848 group
   as its own expiration would delete it (``consumer.txn.delete_group``).
"""

from __future__ import annotations

from regroup.classic.group import ClassicGroup
from regroup.classic.group_state import ClassicGroupState
from regroup.consumer.group import ConsumerGroup
from regroup.coordinator import offsets
from regroup.coordinator.classic import rebalance
from regroup.coordinator.consumer.txn import ConsumerTxn, delete_group
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import CommittedOffset, GroupCoordinatorState

__all__ = ["expire_offsets"]


def _base_time(group: object, offset: CommittedOffset) -> int | None:
    """Rule 1: the time ``offset`` ages from, or ``None`` when it cannot expire now."""
    if group is None:
        return offset.commit_timestamp_ms
    if isinstance(group, ClassicGroup):
        if not group.is_in(ClassicGroupState.EMPTY) or group.pending_members:
            return None
        return (
            group.current_state_timestamp_ms if group.protocol_type else offset.commit_timestamp_ms
        )
    if isinstance(group, ConsumerGroup):
        return offset.commit_timestamp_ms if group.is_empty() else None
    return None


def expire_offsets(state: GroupCoordinatorState, now_ms: int) -> CoordinatorResult:
    """Rules 1-3 for every group."""
    out = CoordinatorResult()
    retention_ms = state.config.offsets_retention_minutes * 60_000
    for group_id in sorted(set(state.groups) | set(state.offsets.by_group)):
        group = state.groups.get(group_id)
        stored = state.offsets.by_group.get(group_id, {})
        expired = [
            tp
            for tp, offset in sorted(stored.items())
            if (base := _base_time(group, offset)) is not None and now_ms - base >= retention_ms
        ]
        if expired:
            out.extend(offsets.delete_offsets(state, group_id, expired))
        if state.offsets.by_group.get(group_id):
            continue
        if isinstance(group, ClassicGroup) and _base_time(group, CommittedOffset(0)) is not None:
            out.extend(rebalance.delete_group(state, group_id, now_ms))
        elif isinstance(group, ConsumerGroup) and group.is_empty():
            txn = ConsumerTxn(state, group_id, now_ms)
            delete_group(txn)
            out.extend(txn.finish())
    return out
