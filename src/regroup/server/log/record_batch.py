"""Checking Kafka v2 record batches: what a producer sends, and what a partition file holds.

Kafka: ``DefaultRecordBatch`` (the layout, ``ensureValid``: size and CRC-32C
over ``attributes`` to the end) and ``LogValidator.validateBatch`` /
``validateRecord`` (what a broker refuses from a client). Layout of the
61-byte header: base offset (int64), batch length (int32, the bytes after this
field), partition leader epoch (int32), magic (int8), CRC (uint32), attributes
(int16), last offset delta (int32), base and max timestamps (int64), producer
id (int64), producer epoch (int16), base sequence (int32), record count
(int32); then the records.

Rule 1 (``check_batch``): a batch shorter than the header, longer than the
bytes given, or whose CRC does not match is ``CORRUPT_MESSAGE`` (Kafka's
``CorruptRecordException``); a magic other than 2 is
``UNSUPPORTED_FOR_MESSAGE_FORMAT``.
Rule 2 (``check_client_batch``, Kafka ``validateBatch`` for a client append):
an offset range ``last offset delta + 1`` that is not positive, a record count
that is not positive or differs from the offset range, a control batch, are
``INVALID_RECORD`` (Kafka's ``InvalidRecordException``); a batch above
``max.message.bytes`` is ``MESSAGE_TOO_LARGE``.
Rule 3 (the records, Kafka ``DefaultRecord.readFrom`` / ``readPartiallyFrom`` as
``LogValidator`` iterates them): each record's length, key, value and headers
must fit its body exactly, a header count or header key length must not be
negative, exactly ``record count`` records must fill the records' bytes (fewer:
"premature EOF"; more bytes: "records still remaining"), all ``INVALID_RECORD``.
An uncompressed batch's records are its bytes after the header, and record
``i`` must have offset delta ``i`` (regroup's rule; Kafka does not look).
A compressed batch's records are its payload decompressed (``compression``:
gzip, snappy, LZ4, zstd, each bounded; a payload that cannot be decompressed is
Kafka's ``UNKNOWN_SERVER_ERROR``); zstd in a Produce below v7 is
``UNSUPPORTED_COMPRESSION_TYPE`` (Kafka ``ProduceRequest.validateRecords``).
Rule 4 (Kafka ``validateMessagesAndAssignOffsetsCompressed``): a compressed
batch whose offset deltas are not ``0, 1, ...`` is not refused but rebuilt, its
records given those deltas and compressed again with the same codec and the
same header fields (Kafka's "no in-place assignment" path, for clients that
number inner records wrongly); a rebuilt batch above ``max.message.bytes`` is
``MESSAGE_TOO_LARGE``. Any other batch is kept byte for byte.
"""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass

from crc32c import crc32c

from regroup.model.errors import ErrorCode, KafkaProtocolError
from regroup.server.log import compression

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAX_MESSAGE_BYTES",
    "BatchHeader",
    "ClientBatch",
    "check_batch",
    "check_client_batch",
    "has_compressed_batch",
    "write_varint",
]

_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61
#: Base offset and batch length: the bytes before what ``batch length`` counts.
LOG_OVERHEAD = 12
_CRC_START = 21
_CONTROL = 0x20
_COMPRESSION = 0x07
#: Kafka's ``max.message.bytes`` default (1 MiB plus the log overhead).
MAX_MESSAGE_BYTES = 1_048_588


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    #: The whole batch's size in bytes (``batch length`` + 12).
    size: int
    magic: int
    attributes: int
    last_offset_delta: int
    max_timestamp: int
    record_count: int


def _corrupt(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE, message)


def _invalid(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_RECORD, message)


