"""KIP-848 server-side assignors by name (``group.consumer.assignors``).

Kafka accepts short names or class names in ``group.consumer.assignors``;
both resolve here.
"""

from __future__ import annotations

from collections.abc import Callable

from regroup.assignors.consumer.api import ConsumerGroupPartitionAssignor
from regroup.assignors.consumer.range_assignor import RangeAssignor
from regroup.assignors.consumer.uniform import UniformAssignor
from regroup.assignors.errors import UnknownAssignorError

__all__ = ["KAFKA_CLASS_NAMES", "SERVER_ASSIGNOR_NAMES", "create_server_assignor"]

_FACTORIES: dict[str, Callable[[], ConsumerGroupPartitionAssignor]] = {
    "uniform": UniformAssignor,
    "range": RangeAssignor,
}

#: Names in the default order of ``group.consumer.assignors`` (the first is the default).
SERVER_ASSIGNOR_NAMES: tuple[str, ...] = tuple(_FACTORIES)

KAFKA_CLASS_NAMES: dict[str, str] = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def create_server_assignor(name_or_class: str) -> ConsumerGroupPartitionAssignor:
    """The server-side assignor with this name or Kafka class name."""
    name = KAFKA_CLASS_NAMES.get(name_or_class, name_or_class)
    factory = _FACTORIES.get(name)
    if factory is None:
        raise UnknownAssignorError(name_or_class, [*SERVER_ASSIGNOR_NAMES, *KAFKA_CLASS_NAMES])
    return factory()
