"""One client connection: Kafka framing over an asyncio ``Protocol``, one request at a time.

Why a ``Protocol`` and not streams. With ``asyncio.StreamReader`` every
request costs two ``readexactly`` coroutines, a future and a task step before
the server even looks at it; a steady heartbeat is answered in a few µs of
real work, so that overhead was a third of the server's CPU per request. Here
``data_received`` cuts frames out of a buffer and serves each one *inside the
callback* when the answer is immediate (heartbeats, commits, metadata: nearly
everything). Only a request whose answer must wait (a JoinGroup or SyncGroup
parked by the coordinator, a Fetch waiting for records) becomes a task.

Rule 1 (Kafka's ``SocketServer``/``Selector`` mute a channel while a request
is in flight): requests of one connection are served strictly in order and
one at a time; while one is in flight, later bytes stay in the buffer, and
reading pauses when the buffer exceeds ``READ_PAUSE_BYTES``.
Rule 2: a frame whose size is below a request header (8 bytes) or above the
server's ``max_frame_bytes`` closes the connection; so does a request the
server cannot answer (``CloseConnection``). Other connections are unaffected.
Rule 2a (Kafka's ``SaslServerAuthenticator`` reads with a ``NetworkReceive`` capped at
``sasl.server.max.receive.size``, and a bigger size is an ``InvalidReceiveException``
that closes the connection): until a SASL connection is authenticated, a frame whose
size prefix exceeds that cap closes it before a byte of its body is kept, so an
unauthenticated client holds at most one capped frame of server memory.
Rule 3: when the transport's write buffer is full (a client that does not
read), no further request is served until it drains (``pause_writing``).
Rule 4: the answers of the requests served from one read are written together,
one ``send`` where there were as many as requests (a client that pipelines, or
several members on one connection); answers past ``WRITE_TOGETHER_BYTES`` are
written at once, so rule 3 still stops the serving in time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from regroup.model.requests.classic import HeartbeatRequest
    from regroup.server.net.log_limit import RateLimitedLog
    from regroup.server.wire.heartbeat_codec import RegroupHeartbeat

__all__ = [
    "CloseConnection",
    "ConnectionProtocol",
    "ConnectionState",
    "HeartbeatMemo",
    "Interceptor",
    "Served",
    "Stopping",
]

logger = logging.getLogger("regroup.server")

#: Stop reading from a client that sends far ahead of the answers.
READ_PAUSE_BYTES = 1 << 20

#: A frame at least this large leaves the read buffer in one copy, through a view (a
#: Produce of a few hundred KiB: the two copies of a slice cost a tenth of its serving).
COPY_ONCE_BYTES = 64 * 1024
#: Rule 4: answers waiting to be written together are written once they reach this
#: size (asyncio's default high-water mark of a transport's write buffer).
WRITE_TOGETHER_BYTES = 64 * 1024

#: After a failed login's answer, how long before the close: the client's unread bytes
#: would otherwise reset the connection and lose the answer.
FAREWELL_LINGER_S = 0.1

#: What serving a request gives: the framed answer, nothing, or a coroutine for later.
Served = bytes | None | Coroutine[Any, Any, bytes | None]


class CloseConnection(Exception):
    """Rule 2: the request cannot be answered; drop the connection.

    ``farewell``, when given, is written first (a failed SASL exchange is answered,
    then closed, as Kafka's ``SaslServerAuthenticator`` does).
    """

    def __init__(self, farewell: bytes | None = None, *, failed_login: bool = False) -> None:
        super().__init__()
        self.farewell = farewell
        #: A failed authentication: answered and closed after the server's delay.
        self.failed_login = failed_login or farewell is not None


class Stopping(Exception):
    """The server is shutting down: parked requests end without an answer."""


class HeartbeatMemo:
    """The last heartbeats decoded on one connection, to decode each only once.

    A member sends two kinds of heartbeat bytes (steady, and now and then its full
    subscription), and a connection may carry tens of members (a client process with
    many consumers, a load generator). At most ``MAX_ENTRIES`` of at most ``MAX_BYTES``
    each (the oldest goes first), so a connection holds a bounded amount whatever its
    clients send.
    """

    MAX_ENTRIES = 64
    MAX_BYTES = 2048

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[bytes, tuple[bytes, RegroupHeartbeat | HeartbeatRequest]] = {}

    def get(self, body: bytes) -> RegroupHeartbeat | HeartbeatRequest | None:
        """The request decoded from a frame body equal to ``body`` but for the
        correlation id (bytes 4-8), if remembered."""
        found = self._entries.get(body[8:])
        if found is None or found[0] != body[:4]:
            return None
        return found[1]

    def put(self, body: bytes, request: RegroupHeartbeat | HeartbeatRequest) -> None:
        if len(body) > self.MAX_BYTES:
            return
        entries = self._entries
        if len(entries) >= self.MAX_ENTRIES:
            del entries[next(iter(entries))]
        entries[body[8:]] = (body[:4], request)


@dataclass(eq=False, slots=True)
class ConnectionState:
    """What the server keeps about a connection."""

    conn_id: int
    host: str
    #: Tokens of the coordinator requests parked for this connection.
    parked: set[Hashable] = field(default_factory=set)
    #: The heartbeats (either protocol) decoded here lately, by their bytes after the
    #: correlation id: their api key and version bytes and the decoded request. A
    #: steady member repeats the same bytes but for the correlation id, and a
    #: connection may carry several members (``HeartbeatMemo``).
    heartbeats: HeartbeatMemo = field(default_factory=HeartbeatMemo)
    #: The listener, principal and SASL state (``regroup.server.security``), if configured.
    session: Any = None
    #: The client id of its first request; read only on a server with faults (``faults``).
    client_id: str | None = None


class PreAuthentication(Protocol):
    """What rule 2a reads of a session (``regroup.server.security.Session``)."""

    @property
    def authenticated(self) -> bool: ...

    max_receive_size: int


class Interceptor(Protocol):
    """What stands in front of ``serve_now`` on a test server (``faults.RequestFaults``)."""

    def serve(
        self,
        conn: ConnectionState,
        body: bytes,
        serve_now: Callable[[ConnectionState, bytes], Served],
    ) -> Served: ...


class _Server:
    """The part of ``RegroupServer`` a connection uses (for the type checker)."""

    max_frame_bytes: int
    #: ``connection.failed.authentication.delay.ms``.
    failed_authentication_delay_ms: int
    stats: dict[str, int]
    bad_input_log: RateLimitedLog
    #: Fault injection and the control channel; ``None`` on a server without them.
    faults: Interceptor | None

    def serve_now(self, conn: ConnectionState, body: bytes) -> Served:
        raise NotImplementedError

    def connection_closed(self, protocol: ConnectionProtocol) -> None:
        raise NotImplementedError


class ConnectionProtocol(asyncio.Protocol):
    """Rules 1-3 for one socket."""

    def __init__(
        self,
        server: Any,
        conn_id: int,
        new_session: Callable[[str, Any], Any] | None = None,
    ) -> None:
        self._server: _Server = server
        self._conn_id = conn_id
        #: ``new_session(peer host, peer certificate)`` (``regroup.server.security``).
        self._new_session = new_session
        self.state = ConnectionState(conn_id, "unknown")
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self._inflight: asyncio.Task[None] | None = None
        self._write_paused = False
        self._read_paused = False
        self._closed = False
        #: The session while it is not authenticated (rule 2a), then ``None``.
        self._pre_auth: PreAuthentication | None = None
        #: The loop time of the last bytes read or written (``connections.max.idle.ms``).
        self.last_active = 0.0

    # -- asyncio callbacks -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is one without subclassing ``asyncio.Transport``).
        self._transport = transport = cast(asyncio.Transport, transport)
        if self._closed:  # closed by a stopping server between its accept and now
            transport.close()
            return
        self.last_active = asyncio.get_running_loop().time()
        peer = transport.get_extra_info("peername")
        self.state = ConnectionState(self._conn_id, str(peer[0]) if peer else "unknown")
        if self._new_session is not None:
            # The client certificate in DER, once the TLS layer verified it (a non-empty
            # ``getpeercert()``), for the principal (``security.principal``).
            ssl_object = transport.get_extra_info("ssl_object")
            peercert = None
            if ssl_object is not None and ssl_object.getpeercert():
                peercert = ssl_object.getpeercert(binary_form=True)
            try:
                session = self._new_session(self.state.host, peercert)
            except CloseConnection:
                self._bad_input()
                return
            self.state.session = session
            if not session.authenticated:
                self._pre_auth = session

    def data_received(self, data: bytes) -> None:
        self.last_active = asyncio.get_running_loop().time()
        self._buffer += data
        self._serve_buffered()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._serve_buffered()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._inflight is not None and not self._inflight.done():
            self._inflight.cancel()
        self._buffer.clear()
        self._server.connection_closed(self)

    # -- serving -----------------------------------------------------------------------

    @property
    def inflight(self) -> asyncio.Task[None] | None:
        return self._inflight

    def close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()
        self._closed = True

    def _bad_input(self) -> None:
        self._server.stats["closed_bad_input"] += 1
        self.close()

    def _serve_buffered(self) -> None:
        """Serve every complete frame in the buffer until one must wait (rule 1).

        The answers ready at once are written together when the buffer is served
        (rule 4): one ``send`` for the several requests a client pipelined, instead
        of one each.
        """
        buffer = self._buffer
        server = self._server
        transport = self._transport
        assert transport is not None
        ready: list[bytes] = []
        ready_bytes = 0
        while not self._closed and self._inflight is None and not self._write_paused:
            if len(buffer) < 4:
                break
            size = int.from_bytes(buffer[:4], "big", signed=True)
            pre_auth = self._pre_auth
            if pre_auth is not None:
                if pre_auth.authenticated:
                    self._pre_auth = None
                elif size > pre_auth.max_receive_size:
                    server.bad_input_log.warning(
                        "connection %d: a frame of %d bytes before authentication is over "
                        "sasl.server.max.receive.size (%d), closing",
                        self._conn_id,
                        size,
                        pre_auth.max_receive_size,
                    )
                    self._write_ready(transport, ready)
                    self._bad_input()
                    return
            if not 8 <= size <= server.max_frame_bytes:
                server.bad_input_log.warning(
                    "connection %d: bad frame size %d, closing", self._conn_id, size
                )
                self._write_ready(transport, ready)
                self._bad_input()
                return
            end = 4 + size
            if len(buffer) < end:
                break
            if size < COPY_ONCE_BYTES:
                body = bytes(buffer[4:end])
            else:  # one copy of a large frame (a Produce), not a slice and then its bytes
                with memoryview(buffer) as view:
                    body = bytes(view[4:end])
            del buffer[:end]
            try:
                faults = server.faults
                if faults is None:
                    served = server.serve_now(self.state, body)
                else:
                    served = faults.serve(self.state, body, server.serve_now)
            except CloseConnection as exc:
                self._write_ready(transport, ready)
                if exc.failed_login:
                    self._farewell(transport, exc.farewell)
                    return
                self._bad_input()
                return
            except Exception as exc:
                # A bug, not the client's fault: still only this connection pays (rule 2).
                server.bad_input_log.failure("connection %d: request failed", exc, self._conn_id)
                self._write_ready(transport, ready)
                self._bad_input()
                return
            if isinstance(served, bytes):
                ready.append(served)
                ready_bytes += len(served)
                if ready_bytes >= WRITE_TOGETHER_BYTES:
                    # Big answers go at once, so that a full write buffer stops the
                    # serving (rule 3) before answers pile up here.
                    self._write_ready(transport, ready)
                    ready_bytes = 0
            elif served is not None:
                self._inflight = asyncio.get_running_loop().create_task(self._finish(served))
        self._write_ready(transport, ready)
        self._flow_control(transport)

    @staticmethod
    def _write_ready(transport: asyncio.Transport, ready: list[bytes]) -> None:
        """Rule 4: the answers served so far, in one write; ``ready`` is emptied."""
        if not ready:
            return
        transport.write(ready[0] if len(ready) == 1 else b"".join(ready))
        ready.clear()

    def _farewell(self, transport: asyncio.Transport, farewell: bytes | None) -> None:
        """A failed login: stop serving at once, and answer (if there is an answer) only
        after ``connection.failed.authentication.delay.ms``, as Kafka's ``Selector`` holds
        the failure response and the close of such a connection
        (``maybeDelayCloseOnAuthenticationFailure``)."""
        transport.pause_reading()
        self._buffer.clear()
        self._closed = True
        delay = self._server.failed_authentication_delay_ms / 1000
        asyncio.get_running_loop().call_later(delay, self._say_farewell, transport, farewell)

    @staticmethod
    def _say_farewell(transport: asyncio.Transport, farewell: bytes | None) -> None:
        """Write the answer, then close after ``FAREWELL_LINGER_S``: closing at once over
        unread client bytes would reset the connection and lose the answer."""
        if transport.is_closing():
            return
        if farewell:
            transport.write(farewell)
        asyncio.get_running_loop().call_later(FAREWELL_LINGER_S, transport.close)

    def _flow_control(self, transport: asyncio.Transport) -> None:
        waiting = self._inflight is not None or self._write_paused
        if waiting and len(self._buffer) > READ_PAUSE_BYTES and not self._read_paused:
            self._read_paused = True
            transport.pause_reading()
        elif self._read_paused and not waiting and not self._closed:
            self._read_paused = False
            transport.resume_reading()

    async def _finish(self, served: Coroutine[Any, Any, bytes | None]) -> None:
        """A request whose answer had to wait; then the rest of the buffer (rule 1)."""
        try:
            response = await served
        except CloseConnection:
            self._inflight = None
            self._bad_input()
            return
        except (asyncio.CancelledError, Stopping):
            self._inflight = None
            self.close()
            return
        except Exception as exc:
            self._server.bad_input_log.failure("connection %d failed", exc, self._conn_id)
            self._inflight = None
            self.close()
            return
        self._inflight = None
        if self._closed or self._transport is None:
            return
        if response is not None:
            self.last_active = asyncio.get_running_loop().time()
            self._transport.write(response)
        self._serve_buffered()
