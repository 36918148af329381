"""Per-partition state as columns indexed by a dense partition number.

The metrics accumulator and the invariant checker see every partition of
every ownership event of a run. Kept in dicts and sets keyed by
``TopicPartition``, each partition of each event cost them about sixteen hash
probes (each hashing a tuple and, for a partition freshly decoded from an
Assignment, comparing it item by item) and a set per partition, spread over
the heap. At 1,000 members over 10,000 partitions that was about 40% of an
eager rolling bounce's wall time, mostly in cache misses.

A ``PartitionTable`` numbers the partitions it is shown ``0, 1, 2 ...`` in
the order it first sees them. An observer asks it for *columns*: plain lists,
one entry per partition, that the table lengthens (with the column's default)
whenever it numbers a new partition. Each partition of an event then costs
one probe (``index`` or ``find``) and list reads and writes by position.

Rule 1: a partition's number never changes, and ``partitions[i]`` is the
partition numbered ``i``.

Rule 2: every column is exactly as long as ``partitions``.

Rule 3: a column's default is shared by every new entry, so it must be
immutable (``None``, a number, ``False``, ``()``).

A partition's owners (or servers) are kept as a tuple of member ids: almost
always empty or one member, so a tuple is smaller and faster than a set, and
``with_member`` / ``without_member`` build the next one.
"""

from __future__ import annotations

from typing import Any, TypeVar

from regroup.model import TopicPartition

__all__ = ["NOBODY", "PartitionTable", "held_by", "with_member", "without_member"]

T = TypeVar("T")

NOBODY: tuple[str, ...] = ()
"""The owners (or servers) of a partition nobody owns."""


class PartitionTable:
    """Dense numbers for partitions, and the columns that hold state by number."""

    __slots__ = ("_columns", "_last_answer", "_last_asked", "_numbers", "partitions")

    def __init__(self) -> None:
        self._numbers: dict[TopicPartition, int] = {}
        #: The partition numbered ``i`` (Rule 1).
        self.partitions: list[TopicPartition] = []
        self._columns: list[tuple[list[Any], Any]] = []
        self._last_asked: tuple[TopicPartition, ...] = ()
        self._last_answer: list[int] = []

    def column(self, default: T) -> list[T]:
        """A new column, ``default`` for every partition numbered so far and to come."""
        values = [default] * len(self.partitions)
        self._columns.append((values, default))
        return values

    def index(self, tp: TopicPartition) -> int:
        """The number of ``tp``, numbering it (and lengthening every column) if new."""
        number = self._numbers.get(tp)
        if number is None:
            number = len(self.partitions)
            self._numbers[tp] = number
            self.partitions.append(tp)
            for values, default in self._columns:
                values.append(default)
        return number

    def find(self, tp: TopicPartition) -> int | None:
        """The number of ``tp``, or ``None`` if it was never numbered."""
        return self._numbers.get(tp)

    def indices(self, partitions: tuple[TopicPartition, ...]) -> list[int]:
        """``index`` of each of ``partitions``, in order.

        The answer for the last tuple asked about is kept: the observers sharing a
        table (the simulator's) are shown the same event one after the other, and
        the second pays nothing. The kept tuple is referenced, so it cannot be freed
        and another take its address; numbers never change (Rule 1).
        """
        if partitions is self._last_asked:
            return self._last_answer
        index = self.index
        answer = [index(tp) for tp in partitions]
        self._last_asked, self._last_answer = partitions, answer
        return answer

    def __len__(self) -> int:
        return len(self.partitions)


def with_member(members: tuple[str, ...], member: str) -> tuple[str, ...]:
    """``members`` and ``member`` (unchanged if it is there already)."""
    if not members:
        return (member,)
    if member in members:
        return members
    return (*members, member)


def held_by(members: list[tuple[str, ...]], member: str) -> list[int]:
    """The numbers of the partitions whose ``members`` include ``member``.

    A scan of every partition, for a member that stops while owning some: the
    observers keep no set of partitions per member, which every assignment and
    revocation would have to update. A stop causes a rebalance, which costs the
    coordinator's assignor a pass over every partition anyway.
    """
    return [number for number, present in enumerate(members) if member in present]


def without_member(members: tuple[str, ...], member: str) -> tuple[str, ...]:
    """``members`` without ``member``."""
    if len(members) == 1:
        return NOBODY if members[0] == member else members
    return tuple(m for m in members if m != member)
