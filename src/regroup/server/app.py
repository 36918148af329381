"""The asyncio Kafka wire-protocol server around the sans-IO coordinator.

Theory of operation. One event loop, one ``GroupCoordinator``, one ``Log``.
Each connection is a ``connection.ConnectionProtocol`` that cuts
length-prefixed frames out of its buffer and serves them **one at a time, in
order** (Kafka mutes a channel while a request is in flight; JoinGroup,
SyncGroup and Fetch can block for seconds). ``serve_now`` serves a request
synchronously, inside the socket callback, whenever the answer is immediate
(almost always); it returns a coroutine only when the answer must wait, and
the connection runs that as a task. A group request becomes one or more
version-neutral requests (``mapping``; ConsumerGroupHeartbeat, the hot path,
``heartbeat_codec``); each is handed to ``coordinator.handle(token, request,
now_ms)`` with ``token = (connection, correlation id, index)``; a request the
coordinator does not answer at once gets a future parked under that token.
Any result (of this request, of another connection's request, or of a timer)
is *applied* the same way:

1. its records are committed to the store (SQLite with ``--data-dir``);
2. its events are written to the event log;
3. the reply to the request being served is returned to it; every other
   reply resolves the future parked under its token, and the connection that
   waits on it encodes and sends the response;
4. the single timer is re-armed from ``coordinator.next_deadline()``.

Step 1 precedes step 3, the immediate answer is written only after ``_apply``
returns, and the futures' waiters run later still, so a response never leaves
before its records are durable
(docs/architecture.md, "Contracts between the parts"). On start the stored
records are replayed into a fresh
coordinator, so a restart loses no acknowledged commit and no group; a record
that cannot apply is skipped and counted (``stats["records_skipped"]``), never
a failed start (``store``, rule 4).

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
import functools
import itertools
import logging
import random
import socket
import ssl
import time
from collections.abc import Callable, Coroutine, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regroup.coordinator.config import GroupCoordinatorConfig
from regroup.coordinator.result import CoordinatorResult
from regroup.coordinator.service import GroupCoordinator
from regroup.events import RecordsProduced
from regroup.model.errors import ErrorCode
from regroup.model.requests.classic import HeartbeatRequest, HeartbeatResponse
from regroup.model.requests.consumer import ConsumerGroupHeartbeatRequest
from regroup.model.topic_partition import TopicPartition
from regroup.server.apis import large_requests, offset_topics
from regroup.server.apis.cluster import Cluster, check_produce
from regroup.server.apis.fetch_waiters import FetchWaiters
from regroup.server.cluster.brokers import Brokers
from regroup.server.control.commands import Control
from regroup.server.coordinator_log import CoordinatorLogSink
from regroup.server.events import EventSink
from regroup.server.limits import ServerLimits
from regroup.server.log.partitions import Log, encode_batch
from regroup.server.log.record_batch import has_compressed_batch
from regroup.server.log.store import (
    MemoryStore,
    RecordStore,
    SqliteRecordStore,
    StoreError,
    StoreWriteError,
    replay,
)
from regroup.server.net.acceptor import Acceptor, ConnectionSlots, bind_listening_sockets
from regroup.server.net.connection import (
    CloseConnection,
    ConnectionProtocol,
    ConnectionState,
    Interceptor,
    Served,
    Stopping,
)
from regroup.server.net.log_limit import RateLimitedLog
from regroup.server.offsets_topic import OFFSETS_TOPIC, OffsetsTopic
from regroup.server.routing import DECODE, BeforeDecode, Decode, Route, RouteKind, shortcuts
from regroup.server.security.acl_apis import serve_acl_api
from regroup.server.security.authenticator import after_authentication
from regroup.server.security.cluster_rules import GUARDED_KEYS
from regroup.server.security.config import Listener, SecurityConfig
from regroup.server.security.service import Security
from regroup.server.wire import codec, heartbeat_codec
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.codec import (
    DecodedRequest,
    MalformedRequestError,
    UnsupportedApiError,
)
from regroup.server.wire.heartbeat_codec import HeartbeatDecodeError, RegroupHeartbeat
from regroup.server.wire.mapping import GROUP_APIS
from regroup.server.wire.versions import ADVERTISED, API_NAMES

__all__ = ["ROUTES", "RegroupServer", "ServerOptions", "check_data_dir"]

logger = logging.getLogger("regroup.server")


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
    #: Kafka's broker limits by name (``limits``).
    limits: ServerLimits = field(default_factory=ServerLimits)
    #: Start with no groups and no committed offsets when ``data_dir`` has partition
    #: logs but no ``coordinator.db`` (refused otherwise: ``check_data_dir``).
    allow_empty_coordinator: bool = False
    #: Listeners, SASL, TLS and the authorizer (``regroup.server.security``); ``None``: one
    #: PLAINTEXT listener on ``host:port`` and no authorizer.
    security: SecurityConfig | None = None
    #: Fault injection and the control channel (``regroup.server.control.commands``): tests only.
    control: bool = False
    #: Brokers in this process (``regroup.server.cluster.brokers``): nodes ``0..brokers-1``
    #: on ports ``port..port+brokers-1`` (free ports when ``port`` is 0). 1: one broker.
    brokers: int = 1
    #: ``broker.rack`` of each broker (one per broker), or none.
    racks: tuple[str, ...] = ()


_NO_REPLY: Any = object()


#: The layout of ``--data-dir``: the coordinator's records, and the partition logs.
STORE_FILE = "coordinator.db"
LOG_DIR = "log"


def check_data_dir(data_dir: Path, *, allow_empty_coordinator: bool = False) -> None:
    """Refuse a data dir whose ``coordinator.db`` is gone but whose logs are not.

    The store is created on the first start, so partition logs (or the store's
    write-ahead log) without it mean it was deleted: starting would silently
    forget every group and committed offset while the topics are still there.
    ``StoreError`` says how to proceed; ``allow_empty_coordinator`` accepts it.
    """
    if allow_empty_coordinator or (data_dir / STORE_FILE).exists():
        return
    log_dir = data_dir / LOG_DIR
    earlier = [
        log_dir / "topics.json",
        *(sorted(log_dir.glob("*.log")) if log_dir.is_dir() else ()),
        data_dir / f"{STORE_FILE}-wal",
    ]
    found = next((path for path in earlier if path.exists()), None)
    if found is not None:
        raise StoreError(
            f"{data_dir} has {found.relative_to(data_dir)} from an earlier run but no "
            f"{STORE_FILE}: starting would forget every group and committed offset; restore "
            f"{STORE_FILE}, or pass --allow-empty-coordinator to start with none "
            "(the topics are kept)"
        )


class RegroupServer:
    """A one-node Kafka cluster whose group coordinator is regroup's."""

    def __init__(self, options: ServerOptions | None = None) -> None:
        self.options = options = options or ServerOptions()
        data_dir = options.data_dir
        # Security first: a bad users, ACL or TLS file (SecurityError) opens nothing.
        self.security = (
            None
            if options.security is None
            else Security(options.security, options.host, options.port, data_dir)
        )
        # The store next: a data dir it refuses (StoreError) leaves nothing open.
        if data_dir is not None:
            check_data_dir(data_dir, allow_empty_coordinator=options.allow_empty_coordinator)
        self.store: RecordStore = (
            MemoryStore() if data_dir is None else SqliteRecordStore(data_dir / STORE_FILE)
        )
        events_path = options.events_path
        if events_path is None and data_dir is not None:
            events_path = data_dir / "events.jsonl"
        # A topic list, log directory or event log that cannot be used stops the start
        # with one line naming it (StoreError), and the store is closed again.
        try:
            self.log = Log(
                None if data_dir is None else data_dir / LOG_DIR, options.limits.message_max_bytes
            )
            self.events = EventSink(events_path)
        except StoreError:
            self.store.close()
            raise
        except OSError as exc:
            self.store.close()
            raise StoreError(
                f"cannot open {exc.filename or data_dir}: {exc.strerror or exc}: move it "
                "aside, or pass another --data-dir (or --events PATH for the event log)"
            ) from None
        #: The coordinator's events as Kafka's broker log (logger ``regroup.kafka``).
        self.broker_log = CoordinatorLogSink(broker_id=options.node_id, owner=options)
        seed = options.seed if options.seed is not None else random.SystemRandom().getrandbits(64)
        self.coordinator = GroupCoordinator(
            options.config,
            metadata=self.log.metadata_image(),
            rng=random.Random(seed),
            # With an authorizer a regex resolves to the topics its member may DESCRIBE.
            topic_authorization=self.security is not None and self.security.authorizer is not None,
        )
        # A record that cannot apply is skipped, logged and counted: never a failed start.
        stored = self.store.load()
        summary = replay(stored, self.coordinator.replay)
        skipped = summary.skipped + self.store.unreadable
        if summary.replayed or skipped:
            logger.info("replayed %d coordinator records, skipped %d", summary.replayed, skipped)
        self.cluster = Cluster(
            self.log,
            host=options.host,
            port=options.port,
            node_id=options.node_id,
            auto_create_topics=options.auto_create_topics,
            default_partitions=options.default_partitions,
            on_topics_changed=self._topics_changed,
            fetch_max_bytes=options.limits.fetch_max_bytes,
        )
        self._pending: dict[Hashable, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._timer: asyncio.TimerHandle | None = None
        self._armed: int | None = None
        self._fetch_waiters = FetchWaiters()
        #: The coordinator's records as Kafka's ``__consumer_offsets`` (``offsets_topic``).
        self.offsets_topic = OffsetsTopic(
            self.log,
            options.limits.offsets_topic_num_partitions,
            on_appended=lambda p, size: self._fetch_waiters.appended((OFFSETS_TOPIC, p), size),
        )
        self.cluster.offsets_topic_num_partitions = options.limits.offsets_topic_num_partitions
        self.offsets_topic.fill_from_store(stored, self.now_ms())
        #: Set while the coordinator answers a large heartbeat in a worker thread
        #: (``_large_heartbeat``); done when it is back: the coordinator gate.
        self._coordinator_busy: asyncio.Future[None] | None = None
        #: One per listening socket (``regroup.server.net.acceptor``), sharing ``_slots``.
        self._acceptors: list[Acceptor] = []
        self._slots = ConnectionSlots(options.limits.max_connections)
        #: Set by ``stop``: what ``serve_forever`` waits for.
        self._stopped = asyncio.Event()
        self._connections: set[ConnectionProtocol] = set()
        self.max_frame_bytes = min(options.max_frame_bytes, options.limits.socket_request_max_bytes)
        #: How long a failed SASL login waits for its answer and close (``connection``).
        self.failed_authentication_delay_ms = (
            options.limits.connection_failed_authentication_delay_ms
        )
        self._idle_sweep: asyncio.TimerHandle | None = None
        self._offset_expiry: asyncio.TimerHandle | None = None
        #: Bad input is logged in one line each, rate-limited, so a flood cannot fill the disk.
        self.bad_input_log = RateLimitedLog(logger)
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Counters for logs, tests and the benchmark.
        self.stats: dict[str, int] = {
            "requests": 0,
            "closed_bad_input": 0,
            "records_replayed": summary.replayed,
            "records_skipped": skipped,
        }
        #: The coordinator's timers do not fire while paused (``control.pause_timers``).
        self.timers_paused = False
        self.control = Control(self) if options.control else None
        #: What stands in front of ``serve_now``: the fault injection, the cluster's routing.
        self.faults: Interceptor | None = None if self.control is None else self.control.faults
        #: Several brokers in this process (``regroup.server.cluster``), or ``None``.
        self.brokers: Brokers | None = None
        if options.brokers != 1 or options.racks:
            if self.security is not None:
                self._close_stores()
                raise ValueError("several brokers in one process serve PLAINTEXT only")
            try:
                self.brokers = Brokers(
                    self,
                    options.brokers,
                    host=options.host,
                    port=options.port,
                    racks=options.racks,
                    offsets_partitions=options.limits.offsets_topic_num_partitions,
                )
            except ValueError:
                self._close_stores()
                raise

    def _close_stores(self) -> None:
        self.store.close()
        self.events.close()
        self.log.close()

    # -- life cycle ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self.cluster.port

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.brokers is not None:
            self.brokers.listen()
        elif self.security is None:
            sockets = bind_listening_sockets(self.options.host, self.options.port)
            for sock in sockets:
                self._accept(sock, self._new_connection, None)
            self.cluster.port = int(sockets[0].getsockname()[1])
            logger.info("regroup serving on %s:%d", self.options.host, self.cluster.port)
        else:
            self._listen(self.security)
        self._sweep_idle()
        self._arm_offset_expiry()
        # Timers are not records: arm those of the groups rebuilt from the store
        # (session timeouts of replayed members, Kafka's onLoaded), then re-arm.
        now = self.now_ms()
        self.broker_log.loaded(now, self.coordinator.groups.values())
        self._apply(self.coordinator.on_loaded(now))

    def _listen(self, security: Security) -> None:
        """Sockets per listener; the first listener's address is the cluster's default."""
        for listener in security.listeners:
            sockets = bind_listening_sockets(listener.host, listener.port)
            for sock in sockets:
                self._accept(
                    sock,
                    functools.partial(self._new_connection, listener),
                    security.ssl_for(listener),
                )
            port = int(sockets[0].getsockname()[1])
            security.bound[listener] = (listener.host, port)
            logger.info("regroup serving %s on %s:%d", listener.name, listener.host, port)
        self.cluster.host, self.cluster.port = security.bound[security.listeners[0]]

    def listen_socket(
        self, sock: socket.socket, factory: Callable[[], asyncio.Protocol]
    ) -> Acceptor:
        """Accept plaintext connections on ``sock`` (``regroup.server.cluster.brokers``)."""
        return self._accept(sock, factory, None)

    async def close_acceptor(self, acceptor: Acceptor) -> None:
        """Stop accepting on one socket (a stopped broker's); its connections stay open."""
        if acceptor in self._acceptors:
            self._acceptors.remove(acceptor)
        await acceptor.close()

    def new_connection(self) -> ConnectionProtocol:
        """A plaintext connection's protocol, counted among the server's connections."""
        protocol = self._new_connection(None)
        assert isinstance(protocol, ConnectionProtocol)
        return protocol

    def _accept(
        self,
        sock: socket.socket,
        factory: Callable[[], asyncio.Protocol],
        ssl_context: ssl.SSLContext | None,
    ) -> Acceptor:
        """Accept on ``sock`` while a ``max.connections`` slot is free (Kafka's acceptor)."""
        acceptor = Acceptor(
            sock,
            factory,
            self._forget_connection,
            self._slots,
            self.bad_input_log,
            ssl_context,
        )
        acceptor.start()
        self._acceptors.append(acceptor)
        return acceptor

    def _forget_connection(self, protocol: asyncio.Protocol) -> None:
        assert isinstance(protocol, ConnectionProtocol)
        self.connection_closed(protocol)

    @property
    def connections_waited(self) -> int:
        """How many times a new connection waited for a ``max.connections`` slot."""
        return self._slots.waits

    def _new_connection(self, listener: Listener | None = None) -> asyncio.Protocol:
        security = self.security
        new_session = None
        if security is not None and listener is not None:

            def new_session(host: str, peercert: Any) -> Any:
                return security.new_session(listener, host, peercert)

        protocol = ConnectionProtocol(self, next(self._ids), new_session)
        self._connections.add(protocol)
        return protocol

    async def serve_forever(self) -> None:
        if not self._acceptors:
            await self.start()
        await self._stopped.wait()

    def _sweep_idle(self) -> None:
        """Close connections idle for ``connections.max.idle.ms`` (Kafka ``Selector``).

        A connection waiting for its own request's answer (a parked JoinGroup,
        a Fetch) is the server's wait, not the client's idleness, and is kept.
        """
        assert self._loop is not None
        idle_s = self.options.limits.connections_max_idle_ms / 1000
        now = self._loop.time()
        for protocol in list(self._connections):
            if protocol.inflight is None and now - protocol.last_active > idle_s:
                self.stats["closed_idle"] = self.stats.get("closed_idle", 0) + 1
                protocol.close()
        self._idle_sweep = self._loop.call_later(
            min(max(idle_s / 10, 0.05), 30.0), self._sweep_idle
        )

    def _arm_offset_expiry(self) -> None:
        assert self._loop is not None
        interval_s = self.options.limits.offsets_retention_check_interval_ms / 1000
        self._offset_expiry = self._loop.call_later(interval_s, self._expire_offsets)

    def _expire_offsets(self) -> None:
        """Every ``offsets.retention.check.interval.ms`` (Kafka ``cleanupGroupMetadata``)."""
        if self._coordinator_busy is not None:  # the coordinator is in a worker thread
            self._coordinator_busy.add_done_callback(
                lambda _: self._when_back(self._expire_offsets)
            )
            return
        self._apply(self.coordinator.expire_offsets(self.now_ms()))
        self._arm_offset_expiry()

    async def stop(self) -> None:
        if self._offset_expiry is not None:
            self._offset_expiry.cancel()
            self._offset_expiry = None
        if self._idle_sweep is not None:
            self._idle_sweep.cancel()
            self._idle_sweep = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for acceptor in self._acceptors:
            await acceptor.close()
        self._acceptors.clear()
        self._stopping = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(Stopping())
        self._pending.clear()
        self._fetch_waiters.wake_all()
        inflight = [p.inflight for p in self._connections if p.inflight is not None]
        if inflight:
            await asyncio.wait(inflight, timeout=5)
        if self._coordinator_busy is not None:  # the store stays open until it is back
            await asyncio.wait({self._coordinator_busy})
        for protocol in list(self._connections):
            protocol.close()
        for task in inflight:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._stopped.set()
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
            try:
                self.store.append(result.records)
            except StoreWriteError as exc:
                result = self._unwritten(result, exc)
            else:
                self.offsets_topic.append(result.records, self.now_ms())
        if result.events:
            self.events.publish(result.events)
            self.broker_log.publish(result.events)
        for failure in result.failures:
            self.stats["handler_failures"] = self.stats.get("handler_failures", 0) + 1
            logger.error(
                "coordinator: %s on group %r failed; the group was rebuilt from its records "
                "and %d waiting request(s) answered UNKNOWN_SERVER_ERROR",
                failure.operation,
                failure.group_id,
                failure.answered,
                exc_info=failure.error,
            )
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

    def _unwritten(self, result: CoordinatorResult, exc: StoreWriteError) -> CoordinatorResult:
        """The store refused ``result``'s records (a full disk): nothing of that step
        happened. Its groups are rebuilt from the store and its requests answered
        NOT_COORDINATOR, as Kafka answers a ``KafkaStorageException`` of its coordinator
        (``CoordinatorOperationExceptionHelper.handleOperationException``); the clients
        look the coordinator up again and retry, and the server goes on serving."""
        self.stats["store_write_failures"] = self.stats.get("store_write_failures", 0) + 1
        try:
            durable = self.store.load_groups(result.records)
        except StoreError as unreadable:
            logger.error("coordinator store: %s", unreadable)
            durable = []
        restored = self.coordinator.restore(
            result, durable, ErrorCode.NOT_COORDINATOR, self.now_ms()
        )
        logger.error(
            "coordinator store: %s; %d records not written, %d requests answered "
            "NOT_COORDINATOR, their groups rebuilt from the store",
            exc,
            len(result.records),
            len(restored.replies),
        )
        if restored.records:  # what rebuilding the groups wrote, if anything
            try:
                self.store.append(restored.records)
            except StoreWriteError as again:
                logger.error("coordinator store: %s (after a rebuild)", again)
            else:
                self.offsets_topic.append(restored.records, self.now_ms())
            restored.records.clear()
        return restored

    def _rearm(self) -> None:
        """Keep one timer armed at or before the coordinator's next deadline.

        An armed timer that fires no later than the new deadline is kept: firing
        early is harmless (``on_timer`` expires only what is due, then re-arms),
        and it spares a timer handle per heartbeat.
        """
        deadline = self.coordinator.next_deadline()
        if deadline is None or self._loop is None or self.timers_paused:
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
        if self._coordinator_busy is not None:  # the coordinator is in a worker thread
            self._coordinator_busy.add_done_callback(lambda _: self._when_back(self._on_timer))
            return
        try:
            self._apply(self.coordinator.on_timer(self.now_ms()))
        except Exception:
            self.stats["timer_failures"] = self.stats.get("timer_failures", 0) + 1
            logger.exception("coordinator timer failed")
            self._rearm()

    def _topics_changed(self) -> None:
        if self._coordinator_busy is not None:  # the coordinator is in a worker thread
            self._coordinator_busy.add_done_callback(
                lambda _: self._when_back(self._topics_changed)
            )
            return
        self._apply(self.coordinator.update_metadata(self.log.metadata_image(), self.now_ms()))

    # -- connections (``regroup.server.net.connection`` frames and orders them) ------------

    def connection_closed(self, protocol: ConnectionProtocol) -> None:
        """Forget a closed connection and the coordinator replies it was waiting for; its
        ``max.connections`` slot is free again. Called once or more per connection."""
        if protocol not in self._connections:
            return
        self._connections.discard(protocol)
        self._slots.give_back()
        for token in protocol.state.parked:
            future = self._pending.pop(token, None)
            if future is not None and not future.done():
                future.cancel()

    def serve_now(self, conn: ConnectionState, body: bytes) -> Served:
        """One request: its framed answer now, or a coroutine that will give it.

        Everything is synchronous until the coordinator parks a request or a
        Fetch must wait for records; only then does a coroutine come back.
        """
        session = conn.session
        if session is not None and not session.authenticated:
            assert self.security is not None
            return self.security.serve_unauthenticated(session, body, self.cluster.api_versions)
        if self._coordinator_busy is not None and body[:2] in _GATED:
            return self._after_coordinator(conn, body)  # ``_large_heartbeat``'s gate
        shortcut = _SHORTCUTS.get(body[:4])  # api key and version: ``ROUTES``' before_decode
        if shortcut is not None:
            served = shortcut(self, conn, body)
            if served is not DECODE:
                return served
        req = self._decode(conn, body)
        if isinstance(req, bytes):
            return req
        self.stats["requests"] += 1
        try:
            response = self._serve(conn, req)
            if isinstance(response, Coroutine):
                return self._encode_later(conn, req, response)
            return self._encode(req, response)
        except MalformedRequestError as exc:
            self.bad_input_log.warning("connection %d: %s; closing", conn.conn_id, exc)
            raise CloseConnection from None
        except Exception as exc:
            self._log_failure(conn, req, exc)
            raise CloseConnection from None

    def _decode(self, conn: ConnectionState, body: bytes) -> DecodedRequest | bytes:
        """The decoded request; the KIP-511 answer to an ApiVersions of an unknown version;
        ``CloseConnection`` for anything else that does not decode (rule 1)."""
        try:
            return codec.decode_request(body)
        except UnsupportedApiError as exc:
            if exc.api_key == ApiKey.API_VERSIONS:
                return codec.api_versions_fallback(exc.correlation_id)
            self.bad_input_log.warning("connection %d: %s; closing", conn.conn_id, exc)
            raise CloseConnection from None
        except MalformedRequestError as exc:
            self.bad_input_log.warning("connection %d: %s; closing", conn.conn_id, exc)
            raise CloseConnection from None

    def _classic_heartbeat_frame(self, conn: ConnectionState, body: bytes) -> Served:
        """Heartbeat v0-4 before decoding (``ROUTES``): a steady member's bytes repeat but
        for the correlation id, so the request decoded last time on this connection is
        reused (it is immutable); other bytes are decoded and remembered."""
        same = conn.heartbeats.get(body)
        if same is not None:
            cid = int.from_bytes(body[4:8], "big", signed=True)
            return self._classic_heartbeat(conn, body[3], cid, same)
        req = self._decode(conn, body)
        if isinstance(req, bytes):
            return req
        (request,) = GROUP_APIS[ApiKey.HEARTBEAT][0](req, conn.host)
        assert isinstance(request, HeartbeatRequest)
        conn.heartbeats.put(body, request)
        return self._classic_heartbeat(conn, req.api_version, req.correlation_id, request)

    def _classic_heartbeat(
        self, conn: ConnectionState, version: int, cid: int, request: object
    ) -> Served:
        """Heartbeat v0-4, the classic hot path: a steady member's bytes repeat, so the
        request decoded last time on this connection is reused (it is immutable)."""
        self.stats["requests"] += 1
        if self.security is not None:
            denied = self._denial(conn, request)
            if denied is not None:
                return codec.encode_heartbeat_response(version, cid, int(denied.error_code))
        token = (conn.conn_id, cid, 0)
        response = self._apply(self.coordinator.handle(token, request, self.now_ms()), token)
        if response is _NO_REPLY:
            req = DecodedRequest(ApiKey.HEARTBEAT, version, cid, None, None)
            pending = self._park(conn, [(0, token)], [_NO_REPLY])
            return self._encode_later(conn, req, self._first(pending))
        return codec.encode_heartbeat_response(version, cid, int(response.error_code))

    async def _encode_later(
        self, conn: ConnectionState, req: DecodedRequest, pending: Coroutine[Any, Any, Any]
    ) -> bytes | None:
        try:
            response = await pending
        except (asyncio.CancelledError, Stopping):
            raise
        except Exception as exc:
            self._log_failure(conn, req, exc)
            raise CloseConnection from None
        return self._encode(req, response)

    def _log_failure(self, conn: ConnectionState, req: DecodedRequest, exc: Exception) -> None:
        """A request whose serving raised (a bug: bad input is ``MalformedRequestError``):
        counted in ``stats["request_failures"]`` and logged; the connection closes."""
        self.stats["request_failures"] = self.stats.get("request_failures", 0) + 1
        name = API_NAMES.get(req.api_key, str(req.api_key))
        self.bad_input_log.failure(
            "connection %d: %s v%d failed", exc, conn.conn_id, name, req.api_version
        )

    @staticmethod
    def _encode(req: DecodedRequest, response: Any) -> bytes | None:
        if response is None:
            return None
        if isinstance(response, HeartbeatResponse):
            return codec.encode_heartbeat_response(
                req.api_version, req.correlation_id, int(response.error_code)
            )
        return codec.encode_response(req.api_key, req.api_version, req.correlation_id, response)

    def _consumer_heartbeat(self, conn: ConnectionState, body: bytes) -> Served:
        """ConsumerGroupHeartbeat v0-1, the hot path: ``heartbeat_codec``, no kio."""
        # A steady member repeats the same bytes but for the correlation id: the
        # request decoded then on this connection is reused (it is immutable).
        same = conn.heartbeats.get(body)
        if same is not None:
            hb = same
            assert isinstance(hb, RegroupHeartbeat)
            cid = int.from_bytes(body[4:8], "big", signed=True)
        else:
            try:
                hb = heartbeat_codec.decode_request(body, conn.host)
            except HeartbeatDecodeError as exc:
                self.bad_input_log.warning(
                    "connection %d: ConsumerGroupHeartbeat: %s; closing", conn.conn_id, exc
                )
                raise CloseConnection from None
            conn.heartbeats.put(body, hb)
            cid = hb.correlation_id
        self.stats["requests"] += 1
        request = hb.request
        if self.security is not None:
            denied = self._denial(conn, request)
            if denied is not None:
                return heartbeat_codec.encode_response(cid, denied, hb.regroup_client)
            if self.security.authorizer is not None and conn.session is not None:
                request = self.security.with_context(conn.session, request)
        token = (conn.conn_id, cid, 0)
        if len(body) > large_requests.LARGE_FRAME_BYTES:
            return self._large_heartbeat(conn, token, cid, hb, request)
        response = self._apply(self.coordinator.handle(token, request, self.now_ms()), token)
        if response is _NO_REPLY:
            return self._consumer_heartbeat_later(conn, token, cid, hb.regroup_client)
        return heartbeat_codec.encode_response(cid, response, hb.regroup_client)

    async def _large_heartbeat(
        self,
        conn: ConnectionState,
        token: Hashable,
        cid: int,
        hb: RegroupHeartbeat,
        request: ConsumerGroupHeartbeatRequest,
    ) -> bytes:
        """``large_requests`` rule 4: the coordinator answers in a worker thread, gated.

        The operation runs in a task of its own, so a client that hangs up
        mid-way neither cancels it nor opens the gate early.
        """
        assert self._loop is not None
        loop = self._loop
        gate = self._coordinator_busy = loop.create_future()
        now = self.now_ms()

        async def operate() -> Any:
            try:
                result = await loop.run_in_executor(
                    None, self.coordinator.handle, token, request, now
                )
                self.stats["offloaded"] = self.stats.get("offloaded", 0) + 1
                # On the loop again: records, events and others' replies before the gate opens.
                answer = self._apply(result, token)
                if answer is _NO_REPLY:
                    return self._park(conn, [(0, token)], [_NO_REPLY])
                return answer
            finally:
                self._coordinator_busy = None
                gate.set_result(None)

        response = await asyncio.shield(loop.create_task(operate()))
        if isinstance(response, Coroutine):
            (response,) = await response
        return heartbeat_codec.encode_response(cid, response, hb.regroup_client)

    def _when_back(self, later: Callable[[], None]) -> None:
        """Run what waited for the coordinator's gate, unless the server is stopping."""
        if not self._stopping:
            later()

    async def _coordinator_back(self) -> None:
        """Until the coordinator is back on the loop (the gate is open)."""
        while self._coordinator_busy is not None:
            await asyncio.wait({self._coordinator_busy})  # never cancels the gate itself

    async def _after_coordinator(self, conn: ConnectionState, body: bytes) -> bytes | None:
        """Serve ``body`` once the coordinator is back on the loop."""
        await self._coordinator_back()
        served = self.serve_now(conn, body)
        if isinstance(served, Coroutine):
            return await served
        return served

    async def _consumer_heartbeat_later(
        self, conn: ConnectionState, token: Hashable, cid: int, regroup_client: bool
    ) -> bytes:
        (response,) = await self._park(conn, [(0, token)], [_NO_REPLY])
        return heartbeat_codec.encode_response(cid, response, regroup_client)

    def _denial(self, conn: ConnectionState, request: object) -> Any:
        """The authorizer's answer to a heartbeat the principal may not send, else ``None``."""
        security = self.security
        if security is None or security.authorizer is None or conn.session is None:
            return None
        return security.denial(conn.session, request)

    def _serve(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        """The response object, or a coroutine when it must wait: where ``ROUTES`` says.

        ``codec.decode_request`` refused every key without a row, so the row exists.
        """
        route = ROUTES[req.api_key]
        security = self.security
        if route.kind is RouteKind.CLUSTER and security is not None and req.api_key in GUARDED_KEYS:
            return security.guard(
                conn.session, req, functools.partial(route.serve, self, conn), self.log
            )
        return route.serve(self, conn, req)

    def _api_versions(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        return self.cluster.api_versions(req)

    def _metadata(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        return self.cluster.metadata(req)

    def _find_coordinator(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        return self.cluster.find_coordinator(req)

    def _create_topics(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        return self.cluster.create_topics(req)

    def _list_offsets(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        return self.cluster.list_offsets(req)

    def _init_producer_id(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        return self.cluster.init_producer_id(req)

    def _sasl(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        """SaslHandshake or SaslAuthenticate on an authenticated connection, or on a
        PLAINTEXT listener (Kafka's ``KafkaApis``)."""
        return after_authentication(req.api_key, req.api_version)

    def _acl(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        security = self.security
        if security is None:
            return serve_acl_api(None, None, req)  # SECURITY_DISABLED
        return security.acl_api(conn.session, req)

    def _assignor_rpc(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        """regroup's private client-side assignor APIs: the body is the request."""
        answers = self._authorized_coordinate(conn, req, [req.body])
        if isinstance(answers, Coroutine):
            return self._first(answers)
        return answers[0]

    def _serve_offset_commit(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        return self._serve_group(conn, req, self._offset_commit)

    def _serve_group(
        self,
        conn: ConnectionState,
        req: DecodedRequest,
        coordinate: Callable[
            [ConnectionState, DecodedRequest, list[Any]],
            list[Any] | Coroutine[Any, Any, list[Any]],
        ]
        | None = None,
    ) -> Any:
        decode, encode = GROUP_APIS[req.api_key]
        requests = decode(req, conn.host)
        responses = self._authorized_coordinate(conn, req, requests, coordinate)
        if isinstance(responses, Coroutine):
            return self._group_response_later(encode, req, requests, responses)
        return encode(req.api_version, requests, responses)

    def _sliced_frame(self, conn: ConnectionState, body: bytes) -> Served | Decode:
        """A request ``large_requests`` slices, before decoding (``ROUTES``): a large one
        is ``_large_request``."""
        if len(body) > large_requests.LARGE_FRAME_BYTES:
            return self._large_request(conn, body)
        return DECODE

    async def _large_request(self, conn: ConnectionState, body: bytes) -> bytes | None:
        """``large_requests``: decode and encode in a worker thread, answer in slices."""
        loop = asyncio.get_running_loop()
        api_key = int.from_bytes(body[:2], "big", signed=True)
        sliced = large_requests.SLICED[api_key]
        decode, encode = GROUP_APIS[api_key]

        def decoded() -> tuple[DecodedRequest, list[Any]]:
            req = codec.decode_request(body)
            return req, decode(req, conn.host)

        try:
            req, requests = await loop.run_in_executor(None, decoded)
        except (UnsupportedApiError, MalformedRequestError) as exc:
            self.bad_input_log.warning("connection %d: %s; closing", conn.conn_id, exc)
            raise CloseConnection from None
        self.stats["requests"] += 1
        answered: list[list[Any]] = []
        for request in requests:
            pieces: list[Any] = []
            for piece in sliced.split(request, sliced.size):
                await self._coordinator_back()  # a large heartbeat may hold it meanwhile
                answers = self._authorized_coordinate(conn, req, [piece])
                if isinstance(answers, Coroutine):  # these requests are never parked
                    answers = await answers
                pieces.append(answers[0])
                self.stats["slices"] = self.stats.get("slices", 0) + 1
                await asyncio.sleep(0)
            answered.append(pieces)

        def encoded() -> bytes | None:
            responses = [sliced.merge(pieces) for pieces in answered]
            return self._encode(req, encode(req.api_version, requests, responses))

        return await loop.run_in_executor(None, encoded)

    def _offset_commit(
        self, conn: ConnectionState, req: DecodedRequest, requests: list[Any]
    ) -> list[Any] | Coroutine[Any, Any, list[Any]]:
        """OffsetCommit: partitions that do not exist never reach the coordinator.

        Runs after the authorizer (``_authorized_coordinate``), as Kafka's
        ``KafkaApis.handleOffsetCommitRequest`` checks the group and topic ACLs
        before it looks the partitions up, so a refused client learns nothing of
        which topics exist.
        """
        (request,) = requests
        known = offset_topics.known_partitions(self.log, request)
        if known is None:
            return [offset_topics.with_unknown(self.log, request, None)]
        answers = self._coordinate(conn, req, [known])
        if isinstance(answers, Coroutine):
            return self._offset_commit_later(request, answers)
        return [offset_topics.with_unknown(self.log, request, answers[0])]

    async def _offset_commit_later(
        self, request: Any, pending: Coroutine[Any, Any, list[Any]]
    ) -> list[Any]:
        (answered,) = await pending
        return [offset_topics.with_unknown(self.log, request, answered)]

    @staticmethod
    async def _first(answers: Coroutine[Any, Any, list[Any]]) -> Any:
        return (await answers)[0]

    @staticmethod
    async def _group_response_later(
        encode: Any, req: DecodedRequest, requests: list[object], pending: Any
    ) -> Any:
        responses = await pending
        return encode(req.api_version, requests, responses)

    def _authorized_coordinate(
        self,
        conn: ConnectionState,
        req: DecodedRequest,
        requests: list[Any],
        coordinate: Callable[
            [ConnectionState, DecodedRequest, list[Any]],
            list[Any] | Coroutine[Any, Any, list[Any]],
        ]
        | None = None,
    ) -> list[Any] | Coroutine[Any, Any, list[Any]]:
        """``coordinate`` (default ``_coordinate``) what the authorizer allows
        (``security.group_rules``)."""
        serve = self._coordinate if coordinate is None else coordinate
        security = self.security
        if security is None or security.authorizer is None or conn.session is None:
            return serve(conn, req, requests)
        return security.coordinate(
            conn.session, requests, lambda allowed: serve(conn, req, allowed)
        )

    def _coordinate(
        self, conn: ConnectionState, req: DecodedRequest, requests: list[object]
    ) -> list[Any] | Coroutine[Any, Any, list[Any]]:
        """Hand each request to the coordinator; the answers, or a coroutine if any is parked."""
        answers: list[Any] = []
        unanswered: list[tuple[int, Hashable]] = []
        for index, request in enumerate(requests):
            token = (conn.conn_id, req.correlation_id, index)
            answer = self._apply(self.coordinator.handle(token, request, self.now_ms()), token)
            if answer is _NO_REPLY:
                unanswered.append((index, token))
            answers.append(answer)
        if unanswered:
            return self._park(conn, unanswered, answers)
        return answers

    def _park(
        self, conn: ConnectionState, unanswered: list[tuple[int, Hashable]], answers: list[Any]
    ) -> Coroutine[Any, Any, list[Any]]:
        """Park a future for each reply the coordinator gives later (a join, a sync, a timer).

        The futures are registered at once, before anything else reaches the
        coordinator, so a reply produced by the very next request finds them.
        """
        assert self._loop is not None
        parked: list[tuple[int, Hashable, asyncio.Future[Any]]] = []
        for index, token in unanswered:
            future: asyncio.Future[Any] = self._loop.create_future()
            if self._stopping:
                future.set_exception(Stopping())
            self._pending[token] = future
            conn.parked.add(token)
            parked.append((index, token, future))
        return self._await_parked(conn, parked, answers)

    @staticmethod
    async def _await_parked(
        conn: ConnectionState,
        parked: list[tuple[int, Hashable, asyncio.Future[Any]]],
        answers: list[Any],
    ) -> list[Any]:
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

    def append_local(
        self,
        topic: str,
        partition: int,
        values: list[bytes],
        keys: Sequence[bytes | None] = (),
        headers: Sequence[Sequence[tuple[str, bytes | None]]] = (),
    ) -> int:
        """Append one batch of ``values`` (with their ``keys`` and ``headers``, when given)
        as a producer would; the base offset."""
        log = self.log.partition(topic, partition)
        if log is None:
            raise KeyError(f"no partition {topic}-{partition}")
        before = log.next_offset
        batch = encode_batch(values, self.now_ms(), keys, headers)
        base = log.append(batch)
        self._appended([(topic, partition, log.next_offset - before, log.next_offset, len(batch))])
        return base

    def _produce(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        if any(
            has_compressed_batch(p.records)
            for t in req.body.topic_data
            for p in t.partition_data
            if p.records
        ):
            return self._produce_checked_off_loop(req)
        response, appended = self.cluster.produce(req)
        self._appended(appended)
        return response

    async def _produce_checked_off_loop(self, req: DecodedRequest) -> Any:
        """``cluster`` rule 6: decompress and check in a worker thread, append on the loop."""
        jobs = self.cluster.produce_checks(req)
        checked = await asyncio.get_running_loop().run_in_executor(None, check_produce, jobs)
        response, appended = self.cluster.produce(req, checked)
        self._appended(appended)
        return response

    def _appended(self, appended: list[tuple[str, int, int, int, int]]) -> None:
        """Publish what was appended; complete the parked Fetches it satisfies."""
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
                for topic, partition, count, end, _ in appended
            )
            for topic, partition, _, _, size in appended:
                self._fetch_waiters.appended((topic, partition), size)

    async def _fetch(self, conn: ConnectionState, req: DecodedRequest) -> Any:
        """Fetch, parked until ``min_bytes`` or ``max_wait`` (``fetch_waiters``)."""
        assert self._loop is not None
        plan = self.cluster.fetch_plan(req)
        deadline = self._loop.time() + plan.max_wait_ms / 1000.0
        while True:
            response, size = self.cluster.fetch(req)
            remaining = deadline - self._loop.time()
            if size >= plan.min_bytes or remaining <= 0 or self._stopping:
                return response
            await self._fetch_waiters.wait(plan.partitions, plan.min_bytes - size, remaining)

    # -- the test harness's hooks (``regroup.server.control.commands``) ----------------------------

    @property
    def connections(self) -> frozenset[ConnectionProtocol]:
        return frozenset(self._connections)

    def control_refusal(self, conn: ConnectionState) -> str | None:
        """Why ``conn`` may not use the control channel, or ``None`` (``Security``)."""
        security = self.security
        return None if security is None else security.control_refusal(conn.session)

    def apply(self, result: CoordinatorResult) -> None:
        """Apply a result produced outside a request (a group fault): records first."""
        self._apply(result)

    def set_timers_paused(self, paused: bool) -> None:
        """Hold (or release) the coordinator's timers: no session expires while held."""
        self.timers_paused = paused
        if paused and self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._armed = None
        elif not paused:
            self._rearm()


def _advertised(key: ApiKey) -> tuple[int, ...]:
    low, high = ADVERTISED[key]
    return tuple(range(low, high + 1))


#: Where each request goes, by its API key (``routing``): the one routing table.
ROUTES: dict[int, Route[RegroupServer]] = {
    # The APIs without a group (``apis.cluster``; ``security.cluster_rules``).
    ApiKey.PRODUCE: Route(RouteKind.CLUSTER, RegroupServer._produce),
    ApiKey.FETCH: Route(RouteKind.CLUSTER, RegroupServer._fetch),
    ApiKey.LIST_OFFSETS: Route(RouteKind.CLUSTER, RegroupServer._list_offsets),
    ApiKey.METADATA: Route(RouteKind.CLUSTER, RegroupServer._metadata),
    ApiKey.FIND_COORDINATOR: Route(RouteKind.CLUSTER, RegroupServer._find_coordinator),
    ApiKey.API_VERSIONS: Route(RouteKind.CLUSTER, RegroupServer._api_versions),
    ApiKey.CREATE_TOPICS: Route(RouteKind.CLUSTER, RegroupServer._create_topics),
    ApiKey.INIT_PRODUCER_ID: Route(RouteKind.CLUSTER, RegroupServer._init_producer_id),
    # The group coordinator (``wire.mapping``; ``security.group_rules``).
    ApiKey.OFFSET_COMMIT: Route(RouteKind.GROUP, RegroupServer._serve_offset_commit),
    ApiKey.OFFSET_FETCH: Route(
        RouteKind.GROUP,
        RegroupServer._serve_group,
        # before_decode: a large OffsetFetch is decoded off the loop and served in slices.
        before_decode=BeforeDecode(
            _advertised(ApiKey.OFFSET_FETCH),
            RegroupServer._sliced_frame,
        ),
    ),
    ApiKey.JOIN_GROUP: Route(RouteKind.GROUP, RegroupServer._serve_group),
    ApiKey.HEARTBEAT: Route(
        RouteKind.GROUP,
        RegroupServer._serve_group,
        # before_decode, the classic hot path: a repeated request is not decoded again.
        before_decode=BeforeDecode(
            _advertised(ApiKey.HEARTBEAT), RegroupServer._classic_heartbeat_frame
        ),
    ),
    ApiKey.LEAVE_GROUP: Route(RouteKind.GROUP, RegroupServer._serve_group),
    ApiKey.SYNC_GROUP: Route(RouteKind.GROUP, RegroupServer._serve_group),
    ApiKey.DESCRIBE_GROUPS: Route(
        RouteKind.GROUP,
        RegroupServer._serve_group,
        # before_decode: a large DescribeGroups is decoded off the loop and served in slices.
        before_decode=BeforeDecode(
            _advertised(ApiKey.DESCRIBE_GROUPS), RegroupServer._sliced_frame
        ),
    ),
    ApiKey.LIST_GROUPS: Route(RouteKind.GROUP, RegroupServer._serve_group),
    ApiKey.DELETE_GROUPS: Route(RouteKind.GROUP, RegroupServer._serve_group),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: Route(
        RouteKind.GROUP,
        RegroupServer._serve_group,
        # before_decode, the KIP-848 hot path: ``wire.heartbeat_codec`` instead of kio.
        before_decode=BeforeDecode(
            _advertised(ApiKey.CONSUMER_GROUP_HEARTBEAT), RegroupServer._consumer_heartbeat
        ),
    ),
    ApiKey.CONSUMER_GROUP_DESCRIBE: Route(
        RouteKind.GROUP,
        RegroupServer._serve_group,
        # before_decode: a large ConsumerGroupDescribe is served in slices too.
        before_decode=BeforeDecode(
            _advertised(ApiKey.CONSUMER_GROUP_DESCRIBE), RegroupServer._sliced_frame
        ),
    ),
    ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT: Route(RouteKind.GROUP, RegroupServer._assignor_rpc),
    ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT: Route(RouteKind.GROUP, RegroupServer._assignor_rpc),
    # The ACL APIs (``security.acl_apis``).
    ApiKey.DESCRIBE_ACLS: Route(RouteKind.ACL, RegroupServer._acl),
    ApiKey.CREATE_ACLS: Route(RouteKind.ACL, RegroupServer._acl),
    ApiKey.DELETE_ACLS: Route(RouteKind.ACL, RegroupServer._acl),
    # SASL on an authenticated connection (``security.authenticator``).
    ApiKey.SASL_HANDSHAKE: Route(RouteKind.SASL, RegroupServer._sasl),
    ApiKey.SASL_AUTHENTICATE: Route(RouteKind.SASL, RegroupServer._sasl),
}

#: ``ROUTES``' before_decode shortcuts by a frame's first four bytes (api key, version).
_SHORTCUTS = shortcuts(ROUTES)
#: The api key bytes of the requests that reach the coordinator (the group rows; Metadata
#: and CreateTopics may create topics, which updates its metadata): they wait while it
#: answers a large heartbeat off the loop (``_large_heartbeat``).
_GATED = frozenset(
    key.to_bytes(2, "big", signed=True)
    for key, route in ROUTES.items()
    if route.kind is RouteKind.GROUP or key in (ApiKey.METADATA, ApiKey.CREATE_TOPICS)
)
