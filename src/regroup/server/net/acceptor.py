"""Accepting connections as Kafka's acceptor does: only while a connection slot is free.

Kafka (``SocketServer.Acceptor``, ``ConnectionQuotas.inc`` ->
``waitForConnectionSlot``): when the broker holds ``max.connections``
connections, its acceptor waits until one closes before it takes the next. A
client over the limit is not refused: its connection waits in the listening
socket's backlog (it sees a slow connect) and is served once a slot frees.

Rule 1 (``ConnectionSlots``): as in Kafka, the acceptor accepts a socket and
then takes a slot for it, waiting while there is none; meanwhile it accepts
nothing more, so later clients wait in the backlog. The slot is given back when
that connection ends, or at once if it never became one (its TLS handshake
failed). Every listener takes its slots from the one broker-wide count, and an
idle listener holds none.

Rule 2: each accepted socket is connected (and its TLS handshake run) in a task
of its own, so one slow or silent client never holds up the next accept.

Rule 3: running out of file descriptors while accepting (``EMFILE``/``ENFILE``)
is one line when it starts and one when accepting works again (both through
the server's rate-limited log), not a line per attempt; accepting is retried
every ``RETRY_AFTER_S``, and the connections already open are served
meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import resource
import socket
import ssl
from collections.abc import Callable
from typing import Final

from regroup.server.net.log_limit import RateLimitedLog

__all__ = ["RETRY_AFTER_S", "Acceptor", "ConnectionSlots", "bind_listening_sockets"]

#: How long accepting pauses after the process ran out of file descriptors (Rule 3).
RETRY_AFTER_S: Final = 0.1

_OUT_OF_DESCRIPTORS: Final = (errno.EMFILE, errno.ENFILE)


class ConnectionSlots:
    """``max.connections``: connections open or being opened, and a wait for a free slot."""

    __slots__ = ("_freed", "limit", "used", "waits")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        #: How many times an acceptor had to wait for a slot (the ``connections_waited`` stat).
        self.waits = 0
        self._freed = asyncio.Event()

    async def take(self) -> None:
        """Wait until a slot is free, then hold it (Rule 1)."""
        if self.used >= self.limit:
            self.waits += 1
            while self.used >= self.limit:
                self._freed.clear()
                await self._freed.wait()
        self.used += 1

    def give_back(self) -> None:
        self.used -= 1
        self._freed.set()


def bind_listening_sockets(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for ``host``:``port``, one per address it resolves to (as asyncio's
    ``create_server`` binds them: ``SO_REUSEADDR``, IPv6 sockets IPv6-only)."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    seen: set[tuple[int, object]] = set()
    try:
        for family, kind, proto, _, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(100)
            sock.setblocking(False)
            if port == 0:  # one ephemeral port for every address, as asyncio does not
                port = int(sock.getsockname()[1])
                break
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class Acceptor:
    """One listening socket and its accept loop (Rules 1-3)."""

    __slots__ = (
        "_connecting",
        "_factory",
        "_forget",
        "_log",
        "_slots",
        "_ssl",
        "_starved",
        "_task",
        "sock",
    )

    def __init__(
        self,
        sock: socket.socket,
        factory: Callable[[], asyncio.Protocol],
        forget: Callable[[asyncio.Protocol], None],
        slots: ConnectionSlots,
        log: RateLimitedLog,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.sock = sock
        #: Makes the connection's protocol; ``forget(protocol)`` undoes it when the
        #: connection never started (a failed TLS handshake), giving its slot back.
        self._factory = factory
        self._forget = forget
        self._slots = slots
        self._log = log
        self._ssl = ssl_context
        self._task: asyncio.Task[None] | None = None
        #: Connections being made (Rule 2), held so that they are not collected mid-way.
        self._connecting: set[asyncio.Task[None]] = set()
        #: Failed accepts in a row for want of descriptors (Rule 3).
        self._starved = 0

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._accept_forever())

    async def close(self) -> None:
        """Stop accepting, drop the connections still being made, close the listening
        socket (the open connections are the caller's)."""
        tasks = [*self._connecting, *([self._task] if self._task is not None else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._task = None
        self.sock.close()

    async def _accept_forever(self) -> None:
        loop = asyncio.get_running_loop()
        slots = self._slots
        while True:
            try:
                conn, _ = await loop.sock_accept(self.sock)
            except OSError as exc:
                if exc.errno not in _OUT_OF_DESCRIPTORS:
                    self._log.warning("accepting a connection failed: %s", exc)
                elif not self._starved:
                    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
                    self._log.warning(
                        "out of file descriptors (%s, ulimit -n is %d): new connections "
                        "wait; raise the limit or close connections",
                        errno.errorcode.get(exc.errno or 0, exc.errno),
                        soft,
                    )
                self._starved += exc.errno in _OUT_OF_DESCRIPTORS
                await asyncio.sleep(RETRY_AFTER_S)
                continue
            if self._starved:
                self._log.warning(
                    "file descriptors free again: accepting connections (after %d retries)",
                    self._starved,
                )
                self._starved = 0
            try:
                await slots.take()  # Rule 1: this acceptor accepts nothing more meanwhile
            except asyncio.CancelledError:
                conn.close()
                raise
            task = loop.create_task(self._connect(conn))
            self._connecting.add(task)
            task.add_done_callback(self._connecting.discard)

    async def _connect(self, conn: socket.socket) -> None:
        made: list[asyncio.Protocol] = []

        def factory() -> asyncio.Protocol:
            protocol = self._factory()
            made.append(protocol)
            return protocol

        try:
            await asyncio.get_running_loop().connect_accepted_socket(factory, conn, ssl=self._ssl)
        except BaseException as exc:  # a failed handshake, a reset, or the server stopping
            conn.close()
            if made:
                self._forget(made[0])  # gives its slot back
            else:
                self._slots.give_back()
            if not isinstance(exc, OSError | ssl.SSLError | TimeoutError):
                raise
