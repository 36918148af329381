"""ConsumerGroupHeartbeat v0-v1 by hand: the server's hot path and regroup's private tag.

Why by hand. A steady KIP-848 member sends nothing but heartbeats, so their
framing is a large part of what the server does. Through kio and ``mapping``
a response cost 24-39 µs of CPU to build and encode on this (shared, loaded)
machine, because kio builds and validates frozen dataclasses that ``build``
first converts to; written straight from regroup's version-neutral
``ConsumerGroupHeartbeatResponse`` it costs about 2 µs. Requests are read
straight into ``ConsumerGroupHeartbeatRequest`` (and the server reuses the
last decoded one when a member repeats its bytes). The layouts are Kafka's
``ConsumerGroupHeartbeatRequest.json`` / ``...Response.json`` as kio 0.6.5
generates them (both versions flexible, request header v2, response header
v1; ``SubscribedTopicRegex`` from v1 on), and the tests check these bytes
against kio's for random messages in both directions.

Wire primitives (Kafka's protocol guide): INT8/16/32 big-endian; UNSIGNED_VARINT
(7 bits a byte, low group first); COMPACT_[NULLABLE_]STRING, _BYTES and _ARRAY
store length + 1 as an unsigned varint (0 = null); a nullable struct is one
INT8 (-1 null, 1 present) and the struct; every struct of a flexible version
ends with a tagged-field section: a count, then ``tag, size, bytes`` each.

Rule 1: unknown tagged fields are skipped, at every level, as the protocol
guide requires (kio 0.6.5 rejects them; ``tags`` works around that elsewhere).

Rule 2 (regroup's private extension). KIP-848's ``ClientAssignors`` field
("Client-Side Assignor") never reached Apache Kafka, so kio's schema has no
place for it. regroup's own member sends it as a *tagged field* of the
request's top-level struct with tag ``REGROUP_TAG`` (``0x52470848``: far above
the small, sequential tags Kafka allots from 0, so a future Kafka field is very
unlikely ever to take it).
Its value is one struct, in the same flexible encoding::

    RegroupHeartbeatExtension {
      ClientAssignors: COMPACT_NULLABLE_ARRAY of Assignor   (KIP-848's field:
          null = unchanged since the last heartbeat)
      <tagged fields>
    }
    Assignor { Name COMPACT_STRING, MinimumVersion INT32, MaximumVersion INT32,
               Version INT32, Reason INT8, Metadata COMPACT_BYTES, <tagged fields> }

regroup's member sends the tag in *every* heartbeat (with a null array when
the assignors did not change), because the tag also says "this client speaks
regroup's extensions": only then does the response carry regroup's error codes
COMPUTE_ASSIGNMENT (10000) and INVALID_ASSIGNMENT (10001). A real client never
sends the tag and a real broker skips it (rule 1 on their side), so neither is
confused: a real client never sees a code it cannot know (``wire_error_code``).

Rule 3: a response is a pure function of the response object and whether the
client speaks regroup's extensions; its bytes after the size and correlation id
may be encoded once and reused (``encode_response``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import (
    ClientAssignor,
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from regroup.model.uuid import Uuid
from regroup.server.wire.api_keys import ApiKey

__all__ = [
    "REGROUP_TAG",
    "HeartbeatDecodeError",
    "RegroupHeartbeat",
    "decode_request",
    "decode_response",
    "encode_extension",
    "encode_request_body",
    "encode_response",
    "wire_error_code",
]

#: The private tagged field of regroup's member (rule 2): "RG" and 848.
REGROUP_TAG = 0x52470848
#: regroup's codes above Kafka's range (``regroup.model.errors``); rule 2.
_PRIVATE_CODES = frozenset({ErrorCode.COMPUTE_ASSIGNMENT, ErrorCode.INVALID_ASSIGNMENT})

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PREFIX = struct.Struct(">hhi")
_UUID = struct.Struct(">qq")
_RESPONSE_HEAD = struct.Struct(">iiBih")  # size, correlation id, header tags, throttle, error
_EPOCH_INTERVAL = struct.Struct(">ii")
_SIZE_CID = struct.Struct(">ii")

#: Rule 3: how many steady responses' bytes are kept (a few hundred bytes each at most,
#: the member id and an error message being the variable parts).
STEADY_TAILS = 4096
#: Rule 3: a steady response's fields -> its bytes after the size and correlation id.
_STEADY_TAILS: dict[tuple[object, ...], bytes] = {}


#: After the member epoch, a steady heartbeat's bytes: instance id, rack id null,
#: rebalance timeout -1, topic names null, (v1: regex null), assignor null,
#: partitions null, no tagged fields (11 bytes in v1, 10 in v0).
_STEADY_V0 = b"\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00"
_STEADY_V1 = b"\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00"


class HeartbeatDecodeError(ValueError):
    """Bytes that are not a ConsumerGroupHeartbeat request of the version named."""


@dataclass(frozen=True, slots=True)
class RegroupHeartbeat:
    """A decoded request: the neutral heartbeat and whether regroup's tag came with it."""

    correlation_id: int
    client_id: str | None
    request: ConsumerGroupHeartbeatRequest
    #: The client sent ``REGROUP_TAG`` (rule 2): it may receive regroup's codes.
    regroup_client: bool


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise HeartbeatDecodeError("truncated request")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def varint(self) -> int:
        data, pos, shift, value = self.data, self.pos, 0, 0
        while True:
            if pos >= len(data):
                raise HeartbeatDecodeError("truncated varint")
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                self.pos = pos
                return value
            shift += 7
            if shift > 28:
                raise HeartbeatDecodeError("varint longer than 5 bytes")

    def int8(self) -> int:
        return int.from_bytes(self.take(1), "big", signed=True)

    def int32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def compact_length(self) -> int:
        """Length of a compact string/bytes/array; -1 for null."""
        return self.varint() - 1

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise HeartbeatDecodeError("null in a non-nullable string")
        return value

    def nullable_string(self) -> str | None:
        n = self.compact_length()
        if n < 0:
            return None
        return _utf8(self.take(n))

    def array_length(self) -> int:
        n = self.compact_length()
        if n > len(self.data) - self.pos:  # each element takes at least one byte
            raise HeartbeatDecodeError(f"array of {n} elements in a shorter buffer")
        return n

    def tags(self, wanted: int | None = None) -> bytes | None:
        """Skip a tagged-field section (rule 1); the value of tag ``wanted`` if present.

        A count larger than two bytes a tag could hold is refused at once (a tag and
        its size take a byte each at least), as ``array_length`` refuses an array
        count: no loop runs by a number the client made up.
        """
        found = None
        count = self.varint()
        if count and 2 * count > len(self.data) - self.pos:
            raise HeartbeatDecodeError(f"{count} tagged fields in a shorter buffer")
        for _ in range(count):
            tag = self.varint()
            value = self.take(self.varint())
            if tag == wanted:
                found = value
        return found


