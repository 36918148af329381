"""`regroup serve` under attack over TCP, under floods, and killed -9 (the soak figures).

Every section runs the real server as its own process (``python -m
regroup.cli.main serve --data-dir DIR``) and prints figures; nothing is
asserted, but a crash or a lost acknowledged record is counted and printed.

``wire``: attacker connections send mutated frames over TCP
(``regroup.server.control.fuzz.mutate`` on its seeds of every API and version): one
frame, then the answer, the server's close (a refusal) or 0.2 s of silence (a
parked request: the attacker hangs up), then the next, on a new connection
when needed. Meanwhile a well-behaved client (a ``WireClient`` in its own
process, a member of a classic group) loops Heartbeat v4, OffsetCommit v8 and
OffsetFetch v8 and times each round trip; the same client runs alone first
(the baseline). The server's VmRSS is sampled every 0.25 s. A crash is the
server process gone; it is then restarted on the same port and data
directory and the soak goes on. At the end the server must answer
ApiVersions.

``floods``: one fresh server per flood; the good client runs throughout and
its latency and the server's RSS are split into before / during / after the
flood (a few seconds each): 5,000 idle connections; 2,000 slowloris
connections (a frame's size and a few bytes of it, never the rest); a loop of
OffsetFetch requests naming 100,000 partitions; a loop of Fetch requests
listing a 5 MB partition 20 times with ``max_bytes`` -1 (the request of
``server_amplification.py``'s Fetch case, reused); OffsetCommits creating as
many groups as the flood's seconds allow.

``restarts``: a writer (raw ``WireClient``: Produce v9 with acks=-1 to 4
partitions, OffsetCommit v8 for 5 groups as a simple consumer) records every
acknowledged record and commit; the server is killed with SIGKILL at a random
moment, restarted on the same data directory, and every acknowledged record
(by offset and value) and commit is checked over the wire. The in-flight
request at the kill may or may not have landed; both are fine.

``corruption``: on copies of the data directory the restarts left: the last
batch of a partition cut in half, one byte flipped in a batch, one in a batch's
base offset (outside the CRC), topics.json deleted or truncated, a directory
where events.jsonl was, coordinator.db deleted (then
``--allow-empty-coordinator``), coordinator.db overwritten with garbage,
coordinator.db truncated; what each start did and exactly which acknowledged
records and commits are gone.

``--server-src DIR`` runs another tree's server (e.g. ``git archive 802c79e
src | tar -x -C /tmp/before``, the tree before the fixes).

Run: ``PYTHONPATH=src python benchmarks/server_soak.py {wire,floods,restarts,all} [...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import multiprocessing
import os
import queue as queue_module
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
from typing import Any

from kio.records.readers import read_batch

from regroup.server.clients.wire_client import (
    WireClient,
    fetch_values,
    join_group_values,
    sync_group_values,
)
from regroup.server.control.fuzz import mutate, seeds
from regroup.server.log.partitions import encode_batch

TOPIC = "soak"
PARTITIONS = 4
GROUPS = 5


# -- the server process ---------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _topic_count(port: int) -> int:
    """Topics the server holds (Metadata v9 for all topics)."""
    with WireClient("127.0.0.1", port, timeout=60) as client:
        response = client.request(
            3,
            9,
            {
                "topics": None,
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        )
        return len(response.topics)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Server:
    """``regroup serve`` in a subprocess on a fixed port and data directory."""

    def __init__(
        self, data_dir: Path, src: str | None, port: int | None = None, extra: tuple[str, ...] = ()
    ) -> None:
        self.data_dir = data_dir
        self.src = src or str(Path(__file__).resolve().parent.parent / "src")
        self.port = port or free_port()
        self.extra = extra
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []

    def start(self, *flags: str) -> tuple[bool, float, str]:
        """(started, seconds until it listened or exited, the last stderr line)."""
        env = {**os.environ, "PYTHONPATH": self.src}
        command = [
            sys.executable,
            "-m",
            "regroup.cli.main",
            "serve",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
            "--partitions",
            str(PARTITIONS),
            "--log-level",
            "WARNING",
            "--config",
            "group.initial.rebalance.delay.ms=0",
            *self.extra,
            *flags,
        ]
        began = time.perf_counter()
        self.proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
        assert self.proc.stderr is not None
        self.lines = []
        while True:
            line = self.proc.stderr.readline()
            if not line:
                self.proc.wait()
                took = time.perf_counter() - began
                return False, took, self.lines[-1] if self.lines else f"exit {self.proc.returncode}"
            self.lines.append(line.rstrip())
            if "serving on" in line:
                took = time.perf_counter() - began
                threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
                return True, took, line.rstrip()

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append(line.rstrip())

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def answers(self) -> bool:
        try:
            with WireClient("127.0.0.1", self.port, timeout=10) as client:
                response = client.request(
                    18, 3, {"client_software_name": "soak", "client_software_version": "1"}
                )
                return int(response.error_code) == 0
        except OSError:
            return False

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class RssSampler:
    """The server's VmRSS every ``every`` s, with timestamps (follows restarts)."""

    def __init__(self, server: Server, every: float = 0.25) -> None:
        self.server = server
        self.every = every
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.server.alive():
                value = rss_kib(self.server.pid)
                if value:
                    self.samples.append((time.monotonic(), value))
            self._stop.wait(self.every)

    def longest_gap(self) -> float:
        """The longest time between two samples: > ``every`` when this process was starved."""
        times = [at for at, _ in self.samples]
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)

    def between(self, start: float, end: float) -> list[int]:
        return [kib for at, kib in self.samples if start <= at <= end]


def mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def percentiles(latencies: list[float]) -> str:
    if not latencies:
        return "no requests"
    ordered = sorted(latencies)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return (
        f"{len(ordered):,} requests  p50 {at(0.5):.2f} ms  p99 {at(0.99):.2f} ms  "
        f"max {ordered[-1] * 1000:.1f} ms"
    )


def median(latencies: list[float]) -> float:
    return sorted(latencies)[len(latencies) // 2]


def p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000 if ordered else 0.0


# -- requests ---------------------------------------------------------------------------


def create_topic(client: WireClient, name: str, partitions: int = PARTITIONS) -> None:
    client.request(
        19,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": (),
                    "configs": (),
                }
            ],
            "timeout": 10_000,
            "validate_only": False,
        },
    )


def offset_commit(
    client: WireClient, group: str, offsets: dict[int, int], generation: int = -1, member: str = ""
) -> Any:
    return client.request(
        8,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": member,
            "group_instance_id": None,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for p, offset in offsets.items()
                    ],
                }
            ],
        },
    )


def offset_fetch(client: WireClient, group: str, partitions: list[int], topic: str = TOPIC) -> Any:
    return client.request(
        9,
        8,
        {
            "groups": [
                {"group_id": group, "topics": [{"name": topic, "partition_indexes": partitions}]}
            ],
            "require_stable": False,
        },
    )


def produce(client: WireClient, partition: int, values: list[bytes]) -> Any:
    return client.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10_000,
            "topic_data": [
                {
                    "name": TOPIC,
                    "partition_data": [
                        {
                            "index": partition,
                            "records": encode_batch(values, int(time.time() * 1000)),
                        }
                    ],
                }
            ],
        },
    )


def fetch_all(client: WireClient, partition: int) -> dict[int, bytes]:
    """Every record of a partition, offset -> value, over the wire (Fetch v12)."""
    found: dict[int, bytes] = {}
    offset = 0
    while True:
        response = client.request(
            1,
            12,
            fetch_values(TOPIC, [(partition, offset, 8 << 20)], max_bytes=8 << 20),
        )
        part = response.responses[0].partitions[0]
        data = part.records or b""
        pos = 0
        before = offset
        while pos + 61 <= len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            if pos + 12 + length > len(data):
                break
            batch, _ = read_batch(data[pos : pos + 12 + length], 0)
            for record in batch.records:
                at = record.offset  # kio gives the absolute offset
                if at >= offset:
                    found[at] = bytes(record.value or b"")
            offset = max(offset, batch.base_offset + batch.last_offset_delta + 1)
            pos += 12 + length
        if offset == before or offset >= part.high_watermark:
            return found


