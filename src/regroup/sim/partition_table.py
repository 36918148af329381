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
one look-up of its number (``index``, ``indices``) and list reads and writes
by position; the simulator's metrics and checker share one table, so an
event's partitions are looked up once for both.

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

from typing import Any, Final, TypeVar

from regroup.model import TopicPartition

__all__ = ["NOBODY", "PartitionTable", "held_by", "with_member", "without_member"]

T = TypeVar("T")

DENSE_IDS = 1 << 20
"""Partition ids below this are numbered through a per-topic list (Kafka topics have far fewer)."""

NOBODY: Final[tuple[str, ...]] = ()
"""The owners (or servers) of a partition nobody owns."""


class PartitionTable:
    """Dense numbers for partitions, and the columns that hold state by number.

    A partition's number is found without hashing the partition: per topic, a
    list of numbers by partition id (``None``: not numbered). The events' partitions
    are built anew from each Assignment, so a dict keyed by them compared each
    one item by item with the stored key, a cache miss apiece at 10,000
    partitions. Ids outside ``[0, DENSE_IDS)`` (only a hand-written log has
    them) are numbered through a dict.
    """

    __slots__ = ("_columns", "_dense", "_last_answer", "_last_asked", "_sparse", "partitions")

    def __init__(self) -> None:
        self._dense: dict[str, list[int | None]] = {}
        self._sparse: dict[TopicPartition, int] = {}
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
        dense = self._dense.get(tp.topic)
        partition = tp.partition
        if dense is not None and 0 <= partition < len(dense):
            number = dense[partition]
            if number is not None:
                return number
        return self._number(tp)

    def find(self, tp: TopicPartition) -> int | None:
        """The number of ``tp``, or ``None`` if it was never numbered."""
        partition = tp.partition
        if not 0 <= partition < DENSE_IDS:
            return self._sparse.get(tp)
        dense = self._dense.get(tp.topic)
        if dense is None or partition >= len(dense):
            return None
        return dense[partition]

    def _number(self, tp: TopicPartition) -> int:
        found = self.find(tp)
        if found is not None:
            return found
        number = len(self.partitions)
        self.partitions.append(tp)
        for values, default in self._columns:
            values.append(default)
        partition = tp.partition
        if 0 <= partition < DENSE_IDS:
            dense = self._dense.get(tp.topic)
            if dense is None:
                dense = self._dense[tp.topic] = []
            if partition >= len(dense):
                dense.extend([None] * (partition + 1 - len(dense)))
            dense[partition] = number
        else:
            self._sparse[tp] = number
        return number

    def indices(self, partitions: tuple[TopicPartition, ...]) -> list[int]:
        """``index`` of each of ``partitions``, in order.

        The answer for the last tuple asked about is kept: the observers sharing a
        table (the simulator's) are shown the same event one after the other, and
        the second pays nothing. The kept tuple is referenced, so it cannot be freed
        and another take its address; numbers never change (Rule 1).
        """
        if partitions is self._last_asked:
            return self._last_answer
        # ``Any``, so that compiled code passes the stored int objects along: an ``int``
        # would be unboxed and boxed anew (allocated, past 256) for the answer list.
        answer: list[Any] = []
        all_dense = self._dense
        # An event's partitions come by topic, sharing one name object per topic
        # (the decoded Assignment's): look the topic up when the object changes.
        topic: str | None = None
        dense: list[int | None] | None = None
        for tp in partitions:
            if tp.topic is not topic:
                topic = tp.topic
                dense = all_dense.get(topic)
            partition = tp.partition
            if dense is not None and 0 <= partition < len(dense):
                number: Any = dense[partition]
                if number is not None:
                    answer.append(number)
                    continue
            answer.append(self._number(tp))
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


def without_member(members: tuple[str, ...], member: str) -> tuple[str, ...]:
    """``members`` without ``member``."""
    if len(members) == 1:
        return NOBODY if members[0] == member else members
    return tuple(m for m in members if m != member)


def held_by(members: list[tuple[str, ...]], member: str) -> list[int]:
    """The numbers of the partitions whose ``members`` include ``member``.

    A scan of every partition, for a member that stops while owning some: the
    observers keep no set of partitions per member, which every assignment and
    revocation would have to update. A stop causes a rebalance, which costs the
    coordinator's assignor a pass over every partition anyway.
    """
    return [number for number, present in enumerate(members) if member in present]
