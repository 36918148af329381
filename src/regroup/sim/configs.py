"""A simulated consumer's properties, by their Kafka names, turned into member configurations.

A consumer is configured as a Kafka application configures its ``KafkaConsumer``:
a mapping of Kafka config names (``max.poll.interval.ms``, ``group.remote.assignor``
...). The classic member reads them itself (``ClassicMemberConfig.from_properties``);
a ``group.protocol=consumer`` member takes the ones below, and refuses the configs the
KIP-848 coordinator owns, as Kafka does. ``settings`` builds one configuration before
the run so that a bad config fails the command line, and ``consumer`` builds one per
incarnation: both read the names here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from regroup.consumer.member.config import ConsumerMemberConfig

__all__ = [
    "CLASSIC_ONLY_CONFIGS",
    "CONSUMER_ONLY_CONFIGS",
    "CONSUMER_PROTOCOL_CONFIGS",
    "PROCESS_CONFIGS",
    "as_bool",
    "consumer_member_config",
]

#: The consumer configs a ``group.protocol=consumer`` member takes (Kafka names).
CONSUMER_PROTOCOL_CONFIGS: Final = {
    "client.rack": "client_rack",
    "max.poll.interval.ms": "max_poll_interval_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "retry.backoff.max.ms": "retry_backoff_max_ms",
    "group.remote.assignor": "group_remote_assignor",
    "enable.auto.commit": "enable_auto_commit",
    "auto.commit.interval.ms": "auto_commit_interval_ms",
}
#: Kafka refuses these with ``group.protocol=consumer`` (the coordinator owns them).
CLASSIC_ONLY_CONFIGS: Final = frozenset(
    {
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "partition.assignment.strategy",
        "rebalance.protocol.selection",
    }
)
#: KIP-848 configs a ``group.protocol=classic`` consumer does not take.
CONSUMER_ONLY_CONFIGS: Final = frozenset({"group.remote.assignor"})
#: Configs of the simulated process itself, valid under both protocols (``group.protocol``
#: picks the member: ``classic`` or ``consumer``; default: the simulation's protocol).
PROCESS_CONFIGS: Final = frozenset({"request.timeout.ms", "group.protocol"})


def as_bool(key: str, value: Any) -> bool:
    """A boolean config: ``True``/``False`` or the strings ``true``/``false``, any case."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return text == "true"


def consumer_member_config(
    group_id: str, client_id: str, props: Mapping[str, Any]
) -> ConsumerMemberConfig:
    """A ``ConsumerMemberConfig`` from Kafka-named properties (``ValueError`` if refused)."""
    kwargs: dict[str, Any] = {"group_id": group_id, "client_id": client_id}
    for key, value in props.items():
        if key in PROCESS_CONFIGS or key == "group.instance.id":
            continue
        if key in CLASSIC_ONLY_CONFIGS:
            raise ValueError(f"{key} is not a consumer config with group.protocol=consumer")
        name = CONSUMER_PROTOCOL_CONFIGS.get(key)
        if name is None:
            raise ValueError(f"unknown consumer config {key!r}")
        if name == "enable_auto_commit":
            kwargs[name] = as_bool(key, value)
        elif name == "client_rack":
            # null or "" is no rack (Kafka's default client.rack is "", sent as no RackId).
            kwargs[name] = None if value is None or value == "" else str(value)
        elif name == "group_remote_assignor":
            kwargs[name] = None if value is None else str(value)
        else:
            try:
                kwargs[name] = int(value)
            except (TypeError, ValueError):
                raise ValueError(f"{key} must be an integer, got {value!r}") from None
    instance = props.get("group.instance.id")
    kwargs["group_instance_id"] = None if instance is None else str(instance)
    return ConsumerMemberConfig(**kwargs)
