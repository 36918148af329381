"""The KIP-848 member's configuration, its own error, and the results it reports.

Configs keep Kafka's consumer names in snake_case (``group.instance.id`` ->
``group_instance_id``) and Kafka 4.x defaults. Under ``group.protocol=consumer``
the session timeout and heartbeat interval are the coordinator's
(``group.consumer.session.timeout.ms``, ``group.consumer.heartbeat.interval.ms``;
KIP-848, "Heartbeat & Session"), so they are not member configs; the rebalance
timeout the member sends is its ``max.poll.interval.ms`` (KIP-848, "Member
Epoch - Reconciliation of the group").

One config is regroup's own, for tests and the soak:

``regroup.heartbeat.rebalance.timeout.ms`` = any integer (default: unset)
    The ``RebalanceTimeoutMs`` this member sends in place of
    ``max.poll.interval.ms``. Kafka's Java client always sends
    ``max.poll.interval.ms`` (at least 1), but the coordinator takes any value
    but -1 on the joining heartbeat (``GroupMetadataManager.
    throwIfConsumerGroupHeartbeatRequestIsInvalid``: INVALID_REQUEST, "must be
    provided in first request"), 0 included, which leaves the member no time to
    revoke: this plays a client that sends 0 or -1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from regroup.members.errors import InvalidMemberConfigError
from regroup.model import ErrorCode, TopicPartition

__all__ = [
    "CLASSIC_ONLY_CONFIGS",
    "CONSUMER_MEMBER_CONFIGS",
    "DRIVER_CONFIGS",
    "CommitResult",
    "ConsumerMemberConfig",
    "TopicAuthorizationError",
]


class TopicAuthorizationError(RuntimeError):
    """TOPIC_AUTHORIZATION_FAILED: surfaced from ``poll``; the member stays in the group."""


#: The consumer configs a ``group.protocol=consumer`` member reads, by Kafka name.
CONSUMER_MEMBER_CONFIGS: Final = {
    "group.id": "group_id",
    "client.id": "client_id",
    "group.instance.id": "group_instance_id",
    "client.rack": "client_rack",
    "max.poll.interval.ms": "max_poll_interval_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "retry.backoff.max.ms": "retry_backoff_max_ms",
    "group.remote.assignor": "group_remote_assignor",
    "enable.auto.commit": "enable_auto_commit",
    "auto.commit.interval.ms": "auto_commit_interval_ms",
    "regroup.heartbeat.rebalance.timeout.ms": "regroup_heartbeat_rebalance_timeout_ms",
}
#: Kafka refuses these with ``group.protocol=consumer``: the coordinator owns the session
#: and the assignment (``ConsumerConfig``'s check of configs unsupported under CONSUMER);
#: ``rebalance.protocol.selection`` is regroup's classic-only config.
CLASSIC_ONLY_CONFIGS: Final = frozenset(
    {
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "partition.assignment.strategy",
        "rebalance.protocol.selection",
    }
)
#: Consumer configs valid under both protocols that the member does not read (its driver
#: does): the request timeout, and ``group.protocol`` itself (which must be ``consumer``).
DRIVER_CONFIGS: Final = frozenset({"request.timeout.ms", "group.protocol"})
_INT_FIELDS: Final = frozenset(
    {
        "max_poll_interval_ms",
        "retry_backoff_ms",
        "retry_backoff_max_ms",
        "auto_commit_interval_ms",
        "regroup_heartbeat_rebalance_timeout_ms",
    }
)


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
    #: Ours (see the module docstring): the heartbeat's ``RebalanceTimeoutMs`` in place of
    #: ``max.poll.interval.ms``, any value the wire carries; ``None``: Kafka's.
    regroup_heartbeat_rebalance_timeout_ms: int | None = None

    @property
    def rebalance_timeout_ms(self) -> int:
        """What the heartbeat sends as ``RebalanceTimeoutMs``: Kafka's client sends
        ``max.poll.interval.ms`` (``ConsumerHeartbeatRequestManager``)."""
        if self.regroup_heartbeat_rebalance_timeout_ms is not None:
            return self.regroup_heartbeat_rebalance_timeout_ms
        return self.max_poll_interval_ms

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

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> ConsumerMemberConfig:
        """Read Kafka's dotted names (``max.poll.interval.ms``), as a user writes them.

        The one parser of a KIP-848 member's configs (the simulator and the test harness
        both use it). Refused, with ``InvalidMemberConfigError``: a classic-only config
        (``CLASSIC_ONLY_CONFIGS``, as Kafka refuses them under ``group.protocol=consumer``),
        a ``group.protocol`` other than ``consumer``, an unknown name, and a value of the
        wrong type. Values: integers as numbers or decimal strings; booleans as
        ``true``/``false`` in any case; a null or empty ``client.rack`` is no rack
        (Kafka's default ``client.rack`` is ``""``, sent as no RackId); a null
        ``group.instance.id`` is a dynamic member.
        """
        values: dict[str, Any] = {}
        for key, raw in properties.items():
            if key in CLASSIC_ONLY_CONFIGS:
                raise InvalidMemberConfigError(
                    f"{key} is not a consumer config with group.protocol=consumer"
                )
            if key in DRIVER_CONFIGS:
                _check_driver_config(key, raw)
                continue
            name = CONSUMER_MEMBER_CONFIGS.get(key)
            if name is None:
                raise InvalidMemberConfigError(f"unknown consumer config {key!r}")
            values[name] = _convert(key, name, raw)
        values.setdefault("group_id", "")
        return cls(**values)


def _convert(key: str, name: str, raw: Any) -> Any:
    if name in _INT_FIELDS:
        return _as_int(key, raw)
    if name == "enable_auto_commit":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text not in ("true", "false"):
            raise InvalidMemberConfigError(f"{key} must be true or false, got {raw!r}")
        return text == "true"
    if raw is not None and not isinstance(raw, str):
        # Kafka's ConfigDef: a STRING config given another type is a ConfigException.
        raise InvalidMemberConfigError(f"{key} must be a string, got {raw!r}")
    if name == "client_rack":
        return None if raw is None or raw == "" else str(raw)
    if name in ("group_instance_id", "group_remote_assignor"):
        return None if raw is None else str(raw)
    return "" if raw is None else str(raw)


def _as_int(key: str, raw: Any) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise InvalidMemberConfigError(f"{key} must be an integer, got {raw!r}") from None


def _check_driver_config(key: str, raw: Any) -> None:
    if key == "group.protocol":
        if str(raw).strip().lower() != "consumer":
            raise InvalidMemberConfigError(
                f"group.protocol must be consumer for this member, got {raw!r}"
            )
    else:
        _as_int(key, raw)


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
