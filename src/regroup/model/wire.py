"""Kafka's primitive encodings for the non-flexible structures regroup embeds.

The classic protocol carries opaque bytes that clients and assignors encode
with Kafka's ``Struct`` primitives (the embedded ``ConsumerProtocolSubscription``
/ ``ConsumerProtocolAssignment`` and the ``sticky`` assignor's user data): all
big-endian; ``STRING`` = int16 length + UTF-8; ``NULLABLE_STRING`` with length
-1 for null; ``BYTES`` = int32 length; ``NULLABLE_BYTES`` with -1 for null;
``ARRAY`` = int32 count (-1 for a null array). See Kafka's protocol guide,
"Protocol Primitive Types".

A reader that runs out of bytes raises ``WireFormatError``: a truncated or
corrupt input is the sender's mistake and must be answered, never crash.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["ByteReader", "ByteWriter", "WireFormatError"]

T = TypeVar("T")

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class WireFormatError(ValueError):
    """Bytes that do not decode as the structure they claim to be."""


class ByteWriter:
    """Appends Kafka primitives to a growing buffer."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int8(self, value: int) -> ByteWriter:
        self._parts.append(_I8.pack(value))
        return self

    def int16(self, value: int) -> ByteWriter:
        self._parts.append(_I16.pack(value))
        return self

    def int32(self, value: int) -> ByteWriter:
        self._parts.append(_I32.pack(value))
        return self

    def int64(self, value: int) -> ByteWriter:
        self._parts.append(_I64.pack(value))
        return self

    def string(self, value: str) -> ByteWriter:
        data = value.encode("utf-8")
        if len(data) > 0x7FFF:
            raise WireFormatError(f"string of {len(data)} bytes is longer than an int16 length")
        self._parts.append(_I16.pack(len(data)))
        self._parts.append(data)
        return self

    def nullable_string(self, value: str | None) -> ByteWriter:
        if value is None:
            self._parts.append(_I16.pack(-1))
            return self
        return self.string(value)

    def bytes_(self, value: bytes) -> ByteWriter:
        self._parts.append(_I32.pack(len(value)))
        self._parts.append(bytes(value))
        return self

    def nullable_bytes(self, value: bytes | None) -> ByteWriter:
        if value is None:
            self._parts.append(_I32.pack(-1))
            return self
        return self.bytes_(value)

    def array(
        self, items: Sequence[T], write_item: Callable[[ByteWriter, T], object]
    ) -> ByteWriter:
        self._parts.append(_I32.pack(len(items)))
        for item in items:
            write_item(self, item)
        return self

    def int32_array(self, values: Sequence[int]) -> ByteWriter:
        self._parts.append(_I32.pack(len(values)))
        if values:
            self._parts.append(struct.pack(f">{len(values)}i", *values))
        return self

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


class ByteReader:
    """Reads Kafka primitives from a buffer, raising ``WireFormatError`` on underflow."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self._data = bytes(data)
        self._pos = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos

    def _take(self, fmt: struct.Struct, what: str) -> int:
        pos = self._pos
        end = pos + fmt.size
        if end > len(self._data):
            raise WireFormatError(f"truncated input: expected {what} at byte {pos}")
        (value,) = fmt.unpack_from(self._data, pos)
        self._pos = end
        return int(value)

    def int8(self) -> int:
        return self._take(_I8, "an int8")

    def int16(self) -> int:
        return self._take(_I16, "an int16")

    def int32(self) -> int:
        return self._take(_I32, "an int32")

    def int64(self) -> int:
        return self._take(_I64, "an int64")

    def _raw(self, length: int, what: str) -> bytes:
        if length < 0 or self.remaining < length:
            raise WireFormatError(f"truncated input: {what} of {length} bytes at byte {self._pos}")
        chunk = self._data[self._pos : self._pos + length]
        self._pos += length
        return chunk

    def string(self) -> str:
        length = self.int16()
        if length < 0:
            raise WireFormatError(f"null where a string is required, at byte {self._pos}")
        try:
            return self._raw(length, "a string").decode("utf-8")
        except UnicodeDecodeError:
            raise WireFormatError(f"string at byte {self._pos} is not UTF-8") from None

    def nullable_string(self) -> str | None:
        length = self.int16()
        if length == -1:
            return None
        if length < 0:
            raise WireFormatError(f"negative string length {length}")
        try:
            return self._raw(length, "a string").decode("utf-8")
        except UnicodeDecodeError:
            raise WireFormatError(f"string at byte {self._pos} is not UTF-8") from None

    def bytes_(self) -> bytes:
        length = self.int32()
        if length < 0:
            raise WireFormatError(f"null where bytes are required, at byte {self._pos}")
        return self._raw(length, "bytes")

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        if length == -1:
            return None
        return self._raw(length, "bytes")

    def array(self, read_item: Callable[[ByteReader], T]) -> list[T]:
        count = self.int32()
        if count < 0:
            raise WireFormatError(f"null or negative array length {count} at byte {self._pos}")
        # Every element takes at least one byte: a count beyond the input is corrupt,
        # and must not make us allocate a huge list.
        if count > self.remaining:
            raise WireFormatError(f"array of {count} elements is longer than the input")
        return [read_item(self) for _ in range(count)]

    def int32_array(self) -> list[int]:
        count = self.int32()
        if count < 0:
            raise WireFormatError(f"null or negative array length {count} at byte {self._pos}")
        raw = self._raw(4 * count, "an int32 array")
        return list(struct.unpack(f">{count}i", raw))
