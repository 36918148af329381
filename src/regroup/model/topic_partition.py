"""``TopicPartition``: one partition of one topic, as Kafka names it.

A ``NamedTuple`` rather than a frozen dataclass on purpose: the assignors build
and compare up to a million of these per assignment (Kafka's own scale tests
use 500 topics x 2,000 partitions), and a tuple is several times cheaper to
create, hash and sort. Tuple order is ``(topic, partition)``, which is the
order Kafka's clients sort partitions in before handing them to a
``ConsumerRebalanceListener`` (KIP-429, "ConsumerRebalanceListener and
ConsumerPartitionAssignor Semantics").
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import itemgetter
from typing import NamedTuple

__all__ = ["TopicPartition", "sorted_partitions", "topic_partition"]


class TopicPartition(NamedTuple):
    """A partition of a topic; prints as Kafka prints it: ``orders-3``."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TopicPartition:
        """Parse ``<topic>-<partition>``, splitting at the last ``-``.

        Topic names may themselves contain ``-`` (``my-topic-0`` is partition 0
        of ``my-topic``). Raises ``ValueError`` with a one-line reason.
        """
        if not isinstance(text, str):
            raise ValueError(f"a partition must be a string like 'topic-0', got {text!r}")
        topic, sep, number = text.rpartition("-")
        if not sep or not topic or not number.isdigit():
            raise ValueError(f"cannot parse partition {text!r}: expected '<topic>-<partition>'")
        return cls(topic, int(number))


_partition_number = itemgetter(1)


def sorted_partitions(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """Partitions in Kafka's callback order: by topic, then partition number.

    The same list as ``sorted(partitions)``. A member's partitions are usually
    of one topic, and then they are sorted by their numbers alone: Python
    compares a list of ints in C, where each comparison of two tuples
    (topic first, then number) costs about 250 instructions.
    """
    ordered = list(partitions)
    if len(ordered) > 1:
        topic = ordered[0][0]
        for tp in ordered:
            if tp[0] != topic:
                ordered.sort()
                return ordered
        ordered.sort(key=_partition_number)
    return ordered


def topic_partition(topic: str, partition: int) -> TopicPartition:
    """``TopicPartition(topic, partition)``, as a function for ``map`` and sort keys."""
    return TopicPartition(topic, partition)
