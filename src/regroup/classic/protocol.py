"""The embedded consumer protocol: ``Subscription`` and ``Assignment`` bytes.

A classic consumer group carries two opaque byte strings that only the
members read: each member's *subscription*, sent once per supported assignor
in the JoinGroup request's protocol metadata (``protocol_type="consumer"``),
and each member's *assignment*, sent by the leader in SyncGroup and handed
back to every member. Kafka defines both as non-flexible messages,
``clients/src/main/resources/common/message/ConsumerProtocolSubscription.json``
and ``ConsumerProtocolAssignment.json`` (valid versions 0-3), and serialises
them in ``ConsumerProtocol`` as an int16 version followed by the message body
at that version (Kafka: ``MessageUtil.toVersionPrefixedByteBuffer``)::

    Subscription v0 => topics:[STRING] user_data:NULLABLE_BYTES
    Subscription v1 => v0 + owned_partitions:[topic:STRING partitions:[INT32]]
    Subscription v2 => v1 + generation_id:INT32          (-1: none)
    Subscription v3 => v2 + rack_id:NULLABLE_STRING       (null: none)
    Assignment  v0-3 => assigned_partitions:[topic:STRING partitions:[INT32]]
                        user_data:NULLABLE_BYTES

The fields added after v0 are all "ignorable": writing an older version
silently drops them.

What the clients send: the Java client writes the highest version it knows
(v3 since KIP-881, Kafka 3.5); librdkafka writes Subscription v3 (with empty,
not null, user data) and Assignment v0; kafka-python and aiokafka write v0
(v1 from kafka-python 3's ``cooperative-sticky``, to carry owned partitions).

Kafka's rules, followed here (Kafka: ``ConsumerProtocol``):

* **Writing** a Subscription sorts the topics and the owned partitions (by
  topic, then partition, as Java compares strings: by UTF-16 code unit) and
  groups the owned partitions by topic. Writing an Assignment groups its
  partitions by topic in order of first appearance, keeping the given order
  within a topic. A version above the highest known one is written as the
  highest (the header says so too); a negative version is refused.
* **Reading** a version above the highest known one parses it with the
  highest known layout: later versions may only append fields, so anything
  after the known fields is ignored (forward compatibility). Extra trailing
  bytes are ignored at every version, as Java's reader ignores them. A
  negative generation id means "none" and reads as ``NO_GENERATION``; a null
  or empty rack id means "none" and reads as ``None``.

Bad input never escapes as ``IndexError`` or ``struct.error``: every failure,
reading or writing, is a ``ConsumerProtocolError`` (a ``WireFormatError``)
with a one-line message. The one place we are stricter than Java: a string
that is not valid UTF-8 is an error here, where Java would substitute U+FFFD.

Speed: a classic group of N members reads N assignments and N subscriptions
per rebalance, and writes as many. Decoded values are memoised by their bytes
(``DECODE_CACHE_SIZE`` of each kind, least recently used first out): the
bytes are immutable and the decoded values frozen, so a hit returns exactly
what decoding would, and the coordinator's read of an assignment (for the
``RebalanceCompleted`` event) and the member's read of the same bytes cost one
decode.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import TypeVar

from regroup.assignors.classic.api import Assignment, Subscription
from regroup.model import NO_GENERATION, TopicPartition
from regroup.model.wire import ByteReader, ByteWriter, WireFormatError

__all__ = [
    "DECODE_CACHE_SIZE",
    "HIGHEST_SUPPORTED_VERSION",
    "LOWEST_SUPPORTED_VERSION",
    "PROTOCOL_TYPE",
    "ConsumerProtocolError",
    "decode_assignment",
    "decode_subscription",
    "decode_subscription_topics",
    "decode_version",
    "encode_assignment",
    "encode_subscription",
]

#: The JoinGroup ``protocol_type`` of consumer groups (Kafka: ``ConsumerProtocol.PROTOCOL_TYPE``).
PROTOCOL_TYPE = "consumer"

#: The versions of both messages this module reads and writes; both schemas move together
#: (Kafka checks that their lowest and highest versions agree).
LOWEST_SUPPORTED_VERSION = 0
HIGHEST_SUPPORTED_VERSION = 3

#: Decoded Subscriptions and Assignments remembered by their bytes (each kind): enough for
#: every member of a group of a few thousand to hit the coordinator's decode of its bytes.
DECODE_CACHE_SIZE = 8192

_T = TypeVar("_T")


class ConsumerProtocolError(WireFormatError):
    """Bytes that are not a consumer-protocol Subscription or Assignment, or values that
    cannot be written as one. Kafka raises ``SchemaException`` in both cases."""


# --------------------------------------------------------------------------- versions


def decode_version(data: bytes | bytearray | memoryview) -> int:
    """The int16 version at the head of a Subscription or Assignment, as written.

    Kafka: ``ConsumerProtocol.deserializeVersion``. The value is returned as
    found (it may be negative or above ``HIGHEST_SUPPORTED_VERSION``); the
    decoders below decide what to do with it.
    """
    return _read_version(ByteReader(data))


def _read_version(reader: ByteReader) -> int:
    try:
        return reader.int16()
    except WireFormatError:
        raise ConsumerProtocolError(
            "truncated consumer protocol header: expected an int16 version"
        ) from None


def _checked_version(version: int, message: str) -> int:
    """Kafka's ``checkSubscriptionVersion`` / ``checkAssignmentVersion``."""
    if version < LOWEST_SUPPORTED_VERSION:
        raise ConsumerProtocolError(f"unsupported {message} version {version}")
    return min(version, HIGHEST_SUPPORTED_VERSION)