def join_classic(client: WireClient, group: str) -> tuple[int, str]:
    join = join_group_values(group, b"\x00\x01\x00\x00\x00\x01\x00\x04soak\xff\xff\xff\xff")
    first = client.request(11, 9, {**join, "member_id": ""})
    joined = client.request(11, 9, {**join, "member_id": first.member_id})
    client.request(
        14,
        5,
        sync_group_values(group, joined.generation_id, joined.member_id),
    )
    return int(joined.generation_id), str(joined.member_id)


# -- the well-behaved client (its own process) ----------------------------------------


def good_client(port: int, group: str, stop: EventType, out: Any) -> None:
    """Heartbeat, OffsetCommit, OffsetFetch round trips until ``stop``: (time, latency) pairs."""
    timings: list[tuple[float, float]] = []
    errors = 0
    try:
        client = WireClient("127.0.0.1", port, client_id="good", timeout=30)
        create_topic(client, TOPIC)
        generation, member = join_classic(client, group)
        heartbeat = {
            "group_id": group,
            "generation_id": generation,
            "member_id": member,
            "group_instance_id": None,
        }
        n = 0
        while not stop.is_set():
            n += 1
            for which in range(3):
                began = time.perf_counter()
                try:
                    if which == 0:
                        client.request(12, 4, heartbeat)
                    elif which == 1:
                        offset_commit(client, group, {0: n}, generation, member)
                    else:
                        offset_fetch(client, group, [0])
                except OSError:
                    errors += 1
                    client.close()
                    time.sleep(0.2)
                    client = WireClient("127.0.0.1", port, client_id="good", timeout=30)
                    generation, member = join_classic(client, group)
                    heartbeat.update(generation_id=generation, member_id=member)
                    break
                timings.append((time.monotonic(), time.perf_counter() - began))
            time.sleep(0.005)  # a client between two polls, not a benchmark loop
        client.close()
    finally:
        out.put((timings, errors))


class GoodClient:
    def __init__(self, port: int, group: str = "good") -> None:
        ctx = multiprocessing.get_context("fork")
        self.stop_event = ctx.Event()
        self.queue: Any = ctx.Queue()
        self.proc = ctx.Process(
            target=good_client, args=(port, group, self.stop_event, self.queue), daemon=True
        )

    def __enter__(self) -> GoodClient:
        self.proc.start()
        return self

    def finish(self) -> tuple[list[tuple[float, float]], int]:
        self.stop_event.set()
        timings, errors = self.queue.get(timeout=120)
        self.proc.join(timeout=30)
        return timings, errors

    def __exit__(self, *exc: object) -> None:
        if self.proc.is_alive():
            self.proc.kill()


# -- 1. the TCP wire soak -------------------------------------------------------------


@dataclass
class AttackCounts:
    sent: int = 0
    answered: int = 0
    closed: int = 0
    parked: int = 0
    refused_connect: int = 0
    #: Frames not answered within 0.2 s, by API key (a parked request, or slow work).
    parked_by_api: dict[int, int] = field(default_factory=dict)
    #: The slowest answers: (seconds, api key, api version, frame hex).
    slowest: list[tuple[float, int, int, str]] = field(default_factory=list)

    def timed(self, seconds: float, body: bytes) -> None:
        if len(self.slowest) < 5 or seconds > self.slowest[-1][0]:
            key, version = struct.unpack_from(">hh", body)
            self.slowest.append((seconds, key, version, body[:64].hex()))
            self.slowest.sort(reverse=True)
            del self.slowest[5:]


