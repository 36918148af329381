"""The discrete-event loop: actions waiting on a virtual clock, in buckets by millisecond.

Rule 1: time only moves forward, and only by jumping to the next scheduled
action; nothing waits, so a 45 s session timeout costs no wall time.

Rule 2: actions scheduled for the same millisecond run in the order they were
scheduled, so a run depends on nothing but its inputs. An action scheduled for
the current millisecond (or the past) while that millisecond runs goes to the
back of it.

Rule 3: an action is a plain callable with its arguments; cancelling is the
caller's business (a stale wake-up checks a token and returns).

Rule 4: a *step* is one action, run to its end. ``run_until`` calls
``after_step()`` after each one, at the step's time and before the next
action: what must look at the whole state between steps (the simulator's
stability check) runs there, never inside an action.

Rule 5: ``max_steps`` bounds one ``run_until``: the step after the last one
allowed raises ``StepBudgetExceeded`` instead of running (a run that never
reaches its end time, a livelock of actions at one millisecond, is stopped
rather than left to spin; the soak uses it).

This is the simulator's hot path. The actions of one millisecond share one
list (a *bucket*), and only the distinct milliseconds are kept in a heap: a
rebalance answers a thousand members in the same millisecond, and then a
thousand actions cost one heap push and pop between them, not one each.
Appending to a bucket keeps Rule 2 without a sequence number: a bucket's list
order is the order of scheduling.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any, Final

__all__ = ["StepBudgetExceeded", "World"]

_push: Final = heapq.heappush
_pop: Final = heapq.heappop


class StepBudgetExceeded(RuntimeError):
    """``run_until`` ran out of ``max_steps`` (Rule 5) at virtual time ``now_ms``."""

    def __init__(self, max_steps: int, now_ms: int) -> None:
        super().__init__(f"more than {max_steps} steps by virtual time {now_ms} ms")
        self.max_steps = max_steps
        self.now_ms = now_ms


class World:
    """A virtual clock in milliseconds and the actions waiting for it."""

    __slots__ = ("_buckets", "_times", "now_ms", "steps")

    def __init__(self, start_ms: int = 0) -> None:
        self.now_ms = start_ms
        #: millisecond -> its actions, in the order they were scheduled.
        self._buckets: dict[int, list[tuple[Callable[..., None], tuple[Any, ...]]]] = {}
        #: The milliseconds that have a bucket (a heap).
        self._times: list[int] = []
        #: How many actions ran (for the benchmark's figures).
        self.steps = 0

    def at(self, time_ms: int, action: Callable[..., None], *args: Any) -> None:
        """Run ``action(*args)`` at ``time_ms`` (now, if that is in the past)."""
        when = time_ms if time_ms > self.now_ms else self.now_ms
        bucket = self._buckets.get(when)
        if bucket is None:
            self._buckets[when] = [(action, args)]
            _push(self._times, when)
        else:
            bucket.append((action, args))

    def after(self, delay_ms: int, action: Callable[..., None], *args: Any) -> None:
        self.at(self.now_ms + delay_ms, action, *args)

    def next_time(self) -> int | None:
        return self._times[0] if self._times else None

    def run_until(
        self,
        end_ms: int,
        *,
        on_advance: Callable[[int], None] | None = None,
        after_step: Callable[[], None] | None = None,
        max_steps: int | None = None,
    ) -> None:
        """Run every action due at or before ``end_ms``, then set the clock to ``end_ms``.

        ``on_advance(now)`` is called each time the clock moves (progress reporting),
        ``after_step()`` after each action (Rule 4); ``max_steps`` bounds the run (Rule 5).
        """
        budget = -1 if max_steps is None else max_steps
        times = self._times
        buckets = self._buckets
        steps = 0
        last = self.now_ms
        bucket: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        index = 0
        try:
            while times and times[0] <= end_ms:
                when = times[0]
                self.now_ms = when
                if on_advance is not None and when != last:
                    last = when
                    on_advance(when)
                bucket = buckets[when]
                # The bucket may grow while it runs (Rule 2): index, do not iterate.
                index = 0
                while index < len(bucket):
                    if steps == budget:
                        raise StepBudgetExceeded(budget, when)
                    action, args = bucket[index]
                    index += 1
                    action(*args)
                    steps += 1
                    if after_step is not None:
                        after_step()
                _pop(times)
                del buckets[when]
                index = 0
        finally:
            self.steps += steps
            if index:  # stopped by an exception inside a bucket: what ran is gone
                del bucket[:index]
        if end_ms > self.now_ms:
            self.now_ms = end_ms
