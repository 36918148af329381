"""One real Kafka consumer in its own process, driven over stdin/stdout (interop tests).

Started by ``test_server_interop.py`` with one JSON argument::

    {"client": "kafka-python" | "aiokafka" | "confluent", "strategy": "...",
     "protocol": "classic" | "consumer", "bootstrap": "127.0.0.1:N",
     "group": "g", "topic": "t", "session_timeout_ms": 3000}

It subscribes, polls continuously, and answers one JSON line per command line:
``status`` (assignment, records consumed since the last status, revocations and
assignments seen by the rebalance listener), ``commit`` (synchronous commit of
the consumed positions), ``close`` (leave the group and exit). A crash is the
test killing the process. Unmodified clients: only their public APIs are used.
"""

from __future__ import annotations

import asyncio
import json
import queue
import sys
import threading
import time
from typing import Any

ARGS: dict[str, Any] = json.loads(sys.argv[1])
COMMANDS: queue.Queue[str] = queue.Queue()


def _stdin() -> None:
    for line in sys.stdin:
        COMMANDS.put(line.strip())
    COMMANDS.put("close")


def out(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class State:
    def __init__(self) -> None:
        self.consumed: list[list[Any]] = []
        self.revoked: list[list[int]] = []
        self.assigned: list[list[int]] = []

    def status(self, assignment: list[int]) -> dict[str, Any]:
        report = {
            "assignment": sorted(assignment),
            "consumed": self.consumed,
            "revoked": self.revoked,
            "assigned": self.assigned,
        }
        self.consumed, self.revoked, self.assigned = [], [], []
        return report


STATE = State()


def run_kafka_python() -> None:
    from kafka import KafkaConsumer
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    assignors = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]  # kafka-python: untyped
        def on_partitions_revoked(self, revoked: Any) -> None:
            STATE.revoked.append(sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            STATE.assigned.append(sorted(tp.partition for tp in assigned))

    session = ARGS["session_timeout_ms"]
    consumer = KafkaConsumer(
        bootstrap_servers=ARGS["bootstrap"],
        group_id=ARGS["group"],
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=session,
        heartbeat_interval_ms=300,
        max_poll_interval_ms=15000,
        partition_assignment_strategy=[assignors[ARGS["strategy"]]],
        retry_backoff_ms=100,
        reconnect_backoff_ms=100,
        reconnect_backoff_max_ms=500,
    )
    consumer.subscribe(topics=[ARGS["topic"]], listener=Listener())
    while True:
        batches = consumer.poll(timeout_ms=100)
        for tp, records in batches.items():
            for r in records:
                STATE.consumed.append([tp.partition, r.offset, r.value.decode()])
        while not COMMANDS.empty():
            command = COMMANDS.get()
            assignment = [tp.partition for tp in consumer.assignment()]
            if command == "status":
                out(STATE.status(assignment))
            elif command == "commit":
                try:
                    consumer.commit()
                    out({"ok": True})
                except Exception as exc:
                    out({"ok": False, "error": repr(exc)})
            elif command == "close":
                consumer.close()
                out({"ok": True})
                return


def run_confluent() -> None:
    from confluent_kafka import Consumer

    conf: dict[str, Any] = {
        "bootstrap.servers": ARGS["bootstrap"],
        "group.id": ARGS["group"],
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 500,
        "max.poll.interval.ms": 15000,
    }
    if ARGS["protocol"] == "consumer":
        conf["group.protocol"] = "consumer"
        conf["group.remote.assignor"] = ARGS["strategy"]
    else:
        conf["session.timeout.ms"] = ARGS["session_timeout_ms"]
        conf["heartbeat.interval.ms"] = 300
        conf["partition.assignment.strategy"] = ARGS["strategy"]
    consumer = Consumer(conf)

    def on_assign(c: Any, partitions: Any) -> None:
        STATE.assigned.append(sorted(tp.partition for tp in partitions))

    def on_revoke(c: Any, partitions: Any) -> None:
        STATE.revoked.append(sorted(tp.partition for tp in partitions))

    consumer.subscribe([ARGS["topic"]], on_assign=on_assign, on_revoke=on_revoke)
    while True:
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            value = message.value()
            assert value is not None
            STATE.consumed.append([message.partition(), message.offset(), value.decode()])
        while not COMMANDS.empty():
            command = COMMANDS.get()
            assignment = [tp.partition for tp in consumer.assignment()]
            if command == "status":
                out(STATE.status(assignment))
            elif command == "commit":
                try:
                    consumer.commit(asynchronous=False)
                    out({"ok": True})
                except Exception as exc:
                    # Nothing consumed since the last commit is not a failure.
                    text = repr(exc)
                    out({"ok": "_NO_OFFSET" in text, "error": text})
            elif command == "close":
                consumer.close()
                out({"ok": True})
                return


async def run_aiokafka() -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.abc import ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]  # kafka-python: untyped
        def on_partitions_revoked(self, revoked: Any) -> None:
            STATE.revoked.append(sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            STATE.assigned.append(sorted(tp.partition for tp in assigned))

    consumer = AIOKafkaConsumer(
        bootstrap_servers=ARGS["bootstrap"],
        group_id=ARGS["group"],
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=ARGS["session_timeout_ms"],
        heartbeat_interval_ms=300,
        max_poll_interval_ms=15000,
        retry_backoff_ms=100,
        partition_assignment_strategy=(assignors[ARGS["strategy"]],),
    )
    await consumer.start()
    consumer.subscribe(topics=[ARGS["topic"]], listener=Listener())
    while True:
        batches = await consumer.getmany(timeout_ms=100)
        for tp, records in batches.items():
            for r in records:
                STATE.consumed.append([tp.partition, r.offset, r.value.decode()])
        while not COMMANDS.empty():
            command = COMMANDS.get()
            assignment = [tp.partition for tp in consumer.assignment()]
            if command == "status":
                out(STATE.status(assignment))
            elif command == "commit":
                try:
                    await consumer.commit()
                    out({"ok": True})
                except Exception as exc:
                    out({"ok": False, "error": repr(exc)})
            elif command == "close":
                await consumer.stop()
                out({"ok": True})
                return


def main() -> None:
    threading.Thread(target=_stdin, daemon=True).start()
    out({"started": time.time()})
    client = ARGS["client"]
    if client == "kafka-python":
        run_kafka_python()
    elif client == "confluent":
        run_confluent()
    else:
        asyncio.run(run_aiokafka())


if __name__ == "__main__":
    main()
