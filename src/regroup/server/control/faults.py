"""Request-level fault injection and request tracking, between a connection and the server.

librdkafka's mock cluster (``rdkafka_mock.h``) is the model: errors pushed for
the next requests of an API (``rd_kafka_mock_push_request_errors``), a sticky
error (``rd_kafka_mock_set_request_error``... here until cleared or until a
deadline), a response delay (``rd_kafka_mock_broker_set_rtt``, here per API),
connections closed (``rd_kafka_mock_broker_set_down``, here per client id) and
request tracking (``rd_kafka_mock_start_request_tracking`` /
``rd_kafka_mock_get_requests``), plus what only a group coordinator has: a
KIP-848 member's next heartbeat answered FENCED_MEMBER_EPOCH after
``group_faults.fence_member`` removed it.

``RequestFaults.serve`` stands in front of ``RegroupServer.serve_now`` on a
server started with ``control`` (the connection calls it instead; a server
without it pays nothing). For each request, in this order:

1. a handler registered for a private API key (``control``'s channel) serves it;
2. the request is recorded when tracking is on;
3. a KIP-848 heartbeat of a fenced member gets FENCED_MEMBER_EPOCH;
4. the next pushed error of its API, if any, else the API's sticky error, is
   the whole answer (``error_responses``): the request is *not* served, as a
   broker that fails a request does not act on it; a pushed 0 (NONE) lets one
   request through, as in librdkafka. Errors pushed with a delay each
   (``push_request_error_rtts``) come first: those of the broker that received
   the request, then those for any broker, then the plain pushed errors (as
   librdkafka's broker error stacks come before its cluster's); such an answer,
   error or served, leaves its entry's ``rtt_ms`` later;
5. otherwise the server serves it, and the response waits the API's RTT.

A request that cannot be decoded for steps 2-4 goes on to the server, which
closes the connection as without faults (``app`` rule 1). All state lives on
the server's event loop; call every method there.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import struct
import uuid
from collections import deque
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from regroup.model.errors import ErrorCode
from regroup.server.net.connection import ConnectionState, Served
from regroup.server.wire import codec
from regroup.server.wire.codec import DecodedRequest, RequestError
from regroup.server.wire.error_responses import check_supported, encode_error_response
from regroup.server.wire.versions import ADVERTISED, API_NAMES

__all__ = [
    "FaultError",
    "PairedError",
    "RequestFaults",
    "TrackedRequest",
    "api_key_of",
    "error_code_of",
    "read_client_id",
]

_PREFIX = struct.Struct(">hhi")
_CONSUMER_GROUP_HEARTBEAT = 68
_KEYS_BY_NAME = {name.lower(): key for key, name in API_NAMES.items()}

#: The APIs a coordinator answers: what "the coordinator is unavailable" fails.
COORDINATOR_APIS = ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit",
                    "OffsetFetch", "ConsumerGroupHeartbeat", "ConsumerGroupDescribe",
                    "DescribeGroups")  # fmt: skip


class FaultError(ValueError):
    """A fault that cannot be set: an unknown API or error name, a bad duration."""


def api_key_of(api: str | int) -> int:
    """The API key of a name (``"Heartbeat"``, any case) or of a key number we serve."""
    if isinstance(api, int) and not isinstance(api, bool):
        key = api
    else:
        found = _KEYS_BY_NAME.get(str(api).lower())
        if found is None:
            raise FaultError(
                f"unknown API {api!r} (one of: {', '.join(sorted(API_NAMES.values()))})"
            )
        key = found
    if key not in API_NAMES:
        raise FaultError(f"the server does not serve API key {key}")
    return key


def error_code_of(error: str | int) -> int:
    """An error code from Kafka's name (``REBALANCE_IN_PROGRESS``, any case) or its number."""
    if isinstance(error, int) and not isinstance(error, bool):
        try:
            return int(ErrorCode(error))
        except ValueError:
            raise FaultError(f"unknown error code {error}") from None
    try:
        return int(ErrorCode[str(error).upper()])
    except KeyError:
        raise FaultError(f"unknown error {error!r} (a Kafka error name)") from None


def read_client_id(body: bytes) -> str | None:
    """The client id of a request header v1/v2 (an int16-sized string after the prefix)."""
    if len(body) < 10:
        return None
    (size,) = struct.unpack_from(">h", body, 8)
    if size < 0 or len(body) < 10 + size:
        return None
    return body[10 : 10 + size].decode("utf-8", "replace")


