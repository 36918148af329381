"""Single requests that amplify or stall: Fetch sizes, topic creation, parked Fetches."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_response_schema
from kio.serial import entity_reader

from regroup.model.errors import ErrorCode
from regroup.model.requests.offsets import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from regroup.server.apis import large_requests
from regroup.server.apis.fetch_waiters import FetchWaiters
from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.clients.wire_client import RequestEncoder, fetch_values
from regroup.server.log.partitions import Log, encode_batch
from regroup.server.net.connection import ConnectionState

ENC = RequestEncoder("test")


def _fetch_body(partitions: list[tuple[int, int]], max_bytes: int, wait_ms: int = 0) -> bytes:
    """Fetch v12 of topic ``big``: (partition, partition_max_bytes) pairs."""
    values = fetch_values(
        "big", [(p, 0, limit) for p, limit in partitions], max_bytes=max_bytes, max_wait_ms=wait_ms
    )
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
            # "No limit" (-1) used to mean 1 GiB: 20 listings of 200 KB each. A partition
            # listed 20 times is read once (Kafka's FetchRequest.fetchData), and -1 allows
            # only the first batch (KIP-74).
            sizes = _record_bytes(await _serve(server, _fetch_body([(0, 2**31 - 1)] * 20, -1)))
            assert sizes == [batch]
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
        quiet = asyncio.ensure_future(waiters.wait({("t", 0): 100}, 1, 30))
        busy = asyncio.ensure_future(waiters.wait({("t", 1): 100, ("u", 0): 100}, 1, 30))
        await asyncio.sleep(0)
        assert len(waiters) == 2
        waiters.appended(("t", 1), 10)
        await asyncio.wait_for(busy, 5)
        assert not quiet.done()
        assert len(waiters) == 1
        waiters.wake_all()
        await asyncio.wait_for(quiet, 5)
        assert len(waiters) == 0

    asyncio.run(run())


def test_a_large_offset_fetch_is_answered_in_pieces_off_the_loop_and_in_order() -> None:
    topics = {f"t{i}": 3000 for i in range(3)}

    async def run() -> None:
        server = RegroupServer(ServerOptions(port=0, seed=1))
        await server.start()
        try:
            for name, count in topics.items():
                server.create_topic(name, count)
            commit = {
                "group_id": "wide",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
                    {
                        "name": name,
                        "partitions": [
                            {
                                "partition_index": p,
                                "committed_offset": p * 10,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                            for p in range(0, count, 2)  # every other partition committed
                        ],
                    }
                    for name, count in topics.items()
                ],
            }
            await _serve(server, ENC.encode(8, 8, commit)[1][4:])
            fetch = {
                "groups": [
                    {
                        "group_id": "wide",
                        "topics": [
                            {"name": name, "partition_indexes": list(reversed(range(count)))}
                            for name, count in topics.items()
                        ],
                    }
                ],
                "require_stable": False,
            }
            body = ENC.encode(9, 8, fetch)[1][4:]
            assert len(body) > large_requests.LARGE_FRAME_BYTES
            served = server.serve_now(ConnectionState(2, "t"), body)
            assert isinstance(served, Coroutine)  # not answered inside the callback
            frame = await served
            assert isinstance(frame, bytes)
        finally:
            await server.stop()
        cls: Any = load_response_schema(9, 8)
        _, offset = entity_reader(cls.__header_schema__)(frame[4:], 0)
        response, _ = entity_reader(cls)(frame[4:], offset)
        (group,) = response.groups
        assert group.error_code.value == 0
        assert [t.name for t in group.topics] == list(topics)
        for topic in group.topics:
            indexes = [p.partition_index for p in topic.partitions]
            assert indexes == list(reversed(range(3000)))
            for p in topic.partitions:
                expected = p.partition_index * 10 if p.partition_index % 2 == 0 else -1
                assert p.committed_offset == expected

    asyncio.run(run())


def test_split_and_merge_offset_fetch_keep_every_partition_in_order() -> None:
    request = OffsetFetchRequest(
        "g",
        (
            OffsetFetchRequestTopic("a", (0, 1, 2, 3, 4)),
            OffsetFetchRequestTopic("b", ()),
            OffsetFetchRequestTopic("c", (9, 8)),
        ),
    )
    pieces = list(large_requests.split_offset_fetch(request, 3))
    assert [[(t.name, t.partition_indexes) for t in p.topics or ()] for p in pieces] == [
        [("a", (0, 1, 2))],
        [("a", (3, 4)), ("b", ()), ("c", (9,))],
        [("c", (8,))],
    ]
    answers = [
        OffsetFetchResponse(
            ErrorCode.NONE,
            tuple(
                OffsetFetchResponseTopic(
                    t.name, tuple(OffsetFetchResponsePartition(i, i) for i in t.partition_indexes)
                )
                for t in piece.topics or ()
            ),
        )
        for piece in pieces
    ]
    merged = large_requests.merge_offset_fetch(answers)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in merged.topics] == [
        ("a", [0, 1, 2, 3, 4]),
        ("b", []),
        ("c", [9, 8]),
    ]
    failed = OffsetFetchResponse(ErrorCode.GROUP_ID_NOT_FOUND)
    assert large_requests.merge_offset_fetch([answers[0], failed]) is failed
