"""The server's resource limits, by Kafka's broker config names and with Kafka's defaults.

- ``connections.max.idle.ms`` (600000): a connection with no bytes read or
  written for that long, and no request in flight, is closed (Kafka's
  ``Selector`` idle expiry), so a half-sent frame no longer holds it forever;
- ``max.connections`` (2147483647): over the limit, a new connection waits
  for a slot, as with Kafka's acceptor (``regroup.server.net.acceptor``);
- ``socket.request.max.bytes`` (104857600): a larger frame closes its connection;
- ``message.max.bytes`` (1048588): a larger record batch is MESSAGE_TOO_LARGE;
- ``fetch.max.bytes`` (57671680): the most record bytes in one Fetch response,
  whatever the request's ``max_bytes`` (KIP-74: the first batch of the first
  partition with data is returned even when larger);
- ``offsets.retention.check.interval.ms`` (600000): how often expired offsets
  and empty groups are removed (``offsets.retention.minutes``);
- ``offsets.topic.num.partitions`` (50): the partitions of ``__consumer_offsets``,
  which decide each group's coordinator among several brokers (``regroup.server.cluster``);
- ``connection.failed.authentication.delay.ms`` (100, may be 0): a failed SASL
  login is answered, and its connection closed, only after this delay (Kafka's
  ``SocketServerConfigs.FAILED_AUTHENTICATION_DELAY_MS_CONFIG``; its ``Selector``
  holds the failure response and the close that long), which slows a client
  trying names or passwords.

Running out of file descriptors (``EMFILE``/``ENFILE`` while accepting) is one
rate-limited line naming the limit (``regroup.server.net.acceptor``, Rule 3), not a
traceback a second, and the server goes on serving the connections it has.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ServerLimits"]

INT32_MAX = 2_147_483_647
#: The limits Kafka allows to be 0 (``atLeast(0)`` in its config definition).
_MAY_BE_ZERO = frozenset({"connection_failed_authentication_delay_ms"})


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """The limits of the table above (field = Kafka name with ``_`` for ``.``)."""

    connections_max_idle_ms: int = 600_000
    max_connections: int = INT32_MAX
    socket_request_max_bytes: int = 104_857_600
    message_max_bytes: int = 1_048_588
    fetch_max_bytes: int = 57_671_680
    offsets_retention_check_interval_ms: int = 600_000
    connection_failed_authentication_delay_ms: int = 100
    #: Partitions of ``__consumer_offsets``: a group's coordinator is the leader of partition
    #: ``abs(hashCode(groupId)) % offsets.topic.num.partitions`` (``regroup.server.cluster``).
    offsets_topic_num_partitions: int = 50

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            least = 0 if f.name in _MAY_BE_ZERO else 1
            if getattr(self, f.name) < least:
                raise ValueError(f"{f.name.replace('_', '.')} must be at least {least}")

    @classmethod
    def kafka_names(cls) -> dict[str, str]:
        return {f.name.replace("_", "."): f.name for f in dataclasses.fields(cls)}

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> ServerLimits:
        """Kafka-named properties (each one of ``kafka_names``) as limits; ValueError if bad."""
        names = cls.kafka_names()
        values: dict[str, int] = {}
        for key, raw in properties.items():
            try:
                values[names[key]] = int(raw)
            except ValueError:
                raise ValueError(f"{key} must be an integer, got {raw!r}") from None
        return cls(**values)
