"""A rebalance listener that writes down every callback, and can be told to fail.

KIP-429 fixes when ``onPartitionsRevoked`` / ``onPartitionsAssigned`` /
``onPartitionsLost`` run and with which partitions, and what happens when one
raises ("Rebalance Callback Error Handling"); a test checks that by reading the
calls back in order and by making a callback raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from regroup.model import TopicPartition

__all__ = ["RecordingListener"]


@dataclass
class RecordingListener:
    """A ``ConsumerRebalanceListener`` that records ``(kind, partitions)`` per call.

    ``kind`` is ``"revoked"``, ``"assigned"`` or ``"lost"``; ``partitions`` the
    list the member passed (sorted, as both members pass it). ``fail`` maps a
    kind to the exception that callback raises (after being recorded).
    """

    calls: list[tuple[str, list[TopicPartition]]] = field(default_factory=list)
    fail: dict[str, Exception] = field(default_factory=dict)

    def kinds(self) -> list[str]:
        """The kinds of the calls so far, in order."""
        return [kind for kind, _ in self.calls]

    def _record(self, kind: str, partitions: Sequence[TopicPartition]) -> None:
        self.calls.append((kind, list(partitions)))
        error = self.fail.get(kind)
        if error is not None:
            raise error

    def on_partitions_revoked(self, partitions: Sequence[TopicPartition]) -> None:
        self._record("revoked", partitions)

    def on_partitions_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self._record("assigned", partitions)

    def on_partitions_lost(self, partitions: Sequence[TopicPartition]) -> None:
        self._record("lost", partitions)
