"""Prove that every length and count in a request fits in its frame, before kio reads it.

Why. kio 0.6.5 reads a body in native (Rust) code, which reserves an array's
storage up front from the count the client sent (8 bytes an element). A
COMPACT_ARRAY count of 2^32 - 2 in a 22-byte ListGroups v4 asks it for 32 GiB;
the allocation fails and Rust aborts the process (SIGABRT), which no Python
``except`` catches: one request ended the whole server. Kafka refuses such a
request instead: its generated ``read`` methods throw when an array count
exceeds ``Readable.remaining()``, ``ByteBufferAccessor`` throws when a string
or bytes length does, and ``RequestContext.parseRequest`` turns either into an
``InvalidRequestException``, on which the broker closes that one connection.
``codec`` does the same with the ``FrameCheckError`` raised here.

What. ``check_request(request_cls, body)`` walks the kio schema of the request
header and body in the order kio reads them, but reads only lengths, counts
and varints, and steps over fixed-size fields without looking at them. It
refuses the body (``FrameCheckError``, one line) when

* a STRING or BYTES length, compact (varint, length + 1) or legacy (int16 or
  int32), runs past the end of the body, or a legacy length is below -1;
* an ARRAY count, compact or legacy, times the least size an element can take
  (at least one byte, as Kafka assumes) exceeds the bytes left;
* a tagged-field section counts more tags than two bytes each could hold, or a
  tag's size exceeds the bytes left;
* a varint is longer than 5 bytes (Kafka's ``ByteUtils.readUnsignedVarint``);
* a nullable struct's marker is neither -1 nor 1 (what Kafka's writers send);
* the fixed fields run past the end of the body.

Invariant: up to the first thing it refuses, the walk is at the byte kio is at
(a known tagged field is walked where its value starts and its size is then
ignored, as kio and Kafka's generated code read it; an unknown one is stepped
over by its size, which is what ``tags.strip_unknown_tags`` keeps), so every
count kio would act on was checked first. Nothing here is allocated in
proportion to a count: an array of fixed-size elements is stepped over by one
multiplication, any other array walked element by element, which the bound
above keeps within the body. Trailing bytes after the body are left alone
(kio ignores them).

Cost. The walk is planned once per kio class (a tuple of small closures,
fixed-size runs folded into one offset) and cached; it runs on every request
that kio decodes, so it reads as little as it can.
"""

from __future__ import annotations

import dataclasses
import struct
import typing
from collections.abc import Callable, Mapping
from types import NoneType, UnionType
from typing import Any, Final

__all__ = ["FrameCheckError", "check_header", "check_request"]


class FrameCheckError(ValueError):
    """A length or count that does not fit in the bytes left (the request is malformed)."""


#: A step reads one variable-size field at a position and gives the position after it.
_Step = Callable[[bytes, int], int]

#: Bytes of each fixed-size kio ``kafka_type`` (Kafka's protocol guide, "Protocol Primitive Types").
_FIXED: Final[Mapping[str, int]] = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
#: Types written as a length and that many bytes.
_SIZED: Final = frozenset({"string", "bytes", "records"})

_I8: Final = struct.Struct(">b")
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")


# -- reading what the walk needs ------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """An UNSIGNED_VARINT at ``pos`` (7 bits a byte, low group first): (value, next position)."""
    value = 0
    for shift in (0, 7, 14, 21, 28):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
    raise FrameCheckError(f"varint ending at byte {pos} is longer than 5 bytes")


def _left(data: bytes, pos: int) -> str:
    """The bytes after ``pos``, for a message."""
    left = len(data) - pos
    return f"the {left} byte left" if left == 1 else f"the {left} bytes left"


def _refuse_length(length: int, start: int, pos: int, data: bytes) -> FrameCheckError:
    """A length written at ``start`` that runs past the end from ``pos``, just after it."""
    return FrameCheckError(f"length {length} at byte {start} exceeds {_left(data, pos)}")


def _refuse_count(count: int, least: int, start: int, pos: int, data: bytes) -> FrameCheckError:
    """An array count written at ``start`` that the bytes from ``pos`` cannot hold."""
    each = "" if least == 1 else f" of at least {least} bytes each"
    return FrameCheckError(f"array count {count}{each} at byte {start} exceeds {_left(data, pos)}")


# -- steps, one per kind of variable-size field ----------------------------------------


