"""ConsumerGroupHeartbeat by hand: the same bytes as kio, regroup's private tag, bad input."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import (
    ClientAssignor,
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from regroup.model.uuid import Uuid
from regroup.server.clients.wire_client import RequestEncoder
from regroup.server.wire import codec, heartbeat_codec
from regroup.server.wire.heartbeat_codec import HeartbeatDecodeError
from regroup.server.wire.mapping import GROUP_APIS

ids = st.builds(Uuid, st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1))
names = st.text(max_size=8)
maybe = st.none() | names
partitions = st.lists(
    st.builds(TopicPartitions, ids, st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple)),
    max_size=3,
).map(tuple)
owned = st.none() | partitions
assignors = st.none() | st.lists(
    st.builds(
        ClientAssignor,
        names,
        st.integers(-1, 5),
        st.integers(-1, 5),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-128, 127),
        st.binary(max_size=6),
    ),
    max_size=3,
).map(tuple)


@st.composite
def requests(draw: st.DrawFn, version: int) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=draw(names),
        member_id=draw(names),
        member_epoch=draw(st.integers(-2, 2**31 - 1)),
        instance_id=draw(maybe),
        rack_id=draw(maybe),
        rebalance_timeout_ms=draw(st.sampled_from([-1, 0, 45_000])),
        subscribed_topic_names=draw(st.none() | st.lists(names, max_size=3).map(tuple)),
        subscribed_topic_regex=draw(maybe) if version >= 1 else None,
        server_assignor=draw(maybe),
        topic_partitions=draw(owned),
        client_id="test",
        client_host="h",
        client_generates_member_id=version >= 1,
    )


def _kio_frame(version: int, r: ConsumerGroupHeartbeatRequest, cid: int = 1) -> bytes:
    """The request as a real client writes it: kio's classes, no private tag."""
    encoder = RequestEncoder("test")
    encoder._correlation = cid - 1
    values: dict[str, Any] = {
        "group_id": r.group_id,
        "member_id": r.member_id,
        "member_epoch": r.member_epoch,
        "instance_id": r.instance_id,
        "rack_id": r.rack_id,
        "rebalance_timeout": r.rebalance_timeout_ms,
        "subscribed_topic_names": r.subscribed_topic_names,
        "subscribed_topic_regex": r.subscribed_topic_regex,
        "server_assignor": r.server_assignor,
        "topic_partitions": None
        if r.topic_partitions is None
        else [{"topic_id": tp.topic_id, "partitions": tp.partitions} for tp in r.topic_partitions],
    }
    return encoder.encode(68, version, values)[1][4:]


def _header(version: int, cid: int = 1) -> bytes:
    return struct.pack(">hhih4sB", 68, version, cid, 4, b"test", 0)


@pytest.mark.parametrize("version", [0, 1])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_server_heartbeat_request_bytes_and_decoding_match_kio(
    version: int, data: st.DataObject
) -> None:
    request = data.draw(requests(version))
    kio_body = _kio_frame(version, request)
    mine = _header(version) + heartbeat_codec.encode_request_body(
        version, request, regroup_tag=False
    )
    assert mine == kio_body
    framed = RequestEncoder("test").encode_flexible_body(
        68, version, heartbeat_codec.encode_request_body(version, request, regroup_tag=False)
    )
    assert framed == (1, struct.pack(">i", len(kio_body)) + kio_body)
    decoded = heartbeat_codec.decode_request(kio_body, "h")
    (reference,) = GROUP_APIS[68][0](codec.decode_request(kio_body), "h")
    assert decoded.request == reference == request
    assert (decoded.correlation_id, decoded.client_id, decoded.regroup_client) == (1, "test", False)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), client_assignors=assignors)
def test_server_private_tag_carries_client_assignors_and_kio_skips_it(
    data: st.DataObject, client_assignors: tuple[ClientAssignor, ...] | None
) -> None:
    request = data.draw(requests(1))
    with_assignors = ConsumerGroupHeartbeatRequest(
        **{**_fields(request), "client_assignors": client_assignors}
    )
    body = _header(1) + heartbeat_codec.encode_request_body(1, with_assignors)
    decoded = heartbeat_codec.decode_request(body, "h")
    assert decoded.regroup_client
    assert decoded.request == with_assignors
    # A decoder that does not know the tag (kio behind Kafka's skip rule, as a real
    # broker would) reads every other field unchanged.
    (skipped,) = GROUP_APIS[68][0](codec.decode_request(body), "h")
    assert skipped == request


def _fields(request: ConsumerGroupHeartbeatRequest) -> dict[str, Any]:
    return {name: getattr(request, name) for name in request.__slots__}


responses = st.builds(
    ConsumerGroupHeartbeatResponse,
    st.sampled_from([ErrorCode.NONE, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID]),
    maybe,
    maybe,
    st.integers(-1, 2**31 - 1),
    st.integers(0, 10_000),
    st.none() | partitions.map(ConsumerGroupHeartbeatAssignment),
    st.integers(0, 100),
)


@pytest.mark.parametrize("version", [0, 1])
@settings(max_examples=80, deadline=None)
@given(response=responses, cid=st.integers(-(2**31), 2**31 - 1))
def test_server_heartbeat_response_bytes_match_kio_and_decode_back(
    version: int, response: ConsumerGroupHeartbeatResponse, cid: int
) -> None:
    reference = codec.encode_response(68, version, cid, GROUP_APIS[68][1](version, [], [response]))
    assert heartbeat_codec.encode_response(cid, response, False) == reference
    assert heartbeat_codec.decode_response(reference[4:]) == (cid, response)


