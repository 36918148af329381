"""Mutated requests of every API and version through a whole in-process server.

What the wire fuzzing covers: frames seeded from every advertised
API and version (and regroup's two private ones), mutated, and served by
``RegroupServer.serve_now``: the header and body decoders (``frame_check``,
kio, ``heartbeat_codec``), the mapping to version-neutral requests, the
coordinator and the cluster APIs. ``fuzz_sasl`` serves the same frames after a
real SASL login under ACLs, and mutated SASL exchanges before one.

Each frame is answered (or parked), refused (answered, then closed), or closed
without an answer (``CloseConnection``); anything else is a death: an exception
out of ``serve_now``, or a failure the server contained but counted (a
coordinator handler that raised, ``CoordinatorResult.failures``; a request
handler that raised, ``stats["request_failures"]``; a coordinator timer that
raised), or an event-loop callback that raised. Each frame is timed with the
event loop's next turn (``FrameTimer``): slower than ``HANG_S`` is a hang.

Seeds: a valid request of each (API, version) with every field present, one
element in every array (``seed_body``). Mutations, one to three per frame:
a flipped byte, a huge varint or int32/int16 count written over the body, the
body cut short, random bytes inserted. Deterministic for a seed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import random
import struct
import time
import uuid
import warnings
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
)

from regroup.model.requests.consumer import (
    ConsumerGroupInstallAssignmentMember,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
    TopicPartitions,
)
from regroup.model.uuid import Uuid
from regroup.server.app import RegroupServer, ServerOptions
from regroup.server.clients.wire_client import RequestEncoder
from regroup.server.net.connection import CloseConnection, ConnectionState, Stopping
from regroup.server.wire.versions import ADVERTISED, INSTALL_ASSIGNMENT_KEY, PREPARE_ASSIGNMENT_KEY

__all__ = [
    "HANG_S",
    "FrameTimer",
    "FuzzReport",
    "count",
    "fuzz",
    "minimal_request",
    "mutate",
    "quietly",
    "sample_request",
    "seed_body",
    "seeds",
]

_VALUES: dict[str, Any] = {
    "bool": True,
    "int8": 1,
    "int16": 1,
    "int32": 1,
    "int64": 1,
    "uint8": 1,
    "uint16": 1,
    "uint32": 1,
    "uint64": 1,
    "float64": 1.0,
    "string": "s",
    "bytes": b"b",
    "records": b"r",
    "uuid": uuid.UUID(int=1),
    "error_code": KioErrorCode.none,
    "timedelta_i32": datetime.timedelta(milliseconds=1),
    "timedelta_i64": datetime.timedelta(milliseconds=1),
    "datetime_i64": datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
}


def sample_request(cls: Any) -> Any:
    """A kio entity with a value in every field (tagged ones too) and one-element arrays."""
    return _entity(cls, 1, _VALUES, 1)


#: The smallest value of each sized type (the fixed-size ones have one size anyway).
_SMALLEST: dict[str, Any] = {**_VALUES, "string": "", "bytes": b"", "records": b""}


def minimal_request(cls: Any, copies: int) -> Any:
    """``cls`` in its smallest form (empty strings and bytes, empty nested arrays), its own
    arrays holding ``copies`` smallest elements: the most elements a body of its size holds."""
    return _entity(cls, copies, _SMALLEST, 0)


def _entity(cls: Any, copies: int, values_of: dict[str, Any], nested: int) -> Any:
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        if isinstance(kind, EntityTupleField):
            values[f.name] = (_entity(kind.type_, nested, values_of, nested),) * copies
        elif isinstance(kind, EntityField):
            values[f.name] = _entity(kind.type_, nested, values_of, nested)
        elif isinstance(kind, PrimitiveTupleField):
            values[f.name] = (values_of[f.metadata["kafka_type"]],) * copies
        else:
            values[f.name] = values_of[f.metadata["kafka_type"]]
    return cls(**values)


def seed_body(api_key: int, version: int, client_id: str = "fuzz") -> bytes:
    """A valid request (without its size prefix) using every field of its version."""
    values: Any
    if api_key == PREPARE_ASSIGNMENT_KEY:
        values = ConsumerGroupPrepareAssignmentRequest("g", "m", 1)
    elif api_key == INSTALL_ASSIGNMENT_KEY:
        member = ConsumerGroupInstallAssignmentMember("m", (TopicPartitions(Uuid(1, 2), (0, 1)),))
        values = ConsumerGroupInstallAssignmentRequest("g", "m", 1, 2, 0, (member,))
    else:
        values = sample_request(load_request_schema(api_key, version))
    return RequestEncoder(client_id).encode(api_key, version, values)[1][4:]


def seeds() -> list[bytes]:
    """One seed per advertised (API, version) and per private API."""
    pairs = [(k, v) for k, (low, high) in sorted(ADVERTISED.items()) for v in range(low, high + 1)]
    pairs += [(PREPARE_ASSIGNMENT_KEY, 0), (INSTALL_ASSIGNMENT_KEY, 0)]
    return [seed_body(k, v) for k, v in pairs]


_HUGE_VARINTS = [b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08", b"\xff\xff\x03", b"\xff\x7f"]
_HUGE_INTS = [0x7FFFFFFF, 0x01000000, 0x00010000, 0x7FFF, -2, -1, 0]


def mutate(body: bytes, rng: random.Random) -> bytes:
    """One to three mutations after the api key, version and correlation id."""
    data = bytearray(body)
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(8, max(8, len(data)))
        what = rng.randrange(6)
        if what == 0 and at < len(data):
            data[at] ^= rng.randint(1, 255)
        elif what == 1:
            data[at : at + 1] = rng.choice(_HUGE_VARINTS)
        elif what == 2:
            data[at : at + 4] = struct.pack(">i", rng.choice(_HUGE_INTS))
        elif what == 3:
            data[at : at + 2] = struct.pack(">h", rng.choice(_HUGE_INTS[3:]))
        elif what == 4:
            del data[rng.randint(8, len(data)) :]
        else:
            data[at:at] = rng.randbytes(rng.randint(1, 6))
    return bytes(data)


@dataclass(slots=True)
class FuzzReport:
    """What a fuzz run saw; ``deaths`` and ``hangs`` must stay 0."""

    frames: int = 0
    #: Served with an answer, with none (acks=0), or parked (a join, a fetch waiting).
    answered: int = 0
    #: Answered, then the connection closed (a failed SASL login: Kafka's farewell).
    refused: int = 0
    #: The connection closed without an answer (``CloseConnection``, ``Stopping``).
    closed: int = 0
    #: Frames whose serving raised, made a coordinator handler, a request handler
    #: (``stats["request_failures"]``) or a timer raise, or broke a login: the bugs.
    deaths: int = 0
    #: Frames (and login frames) answered, with the event loop's next turn, after
    #: more than ``HANG_S``.
    hangs: int = 0
    #: The slowest frame: serving it and the loop turn after it (timers due), in seconds,
    #: and the CPU time the server's thread spent on it (a loaded host makes the first
    #: larger, not the second).
    max_latency_s: float = 0.0
    max_latency_cpu_s: float = 0.0
    #: SASL mode: frames sent after a login, and the logins (PLAIN and SCRAM) made.
    authenticated: int = 0
    logins: int = 0
    #: SASL mode, frames after a login: those the authorizer refused something in,
    #: those it only allowed, and its decisions for a principal other than the one
    #: logged in (must be 0: the frames ran as the principal).
    denied: int = 0
    allowed: int = 0
    foreign_decisions: int = 0
    #: SASL mode: authorizer decisions while a frame was served before login (must be 0).
    pre_login_decisions: int = 0
    #: The first few deaths and hangs: (frame hex, what happened).
    examples: list[tuple[str, str]] = field(default_factory=list)

    def add(self, other: FuzzReport) -> None:
        for f in dataclasses.fields(self):
            if f.name == "examples":
                self.examples.extend(other.examples[: max(0, 5 - len(self.examples))])
            elif f.name == "max_latency_s":
                if other.max_latency_s > self.max_latency_s:
                    self.max_latency_s = other.max_latency_s
                    self.max_latency_cpu_s = other.max_latency_cpu_s
            elif f.name == "max_latency_cpu_s":
                continue
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def note(self, body: bytes, what: str) -> None:
        if len(self.examples) < 5:
            self.examples.append((body.hex(), what))


#: An answer slower than this is a hang (the event loop, every client with it, waited).
HANG_S = 1.0

#: ``stats`` counters of the server that count a failure it contained (a bug all the same).
FAILURE_STATS = ("handler_failures", "request_failures", "timer_failures")


class FrameTimer:
    """Serves one frame through ``serve_now`` and the event loop's next turn, timed.

    The loop turn lets due timers (the coordinator's, the server's sweeps) run, so a
    timer that loops is a hang of the frame that armed it, not a silent stall.
    """

    def __init__(self, server: RegroupServer, report: FuzzReport) -> None:
        self.server = server
        self.report = report
        self._failures = self._failures_now()
        self.loop_errors = 0
        asyncio.get_running_loop().set_exception_handler(self._loop_error)

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        self.loop_errors += 1

    def _failures_now(self) -> int:
        return sum(self.server.stats.get(name, 0) for name in FAILURE_STATS)

    async def serve(self, conn: ConnectionState, body: bytes) -> tuple[str, bytes | None]:
        """(outcome, answer): ``answered`` (bytes, ``None`` when parked or unanswered),
        ``refused`` (the farewell), ``closed`` or ``death`` (the error in the examples)."""
        report = self.report
        errors = self.loop_errors
        started, cpu = time.perf_counter(), time.thread_time()
        outcome, answer, error = "answered", None, ""
        try:
            served = self.server.serve_now(conn, body)
            if isinstance(served, Coroutine):
                served.close()  # the synchronous part ran; do not wait for a join or a fetch
            else:
                answer = served
        except CloseConnection as exc:
            outcome, answer = ("refused", exc.farewell) if exc.farewell else ("closed", None)
        except Stopping:
            outcome = "closed"
        except Exception as exc:
            outcome, error = "death", f"{type(exc).__name__}: {exc}"
        await asyncio.sleep(0)
        took = time.perf_counter() - started
        if took > report.max_latency_s:
            report.max_latency_s = took
            report.max_latency_cpu_s = time.thread_time() - cpu
        if took > HANG_S:
            report.hangs += 1
            report.note(
                body,
                f"answered after {took:.3f} s ({time.thread_time() - cpu:.3f} s of the "
                "server thread's CPU: the rest is the host's)",
            )
        failures = self._failures_now()
        if failures > self._failures:
            self._failures = failures
            error = (
                error
                or "the server contained a failure ("
                + ", ".join(f"{name} {self.server.stats.get(name, 0)}" for name in FAILURE_STATS)
                + ")"
            )
        if self.loop_errors > errors:
            error = error or "an event-loop callback raised"
        if error:
            report.note(body, error)
            return "death", answer
        return outcome, answer


def count(report: FuzzReport, outcome: str) -> None:
    report.frames += 1
    if outcome == "death":
        report.deaths += 1
    else:
        setattr(report, outcome, getattr(report, outcome) + 1)


async def _run(frames: int, seed: int, restart_every: int, report: FuzzReport) -> None:
    rng = random.Random(seed)
    bodies = seeds()
    server: RegroupServer | None = None
    timer: FrameTimer | None = None
    try:
        for index in range(frames):
            if server is None or timer is None or index % restart_every == 0:
                if server is not None:
                    await server.stop()
                server = RegroupServer(ServerOptions(port=0, seed=seed))
                await server.start()
                timer = FrameTimer(server, report)
            outcome, _ = await timer.serve(
                ConnectionState(index, "fuzz"), mutate(rng.choice(bodies), rng)
            )
            count(report, outcome)
    finally:
        if server is not None:
            await server.stop()


def quietly(run: Coroutine[Any, Any, None]) -> None:
    """``asyncio.run(run)`` with the server's expected refusals kept off the log."""
    quiet = logging.getLogger("regroup.server")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # refusals are expected; the report counts them
    try:
        with warnings.catch_warnings():
            # Coroutines of parked requests are closed unstarted: expected, not news.
            warnings.simplefilter("ignore", RuntimeWarning)
            asyncio.run(run)
    finally:
        quiet.setLevel(level)


def fuzz(frames: int, seed: int = 0, restart_every: int = 20_000) -> FuzzReport:
    """Serve ``frames`` mutated frames to an unsecured server (PLAINTEXT, no authorizer);
    a fresh server every ``restart_every`` frames. ``fuzz_sasl.fuzz_sasl``: the same after
    a SASL login under ACLs, and before one."""
    report = FuzzReport()
    quietly(_run(frames, seed, restart_every, report))
    return report
