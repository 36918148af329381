"""The Java iteration orders that Kafka 4.0's server-side assignors depend on.

Kafka's uniform assignor walks Java hash maps and hash sets, so its output for
ties depends on their iteration order. The orders reproduced here, read from the
4.0 sources (``group-coordinator``, package ``...coordinator.group``):

* **members** -- ``GroupSpec.memberIds()`` is the key set of the map that
  ``TargetAssignmentBuilder.build`` fills: ``new HashMap<>()`` (default
  capacity 16, doubled past 0.75 load) with one ``put`` per member. Its order is
  therefore the Java ``HashMap`` order of the member ids under
  ``String.hashCode``. (Kafka puts the members being removed too and removes
  them afterwards; the spec here lists only the final members, so a removal
  that crossed a resize threshold is not modelled.) Kafka's own assignor tests
  use a ``TreeMap`` of the ids ``A``, ``B``, ``C``; for those ids the two
  orders coincide.
* **the homogeneous topic set** -- ``UniformHomogeneousAssignmentBuilder``
  copies the first member's topic ids into ``new HashSet<>(collection)``, whose
  capacity is ``max(size / 0.75 + 1, 16)`` rounded up to a power of two (the
  JDK 17 rule; JDK 19+ sizes it ``ceil(size / 0.75)``, which differs only when
  that is exactly a power of two), hashed by ``Uuid.hashCode``.
* **a member's partitions of one topic** -- a ``HashSet<Integer>`` built from a
  collection (``Assignment.fromRecord``; Kafka's test helper
  ``mkTopicAssignment``), hashed by the integer itself.

Java's ``HashMap`` order is (bucket at the final capacity, insertion order);
``regroup.assignors.java_order`` has the general rule. This module adds the
vectorised ``String.hashCode`` that makes the member order cheap for 10,000
members.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

import numpy as np

from regroup.assignors.consumer.topic_index import uuid_sort_key
from regroup.assignors.java_order import (
    hash_set_capacity_for,
    java_hashmap_order,
    java_string_hash,
    table_size_for,
)
from regroup.model import Uuid

__all__ = [
    "java_string_hashes",
    "member_iteration_order",
    "partition_set_order",
    "topic_set_order",
]

_DEFAULT_CAPACITY = 16
_MASK32 = np.uint64(0xFFFFFFFF)


def java_string_hashes(texts: Sequence[str]) -> np.ndarray:
    """``String.hashCode()`` of every text, as unsigned 32-bit values (``uint64`` array).

    Computed as one matrix product modulo 2**32: each text is left-padded with
    NUL code units (which add nothing to the polynomial) to a common length L
    and multiplied by the powers ``31**(L-1) .. 31**0``; unsigned 64-bit
    wrap-around keeps the low 32 bits exact. Texts with characters outside the
    Basic Multilingual Plane (two UTF-16 units) fall back to the scalar hash.
    """
    count = len(texts)
    if count == 0:
        return np.zeros(0, dtype=np.uint64)
    width = max(len(text) for text in texts)
    if width == 0:
        return np.zeros(count, dtype=np.uint64)
    data = "".join(text.rjust(width, "\0") for text in texts).encode("utf-16-be")
    if len(data) != 2 * width * count:
        return np.array([java_string_hash(text) & 0xFFFFFFFF for text in texts], dtype=np.uint64)
    units = np.frombuffer(data, dtype=">u2").astype(np.uint64).reshape(count, width)
    powers = np.ones(width, dtype=np.uint64)
    for column in range(width - 2, -1, -1):
        powers[column] = (int(powers[column + 1]) * 31) & 0xFFFFFFFF
    with np.errstate(over="ignore"):
        hashes = (units * powers).sum(axis=1, dtype=np.uint64)
    result: np.ndarray = hashes & _MASK32
    return result


def _final_capacity(size: int, initial_capacity: int) -> int:
    capacity = table_size_for(initial_capacity)
    while size > capacity * 0.75:
        capacity <<= 1
    return capacity


def member_iteration_order(member_ids: Iterable[str]) -> list[str]:
    """The member ids in the order Kafka's ``GroupSpecImpl.memberIds()`` yields them.

    A ``HashMap`` filled by ``put`` from default capacity; ``member_ids`` gives
    the insertion order, which only breaks ties inside a bucket.
    """
    ids = list(dict.fromkeys(member_ids))
    if len(ids) < 2:
        return ids
    hashes = _member_hashes(ids)
    mask = np.uint64(_final_capacity(len(ids), _DEFAULT_CAPACITY) - 1)
    buckets = (hashes ^ (hashes >> np.uint64(16))) & mask
    order = np.argsort(buckets, kind="stable")
    return [ids[i] for i in order.tolist()]


#: ``String.hashCode`` of member ids seen lately (a pure function's memo: a group's
#: members stay while its target is recomputed at every epoch, so each id is hashed
#: once, not once per epoch). Emptied when it outgrows ``_HASH_MEMO_LIMIT``.
_HASH_MEMO: dict[str, int] = {}
_HASH_MEMO_LIMIT = 1 << 17


def _member_hashes(ids: list[str]) -> np.ndarray:
    """``java_string_hashes(ids)``, through ``_HASH_MEMO``."""
    memo = _HASH_MEMO
    missing = [member_id for member_id in ids if member_id not in memo]
    if missing:
        if len(memo) + len(missing) > _HASH_MEMO_LIMIT:
            memo.clear()
            missing = ids
        memo.update(zip(missing, java_string_hashes(missing).tolist(), strict=True))
    return np.fromiter(map(memo.__getitem__, ids), dtype=np.uint64, count=len(ids))


def topic_set_order(topic_ids: Collection[Uuid]) -> list[Uuid]:
    """Topic ids in the order of ``new HashSet<>(topicIds)`` (ties in ``Uuid`` order)."""
    return java_hashmap_order(
        sorted(topic_ids, key=uuid_sort_key),
        Uuid.java_hash_code,
        hash_set_capacity_for(len(topic_ids)),
    )


def partition_set_order(partitions: Collection[int]) -> list[int]:
    """Partition numbers in the order of ``new HashSet<>(partitions)``.

    ``Integer.hashCode`` is the value itself, so while every partition is below
    the capacity this is ascending order (ties in ascending order).
    """
    ordered = sorted(partitions)
    if not ordered:
        return ordered
    capacity = table_size_for(hash_set_capacity_for(len(ordered)))
    if ordered[-1] < capacity:
        return ordered
    mask = capacity - 1
    return sorted(ordered, key=lambda p: ((p ^ (p >> 16)) & mask, p))