async def _attacker(
    port: int, rng: random.Random, bodies: list[bytes], total: int, counts: AttackCounts
) -> None:
    while counts.sent < total:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            counts.refused_connect += 1
            await asyncio.sleep(0.2)
            continue
        try:
            while counts.sent < total:
                body = mutate(rng.choice(bodies), rng)
                writer.write(struct.pack(">i", len(body)) + body)
                counts.sent += 1
                began = time.perf_counter()
                try:
                    size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 0.2))
                    await asyncio.wait_for(reader.readexactly(size[0]), 5)
                    counts.answered += 1
                    counts.timed(time.perf_counter() - began, body)
                except (asyncio.IncompleteReadError, ConnectionError):
                    counts.closed += 1
                    break
                except TimeoutError:
                    counts.parked += 1
                    (key,) = struct.unpack_from(">h", body)
                    counts.parked_by_api[key] = counts.parked_by_api.get(key, 0) + 1
                    break
        finally:
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()


def attackers(port: int, connections: int, frames: int, seed: int, out: Any) -> None:
    counts = AttackCounts()
    bodies = seeds()

    async def run() -> None:
        await asyncio.gather(
            *(
                _attacker(port, random.Random(seed * 1000 + i), bodies, frames, counts)
                for i in range(connections)
            )
        )

    began = time.perf_counter()
    asyncio.run(run())
    out.put((counts, time.perf_counter() - began))


def section_wire(args: argparse.Namespace, src: str | None) -> None:
    print(
        f"== wire: {args.frames:,} mutated frames over TCP, {args.attackers} attacker connections"
    )
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "data", src)
        ok, _, line = server.start()
        if not ok:
            print(f"  server did not start: {line}")
            return
        crashes = 0
        with RssSampler(server) as rss, GoodClient(server.port) as good:
            time.sleep(args.baseline)
            attack_began = time.monotonic()
            ctx = multiprocessing.get_context("fork")
            queue: Any = ctx.Queue()
            proc = ctx.Process(
                target=attackers, args=(server.port, args.attackers, args.frames, args.seed, queue)
            )
            proc.start()
            cpu_began = cpu_seconds(server.pid)
            result = None
            while result is None:
                with contextlib.suppress(queue_module.Empty):
                    result = queue.get(timeout=0.5)
                if not server.alive():
                    crashes += 1
                    tail = [ln for ln in server.lines[-5:] if ln]
                    print(
                        f"  CRASH {crashes}: exit {server.proc.returncode if server.proc else '?'}"
                        f" {tail[-1] if tail else ''}"
                    )
                    server.start()
            proc.join()
            attack_ended = time.monotonic()
            cpu_used = cpu_seconds(server.pid) - cpu_began if server.alive() else 0.0
            time.sleep(1.0)
            timings, errors = good.finish()
        counts, seconds = result
        answers = server.answers()
        alive = server.alive()
        topics = _topic_count(server.port)
        warnings = sum(1 for ln in server.lines if "WARNING" in ln or "warning" in ln.lower())
        server.stop()
    base = [lat for at, lat in timings if at < attack_began]
    under = [lat for at, lat in timings if attack_began <= at <= attack_ended]
    samples = [kib for _, kib in rss.samples]
    print(
        f"  frames sent {counts.sent:,} in {seconds:.0f} s ({counts.sent / seconds:,.0f}/s): "
        f"answered {counts.answered:,}, connection closed by the server {counts.closed:,}, "
        f"parked >0.2 s {counts.parked:,}"
    )
    print(f"  server crashes {crashes}; alive at the end {alive}; answers ApiVersions {answers}")
    print(
        f"  server CPU during the attack {cpu_used:.0f} s of {attack_ended - attack_began:.0f} s "
        f"wall; topics the attack created {topics - 1}; the benchmark's own 0.25 s RSS ticker "
        f"was late by up to {rss.longest_gap():.1f} s (host starvation)"
    )
    print(f"  good client alone:        {percentiles(base)}")
    print(f"  good client under attack: {percentiles(under)}  (errors {errors})")
    if base and under:
        print(
            f"  ratio under/alone: p50 {median(under) / median(base):.1f}x"
            f"  p99 {p99(under) / p99(base):.1f}x"
        )
    if samples:
        print(
            f"  server RSS start {mib(samples[0])}  peak {mib(max(samples))}  "
            f"end {mib(samples[-1])}  ({len(samples)} samples)"
        )
    print(f"  server stderr lines during the soak: {len(server.lines)} ({warnings} warnings)")
    by_api = sorted(counts.parked_by_api.items(), key=lambda kv: -kv[1])
    print("  not answered within 0.2 s, by API key: " + ", ".join(f"{k}: {n}" for k, n in by_api))
    for took, key, version, head in counts.slowest[:3]:
        print(f"  slow answer: {took * 1000:.0f} ms, api {key} v{version}, frame {head}...")