def check_batch(data: bytes | memoryview, pos: int = 0) -> BatchHeader:
    """Rule 1 for the batch at ``pos`` of ``data``; its header."""
    left = len(data) - pos
    if left < HEADER_SIZE:
        raise _corrupt(f"record batch of {left} bytes is below the {HEADER_SIZE}-byte header")
    (base, length, _, magic, crc, attributes, last_delta, _, max_ts, _, _, _, count) = (
        _HEADER.unpack_from(data, pos)
    )
    size = LOG_OVERHEAD + length
    if magic != 2:
        raise KafkaProtocolError(
            ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"record batch magic {magic}, not 2"
        )
    if size < HEADER_SIZE:
        raise _corrupt(f"record batch size {size} is below the {HEADER_SIZE}-byte header")
    if size > left:
        raise _corrupt(f"record batch size {size} exceeds the {left} bytes left")
    with memoryview(data) as view:  # no copy of a batch that may be a megabyte
        actual = crc32c(view[pos + _CRC_START : pos + size])
    if actual != crc:
        raise _corrupt(f"record batch CRC-32C is {actual:#010x}, the header says {crc:#010x}")
    return BatchHeader(base, size, magic, attributes, last_delta, max_ts, count)


@dataclass(frozen=True, slots=True)
class ClientBatch:
    """A producer's batch as the log keeps it: its header and bytes (rule 4 may rebuild them)."""

    header: BatchHeader
    data: bytes
    #: The bytes of the request the batch took (its size as sent, before any rebuild).
    consumed: int


def has_compressed_batch(data: bytes) -> bool:
    """Whether any batch in ``data`` (walked by its lengths, unchecked) names a codec."""
    pos = 0
    while pos + HEADER_SIZE <= len(data):
        if data[pos + 22] & _COMPRESSION:  # the low byte of ``attributes``
            return True
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if length <= 0:
            return False
        pos += LOG_OVERHEAD + length
    return False


def check_client_batch(
    data: bytes,
    pos: int = 0,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    *,
    allow_zstd: bool = True,
) -> ClientBatch:
    """Rules 1-4 for a batch a producer sent (``allow_zstd``: the Produce is v7+)."""
    header = check_batch(data, pos)
    raw = bytes(data[pos : pos + header.size])
    if header.size > max_message_bytes:
        raise KafkaProtocolError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"record batch of {header.size} bytes exceeds max.message.bytes {max_message_bytes}",
        )
    span = header.last_offset_delta + 1
    if span <= 0:
        raise _invalid(f"batch has an invalid offset range: last offset delta {span - 1}")
    if header.record_count <= 0:
        raise _invalid(f"invalid reported count for record batch: {header.record_count}")
    if span != header.record_count:
        raise _invalid(
            f"inconsistent batch offset range [0, {span - 1}] and count of records "
            f"{header.record_count}"
        )
    if header.attributes & _CONTROL:
        raise _invalid("clients are not allowed to write control records")
    codec = header.attributes & _COMPRESSION
    if codec == compression.NONE:
        misplaced = _walk_records(raw, HEADER_SIZE, len(raw), header.record_count)
        if misplaced is not None:
            raise _invalid(f"record {misplaced[0]} has offset delta {misplaced[1]}")
        return ClientBatch(header, raw, header.size)
    if codec == compression.ZSTD and not allow_zstd:
        raise KafkaProtocolError(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            "Produce requests with version below 7 are not allowed to use ZStandard compression",
        )
    plain = compression.decompress(codec, raw[HEADER_SIZE:])
    if _walk_records(plain, 0, len(plain), header.record_count) is None:
        return ClientBatch(header, raw, header.size)
    rebuilt = _rebuild(raw, codec, plain, _record_spans(plain, header.record_count))
    if len(rebuilt) > max_message_bytes:
        raise KafkaProtocolError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"rebuilt record batch of {len(rebuilt)} bytes exceeds max.message.bytes "
            f"{max_message_bytes}",
        )
    return ClientBatch(check_batch(rebuilt), rebuilt, header.size)


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """A zig-zag varint (Kafka ``ByteUtils.readVarint``) at ``pos``; (value, next pos)."""
    raw, pos = _varint_raw(data, pos, end)
    return (raw >> 1) ^ -(raw & 1), pos