def _legacy_string(data: bytes, pos: int) -> int:
    """STRING / NULLABLE_STRING: int16 length (-1 null)."""
    length: int = _I16.unpack_from(data, pos)[0]
    pos += 2
    if length > 0:
        if length > len(data) - pos:
            raise _refuse_length(length, pos - 2, pos, data)
        return pos + length
    if length < -1:
        raise FrameCheckError(f"negative length {length} at byte {pos - 2}")
    return pos


def _legacy_bytes(data: bytes, pos: int) -> int:
    """BYTES / NULLABLE_BYTES / RECORDS: int32 length (-1 null)."""
    length: int = _I32.unpack_from(data, pos)[0]
    pos += 4
    if length > 0:
        if length > len(data) - pos:
            raise _refuse_length(length, pos - 4, pos, data)
        return pos + length
    if length < -1:
        raise FrameCheckError(f"negative length {length} at byte {pos - 4}")
    return pos


def _compact_sized(data: bytes, pos: int) -> int:
    """COMPACT_[NULLABLE_]STRING / _BYTES / _RECORDS: varint length + 1 (0 null)."""
    start = pos
    length = data[pos]
    pos += 1
    if length >= 0x80:
        length, pos = _varint(data, start)
    if length > 1:
        length -= 1
        if length > len(data) - pos:
            raise _refuse_length(length, start, pos, data)
        pos += length
    return pos


def _legacy_array(element: _Step | None, least: int) -> _Step:
    """ARRAY: int32 count (-1 null); ``element`` None means ``least`` bytes each, fixed."""

    def step(data: bytes, pos: int) -> int:
        count: int = _I32.unpack_from(data, pos)[0]
        pos += 4
        if count <= 0:
            if count < -1:
                raise FrameCheckError(f"negative array count {count} at byte {pos - 4}")
            return pos
        if count * least > len(data) - pos:
            raise _refuse_count(count, least, pos - 4, pos, data)
        if element is None:
            return pos + count * least
        for _ in range(count):
            pos = element(data, pos)
        return pos

    return step


def _compact_array(element: _Step | None, least: int) -> _Step:
    """COMPACT_ARRAY: varint count + 1 (0 null); ``element`` as for ``_legacy_array``."""

    def step(data: bytes, pos: int) -> int:
        start = pos
        count = data[pos]
        pos += 1
        if count >= 0x80:
            count, pos = _varint(data, start)
        if count <= 1:
            return pos
        count -= 1
        if count * least > len(data) - pos:
            raise _refuse_count(count, least, start, pos, data)
        if element is None:
            return pos + count * least
        for _ in range(count):
            pos = element(data, pos)
        return pos

    return step


def _nullable(struct_step: _Step) -> _Step:
    """A nullable struct (KIP-893): int8 marker, -1 null or 1 and the struct."""

    def step(data: bytes, pos: int) -> int:
        marker: int = _I8.unpack_from(data, pos)[0]
        pos += 1
        if marker == -1:
            return pos
        if marker != 1:
            raise FrameCheckError(f"nullable struct marker {marker} at byte {pos - 1}")
        return struct_step(data, pos)

    return step


def _tagged_fields(data: bytes, pos: int, known: Mapping[int, _Step]) -> int:
    """A tagged-field section (KIP-482): varint count, then ``tag, size, value`` each."""
    start = pos
    count = data[pos]
    pos += 1
    if count == 0:
        return pos
    if count >= 0x80:
        count, pos = _varint(data, start)
    if 2 * count > len(data) - pos:  # a tag and a size take a byte each at least
        raise FrameCheckError(f"{count} tagged fields at byte {start} exceed {_left(data, pos)}")
    for _ in range(count):
        tag, pos = _varint(data, pos)
        start = pos
        size, pos = _varint(data, pos)
        if size > len(data) - pos:
            raise FrameCheckError(
                f"tagged field {tag} of {size} bytes at byte {start} exceeds {_left(data, pos)}"
            )
        value = known.get(tag)
        pos = pos + size if value is None else value(data, pos)
    return pos


def _struct(
    fields: tuple[tuple[int, _Step], ...], tail: int, known: Mapping[int, _Step] | None
) -> _Step:
    """A struct: each variable field after the fixed bytes before it, then the tags."""

    def step(data: bytes, pos: int) -> int:
        for gap, field in fields:
            pos = field(data, pos + gap)
        pos += tail
        if known is not None:
            pos = _tagged_fields(data, pos, known)
        return pos

    return step


# -- planning, once per kio class -----------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    """How to walk one field or struct: ``step`` None means always ``least`` bytes."""

    step: _Step | None
    #: The fixed size, or the least bytes a value can take (for the array bound).
    least: int


