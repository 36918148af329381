"""Expired offsets and empty groups go (Kafka ``GroupCoordinatorShard.cleanupGroupMetadata``).

Kafka runs this every ``offsets.retention.check.interval.ms`` (the driver
calls ``GroupCoordinator.expire_offsets``); ``offsets.retention.minutes``
(10080, seven days) is how long an offset outlives its base time. Rules, per
group id that has a group or committed offsets:

1. The group's expiration condition (Kafka ``Group.offsetExpirationCondition``)
   says whether its offsets may expire now and from which base time:

   * a classic group with a protocol type (a real group, Kafka
     ``ClassicGroup.offsetExpirationCondition``): when Empty, from the time it
     became Empty; when Stable, protocol type ``consumer`` and the members'
     subscribed topics known, from each offset's commit time; in any other
     state none expires;
   * a classic group without a protocol type (a "simple" group), a KIP-848
     group (Kafka ``ConsumerGroup.offsetExpirationCondition``, whatever its
     state), offsets with no group: from each offset's commit time.

2. An offset of a topic the group subscribes to never expires (Kafka
   ``OffsetMetadataManager.cleanupExpiredOffsets`` asks
   ``Group.isSubscribedToTopic``): for a KIP-848 group, a topic some member
   subscribes to by name or through a resolved regex (Kafka
   ``ModernGroup.isSubscribedToTopic``); for a classic group, a topic of the
   members' Subscriptions for the group's protocol, read as their version-0
   prefix (Kafka ``ClassicGroup.computeSubscribedTopics``), which no Empty
   group has; when those cannot be read, every topic counts as subscribed for
   protocol type ``consumer`` and none otherwise (Kafka
   ``ClassicGroup.isSubscribedToTopic``).
3. Any other offset whose base time is at least ``offsets.retention.minutes``
   ago gets a tombstone and is forgotten. So a group with members loses the
   offsets of topics none of them subscribes to any more.
4. A group none of whose offsets is left, when it is empty, is deleted with its
   tombstones (Kafka ``maybeDeleteGroup``): a classic group becomes Dead, a
   KIP-848 group as its own expiration would delete it
   (``consumer.txn.delete_group``). A group whose condition says "none
   expires" is never deleted here.

Where regroup is stricter than Kafka: an Empty classic group with a pending
member (one told MEMBER_ID_REQUIRED, not yet back) keeps its offsets and
itself, since that member's JoinGroup would otherwise meet no group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from regroup.classic.group.group import ClassicGroup
from regroup.classic.group.group_state import ClassicGroupState
from regroup.classic.protocol import PROTOCOL_TYPE, decode_subscription_topics
from regroup.consumer.group.group import ConsumerGroup
from regroup.coordinator import offsets
from regroup.coordinator.classic import rebalance
from regroup.coordinator.consumer.txn import ConsumerTxn, delete_group
from regroup.coordinator.group import Group
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.state import CommittedOffset, GroupCoordinatorState
from regroup.model.wire import WireFormatError

__all__ = ["expire_offsets"]


def _commit_time(offset: CommittedOffset) -> int:
    return offset.commit_timestamp_ms


@dataclass(frozen=True, slots=True)
class _Condition:
    """Rules 1 and 2 for one group: the base time of an offset, and the topics kept."""

    base_time: Callable[[CommittedOffset], int]
    is_subscribed: Callable[[str], bool]


def _never(_topic: str) -> bool:
    return False


def _classic_subscribed_topics(group: ClassicGroup) -> frozenset[str] | None:
    """Kafka ``ClassicGroup.computeSubscribedTopics``; ``None`` when unknown."""
    if group.protocol_type != PROTOCOL_TYPE:
        return None
    if not group.members:
        return frozenset()
    if group.protocol_name is None:
        return None
    topics: set[str] = set()
    try:
        for member in group.members.values():
            topics.update(decode_subscription_topics(member.metadata(group.protocol_name)))
    except (WireFormatError, KeyError):
        return None
    return frozenset(topics)


def _classic_condition(group: ClassicGroup) -> _Condition | None:
    if not group.protocol_type:
        return _Condition(_commit_time, _never)
    uses_consumer_protocol = group.protocol_type == PROTOCOL_TYPE
    subscribed = _classic_subscribed_topics(group)

    def is_subscribed(topic: str) -> bool:
        return uses_consumer_protocol if subscribed is None else topic in subscribed

    if group.is_in(ClassicGroupState.EMPTY):
        if group.pending_members:
            return None
        became_empty = group.current_state_timestamp_ms
        return _Condition(lambda _offset: became_empty, is_subscribed)
    if uses_consumer_protocol and subscribed is not None and group.is_in(ClassicGroupState.STABLE):
        return _Condition(_commit_time, is_subscribed)
    return None


def _condition(group: Group | None) -> _Condition | None:
    """Rules 1 and 2: how ``group``'s offsets may expire, or ``None`` when none may now."""
    if group is None:
        return _Condition(_commit_time, _never)
    if isinstance(group, ClassicGroup):
        return _classic_condition(group)
    if isinstance(group, ConsumerGroup):
        topics = group.subscribed_topic_names()
        return _Condition(_commit_time, topics.__contains__)
    return None


def _is_empty(group: Group | None) -> bool:
    """Kafka ``Group.isEmpty`` (with regroup's pending-member rule for classic groups)."""
    if isinstance(group, ClassicGroup):
        return group.is_in(ClassicGroupState.EMPTY) and not group.pending_members
    return isinstance(group, ConsumerGroup) and group.is_empty()


def expire_offsets(state: GroupCoordinatorState, now_ms: int) -> CoordinatorResult:
    """Rules 1-4 for every group."""
    out = CoordinatorResult()
    retention_ms = state.config.offsets_retention_minutes * 60_000
    for group_id in sorted(set(state.groups) | set(state.offsets.by_group)):
        group = state.groups.get(group_id)
        condition = _condition(group)
        if condition is None:
            continue
        stored = state.offsets.by_group.get(group_id, {})
        expired = [
            tp
            for tp, offset in sorted(stored.items())
            if not condition.is_subscribed(tp.topic)
            and now_ms - condition.base_time(offset) >= retention_ms
        ]
        if expired:
            out.extend(offsets.delete_offsets(state, group_id, expired))
        if state.offsets.by_group.get(group_id) or not _is_empty(group):
            continue
        if isinstance(group, ClassicGroup):
            out.extend(rebalance.delete_group(state, group_id, now_ms))
        elif isinstance(group, ConsumerGroup):
            txn = ConsumerTxn(state, group_id, now_ms)
            delete_group(txn)
            out.extend(txn.finish())
    return out