def _varint_raw(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` before zig-zag decoding; (raw value, next pos)."""
    raw = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _invalid("Found invalid record structure: a truncated or overlong varint")
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return raw, pos
        shift += 7


def write_varint(value: int) -> bytes:
    """Kafka ``ByteUtils.writeVarint`` / ``writeVarlong``: zig-zag, seven bits a byte."""
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _skip_bytes(data: bytes, pos: int, end: int, what: str) -> int:
    """A varint length and that many bytes (a negative length: null, nothing follows)."""
    size, pos = _varint(data, pos, end)
    if size > 0:
        if pos + size > end:
            raise _invalid(f"Found invalid record structure: {what} of {size} bytes")
        pos += size
    return pos


def _walk_records(data: bytes, pos: int, end: int, count: int) -> tuple[int, int] | None:
    """Rule 3: the ``count`` records in ``data[pos:end]``; the first (index, offset delta)
    whose delta is not its index, or None.

    A record of the shape most records have, with the offset delta it must have, is
    read by ``_common_record_end``; any other by ``_any_record``, which reads every
    shape and raises for a wrong one."""
    misplaced: tuple[int, int] | None = None
    delta = 0  # the zig-zag form of the offset delta record ``index`` must have, 2 * index
    for index in range(count):
        following = _common_record_end(data, pos, end, delta)
        if following < 0:
            _, following, _, _, found = _any_record(data, pos, end, index, count)
            if found != delta and misplaced is None:
                misplaced = (index, (found >> 1) ^ -(found & 1))
        pos = following
        delta += 2
    if pos != end:
        raise _invalid(
            f"Incorrect declared batch size, records still remaining in file: {end - pos} bytes"
        )
    return misplaced


def _record_spans(data: bytes, count: int) -> array[int]:
    """Rule 4's walk over records rule 3 accepted: for each record, where its body starts
    and ends and where its offset delta varint starts and ends (flat, so that a million
    records make no million objects for the garbage collector to walk)."""
    spans = array("q")
    pos = 0
    for index in range(count):
        body, pos, delta_start, delta_end, _ = _any_record(data, pos, len(data), index, count)
        spans.extend((body, pos, delta_start, delta_end))
    return spans


#: ``_HALF[raw]``, for the unsigned form ``raw`` of a one- or two-byte zig-zag varint:
#: the length it encodes when ``raw`` is even, -1 when it is odd (a negative number).
_HALF = [raw >> 1 if raw % 2 == 0 else -1 for raw in range(1 << 14)]
#: ``_WINDOW(data, pos)``: the fourteen bytes at ``pos`` as fourteen numbers.
_WINDOW = struct.Struct("14B").unpack_from


def _common_record_end(data: bytes, pos: int, end: int, delta: int) -> int:
    """Where the record at ``pos`` ends, if it has the common shape and the offset delta
    whose unsigned (zig-zag) form is ``delta``; else -1 (``_any_record`` then reads it,
    and raises if it is wrong).

    The common shape: a length and a value length of one or two bytes each, a
    timestamp delta of one to five and an offset delta of one to three (a record under
    8 KiB in a batch under 1,048,576 records), a key under 8 KiB or null, and headers
    whose count and lengths are one- or two-byte varints (``_common_headers_end``).
    This runs once per produced record, and the interpreter's cost is per operation,
    reading one byte of ``data`` about a sixth of unpacking fourteen: so the record's
    first fourteen bytes, which hold every field up to the value's length when the key
    is null, are unpacked at once, and only the end is returned (no tuple to build).
    Every byte it uses lies inside the record's body, which the fields must fill
    exactly, so a record this accepts is one ``_any_record`` accepts and reads the same
    (``tests/server/test_record_walk.py`` compares the two on arbitrary bytes)."""
    try:
        window: tuple[int, ...] = _WINDOW(data, pos)
    except struct.error:  # fewer than fourteen bytes left
        return -1
    half = _HALF
    first = window[0]
    if first < 0x80:
        body = pos + 1
        length = half[first]
        at = 2  # after the attributes byte
    elif window[1] < 0x80:
        body = pos + 2
        length = half[first - 0x80 + 0x80 * window[1]]
        at = 3
    else:
        return -1
    body_end = body + length
    if length < 3 or body_end > end:
        return -1
    if window[at] < 0x80:  # the timestamp delta: only its extent matters
        at += 1
    elif window[at + 1] < 0x80:
        at += 2
    else:  # records with their own timestamps: up to five bytes (about 199 days)
        stop = at + 5
        at += 2
        while at < stop and window[at] >= 0x80:
            at += 1
        if at == stop:
            return -1
        at += 1
    first = window[at]  # the offset delta: one, two or three bytes
    if first < 0x80:
        if first != delta:
            return -1
        at += 1
    elif window[at + 1] < 0x80:
        if first - 0x80 + 0x80 * window[at + 1] != delta:
            return -1
        at += 2
    elif (
        window[at + 2] < 0x80
        and first - 0x80 + 0x80 * (window[at + 1] - 0x80) + 0x4000 * window[at + 2] == delta
    ):
        at += 3
    else:
        return -1
    first = window[at]  # the key's length: at most the window's twelfth byte
    if first == 1:  # zig-zag -1, a null key: the value's length is in the window too
        first = window[at + 1]
        if first < 0x80:
            at += 2
        elif window[at + 2] < 0x80:
            first = first - 0x80 + 0x80 * window[at + 2]
            at += 3
        else:
            return -1
        at += pos
    else:
        if first < 0x80:
            key = half[first]
            at += 1
        elif window[at + 1] < 0x80:
            key = half[first - 0x80 + 0x80 * window[at + 1]]
            at += 2
        else:
            return -1
        if key < 0:  # a null key written as another negative: left to the full reader
            return -1
        at += pos + key
        if at + 1 >= body_end:
            return -1
        first = data[at]
        if first < 0x80:
            at += 1
        elif data[at + 1] < 0x80:
            first = first - 0x80 + 0x80 * data[at + 1]
            at += 2
        else:
            return -1
    size = half[first]
    if size > 0:  # -1: a null value
        at += size
    if at + 1 == body_end and data[at] == 0:  # the last byte: no headers
        return body_end
    return _common_headers_end(data, at, body_end)


def _common_headers_end(data: bytes, at: int, body_end: int) -> int:
    """``body_end`` if the headers at ``at`` fill the record's body to ``body_end``
    exactly, their count and each length a one- or two-byte varint and no key null;
    else -1 (``_any_record`` then reads the record, and raises if it is wrong)."""
    if at >= body_end:
        return -1
    count = data[at]
    if count >= 0x80 or count % 2:
        return -1
    at += 1
    half = _HALF
    for _ in range(count >> 1):
        for is_key in (True, False):
            if at >= body_end:
                return -1
            first = data[at]
            if first < 0x80:
                at += 1
            elif at + 1 < body_end and data[at + 1] < 0x80:
                first = first - 0x80 + 0x80 * data[at + 1]
                at += 2
            else:
                return -1
            size = half[first]
            if size > 0:
                at += size
            elif size < 0 and is_key:  # Kafka: "Invalid negative header key size"
                return -1
    return body_end if at == body_end else -1


def _any_record(
    data: bytes, pos: int, end: int, index: int, count: int
) -> tuple[int, int, int, int, int]:
    """Record ``index`` of ``count``, at ``pos``, of any shape (Kafka
    ``DefaultRecord.readFrom``); ``INVALID_RECORD`` for one that does not fit. Where its
    body starts and ends, where its offset delta varint starts and ends, and that
    varint's unsigned (still zig-zag encoded) value.

    Records the shortcut does not take (a long record, key or header, or a timestamp
    delta of six bytes or more) come here, so one- and two-byte varints are still read
    inline and ``_varint`` is called only for longer ones."""
    if pos >= end:
        raise _invalid(
            f"Incorrect declared batch size, premature EOF reached: record {index} of {count}"
        )
    byte = data[pos]  # the record's length
    if byte < 0x80:
        raw, body = byte, pos + 1
    elif pos + 1 < end and data[pos + 1] < 0x80:
        raw, body = (byte & 0x7F) | (data[pos + 1] << 7), pos + 2
    else:
        raw, body = _varint_raw(data, pos, end)
    length = (raw >> 1) ^ -(raw & 1)
    body_end = body + length
    if length < 3 or body_end > end:
        raise _invalid(f"record {index} has length {length} beyond the batch")
    # After the attributes byte, the timestamp delta: only its extent matters here.
    at = stamp = body + 1
    while at < body_end and data[at] >= 0x80:
        at += 1
    if at >= body_end or at - stamp >= 10:
        raise _invalid("Found invalid record structure: a truncated or overlong varint")
    at += 1
    delta_start = at
    if at < body_end and data[at] < 0x80:
        delta, at = data[at], at + 1
    elif at + 1 < body_end and data[at + 1] < 0x80:
        delta, at = (data[at] & 0x7F) | (data[at + 1] << 7), at + 2
    else:
        delta, at = _varint_raw(data, at, body_end)
    delta_end = at
    # The key and the value: a varint length and that many bytes (negative: null).
    if at < body_end and data[at] == 1:  # a null key (zig-zag -1)
        at += 1
    else:
        at = _skip_bytes(data, at, body_end, "a key")
    if at < body_end and data[at] < 0x80:
        raw, at = data[at], at + 1
    elif at + 1 < body_end and data[at + 1] < 0x80:
        raw, at = (data[at] & 0x7F) | (data[at + 1] << 7), at + 2
    else:
        raw, at = _varint_raw(data, at, body_end)
    size = (raw >> 1) ^ -(raw & 1)
    if size > 0:
        if at + size > body_end:
            raise _invalid(f"Found invalid record structure: a value of {size} bytes")
        at += size
    if at < body_end and data[at] == 0:  # no headers
        at += 1
    else:
        headers, at = _varint(data, at, body_end)
        if headers < 0:
            raise _invalid(f"Found invalid number of record headers {headers}")
        for _ in range(headers):
            key_size, _ = _varint(data, at, body_end)
            if key_size < 0:
                raise _invalid(f"Invalid negative header key size {key_size}")
            at = _skip_bytes(data, at, body_end, "a header key")
            at = _skip_bytes(data, at, body_end, "a header value")
    if at != body_end:
        raise _invalid(
            f"Invalid record size: expected to read {length} bytes in record payload, "
            f"but instead read {at - body}"
        )
    return body, body_end, delta_start, delta_end, delta


def _rebuild(raw: bytes, codec: int, plain: bytes, spans: array[int]) -> bytes:
    """Rule 4: ``raw`` with its records' offset deltas 0, 1, ... and compressed again."""
    parts = []
    for index in range(len(spans) // 4):
        start, end, delta_start, delta_end = spans[4 * index : 4 * index + 4]
        body = plain[start:delta_start] + write_varint(index) + plain[delta_end:end]
        parts.append(write_varint(len(body)) + body)
    payload = compression.compress(codec, b"".join(parts))
    (base, _, leader_epoch, magic, _, attributes, _, base_ts, max_ts, pid, epoch, seq, count) = (
        _HEADER.unpack_from(raw, 0)
    )
    after_crc = (
        struct.pack(">hiqqqhii", attributes, count - 1, base_ts, max_ts, pid, epoch, seq, count)
        + payload
    )
    length = len(after_crc) + _CRC_START - LOG_OVERHEAD
    return struct.pack(">qiibI", base, length, leader_epoch, magic, crc32c(after_crc)) + after_crc
