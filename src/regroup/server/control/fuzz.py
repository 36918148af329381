"""Mutated requests of every API and version through a whole in-process server.

What the wire fuzzing covers: frames seeded from every advertised
API and version (and regroup's two private ones), mutated, and served by
``RegroupServer.serve_now``: the header and body decoders (``frame_check``,
kio, ``heartbeat_codec``), the mapping to version-neutral requests, the
coordinator and the cluster APIs. A frame may be refused (``CloseConnection``:
the connection would be closed) or answered; anything else is a crash: an
exception out of ``serve_now`` or out of the coroutine it returns, or a
coordinator handler that raised (``CoordinatorResult.failures``, contained by
``regroup.coordinator.guard`` but a bug all the same).

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
    "FuzzReport",
    "fuzz",
    "minimal_request",
    "mutate",
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
    frames: int = 0
    answered: int = 0
    refused: int = 0
    #: Frames whose serving raised (or made a coordinator handler raise): the bugs.
    crashes: int = 0
    #: The first few crashes: (frame hex, what was raised).
    examples: list[tuple[str, str]] = field(default_factory=list)


async def _run(frames: int, seed: int, restart_every: int, report: FuzzReport) -> None:
    rng = random.Random(seed)
    bodies = seeds()
    server: RegroupServer | None = None
    failures_seen = 0
    try:
        for index in range(frames):
            if server is None or index % restart_every == 0:
                if server is not None:
                    await server.stop()
                server = RegroupServer(ServerOptions(port=0, seed=seed))
                await server.start()
                failures_seen = 0
            body = mutate(rng.choice(bodies), rng)
            report.frames += 1
            crash: str | None = None
            try:
                served = server.serve_now(ConnectionState(index, "fuzz"), body)
                if isinstance(served, Coroutine):
                    served.close()  # the synchronous part ran; do not wait for a join or a fetch
                report.answered += 1
            except CloseConnection:
                report.refused += 1
            except Stopping:
                report.refused += 1
            except Exception as exc:
                crash = f"{type(exc).__name__}: {exc}"
            failed = server.stats.get("handler_failures", 0)
            if failed > failures_seen:
                failures_seen = failed
                crash = crash or "a coordinator handler raised"
            if crash is not None:
                report.crashes += 1
                if len(report.examples) < 5:
                    report.examples.append((body.hex(), crash))
    finally:
        if server is not None:
            await server.stop()


def fuzz(frames: int, seed: int = 0, restart_every: int = 20_000) -> FuzzReport:
    """Serve ``frames`` mutated frames; a fresh server every ``restart_every`` frames."""
    report = FuzzReport()
    quiet = logging.getLogger("regroup.server")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # refusals are expected; the report counts them
    try:
        with warnings.catch_warnings():
            # Coroutines of parked requests are closed unstarted: expected, not news.
            warnings.simplefilter("ignore", RuntimeWarning)
            asyncio.run(_run(frames, seed, restart_every, report))
    finally:
        quiet.setLevel(level)
    return report
