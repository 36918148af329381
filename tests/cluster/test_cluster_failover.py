"""Three brokers in one process; the coordinator's broker stops under two real groups.

A classic cooperative group and a KIP-848 group (confluent-kafka) consume and commit
while the broker coordinating both is stopped: the coordinator moves
(``coordinator_of`` changes, FindCoordinator tells the clients), every record is read,
and the final commits are at the log end of every partition.
"""

from __future__ import annotations

from regroup.testing import Broker
from tests.cluster.cluster_clients import ConfluentApp, group_led_by, wait_until

TOPIC = "orders"
PARTITIONS = 6


def test_stopping_the_coordinators_broker_moves_both_groups() -> None:
    classic = group_led_by(1, "classic")
    kip848 = group_led_by(1, "kip848")
    first = [f"a{i}".encode() for i in range(60)]
    second = [f"b{i}".encode() for i in range(60)]
    with Broker(brokers=3, topics={TOPIC: PARTITIONS}) as broker:
        assert broker.coordinator_of(classic) == broker.coordinator_of(kip848) == 1
        broker.produce(TOPIC, first)
        apps = [
            ConfluentApp(broker.bootstrap, classic, TOPIC, "classic"),
            ConfluentApp(broker.bootstrap, kip848, TOPIC, "consumer"),
        ]

        def step() -> None:
            for app in apps:
                app.step()

        try:
            wait_until(
                "both groups read the first records",
                lambda: all(set(first) <= set(a.seen) for a in apps),
                step,
            )
            moved = broker.stop_broker(1)
            assert {classic, kip848} <= set(moved["groups_moved"])
            assert broker.coordinator_of(classic) != 1
            assert broker.coordinator_of(kip848) != 1
            broker.produce(TOPIC, second)
            wait_until(
                "both groups read every record",
                lambda: all(set(first + second) <= set(a.seen) for a in apps),
                step,
            )
            ends = {p: 20 for p in range(PARTITIONS)}
            wait_until(
                "the commits reach the log end",
                lambda: all(broker.committed(g).get(TOPIC) == ends for g in (classic, kip848)),
                step,
            )
            for app in apps:
                assert app.errors == []
                assert max(app.seen.values()) == 1  # nothing read twice
        finally:
            for app in apps:
                app.close()
