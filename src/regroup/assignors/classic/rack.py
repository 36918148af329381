"""When the classic assignors go rack-aware (KIP-881).

Kafka's ``AbstractPartitionAssignor.useRackAwareAssignment``: rack-aware
assignment is used only when

1. at least one consumer reports a non-empty ``client.rack``; and
2. some consumer rack is a rack that hosts replicas; and
3. not every partition has replicas on the same set of racks (if every
   partition is on every rack, any assignment is already rack-local, and the
   rack-aware logic would only cost time).

Replicas on brokers without a rack are ignored; all replicas count, not only
the in-sync ones. ``range`` applies the gate per topic, the sticky assignors to
all subscribed partitions at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

__all__ = ["consumer_racks", "use_rack_aware_assignment"]


def consumer_racks(rack_ids: Iterable[str | None]) -> frozenset[str]:
    """The non-empty racks among consumers' ``client.rack`` values."""
    return frozenset(rack for rack in rack_ids if rack)


def use_rack_aware_assignment(
    consumer_rack_set: Set[str], racks_per_partition: Iterable[frozenset[str]]
) -> bool:
    """Kafka's three-rule gate (see the module docstring)."""
    if not consumer_rack_set:
        return False
    per_partition = list(racks_per_partition)
    all_partition_racks: set[str] = set()
    for racks in per_partition:
        all_partition_racks.update(racks)
    if consumer_rack_set.isdisjoint(all_partition_racks):
        return False
    return any(racks != all_partition_racks for racks in per_partition)
