"""Which ``__consumer_offsets`` partition, hence which broker, coordinates a group.

Kafka hashes the group id with Java's ``String.hashCode`` and takes it modulo
``offsets.topic.num.partitions`` (default 50): ``Utils.abs(groupId.hashCode()) %
numPartitions`` (``GroupCoordinatorService.partitionFor``; the Scala
``GroupMetadataManager.partitionFor`` of Kafka 2.x-3.x is the same). The
partition's leader is the group's coordinator, and the Java coordinator names
that partition in the prefix of every line it logs.

``String.hashCode`` is ``s[0]*31^(n-1) + ... + s[n-1]`` over the string's UTF-16
code units in 32-bit two's-complement arithmetic; ``Utils.abs`` maps
``Integer.MIN_VALUE`` to 0 (``Math.abs`` would leave it negative).
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_OFFSETS_PARTITIONS",
    "OFFSETS_TOPIC",
    "coordinator_partition",
    "java_string_hash",
]

#: Kafka's internal topic of group metadata and committed offsets.
OFFSETS_TOPIC = "__consumer_offsets"
#: ``offsets.topic.num.partitions``'s default.
DEFAULT_OFFSETS_PARTITIONS = 50

_INT_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` of ``text``: a signed 32-bit int over its UTF-16 units."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def coordinator_partition(group_id: str, partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (Kafka ``partitionFor``)."""
    if partitions < 1:
        raise ValueError(f"offsets.topic.num.partitions must be at least 1, got {partitions}")
    h = java_string_hash(group_id)
    return (0 if h == _INT_MIN else abs(h)) % partitions
