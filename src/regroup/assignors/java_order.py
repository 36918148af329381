"""The iteration order of Java's ``HashMap`` / ``HashSet``, reproduced.

Some of Kafka's assignor outputs depend on the order in which a Java hash map
yields its keys (member ids, topic ids). Kafka's own tests assert those
outputs, so to give "the same output as Kafka for the same input" we iterate in
the same order.

How ``java.util.HashMap`` orders its entries (OpenJDK 8+):

* the bucket of a key is ``spread(h) & (capacity - 1)`` where ``h`` is the key's
  ``hashCode()`` and ``spread(h) = h ^ (h >>> 16)``;
* iteration walks buckets 0..capacity-1, and within a bucket follows insertion
  order (resizing splits a bucket in two but keeps the relative order, so the
  final order is (bucket at the final capacity, insertion index));
* capacity is a power of two, at least 16 by default, doubled whenever the
  size exceeds 0.75 x capacity; a map created with an initial capacity (or
  copied from another collection) starts at the power of two at or above it.

Buckets that Java turns into trees (8+ colliding keys in a table of 64+) keep
the same linked order for entries present at treeification; that rare case is
not modelled further.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

__all__ = [
    "hash_set_capacity_for",
    "java_hashmap_order",
    "java_string_hash",
    "table_size_for",
]

K = TypeVar("K")

_DEFAULT_CAPACITY = 16
_MAX_CAPACITY = 1 << 30


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def java_string_hash(text: str) -> int:
    """``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 units, as int32."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _to_int32(h)


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the power of two at or above ``capacity`` (at least 1)."""
    size = 1
    while size < capacity and size < _MAX_CAPACITY:
        size <<= 1
    return size


def hash_set_capacity_for(collection_size: int) -> int:
    """The initial capacity of ``new HashSet<>(collection)`` / ``new HashMap<>(map)``."""
    return max(int(collection_size / 0.75) + 1, _DEFAULT_CAPACITY)


def _final_capacity(size: int, initial_capacity: int) -> int:
    capacity = table_size_for(initial_capacity)
    while size > capacity * 0.75 and capacity < _MAX_CAPACITY:
        capacity <<= 1
    return capacity


def java_hashmap_order(
    keys: Iterable[K],
    hash_code: Callable[[K], int],
    initial_capacity: int = _DEFAULT_CAPACITY,
) -> list[K]:
    """The keys in the order a Java ``HashMap`` filled in this order would yield them.

    ``keys`` is the insertion order (duplicates keep their first position, as a
    ``put`` of an existing key does not move it); ``hash_code`` is the key's Java
    ``hashCode()``.
    """
    unique: dict[K, int] = {}
    for key in keys:
        unique.setdefault(key, len(unique))
    capacity = _final_capacity(len(unique), initial_capacity)
    mask = capacity - 1

    def bucket(key: K) -> int:
        h = hash_code(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return sorted(unique, key=lambda key: (bucket(key), unique[key]))
