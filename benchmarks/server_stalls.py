"""How long one big request stalls every other client of ``regroup serve``.

One asyncio loop serves every connection. This benchmark starts ``regroup
serve`` in its own process and, over sockets, measures two other clients (each
a process of its own) that keep sending while a big request is served:

* ``ApiVersions``: a request that needs nothing but the loop;
* ``Heartbeat``: a classic Heartbeat v4 of a one-member Stable group, which
  needs the group coordinator too.

Each prober sends its next request when the previous answer arrived. First
both run alone for ``--idle`` seconds (the idle baseline); then, one at a time:

* ``describe_groups``: one DescribeGroups v5 naming ``--groups`` group ids;
* ``heartbeat``: a ConsumerGroupHeartbeat v0 of a new member subscribing to
  ``--topics`` existing one-partition topics (its target assignment);
* ``produce``: ``--rounds`` Produce v9 (acks=1, one small record) to one
  partition on which ``--parked`` Fetches wait (long-poll, ``min_bytes`` 1 MiB,
  which no single record satisfies), on as many connections; the Produce's
  own latency too, against the same Produces with nothing parked;
* ``fetch_repeated``: one Fetch v12 listing a partition of 2 MB ten times.

Printed per case: how long the big request took, the longest round trip of each
prober while it was in flight, and that stall as a ratio to the prober's idle
p50 and idle max. Run it on two trees to compare (``PYTHONPATH`` picks the
tree). Figures only, nothing asserted. Usage::

    PYTHONPATH=src python benchmarks/server_stalls.py
    PYTHONPATH=src python benchmarks/server_stalls.py --quick
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from regroup.server.clients.wire_client import (
    WireClient,
    fetch_values,
    join_group_values,
    sync_group_values,
)
from regroup.server.log.partitions import encode_batch

API_VERSIONS = {"client_software_name": "bench", "client_software_version": "1"}


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


def create_topics(client: WireClient, names: list[str], partitions: int = 1) -> None:
    for pos in range(0, len(names), 5_000):
        client.request(
            19,
            7,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                    for name in names[pos : pos + 5_000]
                ],
                "timeout": 60_000,
                "validate_only": False,
            },
        )


def produce_values(topic: str, records: bytes) -> dict[str, Any]:
    return {
        "transactional_id": None,
        "acks": 1,
        "timeout": 30_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }


class Prober:
    """Another client in a process of its own (the GIL of this one is busy reading the
    big answers): it repeats one request back to back from start to ``stop``, and
    hands back every round trip as (start, end) on the ``time.monotonic`` clock,
    which every process of the machine shares."""

    def __init__(self, port: int, kind: str) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, "--probe", kind, "--port", str(port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        if self._proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"prober {kind} did not start")
        self.trips: list[tuple[float, float]] = []

    def stop(self) -> None:
        out, _ = self._proc.communicate(timeout=120)
        self.trips = [tuple(map(float, line.split())) for line in out.splitlines()]  # type: ignore[misc]

    def longest_during(self, start: float, end: float) -> float:
        """The longest round trip that overlapped ``[start, end]``."""
        return max((b - a for a, b in self.trips if b >= start and a <= end), default=0.0)

    def within(self, start: float, end: float) -> list[float]:
        return sorted(b - a for a, b in self.trips if a >= start and b <= end)


def probe(kind: str, port: int) -> None:
    """The prober process: round trips until stdin closes, then print them."""
    client = WireClient("127.0.0.1", port, timeout=120)
    request: Callable[[WireClient], object]
    if kind == "ApiVersions":
        request = lambda c: c.request(18, 3, API_VERSIONS)  # noqa: E731
    else:
        request = classic_heartbeat(port)
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    trips: list[tuple[float, float]] = []
    print("ready", flush=True)
    while not done.is_set():
        began = time.monotonic()
        request(client)
        trips.append((began, time.monotonic()))
    print("\n".join(f"{a:.6f} {b:.6f}" for a, b in trips), flush=True)


def classic_heartbeat(port: int) -> Callable[[WireClient], object]:
    """A one-member Stable classic group; its Heartbeat v4 as a request callable."""
    client = WireClient("127.0.0.1", port)
    join = join_group_values("probe", b"\x00\x00\x00\x00\x00\x01\x00\x05bench\xff\xff\xff\xff")
    first = client.request(11, 9, {**join, "member_id": ""})
    joined = client.request(11, 9, {**join, "member_id": first.member_id})
    client.request(14, 5, sync_group_values("probe", joined.generation_id, joined.member_id))
    client.close()
    values = {
        "group_id": "probe",
        "generation_id": joined.generation_id,
        "member_id": joined.member_id,
        "group_instance_id": None,
    }

    def heartbeat(conn: WireClient) -> object:
        response = conn.request(12, 4, values)
        assert response.error_code.value == 0, response
        return response

    return heartbeat


def ms(seconds: float) -> str:
    return f"{seconds * 1000:9.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--parked", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--idle", type=float, default=3.0)
    parser.add_argument("--quick", action="store_true", help="a tenth of everything")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe(args.probe, args.port)
        return
    if args.quick:
        args.groups, args.topics, args.parked = args.groups // 10, args.topics // 10, 200
        args.rounds, args.idle = 10, 1.0

    proc, port = start_server()
    try:
        run(port, args)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def run(port: int, args: argparse.Namespace) -> None:
    admin = WireClient("127.0.0.1", port, timeout=600)
    create_topics(admin, [f"topic-{i}" for i in range(args.topics)])
    create_topics(admin, ["hot", "big", "quiet"])
    chunk = encode_batch([b"x" * 100_000], 0)
    for _ in range(20):  # 2 MB in "big"
        admin.request(0, 9, produce_values("big", chunk))

    probers = {"ApiVersions": Prober(port, "ApiVersions"), "Heartbeat": Prober(port, "Heartbeat")}
    idle_start = time.monotonic()
    time.sleep(args.idle)
    idle_end = time.monotonic()
    windows: list[tuple[str, float, float, str]] = []

    def case(label: str, big: Callable[[], str]) -> None:
        time.sleep(0.2)
        start = time.monotonic()
        detail = big()
        windows.append((label, start, time.monotonic(), detail))

    def describe_groups() -> str:
        names = [f"group-{i}" for i in range(args.groups)]
        response = admin.request(15, 5, {"groups": names, "include_authorized_operations": False})
        return f"(DescribeGroups of {len(response.groups):,} group ids)"

    def heartbeat() -> str:
        response = admin.request(
            68,
            0,
            {
                "group_id": "wide",
                "member_id": "",
                "member_epoch": 0,
                "instance_id": None,
                "rack_id": None,
                "rebalance_timeout": 30_000,
                "subscribed_topic_names": [f"topic-{i}" for i in range(args.topics)],
                "server_assignor": None,
                "topic_partitions": [],
            },
        )
        assigned = sum(len(t.partitions) for t in response.assignment.topic_partitions)
        return (
            f"(ConsumerGroupHeartbeat subscribing to {args.topics:,} topics: {assigned:,} assigned)"
        )

    record = encode_batch([b"r"], 0)

    def produces() -> list[float]:
        took = []
        for _ in range(args.rounds):
            began = time.perf_counter()
            admin.request(0, 9, produce_values("hot", record))
            took.append(time.perf_counter() - began)
        return took

    alone = produces()

    def produce_with_parked() -> str:
        took = statistics.mean(produces())
        before = statistics.mean(alone)
        return (
            f"({args.rounds} Produce with {args.parked:,} Fetches parked: mean {ms(took)} per "
            f"Produce, {took / before:.1f}x the {ms(before)} with none parked)"
        )

    def fetch_repeated() -> str:
        values = fetch_values("big", [(0, 0, 2 << 20)] * 10, max_bytes=50 << 20)
        _, frame = admin.encode(1, 12, values)
        admin.send_raw(frame)
        size = len(admin.read_frame())
        return f"(Fetch listing one 2 MB partition 10 times: response {size / 1e6:.1f} MB)"

    case("describe_groups", describe_groups)
    case("heartbeat      ", heartbeat)
    parked = [WireClient("127.0.0.1", port, timeout=120) for _ in range(args.parked)]
    for client in parked:
        values = fetch_values("hot", [(0, 0, 1 << 20)], max_bytes=1 << 20, max_wait_ms=60_000)
        values["min_bytes"] = 1 << 20
        client.send_raw(client.encode(1, 12, values)[1])
    time.sleep(1.0)  # every Fetch read, found too little, and parked
    case("produce        ", produce_with_parked)
    for client in parked:
        client.close()
    case("fetch_repeated ", fetch_repeated)
    time.sleep(0.2)
    admin.close()
    for prober in probers.values():
        prober.stop()

    idle = {}
    for name, prober in probers.items():
        trips = prober.within(idle_start, idle_end)
        idle[name] = (statistics.median(trips), trips[-1])
        print(
            f"idle {name:<11}: p50 {ms(idle[name][0])}, max {ms(idle[name][1])} "
            f"({len(trips)} round trips in {args.idle:.0f} s)"
        )
    for label, start, end, detail in windows:
        print(f"{label}: {ms(end - start)} {detail}")
        for name, prober in probers.items():
            stall = prober.longest_during(start, end)
            p50, top = idle[name]
            print(
                f"    {name:<11} stalled up to {ms(stall)}: {stall / p50:8.1f}x its idle p50, "
                f"{stall / top:6.1f}x its idle max"
            )


if __name__ == "__main__":
    main()
