"""Wire-server benchmarks: heartbeats over many connections, a 1,000-member KIP-848 group.

What it measures (issue 7, "benchmarks/server.py"):

* heartbeat throughput and latency (p50, p99) with many concurrent
  connections, for both protocols: classic Heartbeat v4 (one single-member
  Stable group per connection) and ConsumerGroupHeartbeat v1 (one shared
  consumer group whose members have reconciled); every connection sends its
  next heartbeat when the previous answer arrived, as real clients do;
* a 1,000-member KIP-848 group joining and reaching STABLE (wall time,
  heartbeat rounds), members reconciling as librdkafka does (acknowledge the
  assignment in the next heartbeat);
* memory per member: the server process's resident set growth over the
  1,000-member group, divided by 1,000;
* the server's own CPU time per heartbeat (``/proc/<pid>/stat``), hence its
  capacity on one core: the load generator is Python too and shares the
  machine, so the wall-clock rate understates what the server can take.

The server runs as ``regroup serve`` in its own process (one core: it is one
asyncio loop); the load generator is this process, with pre-encoded frames.
Figures only, nothing asserted. Usage::

    python benchmarks/server.py                # 200 connections, 5 s per phase
    python benchmarks/server.py --quick        # smaller, for a smoke run
    python benchmarks/server.py --json
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import statistics
import subprocess
import sys
import time
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader

from regroup.server.client import RequestEncoder

TOPIC = "bench"


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.encoder = RequestEncoder("bench")

    async def raw(self, frame: bytes) -> bytes:
        self.writer.write(frame)
        head = await self.reader.readexactly(4)
        return await self.reader.readexactly(int.from_bytes(head, "big"))

    async def call(self, api_key: int, version: int, values: dict[str, Any]) -> Any:
        _, frame = self.encoder.encode(api_key, version, values)
        body = await self.raw(frame)
        cls: Any = load_response_schema(api_key, version)
        _, offset = entity_reader(cls.__header_schema__)(body, 0)
        return entity_reader(cls)(body, offset)[0]


async def connect(port: int) -> Conn:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    return Conn(reader, writer)


def start_server() -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "regroup.cli.main",
            "serve",
            "--port",
            "0",
            "--log-level",
            "WARNING",
            "--config",
            "group.initial.rebalance.delay.ms=0",
            "--no-auto-create",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if "serving on" not in line:
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, int(line.rsplit(":", 1)[1])


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def member_id(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode()[:22]


# -- classic ----------------------------------------------------------------------------


async def classic_member(conn: Conn, group: str) -> bytes:
    join = {
        "group_id": group,
        "session_timeout": 45_000,
        "rebalance_timeout": 60_000,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "reason": None,
        "protocols": [
            {"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x01\x00\x05bench\xff\xff\xff\xff"}
        ],
    }
    first = await conn.call(11, 9, {**join, "member_id": ""})
    joined = await conn.call(11, 9, {**join, "member_id": first.member_id})
    await conn.call(
        14,
        5,
        {
            "group_id": group,
            "generation_id": joined.generation_id,
            "member_id": joined.member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": joined.member_id, "assignment": b""}],
        },
    )
    _, frame = conn.encoder.encode(
        12,
        4,
        {
            "group_id": group,
            "generation_id": joined.generation_id,
            "member_id": joined.member_id,
            "group_instance_id": None,
        },
    )
    return frame


# -- KIP-848 ----------------------------------------------------------------------------


class Member:
    def __init__(self, mid: str) -> None:
        self.member_id = mid
        self.epoch = 0
        self.owned: Any = ()
        self.ack = True

    def request(self, group: str) -> dict[str, Any]:
        values: dict[str, Any] = {
            "group_id": group,
            "member_id": self.member_id,
            "member_epoch": self.epoch,
            "topic_partitions": None,
        }
        if self.epoch == 0:
            values.update(
                rebalance_timeout=60_000, subscribed_topic_names=(TOPIC,), server_assignor="uniform"
            )
        if self.ack:
            values["topic_partitions"] = [
                {"topic_id": tp.topic_id, "partitions": tp.partitions} for tp in self.owned
            ]
            self.ack = False
        return values

    def update(self, response: Any) -> None:
        if response.error_code.value != 0:
            raise RuntimeError(f"heartbeat error {response.error_code}")
        self.epoch = response.member_epoch
        if response.assignment is not None:
            self.owned = response.assignment.topic_partitions
            self.ack = True


async def converge(
    conns: list[Conn], members: list[list[Member]], group: str, limit_s: float = 300
) -> int:
    """Heartbeat every member, round after round, until the group is Stable; the rounds."""
    rounds = 0
    start = time.perf_counter()
    while time.perf_counter() - start < limit_s:
        rounds += 1

        async def one(conn: Conn, mine: list[Member]) -> None:
            for member in mine:
                member.update(await conn.call(68, 1, member.request(group)))

        await asyncio.gather(*(one(c, m) for c, m in zip(conns, members, strict=True)))
        described = await conns[0].call(
            69, 1, {"group_ids": (group,), "include_authorized_operations": False}
        )
        g = described.groups[0]
        if (
            g.group_state == "Stable"
            and all(m.member_epoch == g.group_epoch for m in g.members)
            and not any(m.ack for ms in members for m in ms)
        ):
            return rounds
    raise RuntimeError("the group did not reach Stable")


# -- measurement ------------------------------------------------------------------------


async def hammer(
    conns: list[Conn], frames: list[bytes], seconds: float, pid: int
) -> dict[str, float]:
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    async def loop(conn: Conn, frame: bytes) -> None:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            await conn.raw(frame)
            latencies.append(time.perf_counter() - t0)

    began, cpu = time.perf_counter(), cpu_seconds(pid)
    await asyncio.gather(*(loop(c, f) for c, f in zip(conns, frames, strict=True)))
    elapsed = time.perf_counter() - began
    server_cpu = cpu_seconds(pid) - cpu
    latencies.sort()
    per_heartbeat = server_cpu / max(1, len(latencies))
    return {
        "server_cpu_us_per_heartbeat": round(per_heartbeat * 1e6, 1),
        "server_capacity_per_core": round(1 / per_heartbeat) if per_heartbeat else 0,
        "heartbeats": len(latencies),
        "per_second": round(len(latencies) / elapsed),
        "p50_ms": round(statistics.median(latencies) * 1000, 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
    }


async def run(connections: int, seconds: float, big_group: int) -> dict[str, Any]:
    proc, port = start_server()
    rng = random.Random(7)
    out: dict[str, Any] = {"connections": connections, "seconds_per_phase": seconds}
    try:
        admin = await connect(port)
        await admin.call(
            19,
            7,
            {
                "topics": [
                    {
                        "name": TOPIC,
                        "num_partitions": 2000,
                        "replication_factor": 1,
                        "assignments": (),
                        "configs": (),
                    }
                ],
                "timeout": 5000,
                "validate_only": False,
            },
        )
        conns = [await connect(port) for _ in range(connections)]
        frames = [await classic_member(c, f"classic-{i}") for i, c in enumerate(conns)]
        out["classic_heartbeat"] = await hammer(conns, frames, seconds, proc.pid)

        members = [[Member(member_id(rng))] for _ in conns]
        await converge(conns, members, "kip848-hb")
        kframes = []
        for conn, (member,) in zip(conns, members, strict=True):
            _, frame = conn.encoder.encode(68, 1, member.request("kip848-hb"))
            kframes.append(frame)
        out["consumer_heartbeat"] = await hammer(conns, kframes, seconds, proc.pid)

        before = rss_kib(proc.pid)
        per_conn = max(1, big_group // connections)
        big = [[Member(member_id(rng)) for _ in range(per_conn)] for _ in conns]
        began = time.perf_counter()
        rounds = await converge(conns, big, "kip848-big")
        out["big_group"] = {
            "members": per_conn * connections,
            "seconds_to_stable": round(time.perf_counter() - began, 2),
            "heartbeat_rounds": rounds,
            "rss_growth_kib": rss_kib(proc.pid) - before,
        }
        out["big_group"]["kib_per_member"] = round(
            out["big_group"]["rss_growth_kib"] / out["big_group"]["members"], 2
        )
        for conn in [admin, *conns]:
            conn.writer.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    connections = 20 if args.quick else args.connections
    seconds = 1.0 if args.quick else args.seconds
    result = asyncio.run(run(connections, seconds, 100 if args.quick else 1000))
    result["cpus"] = os.cpu_count()
    if args.json:
        print(json.dumps(result))
        return
    for name in ("classic_heartbeat", "consumer_heartbeat"):
        r = result[name]
        print(
            f"{name:20} {r['per_second']:>8} /s  p50 {r['p50_ms']} ms  p99 {r['p99_ms']} ms"
            f"  ({r['heartbeats']} over {connections} connections)"
        )
        print(
            f"{'':20} server CPU {r['server_cpu_us_per_heartbeat']} us per heartbeat"
            f" = {r['server_capacity_per_core']} /s on one core"
        )
    b = result["big_group"]
    print(
        f"KIP-848 group of {b['members']} members: Stable in {b['seconds_to_stable']} s "
        f"({b['heartbeat_rounds']} heartbeat rounds); server RSS +{b['rss_growth_kib']} KiB "
        f"= {b['kib_per_member']} KiB per member"
    )


if __name__ == "__main__":
    main()
