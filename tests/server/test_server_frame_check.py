"""A count larger than the frame is refused before kio allocates.

kio's native reader reserves an array's storage from the count it reads; one
22-byte ListGroups v4 whose COMPACT_ARRAY count is 2^32 - 2 made that
allocation fail and Rust abort the server (SIGABRT). ``frame_check`` proves
every length and count fits before kio sees the body. An abort here would kill
the test process, so every test that lets kio read a body it did not build
first walks that body with kio's own primitive readers (``_kio_walk``, which
reserves nothing) and asserts that no array count exceeds the bytes left.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)
from kio.serial._parse import get_reader
from kio.serial.readers import (
    read_compact_array_length,
    read_int8,
    read_legacy_array_length,
    read_unsigned_varint,
)

import regroup
from regroup.server.clients.wire_client import RequestEncoder, WireClient
from regroup.server.control.fuzz import minimal_request, sample_request, seed_body
from regroup.server.wire import codec, frame_check, heartbeat_codec, tags
from regroup.server.wire.versions import ADVERTISED, INSTALL_ASSIGNMENT_KEY, PREPARE_ASSIGNMENT_KEY

#: The frame of the issue: size 18, ListGroups v4, correlation id 1, client id "x",
#: no header tags, then a states_filter COMPACT_ARRAY whose count varint is 2^32 - 1.
ISSUE_FRAME = bytes.fromhex("00000012001000040000000100017800ffffffff0f00")

SUPPORTED = [
    (key, v) for key, (low, high) in sorted(ADVERTISED.items()) for v in range(low, high + 1)
]
PRIVATE = [(PREPARE_ASSIGNMENT_KEY, 0), (INSTALL_ASSIGNMENT_KEY, 0)]


# -- valid requests: every field present, every array one element long ----------------

_sample = sample_request
_BODIES: dict[tuple[int, int], bytes] = {}


def valid_body(api_key: int, version: int) -> bytes:
    """The frame (without its size) of a valid request that uses every field of its version."""
    body = _BODIES.get((api_key, version))
    if body is None:
        body = _BODIES[(api_key, version)] = seed_body(api_key, version, client_id="test")
    return body


# -- an oracle: kio's walk with kio's own primitive readers, reserving nothing -----------


class _KioStops(Exception):
    """kio would raise here (a benign error): it reads no count after this point."""


@dataclasses.dataclass
class _Count:
    """A length or count the oracle read: where, how it is written, what it says."""

    pos: int
    width: int
    encoding: str  # "varint", "int16" or "int32"
    what: str  # "array", "length", "tag count" or "tag size"


#: kio's native reader reserves one 8-byte slot per array element it is told of.
SLOT_BYTES = 8

_FIXED = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
    "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8,
    "datetime_i64": 8, "uuid": 16,
}  # fmt: skip


def least_bytes(cls: Any) -> int:
    """The fewest bytes a kio entity can be written in (Kafka's protocol guide), computed from
    kio's schema independently of ``frame_check``."""
    flexible = bool(cls.__flexible__)
    total = 1 if flexible else 0  # the tagged-field section's count
    for field in dataclasses.fields(cls):
        if get_field_tag(field) is None:
            total += _least_field(field, flexible)
    return total


def _least_field(field: Any, flexible: bool) -> int:
    kind = classify_field(field)
    if isinstance(kind, (EntityTupleField, PrimitiveTupleField)):
        return 1 if flexible else 4
    if isinstance(kind, EntityField):
        return 1 if is_optional(field) else least_bytes(kind.type_)
    return _least_primitive(field.metadata["kafka_type"], flexible)


def _least_primitive(kafka_type: str, flexible: bool) -> int:
    if kafka_type in _FIXED:
        return _FIXED[kafka_type]
    if flexible:
        return 1
    return 2 if kafka_type == "string" else 4


def _least_element(kind: Any, field: Any, flexible: bool) -> int:
    if isinstance(kind, EntityTupleField):
        return max(least_bytes(kind.type_), 1)
    return max(_least_primitive(field.metadata["kafka_type"], flexible), 1)


class KioWalk:
    """Walks a body as kio reads it; asserts every array count fits in the bytes left at
    the least size of its element, and adds up what kio reserves for the counts."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.counts: list[_Count] = []
        #: Bytes kio reserves for the arrays it is told of (``SLOT_BYTES`` an element).
        self.reserved = 0

    def _read(self, reader: Any, pos: int) -> tuple[Any, int]:
        try:
            value, size = reader(self.data, pos)
        except Exception as exc:  # kio's own error: kio stops here too
            raise _KioStops(repr(exc)) from None
        return value, pos + size

    def _count(self, pos: int, flexible: bool, least: int) -> tuple[int, int]:
        reader = read_compact_array_length if flexible else read_legacy_array_length
        count, end = self._read(reader, pos)
        self.counts.append(_Count(pos, end - pos, "varint" if flexible else "int32", "array"))
        if count is None or count < 0:
            if count is not None and count < -1:
                raise _KioStops("negative count")
            return 0, end
        left = len(self.data) - end
        assert count * least <= left, (
            f"kio would reserve {count} elements of at least {least} bytes with {left} bytes left"
        )
        self.reserved += SLOT_BYTES * int(count)
        return int(count), end

    def _primitive(self, kafka_type: str, flexible: bool, optional: bool, pos: int) -> int:
        if kafka_type in ("string", "bytes", "records"):
            if flexible:
                _, width = self._read(read_unsigned_varint, pos)
                self.counts.append(_Count(pos, width - pos, "varint", "length"))
            elif kafka_type == "string":
                self.counts.append(_Count(pos, 2, "int16", "length"))
            else:
                self.counts.append(_Count(pos, 4, "int32", "length"))
        return self._read(get_reader(kafka_type, flexible, optional), pos)[1]

    def _field(self, owner: Any, field: Any, pos: int, *, tagged: bool, header: bool) -> int:
        flexible = bool(owner.__flexible__)
        if header and field.name == "client_id":
            return self._primitive("string", False, True, pos)
        kind = classify_field(field)
        optional = False if tagged else is_optional(field)
        if isinstance(kind, (EntityTupleField, PrimitiveTupleField)):
            count, pos = self._count(pos, flexible, _least_element(kind, field, flexible))
            for _ in range(count):
                if isinstance(kind, EntityTupleField):
                    pos = self.entity(kind.type_, pos)
                else:
                    pos = self._primitive(field.metadata["kafka_type"], flexible, False, pos)
            return pos
        if isinstance(kind, EntityField):
            if optional:
                marker, pos = self._read(read_int8, pos)
                if marker < 0:
                    return pos
            return self.entity(kind.type_, pos)
        return self._primitive(field.metadata["kafka_type"], flexible, optional, pos)

    def entity(self, cls: Any, pos: int, *, header: bool = False) -> int:
        known = {}
        for field in dataclasses.fields(cls):
            tag = get_field_tag(field)
            if tag is not None:
                known[int(tag)] = field
            else:
                pos = self._field(cls, field, pos, tagged=False, header=header)
        if not cls.__flexible__:
            return pos
        start = pos
        count, pos = self._read(read_unsigned_varint, pos)
        self.counts.append(_Count(start, pos - start, "varint", "tag count"))
        for _ in range(count):
            tag, pos = self._read(read_unsigned_varint, pos)
            start = pos
            _size, pos = self._read(read_unsigned_varint, pos)  # kio ignores a known tag's size
            self.counts.append(_Count(start, pos - start, "varint", "tag size"))
            if tag not in known:
                raise _KioStops(f"unknown tag {tag}")  # kio's KeyError; codec strips it
            pos = self._field(cls, known[tag], pos, tagged=True, header=header)
        return pos


def kio_walk(request_cls: Any, data: bytes) -> KioWalk:
    """The oracle over header and body; AssertionError if kio would reserve too much."""
    walk = KioWalk(data)
    try:
        offset = walk.entity(request_cls.__header_schema__, 0, header=True)
        walk.entity(request_cls, offset)
    except _KioStops:
        pass
    return walk


def guarded_decode(data: bytes) -> codec.DecodedRequest | None:
    """``decode_request`` after proving kio will not reserve more than the body.

    Returns None when the request was refused (``RequestError``), which is the
    only other outcome allowed.
    """
    if len(data) >= 4:
        api_key, version = struct.unpack_from(">hh", data, 0)
        if (api_key, version) in SUPPORTED:
            cls: Any = load_request_schema(api_key, version)
            try:
                frame_check.check_request(cls, data)
            except frame_check.FrameCheckError:
                with pytest.raises(codec.MalformedRequestError):
                    codec.decode_request(data)
                return None
            kio_walk(cls, data)
            try:
                cleaned = tags.strip_unknown_tags(cls.__header_schema__, cls, data)
                frame_check.check_request(cls, cleaned)
            except Exception:
                pass  # nothing to strip, or the copy is refused before kio reads it
            else:
                kio_walk(cls, cleaned)
    try:
        return codec.decode_request(data)
    except codec.RequestError:
        return None


# -- the frame of the issue ---------------------------------------------------------


def test_server_frame_check_refuses_the_22_byte_list_groups_of_issue_20() -> None:
    body = ISSUE_FRAME[4:]
    assert len(ISSUE_FRAME) == 22 and struct.unpack(">i", ISSUE_FRAME[:4]) == (len(body),)
    with pytest.raises(
        frame_check.FrameCheckError,
        match="array count 4294967294 at byte 12 exceeds the 1 byte left",
    ):
        frame_check.check_request(load_request_schema(16, 4), body)
    with pytest.raises(codec.MalformedRequestError) as info:
        codec.decode_request(body)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (16, 4, 1)
    assert "exceeds the 1 byte left" in str(info.value) and "\n" not in str(info.value)


# -- every supported request, valid and then inflated ----------------------------------


@pytest.mark.parametrize(("api_key", "version"), SUPPORTED)
def test_server_frame_check_accepts_every_valid_request_and_ends_where_kio_ends(
    api_key: int, version: int
) -> None:
    cls: Any = load_request_schema(api_key, version)
    body = valid_body(api_key, version)
    walk = kio_walk(cls, body)
    assert walk.counts, "the oracle saw no length at all"
    end = frame_check.check_request(cls, body)
    header, offset = entity_reader(cls.__header_schema__)(body, 0)
    request, size = entity_reader(cls)(body, offset)
    assert end == offset + size == len(body)
    assert request == _sample(cls) and header.client_id == "test"
    assert codec.decode_request(body).body == request


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _inflate(body: bytes, count: _Count, *, just_past: bool) -> bytes:
    """``body`` with the length or count at ``count`` made larger than what is left.

    ``just_past``: one more element or byte than is left (each element taken as
    one byte, the least bound); otherwise the largest value of the encoding.
    """
    before, after = body[: count.pos], body[count.pos + count.width :]
    if count.encoding == "int16":
        assert len(after) < 0x7FFF
        return before + struct.pack(">h", len(after) + 1 if just_past else 0x7FFF) + after
    if count.encoding == "int32":
        return before + struct.pack(">i", len(after) + 1 if just_past else 0x7FFFFFFF) + after
    if not just_past:
        return before + b"\xff\xff\xff\xff\x0f" + after
    # A compact length stores n + 1; a tag count or size stores n itself.
    return before + _varint(len(after) + 2) + after


@pytest.mark.parametrize(("api_key", "version"), SUPPORTED)
def test_server_frame_check_refuses_every_inflated_length_and_count(
    api_key: int, version: int
) -> None:
    cls: Any = load_request_schema(api_key, version)
    body = valid_body(api_key, version)
    counts = kio_walk(cls, body).counts
    for count in counts:
        for just_past in (False, True):
            inflated = _inflate(body, count, just_past=just_past)
            with pytest.raises(frame_check.FrameCheckError):
                frame_check.check_request(cls, inflated)
            with pytest.raises(codec.MalformedRequestError):
                codec.decode_request(inflated)


@pytest.mark.parametrize(("api_key", "version"), [(1, 12), (1, 15), (1, 17)])
def test_server_frame_check_reads_a_known_tag_in_place_as_kio_does(
    api_key: int, version: int
) -> None:
    """kio (like Kafka's generated code) reads a known tag's value where it starts and
    ignores its size; a walk that skipped by the size would check other bytes than
    kio reads. Every known tag's size is set to 0 here: both still end together."""
    cls: Any = load_request_schema(api_key, version)
    body = valid_body(api_key, version)
    sizes = [c for c in kio_walk(cls, body).counts if c.what == "tag size"]
    assert sizes  # Fetch v12+: cluster_id; v15+: replica_state; v17: replica_directory_id
    for size in sizes:
        assert body[size.pos] > 0
        lying = body[: size.pos] + b"\x00" + body[size.pos + 1 :]
        _header, offset = entity_reader(cls.__header_schema__)(lying, 0)
        request, read = entity_reader(cls)(lying, offset)
        assert request == _sample(cls)
        assert frame_check.check_request(cls, lying) == offset + read == len(lying)


def test_server_frame_check_refuses_what_it_must_and_only_that() -> None:
    """Edges the sample bodies do not reach: long varints, bad markers, exact fits."""
    list_groups: Any = load_request_schema(16, 4)  # states_filter: COMPACT_ARRAY of STRING
    prefix = valid_body(16, 4)[:15]  # header v2: prefix, client id "test", no tags
    assert frame_check.check_header(list_groups.__header_schema__, prefix) == 15
    assert frame_check.check_request(list_groups, prefix + b"\x02\x02s\x00") == 19
    assert frame_check.check_request(list_groups, prefix + b"\x04\x00\x00\x00\x00") == 20
    assert frame_check.check_request(list_groups, prefix + b"\x01\x01\x09\x01x") == 20
    for bad, message in [
        (b"\x00\x00", "null count at byte 15 for an array that is not nullable"),
        (b"\x80\x80\x80\x80\x80\x01\x00", "longer than 5 bytes"),
        (b"\x05\x02s\x00", "array count 4 at byte 15 exceeds the 3 bytes left"),
        (b"\x02\x04s\x00", "ends inside a field"),  # a length past the end, then the tags
        (b"\x01\x05", "5 tagged fields"),
        (b"\x01\x01\x09\x09", "tagged field 9 of 9 bytes at byte 18 exceeds the 0 bytes left"),
        (b"\x01", "ends inside a field"),
    ]:
        with pytest.raises(frame_check.FrameCheckError, match=message):
            frame_check.check_request(list_groups, prefix + bad)


def test_server_frame_check_legacy_lengths_and_counts() -> None:
    describe: Any = load_request_schema(15, 0)  # groups: ARRAY of STRING, header v1
    body = valid_body(15, 0)
    header_end = frame_check.check_header(describe.__header_schema__, body)
    head = body[:header_end]
    assert frame_check.check_request(describe, head + struct.pack(">ih", 1, 1) + b"g")
    for bad, message in [
        (struct.pack(">i", -1), "null count at byte 14 for an array that is not nullable"),
        (struct.pack(">i", -2), "negative array count -2"),
        (struct.pack(">i", 2**31 - 1), "array count 2147483647 of at least 2 bytes each"),
        (struct.pack(">ih", 1, -2), "negative length -2"),
        (struct.pack(">ih", 1, 3) + b"g", "the fields run 2 bytes past the end of the body"),
        (b"\x00\x00", "ends inside a field"),
    ]:
        with pytest.raises(frame_check.FrameCheckError, match=message):
            frame_check.check_request(describe, head + bad)
    # The header's client id is an int16-length string in every header version.
    with pytest.raises(frame_check.FrameCheckError, match="run 32766 bytes past the end"):
        frame_check.check_header(describe.__header_schema__, body[:8] + b"\x7f\xff" + b"x")


def test_server_frame_check_plans_once_per_class() -> None:
    cls: Any = load_request_schema(11, 5)
    frame_check.check_request(cls, valid_body(11, 5))
    planned = dict(frame_check._WALKS)
    frame_check.check_request(cls, valid_body(11, 5))
    assert planned == frame_check._WALKS and cls in planned


def test_server_strip_unknown_tags_refuses_counts_larger_than_the_body() -> None:
    """The walk that removes unknown tags runs no loop by a count it has not bounded."""
    cls: Any = load_request_schema(16, 4)
    header_cls = cls.__header_schema__
    with pytest.raises(tags.TagWalkError, match="array count 4294967294 exceeds the 1 bytes"):
        tags.strip_unknown_tags(header_cls, cls, ISSUE_FRAME[4:])
    body = valid_body(16, 4)
    assert body[-1] == 0  # the body's tagged-field count
    with pytest.raises(tags.TagWalkError, match="4294967295 tagged fields"):
        tags.strip_unknown_tags(header_cls, cls, body[:-1] + b"\xff\xff\xff\xff\x0f")
    with pytest.raises(codec.MalformedRequestError):
        codec.decode_request(body[:-1] + b"\xff\xff\xff\xff\x0f")


# -- fuzz: mutated valid requests of every supported version ----------------------------

_HUGE_VARINTS = [b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08", b"\xff\xff\x03", b"\xff\x7f"]
_HUGE_INTS = [0x7FFFFFFF, 0x01000000, 0x00010000, 0x7FFF, -2, -1, 0]


@st.composite
def mutated_requests(draw: st.DrawFn) -> bytes:
    """A valid request of any supported version and API, with one to three mutations."""
    api_key, version = draw(st.sampled_from(SUPPORTED + PRIVATE))
    data = bytearray(valid_body(api_key, version))
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(["flip", "varint", "int32", "int16", "cut", "insert"]))
        at = draw(st.integers(8, max(8, len(data))))
        if what == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif what == "varint":
            data[at : at + 1] = draw(st.sampled_from(_HUGE_VARINTS))
        elif what == "int32":
            data[at : at + 4] = struct.pack(">i", draw(st.sampled_from(_HUGE_INTS)))
        elif what == "int16":
            data[at : at + 2] = struct.pack(">h", draw(st.sampled_from(_HUGE_INTS[3:])))
        elif what == "cut":
            del data[draw(st.integers(0, len(data))) :]
        elif what == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
    return bytes(data)


@settings(max_examples=1200, deadline=None, derandomize=True)
@given(mutated_requests())
def test_server_mutated_requests_of_every_version_decode_or_are_refused(data: bytes) -> None:
    decoded = guarded_decode(data)
    if decoded is not None:
        assert (decoded.api_key, decoded.api_version) in SUPPORTED + PRIVATE
    if data[:4] in (b"\x00\x44\x00\x00", b"\x00\x44\x00\x01"):
        with contextlib.suppress(heartbeat_codec.HeartbeatDecodeError):
            heartbeat_codec.decode_request(data)


# -- a real server survives the frame -------------------------------------------------


def _src_dir() -> Path:
    return Path(regroup.__file__).resolve().parent.parent


@pytest.fixture
def serve_process() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """``regroup serve --port 0`` in a subprocess, and the port it announced."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_src_dir()), env.get("PYTHONPATH")]))
    code = "import sys; from regroup.cli.main import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--port", "0", "--log-level", "WARNING"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        port = 0
        while not port:
            ready, _, _ = select.select([proc.stderr], [], [], 60)
            line = proc.stderr.readline() if ready else ""
            if not line:
                raise RuntimeError(f"regroup serve did not start (exit {proc.poll()})")
            if "serving on" in line:
                port = int(line.rsplit(":", 1)[1])
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()


def test_server_process_survives_the_22_byte_list_groups(
    serve_process: tuple[subprocess.Popen[str], int],
) -> None:
    proc, port = serve_process
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(ISSUE_FRAME)
        assert sock.recv(1) == b""  # Kafka's answer: the connection is closed (codec rule 4)
    assert proc.poll() is None, f"regroup serve died with exit code {proc.returncode}"
    with WireClient("127.0.0.1", port, timeout=30) as client:
        versions = client.request(
            18, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
        assert versions.error_code == KioErrorCode.none
        listed = client.request(16, 4, {"states_filter": ()})
        assert listed.error_code == KioErrorCode.none and listed.groups == ()
    assert proc.poll() is None
    proc.terminate()
    assert proc.wait(timeout=30) == 0
    assert proc.stderr is not None
    log = proc.stderr.read()
    assert "array count 4294967294" in log and "closing" in log


# -- what kio reserves: at most SLOT_BYTES per byte of the body ------------------------------

minimal_entity = minimal_request


@st.composite
def packed_requests(draw: st.DrawFn) -> tuple[Any, bytes]:
    """A valid request of any supported version whose arrays hold many smallest elements."""
    api_key, version = draw(st.sampled_from(SUPPORTED))
    cls: Any = load_request_schema(api_key, version)
    entity = minimal_entity(cls, draw(st.sampled_from([0, 1, 7, 300, 2000])))
    return cls, RequestEncoder("x").encode(api_key, version, entity)[1][4:]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(packed_requests())
def test_server_kio_never_reserves_more_than_eight_bytes_a_body_byte(
    packed: tuple[Any, bytes],
) -> None:
    cls, body = packed
    frame_check.check_request(cls, body)
    walk = kio_walk(cls, body)  # asserts count x least element size <= bytes left, each
    assert walk.reserved <= SLOT_BYTES * len(body)
    assert codec.decode_request(body) is not None


@settings(max_examples=300, deadline=None, derandomize=True)
@given(mutated_requests())
def test_server_mutated_requests_reserve_at_most_eight_bytes_a_body_byte(data: bytes) -> None:
    api_key, version = struct.unpack_from(">hh", data, 0) if len(data) >= 4 else (-1, -1)
    if (api_key, version) not in SUPPORTED:
        return
    cls: Any = load_request_schema(api_key, version)
    try:
        frame_check.check_request(cls, data)
    except frame_check.FrameCheckError:
        return
    assert kio_walk(cls, data).reserved <= SLOT_BYTES * len(data)


def test_server_frame_check_bounds_a_count_by_its_elements_least_size() -> None:
    # OffsetFetch v1: topics ARRAY of {name STRING, partition_indexes ARRAY of INT32}. A
    # count that fits one byte an element but not the 6 bytes an element takes at least
    # is refused at the count (Kafka's generated code bounds by one byte an element).
    cls: Any = load_request_schema(9, 1)
    body = RequestEncoder("x").encode(9, 1, minimal_entity(cls, 0))[1][4:]
    assert body.endswith(b"\x00\x00\x00\x00")  # topics: count 0, nothing after it
    left = 30
    inflated = body[:-4] + struct.pack(">i", left // 6 + 1) + b"\x00" * left
    with pytest.raises(frame_check.FrameCheckError, match="of at least 6 bytes each"):
        frame_check.check_request(cls, inflated)
    exact = body[:-4] + struct.pack(">i", left // 6) + (b"\x00\x00" + b"\x00\x00\x00\x00") * 5
    assert frame_check.check_request(cls, exact) == len(exact)
