"""Fast paths for the embedded consumer protocol, for well-formed input only.

``regroup.classic.protocol`` reads and writes ``ConsumerProtocolSubscription``
and ``ConsumerProtocolAssignment`` with ``ByteReader`` / ``ByteWriter``, one
primitive per method call, and that code is the *reference*: it defines
every value and every error message. A classic group of N members decodes N
assignments and N subscriptions per rebalance (and encodes as many), so in a
large simulated group those method calls dominate the protocol's cost.

This module does the same work with ``struct.unpack_from`` / ``pack`` on
local variables, and gives up at the first irregularity (a length that runs
past the end, a negative length, text that is not UTF-8, a value that does
not fit its type) by raising ``Irregular``; the caller then runs the
reference code, which produces the result or the exact error it always
produced. On input it accepts, a fast path returns exactly what the
reference returns (the same bytes, the same values); the test suite checks
this on random and corrupted input.

The layouts are the ones documented in ``regroup.classic.protocol`` (Kafka's
``ConsumerProtocolSubscription.json`` / ``ConsumerProtocolAssignment.json``,
serialised by ``ConsumerProtocol``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from itertools import repeat
from sys import intern as _intern

from regroup.assignors.classic.api import Assignment, Subscription
from regroup.assignors.classic.sticky_engine.indexing import PartitionList
from regroup.model import NO_GENERATION, TopicPartition

__all__ = [
    "Irregular",
    "read_assignment",
    "read_subscription",
    "write_assignment",
    "write_subscription",
]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_unpack_i16 = _I16.unpack_from
_unpack_i32 = _I32.unpack_from
_pack_i16 = _I16.pack
_pack_i32 = _I32.pack
_NULL_I16 = _pack_i16(-1)
_NULL_I32 = _pack_i32(-1)
#: What ``regroup.model.topic_partition`` calls, taken here as the C callable itself so that
#: ``map`` builds a whole topic's partitions without a Python frame per partition.
_tuple_new = tuple.__new__


class Irregular(Exception):
    """The input is not plainly well-formed: let the reference code handle it."""


# --------------------------------------------------------------------------- reading


def _string(data: bytes, pos: int, end_of_data: int) -> tuple[str, int]:
    (length,) = _unpack_i16(data, pos)
    pos += 2
    end = pos + length
    if length < 0 or end > end_of_data:
        raise Irregular
    return data[pos:end].decode("utf-8"), end


def _topic_partitions(data: bytes, pos: int, end_of_data: int) -> tuple[list[TopicPartition], int]:
    """``[topic:STRING partitions:[INT32]]`` flattened, in the order written."""
    (count,) = _unpack_i32(data, pos)
    pos += 4
    if count < 0 or count > end_of_data - pos:
        raise Irregular
    out: list[TopicPartition] = []
    for _ in range(count):
        topic, pos = _string(data, pos, end_of_data)
        # One str object per topic name: the partitions of every decoded assignment then
        # compare their topics by identity in the dicts and sets keyed by partition.
        topic = _intern(topic)
        (n,) = _unpack_i32(data, pos)
        pos += 4
        end = pos + 4 * n
        if n < 0 or end > end_of_data:
            raise Irregular
        numbers = struct.unpack_from(f">{n}i", data, pos)
        pos = end
        out.extend(map(_tuple_new, repeat(TopicPartition), zip(repeat(topic), numbers)))
    return out, pos


def _nullable_bytes(data: bytes, pos: int, end_of_data: int) -> tuple[bytes | None, int]:
    (length,) = _unpack_i32(data, pos)
    pos += 4
    if length == -1:
        return None, pos
    end = pos + length
    if length < 0 or end > end_of_data:
        raise Irregular
    return data[pos:end], end


def read_assignment(data: bytes) -> Assignment:
    """An Assignment of any version >= 0, or ``Irregular``."""
    try:
        (version,) = _unpack_i16(data, 0)
        if version < 0:
            raise Irregular
        size = len(data)
        partitions, pos = _topic_partitions(data, 2, size)
        user_data, _ = _nullable_bytes(data, pos, size)
    except Exception:  # anything at all: the reference decides what it means
        raise Irregular from None
    return Assignment(partitions=tuple(partitions), user_data=user_data)


def read_subscription(data: bytes) -> Subscription:
    """A Subscription of any version >= 0, or ``Irregular``."""
    try:
        (version,) = _unpack_i16(data, 0)
        if version < 0:
            raise Irregular
        size = len(data)
        (count,) = _unpack_i32(data, 2)
        pos = 6
        if count < 0 or count > size - pos:
            raise Irregular
        topics = []
        for _ in range(count):
            topic, pos = _string(data, pos, size)
            topics.append(topic)
        user_data, pos = _nullable_bytes(data, pos, size)
        owned: tuple[TopicPartition, ...] = ()
        generation = NO_GENERATION
        rack: str | None = None
        if version >= 1:
            owned_list, pos = _topic_partitions(data, pos, size)
            owned = tuple(owned_list)
        if version >= 2:
            (generation,) = _unpack_i32(data, pos)
            pos += 4
            if generation < NO_GENERATION:
                generation = NO_GENERATION
        if version >= 3:
            (length,) = _unpack_i16(data, pos)
            pos += 2
            if length != -1:
                rack, _ = _string(data, pos - 2, size)
                rack = rack or None
    except Exception:  # anything at all: the reference decides what it means
        raise Irregular from None
    return Subscription(
        topics=tuple(topics),
        user_data=user_data,
        owned_partitions=owned,
        generation_id=generation,
        rack_id=rack,
    )


# --------------------------------------------------------------------------- writing


def _put_string(parts: list[bytes], text: str) -> None:
    raw = text.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise Irregular
    parts.append(_pack_i16(len(raw)))
    parts.append(raw)


def _put_topic_partitions(parts: list[bytes], groups: Sequence[tuple[str, list[int]]]) -> None:
    parts.append(_pack_i32(len(groups)))
    for topic, numbers in groups:
        _put_string(parts, topic)
        parts.append(_pack_i32(len(numbers)))
        if numbers:
            parts.append(struct.pack(f">{len(numbers)}i", *numbers))


def _put_nullable_bytes(parts: list[bytes], value: bytes | bytearray | memoryview | None) -> None:
    if value is None:
        parts.append(_NULL_I32)
        return
    raw = bytes(value)
    parts.append(_pack_i32(len(raw)))
    parts.append(raw)


def _java_key(text: str) -> bytes:
    # Java's String.compareTo order (UTF-16 code units); see protocol._java_string_key.
    return text.encode("utf-16-be", "surrogatepass")


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for topic, partition in partitions:
        numbers = groups.get(topic)
        if numbers is None:
            groups[topic] = [partition]
        else:
            numbers.append(partition)
    return groups


def write_subscription(subscription: Subscription, version: int) -> bytes:
    """The Subscription at ``version`` (0-3, already checked), or ``Irregular``.

    The owned partitions are grouped by topic, topics sorted as Java sorts
    strings and partitions sorted within a topic: the order the reference
    gets by sorting ``(topic, partition)`` pairs and then grouping (the key
    of a topic is unique to it, and both sorts are stable).
    """
    try:
        parts = [_pack_i16(version)]
        topics = sorted(subscription.topics, key=_java_key)
        parts.append(_pack_i32(len(topics)))
        for topic in topics:
            _put_string(parts, topic)
        _put_nullable_bytes(parts, subscription.user_data)
        if version >= 1:
            groups = _by_topic(subscription.owned_partitions)
            ordered = [(t, sorted(groups[t])) for t in sorted(groups, key=_java_key)]
            _put_topic_partitions(parts, ordered)
        if version >= 2:
            generation = subscription.generation_id
            parts.append(_pack_i32(generation if generation >= 0 else NO_GENERATION))
        if version >= 3:
            rack = subscription.rack_id
            if rack is None:
                parts.append(_NULL_I16)
            else:
                _put_string(parts, rack)
    except Exception:  # anything at all: the reference decides what it means
        raise Irregular from None
    return b"".join(parts)


def write_assignment(assignment: Assignment, version: int) -> bytes:
    """The Assignment at ``version`` (0-3, already checked), or ``Irregular``.

    Partitions grouped by topic, topics in order of first appearance.
    """
    try:
        parts = [_pack_i16(version)]
        partitions = assignment.partitions
        if isinstance(partitions, PartitionList):  # the sticky assignors' compact result
            groups = partitions.by_topic()
        else:
            groups = list(_by_topic(partitions).items())
        _put_topic_partitions(parts, groups)
        _put_nullable_bytes(parts, assignment.user_data)
    except Exception:  # anything at all: the reference decides what it means
        raise Irregular from None
    return b"".join(parts)
