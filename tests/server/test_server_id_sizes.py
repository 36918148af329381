"""A large id costs its size on disk a small constant number of times, not ~35.

Kafka's broker sets no length limit on group, member, instance or client ids
(``JoinGroupRequest.validateGroupInstanceId`` runs in the client only), and
neither does the server. What was regroup's own: every coordinator row held its
key three times (the key column, its index, the record), and every event of a
step repeated the ids (a join wrote a 1 MiB group id five times to events.jsonl).
Sizes are measured after the server stopped (SQLite's write-ahead log is then
checkpointed into the database and removed).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader

from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.events import MemberJoined
from regroup.records import CoordinatorRecord
from regroup.records.offsets import OffsetCommitKey, OffsetCommitValue
from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.clients.wire_client import RequestEncoder, join_group_values, sync_group_values
from regroup.server.events import EventSink
from regroup.server.log.store import SqliteRecordStore
from regroup.server.net.connection import ConnectionState

ID = 256 * 1024
ENC = RequestEncoder("test")
CONFIG = dataclasses.replace(GroupCoordinatorConfig(), group_initial_rebalance_delay_ms=0)
SUBSCRIPTION = b"\x00\x01\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"  # consumer protocol v1: ["t"]


async def _call(server: RegroupServer, api_key: int, version: int, values: Any) -> Any:
    served = server.serve_now(ConnectionState(1, "h"), ENC.encode(api_key, version, values)[1][4:])
    if isinstance(served, Coroutine):
        served = await served
    assert isinstance(served, bytes)
    cls: Any = load_response_schema(api_key, version)
    _, offset = entity_reader(cls.__header_schema__)(served[4:], 0)
    response, _ = entity_reader(cls)(served[4:], offset)
    return response


def _bytes_on_disk(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


async def _classic_flow(server: RegroupServer, group: str) -> None:
    """A classic member joins (twice: KIP-394), syncs, commits and heartbeats ten times."""
    join = {**join_group_values(group, SUBSCRIPTION), "member_id": ""}
    joined = await _call(server, 11, 9, join)
    joined = await _call(server, 11, 9, {**join, "member_id": joined.member_id})
    assert joined.error_code.value == 0
    member, generation = joined.member_id, joined.generation_id
    synced = await _call(server, 14, 5, sync_group_values(group, generation, member))
    assert synced.error_code.value == 0
    for offset in range(10):
        commit = {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": member,
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": None,
                        }
                    ],
                }
            ],
        }
        answer = await _call(server, 8, 8, commit)
        assert answer.topics[0].partitions[0].error_code.value == 0
        beat = {"group_id": group, "generation_id": generation, "member_id": member}
        assert (
            await _call(server, 12, 4, {**beat, "group_instance_id": None})
        ).error_code.value == 0


async def _consumer_flow(server: RegroupServer, group: str) -> None:
    """A KIP-848 member joins and heartbeats ten times."""
    first = {
        "group_id": group,
        "member_id": "m" * 22,
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 60_000,
        "subscribed_topic_names": ["t"],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }
    answer = await _call(server, 68, 1, first)
    for _ in range(10):
        beat = {
            **first,
            "member_epoch": answer.member_epoch,
            "rebalance_timeout": -1,
            "subscribed_topic_names": None,
            "topic_partitions": None,
        }
        answer = await _call(server, 68, 1, beat)
        assert answer.error_code.value == 0


def _growth(tmp_path: Path, flow: Any) -> int:
    async def run() -> int:
        options = ServerOptions(port=0, seed=1, data_dir=tmp_path, config=CONFIG)
        server = RegroupServer(options)
        server.create_topic("t", 1)
        before = _bytes_on_disk(tmp_path)
        await server.start()
        await flow(server, "g" * ID)
        await server.stop()
        return _bytes_on_disk(tmp_path) - before

    return asyncio.run(run())


def test_a_large_classic_group_id_is_written_about_twice(tmp_path: Path) -> None:
    """One GroupMetadata and one OffsetCommit row hold it (before: 23 times)."""
    assert _growth(tmp_path, _classic_flow) <= 3 * ID


def test_a_large_consumer_group_id_is_written_once_per_record_key(tmp_path: Path) -> None:
    """Six records whose keys hold the group id, as Kafka's do (before: 23 times)."""
    assert _growth(tmp_path, _consumer_flow) <= 7 * ID


def test_events_abbreviate_long_strings_and_keep_short_ones_as_they_were(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    sink = EventSink(path)
    short = MemberJoined(ts_ms=1, group_id="g", member_id="m-1", group_protocol="consumer")
    long_id = "x" * 100_000
    big = dataclasses.replace(short, group_id=long_id, client_id="c" * 300)
    sink.publish([short, big, big])
    sink.close()
    lines = path.read_text().splitlines()
    assert lines[0] == short.to_json_line()  # exactly as the simulator writes events
    assert lines[1] == lines[2] and len(lines[1]) < 500
    written = json.loads(lines[1])
    digest = hashlib.sha256(long_id.encode()).hexdigest()[:16]
    assert written["group_id"] == f"{'x' * 64}...(sha256:{digest}, 100000 chars)"
    assert written["client_id"].endswith("300 chars)")
    assert written["member_id"] == "m-1"


def _commit(group: str, offset: int | None) -> CoordinatorRecord:
    value = None if offset is None else OffsetCommitValue(offset=offset)
    return CoordinatorRecord(OffsetCommitKey(group, "t", 0), value)


def test_long_row_keys_are_digests_and_an_older_store_is_converted(tmp_path: Path) -> None:
    path = tmp_path / "coordinator.db"
    group = "g" * 1000
    store = SqliteRecordStore(path)
    store.append([_commit(group, 1), _commit("short", 2)])
    store.close()
    with sqlite3.connect(path) as db:
        keys = [k for (k,) in db.execute("SELECT record_key FROM records ORDER BY seq")]
    assert keys[0].startswith("sha256:") and len(keys[0]) == 71
    assert keys[1] == '[1,{"group":"short","partition":0,"topic":"t"}]'
    # A store written before: its long key is the key's whole text, user_version 0.
    text = json.dumps([1, {"group": group, "partition": 0, "topic": "t"}], separators=(",", ":"))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET record_key = ? WHERE seq = 1", (text,))
        db.execute("PRAGMA user_version = 0")
    db.close()
    again = SqliteRecordStore(path)
    again.append([_commit(group, None)])  # the tombstone finds the converted row
    assert again.load() == [_commit("short", 2)]
    again.close()


def test_a_long_event_of_short_strings_is_written_as_it_was(tmp_path: Path) -> None:
    from regroup.events import GenerationBumped

    path = tmp_path / "events.jsonl"
    sink = EventSink(path)
    members = tuple(f"member-{i}-" + "é" * 50 for i in range(500))  # escaped: 300+ chars each
    event = GenerationBumped(
        ts_ms=1,
        group_id="g",
        generation=3,
        protocol_name="range",
        leader_id=members[0],
        member_ids=members,
    )
    sink.publish([event])
    sink.close()
    assert path.read_text() == event.to_json_line() + "\n"
