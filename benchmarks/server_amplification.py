"""Single requests that stall everyone or amplify (defect 8), in process.

Each case serves pre-encoded frames through ``RegroupServer.serve_now`` on a
running event loop, without sockets, and prints what one request costs:

* ``fetch``: a Fetch v12 of one partition holding 500 batches of 10 KB, listed
  20 times, with ``max_bytes`` -1 (a client that asks for "no limit") and with
  1 MiB: the response's size and the time to build it;
* ``offset_fetch`` (in memory): OffsetFetch v8 of N committed partitions of one group:
  the longest time the event loop was held (the request is served inside one
  callback unless it yields) and the whole time;
* ``auto_create``: one Metadata v9 naming 2,000 missing topics (auto-created)
  with a data directory;
* ``produce_with_parked_fetches``: 2,000 Fetches parked on 2,000 other
  partitions, then Produce of one record to a partition none waits for: the
  time per Produce (every parked Fetch used to be woken and re-run).

Run: ``PYTHONPATH=src python benchmarks/server_amplification.py [--partitions N]``.
Timings are wall-clock on a shared machine: compare before/after on the same
machine, not across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.clients.wire_client import RequestEncoder, fetch_values
from regroup.server.log.partitions import encode_batch
from regroup.server.net.connection import ConnectionState

ENC = RequestEncoder("bench")


def _body(api_key: int, version: int, values: dict[str, Any]) -> bytes:
    return ENC.encode(api_key, version, values)[1][4:]


async def _served(result: Any) -> bytes:
    if isinstance(result, Coroutine):
        return bytes(await result or b"")
    return bytes(result or b"")


def _fetch(topic: str, partitions: list[int], max_bytes: int, wait_ms: int = 0) -> bytes:
    return _body(
        1,
        12,
        fetch_values(
            topic, [(p, 0, 2**31 - 1) for p in partitions], max_bytes=max_bytes, max_wait_ms=wait_ms
        ),
    )


async def bench_fetch(server: RegroupServer) -> None:
    server.create_topic("big", 1)
    value = b"x" * 10_000
    for _ in range(500):
        server.append_local("big", 0, [value])
    conn = ConnectionState(1, "bench")
    for max_bytes in (-1, 1 << 20):
        body = _fetch("big", [0] * 20, max_bytes)
        start = time.perf_counter()
        out = await _served(server.serve_now(conn, body))
        took = time.perf_counter() - start
        print(
            f"fetch: max_bytes {max_bytes:>8}, partition listed 20 times: response "
            f"{len(out) / 1e6:8.2f} MB in {took * 1000:8.1f} ms"
        )


class LoopStall:
    """The longest gap between two ticks of a 1 ms ticker: how long the loop was held."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._running = True

    async def run(self) -> None:
        last = time.perf_counter()
        while self._running:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now

    def stop(self) -> None:
        self._running = False


async def bench_offset_fetch(server: RegroupServer, partitions: int) -> None:
    server.create_topic("many", 1)
    topics = [f"t{i}" for i in range(partitions // 1000)]
    for name in topics:
        server.create_topic(name, 1000)
    conn = ConnectionState(2, "bench")
    commit = _body(
        8,
        8,
        {
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
                            "committed_offset": 1,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for p in range(1000)
                    ],
                }
                for name in topics
            ],
        },
    )
    await _served(server.serve_now(conn, commit))
    fetch = _body(
        9,
        8,
        {
            "groups": [
                {
                    "group_id": "wide",
                    "topics": [
                        {"name": name, "partition_indexes": list(range(1000))} for name in topics
                    ],
                }
            ],
            "require_stable": False,
        },
    )
    stall = LoopStall()
    ticker = asyncio.create_task(stall.run())
    await asyncio.sleep(0.01)
    start = time.perf_counter()
    out = await _served(server.serve_now(conn, fetch))
    took = time.perf_counter() - start
    await asyncio.sleep(0.01)
    stall.stop()
    await ticker
    print(
        f"offset_fetch: {partitions:,} partitions: {took * 1000:8.1f} ms, response "
        f"{len(out) / 1e6:.1f} MB, event loop held up to {stall.longest * 1000:8.1f} ms"
    )


async def bench_auto_create(server: RegroupServer) -> None:
    body = _body(
        3,
        9,
        {
            "topics": [{"name": f"auto-{i}"} for i in range(2000)],
            "allow_auto_topic_creation": True,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    )
    start = time.perf_counter()
    await _served(server.serve_now(ConnectionState(3, "bench"), body))
    took = time.perf_counter() - start
    print(f"auto_create: 2,000 topics in one Metadata: {took * 1000:8.1f} ms")


async def bench_parked_fetches(server: RegroupServer) -> None:
    server.create_topic("quiet", 2000)
    server.create_topic("busy", 1)
    waiting = [
        asyncio.ensure_future(
            _served(
                server.serve_now(
                    ConnectionState(10 + p, "b"), _fetch("quiet", [p], 1 << 20, 30_000)
                )
            )
        )
        for p in range(2000)
    ]
    await asyncio.sleep(0.05)
    produce = _body(
        0,
        9,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout": 1000,
            "topic_data": [
                {
                    "name": "busy",
                    "partition_data": [{"index": 0, "records": encode_batch([b"v"], 1)}],
                }
            ],
        },
    )
    conn = ConnectionState(5, "bench")
    rounds = 50
    start = time.perf_counter()
    for _ in range(rounds):
        await _served(server.serve_now(conn, produce))
        await asyncio.sleep(0)  # let woken fetches run, as the loop would
    took = (time.perf_counter() - start) / rounds
    print(f"produce_with_parked_fetches: 2,000 parked: {took * 1000:8.2f} ms per Produce")
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)


async def main(partitions: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = RegroupServer(ServerOptions(port=0, data_dir=Path(tmp), seed=1))
        await server.start()
        try:
            await bench_fetch(server)
            await bench_auto_create(server)
            await bench_parked_fetches(server)
        finally:
            await server.stop()
    # In memory: the coordinator's cost, not 1,000 partition files per topic.
    server = RegroupServer(ServerOptions(port=0, seed=1))
    await server.start()
    try:
        await bench_offset_fetch(server, partitions)
    finally:
        await server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=200_000)
    asyncio.run(main(parser.parse_args().partitions))
