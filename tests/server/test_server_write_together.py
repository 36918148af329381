"""The connection's rule 4 (a read's answers in one write) and the heartbeat memo's bounds."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from regroup.model.requests.classic import HeartbeatRequest
from regroup.server.net.connection import (
    WRITE_TOGETHER_BYTES,
    CloseConnection,
    ConnectionProtocol,
    ConnectionState,
    HeartbeatMemo,
)
from regroup.server.net.log_limit import RateLimitedLog


class _Transport:
    """What ``ConnectionProtocol`` uses of a transport; keeps every write apart."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else default

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        return None

    def resume_reading(self) -> None:
        return None


class _Server:
    """Answers each frame with its own correlation id repeated ``size`` times; a frame
    whose first body byte is 0xFF is refused (``CloseConnection``)."""

    max_frame_bytes = 1 << 20
    faults = None

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self.stats = {"closed_bad_input": 0}
        self.bad_input_log = RateLimitedLog(logging.getLogger("test"))

    def serve_now(self, conn: ConnectionState, body: bytes) -> bytes:
        if body[0] == 0xFF:
            raise CloseConnection
        return body[4:8] * self.size

    def connection_closed(self, protocol: ConnectionProtocol) -> None:
        return None


def _frame(cid: int, first: int = 0) -> bytes:
    body = bytes([first, 12, 0, 4]) + cid.to_bytes(4, "big")
    return len(body).to_bytes(4, "big") + body


def _connected(server: _Server) -> tuple[ConnectionProtocol, _Transport]:
    protocol = ConnectionProtocol(server, 1)
    transport = _Transport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


def test_the_answers_of_one_read_go_out_in_one_write_in_order() -> None:
    async def run() -> list[bytes]:
        protocol, transport = _connected(_Server())
        protocol.data_received(b"".join(_frame(cid) for cid in (1, 2, 3)))
        protocol.data_received(_frame(4))
        return transport.writes

    writes = asyncio.run(run())
    cid = [c.to_bytes(4, "big") * 4 for c in (1, 2, 3, 4)]
    assert writes == [cid[0] + cid[1] + cid[2], cid[3]]


def test_answers_served_before_a_refused_frame_are_written_before_the_close() -> None:
    async def run() -> tuple[list[bytes], bool]:
        protocol, transport = _connected(_Server())
        protocol.data_received(_frame(1) + _frame(2, first=0xFF) + _frame(3))
        return transport.writes, transport.closed

    writes, closed = asyncio.run(run())
    assert writes == [(1).to_bytes(4, "big") * 4]
    assert closed


def test_big_answers_are_written_as_they_come() -> None:
    # Past WRITE_TOGETHER_BYTES the answers go out at once, so that a full write buffer
    # (pause_writing) stops the serving before answers pile up (rule 3).
    size = WRITE_TOGETHER_BYTES // 4 // 2 + 1  # two answers pass the limit

    async def run() -> list[bytes]:
        protocol, transport = _connected(_Server(size))
        protocol.data_received(b"".join(_frame(cid) for cid in range(1, 6)))
        return transport.writes

    writes = asyncio.run(run())
    assert [len(w) // (4 * size) for w in writes] == [2, 2, 1]
    assert b"".join(writes) == b"".join(c.to_bytes(4, "big") * size for c in range(1, 6))


def _heartbeat_body(cid: int, member: str, version: int = 4) -> bytes:
    return bytes([0, 12, 0, version]) + cid.to_bytes(4, "big") + member.encode()


def test_the_heartbeat_memo_is_bounded_and_keyed_by_version_and_bytes() -> None:
    memo = HeartbeatMemo()
    request = HeartbeatRequest("g", 1, "m")
    memo.put(_heartbeat_body(1, "m"), request)
    assert memo.get(_heartbeat_body(99, "m")) is request  # another correlation id
    assert memo.get(_heartbeat_body(1, "m", version=3)) is None  # another version
    assert memo.get(_heartbeat_body(1, "n")) is None
    for n in range(HeartbeatMemo.MAX_ENTRIES):
        memo.put(_heartbeat_body(1, f"other-{n}"), request)
    assert memo.get(_heartbeat_body(1, "m")) is None  # the oldest went first
    assert memo.get(_heartbeat_body(1, f"other-{HeartbeatMemo.MAX_ENTRIES - 1}")) is request
    big = _heartbeat_body(1, "x" * HeartbeatMemo.MAX_BYTES)
    memo.put(big, request)
    assert memo.get(big) is None  # too big to keep
