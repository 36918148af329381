"""Kafka's broker log, written by regroup: the group coordinator's lines in Kafka 4.x's words.

``coordinator.CoordinatorLog`` turns the coordinator's events into the lines
Kafka's Java group coordinator logs at the same steps, rendered from the table of
Kafka's log formats (``regroup.history.formats``), each with the prefix of the
``__consumer_offsets`` partition that coordinates the group (``partition``), laid
out as Kafka's ``server.log`` is (``layout``). Sans-IO: the drivers write them
(``regroup serve --log-file``, ``regroup simulate --broker-log``).
"""

from regroup.brokerlog.coordinator import KAFKA_VERSION, CoordinatorLog, LoadedGroup, LogLine
from regroup.brokerlog.layout import PATTERN, format_line, timestamp
from regroup.brokerlog.partition import (
    DEFAULT_OFFSETS_PARTITIONS,
    OFFSETS_TOPIC,
    coordinator_partition,
    java_string_hash,
)

__all__ = [
    "DEFAULT_OFFSETS_PARTITIONS",
    "KAFKA_VERSION",
    "OFFSETS_TOPIC",
    "PATTERN",
    "CoordinatorLog",
    "LoadedGroup",
    "LogLine",
    "coordinator_partition",
    "format_line",
    "java_string_hash",
    "timestamp",
]
