"""The sticky assignors' ``userData`` bytes, exactly as Kafka writes and reads them.

``sticky`` (Kafka: ``StickyAssignor.STICKY_ASSIGNOR_USER_DATA_V1``)::

    previous_assignment: ARRAY of (topic: STRING, partitions: ARRAY of INT32)
    generation: INT32                       (absent in V0)

Kafka groups the member's partitions by topic with
``CollectionUtils.groupPartitionsByTopic``, a ``java.util.HashMap``: topics come
out in that map's iteration order (reproduced with ``java_order``), and each
topic's partitions in the order of the member's assignment. Reading tries V1,
then V0 (no generation); bytes that parse as neither mean "no previous
assignment" with generation -1. A reader does not require the input to end
where the structure ends (Kafka's ``Schema.read`` does not either). Strings
are decoded leniently, as Java's ``new String(bytes, UTF_8)`` replaces
malformed input instead of failing.

``cooperative-sticky`` (Kafka: ``COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0``):
one INT32, the generation of the member's last assignment (-1 before any).
Unreadable bytes mean generation -1.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import overload

from regroup.assignors.java_order import java_hashmap_order, java_string_hash
from regroup.model import TopicPartition
from regroup.model.wire import ByteReader, ByteWriter, WireFormatError

__all__ = [
    "DEFAULT_GENERATION",
    "TopicGroups",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
]

#: Kafka: ``AbstractStickyAssignor.DEFAULT_GENERATION``.
DEFAULT_GENERATION = -1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I32_I32_I16 = struct.Struct(">iih")


class TopicGroups(Sequence[TopicPartition]):
    """Partitions kept grouped by topic, as the sticky user data carries them.

    A ``Sequence[TopicPartition]`` (flattened in the stored order) that keeps
    the raw UTF-8 topic names, each group's size and all partition numbers in
    flat lists, so the engine can map them to partition indices with array
    operations instead of building a tuple per partition.
    """

    __slots__ = ("_flat", "numbers", "raw_topics", "sizes")

    def __init__(self, raw_topics: list[bytes], sizes: list[int], numbers: list[int]) -> None:
        self.raw_topics = raw_topics
        self.sizes = sizes
        self.numbers = numbers
        self._flat: list[TopicPartition] | None = None

    @property
    def groups(self) -> list[tuple[str, list[int]]]:
        """(topic, partitions) in the stored order."""
        out: list[tuple[str, list[int]]] = []
        start = 0
        for raw, size in zip(self.raw_topics, self.sizes, strict=True):
            out.append((raw.decode("utf-8", "replace"), self.numbers[start : start + size]))
            start += size
        return out

    def _partitions(self) -> list[TopicPartition]:
        if self._flat is None:
            self._flat = [TopicPartition(t, p) for t, ps in self.groups for p in ps]
        return self._flat

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, item: int) -> TopicPartition: ...

    @overload
    def __getitem__(self, item: slice) -> list[TopicPartition]: ...

    def __getitem__(self, item: int | slice) -> TopicPartition | list[TopicPartition]:
        return self._partitions()[item]

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._partitions())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"TopicGroups({list(self)!r})"


def _group_by_topic(partitions: Sequence[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Kafka's ``groupPartitionsByTopic``: a ``HashMap`` topic -> partitions, in its order."""
    grouped: dict[str, list[int]] = {}
    for topic, number in partitions:
        numbers = grouped.get(topic)
        if numbers is None:
            grouped[topic] = [number]
        else:
            numbers.append(number)
    order = java_hashmap_order(grouped, java_string_hash)
    return [(topic, grouped[topic]) for topic in order]


def encode_sticky_user_data(partitions: Sequence[TopicPartition], generation: int | None) -> bytes:
    """``StickyAssignor.serializeTopicPartitionAssignment``: V1, or V0 when ``generation`` is None.

    Kafka itself always writes V1 (a member always knows its generation); V0
    is written only to test the reader's backward compatibility.
    """
    writer = ByteWriter()
    writer.array(
        _group_by_topic(partitions),
        lambda w, entry: w.string(entry[0]).int32_array(entry[1]),
    )
    if generation is not None:
        writer.int32(generation)
    return writer.getvalue()


class _Unparsable(Exception):
    pass


def _parse_assignment_array(data: bytes) -> tuple[TopicGroups, int]:
    """The V0/V1 array of (topic, partitions); returns it and the position after it.

    The common record (one partition, followed by another record) is read
    with a single ``struct`` call covering its partition count, the partition
    and the next record's name length.
    """
    size = len(data)
    if size < 4:
        raise _Unparsable
    (count,) = _I32.unpack_from(data, 0)
    pos = 4
    if count < 0 or count > size - pos:
        raise _Unparsable
    raw_topics: list[bytes] = []
    sizes: list[int] = []
    numbers: list[int] = []
    add_topic = raw_topics.append
    add_size = sizes.append
    add_number = numbers.append
    unpack_i32 = _I32.unpack_from
    unpack_record_tail = _I32_I32_I16.unpack_from
    length = -1
    if count:
        if pos + 2 > size:
            raise _Unparsable
        (length,) = _I16.unpack_from(data, pos)
    for remaining in range(count - 1, -1, -1):
        pos += 2
        if length < 0 or pos + length > size:
            raise _Unparsable
        add_topic(data[pos : pos + length])
        pos += length
        if remaining and pos + 10 <= size:
            n, first, next_length = unpack_record_tail(data, pos)
            if n == 1:
                add_size(1)
                add_number(first)
                pos += 8
                length = next_length
                continue
        if pos + 4 > size:
            raise _Unparsable
        (n,) = unpack_i32(data, pos)
        pos += 4
        if n < 0 or pos + 4 * n > size:
            raise _Unparsable
        add_size(n)
        if n == 1:
            add_number(unpack_i32(data, pos)[0])
        elif n:
            numbers.extend(struct.unpack_from(f">{n}i", data, pos))
        pos += 4 * n
        if remaining:
            if pos + 2 > size:
                raise _Unparsable
            (length,) = _I16.unpack_from(data, pos)
    return TopicGroups(raw_topics, sizes, numbers), pos


def decode_sticky_user_data(data: bytes | None) -> tuple[TopicGroups, int | None]:
    """``StickyAssignor.memberData``: (previous partitions, generation or None).

    ``None`` or empty bytes: no previous assignment and no generation.
    V1: partitions and generation. V0: partitions, no generation.
    Neither: no partitions, generation -1 (Kafka's fallback).
    """
    if not data:
        return TopicGroups([], [], []), None
    try:
        groups, pos = _parse_assignment_array(bytes(data))
    except _Unparsable:
        return TopicGroups([], [], []), DEFAULT_GENERATION
    if len(data) - pos >= 4:
        return groups, _I32.unpack_from(data, pos)[0]
    return groups, None


def encode_cooperative_user_data(generation: int) -> bytes:
    """``CooperativeStickyAssignor.subscriptionUserData``: the generation as one INT32."""
    return ByteWriter().int32(generation).getvalue()


def decode_cooperative_user_data(data: bytes | None) -> int | None:
    """The generation in cooperative-sticky user data: None if absent, -1 if unreadable."""
    if data is None:
        return None
    try:
        return ByteReader(data).int32()
    except WireFormatError:
        return DEFAULT_GENERATION
