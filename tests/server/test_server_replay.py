"""Starting from a data directory: replay of the stored records.

The records a server wrote always replay, with nothing skipped; a record that
cannot apply is skipped with one log line and counted, never a failed start. A
store that cannot be read, or that is gone while the partition logs are not,
stops the start with one line saying how to proceed.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from regroup.classic.group.group import ClassicGroup
from regroup.coordinator.classic.records import group_metadata_record
from regroup.coordinator.consumer.records import epoch_record
from regroup.records import CoordinatorRecord
from regroup.records.offsets import OffsetCommitKey, OffsetCommitValue
from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.background import BackgroundServer
from regroup.server.clients.wire_client import WireClient, consumer_join_values
from regroup.server.log.partitions import Log
from regroup.server.log.store import SqliteRecordStore, StoreError


def _client(server: BackgroundServer) -> WireClient:
    return WireClient("127.0.0.1", server.port, timeout=10)


def test_server_restarts_after_a_simple_commit_then_a_kip848_join(
    tmp_path: Path, fast_options_factory: Callable[..., ServerOptions]
) -> None:
    # What kafka-python (a simple consumer's commit) then confluent-kafka (a KIP-848
    # member) did to a group: every later start failed replaying it.
    with BackgroundServer(fast_options_factory(tmp_path)) as first, _client(first) as client:
        assert first.server is not None
        first.call(first.server.create_topic, "t", 1)  # offsets only for partitions that exist
        committed = client.request(
            8,
            8,
            {
                "group_id": "g",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 42,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            },
        )
        assert committed.topics[0].partitions[0].error_code.value == 0
        beat = client.request(68, 1, consumer_join_values("g", "AAAAAAAAAAAAAAAAAAAAAA", ("t",)))
        assert beat.error_code.value == 0
    for _restart in range(2):
        with BackgroundServer(fast_options_factory(tmp_path)) as again, _client(again) as client:
            assert again.server is not None
            assert again.server.stats["records_skipped"] == 0
            assert again.server.stats["records_replayed"] > 0
            listed = client.request(16, 5, {"states_filter": (), "types_filter": ()})
            assert [(g.group_id, g.group_type) for g in listed.groups] == [("g", "consumer")]
            fetched = client.request(
                9, 8, {"groups": [{"group_id": "g", "topics": None}], "require_stable": False}
            )
            assert fetched.groups[0].topics[0].partitions[0].committed_offset == 42


def _stopped(server: RegroupServer) -> None:
    asyncio.run(server.stop())


def test_server_skips_and_counts_a_record_that_cannot_apply(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    classic = ClassicGroup("g", 0)
    classic.protocol_type = "consumer"
    store = SqliteRecordStore(tmp_path / "coordinator.db")
    store.append(
        [
            CoordinatorRecord(OffsetCommitKey("h", "t", 0), OffsetCommitValue(offset=7)),
            group_metadata_record(classic),
            epoch_record("g", 3),  # a consumer group over a classic group: refused
            CoordinatorRecord(OffsetCommitKey("h", "t", 1), OffsetCommitValue(offset=8)),
        ]
    )
    store.close()
    with sqlite3.connect(tmp_path / "coordinator.db") as db:
        db.execute(
            "INSERT INTO records (record_key, seq, record) VALUES (?, ?, ?)",
            ('[99,"x"]', 100, '{"type": 99, "key": {}}'),
        )
    db.close()
    with caplog.at_level(logging.ERROR, logger="regroup.server.log.store"):
        server = RegroupServer(ServerOptions(port=0, data_dir=tmp_path))
    try:
        assert server.stats["records_skipped"] == 2
        assert server.stats["records_replayed"] == 3
        assert isinstance(server.coordinator.groups["g"], ClassicGroup)
        assert server.coordinator.offsets.by_group["h"].keys() == {("t", 0), ("t", 1)}
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 2, lines
        refused, unreadable = sorted(lines)
        assert "ConsumerGroupMetadata" in refused and "'g'" in refused
        assert "IllegalGroupStateError" in refused and "not a consumer group" in refused
        assert '[99,"x"]' in unreadable and "does not decode" in unreadable
    finally:
        _stopped(server)


# -- a store that cannot be read, a store that is gone ---------------------------------------


def test_server_refuses_a_corrupt_store_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "coordinator.db").write_bytes(b"\x00garbage, not SQLite\xff" * 64)
    with pytest.raises(StoreError) as info:
        RegroupServer(ServerOptions(port=0, data_dir=tmp_path))
    message = str(info.value)
    assert "\n" not in message
    assert "coordinator.db is not a readable coordinator store" in message
    assert "--allow-empty-coordinator" in message
    assert not (tmp_path / "log").exists()  # refused before anything else was opened


def test_server_refuses_another_sqlite_database(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "coordinator.db") as db:
        db.execute("CREATE TABLE records (something_else TEXT)")
    db.close()
    with pytest.raises(StoreError, match="not a readable coordinator store"):
        RegroupServer(ServerOptions(port=0, data_dir=tmp_path))


def _earlier_run_with_a_topic(data_dir: Path) -> None:
    log = Log(data_dir / "log")
    log.create_topic("t", 2)
    log.close()


def test_server_refuses_a_deleted_store_beside_partition_logs(tmp_path: Path) -> None:
    _earlier_run_with_a_topic(tmp_path)
    with pytest.raises(StoreError) as info:
        RegroupServer(ServerOptions(port=0, data_dir=tmp_path))
    message = str(info.value)
    assert "\n" not in message
    assert "no coordinator.db" in message and "--allow-empty-coordinator" in message
    assert not (tmp_path / "coordinator.db").exists()  # not created by the refused start


def test_server_starts_empty_beside_partition_logs_when_allowed(tmp_path: Path) -> None:
    _earlier_run_with_a_topic(tmp_path)
    server = RegroupServer(ServerOptions(port=0, data_dir=tmp_path, allow_empty_coordinator=True))
    try:
        assert server.coordinator.groups == {}
        assert server.log.topic("t") is not None
    finally:
        _stopped(server)
    # From now on the store exists: the next start needs no flag.
    _stopped(RegroupServer(ServerOptions(port=0, data_dir=tmp_path)))


def test_server_starts_in_a_new_data_dir(tmp_path: Path) -> None:
    _stopped(RegroupServer(ServerOptions(port=0, data_dir=tmp_path / "new")))
    assert (tmp_path / "new" / "coordinator.db").exists()
