"""The asyncio Kafka wire-protocol server around the sans-IO coordinator.

Theory of operation. One event loop, one ``GroupCoordinator``, one ``Log``.
Each connection is a task that reads length-prefixed frames and serves them
**one at a time, in order** (Kafka mutes a channel while a request is in
flight; JoinGroup, SyncGroup and Fetch can block for seconds). A group request
becomes one or more version-neutral requests (``mapping``); each is handed to
``coordinator.handle(token, request, now_ms)`` with ``token = (connection,
correlation id, index)`` and a future parked under that token. Any result
(of this request, of another connection's request, or of a timer) is
*applied* the same way:

1. its records are committed to the store (SQLite with ``--data-dir``);
2. its events are written to the event log;
3. each reply resolves the future parked under its token, and the connection
   that waits on it encodes and sends the response;
4. the single timer is re-armed from ``coordinator.next_deadline()``.

Step 1 precedes step 3 and the futures' waiters run only after ``_apply``
returns, so a response never leaves before its records are durable
(DESIGN.md). On start the stored records are replayed into a fresh
coordinator, so a restart loses no acknowledged commit and no group.

Rule 1: bad input never takes the server down. A frame whose size is below a
request header or above ``max_frame_bytes`` closes that connection; a request
that does not decode closes that connection (Kafka's ``SocketServer`` closes
on ``InvalidRequestException``), except ApiVersions of an unknown version,
which gets the KIP-511 v0 answer. Everything is logged; other connections
carry on.
Rule 2: time is the wall clock in milliseconds (Kafka's ``Time.SYSTEM``):
commit timestamps and expiry survive a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.events import RecordsProduced
from regroup.model.requests.classic import HeartbeatResponse
from regroup.model.topic_partition import TopicPartition
from regroup.server import codec
from regroup.server.cluster import Cluster
from regroup.server.codec import (
    DecodedRequest,
    MalformedRequestError,
    UnsupportedApiError,
)
from regroup.server.events import EventSink
from regroup.server.log import Log, encode_batch
from regroup.server.mapping import GROUP_APIS
from regroup.server.store import MemoryStore, RecordStore, SqliteRecordStore
from regroup.server.versions import API_NAMES, INSTALL_ASSIGNMENT_KEY, PREPARE_ASSIGNMENT_KEY

__all__ = ["BackgroundServer", "RegroupServer", "ServerOptions"]

logger = logging.getLogger("regroup.server")

_PRIVATE_KEYS = (PREPARE_ASSIGNMENT_KEY, INSTALL_ASSIGNMENT_KEY)


@dataclass(frozen=True, slots=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 9092
    data_dir: Path | None = None
    #: Events as JSON lines; default ``<data_dir>/events.jsonl`` when a data dir is set.
    events_path: Path | None = None
    config: GroupCoordinatorConfig = field(default_factory=GroupCoordinatorConfig)
    max_frame_bytes: int = codec.DEFAULT_MAX_FRAME_BYTES
    auto_create_topics: bool = True
    default_partitions: int = 1
    node_id: int = 0
    #: Seed for member ids; ``None`` draws one (ids must differ across restarts).
    seed: int | None = None


_NO_REPLY: Any = object()
#: Wait for the socket to drain only when this much output is queued (a slow reader).
_DRAIN_ABOVE = 1 << 16


class _CloseConnection(Exception):
    """Rule 1: the request cannot be answered; drop the connection."""


class _Stopping(Exception):
    """The server is shutting down: parked requests end without an answer."""


@dataclass(eq=False, slots=True)
class _Connection:
    conn_id: int
    host: str
    parked: set[Hashable] = field(default_factory=set)


class RegroupServer:
    """A one-node Kafka cluster whose group coordinator is regroup's."""

    def __init__(self, options: ServerOptions | None = None) -> None:
        self.options = options = options or ServerOptions()
        data_dir = options.data_dir
        self.log = Log(None if data_dir is None else data_dir / "log")
        self.store: RecordStore = (
            MemoryStore() if data_dir is None else SqliteRecordStore(data_dir / "coordinator.db")
        )
        events_path = options.events_path
        if events_path is None and data_dir is not None:
            events_path = data_dir / "events.jsonl"
        self.events = EventSink(events_path)
        seed = options.seed if options.seed is not None else random.SystemRandom().getrandbits(64)
        self.coordinator = GroupCoordinator(
            options.config, metadata=self.log.metadata_image(), rng=random.Random(seed)
        )
        replayed = 0
        for record in self.store.load():
            self.coordinator.replay(record)
            replayed += 1
        if replayed:
            logger.info("replayed %d coordinator records", replayed)
        self.cluster = Cluster(
            self.log,
            host=options.host,
            port=options.port,
            node_id=options.node_id,
            auto_create_topics=options.auto_create_topics,
            default_partitions=options.default_partitions,
            on_topics_changed=self._topics_changed,
        )
        self._pending: dict[Hashable, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._timer: asyncio.TimerHandle | None = None
        self._armed: int | None = None
        self._append_waiters: set[asyncio.Future[None]] = set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Counters for logs, tests and the benchmark.
        self.stats: dict[str, int] = {"requests": 0, "closed_bad_input": 0}

    # -- life cycle ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self.cluster.port

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(
            self._serve_connection, self.options.host, self.options.port, limit=1 << 20
        )
        sock = self._server.sockets[0]
        self.cluster.port = int(sock.getsockname()[1])
        logger.info("regroup serving on %s:%d", self.options.host, self.cluster.port)
        # Timers are not records: arm those of the groups rebuilt from the store
        # (session timeouts of replayed members, Kafka's onLoaded), then re-arm.
        self._apply(self.coordinator.on_loaded(self.now_ms()))

    async def serve_forever(self) -> None:
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._server is not None:
            self._server.close()
        self._stopping = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(_Stopping())
        self._pending.clear()
        for waiter in self._append_waiters:
            if not waiter.done():
                waiter.set_result(None)
        for writer in list(self._writers):
            writer.close()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        self.store.close()
        self.events.close()
        self.log.close()

    # -- coordinator driving ------------------------------------------------------------

    @staticmethod
    def now_ms() -> int:
        return time.time_ns() // 1_000_000

    def _apply(self, result: CoordinatorResult, mine: Hashable = None) -> Any:
        """Steps 1-4 of the theory of operation; returns the reply to ``mine`` if present.

        A reply to ``mine`` (the request being served right now) is returned
        rather than sent through a parked future: the common, immediate case.
        """
        if result.records:
            self.store.append(result.records)
        if result.events:
            self.events.publish(result.events)
        answer: Any = _NO_REPLY
        for reply in result.replies:
            if mine is not None and reply.token == mine:
                answer = reply.response
                continue
            future = self._pending.pop(reply.token, None)
            if future is not None and not future.done():
                future.set_result(reply.response)
        self._rearm()
        return answer

    def _rearm(self) -> None:
        """Keep one timer armed at or before the coordinator's next deadline.

        An armed timer that fires no later than the new deadline is kept: firing
        early is harmless (``on_timer`` expires only what is due, then re-arms),
        and it spares a timer handle per heartbeat.
        """
        deadline = self.coordinator.next_deadline()
        if deadline is None or self._loop is None:
            return
        if self._timer is not None and self._armed is not None and self._armed <= deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._armed = deadline
        delay = max(0.0, (deadline - self.now_ms() + 1) / 1000.0)
        self._timer = self._loop.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._armed = None
        try:
            self._apply(self.coordinator.on_timer(self.now_ms()))
        except Exception:
            logger.exception("coordinator timer failed")
            self._rearm()

    def _topics_changed(self) -> None:
        self._apply(self.coordinator.update_metadata(self.log.metadata_image(), self.now_ms()))

    # -- connections --------------------------------------------------------------------

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        peer = writer.get_extra_info("peername")
        conn = _Connection(next(self._ids), str(peer[0]) if peer else "unknown")
        try:
            while True:
                head = await reader.readexactly(4)
                size = int.from_bytes(head, "big", signed=True)
                if not 8 <= size <= self.options.max_frame_bytes:
                    self.stats["closed_bad_input"] += 1
                    logger.warning("connection %d: bad frame size %d, closing", conn.conn_id, size)
                    break
                body = await reader.readexactly(size)
                try:
                    response = await self._dispatch(conn, body)
                except _CloseConnection:
                    self.stats["closed_bad_input"] += 1
                    break
                if response is not None:
                    writer.write(response)
                    if writer.transport.get_write_buffer_size() > _DRAIN_ABOVE:
                        await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, _Stopping):
            pass
        except asyncio.CancelledError:
            return
        except Exception:
            logger.exception("connection %d failed", conn.conn_id)
        finally:
            for token in conn.parked:
                future = self._pending.pop(token, None)
                if future is not None and not future.done():
                    future.cancel()
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _dispatch(self, conn: _Connection, body: bytes) -> bytes | None:
        try:
            req = codec.decode_request(body)
        except UnsupportedApiError as exc:
            if exc.api_key == codec.API_VERSIONS_KEY:
                return codec.api_versions_fallback(exc.correlation_id)
            logger.warning("connection %d: %s; closing", conn.conn_id, exc)
            raise _CloseConnection from None
        except MalformedRequestError as exc:
            logger.warning("connection %d: %s; closing", conn.conn_id, exc)
            raise _CloseConnection from None
        self.stats["requests"] += 1
        try:
            response = await self._serve(conn, req)
        except (asyncio.CancelledError, _Stopping):
            raise
        except Exception:
            name = API_NAMES.get(req.api_key, str(req.api_key))
            logger.exception("connection %d: %s v%d failed", conn.conn_id, name, req.api_version)
            raise _CloseConnection from None
        if response is None:
            return None
        if isinstance(response, HeartbeatResponse):
            return codec.encode_heartbeat_response(
                req.api_version, req.correlation_id, int(response.error_code)
            )
        return codec.encode_response(req.api_key, req.api_version, req.correlation_id, response)

    async def _serve(self, conn: _Connection, req: DecodedRequest) -> Any:
        key = req.api_key
        cluster = self.cluster
        if key == 18:
            return cluster.api_versions(req)
        if key == 3:
            return cluster.metadata(req)
        if key == 10:
            return cluster.find_coordinator(req)
        if key == 19:
            return cluster.create_topics(req)
        if key == 2:
            return cluster.list_offsets(req)
        if key == 22:
            return cluster.init_producer_id(req)
        if key == 0:
            return self._produce(req)
        if key == 1:
            return await self._fetch(req)
        if key in _PRIVATE_KEYS:
            (response,) = await self._coordinate(conn, req, [req.body])
            return response
        decode, encode = GROUP_APIS[key]
        requests = decode(req, conn.host)
        responses = await self._coordinate(conn, req, requests)
        if key == 12:
            return responses[0]  # encoded directly by _dispatch (the hot path)
        return encode(req.api_version, requests, responses)

    async def _coordinate(
        self, conn: _Connection, req: DecodedRequest, requests: list[object]
    ) -> list[Any]:
        assert self._loop is not None
        answers: list[Any] = []
        parked: list[tuple[int, tuple[int, int, int], asyncio.Future[Any]]] = []
        for index, request in enumerate(requests):
            token = (conn.conn_id, req.correlation_id, index)
            answer = self._apply(self.coordinator.handle(token, request, self.now_ms()), token)
            if answer is _NO_REPLY:
                future: asyncio.Future[Any] = self._loop.create_future()
                self._pending[token] = future
                conn.parked.add(token)
                parked.append((index, token, future))
            answers.append(answer)
        try:
            for index, _, future in parked:
                answers[index] = await future
        finally:
            for _, parked_token, _ in parked:
                conn.parked.discard(parked_token)
        return answers

    # -- local administration (tests, benchmarks, examples; call on the server's loop) --

    def create_topic(self, name: str, partitions: int) -> None:
        """Create a topic as CreateTopics would (raises ``KafkaProtocolError``)."""
        self.log.create_topic(name, partitions)
        self._topics_changed()

    def append_local(self, topic: str, partition: int, values: list[bytes]) -> int:
        """Append one batch of ``values`` as a producer would; the base offset."""
        log = self.log.partition(topic, partition)
        if log is None:
            raise KeyError(f"no partition {topic}-{partition}")
        before = log.next_offset
        base = log.append(encode_batch(values, self.now_ms()))
        self._appended([(topic, partition, log.next_offset - before, log.next_offset)])
        return base

    def _produce(self, req: DecodedRequest) -> Any:
        response, appended = self.cluster.produce(req)
        self._appended(appended)
        return response

    def _appended(self, appended: list[tuple[str, int, int, int]]) -> None:
        if appended:
            now = self.now_ms()
            self.events.publish(
                RecordsProduced(
                    ts_ms=now,
                    group_id="",
                    partition=TopicPartition(topic, partition),
                    count=count,
                    end_offset=end,
                )
                for topic, partition, count, end in appended
            )
            waiters, self._append_waiters = self._append_waiters, set()
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    async def _fetch(self, req: DecodedRequest) -> Any:
        assert self._loop is not None
        plan = self.cluster.fetch_plan(req)
        deadline = self._loop.time() + plan.max_wait_ms / 1000.0
        while True:
            response, size = self.cluster.fetch(req)
            remaining = deadline - self._loop.time()
            if size >= plan.min_bytes or remaining <= 0 or self._stopping:
                return response
            waiter: asyncio.Future[None] = self._loop.create_future()
            self._append_waiters.add(waiter)
            try:
                await asyncio.wait_for(waiter, remaining)
            except TimeoutError:
                pass
            finally:
                self._append_waiters.discard(waiter)


class BackgroundServer:
    """A server on its own event loop in a daemon thread (tests, benchmarks, examples)."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.server: RegroupServer | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> BackgroundServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

        async def boot() -> RegroupServer:
            server = RegroupServer(self.options)
            await server.start()
            return server

        self.server = asyncio.run_coroutine_threadsafe(boot(), self._loop).result(timeout=30)

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    @property
    def bootstrap(self) -> str:
        return f"{self.options.host}:{self.port}"

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the server's loop and return its result (inspection)."""

        async def run() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    def stop(self) -> None:
        if self.server is not None:
            server = self.server
            self.server = None
            asyncio.run_coroutine_threadsafe(server.stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
