"""The discrete-event loop: a heap of ``(time, seq, action)`` on a virtual clock.

Rule 1: time only moves forward, and only by jumping to the next scheduled
action; nothing waits, so a 45 s session timeout costs no wall time.

Rule 2: actions scheduled for the same millisecond run in the order they were
scheduled (``seq`` breaks ties), so a run depends on nothing but its inputs.

Rule 3: an action is a plain callable with its arguments; cancelling is the
caller's business (a stale wake-up checks a token and returns).

This is the simulator's hot path: a tuple push and pop per action, no
objects allocated per action beyond the tuple.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

__all__ = ["World"]

_push = heapq.heappush


class World:
    """A virtual clock in milliseconds and the actions waiting for it."""

    __slots__ = ("_heap", "_seq", "now_ms", "steps")

    def __init__(self, start_ms: int = 0) -> None:
        self.now_ms = start_ms
        self._heap: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = 0
        #: How many actions ran (for the benchmark's figures).
        self.steps = 0

    def at(self, time_ms: int, action: Callable[..., None], *args: Any) -> None:
        """Run ``action(*args)`` at ``time_ms`` (now, if that is in the past)."""
        self._seq += 1
        when = time_ms if time_ms > self.now_ms else self.now_ms
        _push(self._heap, (when, self._seq, action, args))

    def after(self, delay_ms: int, action: Callable[..., None], *args: Any) -> None:
        self.at(self.now_ms + delay_ms, action, *args)

    def next_time(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def run_until(self, end_ms: int, *, on_advance: Callable[[int], None] | None = None) -> None:
        """Run every action due at or before ``end_ms``, then set the clock to ``end_ms``.

        ``on_advance(now)`` is called each time the clock moves (progress reporting).
        """
        heap = self._heap
        pop = heapq.heappop
        steps = 0
        last = self.now_ms
        try:
            while heap and heap[0][0] <= end_ms:
                when, _, action, args = pop(heap)
                self.now_ms = when
                if on_advance is not None and when != last:
                    last = when
                    on_advance(when)
                action(*args)
                steps += 1
        finally:
            self.steps += steps
        if end_ms > self.now_ms:
            self.now_ms = end_ms