_STRUCTS: dict[tuple[type[Any], bool], _Plan] = {}


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (UnionType, typing.Union):
        args = [arg for arg in typing.get_args(hint) if arg is not NoneType]
        if len(args) == 1:
            return args[0], True
    return hint, False


def _field_plan(field: dataclasses.Field[Any], hint: Any, flexible: bool, tagged: bool) -> _Plan:
    hint, optional = _unwrap_optional(hint)
    is_array = typing.get_origin(hint) is tuple
    inner = _unwrap_optional(typing.get_args(hint)[0])[0] if is_array else hint
    if dataclasses.is_dataclass(inner):
        assert isinstance(inner, type)
        # kio writes a tagged struct without the marker (a tag is optional by itself).
        element = _struct_plan(inner, nullable=optional and not is_array and not tagged)
    else:
        kafka_type = str(field.metadata.get("kafka_type"))
        if kafka_type in _FIXED:
            element = _Plan(None, _FIXED[kafka_type])
        elif kafka_type in _SIZED:
            if flexible:
                element = _Plan(_compact_sized, 1)
            elif kafka_type == "string":
                element = _Plan(_legacy_string, 2)
            else:
                element = _Plan(_legacy_bytes, 4)
        else:
            raise TypeError(f"no frame check for kafka_type {kafka_type!r} of {field.name}")
    if not is_array:
        return element
    least = max(element.least, 1)  # as Kafka assumes: an element takes at least one byte
    if flexible:
        return _Plan(_compact_array(element.step, least), 1)
    return _Plan(_legacy_array(element.step, least), 4)


def _struct_plan(cls: type[Any], *, nullable: bool = False, header: bool = False) -> _Plan:
    """The plan of a kio entity class (cached; ``header`` for a request header class)."""
    cached = _STRUCTS.get((cls, nullable))
    if cached is not None and not header:
        return cached
    flexible = bool(cls.__flexible__)
    hints = typing.get_type_hints(cls)
    fields: list[tuple[int, _Step]] = []
    known: dict[int, _Step] = {}
    gap = least = 0
    for field in dataclasses.fields(cls):
        if header and field.name == "client_id":
            # Kafka keeps the header's client id a legacy NULLABLE_STRING in every version.
            plan = _Plan(_legacy_string, 2)
        else:
            tag = field.metadata.get("tag")
            plan = _field_plan(field, hints[field.name], flexible, tag is not None)
            if tag is not None:
                known[int(tag)] = plan.step or _fixed(plan.least)
                continue
        least += plan.least
        if plan.step is None:
            gap += plan.least
        else:
            fields.append((gap, plan.step))
            gap = 0
    if flexible:
        least += 1  # the tagged-field count
    if not fields and not flexible:
        whole = _Plan(None, least)
    else:
        whole = _Plan(_struct(tuple(fields), gap, known if flexible else None), least)
    if nullable:
        whole = _Plan(_nullable(whole.step or _fixed(whole.least)), 1)
    if not header:
        _STRUCTS[(cls, nullable)] = whole
    return whole


def _fixed(size: int) -> _Step:
    def step(data: bytes, pos: int) -> int:
        return pos + size

    return step


# -- entry points -------------------------------------------------------------------


_CHECKS: dict[type[Any], _Step] = {}


def _walker(cls: type[Any], header: bool) -> _Step:
    check = _CHECKS.get(cls)
    if check is None:
        plan = _struct_plan(cls, header=header)
        check = _CHECKS[cls] = plan.step or _fixed(plan.least)
    return check


def _run(check: _Step, data: bytes, pos: int) -> int:
    try:
        end = check(data, pos)
    except (IndexError, struct.error):
        raise FrameCheckError(f"body of {len(data)} bytes ends inside a field") from None
    if end > len(data):
        raise FrameCheckError(f"body of {len(data)} bytes ends {end - len(data)} bytes early")
    return end


def check_header(header_cls: type[Any], body: bytes) -> int:
    """Check a request header (kio's ``RequestHeader`` class) at the start of ``body``.

    Returns the offset of the body after it; raises ``FrameCheckError``.
    """
    return _run(_walker(header_cls, True), body, 0)


def check_request(request_cls: type[Any], body: bytes) -> int:
    """Check header and body of a request of kio class ``request_cls``; ``FrameCheckError`` if not.

    ``body`` is the frame without its size: header, then the request. Returns
    the offset where the request ends (where kio's reader will end).
    """
    offset = check_header(request_cls.__header_schema__, body)
    return _run(_walker(request_cls, False), body, offset)
