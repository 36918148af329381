"""Rack information for the sticky assignors (KIP-881).

Kafka: ``AbstractStickyAssignor.RackInfo``. Rack-aware assignment is used when
some consumer has a ``client.rack``, some consumer rack hosts replicas, and not
every partition is on the same set of racks (``useRackAwareAssignment``; a
test-only switch, ``preferRackAwareLogic``, drops the last condition). Then a
consumer with a rack "mismatches" a partition with no replica on its rack; a
consumer without a rack mismatches nothing.

Racks are numbered and each partition's racks kept as a bit mask, so checks
over many partitions are array operations.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from regroup.assignors.classic.api import ClusterMetadata
from regroup.assignors.classic.sticky_engine.indexing import IntArray, TopicIndex

__all__ = ["RackInfo"]

_MAX_ARRAY_BITS = 62


class RackInfo:
    """Consumer racks by member position and replica racks by global partition index."""

    __slots__ = ("enabled", "masks", "masks_array", "member_bit", "num_consumers")

    def __init__(
        self,
        index: TopicIndex,
        metadata: ClusterMetadata,
        member_racks: Sequence[str | None],
        prefer_rack_aware_logic: bool = False,
    ) -> None:
        self.enabled = False
        self.member_bit: list[int] = [-1] * len(member_racks)
        self.masks: list[int] = []
        self.masks_array: IntArray | None = None
        self.num_consumers: IntArray | None = None
        consumer_racks = [rack for rack in member_racks if rack]
        if not consumer_racks:
            return
        bits: dict[str, int] = {}
        cache: dict[frozenset[str], int] = {}
        masks: list[int] = []
        for t, topic in enumerate(index.names):
            racks = metadata.partition_racks.get(topic, ())
            count = int(index.counts[t])
            for p in range(count):
                replica_racks = racks[p] if p < len(racks) else frozenset()
                mask = cache.get(replica_racks)
                if mask is None:
                    mask = 0
                    for rack in replica_racks:
                        mask |= 1 << bits.setdefault(rack, len(bits))
                    cache[replica_racks] = mask
                masks.append(mask)
        all_partition_racks = 0
        for mask in cache.values():
            all_partition_racks |= mask
        consumer_mask = 0
        for rack in consumer_racks:
            consumer_mask |= 1 << bits.setdefault(rack, len(bits))
        if consumer_mask & all_partition_racks == 0:
            return
        if not prefer_rack_aware_logic and all(m == all_partition_racks for m in cache.values()):
            return
        self.enabled = True
        self.masks = masks
        self.member_bit = [bits[rack] if rack else -1 for rack in member_racks]
        consumers_per_bit: dict[int, int] = {}
        for rack in consumer_racks:
            consumers_per_bit[bits[rack]] = consumers_per_bit.get(bits[rack], 0) + 1
        per_mask: dict[int, int] = {}
        for mask in cache.values():
            per_mask[mask] = sum(n for bit, n in consumers_per_bit.items() if mask >> bit & 1)
        self.num_consumers = np.array([per_mask[m] for m in masks], dtype=np.int64)
        if len(bits) <= _MAX_ARRAY_BITS:
            self.masks_array = np.array(masks, dtype=np.int64)

    def mismatch(self, member: int, partition: int) -> bool:
        """Kafka's ``racksMismatch``: the member has a rack that hosts no replica of it."""
        bit = self.member_bit[member]
        return bit >= 0 and not self.masks[partition] >> bit & 1

    def mismatches(self, member: int, partitions: IntArray) -> npt.NDArray[np.bool_]:
        """``mismatch`` for many partitions of one member, as a boolean array."""
        bit = self.member_bit[member]
        if not self.enabled or bit < 0 or len(partitions) == 0:
            return np.zeros(len(partitions), dtype=bool)
        if self.masks_array is not None:
            return np.asarray((self.masks_array[partitions] >> bit) & 1 == 0)
        masks = self.masks
        return np.array([not masks[p] >> bit & 1 for p in partitions.tolist()], dtype=bool)

    def matches(self, member: int, partition: int) -> bool:
        """The member has a rack and it hosts a replica (``nextRackConsumer``'s test)."""
        bit = self.member_bit[member]
        return bit >= 0 and bool(self.masks[partition] >> bit & 1)
