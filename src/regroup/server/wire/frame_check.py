"""Prove that every length and count in a request fits in its frame, before kio reads it.

Why. kio 0.6.5 reads a body in native (Rust) code, which reserves an array's
storage up front from the count the client sent (8 bytes an element). A
COMPACT_ARRAY count of 2^32 - 2 in a 22-byte ListGroups v4 asks it for 32 GiB;
the allocation fails and Rust aborts the process (SIGABRT), which no Python
``except`` catches: one request ended the whole server. (kio's strings and
bytes check the bytes left before they allocate; its arrays, compact and
legacy, do not.) Kafka refuses such a request instead: its generated ``read``
methods throw when an array count exceeds ``Readable.remaining()``,
``ByteBufferAccessor`` throws when a string or bytes length does, and
``RequestContext.parseRequest`` turns either into an
``InvalidRequestException``, on which the broker closes that one connection.
``codec`` does the same with the ``FrameCheckError`` raised here.

What. ``check_request(request_cls, body)`` walks the kio schema of the request
header and body in the order kio reads them, but reads only lengths, counts
and varints, and steps over fixed-size fields without looking at them. It
refuses the body (``FrameCheckError``, one line) when

* a STRING or BYTES length, compact (varint, length + 1) or legacy (int16 or
  int32), runs past the end of the body (it is added unchecked, and the next
  read or the last comparison finds the walk past the end), or a legacy
  length is below -1;
* an ARRAY count, compact or legacy, times the least size an element can take
  (at least one byte, as Kafka assumes) exceeds the bytes left;
* a tagged-field section counts more tags than two bytes each could hold, or a
  tag's size exceeds the bytes left;
* a varint is longer than 5 bytes (Kafka's ``ByteUtils.readUnsignedVarint``);
* a nullable struct's marker is neither -1 nor 1 (what Kafka's writers send);
* an array that is not nullable in the request's version has the null count
  (Kafka's generated readers throw "non-nullable field ... was serialized as null";
  kio would read it as ``None`` and the handlers fail on it);
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

Cost: this runs before every request kio decodes, so for each request class
the walk is written out once as the source of one Python function (``source``
shows it): fixed-size runs folded into one addition, one-byte varints read
inline, nested structs and array elements inlined into their loop, string
lengths added without a comparison each (the walk's end is compared once).
That takes half the instructions of a walk that interprets the schema field
by field (callgrind, JoinGroup v5 of 156 bytes: 14 k instead of 31 k, where
kio's decode takes 32 k); the tagged fields that a struct declares, rare on
the wire, go through one shared function (``_tagged_fields``).
"""

from __future__ import annotations

import dataclasses
import struct
import typing
from collections.abc import Callable, Mapping
from types import NoneType, UnionType
from typing import Any, Final

__all__ = [
    "FIXED_SIZES",
    "SIZED_TYPES",
    "FrameCheckError",
    "check_header",
    "check_request",
    "source",
]


class FrameCheckError(ValueError):
    """A length or count that does not fit in the bytes left (the request is malformed)."""


#: A walk from a position to the position after what it walked.
_Walk = Callable[[bytes, int], int]

