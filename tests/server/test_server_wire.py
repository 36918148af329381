"""The server over a socket: broker APIs, bad input, durability across a restart."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.records.readers import read_batch

from regroup.events import event_from_json_line
from regroup.server.app import ServerOptions
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient, WireClientError, fetch_values
from regroup.server.log.partitions import encode_batch
from regroup.server.wire.kio_build import to_uuid
from regroup.server.wire.versions import ADVERTISED


def _client(server: BackgroundServer) -> WireClient:
    return WireClient("127.0.0.1", server.port, timeout=10)


def _batch(*values: bytes) -> bytes:
    return encode_batch(list(values), 1_700_000_000_000)


def _api_versions_ok(server: BackgroundServer) -> bool:
    with _client(server) as client:
        response = client.request(
            18, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
    return response.error_code.value == 0 and len(response.api_keys) == len(ADVERTISED)


def test_server_api_versions_metadata_and_coordinator(server: BackgroundServer) -> None:
    assert _api_versions_ok(server)
    with _client(server) as client:
        created = client.request(
            19,
            7,
            {
                "topics": [
                    {
                        "name": "orders",
                        "num_partitions": 4,
                        "replication_factor": 1,
                        "assignments": (),
                        "configs": (),
                    }
                ],
                "timeout": 5000,
                "validate_only": False,
            },
        )
        assert created.topics[0].error_code.value == 0
        meta = client.request(
            3,
            12,
            {
                "topics": None,
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        (topic,) = [t for t in meta.topics if t.name == "orders"]
        assert len(topic.partitions) == 4 and to_uuid(topic.topic_id) != to_uuid(None)
        assert meta.brokers[0].port == server.port
        by_id = client.request(
            3,
            12,
            {
                "topics": [{"topic_id": topic.topic_id, "name": None}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        assert by_id.topics[0].name == "orders"
        found = client.request(10, 4, {"key_type": 0, "coordinator_keys": ("g",)})
        assert found.coordinators[0].port == server.port
        old = client.request(10, 1, {"key": "g", "key_type": 0})
        assert old.node_id == 0 and old.error_code.value == 0


def test_server_produce_fetch_and_list_offsets(server: BackgroundServer) -> None:
    with _client(server) as client:
        produced = client.request(
            0,
            9,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 5000,
                "topic_data": [
                    {
                        "name": "auto",
                        "partition_data": [{"index": 1, "records": _batch(b"x", b"y")}],
                    }
                ],
            },
        )
        # Produce does not auto-create: Metadata does.
        assert produced.responses[0].partition_responses[0].error_code.value == 3
        client.request(
            3,
            9,
            {
                "topics": [{"name": "auto"}],
                "allow_auto_topic_creation": True,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        )
        produced = client.request(
            0,
            9,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 5000,
                "topic_data": [
                    {
                        "name": "auto",
                        "partition_data": [{"index": 1, "records": _batch(b"x", b"y")}],
                    }
                ],
            },
        )
        assert produced.responses[0].partition_responses[0].base_offset == 0
        ends = client.request(
            2,
            7,
            {
                "replica_id": -1,
                "isolation_level": 1,
                "topics": [
                    {
                        "name": "auto",
                        "partitions": [
                            {"partition_index": 1, "current_leader_epoch": -1, "timestamp": -1},
                            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2},
                        ],
                    }
                ],
            },
        )
        offsets = {p.partition_index: p.offset for p in ends.topics[0].partitions}
        assert offsets == {1: 2, 0: 0}
        fetched = client.request(
            1,
            12,
            fetch_values(
                "auto", [(1, 0, 1 << 20)], max_bytes=1 << 20, max_wait_ms=100, isolation_level=1
            ),
        )
        part = fetched.responses[0].partitions[0]
        assert part.high_watermark == 2
        batch, _ = read_batch(part.records, 0)
        assert [r.value for r in batch.records] == [b"x", b"y"]


def _frames() -> st.SearchStrategy[bytes]:
    body = st.binary(max_size=64)
    header = st.tuples(
        st.sampled_from([0, 1, 3, 8, 9, 11, 12, 13, 14, 18, 19, 68, 69, 999, 32000, -1]),
        st.integers(-2, 20),
        st.integers(-(2**31), 2**31 - 1),
    ).map(lambda t: struct.pack(">hhi", *t))
    framed = st.tuples(header, body).map(
        lambda hb: struct.pack(">i", len(hb[0] + hb[1])) + hb[0] + hb[1]
    )
    return st.one_of(framed, st.binary(max_size=80), st.just(struct.pack(">i", 2**31 - 1)))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(frames=st.lists(_frames(), min_size=1, max_size=4))
def test_server_fuzz_malformed_frames_never_stop_the_server(
    server: BackgroundServer, frames: list[bytes]
) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.settimeout(0.2)
        for frame in frames:
            try:
                sock.sendall(frame)
                sock.recv(65536)
            except (TimeoutError, ConnectionError, OSError):
                break
    assert _api_versions_ok(server)


def test_server_oversized_and_tiny_frames_close_only_that_connection(
    server: BackgroundServer,
) -> None:
    with _client(server) as bystander:
        for bad in (struct.pack(">i", 2**30), struct.pack(">i", 3) + b"abc", struct.pack(">i", -5)):
            with _client(server) as victim:
                victim.send_raw(bad)
                try:
                    victim.read_frame()
                    raise AssertionError("the server answered a bad frame")
                except WireClientError:
                    pass
        response = bystander.request(18, 0, {})
        assert response.error_code.value == 0


def test_server_unknown_api_version_of_api_versions_gets_v0_answer(
    server: BackgroundServer,
) -> None:
    with _client(server) as client:
        client.send_raw(struct.pack(">ihhih", 10, 18, 77, 9, -1))
        frame = client.read_frame()
    (cid, error) = struct.unpack_from(">ih", frame, 0)
    assert (cid, error) == (9, 35)


def _join(client: WireClient, member_id: str, session_timeout_ms: int = 30_000) -> Any:
    return client.request(
        11,
        5,
        {
            "group_id": "g",
            "session_timeout": session_timeout_ms,
            "rebalance_timeout": 10_000,
            "member_id": member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [
                {"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"}
            ],
        },
    )


def test_server_restart_keeps_groups_and_committed_offsets(
    tmp_path: Path, fast_options_factory: Callable[..., ServerOptions]
) -> None:
    fast_options = fast_options_factory
    with BackgroundServer(fast_options(tmp_path)) as first, _client(first) as client:
        assert first.server is not None
        first.call(first.server.create_topic, "t", 1)  # offsets only for partitions that exist
        required = _join(client, "")
        assert required.error_code.value == 79
        joined = _join(client, required.member_id)
        assert joined.error_code.value == 0
        member, generation = joined.member_id, joined.generation_id
        synced = client.request(
            14,
            3,
            {
                "group_id": "g",
                "generation_id": generation,
                "member_id": member,
                "group_instance_id": None,
                "assignments": [
                    {"member_id": member, "assignment": b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"}
                ],
            },
        )
        assert synced.error_code.value == 0
        committed = client.request(
            8,
            8,
            {
                "group_id": "g",
                "generation_id_or_member_epoch": generation,
                "member_id": member,
                "group_instance_id": None,
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 42,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "m",
                            }
                        ],
                    }
                ],
            },
        )
        assert committed.topics[0].partitions[0].error_code.value == 0
    with BackgroundServer(fast_options(tmp_path)) as second, _client(second) as client:
        listed = client.request(16, 5, {"states_filter": (), "types_filter": ()})
        assert [(g.group_id, g.group_state) for g in listed.groups] == [("g", "Stable")]
        fetched = client.request(
            9, 8, {"groups": [{"group_id": "g", "topics": None}], "require_stable": False}
        )
        partition = fetched.groups[0].topics[0].partitions[0]
        assert (partition.committed_offset, partition.metadata) == (42, "m")
        beat = client.request(
            12,
            3,
            {
                "group_id": "g",
                "generation_id": generation,
                "member_id": member,
                "group_instance_id": None,
            },
        )
        assert beat.error_code.value == 0
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    kinds = {event_from_json_line(line).kind for line in lines}
    assert {"member_joined", "offsets_committed"} <= kinds, kinds


def test_server_restart_expires_a_replayed_member_that_never_returns(
    tmp_path: Path, fast_options_factory: Callable[..., ServerOptions]
) -> None:
    # Timers are not records: without re-arming them on start (Kafka's onLoaded),
    # a member that died with the old server would hold its partitions forever.
    with BackgroundServer(fast_options_factory(tmp_path)) as first, _client(first) as client:
        required = _join(client, "", session_timeout_ms=600)
        joined = _join(client, required.member_id, session_timeout_ms=600)
        member, generation = joined.member_id, joined.generation_id
        synced = client.request(
            14,
            3,
            {
                "group_id": "g",
                "generation_id": generation,
                "member_id": member,
                "group_instance_id": None,
                "assignments": [{"member_id": member, "assignment": b"\x00\x00\x00\x00\x00\x00"}],
            },
        )
        assert synced.error_code.value == 0
    with BackgroundServer(fast_options_factory(tmp_path)) as second, _client(second) as client:
        states = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            listed = client.request(16, 5, {"states_filter": (), "types_filter": ()})
            states = [g.group_state for g in listed.groups]
            if states == ["Empty"]:
                break
            time.sleep(0.1)
        assert states == ["Empty"]
