"""A null count for an array that is not nullable is a malformed request, refused at decode.

Kafka's generated ``read`` methods throw "non-nullable field ... was serialized as
null" for such an array (an ``InvalidRequestException``: the connection closes).
kio reads it as ``None``, and the request handlers then failed on it (a
``TypeError`` counted as a server failure in ``stats["request_failures"]``);
``frame_check`` now refuses it before kio reads the body. The wire fuzzing found it.
"""

from __future__ import annotations

import asyncio

import pytest

from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.net.connection import CloseConnection, ConnectionState
from regroup.server.wire import codec

#: (what, the frame without its size): request headers with client id "x", then a body
#: whose non-nullable array has the null count (compact 0, legacy -1).
NULL_ARRAYS = [
    # ListGroups v4 (flexible): states_filter is COMPACT_ARRAY 0 (null), then no tags.
    ("ListGroups v4 states_filter", bytes.fromhex("001000040000000100017800" + "00" + "00")),
    # DescribeGroups v0: groups is ARRAY -1.
    ("DescribeGroups v0 groups", bytes.fromhex("000f00000000000100017" + "8" + "ffffffff")),
    # Produce v3: transactional_id null, acks 1, timeout 1000, topic_data ARRAY -1.
    (
        "Produce v3 topic_data",
        bytes.fromhex("000000030000000100017" + "8" + "ffff" + "0001" + "000003e8" + "ffffffff"),
    ),
    # FindCoordinator v4 (flexible): key_type 0, coordinator_keys COMPACT_ARRAY 0 (null).
    (
        "FindCoordinator v4 coordinator_keys",
        bytes.fromhex("000a000400000001000178" + "00" + "00" + "00" + "00"),
    ),
]


@pytest.mark.parametrize(("what", "body"), NULL_ARRAYS, ids=[w for w, _ in NULL_ARRAYS])
def test_a_null_non_nullable_array_does_not_decode(what: str, body: bytes) -> None:
    with pytest.raises(codec.MalformedRequestError, match="null"):
        codec.decode_request(body)


@pytest.mark.parametrize(("what", "body"), NULL_ARRAYS, ids=[w for w, _ in NULL_ARRAYS])
def test_a_null_non_nullable_array_closes_the_connection_without_a_server_failure(
    what: str, body: bytes
) -> None:
    async def serve() -> dict[str, int]:
        server = RegroupServer(ServerOptions(port=0, seed=1))
        await server.start()
        try:
            with pytest.raises(CloseConnection):
                server.serve_now(ConnectionState(1, "test"), body)
            return dict(server.stats)
        finally:
            await server.stop()

    stats = asyncio.run(serve())
    assert stats.get("request_failures", 0) == 0


def test_a_null_nullable_array_still_decodes() -> None:
    # Metadata v4: topics is nullable (null: every topic), allow_auto_topic_creation true.
    req = codec.decode_request(bytes.fromhex("00030004000000010001" + "78" + "ffffffff" + "01"))
    assert req.body.topics is None
