"""The classic assignors by name, and Kafka's class names for them.

A consumer configures ``partition.assignment.strategy`` with class names
(``org.apache.kafka.clients.consumer.RangeAssignor``); members vote in
JoinGroup with the assignors' ``name()`` (``range``). Both resolve here.
"""

from __future__ import annotations

from collections.abc import Callable

from regroup.assignors.classic.api import ConsumerPartitionAssignor
from regroup.assignors.classic.cooperative_sticky import CooperativeStickyAssignor
from regroup.assignors.classic.range_assignor import RangeAssignor
from regroup.assignors.classic.round_robin import RoundRobinAssignor
from regroup.assignors.classic.sticky import StickyAssignor
from regroup.assignors.errors import UnknownAssignorError

__all__ = [
    "CLASSIC_ASSIGNOR_NAMES",
    "KAFKA_CLASS_NAMES",
    "create_classic_assignor",
    "resolve_classic_assignor_name",
]

_FACTORIES: dict[str, Callable[[], ConsumerPartitionAssignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}

#: The assignors' protocol names, in Kafka's documentation order.
CLASSIC_ASSIGNOR_NAMES: tuple[str, ...] = tuple(_FACTORIES)

#: Kafka's fully qualified class names -> protocol names.
KAFKA_CLASS_NAMES: dict[str, str] = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def resolve_classic_assignor_name(name_or_class: str) -> str:
    """The protocol name for a protocol name or a Kafka class name."""
    name = KAFKA_CLASS_NAMES.get(name_or_class, name_or_class)
    if name not in _FACTORIES:
        raise UnknownAssignorError(name_or_class, [*CLASSIC_ASSIGNOR_NAMES, *KAFKA_CLASS_NAMES])
    return name


def create_classic_assignor(name_or_class: str) -> ConsumerPartitionAssignor:
    """A fresh assignor instance (one per member: ``sticky`` keeps per-member state)."""
    return _FACTORIES[resolve_classic_assignor_name(name_or_class)]()
