"""An application: a kafka-python cooperative consumer that commits what it gives away.

It processes records and commits only when it must: when partitions are revoked
(``on_partitions_revoked`` commits their positions before they move to another
member, then cleans up their local state) and when it stops. Under the
cooperative protocol (KIP-429) a rebalance revokes only the partitions that move.

kafka-python 3 runs rebalance listeners on its IO loop, where a blocking
``commit()`` is refused ("Cannot block on net.run() from the IO thread"), so the
listener is an ``AsyncConsumerRebalanceListener`` that awaits ``commit_async``:
the rebalance goes on only once the commit is answered. The worker runs its poll
loop in a thread of its own (everything touching the consumer happens there or
in the consumer's IO loop).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kafka import AsyncConsumerRebalanceListener, KafkaConsumer, TopicPartition
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.errors import KafkaError, RebalanceInProgressError
from kafka.structs import OffsetAndMetadata

logger = logging.getLogger(__name__)


class PartitionWorker(AsyncConsumerRebalanceListener):
    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        topic: str,
        client_id: str,
        *,
        cooperative: bool = True,
        cleanup: Callable[[list[int]], None] | None = None,
    ) -> None:
        self.topic = topic
        self.cleanup = cleanup or (lambda partitions: None)
        self.processed: list[tuple[int, int, bytes]] = []
        self.positions: dict[int, int] = {}
        self.owned: set[int] = set()
        self.revoked: list[list[int]] = []
        self.commits: list[dict[int, int]] = []
        self.errors: list[BaseException] = []
        self.listener_errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._options = {
            "bootstrap_servers": bootstrap,
            "group_id": group_id,
            "client_id": client_id,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "session_timeout_ms": 3000,
            "heartbeat_interval_ms": 300,
            "retry_backoff_ms": 100,
            "reconnect_backoff_ms": 100,
            "partition_assignment_strategy": [
                CooperativeStickyAssignor if cooperative else RangePartitionAssignor
            ],
        }
        self._thread = threading.Thread(target=self._run, name=f"worker-{client_id}")
        self.consumer: KafkaConsumer | None = None

    # -- the poll loop ----------------------------------------------------------------------

    def start(self) -> PartitionWorker:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            consumer = self.consumer = KafkaConsumer(**self._options)
            consumer.subscribe([self.topic], listener=self)
            # A metadata update after subscribe and before the first poll: a
            # kafka-python 3.0 member that joins first and leads rejoins when the metadata
            # comes, and that rejoin can leave it REBALANCING for good (docs/testing.md,
            # the kafka-python row). The test creates the topic first.
            consumer.topics()
            while not self._stop.is_set():
                try:
                    batches = consumer.poll(timeout_ms=50)
                except KafkaError as exc:
                    # Like Java's consumer, kafka-python finishes the listener's work, then
                    # raises its exception from poll(); the next poll completes the rebalance.
                    if exc.__cause__ is None:
                        raise
                    self.listener_errors.append(exc.__cause__)
                    logger.warning("rebalance listener failed: %s", exc.__cause__)
                    continue
                for tp, records in batches.items():
                    for record in records:
                        with self._lock:
                            self.processed.append((tp.partition, record.offset, record.value))
                            self.positions[tp.partition] = record.offset + 1
            self._final_commit(consumer)
            consumer.close(autocommit=False)
        except BaseException as exc:  # reported to the test, not lost in a thread
            self.errors.append(exc)

    def _final_commit(self, consumer: KafkaConsumer) -> None:
        """Commit what it owns before leaving; a rebalance in progress (another member
        leaving) is completed by polling, as kafka-python's error says, then retried."""
        for _ in range(20):
            offsets = self._offsets(sorted(self.owned))
            if not offsets:
                return
            try:
                consumer.commit(offsets)
                return
            except RebalanceInProgressError:
                consumer.poll(timeout_ms=100)
        raise RuntimeError("could not commit before closing")

    def _offsets(self, partitions: list[int]) -> dict[TopicPartition, OffsetAndMetadata]:
        with self._lock:
            positions = {p: self.positions[p] for p in partitions if p in self.positions}
        return {
            TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1)
            for p, o in positions.items()
        }

    # -- the rebalance listener ---------------------------------------------------------------

    async def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        numbers = sorted(tp.partition for tp in revoked)
        if not numbers:
            return
        self.revoked.append(numbers)
        # First: whatever the cleanup does, the positions are saved before the partitions move.
        offsets = self._offsets(numbers)
        if offsets:
            assert self.consumer is not None
            await self.consumer.commit_async(offsets)
            self.commits.append({tp.partition: om.offset for tp, om in offsets.items()})
        self.owned.difference_update(numbers)
        self.cleanup(numbers)

    async def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        self.owned.update(tp.partition for tp in assigned)

    async def on_partitions_lost(self, lost: list[TopicPartition]) -> None:
        self.owned.difference_update(tp.partition for tp in lost)

    # -- for the tests ----------------------------------------------------------------------------

    def seen(self) -> list[tuple[int, int, bytes]]:
        with self._lock:
            return list(self.processed)
