"""Keyed deadlines for a sans-IO coordinator (Kafka: ``CoordinatorTimer``).

The coordinator never sleeps: it schedules an operation under a key for a
deadline (milliseconds on the injected clock), and the driver asks
``next_deadline()`` and calls ``expire(now)`` when that time comes. Scheduling
a key again replaces its deadline and operation (Kafka:
``CoordinatorTimer.schedule`` replaces a timer with the same key); ``cancel``
removes it. Expired operations run in (deadline, scheduling order) order, so
runs are deterministic.

Rescheduling is the common case (every heartbeat pushes a session timeout
out), so it does not push a heap entry each time: a timer keeps one heap
entry whose ``(deadline, seq)`` is never later than the timer's own, and
moving a deadline later only updates the timer; when that stale heap entry
reaches the top it is pushed again at the real ``(deadline, seq)``. Only an
earlier deadline needs a new heap entry (the old one is then dropped when it
surfaces). The order in which operations run is exactly that of pushing
every reschedule.

An operation may name the group it acts on (``owner``): ``expire`` then hands
``run`` the owner with the operation, so a driver can contain an operation that
fails to that group (``regroup.coordinator.guard``), and ``cancel_owned`` drops
every timer of one group.

A timer never runs away. An operation that re-arms its own key for a time
already due would run again in the same ``expire`` call, and again, forever:
one group's bug would stop every group and, in the wire server, every
connection. So each key runs at most ``MAX_RUNS_PER_INSTANT`` times at one
``now_ms`` (counted across ``expire`` calls at that instant). The run past the
bound is a runaway: the operation is not run; ``run`` is handed one that raises
``TimerRunaway`` instead, so the driver fails that operation's group as it fails
any operation that raises (``regroup.coordinator.guard``: rolled back to its
records, its waiting requests answered); without ``run`` the error propagates.
A key that ran away and is armed again at the same instant waits for the next
millisecond. (Kafka's ``CoordinatorTimer`` cannot loop this way: an expired
task is queued as a new event on the coordinator's event loop, so other work
interleaves and the clock moves; a sans-IO timer on an injected clock must
bound itself.)
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Generic, Never, TypeVar

__all__ = ["MAX_RUNS_PER_INSTANT", "Timer", "TimerRunaway"]

R = TypeVar("R")

#: How often one key may run at one instant before it is a runaway. Kafka's own
#: code re-arms a key at the same instant at most a few times in a row (a join
#: phase that completes at once); a hundred is far past any legitimate chain.
MAX_RUNS_PER_INSTANT: Final = 100


class TimerRunaway(RuntimeError):
    """A timer re-armed itself at one instant more than ``MAX_RUNS_PER_INSTANT`` times."""

    def __init__(self, key: str, now_ms: int, runs: int) -> None:
        super().__init__(
            f"timer {key!r} ran {runs} times at {now_ms} ms without the clock moving; "
            "stopped as a runaway"
        )
        self.key = key
        self.now_ms = now_ms
        self.runs = runs


@dataclass(slots=True)
class _Entry(Generic[R]):
    deadline_ms: int
    seq: int
    key: str
    operation: Callable[[int], R]
    owner: str | None = None
    live: bool = True
    #: The ``(deadline, seq)`` of this timer's one current heap entry (never later than its own).
    heap_deadline_ms: int = 0
    heap_seq: int = 0


class Timer(Generic[R]):
    """Deadlines by key; ``expire(now)`` runs and returns what the due operations return."""

    __slots__ = ("_by_key", "_heap", "_instant_ms", "_runs_at_instant", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, _Entry[R]]] = []
        self._by_key: dict[str, _Entry[R]] = {}
        self._seq = 0
        #: The instant of the last ``expire`` and how often each key ran at it.
        self._instant_ms: int | None = None
        self._runs_at_instant: dict[str, int] = {}

    def schedule(
        self,
        key: str,
        deadline_ms: int,
        operation: Callable[[int], R],
        *,
        owner: str | None = None,
    ) -> None:
        """Run ``operation(now)`` at ``deadline_ms``, replacing any timer with this key.

        ``owner``: the id of the group the operation acts on, if any.
        """
        self._seq += 1
        seq = self._seq
        entry = self._by_key.get(key)
        if entry is not None:
            entry.deadline_ms = deadline_ms
            entry.seq = seq
            entry.operation = operation
            entry.owner = owner
            if deadline_ms >= entry.heap_deadline_ms:
                return  # the heap entry is still a lower bound; fixed up when it surfaces
        else:
            entry = _Entry(deadline_ms, seq, key, operation, owner)
            self._by_key[key] = entry
        entry.heap_deadline_ms = deadline_ms
        entry.heap_seq = seq
        heapq.heappush(self._heap, (deadline_ms, seq, entry))

    def cancel(self, key: str) -> None:
        entry = self._by_key.pop(key, None)
        if entry is not None:
            entry.live = False

    def cancel_owned(self, owner: str) -> None:
        """Cancel every timer whose operation acts on group ``owner``."""
        for key in [k for k, e in self._by_key.items() if e.owner == owner]:
            self.cancel(key)

    def fire(
        self,
        key: str,
        now_ms: int,
        run: Callable[[str | None, Callable[[int], R], int], R] | None = None,
    ) -> R | None:
        """Run the timer ``key`` now, before its deadline; ``None`` when none is armed.

        For drivers that make a deadline pass early (the wire server's fault
        injection: "expire this member's session now"); the operation runs
        exactly as ``expire`` would run it (through ``run`` when given), so it
        writes the same records.
        """
        entry = self._by_key.pop(key, None)
        if entry is None:
            return None
        entry.live = False
        if run is not None:
            return run(entry.owner, entry.operation, now_ms)
        return entry.operation(now_ms)

    def is_scheduled(self, key: str) -> bool:
        return key in self._by_key

    def deadline(self, key: str) -> int | None:
        entry = self._by_key.get(key)
        return None if entry is None else entry.deadline_ms

    def scheduled(self) -> list[tuple[int, str]]:
        """Every live timer as ``(deadline, key)``, earliest first (ties by key)."""
        return sorted((entry.deadline_ms, key) for key, entry in self._by_key.items())

    def next_deadline(self) -> int | None:
        heap = self._heap
        while heap:
            deadline, seq, entry = heap[0]
            if entry.live and seq == entry.heap_seq:
                if seq == entry.seq:
                    return deadline
                # Rescheduled later since it was pushed: put it back at its real place.
                entry.heap_deadline_ms = entry.deadline_ms
                entry.heap_seq = entry.seq
                heapq.heapreplace(heap, (entry.deadline_ms, entry.seq, entry))
            else:
                heapq.heappop(heap)  # cancelled, or superseded by an earlier deadline
        return None

    def expire(
        self,
        now_ms: int,
        run: Callable[[str | None, Callable[[int], R], int], R] | None = None,
    ) -> list[R]:
        """Run every operation due at or before ``now_ms``, in deadline order.

        Operations may schedule or cancel timers; a timer they schedule for a
        time already due runs in the same call. ``run(owner, operation, now)``,
        when given, runs each operation (and may contain its failure).
        """
        results: list[R] = []
        if now_ms != self._instant_ms:
            self._instant_ms = now_ms
            self._runs_at_instant = {}
        runs_at_instant = self._runs_at_instant
        while True:
            deadline = self.next_deadline()
            if deadline is None or deadline > now_ms:
                return results
            _, _, entry = heapq.heappop(self._heap)
            entry.live = False
            if self._by_key.get(entry.key) is entry:
                del self._by_key[entry.key]
            runs = runs_at_instant.get(entry.key, 0) + 1
            runs_at_instant[entry.key] = runs
            operation = entry.operation
            if runs > MAX_RUNS_PER_INSTANT + 1:
                # Ran away already at this instant and armed again: the next millisecond.
                self.schedule(entry.key, now_ms + 1, operation, owner=entry.owner)
                continue
            if runs > MAX_RUNS_PER_INSTANT:
                operation = _runaway(entry.key, now_ms, runs)
            if run is None:
                results.append(operation(now_ms))
            else:
                results.append(run(entry.owner, operation, now_ms))

    def __len__(self) -> int:
        return len(self._by_key)


def _runaway(key: str, now_ms: int, runs: int) -> Callable[[int], Never]:
    """The operation run in place of a runaway timer's: it raises ``TimerRunaway``."""

    def raise_runaway(_now: int) -> Never:
        raise TimerRunaway(key, now_ms, runs)

    return raise_runaway
