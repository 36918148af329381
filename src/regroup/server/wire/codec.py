"""The thin adapter between Kafka frames and kio's message classes.

Theory of operation: a frame is a 4-byte big-endian size and a body. The body
of a request starts with ``api_key: int16, api_version: int16,
correlation_id: int32`` in every header version, so those three are read by
hand first; the rest of the header (v1 non-flexible, v2 flexible) and the body
are decoded by kio 0.6.5 (``entity_reader(cls)(buffer, offset) -> (value,
size)``). Responses go the other way with ``entity_writer``; ApiVersions always
gets response header v0 (Kafka's ``ApiMessageTypeGenerator`` special case).

Rule 1: nothing that a client sends may raise out of ``decode_request`` except
``RequestError`` (its subclasses say whether Kafka answers or closes).
Rule 2: an ApiVersions request with a version above ours is answered with the
v0 body, error UNSUPPORTED_VERSION and our key ranges (KIP-511, "Client
Software Name and Version": the broker falls back to v0 so old and new clients
can negotiate).
Rule 3: unknown tagged fields are skipped, as Kafka's protocol guide requires
("Tagged fields ... unknown tags are ignored"). kio rejects them, so on that
error the body is re-read once after ``tags.strip_unknown_tags`` removed them.
Rule 4: any other unknown key, unsupported version or undecodable body closes
the connection, as Kafka's ``SocketServer`` does for a request it cannot parse
(``InvalidRequestException``); the server logs it.
Rule 5: no length or count reaches kio's native reader before
``frame_check`` proved that it fits in the bytes left. kio reserves an array's
storage from the count it reads, and a count of 2^32 - 2 made that allocation
fail and Rust abort the whole process (one 22-byte ListGroups); Kafka throws
when a count exceeds ``Readable.remaining()`` and closes the connection, as
rule 4 does here.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionKeyV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from regroup.server.wire import assignor_rpc, frame_check, tags
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.versions import (
    ADVERTISED,
    INSTALL_ASSIGNMENT_KEY,
    PREPARE_ASSIGNMENT_KEY,
    supports,
)

__all__ = [
    "API_VERSIONS_KEY",
    "DEFAULT_MAX_FRAME_BYTES",
    "DecodedRequest",
    "MalformedRequestError",
    "RequestError",
    "UnsupportedApiError",
    "api_versions_fallback",
    "decode_request",
    "encode_heartbeat_response",
    "encode_response",
    "frame",
]

API_VERSIONS_KEY = ApiKey.API_VERSIONS
#: Kafka's ``socket.request.max.bytes`` default (100 MiB).
DEFAULT_MAX_FRAME_BYTES = 104_857_600

_PREFIX = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
_HEADER_V0 = struct.Struct(">ii")


class RequestError(Exception):
    """A request the server cannot serve; ``correlation_id`` is known when the prefix was read."""

    def __init__(self, message: str, api_key: int = -1, api_version: int = -1, cid: int = -1):
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = cid


class UnsupportedApiError(RequestError):
    """An API key or version the server does not serve (rule 2 or 4)."""


class MalformedRequestError(RequestError):
    """A body that does not decode as the message its header names (rule 4)."""


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    #: The kio request object (or an ``assignor_rpc`` dataclass for the private keys).
    body: Any


_REQUEST_CLASSES: dict[tuple[int, int], Any] = {}
_RESPONSE_CLASSES: dict[tuple[int, int], Any] = {}
_READERS: dict[type[Any], Any] = {}
_WRITERS: dict[type[Any], Any] = {}


def _request_class(api_key: int, api_version: int) -> Any:
    """kio's request class, cached (kio resolves a dotted name on every lookup)."""
    cls = _REQUEST_CLASSES.get((api_key, api_version))
    if cls is None:
        cls = _REQUEST_CLASSES[(api_key, api_version)] = load_request_schema(api_key, api_version)
    return cls


def response_class(api_key: int, api_version: int) -> Any:
    """kio's response class, cached."""
    cls = _RESPONSE_CLASSES.get((api_key, api_version))
    if cls is None:
        cls = load_response_schema(api_key, api_version)
        _RESPONSE_CLASSES[(api_key, api_version)] = cls
    return cls


def _reader(cls: type[Any]) -> Any:
    reader = _READERS.get(cls)
    if reader is None:
        reader = _READERS[cls] = entity_reader(cls)
    return reader


