"""Parked Fetches, woken only when an append brings them their ``min_bytes``.

A Fetch that has fewer than ``min_bytes`` waits up to ``max_wait`` for records
(Kafka's ``DelayedFetch`` in the fetch purgatory, watched under each partition
it reads). Kafka completes it once the bytes available on its partitions add
up to ``min_bytes``, each partition counting at most its
``partition_max_bytes`` (``DelayedFetch.tryComplete``, case G).

Kafka checks every watcher of a partition on every append to it. Here an
append costs only the waiters it may complete, whatever the number parked on
the partition (2,000 long-polls on one partition made every Produce re-run
2,000 Fetches): each partition keeps its waiters in a heap by a byte
*threshold*, a position of the partition's append counter, and an append pops
only the thresholds it reaches. A waiter that still needs ``need`` bytes from
``k`` partitions that may yet contribute sets each partition's threshold
``min(ceil(need / k), what it may still contribute)`` bytes ahead: if the
appends add up to ``need``, one of them has reached its threshold, so no
waiter that is complete is missed. A waiter whose threshold is reached but
that is not complete sets new ones for what it still needs, at least a
``k``-th less each time. Thresholds left behind by a waiter that re-armed or
finished are dropped lazily and purged when they outnumber the live ones.

``checks`` counts the waiters an append looked at, ``woken`` those it completed
(tests and the benchmark).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["FetchWaiters"]

Key = tuple[str, int]
_NOTHING: Key = ("", -1)


@dataclass(eq=False, slots=True)
class _Waiter:
    future: asyncio.Future[None]
    #: Bytes still missing to ``min_bytes`` when it parked.
    need: int
    #: Per partition: the most it may count (``partition_max_bytes``).
    caps: dict[Key, int]
    #: Per partition: the append counter when the waiter parked.
    start: dict[Key, int]
    #: Bumped whenever its thresholds are replaced: older heap entries are stale.
    generation: int = 0
    #: The partitions whose heap holds an entry of the current generation.
    armed: set[Key] = field(default_factory=set)
    done: bool = False


#: (threshold, sequence, waiter, generation); the sequence keeps the heap from comparing waiters.
_Entry = tuple[int, int, _Waiter, int]


class FetchWaiters:
    """Parked Fetches by partition, each under a byte threshold per partition it reads."""

    def __init__(self) -> None:
        self._heaps: dict[Key, list[_Entry]] = {}
        #: Bytes appended to each partition since the server started (only ever grows).
        self._position: dict[Key, int] = {}
        #: Stale entries per partition heap (purged when they are half of it).
        self._stale: dict[Key, int] = {}
        self._waiters: set[_Waiter] = set()
        self._sequence = itertools.count()
        self.checks = 0
        self.woken = 0

    def __len__(self) -> int:
        return len(self._waiters)

    async def wait(self, partitions: Mapping[Key, int], need: int, timeout_s: float) -> None:
        """Until appends to ``partitions`` (key -> the most bytes it may count) bring
        ``need`` bytes, or ``timeout_s`` passes."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # A Fetch of no known partition still waits, and ``wake_all`` still reaches it.
        caps = {key: max(0, cap) for key, cap in partitions.items()} or {_NOTHING: 0}
        position = self._position
        waiter = _Waiter(future, max(1, need), caps, {key: position.get(key, 0) for key in caps})
        self._waiters.add(waiter)
        self._arm(waiter, waiter.need, {key: cap for key, cap in caps.items() if cap > 0})
        try:
            await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            pass
        finally:
            self._retire(waiter)

    def appended(self, key: Key, size: int) -> None:
        """``size`` bytes were appended to partition ``key``: complete the waiters it satisfies."""
        position = self._position[key] = self._position.get(key, 0) + size
        heap = self._heaps.get(key)
        if heap is None:
            return
        while heap and heap[0][0] <= position:
            _, _, waiter, generation = heapq.heappop(heap)
            if waiter.done or generation != waiter.generation:
                self._stale[key] -= 1
                continue
            waiter.armed.discard(key)
            self.checks += 1
            self._check(waiter)
        if not heap:
            del self._heaps[key]
            del self._stale[key]

    def wake_all(self) -> None:
        """Complete every waiter (the server stops)."""
        for waiter in list(self._waiters):
            if not waiter.future.done():
                waiter.future.set_result(None)

    # -- internals ----------------------------------------------------------------------

    def _check(self, waiter: _Waiter) -> None:
        """Complete ``waiter`` if its partitions bring ``need``; else arm new thresholds."""
        got = 0
        room: dict[Key, int] = {}
        for key, cap in waiter.caps.items():
            counted = min(self._position.get(key, 0) - waiter.start[key], cap)
            got += counted
            if counted < cap:
                room[key] = cap - counted
        if got >= waiter.need:
            self._retire(waiter)
            self.woken += 1
            if not waiter.future.done():
                waiter.future.set_result(None)
            return
        self._drop_entries(waiter)
        self._arm(waiter, waiter.need - got, room)

    def _arm(self, waiter: _Waiter, missing: int, room: dict[Key, int]) -> None:
        """One threshold per partition that may still contribute (the module's rule)."""
        if not room:
            return  # nothing it reads can complete it: it waits for its timeout
        share = -(-missing // len(room))
        for key, left in room.items():
            threshold = self._position.get(key, 0) + min(share, left)
            heap = self._heaps.get(key)
            if heap is None:
                heap = self._heaps[key] = []
                self._stale[key] = 0
            heapq.heappush(heap, (threshold, next(self._sequence), waiter, waiter.generation))
            waiter.armed.add(key)

    def _drop_entries(self, waiter: _Waiter) -> None:
        """Make the waiter's heap entries stale (dropped when popped, or purged)."""
        waiter.generation += 1
        for key in waiter.armed:
            self._stale[key] += 1
            heap = self._heaps[key]
            if 2 * self._stale[key] >= len(heap):
                heap[:] = [e for e in heap if not e[2].done and e[3] == e[2].generation]
                heapq.heapify(heap)
                self._stale[key] = 0
                if not heap:
                    del self._heaps[key]
                    del self._stale[key]
        waiter.armed.clear()

    def _retire(self, waiter: _Waiter) -> None:
        if waiter.done:
            return
        waiter.done = True
        self._waiters.discard(waiter)
        self._drop_entries(waiter)