def _topic_partitions(r: _Reader) -> tuple[TopicPartitions, ...] | None:
    n = r.array_length()
    if n < 0:
        return None
    out = []
    for _ in range(n):
        most, least = _UUID.unpack(r.take(16))
        count = r.array_length()
        if count < 0:
            raise HeartbeatDecodeError("null partitions")
        partitions = struct.unpack(f">{count}i", r.take(4 * count))
        r.tags()
        out.append(TopicPartitions(Uuid(most, least), partitions))
    return tuple(out)


def _client_assignors(value: bytes) -> tuple[ClientAssignor, ...] | None:
    r = _Reader(value, 0)
    n = r.array_length()
    assignors: tuple[ClientAssignor, ...] | None = None
    if n >= 0:
        items = []
        for _ in range(n):
            name = r.string()
            low, high, version = r.int32(), r.int32(), r.int32()
            reason = r.int8()
            size = r.compact_length()
            if size < 0:
                raise HeartbeatDecodeError("null assignor metadata")
            items.append(ClientAssignor(name, low, high, version, reason, r.take(size)))
            r.tags()
        assignors = tuple(items)
    r.tags()
    if r.pos != len(value):
        raise HeartbeatDecodeError("trailing bytes in regroup's tagged field")
    return assignors


def decode_request(body: bytes, client_host: str = "") -> RegroupHeartbeat:
    """Decode a whole request (header v2 and body) of ConsumerGroupHeartbeat v0 or v1.

    The common fields are read inline (one-byte varints, no helper calls): a
    steady heartbeat is the server's hottest path. Anything unusual falls back
    to ``_Reader``'s general reads.
    """
    if len(body) < 10:
        raise HeartbeatDecodeError("request shorter than its header")
    api_key, version, cid = _PREFIX.unpack_from(body, 0)
    if api_key != ApiKey.CONSUMER_GROUP_HEARTBEAT or version not in (0, 1):
        raise HeartbeatDecodeError(f"not ConsumerGroupHeartbeat v0-1: {api_key} v{version}")
    r = _Reader(body, 8)
    (size,) = _I16.unpack(r.take(2))
    client_id = None
    if size >= 0:
        client_id = _utf8(r.take(size))
    elif size != -1:
        raise HeartbeatDecodeError(f"client id length {size}")
    r.tags()
    group_id = r.string()
    member_id = r.string()
    member_epoch = r.int32()
    # The steady heartbeat: every nullable field null and a -1 timeout (12 bytes).
    steady = _STEADY_V1 if version >= 1 else _STEADY_V0
    if len(body) - r.pos == len(steady) and body.endswith(steady):
        instance_id = rack_id = regex = server_assignor = None
        rebalance_timeout, topics, owned, private = -1, None, None, None
    else:
        instance_id = r.nullable_string()
        rack_id = r.nullable_string()
        rebalance_timeout = r.int32()
        n = r.array_length()
        topics = None if n < 0 else tuple(r.string() for _ in range(n))
        regex = r.nullable_string() if version >= 1 else None
        server_assignor = r.nullable_string()
        owned = _topic_partitions(r)
        private = r.tags(REGROUP_TAG)
        if r.pos != len(body):
            raise HeartbeatDecodeError(f"{len(body) - r.pos} trailing bytes")
    request = ConsumerGroupHeartbeatRequest(
        group_id,
        member_id,
        member_epoch,
        instance_id,
        rack_id,
        rebalance_timeout,
        topics,
        regex,
        server_assignor,
        None if private is None else _client_assignors(private),
        owned,
        "" if client_id is None else client_id,
        client_host,
        version >= 1,
    )
    return RegroupHeartbeat(cid, client_id, request, private is not None)


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HeartbeatDecodeError(f"bad UTF-8: {exc}") from None


