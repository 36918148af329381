"""Issue 20 against a running server: defects 3 (a protocol listed twice) and the error paths."""

from __future__ import annotations

import time
from typing import Any

from regroup.server.background import BackgroundServer
from regroup.server.client import WireClient

#: JoinGroup v3 (correlation id 1, client id ``dup``) of group ``g`` that lists ``range``
#: twice, with the same consumer Subscription (topic ``t``) each time.
DUPLICATE_PROTOCOL_JOIN = bytes.fromhex(
    "00000058000b0003000000010003647570000167000075300000271000000008636f6e73756d6572"
    "00000002000572616e67650000000d000000000001000174ffffffff000572616e67650000000d00"
    "0000000001000174ffffffff"
)
SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"


def _client(server: BackgroundServer) -> WireClient:
    return WireClient("127.0.0.1", server.port, timeout=10)


def _join_v3(member_id: str) -> dict[str, Any]:
    return {
        "group_id": "g",
        "session_timeout": 30_000,
        "rebalance_timeout": 10_000,
        "member_id": member_id,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
    }


def _wait_for_state(server: BackgroundServer, state: str) -> None:
    def group_state() -> str | None:
        assert server.server is not None
        group = server.server.coordinator.group("g")
        return None if group is None else group.state_name()

    deadline = time.monotonic() + 10
    while server.call(group_state) != state:
        assert time.monotonic() < deadline, f"group never reached {state}"
        time.sleep(0.01)


def test_server_a_join_listing_one_protocol_twice_does_not_wedge_the_group(
    server: BackgroundServer,
) -> None:
    with _client(server) as dup, _client(server) as real:
        dup.send_raw(DUPLICATE_PROTOCOL_JOIN)
        joined = dup.decode(11, 3, 1, dup.read_frame())
        assert joined.error_code.value == 0
        assert joined.protocol_name == "range"
        # A real consumer joins: the group waits for the first member to rejoin.
        cid, frame = real.encode(11, 3, _join_v3(""))
        real.send_raw(frame)
        _wait_for_state(server, "PreparingRebalance")
        again = dup.request(11, 3, _join_v3(joined.member_id))
        second = real.decode(11, 3, cid, real.read_frame())
    assert second.error_code.value == 0 and again.error_code.value == 0
    assert second.generation_id == again.generation_id == joined.generation_id + 1
