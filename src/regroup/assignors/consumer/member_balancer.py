"""Two moving ranges over members sorted by load: who gets, and who gives, the next partition.

Kafka: ``UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer`` (4.0).
The subscribers of one topic are sorted by partition count (ties by member
index). A *least loaded* range grows rightwards from the start: partitions are
dealt round-robin to the members in it, and each time the round completes its
level rises by one and it absorbs the members that now sit at that level. A
*most loaded* range grows leftwards from the end in the same way, and members
that have nothing of the topic to give are swapped out of it. The two meet
when their levels differ by at most one: the topic is then balanced.

The counts are read live from a shared list, exactly as Kafka reads its
``memberTargetAssignmentSizes`` array, because moves change them under the
balancer's feet.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MemberBalancer"]


class MemberBalancer:
    """State of one balancing run over the subscribers of one topic."""

    __slots__ = (
        "_least_end",
        "_least_level",
        "_most_end",
        "_most_level",
        "_most_start",
        "_next_least",
        "_next_most",
        "_sizes",
        "_sorted",
    )

    def __init__(self, sizes: list[int]) -> None:
        #: Partition count by member index; shared with the builder and updated by it.
        self._sizes = sizes
        self._sorted: list[int] = []
        self._least_end = 0
        self._least_level = -1
        self._next_least = 0
        self._most_start = 0
        self._most_end = 0
        self._most_level = 1
        self._next_most = -1

    def initialize(self, members: Sequence[int]) -> int:
        """Reset for these members; return max minus min count.

        Members are sorted by count, ties by member index (Kafka's
        ``memberComparator``).
        """
        sizes = self._sizes
        return self.initialize_sorted(sorted(members, key=lambda m: (sizes[m], m)))

    def initialize_sorted(self, ordered: list[int]) -> int:
        """``initialize`` for members already sorted by (count, index); the list is kept."""
        if not ordered:
            raise ValueError("cannot balance an empty subscriber list")
        sizes = self._sizes
        self._sorted = ordered
        self._least_end = 0
        self._least_level = sizes[ordered[0]] - 1
        self._next_least = 0
        self._most_start = len(ordered)
        self._most_end = len(ordered)
        self._most_level = sizes[ordered[-1]] + 1
        self._next_most = len(ordered) - 1
        return sizes[ordered[-1]] - sizes[ordered[0]]

    def next_least_loaded(self) -> int:
        """The member to give the next partition to (assumes it will get one)."""
        ordered = self._sorted
        if self._next_least >= self._least_end:
            self._least_level += 1
            sizes = self._sizes
            end = self._least_end
            while end < len(ordered) and sizes[ordered[end]] == self._least_level:
                end += 1
            self._least_end = end
            self._next_least = 0
        member = ordered[self._next_least]
        self._next_least += 1
        return member

    def next_most_loaded(self) -> int:
        """The member to take the next partition from, or -1 when none is left."""
        ordered = self._sorted
        sizes = self._sizes
        if self._next_most < self._most_start:
            if self._most_end <= self._most_start and self._most_start > 0:
                # Exclusions emptied the range: restart its level from the next member down.
                self._most_level = sizes[ordered[self._most_start - 1]]
            else:
                self._most_level -= 1
            start = self._most_start
            while start > 0 and sizes[ordered[start - 1]] == self._most_level:
                start -= 1
            self._most_start = start
            self._next_most = self._most_end - 1
        if self._next_most < 0:
            return -1
        member = ordered[self._next_most]
        self._next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drop the member last returned by ``next_most_loaded`` from the most loaded range."""
        ordered = self._sorted
        position = self._next_most + 1
        last = self._most_end - 1
        ordered[position], ordered[last] = ordered[last], ordered[position]
        self._most_end -= 1

    def is_balanced(self) -> bool:
        """True once the two ranges' levels differ by at most one."""
        return self._most_level - self._least_level <= 1