# -- writing ----------------------------------------------------------------------------


def _varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    data = value.encode("utf-8")
    _varint(out, len(data) + 1)
    out += data


def _write_topic_partitions(out: bytearray, tps: tuple[TopicPartitions, ...] | None) -> None:
    if tps is None:
        out.append(0)
        return
    _varint(out, len(tps) + 1)
    for tp in tps:
        out += _UUID.pack(tp.topic_id.most_significant_bits, tp.topic_id.least_significant_bits)
        _varint(out, len(tp.partitions) + 1)
        out += struct.pack(f">{len(tp.partitions)}i", *tp.partitions)
        out.append(0)


def wire_error_code(code: ErrorCode, regroup_client: bool) -> int:
    """The code a client receives: regroup's own codes only to regroup's client (rule 2).

    Anyone else gets UNKNOWN_SERVER_ERROR, which is what Kafka's clients make
    of any code they do not know (``Errors.forCode`` in Kafka's clients maps an
    unknown code to ``UNKNOWN_SERVER_ERROR`` and logs it), and what Kafka's
    broker returns for an unexpected failure (``ApiError.fromThrowable``).
    """
    if code in _PRIVATE_CODES and not regroup_client:
        return int(ErrorCode.UNKNOWN_SERVER_ERROR)
    return int(code)


def encode_response(
    correlation_id: int, response: ConsumerGroupHeartbeatResponse, regroup_client: bool
) -> bytes:
    """The framed response (v0 and v1 share one layout) with response header v1.

    Rule 3: a response without an assignment (a steady member's) is the same bytes
    heartbeat after heartbeat but for the size and correlation id in front, so those
    bytes are encoded once and kept (``_STEADY_TAILS``, at most ``STEADY_TAILS`` of them).
    """
    if response.assignment is not None:
        return _encode_response(correlation_id, response, regroup_client)
    # Every field but the (absent) assignment, as a tuple: hashed and compared in C.
    key = (
        response.error_code,
        response.error_message,
        response.member_id,
        response.member_epoch,
        response.heartbeat_interval_ms,
        response.throttle_time_ms,
        regroup_client,
    )
    tail = _STEADY_TAILS.get(key)
    if tail is None:
        tail = _encode_response(0, response, regroup_client)[_SIZE_CID.size :]
        if len(_STEADY_TAILS) >= STEADY_TAILS:
            _STEADY_TAILS.clear()  # all at once: one step, whichever thread encodes
        _STEADY_TAILS[key] = tail
    return _SIZE_CID.pack(len(tail) + 4, correlation_id) + tail


