"""A regroup server on its own event loop in a daemon thread (tests, benchmarks, examples).

``regroup serve`` runs the server on the main thread's loop; code that wants a
server beside its own (blocking) work starts one here and talks to it over a
socket, or calls into it with ``call`` (which runs on the server's loop, the
only place its state may be touched).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from regroup.server.app import RegroupServer, ServerOptions

__all__ = ["BackgroundServer"]


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
