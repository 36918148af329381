"""Issue 20, defect 8: single requests that amplify or stall (Fetch sizes, topic creation,
parked Fetches)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_response_schema
from kio.serial import entity_reader

from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.client import RequestEncoder
from regroup.server.connection import ConnectionState
from regroup.server.fetch_waiters import FetchWaiters
from regroup.server.log import Log, encode_batch

ENC = RequestEncoder("test")


def _fetch_body(partitions: list[tuple[int, int]], max_bytes: int, wait_ms: int = 0) -> bytes:
    """Fetch v12 of topic ``big``: (partition, partition_max_bytes) pairs."""
    values = {
        "cluster_id": None,
        "replica_id": -1,
        "max_wait": wait_ms,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "forgotten_topics_data": (),
        "rack_id": "",
        "topics": [
            {
                "topic": "big",
                "partitions": [
                    {
                        "partition": p,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": limit,
                    }
                    for p, limit in partitions
                ],
            }
        ],
    }
    return ENC.encode(1, 12, values)[1][4:]


def _record_bytes(frame: bytes) -> list[int]:
    cls: Any = load_response_schema(1, 12)
    _, offset = entity_reader(cls.__header_schema__)(frame[4:], 0)
    body, _ = entity_reader(cls)(frame[4:], offset)
    return [len(p.records or b"") for t in body.responses for p in t.partitions]


async def _serve(server: RegroupServer, body: bytes) -> bytes:
    served = server.serve_now(ConnectionState(1, "t"), body)
    if isinstance(served, Coroutine):
        served = await served
    assert isinstance(served, bytes)
    return served


def _server(**limits: int) -> RegroupServer:
    from regroup.server.limits import ServerLimits

    return RegroupServer(ServerOptions(port=0, seed=1, limits=ServerLimits(**limits)))


def test_fetch_honours_max_bytes_partition_max_bytes_and_fetch_max_bytes() -> None:
    async def run() -> None:
        server = _server(fetch_max_bytes=50_000)
        await server.start()
        try:
            server.create_topic("big", 2)
            for partition in (0, 1):
                for _ in range(20):
                    server.append_local("big", partition, [b"x" * 10_000])
            batch = len(encode_batch([b"x" * 10_000], 0))
            # "No limit" (-1) used to mean 1 GiB: 20 listings of 200 KB each.
            sizes = _record_bytes(await _serve(server, _fetch_body([(0, 2**31 - 1)] * 20, -1)))
            assert sizes == [batch] + [0] * 19  # KIP-74: only the first batch
            # fetch.max.bytes caps what the request allows.
            sizes = _record_bytes(await _serve(server, _fetch_body([(0, 2**31 - 1)], 1 << 30)))
            assert sizes == [batch * (50_000 // batch)]
            # The partition limit, and the first-batch exemption only for the first partition.
            sizes = _record_bytes(await _serve(server, _fetch_body([(0, 1), (1, 1)], 1 << 20)))
            assert sizes == [batch, 0]
            sizes = _record_bytes(
                await _serve(server, _fetch_body([(0, 3 * batch), (1, 3 * batch)], 4 * batch))
            )
            assert sizes == [3 * batch, batch]
        finally:
            await server.stop()

    asyncio.run(run())


def test_auto_creating_many_topics_writes_the_catalog_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[int] = []
    real = Log.save_catalog

    def counted(self: Log) -> None:
        writes.append(len(self.topics))
        real(self)

    monkeypatch.setattr(Log, "save_catalog", counted)

    async def run() -> None:
        server = RegroupServer(ServerOptions(port=0, seed=1, data_dir=tmp_path))
        await server.start()
        try:
            values = {
                "topics": [{"name": f"auto-{i}"} for i in range(200)],
                "allow_auto_topic_creation": True,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            }
            await _serve(server, ENC.encode(3, 9, values)[1][4:])
            assert len(server.log.topics) == 200
        finally:
            await server.stop()

    asyncio.run(run())
    assert writes == [200]
    assert len(Log(tmp_path / "log").topics) == 200


def test_an_append_wakes_only_the_fetches_of_its_partition() -> None:
    async def run() -> None:
        waiters = FetchWaiters()
        quiet = asyncio.ensure_future(waiters.wait([("t", 0)], 30))
        busy = asyncio.ensure_future(waiters.wait([("t", 1), ("u", 0)], 30))
        await asyncio.sleep(0)
        assert len(waiters) == 2
        waiters.wake([("t", 1)])
        await asyncio.wait_for(busy, 5)
        assert not quiet.done()
        assert len(waiters) == 1
        waiters.wake_all()
        await asyncio.wait_for(quiet, 5)
        assert len(waiters) == 0

    asyncio.run(run())
