"""Real Kafka clients for the fault tests, each recording how it reacts.

``KafkaPythonMember``: a kafka-python consumer polled in a thread of its own,
with a listener that writes down its calls. ``ConfluentMember``: a
confluent-kafka consumer polled by the test (``poll_until``), with the same
record of its callbacks and of the errors librdkafka reports.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer
from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor

from regroup.testing.driver import subscribe_kafka_python


def wait_until(what: str, condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting until {what}")
        time.sleep(0.02)


class KafkaPythonMember(ConsumerRebalanceListener):  # type: ignore[misc]  # kafka-python: untyped
    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str, **options: Any):
        self.calls: list[tuple[str, list[int]]] = []
        self.errors: list[BaseException] = []
        self.records = 0
        self._stop = threading.Event()
        cooperative = options.pop("cooperative", False)
        self._options = {
            "bootstrap_servers": bootstrap,
            "group_id": group,
            "client_id": client_id,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "session_timeout_ms": 3000,
            "heartbeat_interval_ms": 200,
            "retry_backoff_ms": 100,
            "reconnect_backoff_ms": 100,
            "reconnect_backoff_max_ms": 300,
            "partition_assignment_strategy": [
                CooperativeStickyAssignor if cooperative else RangePartitionAssignor
            ],
            **options,
        }
        self._topic = topic
        self._thread = threading.Thread(target=self._run, name=f"kafka-python-{client_id}")
        self._thread.start()

    def _run(self) -> None:
        try:
            consumer = KafkaConsumer(**self._options)
            subscribe_kafka_python(consumer, [self._topic], self)
            while not self._stop.is_set():
                for records in consumer.poll(timeout_ms=50).values():
                    self.records += len(records)
            consumer.close(autocommit=False)
        except BaseException as exc:
            self.errors.append(exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        assert self.errors == []

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.calls]

    # An eager member is told "revoked: nothing" before its first join: not recorded.
    def on_partitions_revoked(self, revoked: Any) -> None:
        self._record("revoked", revoked)

    def on_partitions_assigned(self, assigned: Any) -> None:
        self._record("assigned", assigned)

    def on_partitions_lost(self, lost: Any) -> None:
        self._record("lost", lost)

    def _record(self, kind: str, partitions: Any) -> None:
        numbers = sorted(tp.partition for tp in partitions)
        if numbers:
            self.calls.append((kind, numbers))


class ConfluentMember:
    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str, **conf: Any):
        self.calls: list[tuple[str, list[int]]] = []
        self.errors: list[Any] = []
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": client_id,
                "group.protocol": "consumer",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "error_cb": self.errors.append,
                **conf,
            }
        )
        self.consumer.subscribe(
            [topic],
            on_assign=lambda c, ps: self._record("assigned", ps),
            on_revoke=lambda c, ps: self._record("revoked", ps),
            on_lost=lambda c, ps: self._record("lost", ps),
        )

    def _record(self, kind: str, partitions: Any) -> None:
        # librdkafka also calls on_assign with nothing new (KIP-848): not recorded.
        numbers = _numbers(partitions)
        if numbers:
            self.calls.append((kind, numbers))

    def poll_until(self, what: str, condition: Callable[[], bool], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting until {what}")
            self.consumer.poll(0.05)

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.calls]

    def owned(self) -> list[int]:
        """What the callbacks so far leave this member owning (incremental, KIP-848)."""
        owned: set[int] = set()
        for kind, partitions in self.calls:
            if kind == "assigned":
                owned.update(partitions)
            else:
                owned.difference_update(partitions)
        return sorted(owned)

    def close(self) -> None:
        self.consumer.close()


def _numbers(partitions: Any) -> list[int]:
    return sorted(tp.partition for tp in partitions)