# -- 2. floods --------------------------------------------------------------------------


def _hold_idle(port: int, count: int, seconds: float) -> str:
    socks = []
    for _ in range(count):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            break
    time.sleep(seconds)
    closed = 0
    for sock in socks:
        sock.setblocking(False)
        try:
            if sock.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        sock.close()
    return f"{len(socks):,} connections opened, {closed:,} closed by the server"


def _slowloris(port: int, count: int, seconds: float) -> str:
    socks = []
    for _ in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(struct.pack(">i", 1 << 20) + b"\x00\x03\x00\x09" + b"x" * 60)
            socks.append(sock)
        except OSError:
            break
    time.sleep(seconds)
    for sock in socks:
        sock.close()
    return f"{len(socks):,} connections each holding a 1 MiB frame's first 68 bytes"


def _loop_until(seconds: float, step: Any) -> tuple[int, float]:
    deadline = time.monotonic() + seconds
    n = 0
    longest = 0.0
    while time.monotonic() < deadline:
        began = time.perf_counter()
        step()
        longest = max(longest, time.perf_counter() - began)
        n += 1
    return n, longest


def _huge_offset_fetch(port: int, seconds: float) -> str:
    with WireClient("127.0.0.1", port, timeout=120) as client:
        n, longest = _loop_until(
            seconds, lambda: offset_fetch(client, "wide", list(range(100_000)))
        )
    return f"{n} OffsetFetch of 100,000 partitions, each up to {longest * 1000:.0f} ms"


def _fetch_amplification(port: int, seconds: float) -> str:
    from server_amplification import _fetch  # the same request as its Fetch case

    body = _fetch("big", [0] * 20, -1)
    sizes: list[int] = []
    with WireClient("127.0.0.1", port, timeout=120) as client:

        def step() -> None:
            client.send_raw(struct.pack(">i", len(body)) + body)
            sizes.append(len(client.read_frame()))

        n, longest = _loop_until(seconds, step)
    return (
        f"{n} Fetch listing a 5 MB partition 20 times, max_bytes -1: response "
        f"{max(sizes) / 1e6:.2f} MB, each up to {longest * 1000:.0f} ms"
    )


def _many_groups(port: int, seconds: float) -> str:
    with WireClient("127.0.0.1", port, timeout=60) as client:
        count = [0]

        def step() -> None:
            offset_commit(client, f"flood-{count[0]}", {0: 1})
            count[0] += 1

        n, _ = _loop_until(seconds, step)
    return f"{n:,} groups created by OffsetCommit"


def _prepare_big(port: int) -> None:
    with WireClient("127.0.0.1", port, timeout=60) as client:
        create_topic(client, "big", 1)
        value = b"x" * 10_000
        batch = encode_batch([value], int(time.time() * 1000))
        for _ in range(500):
            client.request(
                0,
                9,
                {
                    "transactional_id": None,
                    "acks": 1,
                    "timeout": 10_000,
                    "topic_data": [
                        {"name": "big", "partition_data": [{"index": 0, "records": batch}]}
                    ],
                },
            )


FLOODS: dict[str, Any] = {
    "idle connections": lambda port, s: _hold_idle(port, 5_000, s),
    "slowloris": lambda port, s: _slowloris(port, 2_000, s),
    "huge OffsetFetch": _huge_offset_fetch,
    "Fetch amplification": _fetch_amplification,
    "many groups": _many_groups,
}


