"""The connection layer: pipelined requests answered in order, heartbeat shortcuts by version."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from kio.index import load_response_schema
from kio.serial import entity_reader

from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient, WireClientError, fetch_values


def _client(server: BackgroundServer) -> WireClient:
    return WireClient("127.0.0.1", server.port, timeout=10)


def _fetch_empty(wait_ms: int) -> dict[str, Any]:
    """A Fetch of an empty partition with ``min_bytes`` 1: the server waits ``wait_ms``."""
    return fetch_values(
        "quiet", [(0, 0, 1 << 20)], max_bytes=1 << 20, max_wait_ms=wait_ms, isolation_level=1
    )


def _correlation(api_key: int, version: int, frame: bytes) -> int:
    cls: Any = load_response_schema(api_key, version)
    header, _ = entity_reader(cls.__header_schema__)(frame, 0)
    return int(header.correlation_id)


def test_server_pipelined_requests_are_answered_in_order_behind_a_waiting_one(
    server: BackgroundServer,
) -> None:
    # Kafka mutes a channel while a request is in flight: a Fetch that waits for
    # records holds back the requests sent after it on the same connection.
    assert server.server is not None
    server.call(server.server.create_topic, "quiet", 1)
    with _client(server) as client:
        versions = {"client_software_name": "t", "client_software_version": "1"}
        fetch_cid, fetch = client.encode(1, 12, _fetch_empty(300))
        after = [client.encode(18, 3, versions) for _ in range(3)]
        client.send_raw(fetch + b"".join(frame for _, frame in after))
        got = [_correlation(1, 12, client.read_frame())]
        got += [_correlation(18, 3, client.read_frame()) for _ in after]
        # ... and a frame split across writes is reassembled.
        cid, frame = client.encode(18, 3, versions)
        client.send_raw(frame[:3])
        client.send_raw(frame[3:])
        got.append(_correlation(18, 3, client.read_frame()))
    assert got == [fetch_cid, *(c for c, _ in after), cid]


def test_server_heartbeat_shortcut_keeps_each_version_its_own_response(
    server: BackgroundServer,
) -> None:
    # Heartbeat v0 and v1 requests are the same bytes after the correlation id;
    # their responses differ (v1 adds throttle_time_ms), so the reused decoding
    # must not carry one version's answer to the other.
    values = {"group_id": "nobody", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    with _client(server) as client:
        sizes = []
        for version in (0, 1, 0, 1):
            _, frame = client.encode(12, version, values)
            client.send_raw(frame)
            sizes.append(len(client.read_frame()))
    # correlation id + error (v0); + throttle (v1)
    assert sizes == [6, 10, 6, 10]


def test_server_consumer_heartbeat_shortcut_keeps_each_version_its_own_request(
    server: BackgroundServer,
) -> None:
    # A steady KIP-848 heartbeat repeated on one connection is answered each time
    # with its own correlation id.
    with _client(server) as client:
        values = {
            "group_id": "g848",
            "member_id": "member-one-0000000000",
            "member_epoch": 0,
            "rebalance_timeout": 30_000,
            "subscribed_topic_names": ("t",),
            "server_assignor": None,
            "topic_partitions": (),
        }
        joined = client.request(68, 1, values)
        assert joined.error_code.value == 0
        steady = {
            "group_id": "g848",
            "member_id": "member-one-0000000000",
            "member_epoch": joined.member_epoch,
            "topic_partitions": None,
        }
        seen = []
        for _ in range(3):
            cid, frame = client.encode(68, 1, steady)
            client.send_raw(frame)
            answer = client.read_frame()
            seen.append((cid, struct.unpack_from(">i", answer, 0)[0]))
            assert struct.unpack_from(">h", answer, 9)[0] == 0  # error code, after throttle
    assert all(sent == got for sent, got in seen)


def test_server_a_failing_request_closes_only_its_connection(server: BackgroundServer) -> None:
    # A bug below the server (here: the coordinator raising) must not take the
    # server down: the connection that sent the request is closed, others carry on.
    running = server.server
    assert running is not None
    coordinator = running.coordinator

    class Broken:
        """The coordinator, but ``handle`` raises (a stand-in: a compiled one can't be patched)."""

        def handle(self, token: object, request: object, now_ms: int) -> object:
            raise RuntimeError("boom")

        def __getattr__(self, name: str) -> object:
            return getattr(coordinator, name)

    values = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    with _client(server) as bystander, _client(server) as victim:
        server.call(setattr, running, "coordinator", Broken())
        try:
            _, frame = victim.encode(12, 4, values)
            victim.send_raw(frame)
            with pytest.raises(WireClientError):
                victim.read_frame()
        finally:
            server.call(setattr, running, "coordinator", coordinator)
        answer = bystander.request(12, 4, values)
    assert answer.error_code.value != 0  # UNKNOWN_MEMBER_ID: answered, not dropped
    assert running.stats["closed_bad_input"] == 1
