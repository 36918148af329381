"""What checking a compressed Produce costs, and how long it holds the event loop.

A compressed batch is decompressed and its records walked (``record_batch`` rule
3), which costs time per record, and a small compressed batch may hold many
records. This prints, for batches of N records of V-byte values in each codec,
the time ``check_client_batch`` takes; then, for one gzip batch of a million
smallest records (zstd, 0.8 MB on the wire), the longest the event loop went
without running while ``RegroupServer.serve_now`` served it (``cluster`` rule 6
checks it in a worker thread) and while checking it on the loop (before rule 6).

Run: ``PYTHONPATH=src python benchmarks/compressed_produce.py``. Timings are
wall-clock on a shared machine.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Awaitable
from typing import Any

from crc32c import crc32c

from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.clients.wire_client import RequestEncoder
from regroup.server.log import compression
from regroup.server.log.partitions import check_client_batches, encode_batch
from regroup.server.log.record_batch import HEADER_SIZE, check_client_batch
from regroup.server.net.connection import ConnectionState


def compressed(codec: int, values: list[bytes]) -> bytes:
    plain = bytearray(encode_batch(values, 1))
    payload = compression.compress(codec, bytes(plain[HEADER_SIZE:]))
    batch = bytearray(plain[:HEADER_SIZE] + payload)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">h", batch, 21, codec)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def per_batch() -> None:
    print(f"{'records':>9} {'value':>5} {'codec':>6} {'wire bytes':>10} {'check ms':>8}")
    for count, size in [(160, 100), (10_000, 100), (1_000, 1_000)]:
        values = [b"x" * size] * count
        for codec, name in [(0, "none"), (1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")]:
            batch = encode_batch(values, 1) if codec == 0 else compressed(codec, values)
            start = time.perf_counter()
            for _ in range(5):
                check_client_batch(batch, max_message_bytes=1 << 30)
            ms = (time.perf_counter() - start) / 5 * 1000
            print(f"{count:>9} {size:>5} {name:>6} {len(batch):>10} {ms:>8.2f}")


async def _longest_gap(work: Awaitable[Any]) -> float:
    """The longest time (s) the loop went without running a 1 ms ticker during ``work``."""
    gaps: list[float] = []
    done = False

    async def ticker() -> None:
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    await work
    done = True
    await task
    return max(gaps)


def stall(count: int) -> None:
    batch = compressed(compression.ZSTD, [b""] * count)
    produce = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 30000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
    }
    body = RequestEncoder("bench").encode(0, 9, produce)[1][4:]
    server = RegroupServer(ServerOptions(port=0, seed=1))
    server.create_topic("t", 1)

    async def off_loop() -> None:
        served = server.serve_now(ConnectionState(1, "b"), body)
        assert not isinstance(served, bytes | None)
        await served

    async def on_loop() -> None:
        start = time.perf_counter()
        check_client_batches(batch, 1 << 30)
        on_loop.seconds = time.perf_counter() - start  # type: ignore[attr-defined]

    try:
        threaded = asyncio.run(_longest_gap(off_loop()))
        partition = server.log.partition("t", 0)
        assert partition is not None and partition.high_watermark == count, "not appended"
        inline = asyncio.run(_longest_gap(on_loop()))
    finally:
        server.store.close()
        server.events.close()
    print(
        f"zstd batch of {count:,} empty records, {len(batch):,} bytes on the wire: "
        f"longest loop stall {threaded * 1000:.0f} ms checked in a worker thread, "
        f"{inline * 1000:.0f} ms checked on the loop"
    )


def main() -> None:
    per_batch()
    stall(1_000_000)


if __name__ == "__main__":
    main()
