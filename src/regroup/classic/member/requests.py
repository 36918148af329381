"""The requests a classic member sends, built from its state (pure functions).

Kafka: ``AbstractCoordinator.sendJoinGroupRequest`` / ``sendSyncGroupRequest``
/ ``sendHeartbeatRequest`` / ``maybeLeaveGroup`` and
``ConsumerCoordinator.metadata`` / ``sendOffsetCommitRequest``.

JoinGroup carries one protocol per configured assignor, *in configuration
order* (the preference order the coordinator votes with), each with the
member's Subscription: its topics (sorted), the assignor's user data, the
partitions it owns now, its generation (-1: none; Subscription v2) and its
rack (Subscription v3, ``client.rack``). The reason is truncated to 255
characters (Kafka ``JoinGroupRequest.maybeTruncateReason``).

Each protocol also advertises its assignor's ``version()``: KIP-429, "Looking
into the Future: Assignor Version" proposes it as JoinGroup's
``ProtocolVersion`` so that the coordinator prefers the member with the
highest version as leader. No Kafka client sends it (the wire server maps
real clients to "not advertised"); regroup's members do, as the KIP proposes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from regroup.assignors.classic.api import ConsumerPartitionAssignor, Subscription
from regroup.classic.member.config import JOIN_GROUP_REASON_MAX_LENGTH, ClassicMemberConfig
from regroup.classic.protocol import PROTOCOL_TYPE, encode_subscription
from regroup.model import TopicPartition
from regroup.model.requests.classic import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from regroup.model.requests.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

__all__ = [
    "commit_request",
    "heartbeat_request",
    "join_request",
    "leave_request",
    "subscription_for",
    "sync_request",
    "truncate_reason",
]


def truncate_reason(reason: str) -> str | None:
    """Kafka's 255-character limit; an empty reason is sent as none."""
    return reason[:JOIN_GROUP_REASON_MAX_LENGTH] or None


def subscription_for(
    assignor: ConsumerPartitionAssignor,
    config: ClassicMemberConfig,
    topics: frozenset[str],
    owned: frozenset[TopicPartition],
    generation_id: int,
) -> Subscription:
    """Kafka ``ConsumerCoordinator.metadata``: one Subscription per assignor."""
    return Subscription(
        topics=tuple(sorted(topics)),
        user_data=assignor.subscription_user_data(topics),
        owned_partitions=tuple(sorted(owned)),
        generation_id=generation_id,
        rack_id=config.client_rack or None,
    )


def join_request(
    config: ClassicMemberConfig,
    assignors: Sequence[ConsumerPartitionAssignor],
    *,
    member_id: str,
    topics: frozenset[str],
    owned: frozenset[TopicPartition],
    generation_id: int,
    reason: str,
) -> JoinGroupRequest:
    protocols = tuple(
        JoinGroupRequestProtocol(
            a.name,
            encode_subscription(subscription_for(a, config, topics, owned, generation_id)),
            version=a.version(),
        )
        for a in assignors
    )
    return JoinGroupRequest(
        group_id=config.group_id,
        session_timeout_ms=config.session_timeout_ms,
        rebalance_timeout_ms=config.rebalance_timeout_ms,
        member_id=member_id,
        protocol_type=PROTOCOL_TYPE,
        protocols=protocols,
        group_instance_id=config.group_instance_id,
        reason=truncate_reason(reason),
        client_id=config.client_id,
    )


def sync_request(
    config: ClassicMemberConfig,
    *,
    generation_id: int,
    member_id: str,
    protocol_name: str,
    assignments: Mapping[str, bytes],
) -> SyncGroupRequest:
    """Only the leader sends assignments (sorted by member id for determinism)."""
    return SyncGroupRequest(
        group_id=config.group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=config.group_instance_id,
        protocol_type=PROTOCOL_TYPE,
        protocol_name=protocol_name,
        assignments=tuple(
            SyncGroupRequestAssignment(m, data) for m, data in sorted(assignments.items())
        ),
    )


def heartbeat_request(
    config: ClassicMemberConfig, *, generation_id: int, member_id: str
) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id=config.group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=config.group_instance_id,
    )


def leave_request(config: ClassicMemberConfig, *, member_id: str, reason: str) -> LeaveGroupRequest:
    return LeaveGroupRequest(config.group_id, (MemberIdentity(member_id, None, reason),))


def commit_request(
    config: ClassicMemberConfig,
    offsets: Mapping[TopicPartition, int],
    *,
    generation_id: int,
    member_id: str,
) -> OffsetCommitRequest:
    """Offsets grouped by topic, topics and partitions sorted."""
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for tp, offset in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append(OffsetCommitRequestPartition(tp.partition, offset))
    return OffsetCommitRequest(
        group_id=config.group_id,
        generation_id_or_member_epoch=generation_id,
        member_id=member_id,
        topics=tuple(OffsetCommitRequestTopic(t, tuple(p)) for t, p in by_topic.items()),
        group_instance_id=config.group_instance_id,
    )