def section_floods(args: argparse.Namespace, src: str | None) -> None:
    print(f"== floods: {args.calm:.0f} s calm, {args.flood:.0f} s flood, {args.calm:.0f} s after")
    for name, flood in FLOODS.items():
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            server = Server(Path(tmp) / "data", src)
            ok, _, line = server.start()
            if not ok:
                print(f"  {name}: server did not start: {line}")
                continue
            if name == "Fetch amplification":
                _prepare_big(server.port)
            with RssSampler(server) as rss, GoodClient(server.port) as good:
                time.sleep(args.calm)
                began = time.monotonic()
                try:
                    what = flood(server.port, args.flood)
                except OSError as exc:
                    what = f"the flood failed: {exc!r}"
                ended = time.monotonic()
                time.sleep(args.calm)
                timings, errors = good.finish()
            alive = server.alive() and server.answers()
            server.stop()
        phases = {
            "before": (0.0, began),
            "during": (began, ended),
            "after": (ended, float("inf")),
        }
        print(f"  {name}: {what} ({ended - began:.1f} s); server alive after: {alive}")
        for phase, (start, end) in phases.items():
            lat = [lat for at, lat in timings if start <= at < end]
            mem = rss.between(start, end)
            peak = mib(max(mem)) if mem else "-"
            print(f"    {phase:<7} good client {percentiles(lat)}; server RSS peak {peak}")
        if errors:
            print(f"    good client reconnected {errors} times")


# -- 3. kill -9 restarts and corruption -----------------------------------------------


@dataclass
class Ledger:
    """Everything the server acknowledged, and what was in flight at a kill."""

    records: dict[int, dict[int, bytes]] = field(
        default_factory=lambda: {p: {} for p in range(PARTITIONS)}
    )
    commits: dict[tuple[str, int], int] = field(default_factory=dict)
    pending_commit: dict[tuple[str, int], int] = field(default_factory=dict)
    sequence: int = 0
    produces: int = 0
    commit_count: int = 0


def writer(port: int, ledger: Ledger, rng: random.Random, stop: threading.Event) -> None:
    try:
        client = WireClient("127.0.0.1", port, client_id="writer", timeout=30)
    except OSError:
        return
    try:
        while not stop.is_set():
            partition = rng.randrange(PARTITIONS)
            values = [f"r{ledger.sequence + i}".encode() for i in range(rng.randint(1, 5))]
            ledger.sequence += len(values)
            response = produce(client, partition, values)
            part = response.responses[0].partition_responses[0]
            if int(part.error_code) != 0:
                continue
            for i, value in enumerate(values):
                ledger.records[partition][int(part.base_offset) + i] = value
            ledger.produces += 1
            if rng.random() < 0.3:
                group = f"g{rng.randrange(GROUPS)}"
                key = (group, partition)
                offset = len(ledger.records[partition])
                ledger.pending_commit[key] = offset
                reply = offset_commit(client, group, {partition: offset})
                if int(reply.topics[0].partitions[0].error_code) == 0:
                    ledger.commits[key] = offset
                    ledger.commit_count += 1
                del ledger.pending_commit[key]
    except OSError:
        pass  # killed under us: the request in flight may or may not have landed
    finally:
        client.close()


@dataclass
class Check:
    records_checked: int = 0
    records_lost: int = 0
    commits_checked: int = 0
    commits_lost: int = 0
    lost_examples: list[str] = field(default_factory=list)


def verify(port: int, ledger: Ledger) -> Check:
    check = Check()
    with WireClient("127.0.0.1", port, client_id="verify", timeout=60) as client:
        for partition, acked in ledger.records.items():
            present = fetch_all(client, partition)
            for offset, value in acked.items():
                check.records_checked += 1
                if present.get(offset) != value:
                    check.records_lost += 1
                    if len(check.lost_examples) < 3:
                        check.lost_examples.append(f"{TOPIC}-{partition}@{offset}")
        for (group, partition), offset in ledger.commits.items():
            check.commits_checked += 1
            got = offset_fetch(client, group, [partition]).groups[0].topics[0].partitions[0]
            allowed = {offset, ledger.pending_commit.get((group, partition), offset)}
            if int(got.committed_offset) not in allowed:
                check.commits_lost += 1
                if len(check.lost_examples) < 3:
                    check.lost_examples.append(
                        f"commit {group} p{partition}: {got.committed_offset}, acked {offset}"
                    )
    return check


