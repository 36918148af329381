"""What a large group id costs on disk: bytes written per byte of id.

For group ids of each size, in process (``serve_now`` on a running loop) with a
data directory: a classic member joins (twice, KIP-394), syncs, commits and
heartbeats ten times; a KIP-848 member joins and heartbeats ten times. Prints
the growth of the data directory while serving (SQLite's write-ahead log
included) and after the server stopped (the log checkpointed and removed), as
bytes and as a multiple of the id's size.

Run: ``PYTHONPATH=src python benchmarks/id_sizes.py [--sizes 1024,1048576]``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import tempfile
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader

from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.clients.wire_client import RequestEncoder, join_group_values, sync_group_values
from regroup.server.net.connection import ConnectionState

ENC = RequestEncoder("bench")
CONFIG = dataclasses.replace(GroupCoordinatorConfig(), group_initial_rebalance_delay_ms=0)
SUBSCRIPTION = b"\x00\x01\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"


async def call(server: RegroupServer, api_key: int, version: int, values: Any) -> Any:
    served = server.serve_now(ConnectionState(1, "h"), ENC.encode(api_key, version, values)[1][4:])
    if isinstance(served, Coroutine):
        served = await served
    assert isinstance(served, bytes)
    cls: Any = load_response_schema(api_key, version)
    _, offset = entity_reader(cls.__header_schema__)(served[4:], 0)
    return entity_reader(cls)(served[4:], offset)[0]


async def classic(server: RegroupServer, group: str) -> None:
    join = {**join_group_values(group, SUBSCRIPTION), "member_id": ""}
    joined = await call(server, 11, 9, join)
    joined = await call(server, 11, 9, {**join, "member_id": joined.member_id})
    member, generation = joined.member_id, joined.generation_id
    await call(server, 14, 5, sync_group_values(group, generation, member))
    for offset in range(10):
        partition = {
            "partition_index": 0,
            "committed_offset": offset,
            "committed_leader_epoch": -1,
            "committed_metadata": None,
        }
        commit = {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": member,
            "group_instance_id": None,
            "topics": [{"name": "t", "partitions": [partition]}],
        }
        await call(server, 8, 8, commit)
        beat = {"group_id": group, "generation_id": generation, "member_id": member}
        await call(server, 12, 4, {**beat, "group_instance_id": None})


async def consumer(server: RegroupServer, group: str) -> None:
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
    answer = await call(server, 68, 1, first)
    for _ in range(10):
        beat = {
            **first,
            "member_epoch": answer.member_epoch,
            "rebalance_timeout": -1,
            "subscribed_topic_names": None,
            "topic_partitions": None,
        }
        answer = await call(server, 68, 1, beat)


def on_disk(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


async def measure(
    flow: Callable[[RegroupServer, str], Awaitable[None]], size: int
) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        options = ServerOptions(port=0, seed=1, data_dir=directory, config=CONFIG)
        setup = RegroupServer(options)
        setup.create_topic("t", 1)
        setup.store.close()  # the write-ahead log is checkpointed and removed
        setup.events.close()
        before = on_disk(directory)
        server = RegroupServer(options)
        await server.start()
        await flow(server, "g" * size)
        serving = on_disk(directory) - before
        await server.stop()
        return serving, on_disk(directory) - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,1048576", help="group id sizes, comma-separated")
    args = parser.parse_args()
    print(
        f"{'flow':9s} {'id bytes':>10s} {'serving':>12s} {'x id':>6s} {'stopped':>12s} {'x id':>6s}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        for name, flow in (("classic", classic), ("KIP-848", consumer)):
            serving, stopped = asyncio.run(measure(flow, size))
            print(
                f"{name:9s} {size:>10,d} {serving:>12,d} {serving / size:6.2f} "
                f"{stopped:>12,d} {stopped / size:6.2f}"
            )


if __name__ == "__main__":
    main()