#: Bytes of each fixed-size kio ``kafka_type`` (Kafka's protocol guide, "Protocol Primitive Types").
FIXED_SIZES: Final[Mapping[str, int]] = {
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
SIZED_TYPES: Final = frozenset({"string", "bytes", "records"})

_I32: Final = struct.Struct(">i").unpack_from


# -- what the generated walks call (the rare and the failing paths) ----------------------


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


def _past_end(pos: int, data: bytes) -> FrameCheckError:
    """The walk went past the end: a length (added unchecked) or the fixed fields overran."""
    return FrameCheckError(f"the fields run {pos - len(data)} bytes past the end of the body")


def _refuse_count(count: int, least: int, start: int, pos: int, data: bytes) -> FrameCheckError:
    """An array count written at ``start`` that the bytes from ``pos`` cannot hold."""
    each = "" if least == 1 else f" of at least {least} bytes each"
    return FrameCheckError(f"array count {count}{each} at byte {start} exceeds {_left(data, pos)}")


def _refuse_negative(what: str, value: int, start: int) -> FrameCheckError:
    return FrameCheckError(f"negative {what} {value} at byte {start}")


def _refuse_null(start: int) -> FrameCheckError:
    """Kafka's generated readers: "non-nullable field ... was serialized as null"."""
    return FrameCheckError(f"null count at byte {start} for an array that is not nullable")


def _refuse_marker(marker: int, start: int) -> FrameCheckError:
    signed = marker - 256 if marker > 127 else marker
    return FrameCheckError(f"nullable struct marker {signed} at byte {start}")


def _tagged_fields(data: bytes, pos: int, known: Mapping[int, _Walk]) -> int:
    """A tagged-field section with tags (KIP-482): varint count, then ``tag, size, value``."""
    start = pos
    count, pos = _varint(data, pos)
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
        walk = known.get(tag)
        pos = pos + size if walk is None else walk(data, pos)
    return pos


# -- the schema, as the walk needs it --------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    """One field of a kio entity: what it holds, and how it is written."""

    kafka_type: str
    #: The nested kio entity class, for a struct or an array of structs.
    entity: type[Any] | None
    is_array: bool
    #: A struct written after a -1/1 marker (KIP-893).
    nullable_struct: bool
    tag: int | None
    #: An array that may be null in this version (its null count is refused otherwise).
    nullable_array: bool = False


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (UnionType, typing.Union):
        args = [arg for arg in typing.get_args(hint) if arg is not NoneType]
        if len(args) == 1:
            return args[0], True
    return hint, False


_FIELDS: dict[type[Any], tuple[_Field, ...]] = {}


def _fields(cls: type[Any], header: bool = False) -> tuple[_Field, ...]:
    cached = _FIELDS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    out = []
    for field in dataclasses.fields(cls):
        hint, optional = _unwrap_optional(hints[field.name])
        is_array = typing.get_origin(hint) is tuple
        inner = _unwrap_optional(typing.get_args(hint)[0])[0] if is_array else hint
        entity = inner if dataclasses.is_dataclass(inner) else None
        kafka_type = str(field.metadata.get("kafka_type"))
        if header and field.name == "client_id":
            # Kafka keeps the header's client id a legacy NULLABLE_STRING in every version.
            kafka_type = "legacy_string"
        elif entity is None and kafka_type not in FIXED_SIZES and kafka_type not in SIZED_TYPES:
            raise TypeError(f"no frame check for kafka_type {kafka_type!r} of {field.name}")
        tag = field.metadata.get("tag")
        out.append(
            _Field(
                kafka_type,
                entity,  # type: ignore[arg-type]
                is_array,
                # kio writes a tagged struct without the marker (a tag is optional by itself).
                entity is not None and optional and not is_array and tag is None,
                None if tag is None else int(tag),
                is_array and optional,
            )
        )
    _FIELDS[cls] = result = tuple(out)
    return result


def _fixed_size(field: _Field) -> int | None:
    """The bytes a field always takes, or None when it varies."""
    if field.is_array or field.nullable_struct:
        return None
    if field.entity is None:
        return FIXED_SIZES.get(field.kafka_type)
    return _struct_size(field.entity)


def _struct_size(cls: type[Any]) -> int | None:
    if cls.__flexible__:
        return None
    total = 0
    for field in _fields(cls):
        size = _fixed_size(field)
        if size is None:
            return None
        total += size
    return total


def _least(field: _Field, flexible: bool) -> int:
    """The fewest bytes a field can take (for the bound on an array count)."""
    size = _fixed_size(field)
    if size is not None:
        return size
    if field.is_array:
        return 1 if flexible else 4
    if field.nullable_struct:
        return 1
    if field.entity is not None:
        cls = field.entity
        inner = sum(_least(f, bool(cls.__flexible__)) for f in _fields(cls) if f.tag is None)
        return inner + (1 if cls.__flexible__ else 0)
    if flexible:
        return 1
    return 2 if field.kafka_type in ("string", "legacy_string") else 4


# -- writing the walk out ----------------------------------------------------------


class _Writer:
    """The source of one walk, a line at a time; constants it needs go to ``namespace``."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.lines: list[str] = []
        self.namespace = namespace

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.namespace)}"
        self.namespace[name] = value
        return name


def _write_struct(out: _Writer, cls: type[Any], depth: int, header: bool = False) -> None:
    """The lines that walk one struct: variable fields in order, fixed runs folded."""
    flexible = bool(cls.__flexible__)
    gap = 0
    known: dict[int, _Walk] = {}
    for field in _fields(cls, header):
        if field.tag is not None:
            known[field.tag] = _compile_field(field, out.namespace)
            continue
        size = _fixed_size(field)
        if size is not None:
            gap += size
            continue
        if gap:
            out.line(depth, f"pos += {gap}")
            gap = 0
        _write_field(out, field, flexible, depth)
    if gap:
        out.line(depth, f"pos += {gap}")
    if flexible:
        # An empty section (a zero byte) is by far the most common.
        out.line(depth, "if data[pos]:")
        out.line(depth + 1, f"pos = _tagged_fields(data, pos, {out.constant(known)})")
        out.line(depth, "else:")
        out.line(depth + 1, "pos += 1")


def _write_count(out: _Writer, flexible: bool, depth: int) -> None:
    """Lines that leave a length or count in ``n`` (compact: stored + 1), its start in ``s``."""
    out.line(depth, "s = pos")
    if flexible:
        out.line(depth, "n = data[pos]")
        out.line(depth, "if n < 0x80:")
        out.line(depth + 1, "pos += 1")
        out.line(depth, "else:")
        out.line(depth + 1, "n, pos = _varint(data, pos)")
    else:
        out.line(depth, "n = _I32(data, pos)[0]")
        out.line(depth, "pos += 4")


def _write_field(out: _Writer, field: _Field, flexible: bool, depth: int) -> None:
    if field.is_array:
        element = dataclasses.replace(field, is_array=False, nullable_array=False)
        least = max(_least(element, flexible), 1)  # as Kafka assumes: at least one byte each
        _write_count(out, flexible, depth)
        if flexible:
            if not field.nullable_array:
                out.line(depth, "if not n:")
                out.line(depth + 1, "raise _refuse_null(s)")
            out.line(depth, "if n > 1:")
            out.line(depth + 1, "n -= 1")
        else:
            out.line(depth, "if n < -1:")
            out.line(depth + 1, "raise _refuse_negative('array count', n, s)")
            if not field.nullable_array:
                out.line(depth, "if n == -1:")
                out.line(depth + 1, "raise _refuse_null(s)")
            out.line(depth, "if n > 0:")
        bound = "n" if least == 1 else f"n * {least}"
        out.line(depth + 1, f"if {bound} > end - pos:")
        out.line(depth + 2, f"raise _refuse_count(n, {least}, s, pos, data)")
        size = _fixed_size(element)
        if size is not None:
            out.line(depth + 1, f"pos += n * {size}")
        else:
            out.line(depth + 1, "for _ in range(n):")
            _write_field(out, element, flexible, depth + 2)
    elif field.nullable_struct:
        assert field.entity is not None
        out.line(depth, "n = data[pos]")
        out.line(depth, "pos += 1")
        out.line(depth, "if n == 1:")
        _write_struct(out, field.entity, depth + 1)
        out.line(depth, "elif n != 0xFF:")
        out.line(depth + 1, "raise _refuse_marker(n, pos - 1)")
    elif field.entity is not None:
        _write_struct(out, field.entity, depth)
    elif field.kafka_type == "legacy_string" or (not flexible and field.kafka_type == "string"):
        # A length is added unchecked: past the end, the next read or the last check refuses.
        out.line(depth, "n = data[pos] << 8 | data[pos + 1]")
        out.line(depth, "if n < 0x8000:")
        out.line(depth + 1, "pos += n + 2")
        out.line(depth, "elif n == 0xFFFF:")
        out.line(depth + 1, "pos += 2")
        out.line(depth, "else:")
        out.line(depth + 1, "raise _refuse_negative('length', n - 0x10000, pos)")
    elif flexible:
        out.line(depth, "n = data[pos]")
        out.line(depth, "if n < 0x80:")
        out.line(depth + 1, "pos += n or 1")  # length + 1, and 1 byte for null (0)
        out.line(depth, "else:")
        out.line(depth + 1, "n, pos = _varint(data, pos)")
        out.line(depth + 1, "pos += n - 1")
    else:
        out.line(depth, "n = _I32(data, pos)[0]")
        out.line(depth, "if n >= 0:")
        out.line(depth + 1, "pos += n + 4")
        out.line(depth, "elif n == -1:")
        out.line(depth + 1, "pos += 4")
        out.line(depth, "else:")
        out.line(depth + 1, "raise _refuse_negative('length', n, pos)")


_GLOBALS: Final[Mapping[str, Any]] = {
    "_I32": _I32,
    "_varint": _varint,
    "_tagged_fields": _tagged_fields,
    "_past_end": _past_end,
    "_refuse_count": _refuse_count,
    "_refuse_marker": _refuse_marker,
    "_refuse_negative": _refuse_negative,
    "_refuse_null": _refuse_null,
}


def _compile(name: str, out: _Writer) -> _Walk:
    head = [f"def {name}(data, pos):", "    end = len(data)"]
    tail = ["    if pos > end:", "        raise _past_end(pos, data)", "    return pos"]
    text = "\n".join([*head, *out.lines, *tail])
    namespace = dict(_GLOBALS)
    namespace.update(out.namespace)
    exec(compile(text, f"<frame_check {name}>", "exec"), namespace)
    walk: _Walk = namespace[name]
    _SOURCES[walk] = text
    return walk


def _compile_field(field: _Field, namespace: dict[str, Any]) -> _Walk:
    """A tagged field's value on its own (kio reads it in place; it is always compact)."""
    out = _Writer(namespace)
    size = _fixed_size(field)
    if size is not None:
        out.line(1, f"pos += {size}")
    else:
        plain = dataclasses.replace(field, tag=None, nullable_struct=False)
        _write_field(out, plain, True, 1)
    return _compile("tagged_field", out)


_SOURCES: dict[_Walk, str] = {}
#: kio class -> its walk from byte 0: a header class's, or a request class's with its header.
_WALKS: dict[type[Any], _Walk] = {}


def _walk(cls: type[Any]) -> _Walk:
    walk = _WALKS.get(cls)
    if walk is None:
        out = _Writer({})
        header = getattr(cls, "__header_schema__", None)
        if header is None:  # a header class itself
            _write_struct(out, cls, 1, header=True)
        else:
            _write_struct(out, header, 1, header=True)
            _write_struct(out, cls, 1)
        walk = _WALKS[cls] = _compile(f"walk_{cls.__name__}_v{cls.__version__}", out)
    return walk


# -- entry points -------------------------------------------------------------------


def check_header(header_cls: type[Any], body: bytes) -> int:
    """Check a request header (kio's ``RequestHeader`` class) at the start of ``body``.

    Returns the offset of the body after it; raises ``FrameCheckError``.
    """
    return check_request(header_cls, body)


def check_request(request_cls: type[Any], body: bytes) -> int:
    """Check header and body of a request of kio class ``request_cls``; ``FrameCheckError`` if not.

    ``body`` is the frame without its size: header, then the request. Returns
    the offset where the request ends (where kio's reader will end).
    """
    walk = _WALKS.get(request_cls) or _walk(request_cls)
    try:
        return walk(body, 0)
    except (IndexError, struct.error):  # a read past the end
        raise FrameCheckError(f"the body ({len(body)} bytes) ends inside a field") from None


def source(cls: type[Any]) -> str:
    """The source of the walk written for kio class ``cls`` (to read or debug it)."""
    return _SOURCES[_walk(cls)]