def section_restarts(args: argparse.Namespace, src: str | None, keep: Path | None) -> Ledger:
    print(f"== restarts: {args.restarts} kill -9 under load, verify after each restart")
    rng = random.Random(args.seed)
    ledger = Ledger()
    data = (keep or Path(tempfile.mkdtemp())) / "data"
    server = Server(data, src)
    total = Check()
    restart_times: list[float] = []
    failed_starts = 0
    for round_ in range(args.restarts + 1):
        ok, took, line = server.start()
        if not ok:
            failed_starts += 1
            print(f"  round {round_}: the server did not start: {line}")
            break
        if round_:
            restart_times.append(took)
        if round_ == 0:
            with WireClient("127.0.0.1", server.port, timeout=30) as client:
                create_topic(client, TOPIC)
        check = verify(server.port, ledger)
        for name in ("records_checked", "records_lost", "commits_checked", "commits_lost"):
            setattr(total, name, getattr(total, name) + getattr(check, name))
        total.lost_examples += check.lost_examples
        if check.records_lost or check.commits_lost:
            print(
                f"  round {round_}: LOST {check.records_lost} records, "
                f"{check.commits_lost} commits: {check.lost_examples}"
            )
        if round_ == args.restarts:
            break
        stop = threading.Event()
        thread = threading.Thread(
            target=writer, args=(server.port, ledger, random.Random(rng.random()), stop)
        )
        thread.start()
        time.sleep(rng.uniform(0.3, args.max_run))
        server.kill9()
        stop.set()
        thread.join()
        # Whatever was in flight is settled by what the restarted server holds.
    server.stop()
    acked = sum(len(r) for r in ledger.records.values())
    print(
        f"  kill -9 restarts {len(restart_times)}, failed starts {failed_starts}; "
        f"acknowledged: {acked:,} records in {ledger.produces:,} produces, "
        f"{ledger.commit_count:,} commits"
    )
    print(
        f"  checks after restarts: {total.records_checked:,} record checks, "
        f"{total.records_lost} lost; {total.commits_checked:,} commit checks, "
        f"{total.commits_lost} lost"
    )
    if restart_times:
        ordered = sorted(restart_times)
        print(
            f"  time to restart (process start to listening): median "
            f"{ordered[len(ordered) // 2]:.2f} s, max {ordered[-1]:.2f} s"
        )
    return ledger


def _batches(path: Path) -> list[tuple[int, int, int]]:
    """(position, size, base offset) of each batch of a partition file."""
    data = path.read_bytes()
    out = []
    pos = 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        out.append((pos, 12 + length, base))
        pos += 12 + length
    return out


