"""Topic ids numbered 0..n-1, looked up cheaply.

The assignors look up a topic id for every (member, topic) pair of every
current target -- 100,000 lookups in Kafka's 10,000-member benchmark. ``Uuid``
hashes in Python code, so a plain dict lookup costs a Python call each time.
The ids in the targets are almost always the very objects the previous round
handed out, so the index first looks an id up by object identity (an ``int``
key, hashed in C) and falls back to equality only on a miss. Identity is safe
here because the index keeps its own ids alive: an object with the same
``id()`` as one of them *is* that object.
"""

from __future__ import annotations

from collections.abc import Iterable

from regroup.model import Uuid

__all__ = ["TopicIndex", "uuid_sort_key"]


def uuid_sort_key(topic_id: Uuid) -> tuple[int, int]:
    """Kafka's ``Uuid.compareTo`` order (signed halves) as a cheap sort key."""
    return (topic_id.most_significant_bits, topic_id.least_significant_bits)


class TopicIndex:
    """Topic id -> its number, in the order given."""

    __slots__ = ("by_identity", "by_value", "topics")

    def __init__(self, topics: Iterable[Uuid]) -> None:
        self.topics: list[Uuid] = list(topics)
        #: Number by value, and by ``id()`` of the indexed objects (hot loops inline ``get``).
        self.by_value: dict[Uuid, int] = {t: i for i, t in enumerate(self.topics)}
        self.by_identity: dict[int, int] = {id(t): i for i, t in enumerate(self.topics)}

    def __len__(self) -> int:
        return len(self.topics)

    def get(self, topic_id: Uuid) -> int | None:
        """The topic's number, or None when it is not indexed."""
        number = self.by_identity.get(id(topic_id))
        if number is None:
            number = self.by_value.get(topic_id)
        return number

    def number(self, topic_id: Uuid) -> int:
        """The number of an indexed topic (``KeyError`` otherwise)."""
        number = self.get(topic_id)
        if number is None:
            raise KeyError(topic_id)
        return number
