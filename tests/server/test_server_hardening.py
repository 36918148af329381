"""Hardening against a server: a protocol listed twice, and log flooding."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import RequestEncoder, WireClient
from regroup.server.limits import ServerLimits
from regroup.server.net.acceptor import Acceptor, ConnectionSlots, bind_listening_sockets
from regroup.server.net.connection import CloseConnection, ConnectionState
from regroup.server.net.log_limit import RateLimitedLog

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


# -- defect 10: one warning line per malformed frame, rate-limited --------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _metadata_v9(encoder: RequestEncoder) -> bytes:
    values = {
        "topics": [{"name": "t"}],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }
    return encoder.encode(3, 9, values)[1][4:]


def test_server_malformed_frames_log_one_rate_limited_line_each_and_no_traceback(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = RegroupServer(ServerOptions(port=0))
    clock = _Clock()
    server.bad_input_log = RateLimitedLog(logging.getLogger("regroup.server"), clock=clock)
    seed = _metadata_v9(RequestEncoder("fuzz"))
    rng = random.Random(7)
    closed = 0
    with caplog.at_level(logging.DEBUG, "regroup.server"):
        for index in range(500):
            body = bytearray(seed)
            body[rng.randrange(8, len(body))] = rng.randrange(256)
            try:
                server.serve_now(ConnectionState(index, "h"), bytes(body))
            except CloseConnection:
                closed += 1
        # A request whose handling raises (a server bug): one line too, the traceback at DEBUG.
        monkeypatch.setattr(server.cluster, "metadata", _raise)
        with pytest.raises(CloseConnection):
            server.serve_now(ConnectionState(999, "h"), seed)
        clock.now = 1.0
        with pytest.raises(CloseConnection):
            server.serve_now(ConnectionState(1000, "h"), seed)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert closed > 400  # most mutations are malformed; each closes its connection
    assert len(warnings) == 21  # the burst, then one more after a second
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in warnings)
    suppressed = closed + 1 - 20
    assert (
        warnings[-1]
        .getMessage()
        .endswith(
            f"Metadata v9 failed: RuntimeError: injected; closing ({suppressed} similar lines "
            "suppressed)"
        )
    )
    server.store.close()
    server.log.close()


def _raise(*args: object) -> None:
    raise RuntimeError("injected")


def test_rate_limited_log_refills_one_line_per_interval() -> None:
    clock = _Clock()
    lines: list[str] = []

    class _Sink(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    log = logging.getLogger("test.rate_limited")
    log.addHandler(_Sink())
    limited = RateLimitedLog(log, burst=2, interval_s=10, clock=clock)
    for n in range(5):
        limited.warning("line %d", n)
    clock.now = 25.0  # two intervals and a half: two lines
    for n in range(5, 9):
        limited.warning("line %d", n)
    assert lines == [
        "line 0",
        "line 1",
        "line 5 (3 similar lines suppressed)",
        "line 6",
    ]
    assert limited.suppressed_total == 5


# -- defect 9: state a client can grow without limit ----------------------------------


def _commit(client: WireClient, group: str, partitions: dict[str, list[int]]) -> dict[Any, int]:
    response = client.request(
        8,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": name,
                    "partitions": [
                        {
                            "partition_index": index,
                            "committed_offset": 7,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for index in indexes
                    ],
                }
                for name, indexes in partitions.items()
            ],
        },
    )
    return {
        (t.name, p.partition_index): p.error_code.value
        for t in response.topics
        for p in t.partitions
    }


def test_server_offset_commit_to_unknown_partitions_is_refused_and_not_stored(
    server: BackgroundServer,
) -> None:
    running = server.server
    assert running is not None
    server.call(running.create_topic, "t", 2)
    with _client(server) as client:
        codes = _commit(client, "g", {"t": [0, 1, 5], "made-up": [0]})
        only_unknown = _commit(client, "g2", {"made-up": [0, 1]})
    assert codes == {("t", 0): 0, ("t", 1): 0, ("t", 5): 3, ("made-up", 0): 3}
    assert only_unknown == {("made-up", 0): 3, ("made-up", 1): 3}

    def stored() -> tuple[object, object]:
        coordinator = running.coordinator
        return sorted(coordinator.offsets.group_offsets("g")), coordinator.group("g2")

    partitions, other_group = server.call(stored)
    assert [(tp.topic, tp.partition) for tp in partitions] == [("t", 0), ("t", 1)]
    assert other_group is None  # the coordinator never saw the request


def _closed_by_server(sock: socket.socket, within_s: float = 10.0) -> bool:
    sock.settimeout(within_s)
    try:
        return sock.recv(1) == b""
    except (TimeoutError, ConnectionResetError):
        return False


def test_server_closes_idle_and_half_sent_connections(
    fast_options_factory: Callable[..., ServerOptions],
) -> None:
    options = fast_options_factory(limits=ServerLimits(connections_max_idle_ms=300))
    with BackgroundServer(options) as running:
        half = socket.create_connection(("127.0.0.1", running.port))
        half.sendall(b"\x00\x00\x00\x20\x00\x03")  # a frame of 32 bytes, 2 of them sent
        idle = socket.create_connection(("127.0.0.1", running.port))
        with half, idle:
            assert _closed_by_server(half)
            assert _closed_by_server(idle)
        assert running.server is not None
        assert running.call(lambda: running.server.stats["closed_idle"]) >= 2


def test_server_max_connections_makes_a_new_connection_wait_for_a_slot(
    fast_options_factory: Callable[..., ServerOptions],
) -> None:
    """Kafka's acceptor waits for a slot (``ConnectionQuotas.waitForConnectionSlot``): the
    connection over the limit is not closed; it is served once another one closes."""
    options = fast_options_factory(limits=ServerLimits(max_connections=2))
    hello = {"client_software_name": "t", "client_software_version": "1"}
    with BackgroundServer(options) as running:
        assert running.server is not None
        first, second = _client(running), _client(running)
        with second:
            first.request(18, 3, hello)
            second.request(18, 3, hello)
            third = RawClient(running.port)
            with third:
                correlation, frame = RequestEncoder().encode(18, 3, hello)
                third.send(frame)
                # Waiting in the listening socket's backlog: no answer, not closed.
                assert third.receive(within_s=0.5) is None
                assert running.call(lambda: running.server.connections_waited) == 1
                first.close()  # a slot frees: the third is accepted and answered
                answer = third.receive(within_s=10)
                assert answer is not None and answer[:4] == correlation.to_bytes(4, "big")
            # The two within the limit still work.
            assert second.request(18, 3, hello).error_code.value == 0


def test_connection_slots_are_shared_by_listeners_and_an_idle_one_holds_none() -> None:
    """Rule 1 of ``regroup.server.net.acceptor``: a slot is taken after accept, so a second
    listener that nobody connects to does not hold one; over the limit, the accepted
    connection waits and is made once a slot is given back."""

    async def run() -> None:
        slots = ConnectionSlots(1)
        made: list[asyncio.Transport] = []

        class Counted(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                assert isinstance(transport, asyncio.Transport)
                made.append(transport)

            def connection_lost(self, exc: Exception | None) -> None:
                slots.give_back()

        log = RateLimitedLog(logging.getLogger("test"))
        socks = [bind_listening_sockets("127.0.0.1", 0)[0] for _ in range(2)]
        acceptors = [Acceptor(s, Counted, lambda p: None, slots, log) for s in socks]
        for acceptor in acceptors:
            acceptor.start()
        writers = []
        try:
            for sock in (socks[1], socks[0]):
                _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
                writers.append(writer)
            await asyncio.sleep(0.2)
            assert len(made) == 1 and slots.used == 1 and slots.waits == 1
            made[0].close()  # its slot comes back: the waiting one is made
            for _ in range(100):
                if len(made) == 2:
                    break
                await asyncio.sleep(0.02)
            assert len(made) == 2 and slots.used == 1
        finally:
            for writer in writers:
                writer.close()
            for acceptor in acceptors:
                await acceptor.close()

    asyncio.run(run())


class RawClient:
    """A socket that sends bytes and reads one response frame (its body) or nothing."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def receive(self, within_s: float) -> bytes | None:
        self.sock.settimeout(within_s)
        try:
            head = self.sock.recv(4)
            if len(head) < 4:
                return None
            size = int.from_bytes(head, "big")
            body = b""
            while len(body) < size:
                chunk = self.sock.recv(size - len(body))
                if not chunk:
                    return None
                body += chunk
            return body
        except TimeoutError:
            return None


