"""A rolling restart of every broker under a consuming, committing group, per client.

Three brokers, one topic of six partitions, a group of two members of one client
(confluent-kafka in both protocols, kafka-python and aiokafka in the classic one).
Each broker is stopped and started in turn while records keep coming; the group's
coordinator moves with its ``__consumer_offsets`` partition. Afterwards:

- no record lost: the group read every record produced;
- no commit lost: the group's committed offsets are the log end of every partition;
- no duplicate: the apps commit synchronously after every batch and no partition moves
  between members, so at-least-once leaves nothing to read twice;
- no error the application sees (librdkafka's notices of refused connections aside);
- no rebalance: the generation (classic) or group epoch (KIP-848) is where it was, as
  the simulator's ``broker-rolling-restart`` scenario predicts for every protocol and as
  Kafka does (a coordinator failover loads the group with its members; nobody rejoins).
"""

from __future__ import annotations

import pytest

from regroup.sim.scenario import builtin_scenario
from regroup.sim.settings import Settings
from regroup.sim.simulation import run_simulation
from regroup.testing import Broker
from tests.cluster.cluster_clients import CASES, group_read, make_app, rolling_restart

TOPIC = "orders"
PARTITIONS = 6


def _predicted_rebalances(protocol: str) -> int:
    sim_protocol = "cooperative" if protocol == "classic" else "consumer"
    result = run_simulation(
        Settings(
            builtin_scenario("broker-rolling-restart"),
            protocol=sim_protocol,
            members=2,
            partitions=PARTITIONS,
        )
    )
    return int(result.metrics.rebalances)


@pytest.mark.parametrize(("client", "protocol"), CASES, ids=[f"{c}-{p}" for c, p in CASES])
def test_a_rolling_broker_restart_loses_nothing_and_rebalances_nothing(
    client: str, protocol: str
) -> None:
    group = f"rolling-{client}-{protocol}"
    with Broker(brokers=3, topics={TOPIC: PARTITIONS}) as broker:
        apps = [make_app(client, broker.bootstrap, group, TOPIC, protocol) for _ in range(2)]
        try:
            run = rolling_restart(broker, apps, group, TOPIC)
            ends = {p: n for p, n in enumerate(_log_ends(broker))}
            read = group_read(apps)
            assert set(read) == set(run.produced)  # nothing lost
            assert max(read.values()) == 1  # nothing read twice
            assert [app.errors for app in apps] == [[], []]
            assert broker.committed(group)[TOPIC] == ends  # no commit lost
            assert run.rebalances == _predicted_rebalances(protocol) == 0
            assert len(set(run.coordinators)) > 1  # the coordinator did move
        finally:
            for app in apps:
                app.close()


def _log_ends(broker: Broker) -> list[int]:
    def ends() -> list[int]:
        out = []
        for p in range(PARTITIONS):
            log = broker.server.log.partition(TOPIC, p)
            assert log is not None
            out.append(log.next_offset)
        return out

    return broker.call(ends)