def _encode_response(
    correlation_id: int, response: ConsumerGroupHeartbeatResponse, regroup_client: bool
) -> bytes:
    out = bytearray(
        _RESPONSE_HEAD.pack(
            0,
            correlation_id,
            0,
            response.throttle_time_ms,
            wire_error_code(response.error_code, regroup_client),
        )
    )
    _compact_string(out, response.error_message)
    _compact_string(out, response.member_id)
    out += _EPOCH_INTERVAL.pack(response.member_epoch, response.heartbeat_interval_ms)
    if response.assignment is None:
        out.append(0xFF)
    else:
        out.append(1)
        tps = response.assignment.topic_partitions
        _write_topic_partitions(out, tps)
        out.append(0)
    out.append(0)
    _I32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_extension(assignors: tuple[ClientAssignor, ...] | None) -> bytes:
    """The value of ``REGROUP_TAG`` (rule 2) for ``assignors`` (``None``: unchanged)."""
    out = bytearray()
    if assignors is None:
        out.append(0)
    else:
        _varint(out, len(assignors) + 1)
        for a in assignors:
            _compact_string(out, a.name)
            out += struct.pack(">iiib", a.minimum_version, a.maximum_version, a.version, a.reason)
            _varint(out, len(a.metadata) + 1)
            out += a.metadata
            out.append(0)
    out.append(0)
    return bytes(out)


def encode_request_body(
    version: int, request: ConsumerGroupHeartbeatRequest, *, regroup_tag: bool = True
) -> bytes:
    """The request body (no header) as regroup's member sends it: rule 2's tag included."""
    out = bytearray()
    _compact_string(out, request.group_id)
    _compact_string(out, request.member_id)
    out += _I32.pack(request.member_epoch)
    _compact_string(out, request.instance_id)
    _compact_string(out, request.rack_id)
    out += _I32.pack(request.rebalance_timeout_ms)
    topics = request.subscribed_topic_names
    if topics is None:
        out.append(0)
    else:
        _varint(out, len(topics) + 1)
        for topic in topics:
            _compact_string(out, topic)
    if version >= 1:
        _compact_string(out, request.subscribed_topic_regex)
    _compact_string(out, request.server_assignor)
    _write_topic_partitions(out, request.topic_partitions)
    if regroup_tag:
        value = encode_extension(request.client_assignors)
        out.append(1)
        _varint(out, REGROUP_TAG)
        _varint(out, len(value))
        out += value
    else:
        out.append(0)
    return bytes(out)


def decode_response(frame: bytes) -> tuple[int, ConsumerGroupHeartbeatResponse]:
    """(correlation id, response) from a response frame without its size (regroup's client).

    Read by hand because kio's ``ErrorCode`` has no member for regroup's codes
    10000 and 10001 (rule 2), which this client must receive.
    """
    r = _Reader(frame, 0)
    cid = r.int32()
    r.tags()
    throttle = r.int32()
    (code,) = _I16.unpack(r.take(2))
    message = r.nullable_string()
    member_id = r.nullable_string()
    epoch, interval = r.int32(), r.int32()
    assignment = None
    if r.int8() >= 0:
        owned = _topic_partitions(r)
        if owned is None:
            raise HeartbeatDecodeError("null assignment partitions")
        r.tags()
        assignment = ConsumerGroupHeartbeatAssignment(owned)
    r.tags()
    if r.pos != len(frame):
        raise HeartbeatDecodeError(f"{len(frame) - r.pos} trailing bytes")
    try:
        error = ErrorCode(code)
    except ValueError:
        error = ErrorCode.UNKNOWN_SERVER_ERROR
    return cid, ConsumerGroupHeartbeatResponse(
        error, message, member_id, epoch, interval, assignment, throttle
    )
