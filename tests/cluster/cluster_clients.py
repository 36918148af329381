"""Consuming, committing apps of the three Python clients, for the cluster tests.

Each app reads a topic and commits what it processed, synchronously, after every
batch, as an at-least-once application does. The test drives the apps (``step``)
between broker actions; an app records every value it saw, the errors the client
let the application see, and the callbacks (rebalances).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError

from regroup.server.cluster.topology import Topology


class App(Protocol):
    seen: Counter[bytes]
    errors: list[str]
    assigned: int

    def close(self) -> None: ...


def wait_until(
    what: str, condition: Callable[[], bool], step: Callable[[], None], timeout: float = 30.0
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting until {what}")
        step()


def group_led_by(node: int, prefix: str, brokers: int = 3) -> str:
    """A group id whose coordinator (by Kafka's hashing, every broker up) is ``node``."""
    topology = Topology(brokers)
    for n in range(1000):
        name = f"{prefix}-{n}"
        if topology.coordinator(name) == node:
            return name
    raise AssertionError("no such group id")


class ConfluentApp:
    """librdkafka: polled by the test thread (``step``)."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str) -> None:
        self.seen: Counter[bytes] = Counter()
        self.errors: list[str] = []
        self.assigned = 0
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": f"{group}-app",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "error_cb": self._error,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "retry.backoff.ms": 50,
            "topic.metadata.refresh.interval.ms": 1000,
        }
        if protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update(
                {
                    "group.protocol": "classic",
                    "partition.assignment.strategy": "cooperative-sticky",
                    "session.timeout.ms": 6000,
                    "heartbeat.interval.ms": 300,
                }
            )
        self.consumer = Consumer(conf)
        self.consumer.subscribe([topic], on_assign=self._on_assign)

    def _error(self, err: KafkaError) -> None:
        # Broker connections refused or closed are librdkafka's informational notices
        # (it retries them itself); a fatal error is the application's business.
        if err.fatal() or err.code() not in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
            self.errors.append(str(err))

    def _on_assign(self, consumer: Any, partitions: Any) -> None:
        if partitions:
            self.assigned += 1

    def step(self) -> None:
        messages = self.consumer.consume(100, 0.05)
        for message in messages:
            if message.error() is not None:
                self.errors.append(str(message.error()))
            else:
                self.seen[message.value() or b""] += 1
        if any(m.error() is None for m in messages):
            try:
                self.consumer.commit(asynchronous=False)
            except Exception as exc:  # a commit the app sees fail
                self.errors.append(f"commit: {exc}")

    def close(self) -> None:
        self.consumer.close()
