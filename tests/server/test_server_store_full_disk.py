"""A coordinator write on a full disk is answered, not a closed connection.

Kafka answers a ``KafkaStorageException`` of its coordinator with NOT_COORDINATOR
(``CoordinatorOperationExceptionHelper.handleOperationException``) after the
runtime reverted the operation; the server does the same and keeps serving.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_response_schema
from kio.serial import entity_reader

from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.clients.wire_client import RequestEncoder
from regroup.server.log.store import SqliteRecordStore
from regroup.server.net.connection import ConnectionState

ENC = RequestEncoder("test")
NOT_COORDINATOR = 16


def _call(server: RegroupServer, api_key: int, version: int, values: dict[str, Any]) -> Any:
    body = ENC.encode(api_key, version, values)[1][4:]
    served = server.serve_now(ConnectionState(1, "t"), body)  # CloseConnection would raise
    assert isinstance(served, bytes)
    cls: Any = load_response_schema(api_key, version)
    _, offset = entity_reader(cls.__header_schema__)(served[4:], 0)
    response, _ = entity_reader(cls)(served[4:], offset)
    return response


def _commit(
    server: RegroupServer, offset: int, partitions: int = 40, metadata: int = 3000
) -> list[int]:
    """A simple-group OffsetCommit v8 of ``partitions`` partitions of ``t`` with
    ``metadata`` bytes of metadata each; the error codes."""
    response = _call(
        server,
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
                            "partition_index": p,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "m" * metadata,
                        }
                        for p in range(partitions)
                    ],
                }
            ],
        },
    )
    return [p.error_code.value for t in response.topics for p in t.partitions]


def _committed(server: RegroupServer) -> list[int]:
    response = _call(
        server,
        9,
        8,
        {
            "groups": [
                {"group_id": "g", "topics": [{"name": "t", "partition_indexes": list(range(40))}]}
            ],
            "require_stable": False,
        },
    )
    return [p.committed_offset for g in response.groups for t in g.topics for p in t.partitions]


class _Cursor:
    """A cursor whose row writes fail as on a full disk (its other statements run)."""

    def __init__(self, real: sqlite3.Cursor) -> None:
        self._real = real

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.lstrip().upper().startswith(("INSERT", "DELETE")):
            raise OSError(errno.ENOSPC, "No space left on device")
        return self._real.execute(sql, *args)


class _FullDisk:
    """The store's connection, with cursors of ``_Cursor``."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self._real = real

    def cursor(self) -> _Cursor:
        return _Cursor(self._real.cursor())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _server(tmp_path: Path) -> RegroupServer:
    server = RegroupServer(ServerOptions(port=0, seed=1, data_dir=tmp_path))
    if server.log.topic("t") is None:
        server.create_topic("t", 40)
    return server


def _close(server: RegroupServer) -> None:
    server.store.close()
    server.events.close()


def test_an_offset_commit_on_a_full_store_is_not_coordinator_and_changes_nothing(
    tmp_path: Path,
) -> None:
    server = _server(tmp_path)
    try:
        assert _commit(server, 5, metadata=0) == [0] * 40
        store = server.store
        assert isinstance(store, SqliteRecordStore)
        # A real SQLITE_FULL: the database may not grow past the pages it has, and
        # 40 commits with 3,000 bytes of metadata each need more.
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages}")
        assert _commit(server, 9) == [NOT_COORDINATOR] * 40
        assert _committed(server) == [5] * 40  # the refused commit is not served either
        assert server.stats["store_write_failures"] == 1
        store._db.execute("PRAGMA max_page_count = 1073741823")  # room again
        assert _commit(server, 7) == [0] * 40
    finally:
        _close(server)
    again = _server(tmp_path)
    try:
        assert _committed(again) == [7] * 40
    finally:
        _close(again)


def test_an_enospc_from_the_store_is_answered_and_the_server_keeps_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = _server(tmp_path)
    try:
        assert _commit(server, 5, 1) == [0]

        store = server.store
        assert isinstance(store, SqliteRecordStore)
        with monkeypatch.context() as patch:
            patch.setattr(store, "_db", _FullDisk(store._db))
            assert _commit(server, 6, 3) == [NOT_COORDINATOR] * 3
            assert server.coordinator.offsets.by_group["g"] is not None
        assert _committed(server)[:3] == [5, -1, -1]
        assert _commit(server, 6, 3) == [0, 0, 0]
        assert _committed(server)[:3] == [6, 6, 6]
    finally:
        _close(server)


def test_the_store_reads_back_only_the_groups_a_failed_write_named(tmp_path: Path) -> None:
    from regroup.records import CoordinatorRecord
    from regroup.records.offsets import OffsetCommitKey, OffsetCommitValue

    def commit(group: str, partition: int, offset: int) -> CoordinatorRecord:
        return CoordinatorRecord(
            OffsetCommitKey(group, "t", partition), OffsetCommitValue(offset=offset)
        )

    long_group = "L" * 5000  # its row key is a digest
    store = SqliteRecordStore(tmp_path / "coordinator.db")
    try:
        store.append([commit("a", 0, 1), commit("b", 0, 2), commit(long_group, 0, 3)])
        store.append([commit("a", 1, 4)])
        failed = [commit("a", 0, 9), commit(long_group, 0, 9)]
        assert store.load_groups(failed) == [
            commit("a", 0, 1),
            commit(long_group, 0, 3),
            commit("a", 1, 4),
        ]
        assert store.load_groups([]) == []
    finally:
        store.close()


def _metadata(*names: str) -> dict[str, Any]:
    return {
        "topics": [{"name": n} for n in names],
        "allow_auto_topic_creation": True,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def test_a_topic_whose_list_cannot_be_written_is_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Else it would live until a restart, and its partition files would have no name."""
    from regroup.server.log import partitions as log_module

    real = log_module._write_durably

    def full_disk(path: Path, data: bytes) -> None:
        if path.name == "topics.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    server = _server(tmp_path)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(log_module, "_write_durably", full_disk)
            metadata = _call(server, 3, 9, _metadata("auto", "t"))
            assert [(t.name, t.error_code.value) for t in metadata.topics] == [
                ("auto", 56),  # KAFKA_STORAGE_ERROR: a retriable metadata error for clients
                ("t", 0),
            ]
            created = _call(
                server,
                19,
                5,
                {
                    "topics": [
                        {
                            "name": "made",
                            "num_partitions": 2,
                            "replication_factor": 1,
                            "assignments": [],
                            "configs": [],
                        }
                    ],
                    "timeout_ms": 1000,
                    "validate_only": False,
                },
            )
            assert created.topics[0].error_code.value == 56
        assert server.log.topic("auto") is None and server.log.topic("made") is None
        assert not (tmp_path / "log" / "topics.json.tmp").exists()
        metadata = _call(server, 3, 9, _metadata("auto"))
        assert metadata.topics[0].error_code.value == 0  # room again: created now
    finally:
        _close(server)
    again = _server(tmp_path)
    try:
        assert again.log.topic("auto") is not None
    finally:
        _close(again)
