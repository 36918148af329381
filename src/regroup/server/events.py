"""The server's event log: the simulator's JSON lines, so ``regroup analyze`` reads both.

Every ``CoordinatorResult`` carries the events of its step (member joined,
rebalance started, epoch bumped, offsets committed ...); the server writes them
in order, one ``Event.to_json_line()`` per line, after the records of the same
step are durable. Produce adds ``records_produced`` (``group_id`` empty: a
partition belongs to no group). A sink without a path keeps the last events in
memory only (tests read them).

Rule: the event log is a record of what happened, not state. A write that
fails (a full disk) never fails the request whose step it describes (that
step's records are durable already): the partial write is cut off again, so
the file holds whole lines only, the events are counted in ``unwritten``, and
one error line says so; one more line says when writing works again.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from regroup.events import Event

__all__ = ["EventSink"]

logger = logging.getLogger("regroup.server")


def _open_for_append(path: Path) -> BinaryIO:
    """The event log, unbuffered: each publish is one write (tests inject a failing one)."""
    return path.open("ab", buffering=0)


class EventSink:
    """Appends events as JSON lines to ``path`` (if any) and keeps the most recent ones."""

    def __init__(self, path: Path | None = None, keep: int = 10_000) -> None:
        self.path = path
        self.recent: deque[Event] = deque(maxlen=keep)
        self._file: BinaryIO | None = None
        #: Events a failed write kept out of the file (the rule).
        self.unwritten = 0
        self._failing = False
        #: The file's size after the last whole write (where a failed one is cut back to).
        self._size = 0
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = _open_for_append(path)
            self._size = os.fstat(self._file.fileno()).st_size

    def publish(self, events: Iterable[Event]) -> None:
        lines: list[str] = []
        for event in events:
            self.recent.append(event)
            if self._file is not None:
                lines.append(event.to_json_line())
        if lines and self._file is not None:
            self._write(self._file, ("\n".join(lines) + "\n").encode("utf-8"), len(lines))

    def _write(self, handle: BinaryIO, data: bytes, count: int) -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[handle.write(view) or 0 :]
        except OSError as exc:
            with contextlib.suppress(OSError):  # what cannot be cut stays a torn last line
                os.ftruncate(handle.fileno(), self._size)
            self.unwritten += count
            if not self._failing:
                self._failing = True
                logger.error(
                    "event log %s: cannot write (%s); events are left out of it until "
                    "writing works again (the requests are served)",
                    self.path,
                    exc.strerror or exc,
                )
            return
        self._size += len(data)
        if self._failing:
            self._failing = False
            logger.warning(
                "event log %s: writing again; %d events in all were left out",
                self.path,
                self.unwritten,
            )

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
