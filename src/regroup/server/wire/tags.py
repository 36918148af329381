"""Skip unknown tagged fields in flexible request bodies (KIP-482).

Kafka's protocol guide says a receiver ignores tagged fields it does not know,
which is how new optional fields reach old brokers. kio 0.6.5 raises
``KeyError('Unknown tagged field tag: N')`` instead, so the codec, on that
error, passes the body through ``strip_unknown_tags``: a walk over the kio
schema of the header and the request that copies every byte except the tagged
fields the schema does not declare (at every nesting level), and rewrites the
tag counts. Only flexible versions carry tagged fields; the walk is never on
the fast path. ``codec`` runs it only on a body that ``frame_check`` accepted,
and checks the copy again before kio reads it; the walk still bounds every
count it loops by (an array's by the bytes left, a tag section's by half of
them), so a made-up count is refused at once.
"""

from __future__ import annotations

import dataclasses
import typing
from types import NoneType, UnionType
from typing import Any

from regroup.server.wire.frame_check import FIXED_SIZES, SIZED_TYPES

__all__ = ["TagWalkError", "strip_unknown_tags"]


class TagWalkError(ValueError):
    """The body does not follow the schema (it is malformed, not just extended)."""


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 28:
            raise TagWalkError("bad or truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _count(buf: bytes, pos: int) -> tuple[int, int]:
    """A COMPACT_ARRAY's element count (stored + 1; null is 0 elements), refused when larger
    than the bytes left: an element takes at least one byte, and the loops below must not
    run (or ``kept`` grow) by a count the client made up."""
    stored, pos = _uvarint(buf, pos)
    count = max(stored - 1, 0)
    if count > len(buf) - pos:
        raise TagWalkError(f"array count {count} exceeds the {len(buf) - pos} bytes left")
    return count, pos


def _write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _unwrap(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (UnionType, typing.Union):
        args = [a for a in typing.get_args(hint) if a is not NoneType]
        return args[0], True
    return hint, False


_Layout = tuple[list[tuple[str, Any, bool, bool]], frozenset[int]]
_LAYOUTS: dict[type[Any], _Layout] = {}


def _layout(cls: type[Any]) -> _Layout:
    """(kafka_type or entity class, is_array, optional) per untagged field; the known tags."""
    cached = _LAYOUTS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    fields: list[tuple[str, Any, bool, bool]] = []
    known: set[int] = set()
    for field in dataclasses.fields(cls):
        if "tag" in field.metadata:
            known.add(int(field.metadata["tag"]))
            continue
        hint, optional = _unwrap(hints[field.name])
        is_array = typing.get_origin(hint) is tuple
        inner = _unwrap(typing.get_args(hint)[0])[0] if is_array else hint
        kind: Any = inner if dataclasses.is_dataclass(inner) else field.metadata.get("kafka_type")
        fields.append((field.name, kind, is_array, optional))
    _LAYOUTS[cls] = layout = (fields, frozenset(known))
    return layout


def _skip_primitive(kind: str, buf: bytes, pos: int) -> int:
    if kind in FIXED_SIZES:
        end = pos + FIXED_SIZES[kind]
    elif kind in SIZED_TYPES:
        length, pos = _uvarint(buf, pos)
        end = pos + max(length - 1, 0)
    else:
        raise TagWalkError(f"unknown kafka type {kind!r}")
    if end > len(buf):
        raise TagWalkError("truncated field")
    return end


def _walk(cls: type[Any], buf: bytes, pos: int, out: bytearray, *, header: bool) -> int:
    fields, known = _layout(cls)
    for name, kind, is_array, optional in fields:
        if isinstance(kind, type):
            if is_array:
                start = pos
                count, pos = _count(buf, pos)
                out += buf[start:pos]
                for _ in range(count):
                    pos = _walk(kind, buf, pos, out, header=False)
            else:
                if optional:
                    if pos >= len(buf):
                        raise TagWalkError("truncated struct marker")
                    marker = buf[pos]
                    out.append(marker)
                    pos += 1
                    if marker == 0xFF:
                        continue
                pos = _walk(kind, buf, pos, out, header=False)
            continue
        start = pos
        if header and name == "client_id":
            # Kafka keeps the header's client_id a legacy nullable string (int16 length).
            if pos + 2 > len(buf):
                raise TagWalkError("truncated client id")
            length = int.from_bytes(buf[pos : pos + 2], "big", signed=True)
            pos += 2 + max(length, 0)
        elif is_array:
            count, pos = _count(buf, pos)
            for _ in range(count):
                pos = _skip_primitive(str(kind), buf, pos)
        else:
            pos = _skip_primitive(str(kind), buf, pos)
        if pos > len(buf):
            raise TagWalkError("truncated field")
        out += buf[start:pos]
    count, pos = _uvarint(buf, pos)
    if 2 * count > len(buf) - pos:  # a tag and a size take a byte each at least
        raise TagWalkError(f"{count} tagged fields exceed the {len(buf) - pos} bytes left")
    kept: list[bytes] = []
    for _ in range(count):
        tag_start = pos
        tag, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        if pos + size > len(buf):
            raise TagWalkError("truncated tagged field")
        pos += size
        if tag in known:
            kept.append(buf[tag_start:pos])
    _write_uvarint(out, len(kept))
    for chunk in kept:
        out += chunk
    return pos


def strip_unknown_tags(header_cls: type[Any], request_cls: type[Any], body: bytes) -> bytes:
    """``body`` (header + request) without the tagged fields the schemas do not declare."""
    out = bytearray()
    pos = _walk(header_cls, body, 0, out, header=True) if header_cls.__flexible__ else 0
    if not header_cls.__flexible__:
        raise TagWalkError("a non-flexible request has no tagged fields")
    pos = _walk(request_cls, body, pos, out, header=False)
    out += body[pos:]
    return bytes(out)
