"""A regroup server on its own event loop in a daemon thread (tests, benchmarks, examples).

``regroup serve`` runs the server on the main thread's loop; code that wants a
server beside its own (blocking) work starts one here and talks to it over a
socket, or calls into it with ``call`` (which runs on the server's loop, the
only place its state may be touched).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from regroup.server.app import RegroupServer, ServerOptions

__all__ = ["BackgroundServer"]

T = TypeVar("T")


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
    def loop(self) -> asyncio.AbstractEventLoop:
        """The server's loop (``asyncio.run_coroutine_threadsafe`` targets it)."""
        return self._loop

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    @property
    def bootstrap(self) -> str:
        return f"{self.options.host}:{self.port}"

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` on the server's loop and return its result (or raise)."""

        async def run() -> Any:
            return fn(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    def wait(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the server's loop; its result, within ``timeout`` seconds."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=timeout)

    def stop(self) -> None:
        if self.server is not None:
            server = self.server
            self.server = None
            asyncio.run_coroutine_threadsafe(_stop(server), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()


async def _stop(server: RegroupServer) -> None:
    """Stop the server and leave no socket behind, whatever was in flight.

    A client that connected just before the stop is in the kernel's accept
    queue or in asyncio's accept task. On Python 3.11 a connection accepted
    after ``Server.close`` keeps its socket until the garbage collector runs
    (its transport fails to attach to the closed server and the error is
    dropped), so a few loop iterations go first, letting such accepts finish;
    then the server stops, every accept task still running ends, what it opened
    is closed, and the transports close their sockets: ``stop`` returns with no
    file open.
    """
    for _ in range(4):
        await asyncio.sleep(0)
    await server.stop()
    current = asyncio.current_task()
    for _ in range(2):
        await asyncio.sleep(0)
        tasks = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=1)
        for protocol in server.connections:
            protocol.close()
    await asyncio.sleep(0)
