"""An application: running order totals per partition, with a KIP-848 confluent-kafka consumer.

It keeps, for each partition it owns, the sum of the amounts it has read and the
next offset to read. The rebalance callbacks are the part worth testing:

* ``on_revoke``: the partitions are handed over in order, so their positions are
  committed first, then their totals are dropped;
* ``on_lost``: the member was fenced (or its session expired): the partitions may
  already belong to another member, so nothing is committed (a commit would be
  refused, and could overwrite the new owner's); the totals are dropped and the
  records will be read again from the last commit.
"""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition


class OrderTotals:
    def __init__(self, bootstrap: str, group_id: str, topic: str, client_id: str = "totals"):
        self.topic = topic
        self.totals: dict[int, int] = {}
        self.positions: dict[int, int] = {}
        self.assigned: list[list[int]] = []
        self.revoked: list[list[int]] = []
        self.lost: list[list[int]] = []
        self.committed: list[dict[int, int]] = []
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group_id,
                "client.id": client_id,
                "group.protocol": "consumer",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.consumer.subscribe(
            [topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )

    def poll(self, timeout: float = 0.05) -> None:
        message = self.consumer.poll(timeout)
        if message is None or message.error() is not None:
            return
        partition = message.partition()
        self.totals[partition] = self.totals.get(partition, 0) + int(message.value())
        self.positions[partition] = message.offset() + 1

    def total(self) -> int:
        return sum(self.totals.values())

    def commit(self, partitions: list[int]) -> None:
        offsets = {p: self.positions[p] for p in partitions if p in self.positions}
        if offsets:
            self.consumer.commit(
                offsets=[TopicPartition(self.topic, p, o) for p, o in offsets.items()],
                asynchronous=False,
            )
            self.committed.append(offsets)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.assigned.append(sorted(tp.partition for tp in partitions))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        numbers = sorted(tp.partition for tp in partitions)
        self.revoked.append(numbers)
        self.commit(numbers)
        self._forget(numbers)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        numbers = sorted(tp.partition for tp in partitions)
        self.lost.append(numbers)
        self._forget(numbers)  # no commit: these partitions are no longer ours

    def _forget(self, partitions: list[int]) -> None:
        for p in partitions:
            self.totals.pop(p, None)
            self.positions.pop(p, None)

    def close(self) -> None:
        self.consumer.close()
