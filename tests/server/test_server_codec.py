"""The kio adapter: round trips, KIP-511 fallback, unknown tagged fields, bad input."""

from __future__ import annotations

import contextlib
import io
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_response_schema
from kio.serial import entity_reader

from regroup.model.errors import ErrorCode
from regroup.model.requests import classic
from regroup.server.clients.wire_client import RequestEncoder
from regroup.server.wire import codec
from regroup.server.wire.mapping import GROUP_APIS
from regroup.server.wire.versions import ADVERTISED


class _Encoder(RequestEncoder):
    def __init__(self) -> None:
        super().__init__("test")


def _request(api_key: int, version: int, values: dict[str, Any]) -> bytes:
    _, data = _Encoder().encode(api_key, version, values)
    return data[4:]


def _heartbeat(version: int) -> bytes:
    values = {"group_id": "g", "generation_id": 3, "member_id": "m", "group_instance_id": None}
    return _request(12, version, values)


@pytest.mark.parametrize("version", range(0, 5))
def test_server_heartbeat_decodes_to_neutral_request_every_version(version: int) -> None:
    decoded = codec.decode_request(_heartbeat(version))
    assert (decoded.api_key, decoded.api_version, decoded.client_id) == (12, version, "test")
    decode, _ = GROUP_APIS[12]
    assert decode(decoded, "h") == [classic.HeartbeatRequest("g", 3, "m", None)]


@pytest.mark.parametrize("version", range(0, 10))
def test_server_join_group_flags_follow_the_wire_version(version: int) -> None:
    values = {
        "group_id": "g",
        "session_timeout": 10_000,
        "rebalance_timeout": 30_000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
        "reason": None,
    }
    decode, encode = GROUP_APIS[11]
    (join,) = decode(codec.decode_request(_request(11, version, values)), "10.0.0.1")
    assert isinstance(join, classic.JoinGroupRequest)
    assert join.require_known_member_id is (version >= 4)
    assert join.supports_skip_assignment is (version >= 9)
    assert join.rebalance_timeout_ms == (10_000 if version == 0 else 30_000)
    assert join.client_host == "10.0.0.1"
    response = classic.JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id="m-1")
    frame = codec.encode_response(11, version, 7, encode(version, [join], [response]))
    cls: Any = load_response_schema(11, version)
    header, offset = entity_reader(cls.__header_schema__)(frame[4:], 0)
    body, _ = entity_reader(cls)(frame[4:], offset)
    assert header.correlation_id == 7
    assert body.member_id == "m-1" and body.error_code.value == 79
    assert body.protocol_name == ("" if version < 7 else None)


def test_server_api_versions_fallback_is_v0_with_unsupported_version() -> None:
    body = struct.pack(">hhih", 18, 99, 42, -1)
    with pytest.raises(codec.UnsupportedApiError) as info:
        codec.decode_request(body)
    assert info.value.correlation_id == 42
    frame = codec.api_versions_fallback(42)
    cls: Any = load_response_schema(18, 0)
    header, offset = entity_reader(cls.__header_schema__)(frame[4:], 0)
    response, _ = entity_reader(cls)(frame[4:], offset)
    assert header.correlation_id == 42
    assert response.error_code.value == 35
    assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == dict(
        ADVERTISED
    )


def test_server_unknown_tagged_fields_are_skipped() -> None:
    plain = _heartbeat(4)
    # The last byte is the body's (empty) tagged-field count; add tag 9 with 3 bytes.
    assert plain[-1] == 0
    tagged = plain[:-1] + bytes([1, 9, 3]) + b"xyz"
    decoded = codec.decode_request(tagged)
    assert decoded.body.member_id == "m" and decoded.body.generation_id == 3


def test_server_unknown_tagged_field_in_the_header_is_skipped() -> None:
    plain = _heartbeat(4)
    # Header v2: key, version, correlation id, client id (int16 length + "test"), tags.
    header_tags_at = 2 + 2 + 4 + 2 + 4
    assert plain[header_tags_at] == 0
    tagged = plain[:header_tags_at] + bytes([1, 7, 1, 0xAA]) + plain[header_tags_at + 1 :]
    decoded = codec.decode_request(tagged)
    assert decoded.client_id == "test" and decoded.body.group_id == "g"


def test_server_unknown_api_key_and_truncated_body_are_request_errors() -> None:
    with pytest.raises(codec.UnsupportedApiError):
        codec.decode_request(struct.pack(">hhih", 999, 0, 1, -1))
    with pytest.raises(codec.MalformedRequestError):
        codec.decode_request(_heartbeat(4)[:-5])
    with pytest.raises(codec.MalformedRequestError):
        codec.decode_request(b"\x00\x0c")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_server_any_bytes_decode_or_raise_a_request_error(data: bytes) -> None:
    with contextlib.suppress(codec.RequestError):
        codec.decode_request(data)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=120), st.binary(max_size=16))
def test_server_mutated_valid_requests_never_escape(cut: int, noise: bytes) -> None:
    base = _heartbeat(4)
    data = base[: min(cut, len(base))] + noise
    with contextlib.suppress(codec.RequestError):
        codec.decode_request(data)


def test_server_encode_response_writes_size_prefix() -> None:
    cls: Any = load_response_schema(12, 1)
    from regroup.server.wire.kio_build import build

    frame = codec.encode_response(12, 1, 5, build(cls, {"throttle_time": 0, "error_code": 27}))
    (size,) = struct.unpack_from(">i", frame, 0)
    assert size == len(frame) - 4
    out = io.BytesIO(frame[4:])
    assert struct.unpack(">i", out.read(4)) == (5,)


@pytest.mark.parametrize("version", range(0, 5))
@pytest.mark.parametrize("error", [0, 27, 25])
def test_server_direct_heartbeat_response_matches_kio(version: int, error: int) -> None:
    from regroup.server.wire.kio_build import build

    cls: Any = load_response_schema(12, version)
    kio_frame = codec.encode_response(
        12, version, 99, build(cls, {"throttle_time": 0, "error_code": error})
    )
    assert codec.encode_heartbeat_response(version, 99, error) == kio_frame
