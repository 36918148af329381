"""The server's event log: the simulator's JSON lines, so ``regroup analyze`` reads both.

Every ``CoordinatorResult`` carries the events of its step (member joined,
rebalance started, epoch bumped, offsets committed ...); the server writes them
in order, one ``Event.to_json_line()`` per line, after the records of the same
step are durable. Produce adds ``records_produced`` (``group_id`` empty: a
partition belongs to no group). A sink without a path keeps the last events in
memory only (tests read them).

Rule 1: a string of an event (a group, member, instance or client id, a
reason; a value or a mapping key) longer than ``MAX_ID_CHARS`` (255) is written
as its first 64 characters, then ``...(sha256:`` and 16 hex digits of its SHA-256,
then its length: the same id always reads the same and two ids differ, but an
event no longer repeats a 1 MiB group id (a join wrote it five times). The
coordinator's records keep it whole (``store``). Events whose strings are all
shorter are written exactly as ``Event.to_json_line`` writes them.

Rule 2: the event log is a record of what happened, not state. A write that
fails (a full disk) never fails the request whose step it describes (that
step's records are durable already): the partial write is cut off again, so
the file holds whole lines only, the events are counted in ``unwritten``, and
one error line says so; one more line says when writing works again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from regroup.events import Event

__all__ = ["EventSink"]

logger = logging.getLogger("regroup.server")


#: Longer strings are abbreviated in the event log (rule 1).
MAX_ID_CHARS = 255


def _abbreviated(value: Any) -> Any:
    """``value`` (an event's ``to_dict`` form) with every long string abbreviated."""
    if isinstance(value, str):
        if len(value) <= MAX_ID_CHARS:
            return value
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return f"{value[:64]}...(sha256:{digest}, {len(value)} chars)"
    if isinstance(value, dict):
        return {_abbreviated(k): _abbreviated(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_abbreviated(v) for v in value]
    return value


#: A JSON string of more than ``MAX_ID_CHARS`` characters as written (escapes count in full,
#: so it may hold fewer: then ``_abbreviated`` finds nothing to cut and the line is the same).
_LONG_STRING = re.compile(rf'"(?:[^"\\]|\\.){{{MAX_ID_CHARS + 1},}}"')


def _line(event: Event) -> str:
    """The event's JSON line (rule 1)."""
    line = event.to_json_line()
    if len(line) <= MAX_ID_CHARS or _LONG_STRING.search(line) is None:
        return line
    return json.dumps(_abbreviated(event.to_dict()), separators=(",", ":"), sort_keys=False)


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
                lines.append(_line(event))
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
