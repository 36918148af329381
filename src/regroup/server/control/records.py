"""Test records as a producer would send them: values, keys, headers, and where each goes.

``Control.produce`` writes records straight into a partition log; this module
turns what a test gives (``str`` or ``bytes`` values, optional keys and
headers) into the bytes of a record batch's fields, and picks each record's
partition as Kafka's producer does:

* an explicit partition wins;
* a keyed record goes where Kafka's default partitioner sends it,
  ``toPositive(murmur2(key)) % partitions`` (``BuiltInPartitioner.partitionForKey``
  and ``Utils.murmur2``/``Utils.toPositive`` in Kafka's clients), so a test
  that produces here and a real producer agree on which partition a key is in;
* a record without a key goes round-robin over the topic's partitions (a
  producer's sticky partitioner would fill one batch at a time; round-robin
  spreads a test's few records over every partition, which tests want).

Headers are Kafka's: a string name and a ``bytes`` value (or ``None``), in
order, names may repeat; given as a mapping or as a list of pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HeaderList",
    "ProducedRecord",
    "RecordValueError",
    "build_records",
    "murmur2",
    "partition_for_key",
]

#: A record's headers, in order: (name, value).
HeaderList = tuple[tuple[str, bytes | None], ...]

_MASK = 0xFFFFFFFF
_M = 0x5BD1E995
_SEED = 0x9747B28C


class RecordValueError(ValueError):
    """A value, key or header a record cannot have."""


@dataclass(frozen=True, slots=True)
class ProducedRecord:
    """One record to append: its value, key and headers as bytes."""

    value: bytes | None
    key: bytes | None = None
    headers: HeaderList = ()


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: the 32-bit MurmurHash2 of ``data`` (seed 0x9747b28c), as
    a signed 32-bit int, computed as Java's int arithmetic does (wrapping)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """Kafka's default partitioner for a keyed record: ``toPositive(murmur2(key)) % n``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def _bytes(value: Any, what: str, *, nullable: bool) -> bytes | None:
    if value is None and nullable:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    allowed = "str, bytes or None" if nullable else "str or bytes"
    raise RecordValueError(f"a record {what} is a {allowed}, got {type(value).__name__}")


def _headers(given: Any) -> HeaderList:
    if given is None:
        return ()
    pairs: Iterable[Any] = given.items() if isinstance(given, Mapping) else given
    out = []
    for pair in pairs:
        if isinstance(pair, str | bytes) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise RecordValueError(
                f"a header is a (name, value) pair, got {pair!r}: give headers as a "
                'mapping {"name": "value"} or a list of pairs'
            )
        name, value = pair
        if not isinstance(name, str):
            raise RecordValueError(f"a header name is a str, got {type(name).__name__}")
        out.append((name, _bytes(value, "header value", nullable=True)))
    return tuple(out)


def build_records(
    values: Sequence[Any],
    keys: Sequence[Any] | None = None,
    headers: Sequence[Any] | None = None,
) -> list[ProducedRecord]:
    """The records of ``values`` with ``keys[i]`` and ``headers[i]`` (each list, when
    given, as long as ``values``)."""
    if isinstance(values, str | bytes):
        raise RecordValueError("records is a list of values, not one value")
    for name, given in (("keys", keys), ("headers", headers)):
        if given is not None and (isinstance(given, str | bytes) or len(given) != len(values)):
            raise RecordValueError(
                f"{name} needs one entry per record ({len(values)}), got {given!r}"
            )
    return [
        ProducedRecord(
            value=_bytes(value, "value", nullable=False),
            key=None if keys is None else _bytes(keys[i], "key", nullable=True),
            headers=() if headers is None else _headers(headers[i]),
        )
        for i, value in enumerate(values)
    ]
