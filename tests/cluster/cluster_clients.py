"""Consuming, committing apps of the three Python clients, and a rolling broker restart.

Each app reads a topic and commits what it processed, synchronously, after every
batch, as an at-least-once application does; it records every value it saw, the
errors the client let the application see, and its assignment callbacks.
confluent-kafka is polled by the test thread (``step``); kafka-python and aiokafka
run their own poll loops in a thread each. ``rolling_restart`` stops and starts
every broker of a ``Broker(brokers=N)`` in turn under the apps and measures, per
broker, how long the apps took to consume again. The benchmark
``benchmarks/cluster_failover.py`` uses the same apps.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError

from regroup.server.cluster.topology import Topology
from regroup.testing import Broker
from regroup.testing.driver import subscribe_kafka_python

#: (client, group protocol) pairs: every client with every protocol it speaks.
CASES = [
    ("confluent-kafka", "classic"),
    ("confluent-kafka", "consumer"),
    ("kafka-python", "classic"),
    ("aiokafka", "classic"),
]


def wait_until(
    what: str, condition: Callable[[], bool], step: Callable[[], None], timeout: float = 40.0
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


class App:
    """What every app records."""

    def __init__(self) -> None:
        self.seen: Counter[bytes] = Counter()
        self.errors: list[str] = []
        #: Assignment callbacks with partitions (the app's view of its rebalances).
        self.assigned = 0

    def step(self) -> None:
        time.sleep(0.02)

    def close(self) -> None:
        raise NotImplementedError


class ConfluentApp(App):
    """librdkafka: polled by the test thread (``step``)."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str) -> None:
        super().__init__()
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
                    "session.timeout.ms": 10000,
                    "heartbeat.interval.ms": 300,
                }
            )
        self.consumer = Consumer(conf)
        self.consumer.subscribe([topic], on_assign=self._on_assign)

    def _error(self, err: KafkaError) -> None:
        # A broker connection refused or closed is librdkafka's notice (it reconnects
        # itself); anything else, or a fatal error, is the application's business.
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


class KafkaPythonApp(App):
    """kafka-python 3.0 (classic, cooperative-sticky), polled in its own thread."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str) -> None:
        super().__init__()
        if protocol != "classic":
            raise ValueError("kafka-python speaks the classic protocol only")
        self._stop = threading.Event()
        self._args = (bootstrap, group, topic)
        self._thread = threading.Thread(target=self._run, name=f"kafka-python-{group}")
        self._thread.start()

    def _run(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

        bootstrap, group, topic = self._args
        app = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]  # untyped client
            def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            def on_partitions_assigned(self, assigned: Any) -> None:
                if assigned:
                    app.assigned += 1

        try:
            consumer = KafkaConsumer(
                bootstrap_servers=bootstrap.split(","),
                group_id=group,
                client_id=f"{group}-app",
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                session_timeout_ms=10000,
                heartbeat_interval_ms=300,
                retry_backoff_ms=50,
                reconnect_backoff_ms=50,
                reconnect_backoff_max_ms=500,
                # No short metadata_max_age_ms: a refresh that changes the leader's metadata
                # snapshot makes it rejoin, which can wedge kafka-python 3.0's membership
                # (subscribe_kafka_python says how); errors refresh it anyway.
                partition_assignment_strategy=[CooperativeStickyAssignor],
            )
            subscribe_kafka_python(consumer, [topic], Listener())
            while not self._stop.is_set():
                # Longer than a join: kafka-python 3.0 drops a join that ends between polls
                # (subscribe_kafka_python); records end a poll at once anyway.
                batches = consumer.poll(timeout_ms=500)
                for records in batches.values():
                    for record in records:
                        self.seen[record.value] += 1
                if batches:
                    try:
                        consumer.commit()
                    except Exception as exc:  # a commit the app sees fail
                        self.errors.append(f"commit: {exc!r}")
            consumer.close(autocommit=False)
        except Exception as exc:
            self.errors.append(repr(exc))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


class AiokafkaApp(App):
    """aiokafka (classic, its default range assignor: eager), on a loop in its own thread."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str) -> None:
        super().__init__()
        if protocol != "classic":
            raise ValueError("aiokafka speaks the classic protocol only")
        self._stop = threading.Event()
        self._args = (bootstrap, group, topic)
        self._thread = threading.Thread(target=self._run, name=f"aiokafka-{group}")
        self._thread.start()

    def _run(self) -> None:
        try:
            asyncio.run(self._consume())
        except Exception as exc:
            self.errors.append(repr(exc))

    async def _consume(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

        bootstrap, group, topic = self._args
        app = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]  # untyped client
            async def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            async def on_partitions_assigned(self, assigned: Any) -> None:
                if assigned:
                    app.assigned += 1

        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=f"{group}-app",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=10000,
            heartbeat_interval_ms=300,
            retry_backoff_ms=50,
            metadata_max_age_ms=1000,
        )
        await consumer.start()
        try:
            consumer.subscribe([topic], listener=Listener())
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=50)
                for records in batches.values():
                    for record in records:
                        self.seen[record.value] += 1
                if batches:
                    try:
                        await consumer.commit()
                    except Exception as exc:  # a commit the app sees fail
                        self.errors.append(f"commit: {exc!r}")
        finally:
            await consumer.stop()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


