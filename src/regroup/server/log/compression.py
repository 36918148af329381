"""The record-batch codecs: Kafka's ``CompressionType`` ids 1-4, decompressed with a bound.

Kafka: ``CompressionType`` (the ids, in the batch attributes' low three bits),
``GzipCompression`` (``GZIPInputStream``), ``SnappyCompression`` (snappy-java's
``SnappyInputStream``: the xerial framing, a 16-byte header and then chunks of
an int32 length and raw snappy bytes, or one raw snappy block without the
header), ``Lz4Compression`` (``KafkaLZ4BlockInputStream``, the LZ4 frame
format) and ``ZstdCompression`` (zstd frames). gzip is the standard library's
``zlib``; snappy, LZ4 and zstd are ``cramjam``'s.

Rule 1 (``decompress``): a payload is decompressed to at most ``limit`` bytes.
A payload the codec cannot read is ``UNKNOWN_SERVER_ERROR``, what a Kafka
broker answers there (``DefaultRecordBatch`` wraps the stream's ``IOException``
in a ``KafkaException``, which ``ReplicaManager`` maps to no better code); a
gzip stream that ends early is ``INVALID_RECORD`` (Kafka's ``EOFException``:
"Incorrect declared batch size, premature EOF reached"). A payload that would
decompress to more than ``limit`` bytes is ``MESSAGE_TOO_LARGE``: regroup's own
bound against decompression bombs, which Kafka, streaming the records, does not
need. An id outside 0-4 is ``UNKNOWN_SERVER_ERROR`` "Unknown compression type
id" (Kafka's ``CompressionType.forId`` throws ``IllegalArgumentException``).
Rule 2 (``compress``): the same codecs write what the rules above read (the
broker re-compresses a batch whose records it rewrites).
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

import cramjam
import numpy as np

from regroup.model.errors import ErrorCode, KafkaProtocolError

__all__ = [
    "GZIP",
    "LZ4",
    "MAX_DECOMPRESSED_BYTES",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "compress",
    "decompress",
]

NONE: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4
_NAMES: Final = {GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

#: regroup's bound on one batch's decompressed records (64 MiB; Kafka has none).
MAX_DECOMPRESSED_BYTES: Final = 64 * 1024 * 1024

#: snappy-java's stream header: magic, then version and minimum compatible version (int32 1).
_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
#: snappy-java's ``SnappyOutputStream`` default block size.
_XERIAL_BLOCK: Final = 32 * 1024
#: cramjam's messages for "the output buffer is full" (cramjam 2.14): the only errors that
#: mean "too large" rather than "unreadable".
_FULL_BUFFER: Final = ("failed to write whole buffer", "is smaller than required")


def _unreadable(codec: int, reason: object) -> KafkaProtocolError:
    return KafkaProtocolError(
        ErrorCode.UNKNOWN_SERVER_ERROR,
        f"Failed to decompress record stream ({_NAMES[codec]}): {reason}",
    )


def _too_large(codec: int, limit: int) -> KafkaProtocolError:
    return KafkaProtocolError(
        ErrorCode.MESSAGE_TOO_LARGE,
        f"{_NAMES[codec]} record batch decompresses to more than {limit} bytes",
    )


def _check_id(codec: int) -> None:
    if codec not in _NAMES:
        raise KafkaProtocolError(
            ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {codec}"
        )


def decompress(codec: int, payload: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Rule 1: the records of a batch compressed with ``codec``."""
    _check_id(codec)
    if codec == GZIP:
        return _gunzip(payload, limit)
    if codec == SNAPPY:
        return _unsnappy(payload, limit)
    return _bounded(codec, payload, limit)


def _gunzip(payload: bytes, limit: int) -> bytes:
    stream = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = stream.decompress(payload, limit + 1)
    except zlib.error as exc:
        raise _unreadable(GZIP, exc) from None
    if len(out) > limit:
        raise _too_large(GZIP, limit)
    if not stream.eof:
        raise KafkaProtocolError(
            ErrorCode.INVALID_RECORD, "Incorrect declared batch size, premature EOF reached"
        )
    return out


def _snappy_block(block: bytes, room: int) -> bytes:
    try:
        size = cramjam.snappy.decompress_raw_len(block)
        if size > room:
            raise _too_large(SNAPPY, room)
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise _unreadable(SNAPPY, exc) from None


def _unsnappy(payload: bytes, limit: int) -> bytes:
    if not payload.startswith(_XERIAL_MAGIC):
        return _snappy_block(payload, limit)
    if len(payload) < len(_XERIAL_HEADER):
        raise _unreadable(SNAPPY, "truncated stream header")
    parts: list[bytes] = []
    size = 0
    pos = len(_XERIAL_HEADER)
    while pos < len(payload):
        if pos + 4 > len(payload):
            raise _unreadable(SNAPPY, "truncated chunk length")
        (length,) = struct.unpack_from(">i", payload, pos)
        pos += 4
        if length < 0 or pos + length > len(payload):
            raise _unreadable(SNAPPY, f"chunk of {length} bytes beyond the stream")
        try:
            part = _snappy_block(payload[pos : pos + length], limit - size)
        except KafkaProtocolError as exc:
            if exc.code == ErrorCode.MESSAGE_TOO_LARGE:
                raise _too_large(SNAPPY, limit) from None
            raise
        parts.append(part)
        size += len(part)
        pos += length
    return b"".join(parts)


def _bounded(codec: int, payload: bytes, limit: int) -> bytes:
    """LZ4 and zstd into a lazily zeroed buffer of ``limit + 1`` bytes (pages are touched
    only as they are written)."""
    module = cramjam.lz4 if codec == LZ4 else cramjam.zstd
    buffer = np.zeros(limit + 1, dtype=np.uint8)
    try:
        written = int(module.decompress_into(payload, buffer))
    except cramjam.DecompressionError as exc:
        if any(text in str(exc) for text in _FULL_BUFFER):
            raise _too_large(codec, limit) from None
        raise _unreadable(codec, exc) from None
    if written > limit:
        raise _too_large(codec, limit)
    return buffer[:written].tobytes()


def compress(codec: int, data: bytes) -> bytes:
    """Rule 2: ``data`` compressed with ``codec`` as Kafka's producers write it."""
    _check_id(codec)
    if codec == GZIP:
        stream = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
        return stream.compress(data) + stream.flush()
    if codec == SNAPPY:
        parts = [_XERIAL_HEADER]
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
            parts.append(struct.pack(">i", len(block)) + block)
        return b"".join(parts)
    module = cramjam.lz4 if codec == LZ4 else cramjam.zstd
    return bytes(module.compress(data))
