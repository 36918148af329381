"""Real Kafka clients that form, grow, shrink and leave one group each: the broker-log tests.

``run_group`` drives one group through its life against a ``regroup.testing.Broker``:
one member joins, a second joins, the second leaves (LeaveGroup, or epoch -1 under
KIP-848), the first leaves. Each member is one real client polling in a thread of its
own: kafka-python, aiokafka (the classic protocol), confluent-kafka (librdkafka: the
classic protocol, and KIP-848's with ``group.protocol=consumer``). The broker's waits
(``wait_for_stable``) pace the steps, so no step depends on a sleep.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from regroup.testing import Broker
from regroup.testing.driver import subscribe_kafka_python

#: (client, group.protocol) pairs the three Python clients support.
CLIENTS = [
    ("kafka-python", "classic"),
    ("aiokafka", "classic"),
    ("confluent", "classic"),
    ("confluent", "consumer"),
]

TOPIC = "broker-log"
PARTITIONS = 4


class Member:
    """One consumer polling in its own thread until ``close``."""

    def __init__(self, client: str, protocol: str, bootstrap: str, group: str, name: str):
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._args = (client, protocol, bootstrap, group, name)
        self._thread = threading.Thread(target=self._run, name=f"{client}-{name}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "the client did not close in 30 s"
        assert self.errors == []

    def _run(self) -> None:
        client, protocol, bootstrap, group, name = self._args
        try:
            if client == "kafka-python":
                self._kafka_python(bootstrap, group, name)
            elif client == "aiokafka":
                asyncio.run(self._aiokafka(bootstrap, group, name))
            else:
                self._confluent(protocol, bootstrap, group, name)
        except BaseException as exc:  # reported by close()
            self.errors.append(exc)

    def _kafka_python(self, bootstrap: str, group: str, name: str) -> None:
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=200,
            retry_backoff_ms=100,
            reconnect_backoff_ms=100,
        )
        subscribe_kafka_python(consumer, [TOPIC])
        while not self._stop.is_set():
            # Longer than a join: kafka-python 3.0 drops a join that ends between polls
            # and sends another (subscribe_kafka_python), one generation more than the log's.
            consumer.poll(timeout_ms=500)
        consumer.close(autocommit=False)

    async def _aiokafka(self, bootstrap: str, group: str, name: str) -> None:
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(
            TOPIC,
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=200,
            retry_backoff_ms=100,
        )
        await consumer.start()
        try:
            while not self._stop.is_set():
                await consumer.getmany(timeout_ms=50)
        finally:
            await consumer.stop()

    def _confluent(self, protocol: str, bootstrap: str, group: str, name: str) -> None:
        from confluent_kafka import Consumer

        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000,
        }
        if protocol == "classic":
            conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 200})
        consumer = Consumer(conf)
        consumer.subscribe([TOPIC])
        try:
            while not self._stop.is_set():
                consumer.poll(0.05)
        finally:
            consumer.close()


def run_group(broker: Broker, client: str, protocol: str, group: str) -> None:
    """One member, then two, then one, then none: at least four rebalances, each awaited."""
    first = Member(client, protocol, broker.bootstrap, group, "first")
    try:
        broker.wait_for_stable(group, members=1, timeout=60)
        second = Member(client, protocol, broker.bootstrap, group, "second")
        try:
            broker.wait_for_stable(group, members=2, timeout=60)
        finally:
            second.close()
        broker.wait_for_stable(group, members=1, timeout=60)
    finally:
        first.close()