def _damage(name: str, data: Path, ledger: Ledger) -> tuple[list[str], str]:
    """Damage a copy of a data directory: (start flags, what was damaged)."""
    logs = sorted((data / "log").glob("*.log"), key=lambda p: p.stat().st_size)
    biggest = logs[-1]
    partition = int(biggest.stem.rsplit("-", 1)[1])
    acked = ledger.records[partition]
    # The last batch holding acknowledged records (the file's very last one may be the
    # request in flight at the kill, written but never acknowledged).
    batches = [b for b in _batches(biggest) if b[2] in acked]

    def held(pos: int, size: int, base: int) -> str:
        raw = biggest.read_bytes()[pos : pos + size]
        (records,) = struct.unpack_from(">i", raw, 57)
        count = records
        return f"{TOPIC}-{partition} batch at byte {pos}, offsets {base}..{base + count - 1}"

    if name == "last batch cut in half":
        pos, size, base = batches[-1]
        what = held(pos, size, base)
        with biggest.open("r+b") as handle:
            handle.truncate(pos + size // 2)
        return [], what
    if name == "one byte flipped in a batch":
        pos, size, base = batches[len(batches) // 2]
        what = held(pos, size, base)
        raw = bytearray(biggest.read_bytes())
        raw[pos + size - 3] ^= 0x55
        biggest.write_bytes(bytes(raw))
        return [], what
    if name == "one byte flipped in a base offset":
        pos, size, base = batches[len(batches) // 2]
        what = held(pos, size, base)
        raw = bytearray(biggest.read_bytes())
        raw[pos + 3] ^= 0x55  # outside the CRC: the batch still checks
        biggest.write_bytes(bytes(raw))
        return [], what
    catalog = data / "log" / "topics.json"
    if name == "topics.json deleted":
        catalog.unlink()
        return [], ""
    if name == "topics.json truncated":
        catalog.write_bytes(catalog.read_bytes()[: catalog.stat().st_size // 2])
        return [], ""
    if name == "events.jsonl replaced by a directory":
        (data / "events.jsonl").unlink()
        (data / "events.jsonl").mkdir()
        return [], ""
    db = data / "coordinator.db"
    if name.startswith("coordinator.db deleted"):
        db.unlink()
        for extra in data.glob("coordinator.db-*"):
            extra.unlink()
        return (["--allow-empty-coordinator"] if "allow-empty" in name else []), ""
    if name == "coordinator.db overwritten with garbage":
        raw = bytearray(db.read_bytes())
        raw[0:4096] = random.Random(7).randbytes(4096)
        db.write_bytes(bytes(raw))
    elif name == "coordinator.db truncated to half":
        with db.open("r+b") as handle:
            handle.truncate(db.stat().st_size // 2)
    return [], ""


CORRUPTIONS = [
    "last batch cut in half",
    "one byte flipped in a batch",
    "one byte flipped in a base offset",
    "topics.json deleted",
    "topics.json truncated",
    "events.jsonl replaced by a directory",
    "coordinator.db deleted",
    "coordinator.db deleted, then --allow-empty-coordinator",
    "coordinator.db overwritten with garbage",
    "coordinator.db truncated to half",
]


def section_corruption(ledger: Ledger, source: Path, src: str | None) -> None:
    print("== corruption: each on a copy of the data directory the restarts left")
    acked = sum(len(r) for r in ledger.records.values())
    print(f"  acknowledged before the damage: {acked:,} records, {len(ledger.commits)} commits")
    for name in CORRUPTIONS:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data"
            shutil.copytree(source, data)
            flags, what = _damage(name, data, ledger)
            what = f" ({what})" if what else ""
            server = Server(data, src)
            ok, took, line = server.start(*flags)
            if not ok:
                code = server.proc.returncode if server.proc else "?"
                print(f"  {name}{what}: REFUSED in {took:.2f} s (exit {code}): {line}")
                continue
            time.sleep(0.3)
            check = verify(server.port, ledger)
            warnings = [ln for ln in server.lines if "WARNING" in ln or "ERROR" in ln]
            server.stop()
            print(
                f"  {name}{what}: STARTED in {took:.2f} s; lost {check.records_lost} of "
                f"{check.records_checked:,} records, {check.commits_lost} of "
                f"{check.commits_checked} commits"
            )
            for warning in warnings[:2]:
                print(f"    log: {warning[:300]}")


# -- main -----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("section", choices=["wire", "floods", "restarts", "all"])
    parser.add_argument("--server-src", default=None, help="run this tree's src as the server")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--attackers", type=int, default=6)
    parser.add_argument("--baseline", type=float, default=10.0, help="s of the good client alone")
    parser.add_argument("--calm", type=float, default=3.0)
    parser.add_argument("--flood", type=float, default=5.0)
    parser.add_argument("--only", action="append", help="one flood by name (repeatable)")
    parser.add_argument("--restarts", type=int, default=25)
    parser.add_argument(
        "--max-run", type=float, default=2.0, help="s of load before a kill, at most"
    )
    args = parser.parse_args()
    src = args.server_src
    if args.section in ("wire", "all"):
        section_wire(args, src)
    if args.section in ("floods", "all"):
        section_floods(args, src)
    if args.section in ("restarts", "all"):
        with tempfile.TemporaryDirectory() as tmp:
            ledger = section_restarts(args, src, Path(tmp))
            section_corruption(ledger, Path(tmp) / "data", src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
