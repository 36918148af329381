"""The server's event log: the simulator's JSON lines, so ``regroup analyze`` reads both.

Every ``CoordinatorResult`` carries the events of its step (member joined,
rebalance started, epoch bumped, offsets committed ...); the server writes them
in order, one ``Event.to_json_line()`` per line, after the records of the same
step are durable. Produce adds ``records_produced`` (``group_id`` empty: a
partition belongs to no group). A sink without a path keeps the last events in
memory only (tests read them).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from regroup.events import Event

__all__ = ["EventSink"]


class EventSink:
    """Appends events as JSON lines to ``path`` (if any) and keeps the most recent ones."""

    def __init__(self, path: Path | None = None, keep: int = 10_000) -> None:
        self.path = path
        self.recent: deque[Event] = deque(maxlen=keep)
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")

    def publish(self, events: Iterable[Event]) -> None:
        wrote = False
        for event in events:
            self.recent.append(event)
            if self._file is not None:
                self._file.write(event.to_json_line())
                self._file.write("\n")
                wrote = True
        if wrote and self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
