"""A simulated consumer's properties, by their Kafka names, turned into member configurations.

A consumer is configured as a Kafka application configures its ``KafkaConsumer``:
a mapping of Kafka config names (``max.poll.interval.ms``, ``group.remote.assignor``
...). Each member reads them itself (``ClassicMemberConfig.from_properties``,
``ConsumerMemberConfig.from_properties``: the KIP-848 member refuses the configs the
coordinator owns, ``CLASSIC_ONLY_CONFIGS``, as Kafka does); the simulation adds its
group id and each consumer's client id. ``settings`` builds one configuration before
the run so that a bad config fails the command line, and ``consumer`` builds one per
incarnation: both read the names here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from regroup.consumer.member.config import CLASSIC_ONLY_CONFIGS, ConsumerMemberConfig

__all__ = [
    "CLASSIC_ONLY_CONFIGS",
    "CONSUMER_ONLY_CONFIGS",
    "PROCESS_CONFIGS",
    "as_bool",
    "consumer_member_config",
]

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
    """A ``ConsumerMemberConfig`` from Kafka-named properties (``ValueError`` if refused).

    The group id and the client id are the simulation's: a consumer config naming them
    is refused rather than silently overridden.
    """
    for key in ("group.id", "client.id"):
        if key in props:
            raise ValueError(f"{key} is set by the simulation, not by a consumer config")
    return ConsumerMemberConfig.from_properties(
        {**props, "group.id": group_id, "client.id": client_id}
    )
