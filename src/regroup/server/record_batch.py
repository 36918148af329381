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
``max.message.bytes`` is ``MESSAGE_TOO_LARGE``. In an uncompressed batch every
record's length must fit, the records must fill the batch exactly, and record
``i`` must have offset delta ``i`` (else ``INVALID_RECORD``); a compressed
batch's records are not decompressed (regroup stores them as sent), so only its
header is checked.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

from regroup.model.errors import ErrorCode, KafkaProtocolError

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAX_MESSAGE_BYTES",
    "BatchHeader",
    "check_batch",
    "check_client_batch",
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
    actual = crc32c(bytes(data[pos + _CRC_START : pos + size]))
    if actual != crc:
        raise _corrupt(f"record batch CRC-32C is {actual:#010x}, the header says {crc:#010x}")
    return BatchHeader(base, size, magic, attributes, last_delta, max_ts, count)


def check_client_batch(
    data: bytes, pos: int = 0, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> BatchHeader:
    """Rules 1 and 2 for a batch a producer sent; its header."""
    header = check_batch(data, pos)
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
    if header.attributes & _COMPRESSION == 0:
        _check_records(data, pos + HEADER_SIZE, pos + header.size, header.record_count)
    return header


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """A zig-zag varint (Kafka ``ByteUtils.readVarint``) at ``pos``; (value, next pos)."""
    raw = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _invalid("record with a truncated or overlong varint")
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _check_records(data: bytes, pos: int, end: int, count: int) -> None:
    """Rule 2 for an uncompressed batch's records (Kafka ``DefaultRecord.readFrom``)."""
    for index in range(count):
        if pos >= end:
            raise _invalid(f"batch declares {count} records but holds {index}")
        length, pos = _varint(data, pos, end)
        body_end = pos + length
        if length < 3 or body_end > end:
            raise _invalid(f"record {index} has length {length} beyond the batch")
        at = pos + 1  # attributes
        _, at = _varint(data, at, body_end)  # timestamp delta
        delta, at = _varint(data, at, body_end)
        if delta != index:
            raise _invalid(f"record {index} has offset delta {delta}")
        pos = body_end
    if pos != end:
        raise _invalid(f"batch holds {end - pos} bytes after its {count} records")