def _jsonable(value: Any) -> Any:
    """A kio request as plain JSON values (for assertions and ``regroup ctl requests``)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list | frozenset | set):
        return [_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


@dataclass(frozen=True, slots=True)
class TrackedRequest:
    """One request the server received while tracking was on."""

    ts_ms: int
    conn_id: int
    api: str
    api_key: int
    api_version: int
    client_id: str | None
    group_id: str | None
    member_id: str | None
    #: The decoded request body, as JSON values by Kafka's field names.
    fields: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"fields": dict(self.fields)}


@dataclass(frozen=True, slots=True)
class PairedError:
    """One entry of ``push_request_error_rtts``: an error (0: served) and its delay."""

    code: int
    rtt_ms: int
    #: The broker whose requests it answers; ``None``: the next request on any broker.
    broker: int | None

    def to_json(self) -> dict[str, Any]:
        return {"error": ErrorCode(self.code).name, "rtt_ms": self.rtt_ms, "broker": self.broker}


@dataclass(slots=True)
class _Sticky:
    code: int
    #: Server milliseconds after which it no longer applies; ``None``: until cleared.
    until_ms: int | None


class RequestFaults:
    """Errors, delays, fenced members and tracking for every request of one server."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._pushed: dict[int, deque[int]] = {}
        self._sticky: dict[int, _Sticky] = {}
        self._rtt: dict[int | None, int] = {}
        self._fenced: set[str] = set()
        self._tracked: list[TrackedRequest] | None = None
        #: API key -> what serves it instead of the server (``control``'s private key).
        self.private: dict[int, Callable[[ConnectionState, bytes], Served]] = {}
        #: (broker id or ``None`` for any, API key) -> errors paired with delays, in order.
        self._paired: dict[tuple[int | None, int], deque[PairedError]] = {}
        #: The brokers a paired error may name, and the broker a connection is on: one
        #: node here (``ServerOptions.node_id``); a cluster of several sets both.
        self.node_ids: frozenset[int] = frozenset({0})
        self.node_of: Callable[[ConnectionState], int] = lambda conn: min(self.node_ids)
        self.stats = {"errors_injected": 0, "delayed": 0, "fenced_answers": 0}

    # -- setting faults -------------------------------------------------------------------

    def push_request_errors(self, api: str | int, errors: Iterable[str | int]) -> int:
        """The next requests of ``api`` answer these codes, one each (0 lets one through)."""
        key = api_key_of(api)
        codes = [error_code_of(e) for e in errors]
        if any(codes):
            check_supported(key, ADVERTISED.get(key, (0, 0))[1])
        self._pushed.setdefault(key, deque()).extend(codes)
        return len(self._pushed[key])

    def push_request_error_rtts(
        self,
        api: str | int,
        errors: Iterable[str | int],
        rtt_ms: Iterable[int] | int,
        *,
        broker: int | None = None,
    ) -> int:
        """The next requests of ``api`` (on ``broker``, or on any broker when ``None``)
        answer these codes, one each (0 serves the request), each answer ``rtt_ms``
        later: ``rtt_ms`` has one delay per error, or one int for all of them.

        librdkafka's ``rd_kafka_mock_broker_push_request_error_rtts`` (rdkafka_mock.c):
        a stack per broker and API of (error, rtt) pairs, taken before the cluster's
        errors, each delaying its response by its rtt on top of the broker's RTT.
        How many paired entries the stack now holds.
        """
        key = api_key_of(api)
        codes = [error_code_of(e) for e in errors]
        if not codes:
            raise FaultError("push at least one error (NONE serves a request)")
        delays = [rtt_ms] * len(codes) if isinstance(rtt_ms, int) else [int(d) for d in rtt_ms]
        if len(delays) != len(codes):
            raise FaultError(f"{len(codes)} errors but {len(delays)} rtt_ms: give one per error")
        if any(d < 0 for d in delays):
            raise FaultError(f"an rtt_ms must be >= 0, got {min(delays)}")
        if broker is not None and broker not in self.node_ids:
            raise FaultError(
                f"no broker {broker} (brokers: {', '.join(map(str, sorted(self.node_ids)))})"
            )
        if any(codes):
            check_supported(key, ADVERTISED.get(key, (0, 0))[1])
        stack = self._paired.setdefault((broker, key), deque())
        stack.extend(PairedError(c, d, broker) for c, d in zip(codes, delays, strict=True))
        return len(stack)

    def set_request_error(
        self, api: str | int, error: str | int | None, *, duration_ms: int | None = None
    ) -> None:
        """Every request of ``api`` answers ``error``, until cleared (``None``) or for
        ``duration_ms``."""
        key = api_key_of(api)
        if error is None:
            self._sticky.pop(key, None)
            return
        code = error_code_of(error)
        if code:
            check_supported(key, ADVERTISED.get(key, (0, 0))[1])
        if duration_ms is not None and duration_ms < 0:
            raise FaultError(f"duration_ms must be >= 0, got {duration_ms}")
        until = None if duration_ms is None else self._now_ms() + duration_ms
        self._sticky[key] = _Sticky(code, until)

    def coordinator_unavailable(self, duration_ms: int | None, error: str | int) -> list[str]:
        """Every coordinator API answers ``error`` (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS) for ``duration_ms``, and FindCoordinator answers
        COORDINATOR_NOT_AVAILABLE: what a client sees while a coordinator moves."""
        for api in COORDINATOR_APIS:
            self.set_request_error(api, error, duration_ms=duration_ms)
        self.set_request_error(
            "FindCoordinator", "COORDINATOR_NOT_AVAILABLE", duration_ms=duration_ms
        )
        return [*COORDINATOR_APIS, "FindCoordinator"]

    def coordinator_available(self) -> None:
        for api in (*COORDINATOR_APIS, "FindCoordinator"):
            self._sticky.pop(api_key_of(api), None)

    def clear_request_errors(self, api: str | int | None = None) -> None:
        """Forget pushed and sticky errors (of ``api``, or of every API)."""
        if api is None:
            self._pushed.clear()
            self._sticky.clear()
            self._paired.clear()
        else:
            key = api_key_of(api)
            self._pushed.pop(key, None)
            self._sticky.pop(key, None)
            for stack in [k for k in self._paired if k[1] == key]:
                del self._paired[stack]

    def set_rtt(self, api: str | int | None, ms: int) -> None:
        """Responses to ``api`` (every API when ``None``) leave ``ms`` later; 0 removes it."""
        if ms < 0:
            raise FaultError(f"an RTT must be >= 0 ms, got {ms}")
        key = None if api is None else api_key_of(api)
        if ms:
            self._rtt[key] = ms
        else:
            self._rtt.pop(key, None)

    def fence(self, member_id: str) -> None:
        """The member's next ConsumerGroupHeartbeat (epoch > 0) answers FENCED_MEMBER_EPOCH."""
        self._fenced.add(member_id)

    def start_tracking(self) -> None:
        if self._tracked is None:
            self._tracked = []

    def stop_tracking(self) -> None:
        self._tracked = None

    def requests(self, api: str | int | None = None) -> list[TrackedRequest]:
        """The requests received since tracking started (of ``api`` only, when given)."""
        tracked = self._tracked or []
        if api is None:
            return list(tracked)
        key = api_key_of(api)
        return [r for r in tracked if r.api_key == key]

    def clear_requests(self) -> None:
        if self._tracked is not None:
            self._tracked.clear()

    def reset(self) -> None:
        """No fault left: no pushed or sticky error, no RTT, no fenced member, no tracking."""
        self._pushed.clear()
        self._sticky.clear()
        self._paired.clear()
        self._rtt.clear()
        self._fenced.clear()
        self._tracked = None

    def pending(self) -> dict[str, Any]:
        """What is set now (``regroup ctl faults``)."""
        now = self._now_ms()
        return {
            "pushed": {
                API_NAMES[k]: [ErrorCode(c).name for c in q] for k, q in self._pushed.items() if q
            },
            "sticky": {
                API_NAMES[k]: {
                    "error": ErrorCode(s.code).name,
                    "remaining_ms": None if s.until_ms is None else max(0, s.until_ms - now),
                }
                for k, s in self._sticky.items()
                if s.until_ms is None or s.until_ms > now
            },
            "pushed_rtts": self._pending_paired(),
            "rtt_ms": {("*" if k is None else API_NAMES[k]): ms for k, ms in self._rtt.items()},
            "fenced": sorted(self._fenced),
            "tracking": self._tracked is not None,
            **self.stats,
        }

    def _pending_paired(self) -> dict[str, list[dict[str, Any]]]:
        """Paired entries by API name: each broker's stack (by id), then any broker's."""
        out: dict[str, list[dict[str, Any]]] = {}
        order = sorted(self._paired, key=lambda bk: (bk[0] is None, bk[0] or 0, bk[1]))
        for broker_key in order:
            for entry in self._paired[broker_key]:
                out.setdefault(API_NAMES[broker_key[1]], []).append(entry.to_json())
        return out

    # -- serving ------------------------------------------------------------------------

    def _paired_for(self, conn: ConnectionState, key: int) -> PairedError | None:
        """The next paired entry for a request of ``key`` on ``conn``'s broker (step 4)."""
        for broker in (self.node_of(conn), None):
            stack = self._paired.get((broker, key))
            if stack:
                return stack.popleft()
        return None

    def _error_for(self, key: int) -> int | None:
        queue = self._pushed.get(key)
        if queue:
            return queue.popleft()
        sticky = self._sticky.get(key)
        if sticky is None:
            return None
        if sticky.until_ms is not None and self._now_ms() >= sticky.until_ms:
            del self._sticky[key]
            return None
        return sticky.code

    def serve(
        self,
        conn: ConnectionState,
        body: bytes,
        serve_now: Callable[[ConnectionState, bytes], Served],
    ) -> Served:
        """Steps 1-5 of the module docstring for one request of ``conn``."""
        if len(body) < 8:
            return serve_now(conn, body)
        key, _, _ = _PREFIX.unpack_from(body, 0)
        if conn.client_id is None:
            conn.client_id = read_client_id(body)
        private = self.private.get(key)
        if private is not None:
            return private(conn, body)
        decoded: DecodedRequest | None = None
        if self._tracked is not None:
            decoded = self._decode(body)
            if decoded is not None:
                self._track(conn, decoded)
        if key == _CONSUMER_GROUP_HEARTBEAT and self._fenced:
            decoded = decoded or self._decode(body)
            member = getattr(decoded.body, "member_id", None) if decoded else None
            if decoded is not None and member in self._fenced and decoded.body.member_epoch > 0:
                self._fenced.discard(member)
                self.stats["fenced_answers"] += 1
                return encode_error_response(decoded, int(ErrorCode.FENCED_MEMBER_EPOCH))
        paired = self._paired_for(conn, key) if self._paired else None
        if paired is not None:
            return self._serve_paired(conn, body, paired, decoded, serve_now)
        code = self._error_for(key) if (self._pushed or self._sticky) else None
        if code:
            decoded = decoded or self._decode(body)
            if decoded is not None:
                self.stats["errors_injected"] += 1
                return encode_error_response(decoded, code)
        served = serve_now(conn, body)
        delay = self._rtt.get(key, self._rtt.get(None, 0)) if self._rtt else 0
        if delay:
            self.stats["delayed"] += 1
            return self._delayed(served, delay / 1000.0)
        return served

    def _serve_paired(
        self,
        conn: ConnectionState,
        body: bytes,
        paired: PairedError,
        decoded: DecodedRequest | None,
        serve_now: Callable[[ConnectionState, bytes], Served],
    ) -> Served:
        """A request answered by a paired entry: its error (not served) or served, either
        way ``rtt_ms`` plus the API's RTT later."""
        served: Served | None = None
        if paired.code:
            decoded = decoded or self._decode(body)
            if decoded is not None:
                self.stats["errors_injected"] += 1
                served = encode_error_response(decoded, paired.code)
        if served is None:
            served = serve_now(conn, body)
        key = _PREFIX.unpack_from(body, 0)[0]
        delay = paired.rtt_ms + (self._rtt.get(key, self._rtt.get(None, 0)) if self._rtt else 0)
        if delay:
            self.stats["delayed"] += 1
            return self._delayed(served, delay / 1000.0)
        return served

    @staticmethod
    async def _delayed(served: Served, seconds: float) -> bytes | None:
        if isinstance(served, Coroutine):
            served = await served
        await asyncio.sleep(seconds)
        return served

    @staticmethod
    def _decode(body: bytes) -> DecodedRequest | None:
        try:
            return codec.decode_request(body)
        except RequestError:
            return None

    def _track(self, conn: ConnectionState, req: DecodedRequest) -> None:
        assert self._tracked is not None
        fields = _jsonable(req.body)
        if not isinstance(fields, dict):
            fields = {"body": fields}
        group = fields.get("group_id")
        member = fields.get("member_id")
        self._tracked.append(
            TrackedRequest(
                ts_ms=self._now_ms(),
                conn_id=conn.conn_id,
                api=API_NAMES.get(req.api_key, str(req.api_key)),
                api_key=req.api_key,
                api_version=req.api_version,
                client_id=req.client_id,
                group_id=group if isinstance(group, str) else None,
                member_id=member if isinstance(member, str) else None,
                fields=fields,
            )
        )