def _writer(cls: type[Any]) -> Any:
    writer = _WRITERS.get(cls)
    if writer is None:
        writer = _WRITERS[cls] = entity_writer(cls)
    return writer


def _read_prefix(body: bytes) -> tuple[int, int, int]:
    if len(body) < _PREFIX.size:
        raise MalformedRequestError(f"a request header needs 8 bytes, got {len(body)}")
    api_key, api_version, cid = _PREFIX.unpack_from(body, 0)
    return int(api_key), int(api_version), int(cid)


def decode_request(body: bytes) -> DecodedRequest:
    """Decode one request body (the frame without its size). Raises ``RequestError`` only."""
    api_key, api_version, cid = _read_prefix(body)
    if not supports(api_key, api_version):
        raise UnsupportedApiError(
            f"unsupported API key {api_key} version {api_version}", api_key, api_version, cid
        )
    header: Any
    try:
        if api_key in (PREPARE_ASSIGNMENT_KEY, INSTALL_ASSIGNMENT_KEY):
            frame_check.check_header(RequestHeaderV1, body)
            header, offset = entity_reader(RequestHeaderV1)(body, 0)
            payload = assignor_rpc.decode_request(api_key, body, offset)
            return DecodedRequest(api_key, api_version, cid, header.client_id, payload)
        request_cls = _request_class(api_key, api_version)
        header_cls = request_cls.__header_schema__
        frame_check.check_request(request_cls, body)  # rule 5, before kio sees a count
        try:
            header, offset = _reader(header_cls)(body, 0)
            payload, _ = _reader(request_cls)(body, offset)
        except KeyError as exc:
            if "tag" not in str(exc):
                raise
            cleaned = tags.strip_unknown_tags(header_cls, request_cls, body)
            # The copy is walked again: kio reads a known tag in place, not by its size.
            frame_check.check_request(request_cls, cleaned)
            header, offset = _reader(header_cls)(cleaned, 0)
            payload, _ = _reader(request_cls)(cleaned, offset)
    except (
        KioIndexError,
        SerialError,
        KeyError,
        ValueError,
        TypeError,
        OverflowError,
        IndexError,
        UnicodeDecodeError,
    ) as exc:
        raise MalformedRequestError(
            f"cannot decode API key {api_key} v{api_version}: {type(exc).__name__}: {exc}",
            api_key,
            api_version,
            cid,
        ) from None
    return DecodedRequest(api_key, api_version, cid, header.client_id, payload)


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def encode_response(api_key: int, api_version: int, correlation_id: int, response: Any) -> bytes:
    """The framed response (size, header, body) to a request of ``api_key``/``api_version``.

    The response header is written by hand: v0 is the correlation id, v1 adds an
    empty tagged-field section (one zero byte), per Kafka's protocol guide.
    """
    out = io.BytesIO()
    if api_key in (PREPARE_ASSIGNMENT_KEY, INSTALL_ASSIGNMENT_KEY):
        out.write(_HEADER_V0.pack(0, correlation_id))
        out.write(assignor_rpc.encode_response(response))
    else:
        cls = type(response)
        flexible_header = cls.__header_schema__ is not ResponseHeaderV0
        out.write(_HEADER_V0.pack(0, correlation_id))
        if flexible_header:
            out.write(b"\0")
        _writer(cls)(out, response)
    data = out.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    return bytes(data)


def encode_heartbeat_response(api_version: int, correlation_id: int, error_code: int) -> bytes:
    """Heartbeat's response written directly (the hottest path; same bytes as kio's).

    HeartbeatResponse: v0 ``error_code``; v1+ ``throttle_time_ms`` first; v4+
    flexible (response header v1 and an empty tagged-field section after both).
    """
    if api_version >= 4:
        return struct.pack(">iibihb", 12, correlation_id, 0, 0, error_code, 0)
    if api_version >= 1:
        return struct.pack(">iiih", 10, correlation_id, 0, error_code)
    return struct.pack(">iih", 6, correlation_id, error_code)


def api_versions_fallback(correlation_id: int) -> bytes:
    """KIP-511: the v0 ApiVersions answer to a version we do not know (rule 2)."""
    key_cls: Any = ApiVersionKeyV0
    body = ApiVersionsResponseV0(
        error_code=KioErrorCode.unsupported_version,
        api_keys=tuple(
            key_cls(api_key=key, min_version=low, max_version=high)
            for key, (low, high) in sorted(ADVERTISED.items())
        ),
    )
    return encode_response(API_VERSIONS_KEY, 0, correlation_id, body)
