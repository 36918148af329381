"""The KIP-848 member's configuration, its own error, and the results it reports.

Configs keep Kafka's consumer names in snake_case (``group.instance.id`` ->
``group_instance_id``) and Kafka 4.x defaults. Under ``group.protocol=consumer``
the session timeout and heartbeat interval are the coordinator's
(``group.consumer.session.timeout.ms``, ``group.consumer.heartbeat.interval.ms``;
KIP-848, "Heartbeat & Session"), so they are not member configs; the rebalance
timeout the member sends is its ``max.poll.interval.ms`` (KIP-848, "Member
Epoch - Reconciliation of the group").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from regroup.members.errors import InvalidMemberConfigError
from regroup.model import ErrorCode, TopicPartition

__all__ = [
    "CommitResult",
    "ConsumerMemberConfig",
    "TopicAuthorizationError",
]


class TopicAuthorizationError(RuntimeError):
    """TOPIC_AUTHORIZATION_FAILED: surfaced from ``poll``; the member stays in the group."""


@dataclass(frozen=True, slots=True)
class ConsumerMemberConfig:
    """A ``group.protocol=consumer`` member's configs."""

    group_id: str
    client_id: str = ""
    #: KIP-345 static membership; ``None``: a dynamic member.
    group_instance_id: str | None = None
    #: ``client.rack``; sent as ``RackId``.
    client_rack: str | None = None
    #: Sent as the heartbeat's ``RebalanceTimeoutMs``; also the poll timer.
    max_poll_interval_ms: int = 300000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    #: ``group.remote.assignor``: the server-side assignor to ask for (``None``: the
    #: coordinator's default). Never together with client-side assignors.
    group_remote_assignor: str | None = None
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000

    def __post_init__(self) -> None:
        if not self.group_id.strip():
            raise InvalidMemberConfigError("group.id must be set for group.protocol=consumer")
        if self.group_instance_id is not None and not self.group_instance_id.strip():
            raise InvalidMemberConfigError("group.instance.id must not be empty")
        if self.max_poll_interval_ms < 1:
            raise InvalidMemberConfigError("max.poll.interval.ms must be >= 1")
        if self.retry_backoff_ms < 0 or self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise InvalidMemberConfigError("retry.backoff.ms must be >= 0 and <= its maximum")
        if self.auto_commit_interval_ms < 1:
            raise InvalidMemberConfigError("auto.commit.interval.ms must be >= 1")


@dataclass(frozen=True, slots=True)
class CommitResult:
    """The answer to one OffsetCommit the member sent.

    ``purpose``: ``application`` (``commit()``), ``auto`` (auto-commit),
    ``revocation`` (before onPartitionsRevoked) or ``leave`` (before leaving).
    ``errors`` holds the partitions that failed; ``failed`` is True when no
    response came at all.
    """

    purpose: str
    member_epoch: int
    offsets: Mapping[TopicPartition, int]
    errors: Mapping[TopicPartition, ErrorCode] = field(default_factory=dict)
    failed: bool = False

    @property
    def ok(self) -> bool:
        return not self.failed and not self.errors