# --------------------------------------------------------------------------- helpers


def _java_string_key(text: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` does.

    Java compares UTF-16 code units; big-endian UTF-16 bytes compare the same
    way. It differs from Python's code-point order only for characters above
    U+FFFF against U+E000..U+FFFF, which Kafka topic names cannot contain, but
    the bytes should not depend on that.
    """
    return text.encode("utf-16-be", "surrogatepass")


def _group_by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Partitions grouped by topic: topics in order of first appearance, partitions
    in the given order within a topic (Kafka builds the same grouping with a
    linked map keyed by topic)."""
    groups: dict[str, list[int]] = {}
    for topic, partition in partitions:
        groups.setdefault(topic, []).append(partition)
    return list(groups.items())


def _write_topic_partitions(writer: ByteWriter, groups: Sequence[tuple[str, list[int]]]) -> None:
    def write_one(w: ByteWriter, group: tuple[str, list[int]]) -> None:
        w.string(group[0])
        w.int32_array(group[1])

    writer.array(groups, write_one)


def _read_topic_partitions(reader: ByteReader) -> tuple[TopicPartition, ...]:
    def read_one(r: ByteReader) -> tuple[str, list[int]]:
        return r.string(), r.int32_array()

    return tuple(
        TopicPartition(topic, partition)
        for topic, partitions in reader.array(read_one)
        for partition in partitions
    )


def _encoding(message: str, write: Callable[[], bytes]) -> bytes:
    """Run ``write`` and turn every way it can fail on bad values into one error."""
    try:
        return write()
    except ConsumerProtocolError:
        raise
    except WireFormatError as error:
        raise ConsumerProtocolError(f"cannot encode {message}: {error}") from None
    except struct.error:
        raise ConsumerProtocolError(
            f"cannot encode {message}: a partition or generation id is not an int32"
        ) from None
    except UnicodeEncodeError:
        raise ConsumerProtocolError(
            f"cannot encode {message}: a string cannot be encoded as UTF-8"
        ) from None


def _decoding(message: str, version: int, read: Callable[[], _T]) -> _T:
    """Run ``read`` and report any malformation as one error naming the message."""
    try:
        return read()
    except ConsumerProtocolError:
        raise
    except WireFormatError as error:
        raise ConsumerProtocolError(f"malformed {message} v{version}: {error}") from None


# --------------------------------------------------------------------------- Subscription


def encode_subscription(
    subscription: Subscription, version: int = HIGHEST_SUPPORTED_VERSION
) -> bytes:
    """A member's Subscription as the bytes of ``ConsumerProtocolSubscription``.

    Kafka: ``ConsumerProtocol.serializeSubscription``. Topics and owned
    partitions are sorted; a negative ``generation_id`` is written as -1;
    fields newer than ``version`` are dropped. ``group_instance_id`` is not
    part of the bytes (the leader learns it from the JoinGroup member list).
    """
    effective = _checked_version(version, "subscription")

    def write() -> bytes:
        writer = ByteWriter().int16(effective)
        writer.array(sorted(subscription.topics, key=_java_string_key), ByteWriter.string)
        writer.nullable_bytes(_as_bytes(subscription.user_data))
        if effective >= 1:
            owned = sorted(
                subscription.owned_partitions,
                key=lambda tp: (_java_string_key(tp[0]), tp[1]),
            )
            _write_topic_partitions(writer, _group_by_topic(owned))
        if effective >= 2:
            generation = subscription.generation_id
            writer.int32(generation if generation >= 0 else NO_GENERATION)
        if effective >= 3:
            writer.nullable_string(subscription.rack_id)
        return writer.getvalue()

    return _encoding(f"subscription v{effective}", write)


def decode_subscription(data: bytes | bytearray | memoryview) -> Subscription:
    """Read the bytes of a ``ConsumerProtocolSubscription`` of any version.

    Kafka: ``ConsumerProtocol.deserializeSubscription``. Fields absent at the
    version read take their defaults (no owned partitions, ``NO_GENERATION``,
    no rack); sequences come back as tuples.
    """
    return _decode_subscription_bytes(bytes(data))


@lru_cache(maxsize=DECODE_CACHE_SIZE)
def _decode_subscription_bytes(data: bytes) -> Subscription:
    reader = ByteReader(data)
    version = _read_version(reader)
    effective = _checked_version(version, "subscription")

    def read() -> Subscription:
        topics = tuple(reader.array(ByteReader.string))
        user_data = reader.nullable_bytes()
        owned: tuple[TopicPartition, ...] = ()
        generation = NO_GENERATION
        rack: str | None = None
        if effective >= 1:
            owned = _read_topic_partitions(reader)
        if effective >= 2:
            generation = max(reader.int32(), NO_GENERATION)
        if effective >= 3:
            rack = reader.nullable_string() or None
        return Subscription(
            topics=topics,
            user_data=user_data,
            owned_partitions=owned,
            generation_id=generation,
            rack_id=rack,
        )

    return _decoding("subscription", version, read)


def decode_subscription_topics(data: bytes | bytearray | memoryview) -> tuple[str, ...]:
    """The topics of a Subscription, read as its version-0 prefix (header, topics, user data).

    Kafka ``ClassicGroup.computeSubscribedTopics`` reads every version this way, so
    that the coordinator depends on no version but the first: fields after the
    user data are not read, and bytes that carry only them malformed still give
    the topics. A negative version or a malformed prefix is ``ConsumerProtocolError``.
    """
    reader = ByteReader(bytes(data))
    version = _checked_version(_read_version(reader), "subscription")

    def read() -> tuple[str, ...]:
        topics = tuple(reader.array(ByteReader.string))
        reader.nullable_bytes()
        return topics

    return _decoding("subscription", version, read)


# --------------------------------------------------------------------------- Assignment


def encode_assignment(assignment: Assignment, version: int = HIGHEST_SUPPORTED_VERSION) -> bytes:
    """A member's Assignment as the bytes of ``ConsumerProtocolAssignment``.

    Kafka: ``ConsumerProtocol.serializeAssignment``. The layout is the same at
    every version; only the header differs. Partitions are grouped by topic,
    topics in order of first appearance.
    """
    effective = _checked_version(version, "assignment")

    def write() -> bytes:
        writer = ByteWriter().int16(effective)
        _write_topic_partitions(writer, _group_by_topic(assignment.partitions))
        writer.nullable_bytes(_as_bytes(assignment.user_data))
        return writer.getvalue()

    return _encoding(f"assignment v{effective}", write)


def decode_assignment(data: bytes | bytearray | memoryview) -> Assignment:
    """Read the bytes of a ``ConsumerProtocolAssignment`` of any version.

    Kafka: ``ConsumerProtocol.deserializeAssignment``. The partitions come
    back as a tuple, in the order they were written.
    """
    return _decode_assignment_bytes(bytes(data))


@lru_cache(maxsize=DECODE_CACHE_SIZE)
def _decode_assignment_bytes(data: bytes) -> Assignment:
    reader = ByteReader(data)
    version = _read_version(reader)
    _checked_version(version, "assignment")

    def read() -> Assignment:
        partitions = _read_topic_partitions(reader)
        user_data = reader.nullable_bytes()
        return Assignment(partitions=partitions, user_data=user_data)

    return _decoding("assignment", version, read)


def _as_bytes(value: bytes | bytearray | memoryview | None) -> bytes | None:
    return None if value is None else bytes(value)