steady = st.builds(
    ConsumerGroupHeartbeatResponse,
    st.sampled_from([ErrorCode.NONE, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.COMPUTE_ASSIGNMENT]),
    st.sampled_from([None, "", "x"]),
    st.sampled_from([None, "", "m", "n"]),
    st.integers(-1, 3),
    st.sampled_from([0, 5000]),
    st.none(),
    st.integers(0, 1),
)


@settings(max_examples=60, deadline=None)
@given(
    sent=st.lists(st.tuples(steady, st.booleans(), st.integers(-(2**31), 2**31 - 1)), max_size=30),
    kept=st.integers(1, 4),
)
def test_server_steady_response_bytes_kept_are_the_bytes_encoded_afresh(
    sent: list[tuple[ConsumerGroupHeartbeatResponse, bool, int]],
    kept: int,
) -> None:
    """Rule 3: steady responses (no assignment) that repeat, differ in one field or in
    the client's kind, with any correlation id and however few bytes are kept, are
    always the bytes encoded from scratch."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(heartbeat_codec, "STEADY_TAILS", kept)
        for response, regroup_client, cid in sent + sent:
            fresh = heartbeat_codec._encode_response(cid, response, regroup_client)
            assert heartbeat_codec.encode_response(cid, response, regroup_client) == fresh


@pytest.mark.parametrize("code", [ErrorCode.COMPUTE_ASSIGNMENT, ErrorCode.INVALID_ASSIGNMENT])
def test_server_regroup_codes_reach_only_the_regroup_client(code: ErrorCode) -> None:
    response = ConsumerGroupHeartbeatResponse(code, None, "m", 3, 1000)
    ours = heartbeat_codec.encode_response(5, response, True)
    assert heartbeat_codec.decode_response(ours[4:]) == (5, response)
    theirs = heartbeat_codec.encode_response(5, response, False)
    assert heartbeat_codec.decode_response(theirs[4:])[1].error_code is (
        ErrorCode.UNKNOWN_SERVER_ERROR
    )
    # A real client reading with kio (Kafka's enum) gets a code it knows.
    body: Any = codec.response_class(68, 1)
    from kio.serial import entity_reader

    header, offset = entity_reader(body.__header_schema__)(theirs[4:], 0)
    decoded, _ = entity_reader(body)(theirs[4:], offset)
    assert decoded.error_code.value == -1 and header.correlation_id == 5


def test_server_steady_heartbeat_shortcut_agrees_with_the_general_path() -> None:
    steady = ConsumerGroupHeartbeatRequest("g", "m", 7, client_id="test", client_host="h")
    for version in (0, 1):
        body = _kio_frame(version, steady)
        assert heartbeat_codec.decode_request(body, "h").request == ConsumerGroupHeartbeatRequest(
            "g", "m", 7, client_id="test", client_host="h", client_generates_member_id=version >= 1
        )
        # One byte more (an unknown tag's worth) must leave the shortcut.
        tagged = body[:-1] + b"\x01\x05\x00"
        assert heartbeat_codec.decode_request(tagged, "h").request.member_epoch == 7


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_server_heartbeat_decoder_rejects_damage_with_its_own_error_only(
    data: st.DataObject,
) -> None:
    request = data.draw(requests(1))
    body = _header(1) + heartbeat_codec.encode_request_body(1, request)
    cut = data.draw(st.integers(0, len(body) - 1))
    with pytest.raises(HeartbeatDecodeError):
        heartbeat_codec.decode_request(body[:cut])
    # Random bytes after a valid header: a request or HeartbeatDecodeError, nothing else.
    noise = data.draw(st.binary(max_size=60))
    try:
        decoded = heartbeat_codec.decode_request(body[:10] + noise)
    except HeartbeatDecodeError:
        return
    assert isinstance(decoded.request, ConsumerGroupHeartbeatRequest)


def test_server_heartbeat_decoder_refuses_any_count_larger_than_the_request() -> None:
    """No count the client writes may size an allocation or a loop.

    A full request of regroup's member (topics, owned partitions, the private
    tag with assignors) has each byte in turn replaced by a huge varint or
    int32: the decoder answers at once, with a request or its own error.
    """
    assignor = ClientAssignor("uniform", 0, 1, 1, 0, b"meta")
    request = ConsumerGroupHeartbeatRequest(
        "g",
        "m",
        3,
        "i",
        "r",
        45_000,
        ("t1", "t2"),
        "re",
        "uniform",
        (assignor,),
        (TopicPartitions(Uuid(1, 2), (0, 1, 2)),),
        client_id="test",
        client_host="h",
        client_generates_member_id=True,
    )
    body = _header(1) + heartbeat_codec.encode_request_body(1, request)
    assert heartbeat_codec.decode_request(body, "h").request == request
    for at in range(8, len(body)):
        for huge in (b"\xff\xff\xff\xff\x0f", b"\x7f\xff\xff\xff", b"\x80\x80\x80\x80\x08"):
            damaged = body[:at] + huge + body[at + 1 :]
            with contextlib.suppress(HeartbeatDecodeError):
                heartbeat_codec.decode_request(damaged, "h")
    header_tags = 14  # after the prefix and client id "test"
    assert body[header_tags] == 0
    many_tags = body[:header_tags] + b"\xff\xff\xff\xff\x0f" + body[header_tags + 1 :]
    with pytest.raises(HeartbeatDecodeError, match="4294967295 tagged fields"):
        heartbeat_codec.decode_request(many_tags, "h")