def test_server_limits_have_kafkas_names_and_defaults() -> None:
    assert ServerLimits.kafka_names() == {
        "connections.max.idle.ms": "connections_max_idle_ms",
        "max.connections": "max_connections",
        "socket.request.max.bytes": "socket_request_max_bytes",
        "message.max.bytes": "message_max_bytes",
        "fetch.max.bytes": "fetch_max_bytes",
        "offsets.retention.check.interval.ms": "offsets_retention_check_interval_ms",
        "connection.failed.authentication.delay.ms": "connection_failed_authentication_delay_ms",
        "offsets.topic.num.partitions": "offsets_topic_num_partitions",
    }
    limits = ServerLimits()
    assert limits.offsets_topic_num_partitions == 50
    assert (limits.connections_max_idle_ms, limits.max_connections) == (600_000, 2**31 - 1)
    assert (limits.socket_request_max_bytes, limits.message_max_bytes) == (104_857_600, 1_048_588)
    assert limits.fetch_max_bytes == 57_671_680
    parsed = ServerLimits.from_properties({"max.connections": "5"})
    assert parsed.max_connections == 5
    with pytest.raises(ValueError, match=r"max\.connections must be at least 1"):
        ServerLimits.from_properties({"max.connections": "0"})
    assert limits.connection_failed_authentication_delay_ms == 100
    no_delay = ServerLimits.from_properties({"connection.failed.authentication.delay.ms": "0"})
    assert no_delay.connection_failed_authentication_delay_ms == 0
    with pytest.raises(ValueError, match=r"delay\.ms must be at least 0"):
        ServerLimits(connection_failed_authentication_delay_ms=-1)


def test_server_expires_offsets_and_empty_groups_every_check_interval(
    fast_options_factory: Callable[..., ServerOptions],
) -> None:
    options = fast_options_factory(limits=ServerLimits(offsets_retention_check_interval_ms=50))
    # Kafka's least retention (offsets.retention.minutes is at least 1), then the server's
    # clock moved past it: the next check expires the commit and the emptied group.
    options = dataclasses.replace(
        options, config=dataclasses.replace(options.config, offsets_retention_minutes=1)
    )
    with BackgroundServer(options) as running, _client(running) as client:
        server = running.server
        assert server is not None
        running.call(server.create_topic, "t", 1)
        assert _commit(client, "simple", {"t": [0]}) == {("t", 0): 0}
        assert running.call(lambda: server.coordinator.group("simple")) is not None
        later = server.now_ms() - int(time.time() * 1000) + 61_000
        running.call(setattr, server, "now_ms", lambda: int(time.time() * 1000) + later)
        deadline = time.monotonic() + 10
        while running.call(lambda: server.coordinator.group("simple")) is not None:
            assert time.monotonic() < deadline, "the expired group was never removed"
            time.sleep(0.02)
        assert running.call(lambda: server.coordinator.offsets.by_group) == {}