APPS: dict[str, type[App]] = {
    "confluent-kafka": ConfluentApp,
    "kafka-python": KafkaPythonApp,
    "aiokafka": AiokafkaApp,
}


def make_app(client: str, bootstrap: str, group: str, topic: str, protocol: str) -> App:
    factory: Callable[..., App] = APPS[client]
    return factory(bootstrap, group, topic, protocol)


@dataclass
class RollingRestart:
    """What a rolling restart did: per broker stopped, the seconds until the apps had read
    the records produced after the stop; the generation or epoch before and after."""

    resumed_s: list[float] = field(default_factory=list)
    coordinators: list[int] = field(default_factory=list)
    produced: list[bytes] = field(default_factory=list)
    epoch_before: int = 0
    epoch_after: int = 0

    @property
    def rebalances(self) -> int:
        return self.epoch_after - self.epoch_before


def _epoch(broker: Broker, group: str) -> int:
    described = broker.describe_group(group)
    assert described is not None, f"no group {group!r}"
    return int(described.get("generation", described.get("epoch", 0)))


def rolling_restart(
    broker: Broker,
    apps: Sequence[App],
    group: str,
    topic: str,
    *,
    per_broker: int = 30,
    brokers: int = 3,
) -> RollingRestart:
    """Produce, let the apps read it, then stop and start each broker in turn, producing
    after each stop; every record read at the end."""

    def step() -> None:
        for app in apps:
            app.step()

    out = RollingRestart()
    first = [f"before-{i}".encode() for i in range(per_broker)]
    broker.produce(topic, first)
    out.produced.extend(first)
    wait_until("the apps read the first records", lambda: _read(apps, first), step)
    # Every member owns partitions first: a cooperative group's second member gets its
    # share only in the follow-up rebalance after the first Stable.
    wait_until("every member owns partitions", lambda: all(a.assigned for a in apps), step)
    out.epoch_before = _settled_epoch(broker, group, len(apps), step)
    for node in range(brokers):
        batch = [f"during-{node}-{i}".encode() for i in range(per_broker)]
        started = time.monotonic()
        broker.stop_broker(node)
        out.coordinators.append(broker.coordinator_of(group))
        broker.produce(topic, batch)
        out.produced.extend(batch)
        wait_until(
            f"the apps read on with broker {node} down",
            lambda batch=batch: _read(apps, batch),  # type: ignore[misc]
            step,
        )
        out.resumed_s.append(time.monotonic() - started)
        broker.start_broker(node)
    last = [f"after-{i}".encode() for i in range(per_broker)]
    broker.produce(topic, last)
    out.produced.extend(last)
    wait_until("the apps read every record", lambda: _read(apps, out.produced), step)
    out.epoch_after = _epoch(broker, group)
    return out


def _settled_epoch(broker: Broker, group: str, members: int, step: Callable[[], None]) -> int:
    """The group's generation or epoch once it is Stable with every member and stays so
    for a second (a cooperative group's follow-up rebalance comes after its first Stable)."""
    deadline = time.monotonic() + 40
    while True:
        # Polled, not blocked on: librdkafka revokes only inside the application's poll.
        wait_until(f"{group} is Stable", lambda: _stable(broker, group, members), step)
        epoch = _epoch(broker, group)
        quiet = time.monotonic() + 1.0
        while time.monotonic() < quiet:
            step()
        if _epoch(broker, group) == epoch:
            return epoch
        assert time.monotonic() < deadline, f"{group} never settled"


def _stable(broker: Broker, group: str, members: int) -> bool:
    described = broker.describe_group(group)
    if described is None or described["state"] != "Stable":
        return False
    if len(described["members"]) != members:
        return False
    epoch = described.get("epoch")  # KIP-848: every member at the group epoch
    return epoch is None or all(m["epoch"] == epoch for m in described["members"].values())


def _read(apps: Sequence[App], values: Sequence[bytes]) -> bool:
    """Whether the group (its apps together) has read every one of ``values``."""
    read = group_read(apps)
    return all(v in read for v in values)


def group_read(apps: Sequence[App]) -> Counter[bytes]:
    """Every value the group's apps saw, with how often."""
    total: Counter[bytes] = Counter()
    for app in apps:
        total.update(app.seen)
    return total
