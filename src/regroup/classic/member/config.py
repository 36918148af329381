"""The classic member's client configuration, by Kafka's names and with Kafka's defaults.

Kafka: ``ConsumerConfig`` / ``GroupRebalanceConfig``. Each field is a Kafka
consumer config in snake_case (``session.timeout.ms`` -> ``session_timeout_ms``);
``from_properties`` reads them by their dotted names, as a user writes them. A
configuration Kafka's consumer is not built with is refused here
(``InvalidMemberConfigError``): a value below its ``ConfigDef`` minimum, and
``heartbeat.interval.ms`` not below ``session.timeout.ms`` (Kafka's ``Heartbeat``
constructor, in the consumer's internals, throws IllegalArgumentException).

One config is ours, not Kafka's:

``rebalance.protocol.selection`` = ``dynamic`` (default) | ``static``
    How the member picks between the EAGER and the COOPERATIVE rebalance
    protocol (see ``regroup.classic.member.rebalance_protocol``).

    * ``static`` is what Apache Kafka ships: the protocol is the highest one
      that *every* configured assignor supports, fixed at construction
      (KIP-429, "Compatibility and Upgrade Path"), so Kafka's default list
      ``[range, cooperative-sticky]`` runs EAGER.
    * ``dynamic`` is KIP-726 as accepted (never merged into Kafka: KAFKA-12477):
      the protocol follows the assignor the group selected, and the default
      list becomes ``[cooperative-sticky, range]``.

    ``partition.assignment.strategy`` left unset takes the default of the mode.

A second is ours too, for tests and the soak:

``regroup.join.rebalance.timeout.ms`` = any integer (default: unset)
    The rebalance timeout this member sends in JoinGroup in place of
    ``max.poll.interval.ms``. Kafka's Java client always sends
    ``max.poll.interval.ms`` (at least 1), but the broker takes any value from
    the wire (only the session timeout is checked), and other clients or a
    hand-made request send 0 or -1: this plays such a client.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from regroup.members.errors import InvalidMemberConfigError

__all__ = [
    "DEFAULT_STRATEGY_DYNAMIC",
    "DEFAULT_STRATEGY_STATIC",
    "JOIN_GROUP_REASON_MAX_LENGTH",
    "ClassicMemberConfig",
]

#: Kafka's default ``partition.assignment.strategy`` since 3.0 (KIP-726 as shipped).
DEFAULT_STRATEGY_STATIC: tuple[str, ...] = ("range", "cooperative-sticky")
#: KIP-726 as accepted: cooperative-sticky first, range as the fallback for old members.
DEFAULT_STRATEGY_DYNAMIC: tuple[str, ...] = ("cooperative-sticky", "range")
#: Kafka: ``JoinGroupRequest.maybeTruncateReason`` keeps the first 255 characters.
JOIN_GROUP_REASON_MAX_LENGTH = 255

_SELECTION_MODES = ("static", "dynamic")


@dataclass(frozen=True, slots=True)
class ClassicMemberConfig:
    """A classic consumer's group configs (Kafka 3.x/4.x defaults)."""

    group_id: str = ""
    client_id: str = ""
    #: KIP-345 static membership; ``None``: a dynamic member.
    group_instance_id: str | None = None
    #: KIP-881: sent as the Subscription's rack id; ``""``: none.
    client_rack: str = ""
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    #: Also the rebalance timeout sent in JoinGroup (Kafka: ``rebalanceTimeoutMs``).
    max_poll_interval_ms: int = 300000
    request_timeout_ms: int = 30000
    retry_backoff_ms: int = 100
    #: ``None``: the default of ``rebalance_protocol_selection``. Protocol names
    #: (``range``) or Kafka class names (``org.apache.kafka.clients.consumer.RangeAssignor``).
    partition_assignment_strategy: tuple[str, ...] | None = None
    #: Recorded for the driver: the member does not own fetch positions; the driver
    #: commits through ``ClassicMember.commit``.
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    #: Ours (see the module docstring): ``dynamic`` (KIP-726 as accepted) or ``static`` (Kafka).
    rebalance_protocol_selection: str = "dynamic"
    #: Kafka's ``metrics.sample.window.ms`` / ``metrics.num.samples``: the windows of the
    #: avg / max / rate metrics.
    metrics_sample_window_ms: int = 30000
    metrics_num_samples: int = 2
    #: Ours (see the module docstring): the JoinGroup rebalance timeout in place of
    #: ``max.poll.interval.ms``, any value the wire carries; ``None``: Kafka's.
    regroup_join_rebalance_timeout_ms: int | None = None

    def __post_init__(self) -> None:
        if self.rebalance_protocol_selection not in _SELECTION_MODES:
            raise InvalidMemberConfigError(
                "rebalance.protocol.selection must be 'static' or 'dynamic', got "
                f"{self.rebalance_protocol_selection!r}"
            )
        for name in (
            "session_timeout_ms",
            "heartbeat_interval_ms",
            "max_poll_interval_ms",
            "request_timeout_ms",
            "metrics_sample_window_ms",
            "metrics_num_samples",
        ):
            if getattr(self, name) < 1:
                raise InvalidMemberConfigError(f"{name.replace('_', '.')} must be >= 1")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            # Kafka: the ``Heartbeat`` constructor (consumer internals) throws
            # IllegalArgumentException, so the KafkaConsumer is never built.
            raise InvalidMemberConfigError(
                f"heartbeat.interval.ms={self.heartbeat_interval_ms} must be lower than "
                f"session.timeout.ms={self.session_timeout_ms} (Kafka's consumer refuses it)"
            )
        if self.retry_backoff_ms < 0:
            raise InvalidMemberConfigError("retry.backoff.ms must be >= 0")
        if self.group_instance_id is not None and not self.group_instance_id.strip():
            # Kafka: JoinGroupRequest.validateGroupInstanceId refuses an empty id.
            raise InvalidMemberConfigError("group.instance.id must not be empty")
        if (
            self.partition_assignment_strategy is not None
            and not self.partition_assignment_strategy
        ):
            raise InvalidMemberConfigError("partition.assignment.strategy must not be empty")

    @property
    def assignment_strategy(self) -> tuple[str, ...]:
        """The configured assignors in preference order (the mode's default if unset)."""
        if self.partition_assignment_strategy is not None:
            return self.partition_assignment_strategy
        if self.rebalance_protocol_selection == "static":
            return DEFAULT_STRATEGY_STATIC
        return DEFAULT_STRATEGY_DYNAMIC

    @property
    def rebalance_timeout_ms(self) -> int:
        """Kafka sends ``max.poll.interval.ms`` as the JoinGroup rebalance timeout."""
        if self.regroup_join_rebalance_timeout_ms is not None:
            return self.regroup_join_rebalance_timeout_ms
        return self.max_poll_interval_ms

    @property
    def join_group_request_timeout_ms(self) -> int:
        """Kafka: a JoinGroup may wait a whole rebalance, so its timeout is
        ``max(request.timeout.ms, rebalance timeout + 5000)``."""
        return max(self.request_timeout_ms, self.max_poll_interval_ms + 5000)

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> ClassicMemberConfig:
        """Read Kafka's dotted names (``session.timeout.ms``); unknown names are refused."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, raw in properties.items():
            name = key.replace(".", "_")
            field = fields.get(name)
            if field is None:
                raise InvalidMemberConfigError(f"unknown consumer config {key!r}")
            values[name] = _convert(key, name, raw)
        return cls(**values)


_INT_FIELDS = frozenset(
    {
        "session_timeout_ms",
        "heartbeat_interval_ms",
        "max_poll_interval_ms",
        "request_timeout_ms",
        "retry_backoff_ms",
        "auto_commit_interval_ms",
        "metrics_sample_window_ms",
        "metrics_num_samples",
        "regroup_join_rebalance_timeout_ms",
    }
)


def _convert(key: str, name: str, raw: Any) -> Any:
    if name in _INT_FIELDS:
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise InvalidMemberConfigError(f"{key} must be an integer, got {raw!r}") from None
    if name == "enable_auto_commit":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text not in ("true", "false"):
            raise InvalidMemberConfigError(f"{key} must be true or false, got {raw!r}")
        return text == "true"
    if name == "partition_assignment_strategy":
        if not isinstance(raw, str | list | tuple):
            raise InvalidMemberConfigError(f"{key} must be a list of names, got {raw!r}")
        items = raw.split(",") if isinstance(raw, str) else list(raw)
        return tuple(str(item).strip() for item in items if str(item).strip())
    if raw is not None and not isinstance(raw, str):
        # Kafka's ConfigDef: a STRING config given another type is a ConfigException.
        raise InvalidMemberConfigError(f"{key} must be a string, got {raw!r}")
    if name == "group_instance_id":
        return None if raw is None else str(raw)
    if name == "client_rack":
        # A null client.rack is no rack, as Kafka's default "" is.
        return "" if raw is None else str(raw)
    return str(raw)
